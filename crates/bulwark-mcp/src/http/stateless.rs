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

use super::session::{Session, Wire};
use super::streams::Mode;
use super::{HttpFront, Reject, Rewrite, SESSION_VERSIONS, header_str, reject};
use crate::jsonrpc::{self, Kind};

/// The stateless revision.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// Header and body disagree (or a required header is missing).
pub const HEADER_MISMATCH: i64 = -32020;
/// The request's protocol version is not served.
pub const UNSUPPORTED_VERSION: i64 = -32022;
/// Method not found.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid params.
pub const INVALID_PARAMS: i64 = -32602;

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

/// Whether a request with these headers is a stateless one: its `MCP-Protocol-Version` is
/// given and is none of the session-era versions.
pub fn is_stateless(h: &HeaderMap) -> bool {
    header_str(h, "mcp-protocol-version").is_some_and(|v| !SESSION_VERSIONS.contains(&v.trim()))
}

/// Every version the front serves, newest first: what `server/discover` says and what an
/// unsupported version's error (-32022) lists, on either path — one list.
pub(super) fn supported() -> Vec<&'static str> {
    let mut v = vec![STATELESS_VERSION];
    v.extend(SESSION_VERSIONS.iter().rev());
    v
}

/// A header value: optional whitespace trimmed, `=?base64?…?=` decoded.
fn header_value(h: &HeaderMap, name: &str) -> Option<Result<String, ()>> {
    h.get(name).map(decode_header)
}

/// What a header value says: optional whitespace trimmed, `=?base64?…?=` decoded.
fn decode_header(raw: &axum::http::HeaderValue) -> Result<String, ()> {
    let text = raw.to_str().map_err(|_| ())?;
    let text = text.trim_matches([' ', '\t']);
    match text
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        Some(b64) => base64_decode(b64)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or(()),
        None => Ok(text.to_string()),
    }
}

