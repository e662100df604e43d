//! Streamed responses: text streams through as it comes; a proposed tool call is held
//! back until it is complete, judged, then released exactly as it came, released with new
//! arguments, or replaced by text saying why it was withheld.
//!
//! Each API streams tool calls its own way — Chat as `tool_calls` deltas closed by a
//! `finish_reason`, Anthropic as a `tool_use` content block, the Responses API as a
//! `function_call` output item — so each has its own [`Transform`]. Held bytes are
//! bounded: past [`MAX_HELD`] the stream ends with an error in the API's shape instead of
//! releasing what could not be judged.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Value, json};

use crate::api::Api;
use crate::history::{arguments, shell_action};
use crate::judge::{Judge, Ruling, explain};
use crate::rewrite::{judge_item, message_item, str_at};
use crate::sse::Event;

/// Most bytes held back while tool calls are being completed.
pub const MAX_HELD: usize = 8 * 1024 * 1024;

/// Why a stream was ended early.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The held calls grew past [`MAX_HELD`].
    #[error("a proposed tool call grew past {MAX_HELD} bytes before it was complete")]
    TooMuchHeld,
}

/// One API's stream rewriting.
pub trait Transform: Send {
    /// Takes one upstream event; appends what to send to `out`.
    fn event(&mut self, ev: Event, judge: &mut Judge, out: &mut Vec<u8>)
    -> Result<(), StreamError>;
    /// The upstream ended; releases or replaces whatever is still held.
    fn end(&mut self, judge: &mut Judge, out: &mut Vec<u8>);
}

/// The transform for `api`.
pub fn transform(api: Api) -> Box<dyn Transform> {
    match api {
        Api::Chat => Box::new(ChatStream::default()),
        Api::Messages => Box::new(MessagesStream::default()),
        Api::Responses => Box::new(ResponsesStream::default()),
    }
}

/// The event that ends a stream that could not be finished safely.
pub fn error_event(api: Api, message: &str) -> Event {
    match api {
        Api::Chat => Event::new(None, &api.error(502, message).to_string()),
        Api::Messages => Event::new(Some("error"), &api.error(502, message).to_string()),
        Api::Responses => Event::new(
            Some("error"),
            &json!({"type": "error", "code": "bulwark_stream", "message": message, "param": null})
                .to_string(),
        ),
    }
}

fn emit_json(out: &mut Vec<u8>, name: Option<&str>, v: &Value) {
    out.extend_from_slice(&Event::new(name, &v.to_string()).raw);
}

// ---------------------------------------------------------------- Chat Completions

#[derive(Default)]
struct Acc {
    id: String,
    name: String,
    args: String,
}

#[derive(Default)]
struct ChatStream {
    /// Events held back, raw and parsed (`None`: not JSON).
    held: Vec<(Event, Option<Value>)>,
    held_bytes: usize,
    /// Calls by (choice, index).
    calls: BTreeMap<(u64, u64), Acc>,
    /// Choices with calls still open.
    open: BTreeSet<u64>,
    rulings: HashMap<(u64, u64), Ruling>,
    /// Choices that have streamed text (an explanation then starts on a new paragraph).
    texted: BTreeSet<u64>,
}

impl ChatStream {
    fn judge_choice(&mut self, choice: u64, judge: &mut Judge) {
        let keys: Vec<(u64, u64)> = self
            .calls
            .range((choice, 0)..=(choice, u64::MAX))
            .map(|(k, _)| *k)
            .collect();
        for k in keys {
            if let Some(acc) = self.calls.remove(&k) {
                let r = judge.judge(
                    &acc.id,
                    &acc.name,
                    &arguments(Some(&Value::String(acc.args))),
                );
                self.rulings.insert(k, r);
            }
        }
        self.open.remove(&choice);
    }

