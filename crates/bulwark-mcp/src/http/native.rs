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
//! which is how the revision cancels. An upstream answer stream that breaks before the
//! answer is not resumed (the revision has no `Last-Event-ID` and no GET stream): the
//! request, as decided, is sent again under a new id, a bounded number of times
//! ([`crate::remote::Exchange`]).

use crate::locks::lock;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bulwark_engine::Principal;
use serde_json::{Value, json};

use super::revision::{
    METHOD_NOT_FOUND, STATELESS_VERSION, own_ids, params, strip_unserved, supported,
};
use super::{HttpFront, Rewrite, rpc_error, sse_response};
use crate::client::HeaderList;
use crate::gateway::{Gateway, Out};
use crate::jsonrpc;
use crate::param_headers::ToolBindings;
use crate::remote::{Exchange, Log, Remote};

/// How long the upstream may take to answer `server/discover`.
const DISCOVER_WAIT: Duration = Duration::from_secs(10);

/// How long after an unanswered `server/discover` stateless requests are wrapped without
/// asking again.
const DISCOVER_RETRY: Duration = Duration::from_secs(30);

/// One caller's stateless state: its gateway core and the tools it listed.
struct Caller {
    core: Arc<Gateway>,
    tools: std::sync::Mutex<ToolBindings>,
    last_used: std::sync::atomic::AtomicU64,
}

/// What the front knows of a native upstream.
#[derive(Default)]
pub(super) struct Native {
    /// Whether the upstream speaks 2026-07-28, once it has said.
    speaks: tokio::sync::OnceCell<bool>,
    /// When asking last gave no answer: not asked again for a while, so requests do not
    /// queue behind one another's attempts.
    failed_at: std::sync::Mutex<Option<std::time::Instant>>,
    /// Each caller's state (at most twice `max_sessions`; the longest idle goes first).
    callers: std::sync::Mutex<HashMap<String, Arc<Caller>>>,
}

