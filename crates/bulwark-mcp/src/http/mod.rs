//! The Streamable HTTP front: `bulwark mcp --listen ADDR` serves MCP at `/mcp` (and the
//! 2024-11-05 `GET /sse` + `POST /message` pair) in front of the same gateway core the stdio
//! wrapper uses.
//!
//! Each client session gets its own upstream session through a [`Connector`] (for a stdio
//! server: its own child process), so taint, pins checks and request ids never mix between
//! clients. The transport rules kept here:
//!
//! - `Host` and `Origin` are checked first (403), against loopback names when the listener
//!   is on loopback;
//! - `initialize` mints an `Mcp-Session-Id`; any other request needs a live one (400 without,
//!   404 for an ended or unknown one); `DELETE` ends it;
//! - a request is answered on its own SSE stream (or as JSON when the client accepts only
//!   that), notifications and responses get 202, batches 400;
//! - `GET /mcp` opens the session's standalone stream (one at a time, 409 for a second);
//!   `Last-Event-ID` resumes exactly the stream it names;
//! - every body, queue, stream and session count is bounded.

mod answer;
pub mod guard;
pub mod handoff;
pub mod identity;
mod native;
pub mod revision;
pub mod session;
pub mod stateless;
pub mod streams;

use crate::locks::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::gateway::Gateway;
use crate::jsonrpc::{self, Kind};
use crate::stdio::{self, MAX_FRAME, ServerCommand};
use answer::{SseOpts, json_answer, sse_body, sse_response};
use bulwark_engine::Principal;
use guard::Guard;
pub use session::{Link, Session, Wire};
use streams::{GET_STREAM, Mode, StreamError};

/// Connections at once, by default.
pub const MAX_CONNECTIONS: usize = 512;

/// The protocol versions served with sessions.
pub const SESSION_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// Assumed when a client sends no `MCP-Protocol-Version` (the transport's first version).
pub const DEFAULT_VERSION: &str = "2025-03-26";

/// Opens upstream sessions.
pub trait Connector: Send + Sync + 'static {
    /// Opens the upstream for client session `session`, opened by `principal`.
    fn open(&self, session: &str, principal: &Principal) -> Result<Link, String>;

    /// The upstream and its gateway cores, when the upstream is one HTTP server (whose
    /// 2026-07-28 support is then asked for).
    fn remote(&self) -> Option<(&crate::remote::Remote, &MakeGateway)> {
        None
    }
}

/// Makes the gateway core for a session id.
pub type MakeGateway = Box<dyn Fn(&str, &Principal) -> Result<Arc<Gateway>, String> + Send + Sync>;

/// A stdio server command per client session, each behind its own gateway core.
pub struct StdioConnector {
    /// The server to run.
    pub command: ServerCommand,
    /// Makes the gateway core for a session id.
    pub gateway: MakeGateway,
}

impl Connector for StdioConnector {
    fn open(&self, session: &str, principal: &Principal) -> Result<Link, String> {
        let gateway = (self.gateway)(session, principal)?;
        let child = stdio::spawn(&self.command).map_err(|e| e.to_string())?;
        Ok(link(gateway, stdio::Server::Child(child)))
    }
}

/// A session of a remote Streamable HTTP server per client session, each behind its own
/// gateway core.
pub struct RemoteConnector {
    /// The server.
    pub remote: crate::remote::Remote,
    /// Makes the gateway core for a session id.
    pub gateway: MakeGateway,
    /// Where the remote client's notes go.
    pub log: Arc<dyn Fn(&str) + Send + Sync>,
}

impl Connector for RemoteConnector {
    fn open(&self, session: &str, principal: &Principal) -> Result<Link, String> {
        let gateway = (self.gateway)(session, principal)?;
        let extra = Arc::new(crate::remote::ExtraHeaders::default());
        let pipe = self
            .remote
            .connect(Arc::clone(&self.log), Some(Arc::clone(&extra)));
        let mut link = link(gateway, stdio::Server::Pipe(pipe));
        link.extra = Some(extra);
        Ok(link)
    }

    fn remote(&self) -> Option<(&crate::remote::Remote, &MakeGateway)> {
        Some((&self.remote, &self.gateway))
    }
}

/// Messages queued each way between a session and its gateway core.
const LINK_QUEUE: usize = 256;

