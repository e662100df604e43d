//! The tool results in a request's history, each paired with the call that produced it.
//!
//! A model request carries the whole conversation: the calls the model proposed earlier
//! and what they returned. Taint comes from both — *what* ran (`cat ~/.ssh/id_rsa`, a
//! fetch) and *what came back* (a key, an injected instruction) — so every result is paired
//! with its call by id: Chat's `tool_call_id`, the Responses API's `call_id`, Anthropic's
//! `tool_use_id`.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::api::Api;

/// One tool result the agent has already seen.
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    /// The call id.
    pub id: String,
    /// The tool's name, when the call is in the history.
    pub tool: Option<String>,
    /// The call's arguments (`Null` when the call is not in the history).
    pub args: Value,
    /// What the tool returned.
    pub content: Value,
    /// A provider-run tool that reads the web (web search, web fetch): untrusted input
    /// whatever it says.
    pub web: bool,
}

/// Most results looked at in one request: more is refused rather than half-read.
pub const MAX_RESULTS: usize = 4096;

/// Why a history could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    /// More results than [`MAX_RESULTS`].
    #[error("the request holds more than {MAX_RESULTS} tool results")]
    TooMany,
    /// A field has the wrong type.
    #[error("{0}")]
    Shape(String),
}

/// The tool results in a request body, in order.
pub fn results(api: Api, body: &Value) -> Result<Vec<Exchange>, HistoryError> {
    let mut calls: HashMap<String, (String, Value)> = HashMap::new();
    let mut out = Vec::new();
    let push = |out: &mut Vec<Exchange>, e: Exchange| {
        if out.len() >= MAX_RESULTS {
            return Err(HistoryError::TooMany);
        }
        out.push(e);
        Ok(())
    };
    match api {
        Api::Chat => {
            for m in items(body, "messages")? {
                match m.get("role").and_then(Value::as_str) {
                    Some("assistant") => {
                        for tc in m
                            .get("tool_calls")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                        {
                            let f = tc.get("function").unwrap_or(&Value::Null);
                            calls.insert(
                                text(tc, "id"),
                                (text(f, "name"), arguments(f.get("arguments"))),
                            );
                        }
                        // The pre-tools form: one `function_call` per assistant message,
                        // answered by a `function` message that names it.
                        if let Some(f) = m.get("function_call") {
                            calls.insert(
                                format!("function:{}", text(f, "name")),
                                (text(f, "name"), arguments(f.get("arguments"))),
                            );
                        }
                    }
                    Some("tool") => {
                        let id = text(m, "tool_call_id");
                        let e = exchange(&calls, id, content(m.get("content")));
                        push(&mut out, e)?;
                    }
                    Some("function") => {
                        let id = format!("function:{}", text(m, "name"));
                        let e = exchange(&calls, id, content(m.get("content")));
                        push(&mut out, e)?;
                    }
                    _ => {}
                }
            }
        }
        Api::Messages => {
            for m in items(body, "messages")? {
                let Some(blocks) = m.get("content").and_then(Value::as_array) else {
                    continue;
                };
                for b in blocks {
                    let kind = b.get("type").and_then(Value::as_str).unwrap_or("");
                    match kind {
                        "tool_use" | "server_tool_use" | "mcp_tool_use" => {
                            let args = b.get("input").cloned().unwrap_or(Value::Null);
                            calls.insert(text(b, "id"), (text(b, "name"), args));
                        }
                        "tool_result" | "mcp_tool_result" => {
                            let id = text(b, "tool_use_id");
                            let e = exchange(&calls, id, content(b.get("content")));
                            push(&mut out, e)?;
                        }
                        // Results of Anthropic's own tools: `web_search_tool_result`,
                        // `web_fetch_tool_result`, `code_execution_tool_result`, …
                        k if k.ends_with("_tool_result") => {
                            let id = text(b, "tool_use_id");
                            let mut e = exchange(&calls, id, content(b.get("content")));
                            e.web = k.starts_with("web_");
                            push(&mut out, e)?;
                        }
                        _ => {}
                    }
                }
            }
        }
        Api::Responses => {
            let input = match body.get("input") {
                None | Some(Value::String(_)) => return Ok(out),
                Some(Value::Array(a)) => a,
                Some(_) => {
                    return Err(HistoryError::Shape(
                        "input must be a string or an array".into(),
                    ));
                }
            };
            for item in input {
                let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
                let id = text(item, "call_id");
                match kind {
                    "function_call" => {
                        calls.insert(id, (text(item, "name"), arguments(item.get("arguments"))));
                    }
                    "custom_tool_call" => {
                        let input = item.get("input").cloned().unwrap_or(Value::Null);
                        calls.insert(id, (text(item, "name"), json!({"input": input})));
                    }
                    "local_shell_call" | "shell_call" => {
                        let action = item.get("action").unwrap_or(&Value::Null);
                        calls.insert(id, ("local_shell".into(), shell_action(action)));
                    }
                    "function_call_output"
                    | "custom_tool_call_output"
                    | "local_shell_call_output"
                    | "shell_call_output" => {
                        let e = exchange(&calls, id, content(item.get("output")));
                        push(&mut out, e)?;
                    }
                    // A remote MCP call the provider ran: call and result in one item.
                    "mcp_call" => {
                        let e = Exchange {
                            id: text(item, "id"),
                            tool: Some(text(item, "name")),
                            args: arguments(item.get("arguments")),
                            content: content(item.get("output")),
                            web: false,
                        };
                        push(&mut out, e)?;
                    }
                    // What a computer-use agent saw: a screenshot of wherever it browsed.
                    "computer_call_output" => {
                        let mut e = exchange(&calls, id, content(item.get("output")));
                        e.tool.get_or_insert_with(|| "computer".into());
                        e.web = true;
                        push(&mut out, e)?;
                    }
                    // The provider searched the web or the user's files: text anyone who
                    // could write there chose.
                    "web_search_call" | "file_search_call" => {
                        let e = Exchange {
                            id: text(item, "id"),
                            tool: Some(kind.trim_end_matches("_call").into()),
                            args: item.get("action").cloned().unwrap_or(Value::Null),
                            content: item.get("results").cloned().unwrap_or(Value::Null),
                            web: true,
                        };
                        push(&mut out, e)?;
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(out)
}

fn items<'a>(body: &'a Value, key: &str) -> Result<&'a [Value], HistoryError> {
    match body.get(key) {
        None => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(HistoryError::Shape(format!("{key} must be an array"))),
    }
}

fn exchange(calls: &HashMap<String, (String, Value)>, id: String, content: Value) -> Exchange {
    let (tool, args) = match calls.get(&id) {
        Some((name, args)) => (Some(name.clone()), args.clone()),
        None => (None, Value::Null),
    };
    Exchange {
        id,
        tool,
        args,
        content,
        web: false,
    }
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Arguments as the APIs send them: a JSON text (Chat, Responses) or an object. Text that
/// is not JSON stays a string, so the engine still sees every byte of it.
pub fn arguments(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) if s.trim().is_empty() => json!({}),
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(v) => v.clone(),
        None => json!({}),
    }
}

/// A `local_shell_call` / `shell_call` action as shell-tool arguments.
pub(crate) fn shell_action(action: &Value) -> Value {
    let words = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|w| w.as_str().map(str::to_string))
            .collect()
    };
    // `local_shell_call` has one argv; `shell_call` a list of command lines.
    let argv = words(action.get("command"));
    if !argv.is_empty() {
        return json!({"command": join_argv(&argv)});
    }
    json!({"command": words(action.get("commands")).join("\n")})
}

