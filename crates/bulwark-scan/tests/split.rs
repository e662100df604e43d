//! The out-of-sample protocol (`docs/detection.md`): precision, recall and false-positive
//! rate per category, per source and family, and per language, on the materialised dev/eval
//! split (`tests/data/split/`, licences and README inside).
//!
//! `cargo test -p bulwark-scan --release --test split -- --nocapture` scores `dev/` (the half
//! the rules were written from). `EVAL=1` also scores `eval/` — the half nobody read while
//! writing rules — and AgentDojo's tool outputs when they are materialised. The floors
//! asserted here are on dev only, so a regression fails CI without anyone tuning to eval.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::collections::BTreeMap;

use bulwark_scan::{Category, Finding, Scope, Severity};
use common::{INSTRUCTIONS, Tally, instructs, scanner, table};
use serde_json::Value;

fn rows(half: &str, name: &str) -> Option<Vec<Value>> {
    common::jsonl(&format!("split/{half}/{name}"))
}

fn halves() -> Vec<&'static str> {
    if std::env::var("EVAL").is_ok_and(|v| v == "1") {
        vec!["dev", "eval"]
    } else {
        vec!["dev"]
    }
}

fn scope_of(r: &Value) -> Scope {
    match r["scope"].as_str().unwrap() {
        "response" => Scope::Response,
        "definition" => Scope::Definition,
        _ => Scope::Request,
    }
}

/// `SHOW=set` prints the dev rows a detector gets wrong (never eval rows).
fn show(half: &str, set: &str, truth: bool, predicted: bool, text: &str, found: &[Finding]) {
    if half == "dev" {
        common::show(set, truth, predicted, text, found);
    }
}

struct Report {
    /// Rule ids behind false positives (ids only: eval rows are never printed).
    fp_rules: BTreeMap<&'static str, u32>,
    total: Tally,
    response: Tally,
    by_set: BTreeMap<String, Tally>,
    by_lang: BTreeMap<String, Tally>,
}

fn score_injection(half: &str, file: &str) -> Option<Report> {
    let data = rows(half, file)?;
    let mut rep = Report {
        fp_rules: BTreeMap::new(),
        total: Tally::default(),
        response: Tally::default(),
        by_set: BTreeMap::new(),
        by_lang: BTreeMap::new(),
    };
    for r in &data {
        let text = r["text"].as_str().unwrap();
        let truth = r["label"].as_bool().unwrap();
        let scope = scope_of(r);
        let found = scanner().scan(text, scope).unwrap();
        let predicted = instructs(&found);
        let set = format!(
            "{} / {}",
            r["source"].as_str().unwrap(),
            r["family"].as_str().unwrap()
        );
        show(half, &set, truth, predicted, text, &found);
        if predicted && !truth {
            for f in found
                .iter()
                .filter(|f| INSTRUCTIONS.contains(&f.category) && f.severity >= Severity::Medium)
            {
                *rep.fp_rules.entry(f.rule_id).or_default() += 1;
            }
        }
        rep.total.add(truth, predicted);
        if scope == Scope::Response {
            rep.response.add(truth, predicted);
        }
        rep.by_set.entry(set).or_default().add(truth, predicted);
        rep.by_lang
            .entry(r["lang"].as_str().unwrap().to_string())
            .or_default()
            .add(truth, predicted);
    }
    Some(rep)
}

#[test]
fn injection() {
    let mut dev = None;
    for half in halves() {
        let rep = score_injection(half, "injection.jsonl").unwrap();
        println!("\n### injection, {half}");
        table(
            &format!("injection {half}: per source / family"),
            &rep.by_set,
        );
        table(&format!("injection {half}: per language"), &rep.by_lang);
        let mut all = BTreeMap::new();
        all.insert(format!("all {half} rows"), rep.total);
        all.insert(format!("tool results only ({half})"), rep.response);
        table(&format!("injection {half}: overall"), &all);
        println!(
            "\nrules behind false positives ({half}): {:?}",
            rep.fp_rules
        );
        if half == "dev" {
            dev = Some(rep.total);
        }
        if half == "eval"
            && let Some(ad) = score_injection(half, "agentdojo.jsonl")
        {
            table("AgentDojo tool outputs (eval only)", &ad.by_set);
            let mut all = BTreeMap::new();
            all.insert("AgentDojo, all outputs".to_string(), ad.total);
            table("AgentDojo overall", &all);
            println!(
                "\nrules behind AgentDojo false positives: {:?}",
                ad.fp_rules
            );
        }
    }
    let dev = dev.unwrap();
    assert!(dev.recall().unwrap() >= 0.75, "{dev:?}");
    assert!(dev.fpr().unwrap() <= 0.02, "{dev:?}");
}

