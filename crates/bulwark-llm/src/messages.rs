//! Anthropic Messages (`…/messages`): its history, its safety hint, and its tool calls
//! judged in whole answers and in streams.
//!
//! A call is a `tool_use` content block, its result a `tool_result` block naming
//! `tool_use_id`. Anthropic's own tools (web search and fetch, code execution) and remote
//! MCP tools run at the provider: their results arrive in the answer and are read for
//! taint. Streamed, a call is a `tool_use` block whose input arrives as JSON deltas and is
//! complete at its `content_block_stop`.

use serde_json::{Value, json};

use crate::history::{Collector, Exchange, HistoryError, content, items, text};
use crate::judge::{Judge, Ruling, explain};
use crate::sse::Event;
use crate::stream::{Held, StreamError, Transform, data_json, emit_json, kind_of};

/// The tool results in a Messages request, each paired with its call.
pub fn results(body: &Value) -> Result<Vec<Exchange>, HistoryError> {
    let mut h = Collector::default();
    for m in items(body, "messages")? {
        let Some(blocks) = m.get("content").and_then(Value::as_array) else {
            continue;
        };
        for b in blocks {
            let kind = b.get("type").and_then(Value::as_str).unwrap_or("");
            match kind {
                "tool_use" | "server_tool_use" | "mcp_tool_use" => {
                    let args = b.get("input").cloned().unwrap_or(Value::Null);
                    h.calls.insert(text(b, "id"), (text(b, "name"), args));
                }
                "tool_result" | "mcp_tool_result" => {
                    let id = text(b, "tool_use_id");
                    let e = h.exchange(id, content(b.get("content")));
                    h.push(e)?;
                }
                // Results of Anthropic's own tools: `web_search_tool_result`,
                // `web_fetch_tool_result`, `code_execution_tool_result`, …
                k if k.ends_with("_tool_result") => {
                    let id = text(b, "tool_use_id");
                    let mut e = h.exchange(id, content(b.get("content")));
                    e.web = k.starts_with("web_");
                    h.push(e)?;
                }
                _ => {}
            }
        }
    }
    Ok(h.out)
}

/// Adds the safety hint to the `system` prompt, after what is there.
pub fn inject_hint(obj: &mut serde_json::Map<String, Value>, hint: &str) {
    let system = match obj.remove("system") {
        None | Some(Value::Null) => Value::String(hint.to_string()),
        Some(Value::String(s)) if s.is_empty() => Value::String(hint.to_string()),
        Some(Value::String(s)) => Value::String(format!("{s}\n\n{hint}")),
        Some(Value::Array(mut blocks)) => {
            blocks.push(json!({"type": "text", "text": hint}));
            Value::Array(blocks)
        }
        // Not a shape the API accepts; leave it for the API to refuse.
        Some(other) => other,
    };
    obj.insert("system".into(), system);
}

/// An error body Anthropic's SDKs parse: `{"type":"error","error":{…}}`.
pub fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// The event that ends a stream that could not be finished safely.
pub fn error_event(message: &str) -> Event {
    Event::new(Some("error"), &error_body(502, message).to_string())
}