/// Runs the gateway core between `server` and a new port, and returns the port's far end.
pub fn link(gateway: Arc<Gateway>, server: stdio::Server) -> Link {
    let (ours, theirs) = crate::port::pair(LINK_QUEUE);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(stdio::relay(
        gateway,
        server,
        stdio::Io::Port(theirs),
        async move {
            let _ = stopped.await;
        },
    ));
    Link {
        port: ours,
        stop,
        extra: None,
    }
}

/// How the front behaves.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Who may connect.
    pub guard: Guard,
    /// Who the caller is (bearer tokens, signed headers).
    pub identity: identity::Identity,
    /// Sessions at once (each may be a server process).
    pub max_sessions: usize,
    /// A session nobody used for this long, with nothing in progress, is ended.
    pub idle_timeout: Duration,
    /// How long a request may wait for room in its session's upstream queue.
    pub send_wait: Duration,
    /// How often an idle SSE stream gets a comment, so proxies keep it open.
    pub keepalive: Duration,
    /// Connections at once.
    pub max_connections: usize,
    /// How long a request body may take to arrive.
    pub body_timeout: Duration,
    /// How long a connection may take to send a request's head (idle keep-alive
    /// connections included).
    pub header_timeout: Duration,
    /// Traces are exported: a request's `traceparent` header is carried into its message's
    /// `params._meta` when the message names no trace (`crate::trace`).
    pub traced: bool,
}

impl Default for HttpConfig {
    fn default() -> HttpConfig {
        HttpConfig {
            guard: Guard::loopback(),
            identity: identity::Identity::default(),
            max_sessions: 32,
            idle_timeout: Duration::from_secs(30 * 60),
            send_wait: Duration::from_secs(10),
            keepalive: Duration::from_secs(15),
            max_connections: MAX_CONNECTIONS,
            body_timeout: Duration::from_secs(30),
            header_timeout: Duration::from_secs(30),
            traced: false,
        }
    }
}

/// The HTTP front's state.
pub struct HttpFront {
    connector: Box<dyn Connector>,
    config: HttpConfig,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    id_key: [u8; 32],
    counter: AtomicU64,
    /// Shared with the native path's exchanges, which log re-issues.
    log: crate::remote::Log,
    /// The upstream session stateless (2026-07-28) requests are wrapped in.
    /// The upstream sessions stateless (2026-07-28) requests are wrapped in, one per
    /// identity, so one caller's taint is never another's.
    stateless: Mutex<HashMap<String, stateless::Slot>>,
    upstream_ids: AtomicU64,
    /// A 2026-07-28 upstream served natively.
    native: native::Native,
    /// Shutting down: no new sessions.
    closing: std::sync::atomic::AtomicBool,
    /// Where sessions are registered for other replicas to take over, when the gate's
    /// state is shared.
    registry: std::sync::OnceLock<Arc<dyn handoff::Registry>>,
    /// One take-over at a time, so two requests of one session do not both open it.
    handoffs: tokio::sync::Mutex<()>,
}

/// How a stateless request's messages are turned back into what its client expects.
pub(crate) struct Rewrite {
    client_id: Value,
    token: Option<Value>,
    method: String,
    upstream_id: Value,
}

impl HttpFront {
    /// A front opening upstreams with `connector`. `log` gets one line per notable event.
    pub fn new(
        connector: Box<dyn Connector>,
        config: HttpConfig,
        log: Box<dyn Fn(&str) + Send + Sync>,
    ) -> Result<Arc<HttpFront>, bulwark_audit::KeyError> {
        Ok(Arc::new(HttpFront {
            connector,
            config,
            sessions: Mutex::new(HashMap::new()),
            id_key: bulwark_audit::keys::random32()?,
            counter: AtomicU64::new(0),
            log: Arc::from(log),
            stateless: Mutex::new(HashMap::new()),
            upstream_ids: AtomicU64::new(0),
            native: native::Native::default(),
            closing: std::sync::atomic::AtomicBool::new(false),
            registry: std::sync::OnceLock::new(),
            handoffs: tokio::sync::Mutex::new(()),
        }))
    }

    fn now_ms(&self) -> u64 {
        crate::clock::now_ms()
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
        lock(&self.sessions)
    }

    /// Sessions open now.
    pub fn session_count(&self) -> usize {
        self.sessions().len()
    }

