//! A span per model call the proxy judges, for OpenTelemetry ([`bulwark_audit::otlp`]):
//! `chat {model}` with the GenAI conventions' `gen_ai.operation.name` and
//! `gen_ai.request.model`, the tool calls judged in the answer and what was withheld as
//! `bulwark.*` attributes, in the trace the request's `traceparent` header names.
//!
//! The span lives in the request's [`crate::judge::Judge`] and is exported when the judge
//! is done — after the whole answer, or after the last event of a streamed one — so it
//! covers the model's time and the judging of everything it proposed.

use std::sync::Arc;

use bulwark_audit::otlp::{Exporter, Span, TraceContext};
use bulwark_gate::Gate;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::judge::Blocked;

/// A model call's span and where it goes.
pub struct Trace {
    tracer: Arc<Exporter>,
    span: Span,
}

impl Trace {
    /// The span of a call to `path` of API `api` with request `body`, when `gate` exports
    /// traces; a child of the `traceparent` header's span when there is one.
    pub fn start(
        gate: &Gate,
        api: &str,
        path: &str,
        traceparent: Option<&str>,
        body: &Value,
        session: Option<&str>,
    ) -> Option<Trace> {
        let tracer = Arc::clone(gate.tracer()?);
        let parent = traceparent.and_then(TraceContext::parse);
        let model = body.get("model").and_then(Value::as_str);
        let name = match model {
            Some(m) => format!("chat {m}"),
            None => "chat".to_string(),
        };
        let mut span = Span::start(name, parent.as_ref());
        span.set("gen_ai.operation.name", "chat")
            .set("bulwark.api", api)
            .set("http.request.method", "POST")
            .set("url.path", path);
        if let Some(m) = model {
            span.set("gen_ai.request.model", m);
        }
        if let Some(s) = session {
            // A digest: the session name is the caller's, and may say more than it should.
            let d: String = Sha256::digest(s.as_bytes())[..8]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            span.set("bulwark.session", d);
        }
        Some(Trace { tracer, span })
    }

    /// The upstream's status, when it did not answer with success.
    pub fn status(&mut self, code: u16) {
        self.span.set("http.response.status_code", i64::from(code));
        if code >= 400 {
            self.span.set("error.type", code.to_string());
            self.span.fail(&format!("the upstream answered {code}"));
        }
    }

    /// Ends and exports the span with the calls judged and those withheld.
    pub fn finish(mut self, judged: &[(String, String)], blocked: &[Blocked]) {
        let s = &mut self.span;
        s.set("bulwark.tool_calls", judged.len() as i64)
            .set("bulwark.tool_calls_withheld", blocked.len() as i64);
        if let [(_, tool)] = judged {
            s.set("gen_ai.tool.name", tool.as_str());
        }
        match blocked.first() {
            None => {
                s.set("bulwark.decision", "allow");
            }
            Some(b) => {
                let d = &b.decision;
                s.set("bulwark.decision", d.decision.as_str())
                    .set("bulwark.reason", d.reason.as_str());
                if let Some(c) = d.reason_code {
                    s.set("bulwark.reason_code", c.as_str());
                }
                if let Some(r) = &d.rule_id {
                    s.set("bulwark.rule_id", r.as_str());
                }
                s.error.get_or_insert_with(|| d.reason.clone());
            }
        }
        self.span.end();
        self.tracer.export(self.span);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::judge::{Context, Judge};
    use serde_json::json;
    use std::io::{BufRead, Read, Write};

    /// A loopback OTLP/HTTP receiver: the first export request's JSON body.
    fn receiver() -> (String, std::sync::mpsc::Receiver<Value>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (conn, _) = l.accept().unwrap();
            let mut r = std::io::BufReader::new(conn.try_clone().unwrap());
            let (mut len, mut line) = (0usize, String::new());
            while r.read_line(&mut line).unwrap() > 0 && !line.trim().is_empty() {
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                line.clear();
            }
            let mut body = vec![0; len];
            r.read_exact(&mut body).unwrap();
            let mut w = conn;
            w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
            tx.send(serde_json::from_slice(&body).unwrap()).unwrap();
        });
        (format!("http://{addr}/v1/traces"), rx)
    }

    #[test]
    fn a_judged_model_call_is_one_span_in_the_callers_trace_with_what_was_withheld() {
        let (endpoint, rx) = receiver();
        let tracer = Exporter::start(bulwark_audit::otlp::Settings {
            endpoint,
            service: "bulwark-proxy".into(),
            instance: "replica-b".into(),
            queue: 8,
        })
        .unwrap();
        let gate = Arc::new(
            Gate::new(bulwark_engine::Policy::builtin().unwrap(), "proxy")
                .with_tracer(Some(Arc::new(tracer))),
        );
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let mut judge = Judge::new(
            Arc::clone(&gate),
            Context {
                session: Some("s1".into()),
                ..Context::default()
            },
        );
        judge.traced(Trace::start(
            &gate,
            "chat",
            "/v1/chat/completions",
            Some(tp),
            &json!({"model": "gpt-test", "messages": []}),
            Some("s1"),
        ));
        judge.judge("call_1", "bash", &json!({"command": "rm -rf /"}));
        assert_eq!(judge.blocked().len(), 1);
        drop(judge);
        let body = rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        let span = &body["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        let attr = |k: &str| {
            span["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["key"] == k)
                .map(|a| a["value"].clone())
        };
        assert_eq!(span["name"], "chat gpt-test");
        assert_eq!(span["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(span["parentSpanId"], "00f067aa0ba902b7");
        assert_eq!(span["status"]["code"], 2);
        assert_eq!(
            attr("gen_ai.operation.name"),
            Some(json!({"stringValue": "chat"}))
        );
        assert_eq!(
            attr("gen_ai.request.model"),
            Some(json!({"stringValue": "gpt-test"}))
        );
        assert_eq!(
            attr("gen_ai.tool.name"),
            Some(json!({"stringValue": "bash"}))
        );
        assert_eq!(
            attr("bulwark.decision"),
            Some(json!({"stringValue": "block"}))
        );
        assert_eq!(
            attr("bulwark.tool_calls_withheld"),
            Some(json!({"intValue": "1"}))
        );
        assert!(attr("bulwark.reason").is_some());
        assert_ne!(
            attr("bulwark.session"),
            Some(json!({"stringValue": "s1"})),
            "the session is a digest"
        );
    }
}
