//! Prometheus metrics: decisions by outcome, rule and front; evaluation and per-stage
//! latency histograms; the telemetry queue's depth and drops — rendered in the Prometheus
//! text format for a front's admin listener.
//!
//! Hand-written rather than a metrics crate: a dozen series with fixed label sets need a
//! map behind a lock and a formatter, and the text format is small and stable.
//!
//! ```
//! use bulwark_audit::metrics::Metrics;
//! let m = Metrics::new();
//! let d = bulwark_engine::Decision::invalid_input("x", "v");
//! m.observe("mcp", &d);
//! assert!(m.render().contains(r#"bulwark_decisions_total{front="mcp",decision="block",reason_code="INVALID_INPUT"} 1"#));
//! ```

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bulwark_engine::{Decision, Observer, Outcome, Stage};

/// Histogram bucket bounds in seconds: 5 µs to 1 s.
const BUCKETS: &[f64] = &[
    0.000_005, 0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005,
    0.01, 0.025, 0.1, 1.0,
];

/// Distinct label sets kept per family at most; beyond, new ones are folded into `other`
/// so a flood of tool or rule names cannot grow memory.
const MAX_SERIES: usize = 2000;

/// Per-stage timings are taken on one call in this many.
pub const STAGE_SAMPLE: u64 = 16;

#[derive(Default, Clone)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, secs: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS.len()];
        }
        for (i, b) in BUCKETS.iter().enumerate() {
            if secs <= *b {
                self.counts[i] += 1;
            }
        }
        self.sum += secs;
        self.count += 1;
    }
}

#[derive(Default)]
struct Families {
    decisions: BTreeMap<(String, String, String), u64>,
    rules: BTreeMap<(String, String), u64>,
    eval: BTreeMap<String, Histogram>,
    stages: BTreeMap<&'static str, Histogram>,
    /// The newest decisions, for the console's live feed (made into JSON only when read).
    recent: std::collections::VecDeque<Recent>,
    seq: u64,
    /// Decisions per minute (Unix minute → counts by verdict), the newest [`MINUTES`].
    minutes: std::collections::VecDeque<(u64, [u64; 5])>,
}

/// Decisions kept for the live feed.
pub const RECENT: usize = 500;

/// What the live feed keeps of a decision: what the audit log keeps, no arguments or
/// payloads.
struct Recent {
    seq: u64,
    ts_ms: u64,
    front: String,
    tool: String,
    decision: &'static str,
    reason_code: Option<&'static str>,
    rule_id: Option<String>,
    reason: String,
    approved: bool,
}
/// Minutes of per-minute counts kept for the console's chart.
pub const MINUTES: usize = 60;

fn verdict_index(v: bulwark_engine::Verdict) -> usize {
    use bulwark_engine::Verdict;
    match v {
        Verdict::Allow => 0,
        Verdict::Warn => 1,
        Verdict::Mask => 2,
        Verdict::Approve => 3,
        Verdict::Block => 4,
    }
}

/// The registry a process shares between its fronts.
#[derive(Default)]
pub struct Metrics {
    families: Mutex<Families>,
    calls: AtomicU64,
    /// Telemetry rows waiting to be written (set by the store's owner).
    pub queue_depth: AtomicU64,
    /// Telemetry rows dropped.
    pub queue_dropped: AtomicU64,
}

fn bump<K: Ord>(map: &mut BTreeMap<K, u64>, key: K, other: K) {
    if map.len() >= MAX_SERIES && !map.contains_key(&key) {
        *map.entry(other).or_default() += 1;
    } else {
        *map.entry(key).or_default() += 1;
    }
}