    /// An id nobody can guess from earlier ones: a keyed hash of a counter.
    fn mint_id(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut h = Sha256::new();
        h.update(self.id_key);
        h.update(n.to_le_bytes());
        h.finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// Opens a session: under a new id, or under `id` when another replica's session is
    /// taken over ([`handoff`]).
    fn open_session(
        self: &Arc<Self>,
        id: Option<String>,
        wire: Wire,
        version: &str,
        principal: &Principal,
    ) -> Result<Arc<Session>, Reject> {
        if self.closing.load(Ordering::Relaxed) {
            return Err(reject(
                StatusCode::SERVICE_UNAVAILABLE,
                &Value::Null,
                jsonrpc::INTERNAL_ERROR,
                "the gateway is shutting down",
            ));
        }
        if self.session_count() >= self.config.max_sessions {
            self.reap();
            // Clients that go away without DELETE leave sessions behind: the one unused
            // longest, with nothing in progress and nobody listening, makes room (its client,
            // should it come back, gets 404 and initializes again).
            if self.session_count() >= self.config.max_sessions {
                let idle = self
                    .sessions()
                    .values()
                    .filter(|s| {
                        s.wire != Wire::LegacySse
                            && s.streams().in_progress() == 0
                            && !s.streams().listening()
                    })
                    .min_by_key(|s| s.last_seen())
                    .cloned();
                if let Some(s) = idle {
                    (self.log)(&format!(
                        "session {} ended to make room (the longest unused)",
                        id_digest(&s.id)
                    ));
                    s.stop();
                    self.sessions().remove(&s.id);
                }
            }
            if self.session_count() >= self.config.max_sessions {
                return Err(reject(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &Value::Null,
                    jsonrpc::INTERNAL_ERROR,
                    &format!(
                        "this gateway serves at most {} sessions at once; end one (DELETE) or try later",
                        self.config.max_sessions
                    ),
                ));
            }
        }
        // A stateless caller's session is marked so: its gateway core keeps per-caller
        // state apart (the front names the caller in each request).
        let id = match (id, wire) {
            (Some(id), _) => id,
            (None, Wire::Stateless) => format!("stateless-{}", self.mint_id()),
            (None, _) => self.mint_id(),
        };
        let link = self.connector.open(&id, principal).map_err(|e| {
            (self.log)(&format!("cannot start the upstream for a new session: {e}"));
            reject(
                StatusCode::BAD_GATEWAY,
                &Value::Null,
                jsonrpc::INTERNAL_ERROR,
                &format!("cannot start the upstream server: {e}"),
            )
        })?;
        let weak = Arc::downgrade(self);
        let session = Session::start(
            id.clone(),
            wire,
            principal.clone(),
            link,
            version,
            self.now_ms(),
            move |id| {
                if let Some(front) = weak.upgrade() {
                    front.sessions().remove(id);
                }
            },
        );
        self.sessions().insert(id, Arc::clone(&session));
        Ok(session)
    }

    fn session(&self, id: &str) -> Option<Arc<Session>> {
        self.sessions().get(id).filter(|s| !s.ended()).cloned()
    }

    /// Ends sessions idle past the timeout with nothing in progress.
    pub fn reap(&self) {
        let now = self.now_ms();
        let idle = self.config.idle_timeout.as_millis() as u64;
        let gone: Vec<Arc<Session>> = self
            .sessions()
            .values()
            .filter(|s| {
                s.ended()
                    || (s.wire != Wire::LegacySse
                        && now.saturating_sub(s.last_seen()) > idle
                        && s.streams().in_progress() == 0
                        && !s.streams().listening())
            })
            .cloned()
            .collect();
        for s in gone {
            (self.log)(&format!("session {} ended (idle)", id_digest(&s.id)));
            s.stop();
            self.sessions().remove(&s.id);
        }
    }

    /// Ends every session and opens no more (shutdown). Returns how many there were.
    pub fn stop_all(&self) -> usize {
        self.closing.store(true, Ordering::Relaxed);
        let all: Vec<Arc<Session>> = self.sessions().drain().map(|(_, s)| s).collect();
        let n = all.len();
        for s in all {
            s.stop();
        }
        n
    }
}

/// The client connection a request came on: an anonymous stateless caller is told apart
/// by it (the listener puts it in every request).
pub use bulwark_listen::http::ConnId;

/// A digest of a session id for logs and audit records: the id itself is a credential.
pub fn id_digest(id: &str) -> String {
    Sha256::digest(id.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The routes, ready for `axum::serve`.
pub fn router(front: Arc<HttpFront>) -> Router {
    Router::new()
        .route("/mcp", post(post_mcp).get(get_mcp).delete(delete_mcp))
        .route("/sse", get(get_sse))
        .route("/message", post(post_message))
        .with_state(front)
}

/// How long open connections get to finish after shutdown begins.
const DRAIN: Duration = Duration::from_secs(3);

/// Serves `front` on `listener` until `shutdown` completes; then every session is ended
/// and connections get [`DRAIN`] to finish. Returns how many sessions were ended (their
/// servers are being terminated).
///
/// The listener is [`bulwark_listen::http`]'s: at most `max_connections` at once, a
/// quarter of them per client address, idle connections giving way to new clients, a
/// head within `header_timeout` (first or between requests), writes that stall closed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    front: Arc<HttpFront>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<usize> {
    let reaper = {
        let front = Arc::clone(&front);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(10));
            loop {
                tick.tick().await;
                front.reap();
            }
        })
    };
    let app = router(Arc::clone(&front));
    let mut limits = bulwark_listen::http::HttpLimits::for_max(front.config.max_connections);
    limits.header = front.config.header_timeout;
    limits.drain = DRAIN;
    let ended = std::sync::Mutex::new(0);
    bulwark_listen::http::serve(listener, app, limits, shutdown, || {
        *ended.lock().unwrap_or_else(|p| p.into_inner()) = front.stop_all();
    })
    .await;
    reaper.abort();
    Ok(ended.into_inner().unwrap_or_else(|p| p.into_inner()))
}

