//! What MCP 2026-07-28 (the stateless revision) asks of the front, whichever way a request
//! is served: its version and error codes, which requests are stateless, the versions the
//! front lists, the capabilities it cannot serve, the ids it forwards with, and the check of
//! a call's `Mcp-Param-*` headers.
//!
//! Two modules serve the revision — [`super::stateless`] wraps a session-era upstream,
//! `native` forwards to an upstream that speaks it — and the first hands a request to the
//! second when the upstream can take it. Both take these rules from here, so the hand-off
//! runs one way only.

use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::{Reject, SESSION_VERSIONS, header_str, reject};
use crate::jsonrpc;
use crate::param_headers::{self, Binding, Params};

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

/// Checks a `tools/call`'s `Mcp-Param-*` headers ([`param_headers::check`]); a mismatch is
/// answered with 400 and [`HEADER_MISMATCH`].
pub(super) fn params(
    h: &HeaderMap,
    id: &Value,
    message: &Value,
    bound: Vec<Binding>,
) -> Result<Params, Reject> {
    param_headers::check(h, message, bound)
        .map_err(|m| reject(StatusCode::BAD_REQUEST, id, HEADER_MISMATCH, &m.0))
}
