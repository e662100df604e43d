//! MCP 2026-07-28 (stateless) requests, served in front of any upstream by wrapping them
//! in an upstream session the front opens itself.
//!
//! A 2026-07-28 request carries its version, capabilities and client info in `_meta`; its
//! headers mirror the body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`). The front
//! checks them in the order the specification's reference implementations do — missing
//! `_meta` fields (-32602), headers that disagree with the body (-32020), an unsupported
//! version (-32022) — answers `server/discover` itself from the upstream's `initialize`
//! result, refuses methods the revision removed with 404 and -32601, and forwards the rest
//! with ids (and progress tokens) of its own, so clients that reuse ids never collide.
//! Answers get the `resultType` (and, for lists and reads, the `ttlMs` and `cacheScope`)
//! the revision requires. Closing a response stream cancels the request upstream.
//!
//! What a wrapped legacy upstream cannot do is not faked: it is never asked for sampling,
//! elicitation or roots (there is no client to ask), so it does not return
//! `InputRequiredResult`s, and its log lines are not sent (no per-request `logLevel`
//! reaches it).

use crate::locks::lock;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bulwark_engine::Principal;
use serde_json::{Value, json};

use super::revision::{
    HEADER_MISMATCH, INVALID_PARAMS, METHOD_NOT_FOUND, STATELESS_VERSION, UNSUPPORTED_VERSION,
    own_ids, params, strip_unserved, supported,
};
use super::session::{Session, Wire};
use super::streams::Mode;
use super::{HttpFront, Reject, Rewrite, SESSION_VERSIONS, header_str, reject};
use crate::jsonrpc::{self, Kind};
use crate::param_headers::header_value;

/// Methods the stateless revision removed: 404 and -32601, never forwarded.
const REMOVED: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Methods forwarded to the upstream, with the capability each needs.
const FORWARDED: &[(&str, &str)] = &[
    ("tools/list", "tools"),
    ("tools/call", "tools"),
    ("resources/list", "resources"),
    ("resources/templates/list", "resources"),
    ("resources/read", "resources"),
    ("prompts/list", "prompts"),
    ("prompts/get", "prompts"),
    ("completion/complete", "completions"),
];

/// Results the revision makes cacheable: they must say for how long, and for whom.
const CACHEABLE: &[&str] = &[
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
];

/// How long the front waits for the upstream to answer its own `initialize`.
pub(super) const INITIALIZE_WAIT: Duration = Duration::from_secs(30);

/// Checks a stateless request against its headers. Returns the request's method.
fn validate(h: &HeaderMap, id: &Value, message: &Value, method: &str) -> Result<(), Reject> {
    let bad = |code: i64, msg: String| reject(StatusCode::BAD_REQUEST, id, code, &msg);
    let meta = jsonrpc::at(message, "/params/_meta").and_then(Value::as_object);
    let version = meta
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .and_then(Value::as_str);
    let caps = meta.and_then(|m| m.get("io.modelcontextprotocol/clientCapabilities"));
    let (Some(version), Some(Value::Object(_))) = (version, caps) else {
        let asked = header_str(h, "mcp-protocol-version").unwrap_or("");
        return Err(bad(
            INVALID_PARAMS,
            format!(
                "MCP-Protocol-Version {asked:?} is not a session-era version ({}), so this is taken as a \
                 stateless request, and its params._meta must carry io.modelcontextprotocol/protocolVersion \
                 and io.modelcontextprotocol/clientCapabilities",
                SESSION_VERSIONS.join(", ")
            ),
        ));
    };
    let mirror = |name: &str, body: &str| -> Result<(), Reject> {
        if h.get_all(name).iter().count() > 1 {
            return Err(bad(
                HEADER_MISMATCH,
                format!("header {name} is given more than once"),
            ));
        }
        match header_value(h, name) {
            Some(Ok(v)) if v == body => Ok(()),
            Some(Ok(v)) => Err(bad(
                HEADER_MISMATCH,
                format!("header {name} is {v:?} but the body says {body:?}"),
            )),
            Some(Err(())) => Err(bad(
                HEADER_MISMATCH,
                format!("header {name} is not readable"),
            )),
            None => Err(bad(HEADER_MISMATCH, format!("header {name} is required"))),
        }
    };
    mirror("mcp-protocol-version", version)?;
    mirror("mcp-method", method)?;
    if matches!(method, "tools/call" | "prompts/get" | "resources/read") {
        let key = if method == "resources/read" {
            "/params/uri"
        } else {
            "/params/name"
        };
        let name = jsonrpc::at(message, key)
            .and_then(Value::as_str)
            .unwrap_or("");
        mirror("mcp-name", name)?;
    }
    if version != STATELESS_VERSION {
        return Err(reject(
            StatusCode::BAD_REQUEST,
            id,
            UNSUPPORTED_VERSION,
            "Unsupported protocol version",
        )
        .with_data(json!({"supported": supported(), "requested": version})));
    }
    Ok(())
}

