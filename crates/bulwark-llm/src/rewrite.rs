//! Judging the tool calls in a whole (non-streamed) response, and rewriting it when one is
//! withheld: the call is replaced by text saying why, `finish_reason` / `stop_reason`
//! follow, and a `bulwark` object carries the details for programs.

use serde_json::{Value, json};

use crate::api::Api;
use crate::history::{arguments, shell_action};
use crate::judge::{Judge, Ruling, explain};

/// Judges every proposed call in `body`; returns whether anything changed.
pub fn judge_response(api: Api, body: &mut Value, judge: &mut Judge) -> bool {
    match api {
        Api::Chat => chat(body, judge),
        Api::Messages => messages(body, judge),
        Api::Responses => responses(body, judge),
    }
    if judge.changed() {
        let meta = judge.metadata();
        if let Some(obj) = body.as_object_mut() {
            obj.insert("bulwark".into(), meta);
        }
        true
    } else {
        false
    }
}

fn chat(body: &mut Value, judge: &mut Judge) {
    let Some(choices) = body.get_mut("choices").and_then(Value::as_array_mut) else {
        return;
    };
    for choice in choices {
        let Some(msg) = choice.get_mut("message").and_then(Value::as_object_mut) else {
            continue;
        };
        let mut notes = Vec::new();
        let mut kept = 0;
        let mut touched = false;
        if let Some(Value::Array(calls)) = msg.get_mut("tool_calls") {
            let mut keep = Vec::new();
            for mut tc in std::mem::take(calls) {
                let id = str_at(&tc, "id");
                let f = tc.get("function").cloned().unwrap_or(Value::Null);
                let name = str_at(&f, "name");
                match judge.judge(&id, &name, &arguments(f.get("arguments"))) {
                    Ruling::Pass => keep.push(tc),
                    Ruling::Rewrite(a) => {
                        tc["function"]["arguments"] = Value::String(a.to_string());
                        touched = true;
                        keep.push(tc);
                    }
                    Ruling::Block(b) => {
                        touched = true;
                        notes.push(explain(&b));
                    }
                }
            }
            kept = keep.len();
            *calls = keep;
        }
        // The pre-tools form.
        if let Some(f) = msg.get("function_call").cloned() {
            let name = str_at(&f, "name");
            match judge.judge(
                &format!("function:{name}"),
                &name,
                &arguments(f.get("arguments")),
            ) {
                Ruling::Pass => kept += 1,
                Ruling::Rewrite(a) => {
                    msg.insert(
                        "function_call".into(),
                        json!({"name": name, "arguments": a.to_string()}),
                    );
                    touched = true;
                    kept += 1;
                }
                Ruling::Block(b) => {
                    msg.remove("function_call");
                    touched = true;
                    notes.push(explain(&b));
                }
            }
        }
        if !touched {
            continue;
        }
        if kept == 0 {
            msg.remove("tool_calls");
        }
        if !notes.is_empty() {
            let text = match msg.get("content").and_then(Value::as_str) {
                Some(t) if !t.is_empty() => format!("{t}\n\n{}", notes.join("\n\n")),
                _ => notes.join("\n\n"),
            };
            msg.insert("content".into(), Value::String(text));
        }
        if kept == 0 {
            choice["finish_reason"] = json!("stop");
        }
    }
}

fn messages(body: &mut Value, judge: &mut Judge) {
    let Some(blocks) = body.get_mut("content").and_then(Value::as_array_mut) else {
        return;
    };
    let mut kept = 0;
    let mut touched = false;
    for block in blocks.iter_mut() {
        provider_block(block, judge);
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        if kind != "tool_use" {
            continue;
        }
        let id = str_at(block, "id");
        let name = str_at(block, "name");
        let input = block.get("input").cloned().unwrap_or(Value::Null);
        match judge.judge(&id, &name, &input) {
            Ruling::Pass => kept += 1,
            Ruling::Rewrite(a) => {
                block["input"] = a;
                touched = true;
                kept += 1;
            }
            Ruling::Block(b) => {
                *block = json!({"type": "text", "text": explain(&b)});
                touched = true;
            }
        }
    }
    if touched && kept == 0 && body.get("stop_reason").and_then(Value::as_str) == Some("tool_use") {
        body["stop_reason"] = json!("end_turn");
    }
}

