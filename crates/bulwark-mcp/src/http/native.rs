//! 2026-07-28 (stateless) requests passed on natively to an upstream that speaks the
//! revision itself, instead of being wrapped in a session.
//!
//! Whether the upstream does is asked once, with `server/discover`. If it does, each
//! stateless request goes through a gateway core of its caller's own (decisions, pins and
//! taint as for a session) and on to the upstream as one stateless POST carrying the
//! request's header mirrors and every `Mcp-Param-*` header; the upstream's answer — one
//! JSON body with its status, or an SSE stream with progress first — comes back through the
//! same core, in the same form. What the
//! upstream says stays its own: its `resultType` (an `InputRequiredResult` included), its
//! errors, its checks of the headers. A client that closes its stream closes the upstream's,
//! which is how the revision cancels.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bulwark_engine::Principal;
use serde_json::{Value, json};

use super::stateless::{METHOD_NOT_FOUND, STATELESS_VERSION, own_ids};
use super::{HttpFront, Rewrite, json_response, rpc_error, sse_response};
use crate::gateway::{Gateway, Out};
use crate::jsonrpc;
use crate::remote::{Exchange, HeaderList, Remote};

/// How long the upstream may take to answer `server/discover`.
const DISCOVER_WAIT: Duration = Duration::from_secs(10);

/// What the front knows of a native upstream.
#[derive(Default)]
pub(super) struct Native {
    /// Whether the upstream speaks 2026-07-28, once it has said.
    speaks: tokio::sync::OnceCell<bool>,
    /// A gateway core per caller.
    cores: std::sync::Mutex<HashMap<String, Arc<Gateway>>>,
}