/// A request refused before it reached a session: the HTTP status and JSON-RPC error.
struct Reject {
    status: StatusCode,
    id: Value,
    code: i64,
    message: String,
    data: Option<Value>,
}

impl Reject {
    fn with_data(mut self, data: Value) -> Reject {
        self.data = Some(data);
        self
    }

    fn with_id(mut self, id: &Value) -> Reject {
        self.id = id.clone();
        self
    }
}

fn reject(status: StatusCode, id: &Value, code: i64, message: &str) -> Reject {
    Reject {
        status,
        id: id.clone(),
        code,
        message: message.to_string(),
        data: None,
    }
}

impl IntoResponse for Reject {
    fn into_response(self) -> Response {
        let mut r = json_response(
            self.status,
            &jsonrpc::error(&self.id, self.code, &self.message, self.data),
        );
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        r
    }
}

fn rpc_error(status: StatusCode, id: &Value, code: i64, message: &str) -> Response {
    json_response(status, &jsonrpc::error(id, code, message, None))
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

fn header_str<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// The checks every request passes first: `Host` and `Origin` (403), then who is calling
/// (401 without a valid token, or with unverifiable headers when verification is required).
fn admit(front: &HttpFront, h: &HeaderMap) -> Result<Principal, Reject> {
    front
        .config
        .guard
        .check(header_str(h, "host"), header_str(h, "origin"))
        .map_err(|e| {
            (front.log)(&format!("refused: {e}"));
            reject(
                StatusCode::FORBIDDEN,
                &Value::Null,
                jsonrpc::INVALID_REQUEST,
                &e.to_string(),
            )
        })?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    front
        .config
        .identity
        .authenticate(|n| header_str(h, n), now)
        .map_err(|e| {
            (front.log)(&format!("refused: {e}"));
            reject(
                StatusCode::UNAUTHORIZED,
                &Value::Null,
                jsonrpc::INVALID_REQUEST,
                &e.to_string(),
            )
        })
}

/// A session is used only by the identity that opened it.
fn owned(session: &Session, principal: &Principal, id: &Value) -> Result<(), Reject> {
    owned_by(&session.principal, principal, id)
}

/// A session opened by `owner` is used only by `owner`.
fn owned_by(owner: &Principal, principal: &Principal, id: &Value) -> Result<(), Reject> {
    if owner == principal {
        return Ok(());
    }
    Err(reject(
        StatusCode::FORBIDDEN,
        id,
        jsonrpc::INVALID_REQUEST,
        "this session belongs to another identity",
    ))
}

async fn read_body(body: axum::body::Body, within: Duration) -> Result<Value, Reject> {
    // A body that drips in holds a connection and a buffer: it gets `within` to arrive.
    let read = tokio::time::timeout(within, axum::body::to_bytes(body, MAX_FRAME));
    let bytes = read
        .await
        .map_err(|_| {
            reject(
                StatusCode::REQUEST_TIMEOUT,
                &Value::Null,
                jsonrpc::INVALID_REQUEST,
                &format!(
                    "the request body did not arrive within {} s",
                    within.as_secs()
                ),
            )
        })?
        .map_err(|_| {
            reject(
                StatusCode::PAYLOAD_TOO_LARGE,
                &Value::Null,
                jsonrpc::INVALID_REQUEST,
                &format!("message larger than {MAX_FRAME} bytes, or the body was cut off"),
            )
        })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        reject(
            StatusCode::BAD_REQUEST,
            &Value::Null,
            jsonrpc::PARSE_ERROR,
            &format!("parse error: {e}"),
        )
    })
}