impl HttpFront {
    /// The upstream session stateless requests go through, opened (and initialized by the
    /// front) on first use and again after it ends. Returns it with its `initialize` result.
    async fn stateless_upstream(
        self: &Arc<Self>,
        principal: &Principal,
    ) -> Result<(Arc<Session>, Value), Reject> {
        let key = format!(
            "{}|{}",
            principal.verified,
            principal.id.as_deref().unwrap_or("")
        );
        // One slot per caller, locked while its upstream is initialized: callers wait only
        // for their own.
        let slot = {
            let mut slots = lock(&self.stateless);
            if slots.len() >= self.config.max_sessions * 2 {
                slots.retain(|_, slot| {
                    slot.try_lock()
                        .map_or(true, |s| s.as_ref().is_some_and(|(s, _)| !s.ended()))
                });
            }
            Arc::clone(slots.entry(key).or_default())
        };
        let mut slot = slot.lock().await;
        if let Some((s, init)) = slot.as_ref()
            && !s.ended()
        {
            s.touch(self.now_ms());
            return Ok((Arc::clone(s), init.clone()));
        }
        let session = self.open_session(None, Wire::Stateless, "2025-11-25", principal)?;
        // A caller that goes away while this runs does not leave the upstream behind.
        let guard = StopUnlessKept(Some(Arc::clone(&session)));
        let id = json!("bulwark-initialize");
        let init = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bulwark", "version": env!("CARGO_PKG_VERSION")}}});
        let unavailable = |why: &str| {
            reject(
                StatusCode::BAD_GATEWAY,
                &Value::Null,
                jsonrpc::INTERNAL_ERROR,
                &format!("the upstream server could not be initialized: {why}"),
            )
        };
        session.initializing(&id);
        let opened = session.streams().open(&id, &init, Mode::Json);
        let (stream, reader) = opened.map_err(|e| unavailable(&e.to_string()))?;
        if !session.send(init, self.config.send_wait).await {
            session.stop();
            return Err(unavailable("it does not take messages"));
        }
        let answer =
            tokio::time::timeout(INITIALIZE_WAIT, next_answer(&session, stream, reader)).await;
        let result = match answer {
            Ok(Some(v)) if v.get("result").is_some() => v["result"].clone(),
            Ok(Some(v)) => {
                session.stop();
                return Err(unavailable(&v["error"].to_string()));
            }
            Ok(None) => return Err(unavailable("it ended")),
            Err(_) => {
                session.stop();
                return Err(unavailable("it did not answer in time"));
            }
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        if !session.send(initialized, self.config.send_wait).await {
            return Err(unavailable("it does not take messages"));
        }
        guard.keep();
        *slot = Some((Arc::clone(&session), result.clone()));
        Ok((session, result))
    }
}

/// The upstream session of one caller's stateless requests, once initialized.
pub(super) type Slot = Arc<tokio::sync::Mutex<Option<(Arc<Session>, Value)>>>;

/// Stops a session when dropped, unless kept.
pub(super) struct StopUnlessKept(pub(super) Option<Arc<Session>>);

impl StopUnlessKept {
    pub(super) fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for StopUnlessKept {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            s.stop();
        }
    }
}

pub(super) async fn next_answer(session: &Arc<Session>, stream: u64, reader: u64) -> Option<Value> {
    let events = session.next_events(stream, reader, 0).await?;
    events
        .last()
        .and_then(|(_, t)| serde_json::from_str(t).ok())
}

