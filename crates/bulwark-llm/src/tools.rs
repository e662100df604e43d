//! The tool definitions a model request carries (its `tools` array), by name, so the
//! engine can infer what an unmapped tool does from its words (issue 26).
//!
//! Chat Completions nests each under `function` (`{type: "function", function: {name,
//! description, parameters}}`), the Responses API flattens it (`{type: "function", name,
//! description, parameters}`), Anthropic Messages names the schema `input_schema`. A
//! provider-run tool (web search, code execution) has no definition of its own and is
//! skipped. Definitions are hints about the request's own tools: a reviewed mapping always
//! wins over them, and a name the request does not define is judged as before.

use std::collections::HashMap;

use bulwark_engine::Definition;
use serde_json::Value;

/// Most definitions read from one request; the rest are judged without one.
pub const MAX_TOOLS: usize = 512;

/// The request's tool definitions by name. The first definition of a name wins.
pub fn definitions(body: &Value) -> HashMap<String, Definition> {
    let mut out = HashMap::new();
    let Some(tools) = body.get("tools").and_then(Value::as_array) else {
        return out;
    };
    // One entry reader for every front (`bulwark_engine::toolset::entry`).
    for (name, def) in tools
        .iter()
        .take(MAX_TOOLS)
        .filter_map(bulwark_engine::toolset::entry)
    {
        out.entry(name).or_insert(def);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_api_shape_is_read() {
        let chat = json!({"tools": [{"type": "function", "function": {"name": "send_money",
            "description": "Sends money.", "parameters": {"type": "object"}}}]});
        let responses = json!({"tools": [{"type": "function", "name": "send_money",
            "description": "Sends money.", "parameters": {"type": "object"}},
            {"type": "web_search"}]});
        let messages = json!({"tools": [{"name": "send_money", "description": "Sends money.",
            "input_schema": {"type": "object"}}, {"type": "web_search_20250305", "name": "web_search"}]});
        for body in [chat, responses, messages] {
            let d = definitions(&body);
            assert_eq!(d.len(), 1, "{body}");
            assert_eq!(d["send_money"].description, "Sends money.");
            assert_eq!(d["send_money"].input_schema, json!({"type": "object"}));
        }
    }

    #[test]
    fn the_first_definition_of_a_name_wins_and_the_count_is_bounded() {
        let body = json!({"tools": [
            {"name": "t", "description": "first"},
            {"name": "t", "description": "second"},
        ]});
        assert_eq!(definitions(&body)["t"].description, "first");
        let many: Vec<Value> = (0..MAX_TOOLS + 10)
            .map(|i| json!({"name": format!("t{i}"), "description": "x"}))
            .collect();
        assert_eq!(definitions(&json!({"tools": many})).len(), MAX_TOOLS);
        assert!(definitions(&json!({"tools": "nope"})).is_empty());
    }
}