/// What the client's `Accept` allows.
fn accepts(h: &HeaderMap) -> (bool, bool) {
    let a = header_str(h, "accept")
        .unwrap_or("*/*")
        .to_ascii_lowercase();
    let any = a.contains("*/*");
    (
        any || a.contains("application/json"),
        any || a.contains("text/event-stream"),
    )
}

fn session_header(h: &HeaderMap) -> Option<&str> {
    header_str(h, "mcp-session-id")
}

fn no_session(id: &Value) -> Response {
    session_gone(id).into_response()
}

fn session_gone(id: &Value) -> Reject {
    reject(
        StatusCode::NOT_FOUND,
        id,
        -32001,
        "session not found: it ended or never existed; initialize a new one",
    )
}

/// The live session-era session the request's `Mcp-Session-Id` names, if `principal` owns
/// it: 400 without the header, 404 for no such session, 403 for someone else's.
fn own_session(
    front: &HttpFront,
    headers: &HeaderMap,
    principal: &Principal,
) -> Result<Arc<Session>, Reject> {
    let sid = session_header(headers).ok_or_else(|| {
        reject(
            StatusCode::BAD_REQUEST,
            &Value::Null,
            jsonrpc::INVALID_REQUEST,
            "Mcp-Session-Id header is required",
        )
    })?;
    let session = front
        .session(sid)
        .filter(|s| s.wire == Wire::Sessions)
        .ok_or_else(|| session_gone(&Value::Null))?;
    owned(&session, principal, &Value::Null)?;
    Ok(session)
}

/// As [`own_session`], taking the session over from another replica when this one does not
/// hold it ([`handoff`]).
async fn own_or_taken_over(
    front: &Arc<HttpFront>,
    headers: &HeaderMap,
    principal: &Principal,
) -> Result<Arc<Session>, Reject> {
    match own_session(front, headers, principal) {
        Err(r) if r.status == StatusCode::NOT_FOUND => {
            let sid = session_header(headers).unwrap_or_default();
            if front.session(sid).is_some() {
                return Err(r);
            }
            front.take_over(sid, principal).await?.ok_or(r)
        }
        other => other,
    }
}