/// Strict standard base64 (with padding), as the revision's header encoding uses.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(4) {
        return None;
    }
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(b.len() / 4 * 3);
    for (i, chunk) in b.chunks(4).enumerate() {
        let last = i == b.len() / 4 - 1;
        let pad = chunk.iter().rev().take_while(|c| **c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for (j, c) in chunk.iter().enumerate() {
            let v = if j >= 4 - pad { 0 } else { val(*c)? };
            n = (n << 6) | v;
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// One tool argument a 2026-07-28 client mirrors into an `Mcp-Param-{name}` header: the
/// property's `x-mcp-header` annotation.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    /// The header, lower-cased, prefix included.
    header: String,
    /// The property's path from `arguments`.
    path: Vec<String>,
}

/// Tools whose header bindings a caller's state keeps at most.
pub const MAX_BOUND_TOOLS: usize = 4096;

/// Bindings one tool may declare that are enforced; a tool declaring more has none
/// enforced and its calls carry none of them (a listing is untrusted input).
const MAX_BINDINGS_PER_TOOL: usize = 64;

/// The longest header name or property name a binding may have.
const MAX_NAME: usize = 128;

/// `Mcp-Param-*` headers a call may carry that no argument is bound to, and their size.
const MAX_UNBOUND: usize = 16;
const MAX_UNBOUND_BYTES: usize = 1024;

/// The bindings of the tools a caller listed, by tool name (bounded).
#[derive(Debug, Default)]
pub struct ToolBindings(std::collections::HashMap<String, Vec<Binding>>);

impl ToolBindings {
    /// Takes in a `tools/list` result.
    pub fn learn(&mut self, result: &Value) {
        let Some(tools) = result.get("tools").and_then(Value::as_array) else {
            return;
        };
        for t in tools {
            let Some(name) = t.get("name").and_then(Value::as_str) else {
                continue;
            };
            if self.0.len() >= MAX_BOUND_TOOLS && !self.0.contains_key(name) {
                break;
            }
            self.0.insert(name.to_string(), bindings(t));
        }
    }

    /// The bindings of tool `name`, as last listed.
    pub fn of(&self, name: &str) -> Vec<Binding> {
        self.0.get(name).cloned().unwrap_or_default()
    }
}

/// The header bindings a tool definition declares. Only valid annotations count (an invalid
/// one is not enforced, as the revision says): a token name, unique in the tool regardless of
/// case, on a string, integer, number or boolean property reached through `properties`
/// keys alone.
pub fn bindings(tool: &Value) -> Vec<Binding> {
    fn walk(schema: &Value, path: &mut Vec<String>, out: &mut Vec<Binding>, depth: usize) {
        let Some(props) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        if depth > 8 {
            return;
        }
        for (key, prop) in props {
            path.push(key.clone());
            if let Some(name) = prop.get("x-mcp-header").and_then(Value::as_str)
                && path.iter().all(|k| k.len() <= MAX_NAME)
            {
                let token = !name.is_empty()
                    && name.len() <= MAX_NAME
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                let primitive = matches!(
                    prop.get("type").and_then(Value::as_str),
                    Some("string" | "integer" | "number" | "boolean")
                );
                if token && primitive {
                    out.push(Binding {
                        header: format!("mcp-param-{}", name.to_ascii_lowercase()),
                        path: path.clone(),
                    });
                }
            }
            walk(prop, path, out, depth + 1);
            path.pop();
        }
    }
    let mut out = Vec::new();
    if let Some(schema) = tool.get("inputSchema") {
        walk(schema, &mut Vec::new(), &mut out, 0);
    }
    if out.len() > MAX_BINDINGS_PER_TOOL {
        return Vec::new();
    }
    // Two properties claiming one header: neither is enforced.
    let mut count: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for b in &out {
        *count.entry(b.header.as_str()).or_default() += 1;
    }
    let dup: Vec<String> = count
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(h, _)| h.to_string())
        .collect();
    out.retain(|b| !dup.contains(&b.header));
    out
}

/// The value a header carries for argument `v`: as it is when it can travel as plain
/// visible ASCII, else `=?base64?…?=`.
fn encode_header(v: &Value) -> Option<String> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Bool(_) | Value::Number(_) => v.to_string(),
        _ => return None,
    };
    let plain = text
        .bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
        && text.trim_matches([' ', '\t']) == text
        && !(text.starts_with("=?base64?") && text.ends_with("?="));
    if plain {
        return Some(text);
    }
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::from("=?base64?");
    for chunk in text.as_bytes().chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out.push_str("?=");
    Some(out)
}

/// The bound `Mcp-Param-*` headers of a call as it goes upstream: built from the arguments
/// the gateway forwards (masked ones masked), never copied from the client's headers.
pub(crate) fn bound_headers(message: &Value, bound: &[Binding]) -> crate::remote::HeaderList {
    let mut out = Vec::new();
    for b in bound {
        let mut arg = jsonrpc::at(message, "/params/arguments");
        for key in &b.path {
            arg = arg.and_then(|a| a.get(key));
        }
        let Some(value) = arg.filter(|a| !a.is_null()).and_then(encode_header) else {
            continue;
        };
        if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::from_bytes(b.header.as_bytes()),
            axum::http::HeaderValue::from_str(&value),
        ) {
            out.push((name, value));
        }
    }
    out
}

/// The client's `Mcp-Param-*` headers that no argument of the tool is bound to: passed on
/// as they are (routers may use them), at most [`MAX_UNBOUND`] of at most
/// [`MAX_UNBOUND_BYTES`] each, each given once.
fn unbound_headers(
    h: &HeaderMap,
    id: &Value,
    bound: &[Binding],
) -> Result<crate::remote::HeaderList, Reject> {
    let bad = |msg: String| reject(StatusCode::BAD_REQUEST, id, HEADER_MISMATCH, &msg);
    let mut out: crate::remote::HeaderList = Vec::new();
    for name in h.keys() {
        let n = name.as_str();
        if !n.starts_with("mcp-param-") || bound.iter().any(|b| b.header == n) {
            continue;
        }
        let mut values = h.get_all(name).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return Err(bad(format!("header {n} is given more than once")));
        };
        if value.len() > MAX_UNBOUND_BYTES {
            return Err(bad(format!(
                "header {n} is longer than {MAX_UNBOUND_BYTES} bytes"
            )));
        }
        if out.len() == MAX_UNBOUND {
            return Err(bad(format!(
                "more than {MAX_UNBOUND} Mcp-Param-* headers name no argument of the tool"
            )));
        }
        out.push((name.clone(), value.clone()));
    }
    Ok(out)
}

