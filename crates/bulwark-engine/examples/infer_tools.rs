//! Reads tool definitions, one JSON object a line (OpenAI `{"function": {name, description,
//! parameters}}`, Anthropic/MCP `{name, description, input_schema | inputSchema, annotations}`),
//! and prints what capability inference makes of each: `name<TAB>caps<TAB>taint<TAB>why`.
//! Used by scripts/infer/score.py for the held-out check (docs/detection.md).

use std::io::BufRead;

use bulwark_engine::Definition;
use bulwark_engine::infer::infer;
use serde_json::Value;

fn main() {
    for line in std::io::stdin().lock().lines().map_while(Result::ok) {
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let f = v.get("function").unwrap_or(&v);
        let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
        let def = Definition {
            description: f
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            input_schema: f
                .get("parameters")
                .or_else(|| f.get("input_schema"))
                .or_else(|| f.get("inputSchema"))
                .cloned()
                .unwrap_or(Value::Null),
            annotations: f.get("annotations").cloned().unwrap_or(Value::Null),
        };
        let i = infer(name, &def);
        let or_dash = |v: Vec<&str>| {
            if v.is_empty() {
                "-".to_string()
            } else {
                v.join(",")
            }
        };
        println!(
            "{name}\t{}\t{}\t{}",
            or_dash(i.capabilities.names()),
            or_dash(i.taint.iter().map(|t| t.as_str()).collect()),
            i.summary()
        );
    }
}
