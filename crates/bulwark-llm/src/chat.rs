//! OpenAI Chat Completions (`…/chat/completions`): its history, its safety hint, and its
//! tool calls judged in whole answers and in streams.
//!
//! A call is `tool_calls[]` on an assistant message (or the pre-tools `function_call`), its
//! result a `tool` message naming `tool_call_id` (or a `function` message naming the
//! function). Streamed, a call arrives as `tool_calls` deltas by index and is complete at
//! its choice's `finish_reason`; the choice's text streams through as it comes.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::history::{Collector, Exchange, HistoryError, arguments, content, items, text};
use crate::judge::{Judge, Ruling, explain};
use crate::sse::Event;
use crate::stream::{Held, StreamError, Transform, data_json, emit_json};

/// The tool results in a Chat Completions request, each paired with its call.
pub fn results(body: &Value) -> Result<Vec<Exchange>, HistoryError> {
    let mut h = Collector::default();
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
                    h.calls.insert(
                        text(tc, "id"),
                        (text(f, "name"), arguments(f.get("arguments"))),
                    );
                }
                // The pre-tools form: one `function_call` per assistant message,
                // answered by a `function` message that names it.
                if let Some(f) = m.get("function_call") {
                    h.calls.insert(
                        format!("function:{}", text(f, "name")),
                        (text(f, "name"), arguments(f.get("arguments"))),
                    );
                }
            }
            Some("tool") => {
                let id = text(m, "tool_call_id");
                let e = h.exchange(id, content(m.get("content")));
                h.push(e)?;
            }
            Some("function") => {
                let id = format!("function:{}", text(m, "name"));
                let e = h.exchange(id, content(m.get("content")));
                h.push(e)?;
            }
            _ => {}
        }
    }
    Ok(h.out)
}

/// Adds the safety hint as a system message after the leading system and developer ones.
pub fn inject_hint(obj: &mut serde_json::Map<String, Value>, hint: &str) {
    if let Some(Value::Array(messages)) = obj.get_mut("messages") {
        let at = messages
            .iter()
            .take_while(|m| {
                matches!(
                    m.get("role").and_then(Value::as_str),
                    Some("system" | "developer")
                )
            })
            .count();
        messages.insert(at, json!({"role": "system", "content": hint}));
    }
}

/// An error body OpenAI's SDKs parse: `{"error":{…}}` (the Responses API's too).
pub fn error_body(status: u16, message: &str) -> Value {
    json!({
        "error": {
            "message": message,
            "type": match status {
                400 | 413 => "invalid_request_error",
                _ => "server_error",
            },
            "param": null,
            "code": null,
        },
    })
}

/// The event that ends a stream that could not be finished safely.
pub fn error_event(message: &str) -> Event {
    Event::new(None, &error_body(502, message).to_string())
}

