//! Stage 7, destinations (seed 000 stage 4, seed 002's SSRF-safe transport): where the call
//! would connect. SSRF classes first (`SSRF_BLOCK`: internal, metadata, ambiguous,
//! unparsable, disallowed scheme), then the policy's hostname rule and allowlist
//! (`DEST_DENY`), and a network call with no destination at all (`DEST_DENY`). Never
//! resolves a name: the connector at the front resolves, checks every address and
//! connects to the checked one.

use bulwark_net::{Host, SsrfFinding};
use bulwark_policy::{ReasonCode, Severity, Verdict};

use crate::call::Profile;

use crate::analysis::catalogue::Kind;
use crate::decision::Finding;
use crate::pipeline::Ctx;

pub(crate) fn run(ctx: &mut Ctx<'_>) {
    let policy = &ctx.policy.destinations;
    for i in 0..ctx.destinations.len() {
        let d = &ctx.destinations[i];
        if let Some(f) = &d.assessment.finding {
            let (rule, safer) = match f {
                SsrfFinding::Internal { .. } => (
                    "ssrf.internal",
                    "Use a public address, or ask the operator to add the host to destinations.internal_ok.",
                ),
                SsrfFinding::Ambiguous { .. } => (
                    "ssrf.ambiguous",
                    "Write the URL so every parser reads the same host (no extra '@', '\\\\', '#' or '?' before the path).",
                ),
                SsrfFinding::Unparsable(_) => {
                    ("ssrf.unparsable", "Send a well-formed http(s) URL.")
                }
                SsrfFinding::Scheme(_) => ("ssrf.scheme", "Use an http or https URL."),
            };
            let reason = format!("Destination {:?} is refused: {f}.", d.text);
            ctx.findings.push(Finding::new(rule, "ssrf"));
            ctx.raise(
                Verdict::Block,
                ReasonCode::SsrfBlock,
                Some(rule.to_string()),
                Some(Severity::Critical),
                reason,
                Some(safer.to_string()),
            );
            return;
        }
    }
    let hostnames = match ctx.call.profile {
        Profile::Edge if !policy.hostnames_explicit => false,
        _ => policy.hostnames,
    };
    let mut refusal: Option<(&'static str, String, &'static str)> = None;
    for d in &ctx.destinations {
        let Some(dest) = &d.assessment.destination else {
            continue;
        };
        if !hostnames && matches!(dest.host, Host::Domain(_)) {
            refusal = Some((
                "dest.hostname",
                format!(
                    "Destination {:?} is a host name; this policy only accepts address literals.",
                    d.text
                ),
                "Use an allowlisted address, or route through the egress proxy.",
            ));
            break;
        }
        if !policy.allow.is_empty()
            && let Some(h) = dest.hosts().find(|h| !policy.allow.allows(h))
        {
            refusal = Some((
                "dest.unlisted",
                format!("Destination {h} is not on the allowlist."),
                "Use an allowlisted host, or ask the operator to add this one.",
            ));
            break;
        }
    }
    if let Some((rule, reason, safer)) = refusal {
        ctx.findings.push(Finding::new(rule, "destination"));
        ctx.raise(
            Verdict::Block,
            ReasonCode::DestDeny,
            None,
            Some(Severity::High),
            reason,
            Some(safer.into()),
        );
        return;
    }
    let search = ctx.entry.is_some_and(|e| e.kind == Kind::Search);
    if policy.require && ctx.net_by_tool && ctx.destinations.is_empty() && !search {
        ctx.findings
            .push(Finding::new("dest.missing", "destination"));
        ctx.raise(
            Verdict::Block,
            ReasonCode::DestDeny,
            None,
            Some(Severity::High),
            "A network call must name its destination, and this one does not.",
            Some("Pass the URL or host in the call's arguments (or `destination`).".into()),
        );
    }
    let n = ctx.destinations.len();
    ctx.explain(|| format!("{n} destinations checked"));
}
