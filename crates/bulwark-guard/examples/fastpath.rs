//! The fast path's verdict on JSON-lines texts, for `scripts/train_head.py`'s "with and
//! without the guard" columns: reads `{"text": ...}` lines on stdin and writes
//! `{"flagged": bool}` lines, where flagged means what `bulwark scan --as SCOPE` exits 1
//! for (a finding of medium severity or above; a JSON object or array is scanned string by
//! string, as the gateways do). SCOPE is the row's `scope` (request, response or
//! definition; response when absent): a user prompt is not scanned as if a tool had
//! returned it. In one process, because 4,500 `bulwark scan` processes take
//! an hour in a debug build.

use std::io::{BufRead, Write};

use bulwark_scan::{Scanner, Scope, Severity};
use serde_json::Value;

fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // As `bulwark scan` does: no input in these sets comes near its 64 MiB limit.
    let scanner = Scanner::new()?.with_max_bytes(64 << 20);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in std::io::stdin().lock().lines() {
        let v: Value = serde_json::from_str(&line?)?;
        let text = v.get("text").and_then(|t| t.as_str()).unwrap_or("");
        // The scope the text travels in (scripts/build_sets.py), as the gateways scan it.
        let scope = match v.get("scope").and_then(|s| s.as_str()) {
            Some("request") => Scope::Request,
            Some("definition") => Scope::Definition,
            _ => Scope::Response,
        };
        let mut parts = Vec::new();
        match serde_json::from_str::<Value>(text) {
            Ok(doc) if doc.is_object() || doc.is_array() => strings(&doc, &mut parts),
            _ => parts.push(text.to_owned()),
        }
        let mut flagged = false;
        for p in &parts {
            let found = scanner.scan(p, scope)?;
            flagged |= found.iter().any(|f| f.severity >= Severity::Medium);
        }
        writeln!(out, "{}", serde_json::json!({ "flagged": flagged }))?;
    }
    Ok(())
}