/// Judges every proposed call in a whole answer (every choice), rewriting what a ruling
/// changes.
pub fn judge_answer(body: &mut Value, judge: &mut Judge) {
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
                let id = text(&tc, "id");
                let f = tc.get("function").cloned().unwrap_or(Value::Null);
                let name = text(&f, "name");
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
            let name = text(&f, "name");
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

// ---------------------------------------------------------------- streams

#[derive(Default)]
struct Acc {
    id: String,
    name: String,
    args: String,
}

/// The index a Chat stream's pre-tools `function_call` is kept under.
const FUNCTION_CALL: u64 = u64::MAX;

/// The explanations of choice `c`'s withheld calls, in the order the model wrote them.
fn explanations(rulings: &BTreeMap<(u64, u64), Ruling>, c: u64) -> Vec<String> {
    let mut blocked: Vec<(u64, String)> = rulings
        .iter()
        .filter(|(k, _)| k.0 == c)
        .filter_map(|(k, r)| match r {
            Ruling::Block(b) => Some((k.1, explain(b))),
            _ => None,
        })
        .collect();
    blocked.sort();
    blocked.into_iter().map(|(_, t)| t).collect()
}

/// Adds one delta's piece of a call to its accumulator.
fn accumulate(acc: &mut Acc, call: &Value, function: &Value) {
    if let Some(id) = call.get("id").and_then(Value::as_str) {
        acc.id = id.to_string();
    }
    if let Some(n) = function.get("name").and_then(Value::as_str) {
        acc.name.push_str(n);
    }
    match function.get("arguments") {
        Some(Value::String(a)) => acc.args.push_str(a),
        // Not the API's shape, but what the client would receive: judged as sent.
        Some(other) if !other.is_null() => acc.args.push_str(&other.to_string()),
        _ => {}
    }
}

#[derive(Default)]
/// A Chat Completions stream being judged.
pub struct Stream {
    /// Events held back, raw and parsed (`None`: not JSON).
    held: Held<Option<Value>>,
    /// Calls by (choice, index).
    calls: BTreeMap<(u64, u64), Acc>,
    /// Choices with calls still open.
    open: BTreeSet<u64>,
    rulings: BTreeMap<(u64, u64), Ruling>,
    /// Choices that have streamed text (an explanation then starts on a new paragraph).
    texted: BTreeSet<u64>,
}

impl Stream {
    /// Rules on a choice's calls; `complete` is false when the answer broke off before
    /// the choice's finish_reason, and then none of them is released.
    fn judge_choice(&mut self, choice: u64, judge: &mut Judge, complete: bool) {
        let keys: Vec<(u64, u64)> = self
            .calls
            .range((choice, 0)..=(choice, u64::MAX))
            .map(|(k, _)| *k)
            .collect();
        for k in keys {
            if let Some(acc) = self.calls.remove(&k) {
                let id = if k.1 == FUNCTION_CALL {
                    format!("function:{}", acc.name)
                } else {
                    acc.id
                };
                let r = if complete {
                    judge.judge(&id, &acc.name, &arguments(Some(&Value::String(acc.args))))
                } else {
                    judge.cut_off(&id, &acc.name)
                };
                self.rulings.insert(k, r);
            }
        }
        self.open.remove(&choice);
    }

    fn flush(&mut self, judge: &mut Judge, out: &mut Vec<u8>) {
        let held = self.held.take();
        let rulings = std::mem::take(&mut self.rulings);
        if rulings.values().all(|r| *r == Ruling::Pass) {
            for (ev, _) in held {
                out.extend_from_slice(&ev.raw);
            }
            return;
        }
        // New indexes for the calls kept, per choice, in order.
        let mut index: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        let mut kept: BTreeMap<u64, u64> = BTreeMap::new();
        for (k, r) in &rulings {
            if !matches!(r, Ruling::Block(_)) {
                let n = kept.entry(k.0).or_default();
                index.insert(*k, *n);
                *n += 1;
            }
        }
        let mut meta_sent = false;
        let mut rewritten: BTreeSet<(u64, u64)> = BTreeSet::new();
        let mut finished: BTreeSet<u64> = BTreeSet::new();
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
                            let i = tc
                                .get("index")
                                .and_then(Value::as_u64)
                                .unwrap_or(0)
                                .min(FUNCTION_CALL - 1);
                            match rulings.get(&(c, i)) {
                                // A delta with no ruling was never judged: not sent.
                                None | Some(Ruling::Block(_)) => continue,
                                Some(Ruling::Rewrite(a)) => {
                                    // The call's first delta gets the whole new arguments;
                                    // later ones are dropped (some upstreams repeat the id
                                    // in every delta, so the id cannot tell which is first).
                                    if !rewritten.insert((c, i)) {
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
                    if let Some(f) = ch.pointer("/delta/function_call").cloned() {
                        let delta = &mut ch["delta"];
                        match rulings.get(&(c, FUNCTION_CALL)) {
                            Some(Ruling::Block(_)) => {
                                if let Some(d) = delta.as_object_mut() {
                                    d.remove("function_call");
                                }
                            }
                            Some(Ruling::Rewrite(a)) => {
                                if rewritten.insert((c, FUNCTION_CALL)) {
                                    let mut f = f;
                                    f["arguments"] = Value::String(a.to_string());
                                    delta["function_call"] = f;
                                } else if let Some(d) = delta.as_object_mut() {
                                    d.remove("function_call");
                                }
                            }
                            _ => {}
                        }
                    }
                    let finishing = ch.get("finish_reason").is_some_and(|f| !f.is_null());
                    if !finishing {
                        continue;
                    }
                    finished.insert(c);
                    let texts = explanations(&rulings, c);
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
        // Choices whose calls were cut off before a finish_reason: the explanation and a
        // finish still reach the client.
        let unfinished: BTreeSet<u64> = rulings
            .keys()
            .map(|k| k.0)
            .filter(|c| !finished.contains(c))
            .collect();
        for c in unfinished {
            let texts = explanations(&rulings, c);
            let mut note = json!({"object": "chat.completion.chunk", "choices": [{
                "index": c,
                "delta": {"content": texts.join("\n\n")},
                "finish_reason": "stop",
            }]});
            if !meta_sent {
                note["bulwark"] = judge.metadata();
                meta_sent = true;
            }
            emit_json(out, None, &note);
        }
    }
}

impl Transform for Stream {
    fn event(
        &mut self,
        mut ev: Event,
        judge: &mut Judge,
        out: &mut Vec<u8>,
    ) -> Result<(), StreamError> {
        let parsed: Option<Value> = data_json(&mut ev)?;
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
                    let acc = self.calls.entry((c, i.min(FUNCTION_CALL - 1))).or_default();
                    accumulate(acc, tc, tc.get("function").unwrap_or(&Value::Null));
                    self.open.insert(c);
                }
                if let Some(f) = ch.pointer("/delta/function_call") {
                    let acc = self.calls.entry((c, FUNCTION_CALL)).or_default();
                    accumulate(acc, &Value::Null, f);
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
        self.held.push(ev, parsed)?;
        for c in finished {
            self.judge_choice(c, judge, true);
        }
        if self.open.is_empty() {
            self.flush(judge, out);
        }
        Ok(())
    }

    fn end(&mut self, judge: &mut Judge, out: &mut Vec<u8>) {
        let open: Vec<u64> = self.open.iter().copied().collect();
        for c in open {
            self.judge_choice(c, judge, false);
        }
        if !self.held.is_empty() {
            self.flush(judge, out);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
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
        let r = results(&body).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].tool.as_deref(), Some("Bash"));
        assert_eq!(r[0].args, json!({"command": "cat ~/.ssh/id_rsa"}));
        assert_eq!(r[0].content, json!("KEY"));
        assert_eq!(r[1].tool, None);
    }

    #[test]
    fn the_hint_follows_the_leading_system_messages() {
        let mut chat = json!({"messages": [{"role": "system", "content": "be nice"}, {"role": "user", "content": "hi"}]});
        inject_hint(chat.as_object_mut().unwrap(), "H");
        assert_eq!(
            chat["messages"][1],
            json!({"role": "system", "content": "H"})
        );
        assert_eq!(chat["messages"][0]["content"], "be nice");
    }
}
