//! What `bulwark policy check` prints: the shape of a policy at a glance.

use std::fmt;

use crate::compiled::Policy;
use crate::schema::Mode;
use crate::vocab::Severity;

/// A summary of a compiled policy.
pub struct Summary<'a>(pub &'a Policy);

impl fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.0;
        writeln!(f, "policy {} ({})", p.name, p.version)?;
        writeln!(
            f,
            "  mode: {}{}",
            if p.mode == Mode::Enforce {
                "enforce"
            } else {
                "monitor"
            },
            if p.lockdown { ", LOCKDOWN ON" } else { "" }
        )?;
        writeln!(
            f,
            "  packs: {}",
            if p.packs.is_empty() {
                "none".to_string()
            } else {
                p.packs.join(", ")
            }
        )?;
        let mut tools: Vec<_> = p.tools.iter().collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        writeln!(f, "  tools mapped: {}", tools.len())?;
        for t in tools {
            let mut extra = Vec::new();
            if t.approval {
                extra.push("approval");
            }
            if t.escalate {
                extra.push("escalate");
            }
            if t.quarantine {
                extra.push("quarantined");
            }
            let caps = t.capabilities.names().join(", ");
            let extra = if extra.is_empty() {
                String::new()
            } else {
                format!(" [{}]", extra.join(", "))
            };
            writeln!(
                f,
                "    {}: {}{}",
                t.name,
                if caps.is_empty() { "-" } else { &caps },
                extra
            )?;
        }
        writeln!(f, "  unknown tools: {:?}", p.unknown_tools)?;
        let count = |s: Severity| p.rules.iter().filter(|r| r.severity == s).count();
        writeln!(
            f,
            "  rules: {} (critical {}, high {}, medium {}, low {})",
            p.rules.len(),
            count(Severity::Critical),
            count(Severity::High),
            count(Severity::Medium),
            count(Severity::Low)
        )?;
        writeln!(f, "  sequences: {}", p.sequences.len())?;
        for s in &p.sequences {
            writeln!(
                f,
                "    {}: {} (within {} calls / {} s) → {}",
                s.id,
                s.steps.join(" → "),
                s.within_calls,
                s.within_ms / 1000,
                s.action
            )?;
        }
        let l = &p.limits;
        writeln!(
            f,
            "  limits: args {} B, result {} B, depth {}, sessions {} (idle {} s)",
            l.max_args_bytes,
            l.max_result_bytes,
            l.max_depth,
            l.max_sessions,
            l.session_idle_ms / 1000
        )?;
        let scope = |name: &str,
                     b: &Option<crate::compiled::BucketSpec>,
                     f: &mut fmt::Formatter<'_>|
         -> fmt::Result {
            match b {
                None => writeln!(f, "    {name}: off"),
                Some(b) => {
                    let n = |v: Option<u32>| v.map_or("off".to_string(), |n| n.to_string());
                    writeln!(
                        f,
                        "    {name}: calls {}, network {}, actuate {} per {} s",
                        n(b.calls),
                        n(b.network),
                        n(b.actuate),
                        b.per_ms / 1000
                    )
                }
            }
        };
        writeln!(f, "  rate:")?;
        scope("session", &p.rate.session, f)?;
        scope("principal", &p.rate.principal, f)?;
        scope("tool", &p.rate.tool, f)?;
        scope("global", &p.rate.global, f)?;
        writeln!(
            f,
            "  loop: {} identical calls or {} identical results in {} s",
            p.loop_guard.max_repeats,
            p.loop_guard.max_same_result,
            p.loop_guard.window_ms / 1000
        )?;
        let d = &p.destinations;
        writeln!(
            f,
            "  destinations: allowlist {}, approved {}, SSRF exceptions {}, schemes {}, hostnames {}",
            if d.allow.is_empty() {
                "off".to_string()
            } else {
                format!("{} entries", d.allow.len())
            },
            d.approved.len(),
            d.internal_ok.len(),
            d.schemes.join("/"),
            if d.hostnames { "allowed" } else { "refused" }
        )?;
        write!(
            f,
            "  approvals: timeout {} s, {} tool patterns",
            p.approvals.timeout_ms / 1000,
            p.approvals.tools.len()
        )
    }
}
