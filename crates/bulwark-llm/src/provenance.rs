//! Where a proposed call's consequential arguments came from (issue 26, item 2), as the
//! proxy sees it: the rule itself ([`Sources::origin`]) lives in the engine
//! ([`bulwark_engine::provenance`]), shared with the MCP gateway; this module reads the
//! user's own messages out of a request body for it.

pub use bulwark_engine::provenance::{CONSEQUENTIAL_KEYS, Origin, Sources};
use serde_json::Value;

/// The user's own text in a request body: Chat and Messages `messages` with role `user`
/// (text parts only: a Messages `tool_result` block rides in a user message but is a
/// tool's), the Responses API's `input` string or user items.
pub fn user_texts(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let part_text = |p: &Value| -> Option<String> {
        match p.get("type").and_then(Value::as_str) {
            Some("text" | "input_text") => {
                p.get("text").and_then(Value::as_str).map(str::to_string)
            }
            _ => None,
        }
    };
    let mut take = |content: Option<&Value>| match content {
        Some(Value::String(s)) => out.push(s.clone()),
        Some(Value::Array(parts)) => out.extend(parts.iter().filter_map(part_text)),
        _ => {}
    };
    let is_user = |m: &&Value| m.get("role").and_then(Value::as_str) == Some("user");
    if let Some(msgs) = body.get("messages").and_then(Value::as_array) {
        for m in msgs.iter().filter(is_user) {
            take(m.get("content"));
        }
    }
    match body.get("input") {
        Some(Value::String(s)) => take(Some(&Value::String(s.clone()))),
        Some(Value::Array(items)) => {
            for m in items.iter().filter(is_user) {
                take(m.get("content"));
            }
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_users_text_is_read_from_every_api() {
        let chat = json!({"messages": [{"role": "system", "content": "sys"},
            {"role": "user", "content": "hello"}, {"role": "tool", "content": "x"}]});
        assert_eq!(user_texts(&chat), ["hello"]);
        let messages = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "hi"},
            {"type": "tool_result", "tool_use_id": "t", "content": "tool says"}]}]});
        assert_eq!(user_texts(&messages), ["hi"]);
        let responses = json!({"input": [{"role": "user", "content": [{"type": "input_text", "text": "yo"}]},
            {"type": "function_call_output", "call_id": "c", "output": "out"}]});
        assert_eq!(user_texts(&responses), ["yo"]);
        assert_eq!(user_texts(&json!({"input": "plain"})), ["plain"]);
    }
}