async fn post_mcp(State(front): State<Arc<HttpFront>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let headers = parts.headers;
    let principal = match admit(&front, &headers) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    let ct = header_str(&headers, "content-type").unwrap_or("");
    if !ct.to_ascii_lowercase().starts_with("application/json") {
        return rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &Value::Null,
            jsonrpc::INVALID_REQUEST,
            "Content-Type must be application/json",
        );
    }
    let (json_ok, sse_ok) = accepts(&headers);
    if !json_ok && !sse_ok {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            &Value::Null,
            jsonrpc::INVALID_REQUEST,
            "Accept must allow application/json or text/event-stream",
        );
    }
    let mut message = match read_body(body, front.config.body_timeout).await {
        Ok(v) => v,
        Err(r) => return r.into_response(),
    };
    if front.config.traced {
        crate::trace::adopt_header(&mut message, header_str(&headers, "traceparent"));
    }
    if revision::is_stateless(&headers) {
        let conn = parts
            .extensions
            .get::<ConnId>()
            .copied()
            .unwrap_or_default();
        return stateless::post(&front, &headers, &principal, message, sse_ok, conn).await;
    }
    let kind = match jsonrpc::classify(&message) {
        Ok(k) => k,
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                e.code(),
                &e.to_string(),
            );
        }
    };
    let id = match &kind {
        Kind::Request { id, .. } => id.clone(),
        _ => Value::Null,
    };
    let initialize = matches!(&kind, Kind::Request { method, .. } if method == "initialize");
    let (session, minted) = match session_header(&headers) {
        Some(_) if initialize => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                &id,
                jsonrpc::INVALID_REQUEST,
                "initialize must not carry an Mcp-Session-Id: this session is already initialized",
            );
        }
        Some(sid) => match front.session(sid) {
            Some(s) if s.wire == Wire::Sessions => {
                if let Err(r) = owned(&s, &principal, &id) {
                    return r.into_response();
                }
                (s, false)
            }
            Some(_) => return no_session(&id),
            // Opened on another replica (or on this one before it restarted): taken over
            // when the shared registry knows it, so the client keeps its session.
            None => match front.take_over(sid, &principal).await {
                Ok(Some(s)) => (s, false),
                Ok(None) => return no_session(&id),
                Err(r) => return r.with_id(&id).into_response(),
            },
        },
        None if initialize => {
            let asked = jsonrpc::at(&message, "/params/protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or(DEFAULT_VERSION);
            match front.open_session(None, Wire::Sessions, asked, &principal) {
                Ok(s) => (s, true),
                Err(r) => return r.into_response(),
            }
        }
        None => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                &id,
                jsonrpc::INVALID_REQUEST,
                "Mcp-Session-Id header is required (send initialize first)",
            );
        }
    };
    if !minted
        && let Some(v) = header_str(&headers, "mcp-protocol-version")
        && !SESSION_VERSIONS.contains(&v)
    {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            &id,
            jsonrpc::INVALID_REQUEST,
            &format!(
                "unsupported MCP-Protocol-Version {v:?}; this session speaks {}",
                session.version()
            ),
        );
    }
    session.touch(front.now_ms());
    if minted {
        front.register(&session, message.get("params").unwrap_or(&Value::Null));
    } else {
        front.keep_registered(&session);
    }
    let Kind::Request { .. } = kind else {
        if !session.send(message, front.config.send_wait).await {
            return rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                &Value::Null,
                jsonrpc::INTERNAL_ERROR,
                "the upstream is not taking messages",
            );
        }
        return StatusCode::ACCEPTED.into_response();
    };
    if initialize {
        session.initializing(&id);
    }
    let mode = if sse_ok { Mode::Events } else { Mode::Json };
    let opened = session.streams().open(&id, &message, mode);
    let (stream, reader) = match opened {
        Ok(x) => x,
        Err(e) => {
            let status = match e {
                StreamError::TooMany => StatusCode::TOO_MANY_REQUESTS,
                _ => StatusCode::CONFLICT,
            };
            return rpc_error(status, &id, jsonrpc::INVALID_REQUEST, &e.to_string());
        }
    };
    if !session.send(message, front.config.send_wait).await {
        session.streams().abandon(stream);
        return rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            &id,
            jsonrpc::INTERNAL_ERROR,
            "the upstream is not taking messages",
        );
    }
    let mut response = match mode {
        Mode::Events => {
            let prime = session.version().as_str() >= "2025-11-25";
            sse_response(sse_body(
                Arc::clone(&session),
                stream,
                reader,
                SseOpts {
                    prime,
                    keepalive: front.config.keepalive,
                    ..SseOpts::default()
                },
            ))
        }
        Mode::Json => json_answer(&session, stream, reader, None).await,
    };
    if minted && let Ok(v) = HeaderValue::from_str(&session.id) {
        response.headers_mut().insert("mcp-session-id", v);
    }
    response
}

/// 405 for a stateless client's GET or DELETE: there are no sessions or streams for it.
fn post_only() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, HeaderValue::from_static("POST"))],
    )
        .into_response()
}