/// An argv as one shell line, each word quoted where it needs to be.
fn join_argv(argv: &[String]) -> String {
    argv.iter()
        .map(|w| {
            if !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Tool output as text where it is text: a string, or the text parts of a content list.
/// Other parts (images, files) are kept as they are for the scanner.
fn content(v: Option<&Value>) -> Value {
    match v {
        Some(Value::Array(parts)) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            if texts.len() == parts.len() {
                Value::String(texts.join("\n"))
            } else {
                Value::Array(parts.clone())
            }
        }
        Some(v) => v.clone(),
        None => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_results_pair_with_their_calls() {
        let body = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"cat ~/.ssh/id_rsa\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "KEY"}]},
            {"role": "tool", "tool_call_id": "nope", "content": "orphan"},
        ]});
        let r = results(Api::Chat, &body).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].tool.as_deref(), Some("Bash"));
        assert_eq!(r[0].args, json!({"command": "cat ~/.ssh/id_rsa"}));
        assert_eq!(r[0].content, json!("KEY"));
        assert_eq!(r[1].tool, None);
    }

    #[test]
    fn anthropic_results_and_provider_web_results() {
        let body = json!({"messages": [
            {"role": "assistant", "content": [
                {"type": "text", "text": "reading"},
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "/etc/shadow"}},
                {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "x"}},
                {"type": "web_search_tool_result", "tool_use_id": "s1", "content": [{"type": "web_search_result", "url": "https://x"}]}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "root:x"}]},
        ]});
        let r = results(Api::Messages, &body).unwrap();
        assert_eq!(r.len(), 2);
        assert!(r[0].web);
        assert_eq!(r[1].args, json!({"path": "/etc/shadow"}));
    }

    #[test]
    fn responses_items_and_shell_calls() {
        let body = json!({"input": [
            {"type": "function_call", "call_id": "f1", "name": "fetch", "arguments": "{\"url\":\"https://x\"}"},
            {"type": "function_call_output", "call_id": "f1", "output": "page"},
            {"type": "local_shell_call", "call_id": "l1", "action": {"type": "exec", "command": ["cat", "/home/me/.ssh/id_rsa"]}},
            {"type": "local_shell_call_output", "call_id": "l1", "output": "KEY"},
        ]});
        let r = results(Api::Responses, &body).unwrap();
        assert_eq!(r[0].tool.as_deref(), Some("fetch"));
        assert_eq!(r[1].args, json!({"command": "cat /home/me/.ssh/id_rsa"}));
        assert!(results(Api::Responses, &json!({"input": 3})).is_err());
        assert!(
            results(Api::Responses, &json!({"input": "hi"}))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn argv_words_are_quoted() {
        assert_eq!(
            join_argv(&["sh".into(), "-c".into(), "echo 'a b'".into()]),
            r"sh -c 'echo '\''a b'\'''"
        );
    }
}