/// The protocol's mirrors of the body, which go upstream as the client sent them (checked
/// by [`super::stateless`] first, each given once): `Mcp-Name` only for the methods it
/// is checked for.
fn mirrors(h: &HeaderMap, method: &str) -> HeaderList {
    let named = matches!(method, "tools/call" | "prompts/get" | "resources/read");
    h.iter()
        .filter(|(name, _)| match name.as_str() {
            "mcp-protocol-version" | "mcp-method" => true,
            "mcp-name" => named,
            _ => false,
        })
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

impl HttpFront {
    /// The upstream, when it is an HTTP server that speaks 2026-07-28 itself. Asked once,
    /// by one request while others wait; an upstream that gives no clear answer (cannot be
    /// reached, is busy) is asked again next time.
    pub(super) async fn native_upstream(&self) -> Option<&Remote> {
        let (remote, _) = self.connector.remote()?;
        let speaks = self
            .native
            .speaks
            .get_or_try_init(|| async {
                let recent = lock(&self.native.failed_at)
                    .is_some_and(|t| t.elapsed() < DISCOVER_RETRY);
                if recent {
                    return Err(());
                }
                let speaks = match discover(remote).await {
                    Ok(s) => s,
                    Err(()) => {
                        *lock(&self.native.failed_at) = Some(std::time::Instant::now());
                        return Err(());
                    }
                };
                (self.log)(if speaks {
                    "the upstream speaks 2026-07-28: stateless requests go to it as they are"
                } else {
                    "the upstream does not speak 2026-07-28: stateless requests are wrapped in a session"
                });
                Ok::<bool, ()>(speaks)
            })
            .await;
        matches!(speaks, Ok(true)).then_some(remote)
    }

    /// The stateless state of `principal`.
    fn caller(&self, principal: &Principal) -> Result<Arc<Caller>, String> {
        let key = format!(
            "{}|{}",
            principal.verified,
            principal.id.as_deref().unwrap_or("")
        );
        let now = self.now_ms();
        let mut callers = lock(&self.native.callers);
        if let Some(c) = callers.get(&key) {
            c.last_used.store(now, std::sync::atomic::Ordering::Relaxed);
            return Ok(Arc::clone(c));
        }
        if callers.len() >= self.config.max_sessions * 2 {
            // As with sessions: the longest-unused caller with nothing in progress makes
            // room; with none, the new caller waits.
            let idle = callers
                .iter()
                .filter(|(_, c)| c.core.waiting() == 0 && Arc::strong_count(c) == 1)
                .min_by_key(|(_, c)| c.last_used.load(std::sync::atomic::Ordering::Relaxed))
                .map(|(k, _)| k.clone());
            match idle {
                Some(k) => {
                    callers.remove(&k);
                }
                None => {
                    return Err(format!(
                        "{} callers have stateless requests in progress here",
                        callers.len()
                    ));
                }
            }
        }
        let Some((_, make)) = self.connector.remote() else {
            return Err("the upstream is not an HTTP server".into());
        };
        // Named for the caller, not numbered: a caller made again after making room decides
        // in the same session, so nothing it was tainted with is forgotten.
        let caller = Arc::new(Caller {
            core: make(&format!("stateless-{}", super::id_digest(&key)), principal)?,
            tools: std::sync::Mutex::new(ToolBindings::default()),
            last_used: std::sync::atomic::AtomicU64::new(now),
        });
        callers.insert(key, Arc::clone(&caller));
        Ok(caller)
    }
}

/// Asks the upstream whether it speaks 2026-07-28; `Err` when it gave no clear answer.
async fn discover(remote: &Remote) -> Result<bool, ()> {
    let id = json!("bulwark-discover");
    let discover = json!({"jsonrpc": "2.0", "id": id, "method": "server/discover",
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
        let mut answer = remote.exchange(&discover, headers).await.map_err(|_| ())?;
        // Refusing the gateway, busy or failing: no verdict on what it speaks.
        if matches!(answer.status(), 401 | 403 | 407 | 429) || answer.status() >= 500 {
            return Err(());
        }
        while let Some(msg) = answer.next().await {
            if msg.get("id") == Some(&id) {
                return Ok(Some(msg));
            }
        }
        // Answered, but not with JSON-RPC: a server that does not know the revision.
        Ok(None)
    })
    .await
    .map_err(|_| ())??;
    Ok(asked.is_some_and(|a| {
        jsonrpc::at(&a, "/result/supportedVersions")
            .and_then(Value::as_array)
            .is_some_and(|v| v.iter().any(|x| x == STATELESS_VERSION))
    }))
}

/// A request the core waits on: when its exchange ends without an answer, the client gets
/// an error; when the client goes away first, the core stops waiting.
struct Waiting {
    caller: Arc<Caller>,
    upstream_id: Value,
    answered: bool,
    deadline: tokio::time::Instant,
}

impl Waiting {
    /// Feeds the upstream's message to the core; what the client gets of it.
    fn take(&mut self, msg: &Value, rewrite: &Rewrite) -> Vec<String> {
        let response = msg.get("result").is_some() || msg.get("error").is_some();
        if response {
            // One answer per exchange, and only to this request: an answer under another
            // id would settle a request of the same caller in flight elsewhere.
            if self.answered || msg.get("id") != Some(&self.upstream_id) {
                return Vec::new();
            }
            self.answered = true;
        }
        let now = crate::clock::now_ms();
        let mut out = Vec::new();
        for o in self
            .caller
            .core
            .from_server(msg.to_string().as_bytes(), now)
        {
            // A stateless client cannot be asked anything.
            let Out::Client(v) = o else { continue };
            let mut v = v;
            if response
                && rewrite.method == "tools/list"
                && let Some(result) = v.get("result")
            {
                lock(&self.caller.tools).learn(result);
            }
            if response
                && rewrite.method == "server/discover"
                && let Some(caps) = v.pointer_mut("/result/capabilities")
            {
                strip_unserved(caps);
                // The versions this front speaks, as its -32022 error lists them: the
                // client talks to the front, not to the upstream.
                v["result"]["supportedVersions"] = json!(supported());
            }
            out.extend(rewrite.apply(&v.to_string()));
        }
        out
    }

    /// The error the client gets when the upstream gave no answer.
    fn fail(&mut self, why: &str, rewrite: &Rewrite) -> Vec<String> {
        let e = jsonrpc::error(&self.upstream_id, jsonrpc::INTERNAL_ERROR, why, None);
        let out = self.take(&e, rewrite);
        if out.is_empty() {
            // The core had already given up on it: the client still hears why.
            let e = jsonrpc::error(&rewrite.client_id, jsonrpc::INTERNAL_ERROR, why, None);
            return vec![e.to_string()];
        }
        out
    }

    /// The next message of `exchange`, or `None` at its end or at the deadline.
    async fn next(&self, exchange: &mut Exchange) -> Result<Option<Value>, String> {
        tokio::time::timeout_at(self.deadline, exchange.next())
            .await
            .map_err(|_| {
                format!(
                    "the server did not answer within {} s (policy mcp.request_timeout_secs)",
                    self.caller.core.request_timeout().as_secs()
                )
            })
    }
}

/// Stops a held call's wait when its request is dropped.
struct HeldGuard<'a>(&'a Caller, &'a Value);

impl Drop for HeldGuard<'_> {
    fn drop(&mut self) {
        if self.0.core.is_held(self.1) {
            self.0.core.give_up(self.1);
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if !self.answered {
            self.caller.core.give_up(&self.upstream_id);
        }
    }
}

/// The HTTP status for a final answer: 404 for an unknown method, as the revision requires,
/// or the upstream's own 4xx for its own error — except that the upstream refusing the
/// gateway's credentials, or failing, is the gateway's failure (502), not the client's.
fn status_for(answer: &str, upstream: u16) -> StatusCode {
    let code = serde_json::from_str::<Value>(answer)
        .ok()
        .and_then(|v| jsonrpc::at(&v, "/error/code").and_then(Value::as_i64));
    match code {
        Some(METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        Some(_) if matches!(upstream, 401 | 403 | 407) || upstream >= 500 => {
            StatusCode::BAD_GATEWAY
        }
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
    (id, method, conn): (Value, String, Option<&str>),
    sse_ok: bool,
) -> Response {
    let caller = match front.caller(principal) {
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
    let params = if method == "tools/call" {
        let name = jsonrpc::at(message, "/params/name").and_then(Value::as_str);
        let bound = name.map(|n| lock(&caller.tools).of(n)).unwrap_or_default();
        match params(headers, &id, message, bound) {
            Ok(p) => Some(p),
            Err(r) => return r.into_response(),
        }
    } else {
        None
    };
    let upstream_id = json!(format!(
        "bulwark-{}",
        front
            .upstream_ids
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let (forwarded, token) = own_ids(message, &upstream_id, conn);
    let rewrite = Arc::new(Rewrite {
        client_id: id.clone(),
        token,
        method,
        upstream_id: upstream_id.clone(),
    });
    let mut upstream = None;
    let mut decided = Vec::new();
    let outs = caller
        .core
        .from_client(forwarded.to_string().as_bytes(), front.now_ms());
    // A call the core has no listing for waits while it lists the upstream's tools.
    let mut outs = own_requests(
        remote,
        (headers, message),
        &caller,
        outs,
        &upstream_id,
        &front.log,
    )
    .await;
    if outs.is_empty() && caller.core.is_held(&upstream_id) {
        // Waiting for a person (no ticker here: this request looks for itself). A client
        // that goes away drops this future, and the guard stops the wait.
        let guard = HeldGuard(&caller, &upstream_id);
        while outs.is_empty() && caller.core.is_held(&upstream_id) {
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            outs = caller.core.poll_held(&upstream_id, front.now_ms());
        }
        drop(guard);
    }
    for o in outs {
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
    // The mirrors as sent; bound parameters from the arguments as forwarded (masked ones
    // masked); unbound ones as sent.
    let mut pass = mirrors(headers, &rewrite.method);
    if let Some(p) = params {
        pass.extend(p.headers(&upstream));
    }
    let deadline = tokio::time::Instant::now() + caller.core.request_timeout();
    let mut waiting = Waiting {
        caller,
        upstream_id,
        answered: false,
        deadline,
    };
    let exchange = tokio::time::timeout_at(deadline, remote.exchange(&upstream, pass)).await;
    let exchange = match exchange {
        Ok(Ok(x)) => x.logging(Arc::clone(&front.log)),
        Ok(Err(why)) => {
            let why = format!("the upstream server cannot be reached: {why}");
            (front.log)(&why);
            let answer = waiting.fail(&why, &rewrite).pop().unwrap_or_default();
            return json_text(StatusCode::BAD_GATEWAY, answer);
        }
        Err(_) => {
            let why = "the upstream server did not answer in time";
            let answer = waiting.fail(why, &rewrite).pop().unwrap_or_default();
            return json_text(StatusCode::GATEWAY_TIMEOUT, answer);
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

/// Sends the core's own requests (its listing of the upstream's tools, page by page) as
/// stateless requests of their own, feeding each answer back, until what is left is for the
/// client's request; returns that. Each carries the client's protocol `_meta` and headers.
async fn own_requests(
    remote: &Remote,
    (headers, message): (&HeaderMap, &Value),
    caller: &Caller,
    mut outs: Vec<Out>,
    upstream_id: &Value,
    log: &Log,
) -> Vec<Out> {
    let meta: serde_json::Map<String, Value> = jsonrpc::at(message, "/params/_meta")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(k, _)| k.starts_with("io.modelcontextprotocol/"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    // Bounded: one round per page the core may ask for, and one more.
    for _ in 0..=64 {
        let own = outs.iter().position(|o| {
            matches!(o, Out::Server(v) if v.get("id") != Some(upstream_id) && v.get("method").is_some())
        });
        let Some(i) = own else { break };
        let Out::Server(mut request) = outs.remove(i) else {
            break;
        };
        let Some(method) = request
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            break;
        };
        let own_id = request.get("id").cloned().unwrap_or(Value::Null);
        if let Some(params) = request.get_mut("params").and_then(Value::as_object_mut) {
            params.insert("_meta".into(), Value::Object(meta.clone()));
        }
        let mut pass: HeaderList = headers
            .iter()
            .filter(|(name, _)| name.as_str() == "mcp-protocol-version")
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        if let Ok(m) = axum::http::HeaderValue::from_str(&method) {
            pass.push((axum::http::HeaderName::from_static("mcp-method"), m));
        }
        let wait = caller.core.request_timeout();
        let answer = tokio::time::timeout(wait, async {
            let mut x = remote
                .exchange(&request, pass)
                .await?
                .logging(Arc::clone(log));
            while let Some(msg) = x.next().await {
                if msg.get("id") == Some(&own_id)
                    && (msg.get("result").is_some() || msg.get("error").is_some())
                {
                    return Ok(msg);
                }
            }
            Err(format!(
                "the upstream server (HTTP {}) ended its answer without answering",
                x.status()
            ))
        })
        .await
        .unwrap_or_else(|_| Err("the upstream server did not answer in time".to_string()));
        let answer = answer
            .unwrap_or_else(|why| jsonrpc::error(&own_id, jsonrpc::INTERNAL_ERROR, &why, None));
        outs.extend(
            caller
                .core
                .from_server(answer.to_string().as_bytes(), crate::clock::now_ms()),
        );
    }
    outs
}

/// Why an exchange gave no answer.
fn ended(exchange: &Exchange) -> String {
    match exchange.reissues() {
        0 => format!(
            "the upstream server (HTTP {}) ended its answer without answering",
            exchange.status()
        ),
        n => format!(
            "the upstream server (HTTP {}) ended its answer without answering; its answer stream broke, and the request was sent again {n} times",
            exchange.status()
        ),
    }
}

/// The final answer alone, as JSON (progress is dropped: the client takes JSON only).
async fn json_only(mut exchange: Exchange, mut waiting: Waiting, rewrite: &Rewrite) -> Response {
    let (why, status) = loop {
        match waiting.next(&mut exchange).await {
            Ok(Some(msg)) => {
                let out = waiting.take(&msg, rewrite);
                if waiting.answered
                    && let Some(answer) = out.into_iter().last()
                {
                    return json_text(status_for(&answer, exchange.status()), answer);
                }
            }
            Ok(None) => break (ended(&exchange), StatusCode::BAD_GATEWAY),
            Err(why) => break (why, StatusCode::GATEWAY_TIMEOUT),
        }
    };
    let answer = waiting.fail(&why, rewrite).pop().unwrap_or_default();
    json_text(status, answer)
}

/// Every message as an SSE event, as the upstream sends them; the stream ends with the
/// answer.
fn events(exchange: Exchange, waiting: Waiting, rewrite: Arc<Rewrite>) -> Body {
    let state = (exchange, waiting, rewrite, false);
    let stream = futures_util::stream::unfold(state, |mut st| async move {
        let (exchange, waiting, rewrite, over) = &mut st;
        if *over {
            return None;
        }
        loop {
            let out = match waiting.next(exchange).await {
                Ok(Some(msg)) => waiting.take(&msg, rewrite),
                Ok(None) if waiting.answered => return None,
                Ok(None) => waiting.fail(&ended(exchange), rewrite),
                Err(why) => waiting.fail(&why, rewrite),
            };
            *over = waiting.answered;
            // Answered, but the core let nothing through: the client still gets an answer.
            let out = if *over && out.is_empty() {
                let e = jsonrpc::error(
                    &rewrite.client_id,
                    jsonrpc::INTERNAL_ERROR,
                    "the gateway could not pass the upstream's answer on",
                    None,
                );
                vec![e.to_string()]
            } else {
                out
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