fn responses(body: &mut Value, judge: &mut Judge) {
    let Some(items) = body.get_mut("output").and_then(Value::as_array_mut) else {
        return;
    };
    for item in items.iter_mut() {
        // What provider-run tools read earlier in this answer counts for later calls.
        crate::stream::provider_ran(item, judge);
        if let Some(replacement) = judge_item(item, judge) {
            *item = replacement;
        }
    }
}

/// Judges one Responses output item; `Some` is what replaces it (a message saying why it
/// was withheld, or the item with new arguments).
pub(crate) fn judge_item(item: &Value, judge: &mut Judge) -> Option<Value> {
    let kind = item.get("type").and_then(Value::as_str)?;
    let call_id = str_at(item, "call_id");
    let id = if call_id.is_empty() {
        str_at(item, "id")
    } else {
        call_id
    };
    let (name, args) = match kind {
        "function_call" => (str_at(item, "name"), arguments(item.get("arguments"))),
        "custom_tool_call" => (
            str_at(item, "name"),
            json!({"input": item.get("input").cloned().unwrap_or(Value::Null)}),
        ),
        "local_shell_call" | "shell_call" => (
            "local_shell".to_string(),
            shell_action(item.get("action").unwrap_or(&Value::Null)),
        ),
        // `computer_call`, `apply_patch_call` and kinds not known yet: what the client
        // would do is in the item's action or operation.
        k if crate::stream::is_call(item) => {
            let mut args = serde_json::Map::new();
            // Arguments in the function-call form are read as such, so a command inside
            // is analysed as a command.
            if let Value::Object(parsed) = arguments(item.get("arguments")) {
                args.extend(parsed);
            }
            for key in ["action", "operation", "input", "arguments"] {
                if let Some(v) = item.get(key) {
                    args.entry(key.to_string()).or_insert_with(|| v.clone());
                }
            }
            (k.trim_end_matches("_call").to_string(), Value::Object(args))
        }
        _ => return None,
    };
    match judge.judge(&id, &name, &args) {
        Ruling::Pass => None,
        Ruling::Rewrite(a) => {
            let mut item = item.clone();
            match kind {
                "function_call" => item["arguments"] = Value::String(a.to_string()),
                "custom_tool_call" => {
                    item["input"] = a.get("input").cloned().unwrap_or(Value::Null)
                }
                "local_shell_call" | "shell_call" => {
                    let command = a.get("command").and_then(Value::as_str).unwrap_or("");
                    item["action"]["command"] = json!(["sh", "-c", command]);
                    if let Some(obj) = item["action"].as_object_mut() {
                        obj.remove("commands");
                    }
                }
                // Nothing to put new arguments into: withheld instead.
                _ => {
                    let text = "[Bulwark] This call's arguments had to change and its kind cannot carry new ones, so it was not released.";
                    return Some(message_item(&format!("msg_bulwark_{id}"), text));
                }
            }
            Some(item)
        }
        Ruling::Block(b) => Some(message_item(&format!("msg_bulwark_{id}"), &explain(&b))),
    }
}

/// Reads a content block a provider-run tool put into an Anthropic answer: what its web
/// tools read is untrusted input; a remote MCP tool's result is a tool result.
pub(crate) fn provider_block(block: &Value, judge: &mut Judge) {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    if kind.starts_with("web_") && kind.ends_with("_tool_result") {
        judge.saw_untrusted();
    } else if kind == "mcp_tool_result" {
        let r = crate::history::Exchange {
            id: str_at(block, "tool_use_id"),
            tool: None,
            args: Value::Null,
            content: block.get("content").cloned().unwrap_or(Value::Null),
            web: false,
        };
        judge.absorb(&[r]);
    }
}

/// A completed assistant message item holding `text`.
pub(crate) fn message_item(id: &str, text: &str) -> Value {
    json!({
        "type": "message",
        "id": id,
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    })
}

pub(crate) fn str_at(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}