/// Judges every proposed call in a whole answer, rewriting what a ruling changes.
pub fn judge_answer(body: &mut Value, judge: &mut Judge) {
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
        let id = text(block, "id");
        let name = text(block, "name");
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

/// Reads a content block a provider-run tool put into an Anthropic answer: what its web
/// tools read is untrusted input; a remote MCP tool's result is a tool result.
fn provider_block(block: &Value, judge: &mut Judge) {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    if kind.starts_with("web_") && kind.ends_with("_tool_result") {
        judge.saw_untrusted();
    } else if kind == "mcp_tool_result" {
        let r = Exchange {
            id: text(block, "tool_use_id"),
            tool: None,
            args: Value::Null,
            content: block.get("content").cloned().unwrap_or(Value::Null),
            web: false,
        };
        judge.absorb(&[r]);
    }
}

// ---------------------------------------------------------------- streams

#[derive(Default)]
/// A Messages stream being judged.
pub struct Stream {
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
    held: Held<()>,
}

impl Stream {
    fn close(&mut self, b: Block, stop: Option<Event>, judge: &mut Judge, out: &mut Vec<u8>) {
        let args = if b.json.trim().is_empty() {
            b.start_input.clone()
        } else {
            serde_json::from_str(&b.json).unwrap_or(Value::String(b.json.clone()))
        };
        let ruling = if stop.is_none() {
            // Cut off before the block closed: never released half-written.
            judge.cut_off(&b.id, &b.name)
        } else {
            judge.judge(&b.id, &b.name, &args)
        };
        match ruling {
            Ruling::Pass => {
                self.kept += 1;
                for (e, ()) in b.held.events {
                    out.extend_from_slice(&e.raw);
                }
                if let Some(s) = stop {
                    out.extend_from_slice(&s.raw);
                }
            }
            Ruling::Rewrite(a) => {
                self.kept += 1;
                if let Some((first, ())) = b.held.events.first() {
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

impl Transform for Stream {
    fn event(
        &mut self,
        mut ev: Event,
        judge: &mut Judge,
        out: &mut Vec<u8>,
    ) -> Result<(), StreamError> {
        let Some(v) = data_json(&mut ev)? else {
            match &mut self.cur {
                Some(b) => b.held.push(ev, ())?,
                None => out.extend_from_slice(&ev.raw),
            }
            return Ok(());
        };
        let kind = kind_of(&ev, &v)?;
        let kind = kind.as_str();
        let index = v.get("index").and_then(Value::as_u64);
        // Argument text is sent only as part of the tool_use block being written and
        // judged; anywhere else it belongs to no call anybody judged.
        let args_delta = v.pointer("/delta/type").and_then(Value::as_str)
            == Some("input_json_delta")
            || v.pointer("/delta/partial_json").is_some();
        // A block that does not say what it is could be read as a call.
        if kind == "content_block_start" && !v["content_block"].is_object() {
            return Err(StreamError::Mismatch);
        }
        let in_open_block = kind == "content_block_delta"
            && self.cur.as_ref().is_some_and(|b| index == Some(b.index));
        if args_delta && !in_open_block {
            return Ok(());
        }
        // The message is ending while a call is still open: it was cut off, and is
        // withheld before the end of the message goes out.
        if matches!(kind, "message_delta" | "message_stop")
            && let Some(b) = self.cur.take()
        {
            self.close(b, None, judge, out);
        }
        // Anthropic's own web tools ran inside this answer: what they read is untrusted
        // for every call after it.
        if kind == "content_block_start" {
            provider_block(&v["content_block"], judge);
        }
        if kind == "content_block_start"
            && v.pointer("/content_block/type").and_then(Value::as_str) == Some("tool_use")
        {
            let cb = &v["content_block"];
            let mut held = Held::default();
            held.push(ev, ())?;
            let b = Block {
                index: index.unwrap_or(0),
                id: text(cb, "id"),
                name: text(cb, "name"),
                start_input: cb.get("input").cloned().unwrap_or(json!({})),
                json: String::new(),
                held,
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
            if let Some(p) = v.pointer("/delta/partial_json").and_then(Value::as_str) {
                b.json.push_str(p);
            }
            b.held.push(ev, ())?;
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
        let r = results(&body).unwrap();
        assert_eq!(r.len(), 2);
        assert!(r[0].web);
        assert_eq!(r[1].args, json!({"path": "/etc/shadow"}));
    }

    #[test]
    fn the_hint_joins_the_system_prompt() {
        let mut msg = json!({"system": [{"type": "text", "text": "S"}]});
        inject_hint(msg.as_object_mut().unwrap(), "H");
        assert_eq!(msg["system"][1]["text"], "H");
        let mut msg = json!({"messages": []});
        inject_hint(msg.as_object_mut().unwrap(), "H");
        assert_eq!(msg["system"], "H");
    }
}