/// The headers a stateless request carries on to the upstream: the protocol's mirrors of
/// the body and every `Mcp-Param-*`.
fn passed_on(h: &HeaderMap) -> HeaderList {
    h.iter()
        .filter(|(name, _)| {
            let n = name.as_str();
            matches!(n, "mcp-protocol-version" | "mcp-method" | "mcp-name")
                || n.starts_with("mcp-param-")
        })
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

impl HttpFront {
    /// The upstream, when it is an HTTP server that speaks 2026-07-28 itself. Asked once;
    /// an upstream that cannot be reached is asked again next time.
    pub(super) async fn native_upstream(&self) -> Option<&Remote> {
        let (remote, _) = self.connector.remote()?;
        if let Some(speaks) = self.native.speaks.get() {
            return speaks.then_some(remote);
        }
        let discover = json!({"jsonrpc": "2.0", "id": "bulwark-discover", "method": "server/discover",
            "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "bulwark", "version": env!("CARGO_PKG_VERSION")}}}});
        let headers = vec![
            (
                axum::http::HeaderName::from_static("mcp-protocol-version"),
                axum::http::HeaderValue::from_static(STATELESS_VERSION),
            ),
            (
                axum::http::HeaderName::from_static("mcp-method"),
                axum::http::HeaderValue::from_static("server/discover"),
            ),
        ];
        let asked = tokio::time::timeout(DISCOVER_WAIT, async {
            let mut answer = remote.exchange(&discover, headers).await.ok()?;
            answer.next().await
        })
        .await;
        let Ok(Some(answer)) = asked else {
            return None;
        };
        let speaks = answer
            .pointer("/result/supportedVersions")
            .and_then(Value::as_array)
            .is_some_and(|v| v.iter().any(|x| x == STATELESS_VERSION));
        if self.native.speaks.set(speaks).is_ok() {
            (self.log)(if speaks {
                "the upstream speaks 2026-07-28: stateless requests go to it as they are"
            } else {
                "the upstream does not speak 2026-07-28: stateless requests are wrapped in a session"
            });
        }
        speaks.then_some(remote)
    }

    /// The gateway core of `principal`'s stateless requests.
    fn native_core(&self, principal: &Principal) -> Result<Arc<Gateway>, String> {
        let key = format!(
            "{}|{}",
            principal.verified,
            principal.id.as_deref().unwrap_or("")
        );
        let mut cores = match self.native.cores.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if let Some(core) = cores.get(&key) {
            return Ok(Arc::clone(core));
        }
        // Forgetting a caller's core would forget its taint: at the limit, new callers wait.
        if cores.len() >= self.config.max_sessions * 2 {
            return Err(format!(
                "{} callers already have stateless state here",
                cores.len()
            ));
        }
        let Some((_, make)) = self.connector.remote() else {
            return Err("the upstream is not an HTTP server".into());
        };
        let n = cores.len();
        let core = make(&format!("stateless-{n}"), principal)?;
        cores.insert(key, Arc::clone(&core));
        Ok(core)
    }
}

/// A request the core waits on: answered with an error when its exchange ends without an
/// answer (or is dropped: the client went away), so the core forgets it.
struct Waiting {
    core: Arc<Gateway>,
    upstream_id: Value,
    answered: bool,
    /// The front's clock.
    clock: std::time::Instant,
}

impl Waiting {
    /// Feeds the upstream's message to the core; what the client gets of it.
    fn take(&mut self, msg: &Value, rewrite: &Rewrite) -> Vec<String> {
        if msg.get("id") == Some(&self.upstream_id)
            && (msg.get("result").is_some() || msg.get("error").is_some())
        {
            self.answered = true;
        }
        let now = self.clock.elapsed().as_millis() as u64;
        self.core
            .from_server(msg.to_string().as_bytes(), now)
            .into_iter()
            .filter_map(|o| match o {
                Out::Client(v) => rewrite.apply(&v.to_string()),
                // A stateless client cannot be asked anything.
                Out::Server(_) => None,
            })
            .collect()
    }

    /// The error the client gets when the upstream gave no answer.
    fn fail(&mut self, why: &str, rewrite: &Rewrite) -> Vec<String> {
        let e = jsonrpc::error(&self.upstream_id, jsonrpc::INTERNAL_ERROR, why, None);
        self.take(&e, rewrite)
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if !self.answered {
            let e = jsonrpc::error(
                &self.upstream_id,
                jsonrpc::INTERNAL_ERROR,
                "the client went away",
                None,
            );
            let _ = self.core.from_server(e.to_string().as_bytes(), 0);
        }
    }
}

/// The HTTP status for a final answer: 404 for an unknown method, as the revision requires,
/// or the upstream's own 4xx for its own error.
fn status_for(answer: &str, upstream: u16) -> StatusCode {
    let code = serde_json::from_str::<Value>(answer)
        .ok()
        .and_then(|v| v.pointer("/error/code").and_then(Value::as_i64));
    match code {
        Some(METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        Some(_) if (400..500).contains(&upstream) => {
            StatusCode::from_u16(upstream).unwrap_or(StatusCode::BAD_REQUEST)
        }
        _ => StatusCode::OK,
    }
}

fn json_text(status: StatusCode, text: String) -> Response {
    (
        status,
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        text,
    )
        .into_response()
}

/// Serves one stateless request natively (see the module documentation).
pub(super) async fn post(
    front: &Arc<HttpFront>,
    remote: &Remote,
    headers: &HeaderMap,
    principal: &Principal,
    message: &Value,
    (id, method): (Value, String),
    sse_ok: bool,
) -> Response {
    let core = match front.native_core(principal) {
        Ok(c) => c,
        Err(why) => {
            return rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                &id,
                jsonrpc::INTERNAL_ERROR,
                &why,
            );
        }
    };
    let upstream_id = json!(format!(
        "bulwark-{}",
        front
            .upstream_ids
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let (forwarded, token) = own_ids(message, &upstream_id);
    let rewrite = Arc::new(Rewrite {
        client_id: id.clone(),
        token,
        method,
        upstream_id: upstream_id.clone(),
    });
    let mut upstream = None;
    let mut decided = Vec::new();
    for o in core.from_client(forwarded.to_string().as_bytes(), front.now_ms()) {
        match o {
            Out::Server(v) if v.get("id") == Some(&upstream_id) => upstream = Some(v),
            Out::Server(_) => {}
            Out::Client(v) => decided.extend(rewrite.apply(&v.to_string())),
        }
    }
    let Some(upstream) = upstream else {
        // Decided here (refused, blocked): the core's answer is the answer.
        return match decided.pop() {
            Some(answer) => json_text(status_for(&answer, 200), answer),
            None => rpc_error(
                StatusCode::BAD_GATEWAY,
                &id,
                jsonrpc::INTERNAL_ERROR,
                "the gateway neither forwarded nor answered the request",
            ),
        };
    };
    let mut waiting = Waiting {
        core,
        upstream_id,
        answered: false,
        clock: front.started,
    };
    let exchange = match remote.exchange(&upstream, passed_on(headers)).await {
        Ok(x) => x,
        Err(why) => {
            let why = format!("the upstream server cannot be reached: {why}");
            (front.log)(&why);
            let mut out = waiting.fail(&why, &rewrite);
            return match out.pop() {
                Some(answer) => json_text(StatusCode::BAD_GATEWAY, answer),
                None => rpc_error(StatusCode::BAD_GATEWAY, &id, jsonrpc::INTERNAL_ERROR, &why),
            };
        }
    };
    // The answer keeps the upstream's form: a stream stays a stream (for a client that
    // takes one), one JSON body stays one, with its status.
    if sse_ok && exchange.is_events() {
        sse_response(events(exchange, waiting, rewrite))
    } else {
        json_only(exchange, waiting, &rewrite).await
    }
}

/// The final answer alone, as JSON (progress is dropped: the client takes JSON only).
async fn json_only(mut exchange: Exchange, mut waiting: Waiting, rewrite: &Rewrite) -> Response {
    while let Some(msg) = exchange.next().await {
        let answered_before = waiting.answered;
        let out = waiting.take(&msg, rewrite);
        if waiting.answered
            && !answered_before
            && let Some(answer) = out.into_iter().last()
        {
            return json_text(status_for(&answer, exchange.status()), answer);
        }
    }
    let why = format!(
        "the upstream server (HTTP {}) ended its answer without answering",
        exchange.status()
    );
    match waiting.fail(&why, rewrite).pop() {
        Some(answer) => json_text(StatusCode::BAD_GATEWAY, answer),
        None => json_response(
            StatusCode::BAD_GATEWAY,
            &jsonrpc::error(&rewrite.client_id, jsonrpc::INTERNAL_ERROR, &why, None),
        ),
    }
}

/// Every message as an SSE event, as the upstream sends them.
fn events(exchange: Exchange, waiting: Waiting, rewrite: Arc<Rewrite>) -> Body {
    let state = (exchange, waiting, rewrite, false);
    let stream = futures_util::stream::unfold(state, |mut st| async move {
        let (exchange, waiting, rewrite, over) = &mut st;
        if *over {
            return None;
        }
        loop {
            let out = match exchange.next().await {
                Some(msg) => waiting.take(&msg, rewrite),
                None if waiting.answered => return None,
                None => {
                    *over = true;
                    let why = format!(
                        "the upstream server (HTTP {}) ended its answer without answering",
                        exchange.status()
                    );
                    waiting.fail(&why, rewrite)
                }
            };
            let chunk: String = out
                .iter()
                .map(|t| format!("event: message\ndata: {t}\n\n"))
                .collect();
            if !chunk.is_empty() {
                return Some((Ok::<_, Infallible>(Bytes::from(chunk)), st));
            }
            if *over {
                return None;
            }
        }
    });
    Body::from_stream(stream)
}
