//! `bulwark scan`: the content scanner on a file or standard input (the document is read,
//! scanned and masked by `bulwark_scan::document`).

use std::io::Read;
use std::process::ExitCode;

use anyhow::{Context, Result};
use bulwark_scan::document::{Document, Placeholders, line_col};
use bulwark_scan::{Scanner, Scope, Severity};
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
    let doc = Document::parse(&text);
    let all = doc
        .scan(&scanner, scope)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let serious = all.iter().any(|(_, f)| f.severity >= Severity::Medium);
    let strings = doc.strings();

    if args.mask {
        print!("{}", doc.masked(&all, &mut Placeholders::default()));
    } else if args.json {
        let out: Vec<Value> = all
            .iter()
            .map(|(i, f)| {
                let (pointer, s) = &strings[*i];
                let (line, column) = line_col(s, f.span.0);
                json!({"category": f.category.as_str(), "rule_id": f.rule_id, "severity": f.severity.as_str(), "span": [f.span.0, f.span.1],
                       "pointer": if doc.is_json() { Some(pointer) } else { None }, "line": line, "column": column,
                       "encoding": f.encoding.map(|e| format!("{e:?}").to_lowercase())})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        let mut numbers = Placeholders::default();
        for (i, f) in &all {
            let (pointer, s) = &strings[*i];
            let (line, column) = line_col(s, f.span.0);
            let at = if doc.is_json() {
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