/// Serves one stateless request (or notification).
///
/// `conn` is the client connection the request came on: an anonymous caller's state in the
/// gateway core (loop guard, rates, sequences) is that connection's, while its taint is
/// shared with every anonymous caller (docs/mcp.md, "Stateless callers").
pub(super) async fn post(
    front: &Arc<HttpFront>,
    headers: &HeaderMap,
    principal: &Principal,
    message: Value,
    sse_ok: bool,
    conn: super::ConnId,
) -> Response {
    let caller = principal.id.is_none().then(|| format!("conn-{}", conn.0));
    let (id, method) = match jsonrpc::classify(&message) {
        Ok(Kind::Request { id, method }) => (id, method),
        // No client notification means anything to a stateless server; accepted, dropped.
        Ok(Kind::Notification { .. }) => return StatusCode::ACCEPTED.into_response(),
        Ok(Kind::Response { .. }) => {
            return reject(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                jsonrpc::INVALID_REQUEST,
                "a 2026-07-28 client sends no responses (nothing asks it anything)",
            )
            .into_response();
        }
        Err(e) => {
            return reject(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                e.code(),
                &e.to_string(),
            )
            .into_response();
        }
    };
    if let Err(r) = validate(headers, &id, &message, &method) {
        return r.into_response();
    }
    let not_found =
        |what: String| reject(StatusCode::NOT_FOUND, &id, METHOD_NOT_FOUND, &what).into_response();
    if REMOVED.contains(&method.as_str()) {
        return not_found(format!("{method} does not exist in {STATELESS_VERSION}"));
    }
    let forwarded_method =
        method == "server/discover" || FORWARDED.iter().any(|(m, _)| *m == method);
    if !forwarded_method {
        return not_found(format!("method not found: {method}"));
    }
    if let Some(remote) = front.native_upstream().await {
        return super::native::post(
            front,
            remote,
            headers,
            principal,
            &message,
            (id, method, caller.as_deref()),
            sse_ok,
        )
        .await;
    }
    let (session, init) = match front.stateless_upstream(principal).await {
        Ok(x) => x,
        Err(r) => return r.with_id(&id).into_response(),
    };
    let caps = init.get("capabilities").cloned().unwrap_or(json!({}));
    if method == "server/discover" {
        return super::json_response(StatusCode::OK, &jsonrpc::result(&id, discover(&init)));
    }
    let Some((_, cap)) = FORWARDED.iter().find(|(m, _)| *m == method) else {
        return not_found(format!("method not found: {method}"));
    };
    if caps.get(cap).is_none() {
        return not_found(format!("{method}: the server does not offer {cap}"));
    }
    let params = if method == "tools/call" {
        let name = jsonrpc::at(&message, "/params/name").and_then(Value::as_str);
        let bound = name.map(|n| session.bindings(n)).unwrap_or_default();
        match params(headers, &id, &message, bound) {
            Ok(p) => Some(p),
            Err(r) => return r.into_response(),
        }
    } else {
        None
    };
    let n = front.upstream_ids.fetch_add(1, Ordering::Relaxed);
    let upstream_id = json!(format!("bulwark-{n}"));
    let (forwarded, token) = own_ids(&message, &upstream_id, caller.as_deref());
    if let (Some(extra), Some(params)) = (session.extra(), params) {
        extra.put(&upstream_id, params);
    }
    let mode = if sse_ok { Mode::Events } else { Mode::Json };
    if method == "tools/list" {
        session.listing(&upstream_id);
    }
    let opened = session.streams().open(&upstream_id, &forwarded, mode);
    let (stream, reader) = match opened {
        Ok(x) => x,
        Err(e) => {
            return reject(
                StatusCode::TOO_MANY_REQUESTS,
                &id,
                jsonrpc::INTERNAL_ERROR,
                &e.to_string(),
            )
            .into_response();
        }
    };
    if !session.send(forwarded, front.config.send_wait).await {
        session.streams().abandon(stream);
        return reject(
            StatusCode::SERVICE_UNAVAILABLE,
            &id,
            jsonrpc::INTERNAL_ERROR,
            "the upstream is not taking messages",
        )
        .into_response();
    }
    let rewrite = Arc::new(Rewrite {
        client_id: id,
        token,
        method,
        upstream_id,
    });
    match mode {
        Mode::Events => super::sse_response(super::sse_body(
            session,
            stream,
            reader,
            super::SseOpts {
                keepalive: front.config.keepalive,
                rewrite: Some(rewrite),
                ..super::SseOpts::default()
            },
        )),
        Mode::Json => super::json_answer(&session, stream, reader, Some(rewrite)).await,
    }
}

/// The `server/discover` result, from the upstream's `initialize` result. Only what the
/// wrapped session can deliver is offered: no change notifications or resource
/// subscriptions (they would need `subscriptions/listen`), no log lines.
fn discover(init: &Value) -> Value {
    let mut caps = init.get("capabilities").cloned().unwrap_or(json!({}));
    strip_unserved(&mut caps);
    let mut r = json!({
        "supportedVersions": supported(),
        "capabilities": caps,
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "private",
    });
    if let Some(i) = init.get("instructions") {
        r["instructions"] = i.clone();
    }
    if let Some(info) = init.get("serverInfo") {
        r["_meta"] = json!({"io.modelcontextprotocol/serverInfo": info});
    }
    r
}

