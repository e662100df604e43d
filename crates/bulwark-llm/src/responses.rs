//! OpenAI Responses (`…/responses`): its history, its safety hint, and its tool calls
//! judged in whole answers and in streams.
//!
//! A call is an output item — `function_call`, `custom_tool_call`, `local_shell_call`,
//! `shell_call`, `computer_call`, `apply_patch_call`, or a new `…_call` kind (judged, not
//! let through) — and its result an `…_output` input item naming `call_id`. Items the
//! provider runs itself (web and file search, remote MCP) are read for taint. Streamed, a
//! call item is complete at its `response.output_item.done`; a withheld one is replaced by
//! a message item saying why, in every later event that shows it.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Value, json};

use crate::history::{Collector, Exchange, HistoryError, arguments, content, shell_action, text};
use crate::judge::{Judge, Ruling, explain};
use crate::sse::Event;
use crate::stream::{Held, StreamError, Transform, data_json, emit_json, kind_of};

/// The tool results in a Responses request, each paired with its call.
pub fn results(body: &Value) -> Result<Vec<Exchange>, HistoryError> {
    let mut h = Collector::default();
    let input = match body.get("input") {
        None | Some(Value::String(_)) => return Ok(h.out),
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
                h.calls
                    .insert(id, (text(item, "name"), arguments(item.get("arguments"))));
            }
            "custom_tool_call" => {
                let input = item.get("input").cloned().unwrap_or(Value::Null);
                h.calls
                    .insert(id, (text(item, "name"), json!({"input": input})));
            }
            "local_shell_call" | "shell_call" => {
                let action = item.get("action").unwrap_or(&Value::Null);
                h.calls
                    .insert(id, ("local_shell".into(), shell_action(action)));
            }
            "function_call_output"
            | "custom_tool_call_output"
            | "local_shell_call_output"
            | "shell_call_output" => {
                let e = h.exchange(id, content(item.get("output")));
                h.push(e)?;
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
                h.push(e)?;
            }
            // What a computer-use agent saw: a screenshot of wherever it browsed.
            "computer_call_output" => {
                let mut e = h.exchange(id, content(item.get("output")));
                e.tool.get_or_insert_with(|| "computer".into());
                e.web = true;
                h.push(e)?;
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
                h.push(e)?;
            }
            _ => {}
        }
    }
    Ok(h.out)
}

/// Adds the safety hint to `instructions`, after what is there.
pub fn inject_hint(obj: &mut serde_json::Map<String, Value>, hint: &str) {
    let instructions = match obj.remove("instructions") {
        Some(Value::String(s)) if !s.is_empty() => Value::String(format!("{s}\n\n{hint}")),
        None | Some(Value::Null) | Some(Value::String(_)) => Value::String(hint.to_string()),
        Some(other) => other,
    };
    obj.insert("instructions".into(), instructions);
}

/// The event that ends a stream that could not be finished safely: `error` as well as
/// `message`, since openai-python raises on an event carrying one.
pub fn error_event(message: &str) -> Event {
    Event::new(
        Some("error"),
        &json!({"type": "error", "code": "bulwark_stream", "message": message, "param": null,
                "error": {"type": "bulwark_stream", "message": message}})
        .to_string(),
    )
}

/// Judges every proposed call in a whole answer, rewriting what a ruling changes.
pub fn judge_answer(body: &mut Value, judge: &mut Judge) {
    let Some(items) = body.get_mut("output").and_then(Value::as_array_mut) else {
        return;
    };
    for item in items.iter_mut() {
        // What provider-run tools read earlier in this answer counts for later calls.
        provider_ran(item, judge);
        if let Some(replacement) = judge_item(item, judge) {
            *item = replacement;
        }
    }
}