/// Every string of a definition and every key, each scanned as a definition (what the
/// engine's content stage does with `tools/list` entries).
fn definition_flags(def: &Value) -> (bool, Vec<&'static str>) {
    fn walk<'a>(v: &'a Value, strings: &mut Vec<&'a str>, keys: &mut String) {
        match v {
            Value::String(s) => strings.push(s),
            Value::Array(a) => a.iter().for_each(|x| walk(x, strings, keys)),
            Value::Object(o) => {
                for (k, x) in o {
                    keys.push_str(k);
                    keys.push('\n');
                    walk(x, strings, keys);
                }
            }
            _ => {}
        }
    }
    let mut strings = Vec::new();
    let mut keys = String::new();
    walk(def, &mut strings, &mut keys);
    strings.push(&keys);
    let mut ids = Vec::new();
    let mut flagged = false;
    for s in strings {
        let found = scanner().scan(s, Scope::Definition).unwrap();
        if instructs(&found) {
            flagged = true;
            ids.extend(found.iter().map(|f| f.rule_id));
        }
    }
    (flagged, ids)
}

#[test]
fn poisoning() {
    for half in halves() {
        let data = rows(half, "poisoning.jsonl").unwrap();
        let mut by_set: BTreeMap<String, Tally> = BTreeMap::new();
        let mut total = Tally::default();
        for r in &data {
            let truth = r["label"].as_bool().unwrap();
            let (predicted, ids) = definition_flags(&r["definition"]);
            let set = format!(
                "{} ({})",
                r["source"].as_str().unwrap(),
                if truth { "poisoned" } else { "benign" }
            );
            if half == "dev"
                && truth != predicted
                && std::env::var("SHOW").is_ok_and(|s| set.contains(&s))
            {
                println!(
                    "  {} {set}: {} {ids:?}",
                    if truth { "MISS" } else { "FALSE" },
                    r["definition"]
                );
            }
            total.add(truth, predicted);
            by_set.entry(set).or_default().add(truth, predicted);
        }
        by_set.insert(format!("all {half} definitions"), total);
        table(&format!("poisoning {half}"), &by_set);
        if half == "dev" {
            assert!(total.fpr().unwrap() <= 0.03, "{total:?}");
            assert!(total.recall().unwrap() >= 0.8, "{total:?}");
        }
    }
}

#[test]
fn secrets() {
    for half in halves() {
        let data = rows(half, "secrets.jsonl").unwrap();
        let mut by_set: BTreeMap<String, Tally> = BTreeMap::new();
        let mut total = Tally::default();
        for r in &data {
            let text = r["text"].as_str().unwrap();
            let truth = r["label"].as_bool().unwrap();
            let found = scanner().scan(text, Scope::Request).unwrap();
            let predicted = found.iter().any(|f| f.category == Category::Secret);
            let set = format!(
                "{} / {}",
                r["source"].as_str().unwrap(),
                r["family"].as_str().unwrap()
            );
            show(half, &set, truth, predicted, text, &found);
            total.add(truth, predicted);
            by_set.entry(set).or_default().add(truth, predicted);
        }
        by_set.insert(format!("all {half} rows"), total);
        table(&format!("secrets {half}"), &by_set);
        if half == "dev" {
            assert!(total.recall().unwrap() >= 0.7, "{total:?}");
            assert!(total.precision().unwrap() >= 0.85, "{total:?}");
        }
    }
}