impl Rewrite {
    /// A message from the upstream as the stateless client must see it: its own id and
    /// progress token back, and the result fields the revision requires.
    pub(super) fn apply(&self, text: &str) -> Option<String> {
        let mut v: Value = serde_json::from_str(text).ok()?;
        if v.get("method").and_then(Value::as_str) == Some("notifications/progress") {
            // Only this request's own progress: the token is the upstream id it was given.
            let t = self.token.as_ref()?;
            if jsonrpc::at(&v, "/params/progressToken") != Some(&self.upstream_id) {
                return None;
            }
            v["params"]["progressToken"] = t.clone();
            return Some(v.to_string());
        }
        if v.get("id") != Some(&self.upstream_id) {
            return None;
        }
        v["id"] = self.client_id.clone();
        if let Some(r) = v.get_mut("result").and_then(Value::as_object_mut) {
            r.entry("resultType").or_insert(json!("complete"));
            if CACHEABLE.contains(&self.method.as_str()) {
                r.entry("ttlMs").or_insert(json!(0));
                r.entry("cacheScope").or_insert(json!("private"));
            }
        }
        Some(v.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(list: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in list {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn call(version: &str, name: &str) -> Value {
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":name,"arguments":{},
            "_meta":{"io.modelcontextprotocol/protocolVersion":version,
                     "io.modelcontextprotocol/clientCapabilities":{}}}})
    }

    fn code(r: Result<(), Reject>) -> Option<i64> {
        r.err().map(|r| r.code)
    }

    #[test]
    fn checks_run_in_order() {
        let ok = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "  echo "),
        ]);
        let m = call("2026-07-28", "echo");
        assert_eq!(code(validate(&ok, &json!(1), &m, "tools/call")), None);
        let no_meta =
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}});
        assert_eq!(
            code(validate(&ok, &json!(1), &no_meta, "tools/call")),
            Some(INVALID_PARAMS)
        );
        // Another name, no name, the method in another case: each a mismatch.
        for (method, name) in [
            ("tools/call", Some("other")),
            ("tools/call", None),
            ("TOOLS/CALL", Some("echo")),
        ] {
            let mut list = vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", method),
            ];
            list.extend(name.map(|n| ("mcp-name", n)));
            assert_eq!(
                code(validate(&headers(&list), &json!(1), &m, "tools/call")),
                Some(HEADER_MISMATCH),
                "{list:?}"
            );
        }
        // Header and body agree on a version nobody serves.
        let v999 = headers(&[
            ("mcp-protocol-version", "v999.0.0"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
        ]);
        let r = validate(&v999, &json!(1), &call("v999.0.0", "echo"), "tools/call").unwrap_err();
        assert_eq!(r.code, UNSUPPORTED_VERSION);
        assert_eq!(r.data.unwrap()["requested"], "v999.0.0");
        // The header says 2026-07-28, the body something else: a mismatch, not a version.
        assert_eq!(
            code(validate(
                &ok,
                &json!(1),
                &call("v999.0.0", "echo"),
                "tools/call"
            )),
            Some(HEADER_MISMATCH)
        );
    }

    #[test]
    fn base64_names() {
        let h = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?w6ljaG8=?="),
        ]);
        assert_eq!(
            code(validate(
                &h,
                &json!(1),
                &call("2026-07-28", "écho"),
                "tools/call"
            )),
            None
        );
    }

    #[test]
    fn answers_get_their_ids_back_and_the_fields_the_revision_requires() {
        let rw = Rewrite {
            client_id: json!(7),
            token: Some(json!("p")),
            method: "tools/list".into(),
            upstream_id: json!("bulwark-3"),
        };
        let v: Value = serde_json::from_str(
            &rw.apply(r#"{"jsonrpc":"2.0","id":"bulwark-3","result":{"tools":[]}}"#)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["result"]["resultType"], "complete");
        assert_eq!(v["result"]["ttlMs"], 0);
        let p: Value = serde_json::from_str(
            &rw.apply(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"bulwark-3","progress":1}}"#)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(p["params"]["progressToken"], "p");
        assert_eq!(
            rw.apply(r#"{"jsonrpc":"2.0","id":"bulwark-4","result":{}}"#),
            None
        );
    }
}