    fn flush(&mut self, judge: &mut Judge, out: &mut Vec<u8>) {
        let held = std::mem::take(&mut self.held);
        self.held_bytes = 0;
        let rulings = std::mem::take(&mut self.rulings);
        if rulings.values().all(|r| *r == Ruling::Pass) {
            for (ev, _) in held {
                out.extend_from_slice(&ev.raw);
            }
            return;
        }
        // New indexes for the calls kept, per choice, in order.
        let mut index: HashMap<(u64, u64), u64> = HashMap::new();
        let mut kept: HashMap<u64, u64> = HashMap::new();
        for (k, r) in &rulings {
            if !matches!(r, Ruling::Block(_)) {
                let n = kept.entry(k.0).or_default();
                index.insert(*k, *n);
                *n += 1;
            }
        }
        let mut meta_sent = false;
        for (ev, parsed) in held {
            let Some(mut v) = parsed else {
                out.extend_from_slice(&ev.raw);
                continue;
            };
            let mut notes_before: Vec<Value> = Vec::new();
            if let Some(choices) = v.get_mut("choices").and_then(Value::as_array_mut) {
                for ch in choices.iter_mut() {
                    let c = ch.get("index").and_then(Value::as_u64).unwrap_or(0);
                    if let Some(Value::Array(tcs)) = ch.pointer_mut("/delta/tool_calls") {
                        let mut keep = Vec::new();
                        for mut tc in std::mem::take(tcs) {
                            let i = tc.get("index").and_then(Value::as_u64).unwrap_or(0);
                            match rulings.get(&(c, i)) {
                                Some(Ruling::Block(_)) => continue,
                                Some(Ruling::Rewrite(a)) => {
                                    // The first delta of a call carries its id: it gets
                                    // the whole new arguments; the rest are dropped.
                                    if tc.get("id").is_none() {
                                        continue;
                                    }
                                    tc["function"]["arguments"] = Value::String(a.to_string());
                                }
                                _ => {}
                            }
                            tc["index"] = json!(index.get(&(c, i)).copied().unwrap_or(i));
                            keep.push(tc);
                        }
                        if keep.is_empty() {
                            if let Some(d) = ch.get_mut("delta").and_then(Value::as_object_mut) {
                                d.remove("tool_calls");
                            }
                        } else {
                            *tcs = keep;
                        }
                    }
                    let finishing = ch.get("finish_reason").is_some_and(|f| !f.is_null());
                    if !finishing {
                        continue;
                    }
                    let texts: Vec<String> = rulings
                        .iter()
                        .filter(|(k, _)| k.0 == c)
                        .filter_map(|(_, r)| match r {
                            Ruling::Block(b) => Some(explain(b)),
                            _ => None,
                        })
                        .collect();
                    if !texts.is_empty() {
                        let gap = if self.texted.contains(&c) { "\n\n" } else { "" };
                        notes_before.push(json!({
                            "index": c,
                            "delta": {"content": format!("{gap}{}", texts.join("\n\n"))},
                            "finish_reason": null,
                        }));
                    }
                    if kept.get(&c).copied().unwrap_or(0) == 0 && rulings.keys().any(|k| k.0 == c) {
                        ch["finish_reason"] = json!("stop");
                    }
                }
            }
            if !notes_before.is_empty() {
                let mut note = json!({
                    "id": v.get("id").cloned().unwrap_or(Value::Null),
                    "object": "chat.completion.chunk",
                    "created": v.get("created").cloned().unwrap_or(json!(0)),
                    "model": v.get("model").cloned().unwrap_or(json!("")),
                    "choices": notes_before,
                });
                if !meta_sent {
                    note["bulwark"] = judge.metadata();
                    meta_sent = true;
                }
                emit_json(out, None, &note);
            }
            emit_json(out, None, &v);
        }
    }
}