async fn get_mcp(State(front): State<Arc<HttpFront>>, headers: HeaderMap) -> Response {
    let principal = match admit(&front, &headers) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    if revision::is_stateless(&headers) {
        return post_only();
    }
    let (_, sse_ok) = accepts(&headers);
    if !sse_ok {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            &Value::Null,
            jsonrpc::INVALID_REQUEST,
            "Accept must allow text/event-stream",
        );
    }
    let session = match own_or_taken_over(&front, &headers, &principal).await {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    session.touch(front.now_ms());
    let opened = match header_str(&headers, "last-event-id") {
        Some(last) => session.streams().resume(last),
        None => session
            .streams()
            .open_get()
            .map(|(r, cursor)| (GET_STREAM, r, cursor)),
    };
    match opened {
        Ok((stream, reader, cursor)) => sse_response(sse_body(
            Arc::clone(&session),
            stream,
            reader,
            SseOpts {
                cursor,
                keepalive: front.config.keepalive,
                ..SseOpts::default()
            },
        )),
        Err(e @ StreamError::GetOpen) => rpc_error(
            StatusCode::CONFLICT,
            &Value::Null,
            jsonrpc::INVALID_REQUEST,
            &e.to_string(),
        ),
        Err(e) => rpc_error(
            StatusCode::BAD_REQUEST,
            &Value::Null,
            jsonrpc::INVALID_REQUEST,
            &e.to_string(),
        ),
    }
}

async fn delete_mcp(State(front): State<Arc<HttpFront>>, headers: HeaderMap) -> Response {
    let principal = match admit(&front, &headers) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    if revision::is_stateless(&headers) {
        return post_only();
    }
    let session = match own_session(&front, &headers, &principal) {
        Ok(s) => s,
        Err(r) if r.status == StatusCode::NOT_FOUND => {
            // Served by another replica: ended for all of them.
            let sid = session_header(&headers).unwrap_or_default();
            return match front.end_registered(sid, &principal) {
                Ok(true) => StatusCode::OK.into_response(),
                Ok(false) => r.into_response(),
                Err(e) => e.into_response(),
            };
        }
        Err(r) => return r.into_response(),
    };
    front.sessions().remove(&session.id);
    session.stop();
    front.unregister(&session.id);
    (front.log)(&format!(
        "session {} ended by the client",
        id_digest(&session.id)
    ));
    StatusCode::OK.into_response()
}

/// `GET /sse` (2024-11-05): a session whose every message goes out on this one stream,
/// after an `endpoint` event naming where to POST.
async fn get_sse(State(front): State<Arc<HttpFront>>, headers: HeaderMap) -> Response {
    let principal = match admit(&front, &headers) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    // Each of these starts a server: not for a page's stray <img> (EventSource, which a
    // page would use, sends an Origin the guard checks).
    if !header_str(&headers, "accept").is_some_and(|a| a.contains("text/event-stream")) {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            &Value::Null,
            jsonrpc::INVALID_REQUEST,
            "Accept must be text/event-stream",
        );
    }
    let session = match front.open_session(None, Wire::LegacySse, "2024-11-05", &principal) {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    let reader = match session.streams().open_get() {
        Ok((r, _)) => r,
        Err(e) => {
            return rpc_error(
                StatusCode::CONFLICT,
                &Value::Null,
                jsonrpc::INVALID_REQUEST,
                &e.to_string(),
            );
        }
    };
    let endpoint = format!(
        "event: endpoint\ndata: /message?sessionId={}\n\n",
        session.id
    );
    sse_response(sse_body(
        session,
        GET_STREAM,
        reader,
        SseOpts {
            keepalive: front.config.keepalive,
            first: Some(endpoint),
            ..SseOpts::default()
        },
    ))
}

