//! A span per client request the gateway handles, for OpenTelemetry
//! ([`bulwark_audit::otlp`]): the MCP semantic-convention attributes, the decision as
//! `bulwark.*` attributes, in the trace the request names in `params._meta.traceparent`
//! (the HTTP front copies the `traceparent` header there when the message has none).
//!
//! The span covers the gateway's handling of the request — checks, decision, forwarding or
//! refusing — not the upstream's time: the gateway relays the answer later, on another
//! path, and a refused call has no upstream time at all. When the request named a trace,
//! the copy forwarded upstream names this span instead, so the server's own span is its
//! child. The MCP session id is recorded as a digest: on Streamable HTTP it is what a
//! client presents to be let into its session, so it is not written to a trace store.

use std::cell::RefCell;

use bulwark_audit::otlp::{Span, TraceContext};
use bulwark_engine::Decision;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::jsonrpc::Out;

thread_local! {
    /// The last decision made on this thread: the gateway decides synchronously inside the
    /// request it handles, so the span of that request reads it when the request returns.
    static LAST: RefCell<Option<Decision>> = const { RefCell::new(None) };
}

/// Notes a decision for the span of the request being handled on this thread.
pub fn decided(d: &Decision) {
    LAST.with(|l| *l.borrow_mut() = Some(d.clone()));
}

/// `params._meta.traceparent` of `msg`, if it reads as a W3C trace context.
pub fn parent_of(msg: &Value) -> Option<TraceContext> {
    msg.pointer("/params/_meta/traceparent")
        .and_then(Value::as_str)
        .and_then(TraceContext::parse)
}

/// Puts the `traceparent` HTTP header into `params._meta` when the message names no trace
/// itself (the message's own context is the more specific one).
pub fn adopt_header(msg: &mut Value, header: Option<&str>) {
    let Some(h) = header.filter(|h| TraceContext::parse(h).is_some()) else {
        return;
    };
    let Some(params) = msg.get_mut("params").and_then(Value::as_object_mut) else {
        return;
    };
    let meta = params.entry("_meta").or_insert_with(|| json!({}));
    if let Some(m) = meta.as_object_mut()
        && !m.contains_key("traceparent")
    {
        m.insert("traceparent".into(), json!(h));
    }
}

/// A digest of a session id, short enough for an attribute and not the id itself.
pub fn session_digest(session: &str) -> String {
    Sha256::digest(session.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The span of client request `msg` (`id`, `method`) in `session`, to server `server`.
pub fn start(msg: &Value, id: &Value, method: &str, session: &str, server: &str) -> Span {
    LAST.with(|l| l.borrow_mut().take());
    let tool = (method == "tools/call")
        .then(|| msg.pointer("/params/name").and_then(Value::as_str))
        .flatten();
    let name = match tool {
        Some(t) => format!("{method} {t}"),
        None => method.to_string(),
    };
    let mut span = Span::start(name, parent_of(msg).as_ref());
    let rid = match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    span.set("mcp.method.name", method)
        .set("jsonrpc.request.id", rid)
        .set("mcp.session.id", session_digest(session))
        .set("bulwark.server", server);
    if let Some(t) = tool {
        span.set("gen_ai.tool.name", t)
            .set("gen_ai.operation.name", "execute_tool");
    }
    if let Some(v) = msg
        .pointer("/params/protocolVersion")
        .and_then(Value::as_str)
    {
        span.set("mcp.protocol.version", v);
    }
    span
}

/// Ends `span` with what the gateway did: the decision (if one was made), an error answer
/// to the client, and the forwarded copy re-parented to this span.
pub fn finish(mut span: Span, id: &Value, outs: &mut [Out]) -> Span {
    if let Some(d) = LAST.with(|l| l.borrow_mut().take()) {
        span.set("bulwark.decision", d.decision.as_str())
            .set("bulwark.reason", d.reason.as_str());
        if let Some(c) = d.reason_code {
            span.set("bulwark.reason_code", c.as_str());
        }
        if let Some(r) = &d.rule_id {
            span.set("bulwark.rule_id", r.as_str());
        }
        if !d.is_allowed() {
            span.fail(&d.reason);
        }
    }
    for out in outs.iter_mut() {
        match out {
            Out::Client(v) if v.get("id") == Some(id) => {
                if let Some(code) = v.pointer("/error/code").and_then(Value::as_i64) {
                    span.set("rpc.response.status_code", code.to_string())
                        .set("error.type", code.to_string());
                    if span.error.is_none() {
                        let m = v.pointer("/error/message").and_then(Value::as_str);
                        span.fail(m.unwrap_or("error"));
                    }
                }
            }
            Out::Server(v) => {
                if let Some(tp) = v.pointer_mut("/params/_meta/traceparent")
                    && tp.as_str().and_then(TraceContext::parse).is_some()
                {
                    *tp = json!(span.context().header());
                }
            }
            Out::Client(_) => {}
        }
    }
    span.end();
    span
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_header_is_adopted_only_when_the_message_names_no_trace() {
        let mut m = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}});
        adopt_header(&mut m, Some(TP));
        assert_eq!(m["params"]["_meta"]["traceparent"], TP);
        let own = "00-11111111111111111111111111111111-2222222222222222-01";
        let mut m = json!({"params":{"_meta":{"traceparent": own}}});
        adopt_header(&mut m, Some(TP));
        assert_eq!(m["params"]["_meta"]["traceparent"], own);
        let mut m = json!({"params":{}});
        adopt_header(&mut m, Some("garbage"));
        assert!(m["params"].get("_meta").is_none());
    }

    #[test]
    fn the_forwarded_copy_names_the_gateways_span() {
        let msg = json!({"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"deploy","_meta":{"traceparent":TP}}});
        let span = start(&msg, &json!("a"), "tools/call", "sess", "srv");
        assert_eq!(span.name, "tools/call deploy");
        let mut outs = vec![Out::Server(msg.clone())];
        let span = finish(span, &json!("a"), &mut outs);
        let Out::Server(fwd) = &outs[0] else { panic!() };
        let tp =
            TraceContext::parse(fwd["params"]["_meta"]["traceparent"].as_str().unwrap()).unwrap();
        assert_eq!(tp.trace_id, span.trace_id);
        assert_eq!(tp.span_id, span.span_id);
        assert_eq!(span.parent, TraceContext::parse(TP).map(|t| t.span_id));
    }
}