impl Metrics {
    /// An empty registry.
    pub fn new() -> Metrics {
        Metrics::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Families> {
        match self.families.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Counts one decision of `front`.
    pub fn observe(&self, front: &str, d: &Decision) {
        let mut f = self.lock();
        let code = d.reason_code.map_or("NONE", |c| c.as_str()).to_string();
        bump(
            &mut f.decisions,
            (front.to_string(), d.decision.as_str().to_string(), code),
            (
                front.to_string(),
                d.decision.as_str().to_string(),
                "other".into(),
            ),
        );
        if let Some(rule) = &d.rule_id {
            bump(
                &mut f.rules,
                (front.to_string(), rule.clone()),
                (front.to_string(), "other".into()),
            );
        }
        f.eval
            .entry(front.to_string())
            .or_default()
            .observe(d.eval_us as f64 / 1e6);
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        f.seq += 1;
        let item = Recent {
            seq: f.seq,
            ts_ms: now_ms,
            front: front.to_string(),
            tool: d.tool.clone(),
            decision: d.decision.as_str(),
            reason_code: d.reason_code.map(|c| c.as_str()),
            rule_id: d.rule_id.clone(),
            reason: d.reason.chars().take(300).collect(),
            approved: d.approved,
        };
        if f.recent.len() >= RECENT {
            f.recent.pop_front();
        }
        f.recent.push_back(item);
        let minute = now_ms / 60_000;
        match f.minutes.back_mut() {
            Some((m, counts)) if *m == minute => counts[verdict_index(d.decision)] += 1,
            _ => {
                if f.minutes.len() >= MINUTES {
                    f.minutes.pop_front();
                }
                let mut counts = [0; 5];
                counts[verdict_index(d.decision)] = 1;
                f.minutes.push_back((minute, counts));
            }
        }
    }

    /// The decisions after `after` (a `seq`), oldest first, at most [`RECENT`].
    pub fn feed(&self, after: u64) -> Vec<serde_json::Value> {
        self.lock()
            .recent
            .iter()
            .filter(|r| r.seq > after)
            .map(|r| {
                serde_json::json!({
                    "seq": r.seq,
                    "ts_ms": r.ts_ms,
                    "front": r.front,
                    "tool": r.tool,
                    "decision": r.decision,
                    "reason_code": r.reason_code,
                    "rule_id": r.rule_id,
                    "reason": r.reason,
                    "approved": r.approved,
                })
            })
            .collect()
    }

    /// Counts for the console: per minute by verdict (the last [`MINUTES`]), and totals
    /// by rule and by decision.
    pub fn summary(&self) -> serde_json::Value {
        let f = self.lock();
        let minutes: Vec<serde_json::Value> = f
            .minutes
            .iter()
            .map(|(m, c)| {
                serde_json::json!({"minute": m, "allow": c[0], "warn": c[1], "mask": c[2], "approve": c[3], "block": c[4]})
            })
            .collect();
        let mut rules: BTreeMap<&str, u64> = BTreeMap::new();
        for ((_, rule), n) in &f.rules {
            *rules.entry(rule.as_str()).or_default() += n;
        }
        let mut decisions: BTreeMap<&str, u64> = BTreeMap::new();
        for ((_, d, _), n) in &f.decisions {
            *decisions.entry(d.as_str()).or_default() += n;
        }
        serde_json::json!({"minutes": minutes, "rules": rules, "decisions": decisions})
    }

    /// Whether this call's stages should be timed (one in [`STAGE_SAMPLE`]).
    pub fn sample_stages(&self) -> bool {
        self.calls
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(STAGE_SAMPLE)
    }

    /// Records the stage timings a [`StageTimer`] took.
    pub fn observe_stages(&self, timer: &StageTimer) {
        let mut f = self.lock();
        for (stage, d) in &timer.taken {
            f.stages
                .entry(stage.name())
                .or_default()
                .observe(d.as_secs_f64());
        }
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let f = self.lock();
        let mut out = String::with_capacity(4096);
        let esc = |s: &str| {
            s.replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n")
        };
        out.push_str("# HELP bulwark_decisions_total Decisions by front, outcome and reason code.\n# TYPE bulwark_decisions_total counter\n");
        for ((front, decision, code), n) in &f.decisions {
            let _ = writeln!(
                out,
                "bulwark_decisions_total{{front=\"{}\",decision=\"{}\",reason_code=\"{}\"}} {n}",
                esc(front),
                esc(decision),
                esc(code)
            );
        }
        out.push_str("# HELP bulwark_rule_hits_total Decisions by the rule that decided them.\n# TYPE bulwark_rule_hits_total counter\n");
        for ((front, rule), n) in &f.rules {
            let _ = writeln!(
                out,
                "bulwark_rule_hits_total{{front=\"{}\",rule_id=\"{}\"}} {n}",
                esc(front),
                esc(rule)
            );
        }
        let histogram = |out: &mut String, name: &str, label: &str, value: &str, h: &Histogram| {
            for (i, b) in BUCKETS.iter().enumerate() {
                let c = h.counts.get(i).copied().unwrap_or(0);
                let _ = writeln!(out, "{name}_bucket{{{label}=\"{value}\",le=\"{b}\"}} {c}");
            }
            let _ = writeln!(
                out,
                "{name}_bucket{{{label}=\"{value}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(out, "{name}_sum{{{label}=\"{value}\"}} {}", h.sum);
            let _ = writeln!(out, "{name}_count{{{label}=\"{value}\"}} {}", h.count);
        };
        out.push_str("# HELP bulwark_eval_seconds Time to decide a call.\n# TYPE bulwark_eval_seconds histogram\n");
        for (front, h) in &f.eval {
            histogram(&mut out, "bulwark_eval_seconds", "front", &esc(front), h);
        }
        out.push_str(&format!("# HELP bulwark_stage_seconds Time spent in each pipeline stage (one call in {STAGE_SAMPLE}).\n# TYPE bulwark_stage_seconds histogram\n"));
        for (stage, h) in &f.stages {
            histogram(&mut out, "bulwark_stage_seconds", "stage", stage, h);
        }
        let _ = writeln!(
            out,
            "# HELP bulwark_telemetry_queue_depth Telemetry rows waiting to be written.\n# TYPE bulwark_telemetry_queue_depth gauge\nbulwark_telemetry_queue_depth {}",
            self.queue_depth.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP bulwark_telemetry_dropped_total Telemetry rows dropped because the queue was full.\n# TYPE bulwark_telemetry_dropped_total counter\nbulwark_telemetry_dropped_total {}",
            self.queue_dropped.load(Ordering::Relaxed)
        );
        out
    }
}

/// An engine observer that times each stage.
#[derive(Default)]
pub struct StageTimer {
    started: Option<Instant>,
    taken: Vec<(Stage, Duration)>,
}

impl Observer for StageTimer {
    fn before(&mut self, _stage: Stage) {
        self.started = Some(Instant::now());
    }

    fn after(&mut self, stage: Stage, _outcome: &Outcome, _note: &str) {
        if let Some(t) = self.started.take() {
            self.taken.push((stage, t.elapsed()));
        }
    }

    fn wants_notes(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_are_bounded_and_rendered() {
        let m = Metrics::new();
        let mut d = Decision::invalid_input("x", "v");
        for i in 0..(MAX_SERIES + 10) {
            d.rule_id = Some(format!("rule.{i}"));
            m.observe("daemon", &d);
        }
        let text = m.render();
        assert!(text.contains("bulwark_rule_hits_total{front=\"daemon\",rule_id=\"other\"} 10"));
        assert!(text.contains("bulwark_eval_seconds_count{front=\"daemon\"}"));
        assert_eq!(m.lock().rules.len(), MAX_SERIES + 1);
    }
}