impl Transform for ChatStream {
    fn event(
        &mut self,
        ev: Event,
        judge: &mut Judge,
        out: &mut Vec<u8>,
    ) -> Result<(), StreamError> {
        let parsed: Option<Value> = serde_json::from_str(&ev.data).ok();
        let mut finished = Vec::new();
        if let Some(choices) = parsed
            .as_ref()
            .and_then(|v| v.get("choices"))
            .and_then(Value::as_array)
        {
            for ch in choices {
                let c = ch.get("index").and_then(Value::as_u64).unwrap_or(0);
                if ch
                    .pointer("/delta/content")
                    .and_then(Value::as_str)
                    .is_some_and(|t| !t.is_empty())
                {
                    self.texted.insert(c);
                }
                for tc in ch
                    .pointer("/delta/tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let i = tc.get("index").and_then(Value::as_u64).unwrap_or(0);
                    let acc = self.calls.entry((c, i)).or_default();
                    if let Some(id) = tc.get("id").and_then(Value::as_str) {
                        acc.id = id.to_string();
                    }
                    if let Some(n) = tc.pointer("/function/name").and_then(Value::as_str) {
                        acc.name.push_str(n);
                    }
                    if let Some(a) = tc.pointer("/function/arguments").and_then(Value::as_str) {
                        acc.args.push_str(a);
                    }
                    self.open.insert(c);
                }
                if ch.get("finish_reason").is_some_and(|f| !f.is_null()) && self.open.contains(&c) {
                    finished.push(c);
                }
            }
        }
        let done = ev.data.trim() == "[DONE]";
        if self.held.is_empty() && self.open.is_empty() {
            out.extend_from_slice(&ev.raw);
            return Ok(());
        }
        if done {
            // The stream ended without finishing some calls: judge what there is.
            self.end(judge, out);
            out.extend_from_slice(&ev.raw);
            return Ok(());
        }
        self.held_bytes += ev.raw.len();
        if self.held_bytes > MAX_HELD {
            return Err(StreamError::TooMuchHeld);
        }
        self.held.push((ev, parsed));
        for c in finished {
            self.judge_choice(c, judge);
        }
        if self.open.is_empty() {
            self.flush(judge, out);
        }
        Ok(())
    }

    fn end(&mut self, judge: &mut Judge, out: &mut Vec<u8>) {
        let open: Vec<u64> = self.open.iter().copied().collect();
        for c in open {
            self.judge_choice(c, judge);
        }
        if !self.held.is_empty() {
            self.flush(judge, out);
        }
    }
}

// ---------------------------------------------------------------- Anthropic Messages

#[derive(Default)]
struct MessagesStream {
    cur: Option<Block>,
    kept: usize,
    blocked: bool,
}

struct Block {
    index: u64,
    id: String,
    name: String,
    start_input: Value,
    json: String,
    held: Vec<Event>,
    held_bytes: usize,
}

impl MessagesStream {
    fn close(&mut self, b: Block, stop: Option<Event>, judge: &mut Judge, out: &mut Vec<u8>) {
        let args = if b.json.trim().is_empty() {
            b.start_input.clone()
        } else {
            serde_json::from_str(&b.json).unwrap_or(Value::String(b.json.clone()))
        };
        let ruling = if stop.is_none() {
            // Cut off before the block closed: never released half-written.
            judge.judge(&b.id, &b.name, &Value::String(b.json.clone()))
        } else {
            judge.judge(&b.id, &b.name, &args)
        };
        match ruling {
            Ruling::Pass => {
                self.kept += 1;
                for e in b.held {
                    out.extend_from_slice(&e.raw);
                }
                if let Some(s) = stop {
                    out.extend_from_slice(&s.raw);
                }
            }
            Ruling::Rewrite(a) => {
                self.kept += 1;
                if let Some(first) = b.held.first() {
                    out.extend_from_slice(&first.raw);
                }
                emit_json(
                    out,
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": b.index,
                            "delta": {"type": "input_json_delta", "partial_json": a.to_string()}}),
                );
                emit_json(
                    out,
                    Some("content_block_stop"),
                    &json!({"type": "content_block_stop", "index": b.index}),
                );
            }
            Ruling::Block(blocked) => {
                self.blocked = true;
                let i = b.index;
                emit_json(
                    out,
                    Some("content_block_start"),
                    &json!({"type": "content_block_start", "index": i,
                            "content_block": {"type": "text", "text": ""}}),
                );
                emit_json(
                    out,
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": i,
                            "delta": {"type": "text_delta", "text": explain(&blocked)}}),
                );
                emit_json(
                    out,
                    Some("content_block_stop"),
                    &json!({"type": "content_block_stop", "index": i}),
                );
            }
        }
    }
}