/// `POST /message?sessionId=…` (2024-11-05): 202, the answer comes on the session's stream.
async fn post_message(State(front): State<Arc<HttpFront>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let principal = match admit(&front, &parts.headers) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    // Minted ids are hex: no percent-decoding needed, and anything else matches no session.
    let sid = parts
        .uri
        .query()
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix("sessionId="))
        .map(str::to_string);
    let Some(session) = sid
        .and_then(|sid| front.session(&sid))
        .filter(|s| s.wire == Wire::LegacySse)
    else {
        return no_session(&Value::Null);
    };
    if let Err(r) = owned(&session, &principal, &Value::Null) {
        return r.into_response();
    }
    let message = match read_body(body, front.config.body_timeout).await {
        Ok(v) => v,
        Err(r) => return r.into_response(),
    };
    if let Err(e) = jsonrpc::classify(&message) {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            &Value::Null,
            e.code(),
            &e.to_string(),
        );
    }
    if let Some(id) = message.get("id")
        && message.get("method").and_then(Value::as_str) == Some("initialize")
    {
        session.initializing(id);
    }
    session.touch(front.now_ms());
    if !session.send(message, front.config.send_wait).await {
        return rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            &Value::Null,
            jsonrpc::INTERNAL_ERROR,
            "the upstream is not taking messages",
        );
    }
    (StatusCode::ACCEPTED, "Accepted").into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle_front(config: HttpConfig) -> Arc<HttpFront> {
        HttpFront::new(
            Box::new(StdioConnector {
                command: ServerCommand {
                    argv: vec!["true".into()],
                    env: vec![],
                },
                gateway: Box::new(|_, _| Err("unused".into())),
            }),
            config,
            Box::new(|_| {}),
        )
        .unwrap()
    }

    /// Serves an idle front with `config` on a loopback port: its address, its stop, and
    /// the serving task.
    async fn serving(
        config: HttpConfig,
    ) -> (
        std::net::SocketAddr,
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<std::io::Result<usize>>,
    ) {
        let front = idle_front(config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, front, async move {
            let _ = stopped.await;
        }));
        (addr, stop, server)
    }

    #[tokio::test]
    async fn a_connection_that_sends_nothing_is_closed() {
        use tokio::io::AsyncReadExt;
        let (addr, stop, server) = serving(HttpConfig {
            header_timeout: Duration::from_millis(200),
            ..HttpConfig::default()
        })
        .await;
        let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
        let closed = tokio::time::timeout(Duration::from_secs(5), async {
            let mut buf = [0u8; 256];
            loop {
                match idle.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await;
        assert!(closed.is_ok(), "the idle connection was kept open");
        let _ = stop.send(());
        assert_eq!(server.await.unwrap().unwrap(), 0);
    }

    #[tokio::test]
    async fn a_body_that_does_not_arrive_in_time_gets_408() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (addr, stop, server) = serving(HttpConfig {
            body_timeout: Duration::from_millis(300),
            ..HttpConfig::default()
        })
        .await;
        let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\""
        );
        slow.write_all(head.as_bytes()).await.unwrap();
        let started = std::time::Instant::now();
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), async {
            let mut buf = [0u8; 1024];
            while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
                match slow.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => answer.extend_from_slice(&buf[..n]),
                }
            }
        })
        .await;
        assert!(read.is_ok(), "no answer to a stalled body");
        let text = String::from_utf8_lossy(&answer);
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
        assert!(
            started.elapsed() >= Duration::from_millis(250),
            "{:?}",
            started.elapsed()
        );
        let _ = stop.send(());
        let _ = server.await;
    }

    #[tokio::test]
    async fn idle_connections_from_one_client_do_not_make_another_wait() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // A slowloris: three times the cap in sockets that never send a byte, with the
        // head timeout far longer than the test.
        let (addr, stop, server) = serving(HttpConfig {
            max_connections: 16,
            header_timeout: Duration::from_secs(60),
            ..HttpConfig::default()
        })
        .await;
        let mut idle = Vec::new();
        for _ in 0..48 {
            idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        for _ in 0..5 {
            let started = std::time::Instant::now();
            let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
            c.write_all(
                format!("GET /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            )
            .await
            .unwrap();
            let mut answer = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut answer)).await;
            let waited = started.elapsed();
            let text = String::from_utf8_lossy(&answer);
            assert!(
                text.starts_with("HTTP/1.1 "),
                "no answer in {waited:?}: {text}"
            );
            assert!(waited < Duration::from_secs(1), "waited {waited:?}");
        }
        drop(idle);
        let _ = stop.send(());
        let _ = server.await;
    }

    #[test]
    fn session_ids_differ_and_do_not_count_up() {
        let front = idle_front(HttpConfig::default());
        let ids: std::collections::HashSet<String> = (0..1000).map(|_| front.mint_id()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(
            ids.iter()
                .all(|i| i.len() == 32 && i.bytes().all(|b| b.is_ascii_hexdigit()))
        );
        // Consecutive ids share no prefix to speak of: they are not a counter.
        let (a, b) = (front.mint_id(), front.mint_id());
        assert_ne!(a[..6], b[..6]);
    }
}
