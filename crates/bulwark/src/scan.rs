//! `bulwark scan`: the content scanner on a file or standard input.

use std::collections::HashMap;
use std::io::Read;
use std::process::ExitCode;

use anyhow::{Context, Result};
use bulwark_scan::{Finding, Scanner, Scope, Severity};
use serde_json::{Value, json};

use crate::cli::ScanArgs;

/// Largest input `bulwark scan` reads.
const MAX_INPUT: usize = 64 << 20;

pub fn run(args: &ScanArgs) -> Result<ExitCode> {
    let mut text = String::new();
    match args.file.as_deref().filter(|p| p.as_os_str() != "-") {
        Some(p) => {
            std::fs::File::open(p)
                .with_context(|| format!("cannot open {}", p.display()))?
                .take(MAX_INPUT as u64 + 1)
                .read_to_string(&mut text)
                .with_context(|| format!("{} is not UTF-8 text", p.display()))?;
        }
        None => {
            std::io::stdin()
                .take(MAX_INPUT as u64 + 1)
                .read_to_string(&mut text)
                .context("standard input is not UTF-8 text")?;
        }
    }
    anyhow::ensure!(
        text.len() <= MAX_INPUT,
        "input is larger than {MAX_INPUT} bytes"
    );
    let scope = Scope::from_name(&args.direction).unwrap_or(Scope::Response);
    let scanner = Scanner::new()?.with_max_bytes(MAX_INPUT);

    // JSON is scanned string by string, like the gateways do; anything else as one text.
    let doc: Option<Value> = serde_json::from_str(&text)
        .ok()
        .filter(|v: &Value| v.is_object() || v.is_array());
    let mut strings: Vec<(String, String)> = Vec::new();
    match &doc {
        Some(v) => collect(v, &mut String::new(), &mut strings),
        None => strings.push((String::new(), text.clone())),
    }
    let mut all: Vec<(usize, Finding)> = Vec::new();
    for (i, (_, s)) in strings.iter().enumerate() {
        let found = scanner.scan(s, scope).map_err(|e| anyhow::anyhow!("{e}"))?;
        all.extend(found.into_iter().map(|f| (i, f)));
    }
    let serious = all.iter().any(|(_, f)| f.severity >= Severity::Medium);

    if args.mask {
        let mut numbers = Numbers::default();
        let masked: Vec<String> = strings
            .iter()
            .enumerate()
            .map(|(i, (_, s))| {
                let fs: Vec<Finding> = all
                    .iter()
                    .filter(|(j, _)| *j == i)
                    .map(|(_, f)| f.clone())
                    .collect();
                bulwark_scan::mask(s, &fs, |f| numbers.placeholder(f, &s[f.span.0..f.span.1]))
            })
            .collect();
        match doc {
            Some(mut v) => {
                for ((pointer, _), m) in strings.iter().zip(masked) {
                    if let Some(slot) = v.pointer_mut(pointer) {
                        *slot = Value::String(m);
                    }
                }
                println!("{}", serde_json::to_string_pretty(&v)?);
            }
            None => print!("{}", masked.concat()),
        }
    } else if args.json {
        let out: Vec<Value> = all
            .iter()
            .map(|(i, f)| {
                let (pointer, s) = &strings[*i];
                let (line, column) = line_col(s, f.span.0);
                json!({"category": f.category.as_str(), "rule_id": f.rule_id, "severity": f.severity.as_str(), "span": [f.span.0, f.span.1],
                       "pointer": if doc.is_some() { Some(pointer) } else { None }, "line": line, "column": column,
                       "encoding": f.encoding.map(|e| format!("{e:?}").to_lowercase())})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        let mut numbers = Numbers::default();
        for (i, f) in &all {
            let (pointer, s) = &strings[*i];
            let (line, column) = line_col(s, f.span.0);
            let at = if doc.is_some() {
                format!("{pointer}:{line}:{column}")
            } else {
                format!("{line}:{column}")
            };
            let shown = numbers.placeholder(f, &s[f.span.0..f.span.1]);
            println!(
                "{at}  {:8}  {:11}  {}  {}",
                f.severity.as_str(),
                f.category.as_str(),
                f.rule_id,
                shown
            );
        }
        println!(
            "{} finding{}",
            all.len(),
            if all.len() == 1 { "" } else { "s" }
        );
    }
    Ok(if serious {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Same value, same placeholder, within one run.
#[derive(Default)]
struct Numbers {
    seen: HashMap<(String, String), u32>,
    next: HashMap<String, u32>,
}

impl Numbers {
    fn placeholder(&mut self, f: &Finding, value: &str) -> String {
        let label = f.label.to_string();
        let n = match self.seen.get(&(label.clone(), value.to_string())) {
            Some(n) => *n,
            None => {
                let c = self.next.entry(label.clone()).or_insert(0);
                *c += 1;
                self.seen.insert((label.clone(), value.to_string()), *c);
                *c
            }
        };
        format!(
            "[REDACTED:{}:{label}:{n}]",
            f.category.as_str().to_uppercase()
        )
    }
}

fn collect(v: &Value, path: &mut String, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) => out.push((path.clone(), s.clone())),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                collect(x, path, out);
                path.truncate(len);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                let len = path.len();
                path.push('/');
                path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                collect(x, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn line_col(s: &str, at: usize) -> (usize, usize) {
    let before = &s[..at.min(s.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