impl Transform for MessagesStream {
    fn event(
        &mut self,
        ev: Event,
        judge: &mut Judge,
        out: &mut Vec<u8>,
    ) -> Result<(), StreamError> {
        let v: Value = match serde_json::from_str(&ev.data) {
            Ok(v) => v,
            Err(_) => {
                match &mut self.cur {
                    Some(b) => b.held.push(ev),
                    None => out.extend_from_slice(&ev.raw),
                }
                return Ok(());
            }
        };
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        let index = v.get("index").and_then(Value::as_u64);
        if kind == "content_block_start"
            && v.pointer("/content_block/type").and_then(Value::as_str) == Some("tool_use")
        {
            let cb = &v["content_block"];
            let b = Block {
                index: index.unwrap_or(0),
                id: str_at(cb, "id"),
                name: str_at(cb, "name"),
                start_input: cb.get("input").cloned().unwrap_or(json!({})),
                json: String::new(),
                held_bytes: ev.raw.len(),
                held: vec![ev],
            };
            if let Some(prev) = self.cur.replace(b) {
                self.close(prev, None, judge, out);
            }
            return Ok(());
        }
        if let Some(b) = &mut self.cur {
            if kind == "content_block_stop" && index == Some(b.index) {
                if let Some(b) = self.cur.take() {
                    self.close(b, Some(ev), judge, out);
                }
                return Ok(());
            }
            if kind == "content_block_delta"
                && index == Some(b.index)
                && let Some(p) = v.pointer("/delta/partial_json").and_then(Value::as_str)
            {
                b.json.push_str(p);
            }
            b.held_bytes += ev.raw.len();
            if b.held_bytes > MAX_HELD {
                return Err(StreamError::TooMuchHeld);
            }
            b.held.push(ev);
            return Ok(());
        }
        if kind == "message_delta" && judge.changed() {
            let mut v = v;
            if self.kept == 0
                && v.pointer("/delta/stop_reason").and_then(Value::as_str) == Some("tool_use")
            {
                v["delta"]["stop_reason"] = json!("end_turn");
            }
            v["bulwark"] = judge.metadata();
            emit_json(out, ev.name.as_deref().or(Some("message_delta")), &v);
            return Ok(());
        }
        let _ = self.blocked;
        out.extend_from_slice(&ev.raw);
        Ok(())
    }

    fn end(&mut self, judge: &mut Judge, out: &mut Vec<u8>) {
        if let Some(b) = self.cur.take() {
            self.close(b, None, judge, out);
        }
    }
}

// ---------------------------------------------------------------- OpenAI Responses

#[derive(Default)]
struct ResponsesStream {
    /// Call items still being written, by output index: the item as announced and the
    /// arguments so far.
    open: BTreeMap<u64, (Value, String)>,
    /// Events held back while any call is open, with the output index they belong to.
    held: Vec<(Event, Option<u64>)>,
    held_bytes: usize,
    /// Rulings by output index, for the held events.
    rulings: HashMap<u64, (Ruling, Option<Value>)>,
    /// Replacements by item id, for the final `response.completed`.
    replaced: HashMap<String, Value>,
}

fn is_call(item: &Value) -> bool {
    matches!(
        item.get("type").and_then(Value::as_str),
        Some("function_call" | "custom_tool_call" | "local_shell_call" | "shell_call")
    )
}