/// What a call takes upstream in headers, once checked: its bindings (the values are taken
/// from the forwarded body when it is posted) and the unbound `Mcp-Param-*` headers.
pub(crate) struct Params {
    pub(crate) bound: Vec<Binding>,
    pub(crate) unbound: crate::remote::HeaderList,
}

impl Params {
    /// The headers for `message`, the call as the gateway forwards it: bound ones built
    /// from its arguments; unbound ones only where the value is that of one of its
    /// arguments. A header that mirrors no argument as forwarded (the gateway masked it,
    /// or it never was one) would carry what no decision saw, so it stays here.
    pub(crate) fn headers(&self, message: &Value) -> crate::remote::HeaderList {
        let mut out = bound_headers(message, &self.bound);
        let mut values = Vec::new();
        if let Some(args) = jsonrpc::at(message, "/params/arguments") {
            primitives(args, &mut values, 0);
        }
        for (name, value) in &self.unbound {
            if decode_header(value).is_ok_and(|text| values.contains(&text)) {
                out.push((name.clone(), value.clone()));
            }
        }
        out
    }
}

/// The string, number and boolean values in `v`, as header text (bounded).
fn primitives(v: &Value, out: &mut Vec<String>, depth: usize) {
    if depth > 8 || out.len() >= 256 {
        return;
    }
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Number(_) | Value::Bool(_) => out.push(v.to_string()),
        Value::Array(a) => a.iter().for_each(|x| primitives(x, out, depth + 1)),
        Value::Object(o) => o.values().for_each(|x| primitives(x, out, depth + 1)),
        Value::Null => {}
    }
}

/// Checks a `tools/call`'s `Mcp-Param-*` headers (see [`check_params`],
/// [`unbound_headers`]) and returns what goes upstream with it.
pub(super) fn params(
    h: &HeaderMap,
    id: &Value,
    message: &Value,
    bound: Vec<Binding>,
) -> Result<Params, Reject> {
    check_params(h, id, message, &bound)?;
    let unbound = unbound_headers(h, id, &bound)?;
    Ok(Params { bound, unbound })
}

/// Checks a `tools/call`'s `Mcp-Param-*` headers against its arguments: each bound argument
/// that is present and not null must be mirrored, with the same value (numbers compared as
/// numbers).
fn check_params(
    h: &HeaderMap,
    id: &Value,
    message: &Value,
    bound: &[Binding],
) -> Result<(), Reject> {
    let bad = |msg: String| reject(StatusCode::BAD_REQUEST, id, HEADER_MISMATCH, &msg);
    for b in bound {
        let mut arg = jsonrpc::at(message, "/params/arguments");
        for key in &b.path {
            arg = arg.and_then(|a| a.get(key));
        }
        let Some(arg) = arg.filter(|a| !a.is_null()) else {
            continue;
        };
        if h.get_all(b.header.as_str()).iter().count() > 1 {
            return Err(bad(format!("header {} is given more than once", b.header)));
        }
        let header = match header_value(h, &b.header) {
            Some(Ok(v)) => v,
            Some(Err(())) => return Err(bad(format!("header {} is not readable", b.header))),
            None => {
                return Err(bad(format!(
                    "header {} is required: the tool mirrors argument {} into it",
                    b.header,
                    b.path.join(".")
                )));
            }
        };
        let same = match arg {
            Value::String(s) => *s == header,
            Value::Bool(v) => header == v.to_string(),
            // Integers compare exactly; other numbers as numbers (42.0 is 42).
            Value::Number(n) => match (n.as_i64(), header.parse::<i64>()) {
                (Some(a), Ok(b)) => a == b,
                _ => header
                    .parse::<f64>()
                    .ok()
                    .zip(n.as_f64())
                    .is_some_and(|(a, b)| a == b && a.abs() < 9_007_199_254_740_992.0),
            },
            _ => false,
        };
        if !same {
            return Err(bad(format!(
                "header {} is {header:?} but argument {} is {arg}",
                b.header,
                b.path.join(".")
            )));
        }
    }
    Ok(())
}

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

