//! What the MCP load harnesses share: the upstream's one tool, `echo`.

use serde_json::{Value, json};

/// The result an echo MCP server gives for request `msg`.
pub fn echo_result(msg: &Value) -> Value {
    match msg["method"].as_str() {
        Some("initialize") => json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo", "version": "1"},
        }),
        Some("tools/list") => json!({"tools": [{
            "name": "echo",
            "description": "Echo the message back.",
            "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
        }]}),
        Some("tools/call") => json!({"content": [{
            "type": "text",
            "text": msg.pointer("/params/arguments/message").and_then(Value::as_str).unwrap_or(""),
        }]}),
        _ => json!({}),
    }
}
