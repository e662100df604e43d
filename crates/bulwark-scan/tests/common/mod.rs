//! What the corpus harnesses share: the scanner, loaders for the labelled data, the
//! confusion tally and its table, and what counts as "flagged".
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, dead_code)]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use bulwark_scan::{Category, Finding, Scanner, Severity};
use serde_json::Value;

pub fn scanner() -> &'static Scanner {
    static S: OnceLock<Scanner> = OnceLock::new();
    S.get_or_init(|| Scanner::new().unwrap())
}

/// JSON Lines under `tests/data/`; `None` when the file is absent (AgentDojo's outputs
/// are materialised only where the benchmark was run).
pub fn jsonl(path: &str) -> Option<Vec<Value>> {
    let path = format!("{}/tests/data/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).ok()?;
    Some(
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    )
}

/// A JSON document under `tests/data/`.
pub fn json(path: &str) -> Value {
    let path = format!("{}/tests/data/{path}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[derive(Default, Clone, Copy, Debug)]
pub struct Tally {
    pub tp: u32,
    pub fp: u32,
    pub fn_: u32,
    pub tn: u32,
}

impl Tally {
    pub fn add(&mut self, truth: bool, predicted: bool) {
        match (truth, predicted) {
            (true, true) => self.tp += 1,
            (false, true) => self.fp += 1,
            (true, false) => self.fn_ += 1,
            (false, false) => self.tn += 1,
        }
    }
    fn ratio(a: u32, b: u32) -> Option<f64> {
        (b > 0).then(|| f64::from(a) / f64::from(b))
    }
    pub fn precision(&self) -> Option<f64> {
        Self::ratio(self.tp, self.tp + self.fp)
    }
    pub fn recall(&self) -> Option<f64> {
        Self::ratio(self.tp, self.tp + self.fn_)
    }
    pub fn fpr(&self) -> Option<f64> {
        Self::ratio(self.fp, self.fp + self.tn)
    }
    pub fn row(&self, name: &str) -> String {
        let pct = |x: Option<f64>| x.map_or("—".to_string(), |v| format!("{:.1}%", 100.0 * v));
        format!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} |",
            self.tp,
            self.fp,
            self.fn_,
            self.tn,
            pct(self.precision()),
            pct(self.recall()),
            pct(self.fpr())
        )
    }
}

pub fn header(title: &str) {
    println!(
        "\n#### {title}\n\n| set | TP | FP | FN | TN | precision | recall | FP rate |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    );
}

pub fn table(title: &str, groups: &BTreeMap<String, Tally>) {
    header(title);
    for (k, t) in groups {
        println!("{}", t.row(k));
    }
}

/// The categories that are instructions aimed at the model.
pub const INSTRUCTIONS: &[Category] = &[
    Category::Injection,
    Category::Prefill,
    Category::Concealment,
    Category::HiddenText,
    Category::Poisoning,
];

/// Whether the engine would act with its default thresholds: an instruction-like finding
/// of medium severity or above.
pub fn instructs(found: &[Finding]) -> bool {
    found
        .iter()
        .any(|f| INSTRUCTIONS.contains(&f.category) && f.severity >= Severity::Medium)
}

/// Whether anything instruction-like was reported at all (low severity included).
pub fn signals(found: &[Finding]) -> bool {
    found.iter().any(|f| INSTRUCTIONS.contains(&f.category))
}

/// `SHOW=name` prints the misclassified rows of sets whose name contains it — only ever
/// for rows rules may be written from (`dev`); eval rows are never printed.
pub fn show(set: &str, truth: bool, predicted: bool, text: &str, found: &[Finding]) {
    if truth != predicted && std::env::var("SHOW").is_ok_and(|s| set.contains(&s)) {
        let ids: Vec<&str> = found.iter().map(|f| f.rule_id).collect();
        let cut: String = text.chars().take(240).collect();
        println!(
            "  {} {set}: {cut:?} {ids:?}",
            if truth { "MISS" } else { "FALSE" }
        );
    }
}
