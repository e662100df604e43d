//! The command analyser and the `commands` pack on labelled and unlabelled corpora, through
//! the whole engine with the built-in policy, one fresh session per line, as a `bash` tool
//! call. Prints the tables in docs/detection.md and holds the floors they report.
//!
//! ```text
//! cargo test -p bulwark-engine --release --test commands_corpus -- --nocapture
//! SHOW=dcg cargo test …   # also list every disagreement (dcg, packs, art, tldr)
//! ```
//!
//! DCG labels are allow/deny; Bulwark agrees with a deny when it asks a human or blocks
//! (approve, block) and with an allow when it lets the call through (allow, warn).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use bulwark_engine::{Decision, Verdict};
use common::Harness;
use serde_json::{Value, json};

fn rows(name: &str) -> Vec<Value> {
    let path = format!("{}/tests/data/commands/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

struct Run {
    h: Harness,
    n: u64,
}

impl Run {
    fn new() -> Run {
        Run {
            h: Harness::default_policy(),
            n: 0,
        }
    }

    fn decide(&mut self, command: &str) -> Decision {
        self.n += 1;
        self.h.advance(1000);
        self.h.req(
            &format!("corpus-{}", self.n),
            "bash",
            json!({"command": command}),
        )
    }
}

fn show(what: &str) -> bool {
    std::env::var("SHOW").is_ok_and(|v| v == what || v == "all")
}

fn denies(d: &Decision) -> bool {
    matches!(d.decision, Verdict::Approve | Verdict::Block)
}

fn label(d: &Decision) -> String {
    format!(
        "{:?} {}",
        d.decision,
        d.rule_id
            .clone()
            .or_else(|| d.reason_code.map(|c| c.as_str().to_string()))
            .unwrap_or_default()
    )
}

/// (agree, total) per group, plus the overall rate.
fn agreement(run: &mut Run, data: &[Value], group: &str, what: &str) -> (usize, usize) {
    let mut per: BTreeMap<String, (usize, usize, usize, usize)> = BTreeMap::new();
    let (mut agree, mut total) = (0, 0);
    for r in data {
        let Some(cmd) = r["command"].as_str() else {
            continue;
        };
        let deny = r["expected"] == "deny";
        let d = run.decide(cmd);
        let ok = denies(&d) == deny;
        let e = per
            .entry(r[group].as_str().unwrap_or("?").to_string())
            .or_default();
        if deny {
            e.0 += 1;
            e.1 += usize::from(ok);
        } else {
            e.2 += 1;
            e.3 += usize::from(ok);
        }
        total += 1;
        agree += usize::from(ok);
        if !ok && show(what) {
            println!(
                "  {} expected {} got {}: {cmd:?}",
                r[group],
                r["expected"],
                label(&d)
            );
        }
    }
    println!(
        "\n{what}: {agree}/{total} agree ({:.1}%)",
        100.0 * agree as f64 / total as f64
    );
    println!("| {group} | deny agreed | allow agreed |\n|---|---|---|");
    for (g, (dn, da, an, aa)) in &per {
        println!("| {g} | {da}/{dn} | {aa}/{an} |");
    }
    (agree, total)
}

#[test]
fn dcg_regression_corpus() {
    let data: Vec<Value> = rows("dcg_regression_corpus.jsonl")
        .into_iter()
        .filter(|r| r["input_kind"] != "hook_json")
        .collect();
    let mut run = Run::new();
    let (agree, total) = agreement(&mut run, &data, "file", "dcg");
    assert!(agree as f64 / total as f64 >= 0.95, "{agree}/{total}");
}

#[test]
fn dcg_pack_assertions() {
    let data = rows("dcg_pack_assertions.jsonl");
    let mut run = Run::new();
    let (agree, total) = agreement(&mut run, &data, "pack", "packs");
    assert!(agree as f64 / total as f64 >= 0.95, "{agree}/{total}");
}

#[test]
fn atomic_red_team() {
    let data = rows("atomic_red_team_linux.jsonl");
    let mut run = Run::new();
    // tests, block, approve, warn, recorded (allowed with a low-severity finding), unflagged
    let mut per: BTreeMap<String, [usize; 6]> = BTreeMap::new();
    for r in &data {
        let cmd = r["command"].as_str().unwrap_or_default();
        let d = run.decide(cmd);
        let slot = match d.decision {
            Verdict::Block => 1,
            Verdict::Approve => 2,
            Verdict::Warn | Verdict::Mask => 3,
            Verdict::Allow if !d.findings.is_empty() => 4,
            Verdict::Allow => 5,
        };
        for t in r["tactics"].as_array().into_iter().flatten() {
            let e = per
                .entry(t.as_str().unwrap_or("?").to_string())
                .or_default();
            e[0] += 1;
            e[slot] += 1;
        }
        if slot == 5 && show("art") {
            println!("  {} {:?}: {cmd:?}", r["technique"], r["tactics"]);
        }
    }
    println!("\nAtomic Red Team (Linux), per tactic:");
    println!("| tactic | tests | block | approve | warn | recorded | unflagged | flagged |");
    println!("|---|---|---|---|---|---|---|---|");
    for (t, [n, b, a, w, rec, un]) in &per {
        println!(
            "| {t} | {n} | {b} | {a} | {w} | {rec} | {un} | {:.0}% |",
            100.0 * (n - un) as f64 / *n as f64
        );
    }
    // What stays unflagged is listed in docs/detection.md (staging with `split -b` and no
    // network, T1030; `yes > /dev/null`, T1496).
    for tactic in ["exfiltration", "impact"] {
        let [n, .., un] = per[tactic];
        assert!(un <= 1, "{tactic}: {un} of {n} tests unflagged");
    }
}

/// tldr writes alternatives as `a|b`; a shell would read a pipe. `x|y` with no spaces
/// becomes `x/y` before measuring.
fn neutralise(cmd: &str) -> String {
    let chars: Vec<char> = cmd.chars().collect();
    let mut out = String::with_capacity(cmd.len());
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        if c == '|'
            && prev.is_some_and(|p| p.is_alphanumeric() || p == '-' || p == ']')
            && next.is_some_and(|n| n.is_alphanumeric() || n == '-' || n == '[')
        {
            out.push('/');
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn tldr_block_rate() {
    let data = rows("tldr_linux_common.jsonl");
    let mut run = Run::new();
    let mut counts = [0usize; 4];
    let mut blocked: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut approve: BTreeMap<String, usize> = BTreeMap::new();
    for r in &data {
        let cmd = neutralise(r["command"].as_str().unwrap_or_default());
        let d = run.decide(&cmd);
        let slot = match d.decision {
            Verdict::Block => 0,
            Verdict::Approve => 1,
            Verdict::Warn | Verdict::Mask => 2,
            Verdict::Allow => 3,
        };
        counts[slot] += 1;
        let why = label(&d);
        if slot == 0 {
            blocked.entry(why.clone()).or_default().push(cmd.clone());
        } else if slot == 1 {
            *approve.entry(why).or_default() += 1;
        }
    }
    let n = data.len() as f64;
    println!(
        "\ntldr ({} commands): block {} ({:.2}%), approve {} ({:.2}%), warn {} ({:.2}%), allow {}",
        data.len(),
        counts[0],
        100.0 * counts[0] as f64 / n,
        counts[1],
        100.0 * counts[1] as f64 / n,
        counts[2],
        100.0 * counts[2] as f64 / n,
        counts[3]
    );
    println!("| blocked by | rows | example |\n|---|---|---|");
    for (why, cmds) in &blocked {
        println!(
            "| {why} | {} | `{}` |",
            cmds.len(),
            cmds[0].replace('|', "\\|")
        );
        if show("tldr") {
            for c in cmds {
                println!("    {c}");
            }
        }
    }
    if show("tldr") {
        for (why, k) in &approve {
            println!("  approve {why}: {k}");
        }
    }
    assert!(counts[0] as f64 / n <= 0.01, "block rate {}", counts[0]);
}