impl ResponsesStream {
    fn flush(&mut self, out: &mut Vec<u8>) {
        let held = std::mem::take(&mut self.held);
        self.held_bytes = 0;
        for (ev, idx) in held {
            let ruling = idx.and_then(|i| self.rulings.get(&i));
            let Some((ruling, replacement)) = ruling else {
                out.extend_from_slice(&ev.raw);
                continue;
            };
            let v: Value = serde_json::from_str(&ev.data).unwrap_or(Value::Null);
            let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
            let seq = v.get("sequence_number").cloned().unwrap_or(Value::Null);
            let oi = v.get("output_index").cloned().unwrap_or(Value::Null);
            match (ruling, kind) {
                (Ruling::Pass, _) => out.extend_from_slice(&ev.raw),
                (Ruling::Rewrite(_), "response.output_item.added") => {
                    out.extend_from_slice(&ev.raw)
                }
                (Ruling::Rewrite(_), "response.output_item.done") => {
                    if let Some(item) = replacement {
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
                }
                (Ruling::Block(_), "response.output_item.added") => {
                    if let Some(item) = replacement {
                        let id = item.get("id").cloned().unwrap_or(Value::Null);
                        let text = item
                            .pointer("/content/0/text")
                            .cloned()
                            .unwrap_or(json!(""));
                        let mut started = item.clone();
                        started["status"] = json!("in_progress");
                        started["content"] = json!([]);
                        for (name, body) in [
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
                        ] {
                            let mut e = body;
                            e["type"] = json!(name);
                            e["sequence_number"] = seq.clone();
                            e["output_index"] = oi.clone();
                            emit_json(out, Some(name), &e);
                        }
                    }
                }
                (Ruling::Block(_), "response.output_item.done") => {
                    if let Some(item) = replacement {
                        let mut v = v.clone();
                        v["item"] = item.clone();
                        emit_json(out, ev.name.as_deref(), &v);
                    }
                }
                // Argument deltas of a withheld or rewritten call are not sent.
                _ => {}
            }
        }
    }
}

impl Transform for ResponsesStream {
    fn event(
        &mut self,
        ev: Event,
        judge: &mut Judge,
        out: &mut Vec<u8>,
    ) -> Result<(), StreamError> {
        let Ok(mut v) = serde_json::from_str::<Value>(&ev.data) else {
            if self.open.is_empty() {
                out.extend_from_slice(&ev.raw);
            } else {
                self.held.push((ev, None));
            }
            return Ok(());
        };
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let oi = v.get("output_index").and_then(Value::as_u64);
        match kind.as_str() {
            "response.output_item.added" if is_call(&v["item"]) => {
                if let Some(i) = oi {
                    self.open.insert(i, (v["item"].clone(), String::new()));
                }
            }
            "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
                if let Some((_, args)) = oi.and_then(|i| self.open.get_mut(&i))
                    && let Some(d) = v.get("delta").and_then(Value::as_str)
                {
                    args.push_str(d);
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" if judge.changed() => {
                if let Some(items) = v
                    .pointer_mut("/response/output")
                    .and_then(Value::as_array_mut)
                {
                    for item in items.iter_mut() {
                        let id = str_at(item, "id");
                        if let Some(r) = self.replaced.get(&id) {
                            *item = r.clone();
                        }
                    }
                }
                v["response"]["bulwark"] = judge.metadata();
                if self.open.is_empty() {
                    emit_json(out, ev.name.as_deref(), &v);
                    return Ok(());
                }
                let rebuilt = Event::new(ev.name.as_deref(), &v.to_string());
                self.held.push((rebuilt, None));
                return Ok(());
            }
            _ => {}
        }
        let belongs = oi.filter(|i| self.open.contains_key(i));
        if self.open.is_empty() {
            out.extend_from_slice(&ev.raw);
            return Ok(());
        }
        self.held_bytes += ev.raw.len();
        if self.held_bytes > MAX_HELD {
            return Err(StreamError::TooMuchHeld);
        }
        self.held.push((ev, belongs));
        if kind == "response.output_item.done"
            && let Some(i) = belongs
            && let Some((_, _)) = self.open.remove(&i)
        {
            let item = v.get("item").cloned().unwrap_or(Value::Null);
            let replacement = judge_item(&item, judge);
            let ruling = match &replacement {
                None => Ruling::Pass,
                Some(r) if r.get("type") == Some(&json!("message")) => {
                    Ruling::Block(Box::new(placeholder()))
                }
                Some(r) => Ruling::Rewrite(r.clone()),
            };
            if let Some(r) = &replacement {
                self.replaced.insert(str_at(&item, "id"), r.clone());
            }
            self.rulings.insert(i, (ruling, replacement));
            if self.open.is_empty() {
                self.flush(out);
            }
        }
        Ok(())
    }

    fn end(&mut self, judge: &mut Judge, out: &mut Vec<u8>) {
        // Calls cut off before their item was done are withheld.
        let open = std::mem::take(&mut self.open);
        for (i, (item, args)) in open {
            let id = str_at(&item, "call_id");
            let name = str_at(&item, "name");
            let args = match item.get("type").and_then(Value::as_str) {
                Some("local_shell_call" | "shell_call") => shell_action(&item["action"]),
                _ => Value::String(args),
            };
            let _ = judge.judge(&id, &name, &args);
            let text = "[Bulwark] The stream ended before this tool call was complete, so it was not released.";
            let replacement = message_item(&format!("msg_bulwark_{id}"), text);
            self.rulings.insert(
                i,
                (Ruling::Block(Box::new(placeholder())), Some(replacement)),
            );
        }
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
    }
}