/// Judges one Responses output item; `Some` is what replaces it (a message saying why it
/// was withheld, or the item with new arguments).
fn judge_item(item: &Value, judge: &mut Judge) -> Option<Value> {
    let kind = item.get("type").and_then(Value::as_str)?;
    let call_id = text(item, "call_id");
    let id = if call_id.is_empty() {
        text(item, "id")
    } else {
        call_id
    };
    let (name, args) = match kind {
        "function_call" => (text(item, "name"), arguments(item.get("arguments"))),
        "custom_tool_call" => (
            text(item, "name"),
            json!({"input": item.get("input").cloned().unwrap_or(Value::Null)}),
        ),
        "local_shell_call" | "shell_call" => (
            "local_shell".to_string(),
            shell_action(item.get("action").unwrap_or(&Value::Null)),
        ),
        // `computer_call`, `apply_patch_call` and kinds not known yet: what the client
        // would do is in the item's action or operation.
        k if is_call(item) => {
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

/// A completed assistant message item holding `text`.
fn message_item(id: &str, text: &str) -> Value {
    json!({
        "type": "message",
        "id": id,
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    })
}

// ---------------------------------------------------------------- streams

#[derive(Default)]
/// A Responses stream being judged.
pub struct Stream {
    /// Call items still being written, by output index: the item as announced and the
    /// arguments so far.
    open: BTreeMap<u64, (Value, String)>,
    /// Events held back while any call is open, with the output index they belong to.
    held: Held<Option<u64>>,
    /// Rulings by output index, for the held events.
    rulings: HashMap<u64, (Ruling, Option<Value>)>,
    /// Call items judged, by item id.
    ruled: HashMap<String, Value>,
    /// Item ids of calls cut off: withheld whatever later events say of them.
    cut_ids: HashSet<String>,
    /// Replacements by item id, for the final `response.completed`.
    replaced: HashMap<String, Value>,
    /// Output indexes of calls cut off before their item was done.
    cut: HashSet<u64>,
}

/// Output items the client runs. Items the provider runs itself (web and file search,
/// code interpreter, image generation, remote MCP) have already happened when they
/// arrive; they are read for taint instead.
fn is_call(item: &Value) -> bool {
    match item.get("type").and_then(Value::as_str) {
        Some(
            "function_call" | "custom_tool_call" | "local_shell_call" | "shell_call"
            | "computer_call" | "apply_patch_call",
        ) => true,
        Some(
            "web_search_call"
            | "file_search_call"
            | "code_interpreter_call"
            | "image_generation_call"
            | "mcp_call"
            | "mcp_list_tools"
            | "mcp_approval_request",
        ) => false,
        // A new kind of call the client would run: judged rather than let through.
        Some(t) => t.ends_with("_call"),
        None => false,
    }
}

/// Sends a withheld call's replacement message as a message item would stream.
fn emit_message(out: &mut Vec<u8>, item: &Value, seq: &Value, oi: &Value, done: bool) {
    let id = item.get("id").cloned().unwrap_or(Value::Null);
    let text = item
        .pointer("/content/0/text")
        .cloned()
        .unwrap_or(json!(""));
    let mut started = item.clone();
    started["status"] = json!("in_progress");
    started["content"] = json!([]);
    let mut events = vec![
        ("response.output_item.added", json!({"item": started})),
        (
            "response.content_part.added",
            json!({"item_id": id, "content_index": 0,
                   "part": {"type": "output_text", "text": "", "annotations": []}}),
        ),
        (
            "response.output_text.delta",
            json!({"item_id": id, "content_index": 0, "delta": text, "logprobs": []}),
        ),
        (
            "response.output_text.done",
            json!({"item_id": id, "content_index": 0, "text": text, "logprobs": []}),
        ),
        (
            "response.content_part.done",
            json!({"item_id": id, "content_index": 0,
                   "part": {"type": "output_text", "text": text, "annotations": []}}),
        ),
    ];
    if done {
        events.push(("response.output_item.done", json!({"item": item})));
    }
    for (name, body) in events {
        let mut e = body;
        e["type"] = json!(name);
        e["sequence_number"] = seq.clone();
        e["output_index"] = oi.clone();
        emit_json(out, Some(name), &e);
    }
}

/// Reads what a provider-run item brought into the answer: a web search is untrusted
/// input; a remote MCP call's output is a tool result like any other.
fn provider_ran(item: &Value, judge: &mut Judge) {
    match item.get("type").and_then(Value::as_str) {
        Some("web_search_call" | "file_search_call") => judge.saw_untrusted(),
        Some("mcp_call") => {
            let r = Exchange {
                id: text(item, "id"),
                tool: Some(text(item, "name")),
                args: arguments(item.get("arguments")),
                content: item.get("output").cloned().unwrap_or(Value::Null),
                web: false,
            };
            judge.absorb(&[r]);
        }
        _ => {}
    }
}

fn ruling_for(replacement: &Option<Value>) -> Ruling {
    match replacement {
        None => Ruling::Pass,
        Some(r) if r.get("type") == Some(&json!("message")) => {
            Ruling::Block(Box::new(placeholder()))
        }
        Some(r) => Ruling::Rewrite(r.clone()),
    }
}

impl Stream {
    fn flush(&mut self, out: &mut Vec<u8>) {
        for (ev, idx) in self.held.take() {
            let ruling = idx.and_then(|i| self.rulings.get(&i));
            let Some((ruling, replacement)) = ruling else {
                out.extend_from_slice(&ev.raw);
                continue;
            };
            let v: Value = serde_json::from_str(&ev.data).unwrap_or(Value::Null);
            let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
            let seq = v.get("sequence_number").cloned().unwrap_or(Value::Null);
            let oi = v.get("output_index").cloned().unwrap_or(Value::Null);
            match (ruling, kind, replacement) {
                (Ruling::Pass, _, _) => out.extend_from_slice(&ev.raw),
                // The announced item may already hold what was rewritten (a shell call's
                // whole action): it is announced as rewritten.
                (Ruling::Rewrite(_), "response.output_item.added", Some(item)) => {
                    let mut v = v.clone();
                    let mut item = item.clone();
                    item["status"] = json!("in_progress");
                    v["item"] = item;
                    emit_json(out, ev.name.as_deref(), &v);
                }
                (Ruling::Rewrite(_), "response.output_item.done", Some(item)) => {
                    if let Some(args) = item.get("arguments") {
                        emit_json(
                            out,
                            Some("response.function_call_arguments.done"),
                            &json!({"type": "response.function_call_arguments.done",
                                    "sequence_number": seq, "item_id": item.get("id"),
                                    "output_index": oi, "arguments": args}),
                        );
                    }
                    let mut v = v.clone();
                    v["item"] = item.clone();
                    emit_json(out, ev.name.as_deref(), &v);
                }
                (Ruling::Block(_), "response.output_item.added", Some(item)) => {
                    let cut = idx.is_some_and(|i| self.cut.contains(&i));
                    emit_message(out, item, &seq, &oi, cut);
                }
                (Ruling::Block(_), "response.output_item.done", Some(item)) => {
                    let mut v = v.clone();
                    v["item"] = item.clone();
                    emit_json(out, ev.name.as_deref(), &v);
                }
                // Argument deltas of a withheld or rewritten call are not sent.
                _ => {}
            }
        }
    }

    /// Withholds every call still open: the stream or the response ended before its item
    /// was done.
    fn cut_off(&mut self, judge: &mut Judge) {
        let open = std::mem::take(&mut self.open);
        for (i, (item, _)) in open {
            let id = text(&item, "call_id");
            let name = text(&item, "name");
            let _ = judge.cut_off(&id, &name);
            let note = "[Bulwark] The answer ended before this tool call was complete, so it was not released.";
            let replacement = message_item(&format!("msg_bulwark_{id}"), note);
            let item_id = text(&item, "id");
            self.ruled.insert(item_id.clone(), item.clone());
            self.cut_ids.insert(item_id.clone());
            self.replaced.insert(item_id, replacement.clone());
            self.cut.insert(i);
            self.rulings.insert(
                i,
                (Ruling::Block(Box::new(placeholder())), Some(replacement)),
            );
        }
    }

    /// Whether the call `item` under `id` was judged before as exactly this item (or was
    /// cut off, which stands whatever comes later). An empty id is never known.
    fn known(&self, id: &str, item: &Value) -> bool {
        !id.is_empty()
            && (self.cut_ids.contains(id) || self.ruled.get(id).is_some_and(|j| j == item))
    }

    /// Sends `ev` now, or holds it while calls are open.
    fn pass(
        &mut self,
        ev: Event,
        belongs: Option<u64>,
        out: &mut Vec<u8>,
    ) -> Result<(), StreamError> {
        if self.open.is_empty() && self.held.is_empty() {
            out.extend_from_slice(&ev.raw);
            return Ok(());
        }
        self.held.push(ev, belongs)
    }
}

impl Transform for Stream {
    fn event(
        &mut self,
        mut ev: Event,
        judge: &mut Judge,
        out: &mut Vec<u8>,
    ) -> Result<(), StreamError> {
        let Some(mut v) = data_json(&mut ev)? else {
            return self.pass(ev, None, out);
        };
        let kind = kind_of(&ev, &v)?;
        let oi = v.get("output_index").and_then(Value::as_u64);
        let item = v.get("item").cloned().unwrap_or(Value::Null);
        if kind == "response.output_item.done" {
            provider_ran(&item, judge);
        }
        match kind.as_str() {
            "response.output_item.added" if is_call(&item) => {
                // A call the transform cannot place could not be held: refused.
                let Some(i) = oi else {
                    return Err(StreamError::Mismatch);
                };
                self.open.insert(i, (item.clone(), String::new()));
            }
            "response.function_call_arguments.delta"
            | "response.custom_tool_call_input.delta"
            | "response.function_call_arguments.done"
            | "response.custom_tool_call_input.done" => {
                let Some((_, args)) = oi.and_then(|i| self.open.get_mut(&i)) else {
                    // Arguments of no announced call: nothing judged them, so they are
                    // not sent.
                    return Ok(());
                };
                if let Some(d) = v.get("delta").and_then(Value::as_str) {
                    args.push_str(d);
                }
            }
            "response.output_item.done"
                if is_call(&item) && !oi.is_some_and(|i| self.open.contains_key(&i)) =>
            {
                // A call that was never announced: judged now, on its own — or, when its
                // id was judged before, sent as it was ruled then. An empty id is never
                // taken for one seen before.
                let id = text(&item, "id");
                let before = self
                    .known(&id, &item)
                    .then(|| self.replaced.get(&id).cloned());
                if !id.is_empty() {
                    self.ruled.insert(id.clone(), item.clone());
                }
                let replacement = match before {
                    Some(earlier) => earlier,
                    None => judge_item(&item, judge),
                };
                let seq = v.get("sequence_number").cloned().unwrap_or(Value::Null);
                let oi_v = v.get("output_index").cloned().unwrap_or(Value::Null);
                let mut buf = Vec::new();
                match (&ruling_for(&replacement), &replacement) {
                    (Ruling::Pass, _) | (_, None) => buf.extend_from_slice(&ev.raw),
                    (Ruling::Block(_), Some(r)) => {
                        self.replaced.insert(id, r.clone());
                        emit_message(&mut buf, r, &seq, &oi_v, true);
                    }
                    (Ruling::Rewrite(_), Some(r)) => {
                        self.replaced.insert(id, r.clone());
                        v["item"] = r.clone();
                        emit_json(&mut buf, ev.name.as_deref(), &v);
                    }
                }
                let sp = crate::sse::Event {
                    raw: buf,
                    name: None,
                    data: String::new(),
                };
                return self.pass(sp, None, out);
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                // The final response repeats every item: nothing withheld may come back in
                // it, and no call may appear there first without being judged.
                self.cut_off(judge);
                self.flush(out);
                if let Some(items) = v
                    .pointer_mut("/response/output")
                    .and_then(Value::as_array_mut)
                {
                    for item in items.iter_mut() {
                        provider_ran(item, judge);
                        let id = text(item, "id");
                        // A call judged before counts only if it is the same call now; a
                        // different one under a known id is judged on its own.
                        if is_call(item) && !self.known(&id, item) {
                            let replacement = judge_item(item, judge);
                            if !id.is_empty() {
                                self.ruled.insert(id.clone(), item.clone());
                                self.replaced.remove(&id);
                            }
                            if let Some(r) = replacement {
                                *item = r;
                            }
                            continue;
                        }
                        if let Some(r) = self.replaced.get(&id) {
                            *item = r.clone();
                        }
                    }
                }
                if judge.changed() {
                    v["response"]["bulwark"] = judge.metadata();
                    emit_json(out, ev.name.as_deref(), &v);
                } else {
                    out.extend_from_slice(&ev.raw);
                }
                return Ok(());
            }
            _ => {}
        }
        let belongs = oi.filter(|i| self.open.contains_key(i));
        self.pass(ev, belongs, out)?;
        if kind == "response.output_item.done"
            && let Some(i) = belongs
            && let Some((announced, streamed)) = self.open.remove(&i)
        {
            let id = text(&item, "id");
            if !id.is_empty() {
                self.ruled.insert(id.clone(), item.clone());
            }
            // The client has what was announced and streamed as well as the finished
            // item: they must be one call, or neither is released.
            let same = ["type", "name", "call_id", "id"]
                .iter()
                .all(|k| announced.get(*k) == item.get(*k))
                && (streamed.is_empty()
                    || item.get("arguments").and_then(Value::as_str) == Some(streamed.as_str())
                    || item.get("input").and_then(Value::as_str) == Some(streamed.as_str()));
            let replacement = if same {
                judge_item(&item, judge)
            } else {
                let call_id = text(&item, "call_id");
                let _ = judge.inconsistent(&call_id, &text(&announced, "name"));
                Some(message_item(
                    &format!("msg_bulwark_{call_id}"),
                    "[Bulwark] The answer described this tool call differently as it went, so it was not released.",
                ))
            };
            if let Some(r) = &replacement {
                self.replaced.insert(id, r.clone());
            }
            self.rulings
                .insert(i, (ruling_for(&replacement), replacement));
            if self.open.is_empty() {
                self.flush(out);
            }
        }
        Ok(())
    }

    fn end(&mut self, judge: &mut Judge, out: &mut Vec<u8>) {
        self.cut_off(judge);
        self.flush(out);
    }
}

/// Marks a held output index as withheld (the explanation is in its replacement item).
fn placeholder() -> crate::judge::Blocked {
    crate::judge::Blocked {
        id: String::new(),
        tool: String::new(),
        decision: bulwark_engine::Decision::invalid_input("withheld", ""),
        approvable: false,
        request: None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn responses_items_and_shell_calls() {
        let body = json!({"input": [
            {"type": "function_call", "call_id": "f1", "name": "fetch", "arguments": "{\"url\":\"https://x\"}"},
            {"type": "function_call_output", "call_id": "f1", "output": "page"},
            {"type": "local_shell_call", "call_id": "l1", "action": {"type": "exec", "command": ["cat", "/home/me/.ssh/id_rsa"]}},
            {"type": "local_shell_call_output", "call_id": "l1", "output": "KEY"},
        ]});
        let r = results(&body).unwrap();
        assert_eq!(r[0].tool.as_deref(), Some("fetch"));
        assert_eq!(r[1].args, json!({"command": "cat /home/me/.ssh/id_rsa"}));
        assert!(results(&json!({"input": 3})).is_err());
        assert!(results(&json!({"input": "hi"})).unwrap().is_empty());
    }

    #[test]
    fn the_hint_follows_the_instructions() {
        let mut resp = json!({"instructions": "I"});
        inject_hint(resp.as_object_mut().unwrap(), "H");
        assert_eq!(resp["instructions"], "I\n\nH");
    }
}