/// Takes out of `caps` what the front does not serve to stateless clients: there is no
/// `subscriptions/listen` here and no per-request `logLevel` upstream, so no list-change
/// or resource notifications and no logs.
pub(super) fn strip_unserved(caps: &mut Value) {
    if let Some(c) = caps.as_object_mut() {
        c.remove("logging");
        for (_, v) in c.iter_mut() {
            if let Some(o) = v.as_object_mut() {
                o.remove("listChanged");
                o.remove("subscribe");
            }
        }
    }
}

/// `message` with the front's own id (and progress token, when it has one), and its own
/// progress token: stateless clients reuse theirs freely.
///
/// `caller` names the client connection of an anonymous caller, for the gateway core to
/// keep its per-caller state apart ([`crate::gateway::CALLER_META`]); whatever the client
/// put there itself is replaced or removed.
pub(super) fn own_ids(
    message: &Value,
    upstream_id: &Value,
    caller: Option<&str>,
) -> (Value, Option<Value>) {
    let mut forwarded = message.clone();
    forwarded["id"] = upstream_id.clone();
    if let Some(params) = forwarded.get_mut("params").and_then(Value::as_object_mut) {
        let meta = params.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            match caller {
                Some(c) => {
                    meta.insert(crate::gateway::CALLER_META.into(), json!(c));
                }
                None => {
                    meta.remove(crate::gateway::CALLER_META);
                }
            }
        }
    }
    let token = jsonrpc::at(message, "/params/_meta/progressToken").cloned();
    if token.is_some()
        && let Some(meta) = forwarded
            .pointer_mut("/params/_meta")
            .and_then(Value::as_object_mut)
    {
        meta.insert("progressToken".into(), upstream_id.clone());
    }
    (forwarded, token)
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

    #[test]
    fn header_values_round_trip() {
        for text in [
            "eu-west",
            "",
            "a b",
            " padded",
            "ünïcödé",
            "line\nbreak",
            "=?base64?x?=",
            "ab",
            "abc",
            "abcd",
        ] {
            let encoded = encode_header(&json!(text)).unwrap();
            let h = headers(&[("mcp-param-x", encoded.as_str())]);
            assert_eq!(
                header_value(&h, "mcp-param-x"),
                Some(Ok(text.to_string())),
                "{encoded}"
            );
        }
        assert_eq!(encode_header(&json!(42)).as_deref(), Some("42"));
        assert_eq!(encode_header(&json!(true)).as_deref(), Some("true"));
        assert_eq!(encode_header(&json!({"a": 1})), None);
    }

    #[test]
    fn bindings_are_valid_annotations_only() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "bad name": {"type": "string", "x-mcp-header": "Not A Token"},
            "obj": {"type": "object", "x-mcp-header": "Obj", "properties": {
                "zone": {"type": "integer", "x-mcp-header": "Zone"}}},
            "a": {"type": "string", "x-mcp-header": "Twice"},
            "b": {"type": "string", "x-mcp-header": "twice"}}}});
        let mut got: Vec<String> = bindings(&tool).into_iter().map(|b| b.header).collect();
        got.sort();
        assert_eq!(got, ["mcp-param-region", "mcp-param-zone"]);
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
        assert_eq!(base64_decode("SGVsbG8="), Some(b"Hello".to_vec()));
        assert_eq!(base64_decode("SGVsbG8"), None, "bad padding");
        assert_eq!(base64_decode("SGVs!!!bG8="), None);
        assert_eq!(base64_decode("SG=sbG8="), None);
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
