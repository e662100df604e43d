//! False alarms on ordinary traffic: the ground-truth calls of the Berkeley Function-Calling
//! Leaderboard (tests/data/benign, Apache-2.0) through the whole engine with the built-in
//! policy, one session per BFCL question. None of them should be stopped: the share blocked
//! must stay at or under 0.3% and the share sent for approval at or under 1%, on each half
//! of the split. Prints the table in docs/detection.md.
//!
//! ```text
//! cargo test -p bulwark-engine --release --test benign_calls -- --nocapture
//! SHOW=benign cargo test …   # also list every call that is not allowed
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use bulwark_engine::Verdict;
use common::Harness;
use serde_json::Value;

/// The goals: blocked and approve shares, per half.
const MAX_BLOCKED: f64 = 0.003;
const MAX_ASKED: f64 = 0.01;

#[derive(Default)]
struct Tally {
    n: usize,
    block: usize,
    approve: usize,
    warn: usize,
}

#[test]
fn bfcl_ground_truth_calls() {
    let path = format!(
        "{}/tests/data/benign/bfcl_calls.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let show = std::env::var("SHOW").is_ok_and(|v| v == "benign" || v == "all");
    let mut h = Harness::default_policy();
    let mut halves: BTreeMap<String, Tally> = BTreeMap::new();
    let mut families: BTreeMap<String, Tally> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let r: Value = serde_json::from_str(line).unwrap();
        let id = r["id"].as_str().unwrap();
        let session = id.split('#').next().unwrap_or(id);
        h.advance(1000);
        let d = h.req(session, r["tool"].as_str().unwrap(), r["args"].clone());
        for t in [
            halves
                .entry(r["half"].as_str().unwrap().to_string())
                .or_default(),
            families
                .entry(r["family"].as_str().unwrap().to_string())
                .or_default(),
        ] {
            t.n += 1;
            match d.decision {
                Verdict::Block => t.block += 1,
                Verdict::Approve => t.approve += 1,
                Verdict::Warn => t.warn += 1,
                Verdict::Allow | Verdict::Mask => {}
            }
        }
        if show && d.decision != Verdict::Allow {
            println!(
                "  {:?} {} {}: {} {}",
                d.decision,
                d.rule_id.clone().unwrap_or_default(),
                d.reason_code.map(|c| c.as_str()).unwrap_or_default(),
                r["tool"],
                r["args"]
            );
        }
    }
    assert_eq!(halves.len(), 2, "both halves of the split are present");
    let pct = |k: usize, n: usize| 100.0 * k as f64 / n as f64;
    println!("\n| BFCL calls | calls | blocked | approve | warn |\n|---|---|---|---|---|");
    for (name, t) in halves.iter().chain(families.iter()) {
        println!(
            "| {name} | {} | {} ({:.2}%) | {} ({:.2}%) | {} ({:.2}%) |",
            t.n,
            t.block,
            pct(t.block, t.n),
            t.approve,
            pct(t.approve, t.n),
            t.warn,
            pct(t.warn, t.n)
        );
    }
    let total: usize = halves.values().map(|t| t.n).sum();
    assert!(
        total >= 2000,
        "{total} calls; the benchmark needs at least 2,000"
    );
    for (name, t) in &halves {
        assert!(
            t.block as f64 <= MAX_BLOCKED * t.n as f64,
            "{name}: {} of {} blocked",
            t.block,
            t.n
        );
        assert!(
            t.approve as f64 <= MAX_ASKED * t.n as f64,
            "{name}: {} of {} sent for approval",
            t.approve,
            t.n
        );
    }
}
