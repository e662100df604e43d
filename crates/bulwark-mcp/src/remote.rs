//! A remote MCP server over Streamable HTTP, seen by the gateway core as a [`Pipe`]: parsed
//! messages both ways over an in-process [`crate::port`], where a child has its stdin and
//! stdout.
//!
//! Connections go through [`crate::client`]'s SSRF-safe connector: the upstream's name is
//! resolved by the gateway, every address is classified, internal ones are refused unless
//! the operator allowed them (cloud metadata never), and the connection goes to a checked
//! address, so DNS rebinding cannot swap it. Redirects are not followed. Nothing of the
//! client's HTTP request (its bearer token, its headers) is sent upstream: the gateway makes
//! its own.
//!
//! Each message is one POST; its answer (JSON, or an SSE stream read to its end) comes back
//! as messages. Until `initialize` is answered, messages go one at a time (the session id
//! comes with its answer); after, each in a task of its own (at most 64 at once), so a slow
//! tool call holds nothing else up, and a cancelled request stops being waited for. A
//! request the upstream refuses or cannot be reached for is answered with a JSON-RPC error, never silence.

use crate::locks::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, Uri};
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::client::{self, Client, ClientError, HeaderList};
use crate::jsonrpc::{self, Kind};
use crate::stdio::{MAX_FRAME, Pipe};

/// POST bodies being read at once, per upstream session.
const MAX_IN_FLIGHT: usize = 64;

/// Messages queued each way between an upstream session and its gateway core.
const PORT_QUEUE: usize = 256;

/// Requests whose extra headers are kept at once; the oldest go first.
const MAX_EXTRA: usize = 256;

const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
const JSON_OR_EVENTS: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const EVENTS: HeaderValue = HeaderValue::from_static("text/event-stream");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// Times one answer's stream is resumed (SEP-1699) before the request fails.
pub const MAX_RESUMES: usize = 8;
/// The longest `retry` wait honoured before a resumption; a server asking for more gets
/// this (the request's own deadline still applies).
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(10);
/// The wait before a resumption when the server named none.
const DEFAULT_RETRY_WAIT: Duration = Duration::from_secs(1);

/// Extra HTTP headers for particular upstream requests, by request id: the `Mcp-Param-*`
/// headers of a 2026-07-28 client's call, passed on with that call's POST so that routers
/// and firewalls in front of the upstream see them too. Bound ones are built from the
/// arguments as forwarded (a masked argument goes masked), unbound ones as the client sent
/// them. Bounded: entries are taken when their request is posted, and a request the
/// gateway refused never is, so the oldest are dropped when full.
#[derive(Default)]
pub struct ExtraHeaders {
    inner: Mutex<(
        HashMap<String, crate::param_headers::Params>,
        std::collections::VecDeque<String>,
    )>,
}

impl ExtraHeaders {
    /// Files `params` for the request with `id`.
    pub(crate) fn put(&self, id: &Value, params: crate::param_headers::Params) {
        if params.bound.is_empty() && params.unbound.is_empty() {
            return;
        }
        let key = jsonrpc::id_key(id);
        let mut g = lock(&self.inner);
        let (map, order) = &mut *g;
        while map.len() >= MAX_EXTRA {
            match order.pop_front() {
                Some(old) => {
                    map.remove(&old);
                }
                None => break,
            }
        }
        if map.insert(key.clone(), params).is_none() {
            order.push_back(key);
        }
    }

    /// The headers for `msg` (the request as forwarded), from what was filed for it.
    fn take(&self, msg: &Value, id: &Value) -> HeaderList {
        let key = jsonrpc::id_key(id);
        let filed = {
            let mut g = lock(&self.inner);
            let (map, order) = &mut *g;
            let filed = map.remove(&key);
            if filed.is_some() {
                order.retain(|k| *k != key);
            }
            filed
        };
        filed.map(|p| p.headers(msg)).unwrap_or_default()
    }

    /// Requests with headers filed.
    pub fn len(&self) -> usize {
        lock(&self.inner).0.len()
    }

    /// Whether none are filed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why an upstream URL cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// Not an http(s) URL.
    #[error("upstream URL {0:?} is not an http:// or https:// URL")]
    Url(String),
    /// Its host is internal and internal upstreams were not allowed.
    #[error(
        "upstream {0} is {1} (an internal address); pass --upstream-allow-internal if that is intended"
    )]
    Internal(String, &'static str),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// Where and how to reach a remote server.
#[derive(Clone)]
pub struct Remote {
    url: url::Url,
    /// The URL's path and query: what requests ask for.
    target: Uri,
    client: Client,
    /// The 2024-11-05 HTTP+SSE transport (a URL whose path ends in `/sse`).
    legacy_sse: bool,
}

impl Remote {
    /// Checks `url` and builds the guarded client. Internal addresses (loopback, private
    /// ranges) are refused unless `allow_internal`; cloud metadata always.
    pub fn new(url: &str, allow_internal: bool, timeout: Duration) -> Result<Remote, RemoteError> {
        let parsed = url::Url::parse(url).map_err(|_| RemoteError::Url(url.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(RemoteError::Url(url.to_string()));
        }
        // An address literal never reaches the resolver: check it here.
        let ip = match parsed.host() {
            Some(url::Host::Ipv4(a)) => Some(std::net::IpAddr::V4(a)),
            Some(url::Host::Ipv6(a)) => Some(std::net::IpAddr::V6(a)),
            Some(url::Host::Domain(_)) => None,
            None => return Err(RemoteError::Url(url.to_string())),
        };
        if let Some(ip) = ip
            && let Err(class) = bulwark_net::connect::allowed(ip, allow_internal)
        {
            return Err(RemoteError::Internal(url.to_string(), class.as_str()));
        }
        // A ring provider for rustls, once per process (a second install is refused, which is
        // fine: one is there).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = Client::new(&parsed, allow_internal, timeout).map_err(RemoteError::Client)?;
        let target = target(&parsed).ok_or_else(|| RemoteError::Url(url.to_string()))?;
        let legacy_sse = parsed.path().ends_with("/sse");
        Ok(Remote {
            url: parsed,
            target,
            client,
            legacy_sse,
        })
    }

    /// Opens one upstream session: the pipe (a port) the gateway core talks to.
    pub fn connect(
        &self,
        log: Arc<dyn Fn(&str) + Send + Sync>,
        extra: Option<Arc<ExtraHeaders>>,
    ) -> Pipe {
        let (relay_end, ours) = crate::port::pair(PORT_QUEUE);
        let crate::port::Port {
            tx: lines,
            rx: mut from_core,
        } = ours;
        let remote = self.clone();
        if self.legacy_sse {
            let task = tokio::spawn(legacy_sse(remote, from_core, lines, log));
            return Pipe {
                port: relay_end,
                task,
            };
        }
        let task = tokio::spawn(async move {
            let state = Arc::new(Upstream {
                remote,
                session: Mutex::new(None),
                version: Mutex::new(None),
                lines,
                log,
                extra,
                in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
                bodies: Mutex::new(HashMap::new()),
                expired: std::sync::atomic::AtomicBool::new(false),
                forgot: tokio::sync::Notify::new(),
            });
            // Every task this session starts: aborted with it, whatever the upstream does.
            let mut tasks = tokio::task::JoinSet::new();
            let mut listening = false;
            let mut ready = false;
            loop {
                while tasks.try_join_next().is_some() {}
                // A task may end before its handle is filed: finished ones go.
                lock(&state.bodies).retain(|_, h| !h.is_finished());
                if state.expired.load(std::sync::atomic::Ordering::Relaxed) {
                    (state.log)("the upstream server forgot the session; it ends here too");
                    break;
                }
                // An upstream that forgot the session ends this one at once, not at the
                // client's next message.
                let got = tokio::select! {
                    m = from_core.recv() => m,
                    _ = state.forgot.notified() => {
                        (state.log)("the upstream server forgot the session; it ends here too");
                        break;
                    }
                };
                let Some(msg) = got else { break };
                let Ok(kind) = jsonrpc::classify(&msg) else {
                    continue;
                };
                if let Kind::Notification { method } = &kind
                    && method == "notifications/cancelled"
                    && let Some(rid) = jsonrpc::at(&msg, "/params/requestId")
                    && let Some(h) = lock(&state.bodies).remove(&jsonrpc::id_key(rid))
                {
                    h.abort();
                }
                let notification = matches!(kind, Kind::Notification { .. });
                if !ready || notification {
                    // Until initialize is answered, in order: the session id comes with it.
                    // Notifications always in order (a quick 202): `initialized` must arrive
                    // before the next request, and a cancellation after what it cancels.
                    let initialize =
                        matches!(&kind, Kind::Request { method, .. } if method == "initialize");
                    Arc::clone(&state).post(msg, kind).await;
                    ready |= initialize;
                } else {
                    let id = match &kind {
                        Kind::Request { id, .. } => Some(id.clone()),
                        _ => None,
                    };
                    let Ok(permit) = Arc::clone(&state.in_flight).try_acquire_owned() else {
                        state
                            .fail(
                                id.as_ref(),
                                format!("more than {MAX_IN_FLIGHT} requests in progress upstream"),
                            )
                            .await;
                        continue;
                    };
                    let st = Arc::clone(&state);
                    let key = id.as_ref().map(jsonrpc::id_key);
                    let done = key.clone();
                    let h = tasks.spawn(async move {
                        Arc::clone(&st).post(msg, kind).await;
                        // Only its own entry: the id may already serve a newer request.
                        if let Some(k) = done {
                            let mut bodies = lock(&st.bodies);
                            if bodies.get(&k).is_some_and(|h| h.id() == tokio::task::id()) {
                                bodies.remove(&k);
                            }
                        }
                        drop(permit);
                    });
                    if let Some(k) = key {
                        lock(&state.bodies).insert(k, h);
                    }
                }
                if !listening && state.session().is_some() {
                    listening = true;
                    tasks.spawn(Arc::clone(&state).listen());
                }
            }
            // What is still being answered gets a moment to arrive, then everything stops.
            let _ = tokio::time::timeout(Duration::from_secs(2), async {
                while tasks.join_next().await.is_some() {}
            })
            .await;
            tasks.abort_all();
            while tasks.join_next().await.is_some() {}
            state.end().await;
            // The relay sees the end of the server's messages once every sender is gone.
            drop(state);
        });
        Pipe {
            port: relay_end,
            task,
        }
    }
}

/// Times a 2026-07-28 request whose answer stream broke is sent again before it fails.
/// The revision has no resumption (SEP-2575 removed `Last-Event-ID`, event ids and the GET
/// stream): "a broken response stream loses the in-flight request; clients MUST re-issue
/// it as a new request with a new request ID".
pub const MAX_REISSUES: usize = 3;

/// A log line's sink.
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// The answer to one stateless (2026-07-28) exchange: the messages of its JSON body or SSE
/// stream, read as they come. Dropping it closes the response stream, which is how a
/// 2026-07-28 client cancels.
///
/// An answer stream that ends (or whose connection fails) before the request's answer is a
/// broken stream: the request is sent again, unchanged but for a new id, after the wait the
/// server's `retry` field asked for (at most [`MAX_RETRY_WAIT`]), at most [`MAX_REISSUES`]
/// times; the answer to the new id comes back under the first one, so the caller sees one
/// request. It is the message already decided, delivered again — not a new call. Never
/// resumed with GET and `Last-Event-ID`: the revision has neither. An event over the size
/// limit, a read timeout and a JSON answer end the exchange as they are (the same event
/// would come again; the server is slow, not gone; JSON has no stream to break).
pub struct Exchange {
    status: StatusCode,
    body: ExchangeBody,
    /// What sending the request again needs; `None` for a message nobody answers.
    again: Option<Again>,
}

enum ExchangeBody {
    Json(Option<client::Body>),
    Events {
        body: client::Body,
        events: Events,
        ready: std::collections::VecDeque<Value>,
    },
}

/// A request as first sent, for re-issuing it.
struct Again {
    remote: Remote,
    msg: Value,
    headers: HeaderList,
    /// The id the caller knows the request by.
    id: Value,
    /// The id of the attempt being read.
    current: Value,
    /// Re-issues so far.
    sent: usize,
    answered: bool,
    log: Option<Log>,
}

impl Again {
    fn say(&self, what: &str) {
        if let Some(log) = &self.log {
            log(what);
        }
    }
}

/// How the read of an exchange's body ended.
enum Ended {
    /// The stream ended or its connection failed: the request is lost, and may go again.
    Broken { retry_ms: Option<u64> },
    /// Read to its end as it should be, or given up for a reason a new request would meet
    /// again (an oversized event, a read timeout, not JSON).
    Done,
}

impl Exchange {
    /// The upstream's HTTP status (of the last attempt, when the request went again).
    pub fn status(&self) -> u16 {
        self.status.as_u16()
    }

    /// Whether the answer is an SSE stream (rather than one JSON body).
    pub fn is_events(&self) -> bool {
        matches!(self.body, ExchangeBody::Events { .. })
    }

    /// Where to log re-issues.
    #[must_use]
    pub fn logging(mut self, log: Log) -> Exchange {
        if let Some(a) = &mut self.again {
            a.log = Some(log);
        }
        self
    }

    /// Times the request went again after its stream broke.
    pub fn reissues(&self) -> usize {
        self.again.as_ref().map_or(0, |a| a.sent)
    }

    /// The next message, or `None` at the end of the answer.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            match self.read().await {
                Ok(mut v) => {
                    if let Some(a) = &mut self.again
                        && v.get("id") == Some(&a.current)
                        && matches!(jsonrpc::classify(&v), Ok(Kind::Response { .. }))
                    {
                        a.answered = true;
                        v["id"] = a.id.clone();
                    }
                    return Some(v);
                }
                Err(Ended::Done) => return None,
                Err(Ended::Broken { retry_ms }) => {
                    if !self.reissue(retry_ms).await {
                        return None;
                    }
                }
            }
        }
    }

    /// The next message of the body being read, or how it ended.
    async fn read(&mut self) -> Result<Value, Ended> {
        match &mut self.body {
            ExchangeBody::Json(resp) => {
                let body = resp.take().ok_or(Ended::Done)?;
                read_limited(body).await.ok_or(Ended::Done)
            }
            ExchangeBody::Events {
                body,
                events,
                ready,
            } => loop {
                if let Some(v) = ready.pop_front() {
                    return Ok(v);
                }
                let broken = Ended::Broken {
                    retry_ms: events.retry_ms,
                };
                let chunk = match body.chunk().await {
                    None | Some(Err(ClientError::Http(_))) => return Err(broken),
                    Some(Err(_)) => return Err(Ended::Done),
                    Some(Ok(c)) => c,
                };
                for (_, data) in events.feed(&chunk) {
                    if let Ok(v) = serde_json::from_str::<Value>(&data) {
                        ready.push_back(v);
                    }
                }
                if events.overflowed {
                    return Err(Ended::Done);
                }
            },
        }
    }

    /// Sends the request again after its stream broke, when it is still unanswered and may
    /// go again; whether there is a new answer to read.
    async fn reissue(&mut self, retry_ms: Option<u64>) -> bool {
        let Some(a) = &mut self.again else {
            return false;
        };
        if a.answered {
            return false;
        }
        loop {
            if a.sent >= MAX_REISSUES {
                a.say(&format!(
                    "the upstream broke the answer stream of request {} {} times; it is not sent again",
                    a.id,
                    a.sent + 1
                ));
                return false;
            }
            let wait = retry_ms
                .map_or(DEFAULT_RETRY_WAIT, Duration::from_millis)
                .min(MAX_RETRY_WAIT);
            tokio::time::sleep(wait).await;
            a.sent += 1;
            a.current = reissued_id(&a.id, a.sent);
            a.say(&format!(
                "the upstream's answer stream for request {} broke before the answer; sent again as {} (2026-07-28 has no resumption)",
                a.id, a.current
            ));
            let mut msg = a.msg.clone();
            msg["id"] = a.current.clone();
            match a.remote.post_stateless(&msg, a.headers.clone()).await {
                Ok((status, body)) => {
                    self.status = status;
                    self.body = body;
                    return true;
                }
                Err(why) => a.say(&format!("sending request {} again: {why}", a.id)),
            }
        }
    }
}

/// The id of the `n`th re-issue of the request with `id`: new, and telling of where it
/// came from.
fn reissued_id(id: &Value, n: usize) -> Value {
    match id {
        Value::String(s) => Value::String(format!("{s}~{n}")),
        other => Value::String(format!("{other}~{n}")),
    }
}

impl Remote {
    /// Sends one stateless (2026-07-28) message with `headers` (the protocol's mirrors and
    /// any `Mcp-Param-*`), and returns its answer as it arrives.
    pub async fn exchange(&self, msg: &Value, headers: HeaderList) -> Result<Exchange, String> {
        let (status, body) = self.post_stateless(msg, headers.clone()).await?;
        // Kept to send again (bounded by MAX_FRAME, as every message): a request whose
        // stream breaks is lost, and only its sender can send it again.
        let again = match jsonrpc::classify(msg) {
            Ok(Kind::Request { id, .. }) => Some(Again {
                remote: self.clone(),
                msg: msg.clone(),
                headers,
                current: id.clone(),
                id,
                sent: 0,
                answered: false,
                log: None,
            }),
            _ => None,
        };
        Ok(Exchange {
            status,
            body,
            again,
        })
    }

    /// One stateless POST: its status and its body, JSON or events.
    async fn post_stateless(
        &self,
        msg: &Value,
        headers: HeaderList,
    ) -> Result<(StatusCode, ExchangeBody), String> {
        let mut list = Vec::with_capacity(headers.len() + 2);
        list.push((ACCEPT, JSON_OR_EVENTS));
        list.push((CONTENT_TYPE, JSON));
        list.extend(headers);
        let resp = self
            .client
            .send(
                Method::POST,
                &self.target,
                list,
                jsonrpc::to_bytes(msg).into(),
            )
            .await
            .map_err(|e| e.describe())?;
        let status = resp.status;
        let body = if resp.is_events() {
            ExchangeBody::Events {
                body: resp.body,
                events: Events::default(),
                ready: std::collections::VecDeque::new(),
            }
        } else {
            ExchangeBody::Json(Some(resp.body))
        };
        Ok((status, body))
    }
}

/// The path and query of `url`, as a request target.
fn target(url: &url::Url) -> Option<Uri> {
    url[url::Position::BeforePath..url::Position::AfterQuery]
        .parse()
        .ok()
}

struct Upstream {
    remote: Remote,
    session: Mutex<Option<HeaderValue>>,
    version: Mutex<Option<HeaderValue>>,
    lines: crate::port::Sender,
    log: Arc<dyn Fn(&str) + Send + Sync>,
    extra: Option<Arc<ExtraHeaders>>,
    in_flight: Arc<Semaphore>,
    /// Requests whose answer is being waited for, to abort when they are cancelled.
    bodies: Mutex<HashMap<String, tokio::task::AbortHandle>>,
    /// The upstream forgot the session (404): the pipe ends, so the client hears of it.
    expired: std::sync::atomic::AtomicBool,
    forgot: tokio::sync::Notify,
}

impl Upstream {
    fn session(&self) -> Option<HeaderValue> {
        lock(&self.session).clone()
    }

    /// The headers every request of the session carries, the first accepting `accept`.
    fn headers(&self, accept: HeaderValue) -> HeaderList {
        let mut h = Vec::with_capacity(4);
        h.push((ACCEPT, accept));
        if let Some(s) = self.session() {
            h.push((MCP_SESSION_ID, s));
        }
        if let Some(v) = lock(&self.version).clone() {
            h.push((MCP_PROTOCOL_VERSION, v));
        }
        h
    }

    async fn send(
        &self,
        method: Method,
        headers: HeaderList,
        body: Vec<u8>,
    ) -> Result<client::Response, ClientError> {
        self.remote
            .client
            .send(method, &self.remote.target, headers, body.into())
            .await
    }

    async fn emit(&self, v: Value) {
        let _ = self.lines.send(v).await;
    }

    /// Answers request `id` with an error, when there is a request to answer.
    async fn fail(&self, id: Option<&Value>, why: String) {
        (self.log)(&why);
        if let Some(id) = id {
            self.emit(jsonrpc::error(id, jsonrpc::INTERNAL_ERROR, &why, None))
                .await;
        }
    }

    async fn post(self: Arc<Self>, msg: Value, kind: Kind) {
        let (id, initialize) = match &kind {
            Kind::Request { id, method } => (Some(id.clone()), method == "initialize"),
            _ => (None, false),
        };
        let mut headers = self.headers(JSON_OR_EVENTS);
        headers.push((CONTENT_TYPE, JSON));
        if let (Some(extra), Some(id)) = (&self.extra, &id) {
            headers.extend(extra.take(&msg, id));
        }
        let sent = self
            .send(Method::POST, headers, jsonrpc::to_bytes(&msg))
            .await;
        // Not kept while the answer is read: a slow tool would hold its arguments.
        drop(msg);
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                let why = e.describe();
                return self
                    .fail(
                        id.as_ref(),
                        format!("the upstream server cannot be reached: {why}"),
                    )
                    .await;
            }
        };
        let status = resp.status;
        if initialize && let Some(s) = resp.headers.get(&MCP_SESSION_ID) {
            *lock(&self.session) = Some(s.clone());
        }
        if !status.is_success() {
            if status == StatusCode::NOT_FOUND && self.session().is_some() {
                self.expired
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                self.forgot.notify_one();
            }
            let body = read_capped(resp.body, 4096).await;
            let answered = serde_json::from_str::<Value>(&body)
                .ok()
                .filter(|v| id.is_some() && v.get("id") == id.as_ref() && v.get("error").is_some());
            return match answered {
                // The upstream's own JSON-RPC error for this request: passed on as it is.
                Some(v) => self.emit(v).await,
                None => {
                    let snippet: String = body.chars().take(200).collect();
                    self.fail(
                        id.as_ref(),
                        format!("the upstream server answered HTTP {status}: {snippet}"),
                    )
                    .await
                }
            };
        }
        if id.is_none() {
            return;
        }
        let answered = if resp.is_events() {
            let mut events = Events::default();
            self.read_events(resp.body, initialize, id.as_ref(), &mut events, false)
                .await
                || self.resume(&mut events, id.as_ref()).await
        } else {
            match read_limited(resp.body).await {
                Some(v) => {
                    self.note_version(&v, initialize);
                    let ok = v.get("id") == id.as_ref();
                    self.emit(v).await;
                    ok
                }
                None => false,
            }
        };
        if !answered {
            self.fail(
                id.as_ref(),
                "the upstream server ended its answer without answering".into(),
            )
            .await;
        }
    }

    fn note_version(&self, v: &Value, initialize: bool) {
        if initialize
            && let Some(ver) = jsonrpc::at(v, "/result/protocolVersion").and_then(Value::as_str)
            && let Ok(ver) = HeaderValue::from_str(ver)
        {
            *lock(&self.version) = Some(ver);
        }
    }

    /// An answer's stream ended without the answer, after the server gave it an event id
    /// (a priming event, SEP-1699): the server expects the client to come back for the
    /// rest with GET and `Last-Event-ID` once `retry` has passed. Resumed so, at most
    /// [`MAX_RESUMES`] times and waiting at most [`MAX_RETRY_WAIT`] each time; whether the
    /// answer came. Without an event id there is nothing to resume: the request fails.
    async fn resume(&self, events: &mut Events, id: Option<&Value>) -> bool {
        for attempt in 1..=MAX_RESUMES {
            let Some(last) = events.last_id.clone() else {
                return false;
            };
            let Ok(last) = HeaderValue::from_str(&last) else {
                (self.log)(
                    "the upstream's event id is no header value; its answer cannot be resumed",
                );
                return false;
            };
            let wait = events
                .retry_ms
                .map_or(DEFAULT_RETRY_WAIT, Duration::from_millis)
                .min(MAX_RETRY_WAIT);
            tokio::time::sleep(wait).await;
            let mut headers = self.headers(EVENTS);
            headers.push((LAST_EVENT_ID, last));
            let resp = match self.send(Method::GET, headers, Vec::new()).await {
                Ok(r) => r,
                Err(e) => {
                    (self.log)(&format!(
                        "resuming an answer's stream (attempt {attempt}): {}",
                        e.describe()
                    ));
                    continue;
                }
            };
            if !resp.status.is_success() || !resp.is_events() {
                (self.log)(&format!(
                    "the upstream answered HTTP {} to resuming an answer's stream",
                    resp.status
                ));
                return false;
            }
            if self.read_events(resp.body, false, id, events, true).await {
                return true;
            }
        }
        (self.log)(&format!(
            "an answer's stream was resumed {MAX_RESUMES} times without the answer"
        ));
        false
    }

    /// Reads an SSE body, emitting every message, to its end — or, when `resumed`, to the
    /// answer to `id` (a resumed stream may stay open after it; an answer's own stream is
    /// read to its end, so its connection can be kept). Whether the answer was among them.
    /// `events` keeps the last event id and `retry` the server gave, for resuming.
    async fn read_events(
        &self,
        mut body: client::Body,
        initialize: bool,
        id: Option<&Value>,
        events: &mut Events,
        resumed: bool,
    ) -> bool {
        let mut answered = false;
        while let Some(chunk) = body.chunk().await {
            let Ok(chunk) = chunk else { break };
            for (_, data) in events.feed(&chunk) {
                let Ok(v) = serde_json::from_str::<Value>(&data) else {
                    continue;
                };
                self.note_version(&v, initialize);
                answered |= id.is_some()
                    && v.get("id") == id
                    && matches!(jsonrpc::classify(&v), Ok(Kind::Response { .. }));
                self.emit(v).await;
            }
            if events.overflowed {
                (self.log)("the upstream sent an SSE event over the size limit; stream dropped");
                // Not resumed: the same event would come again.
                events.last_id = None;
                break;
            }
            if answered && resumed {
                break;
            }
        }
        answered
    }

    /// The session's GET stream, for messages the server sends on its own; a server that
    /// has none answers 405, which is fine.
    async fn listen(self: Arc<Self>) {
        let Ok(resp) = self
            .send(Method::GET, self.headers(EVENTS), Vec::new())
            .await
        else {
            return;
        };
        if resp.status.is_success() {
            self.read_events(resp.body, false, None, &mut Events::default(), false)
                .await;
        }
    }

    /// Ends the upstream session (DELETE), best effort.
    async fn end(&self) {
        if self.session().is_some() {
            let _ = tokio::time::timeout(
                Duration::from_secs(2),
                self.send(Method::DELETE, self.headers(JSON_OR_EVENTS), Vec::new()),
            )
            .await;
        }
    }
}

/// At most `max` bytes of a body, as text.
async fn read_capped(mut body: client::Body, max: usize) -> String {
    let mut buf = Vec::new();
    while let Some(Ok(chunk)) = body.chunk().await {
        let room = max.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if buf.len() >= max {
            break;
        }
    }
    String::from_utf8_lossy(&buf).to_string()
}

/// A JSON body of at most [`MAX_FRAME`] bytes.
async fn read_limited(mut body: client::Body) -> Option<Value> {
    let mut buf = Vec::new();
    while let Some(chunk) = body.chunk().await {
        let chunk = chunk.ok()?;
        if buf.len() + chunk.len() > MAX_FRAME {
            return None;
        }
        buf.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&buf).ok()
}

/// An incremental SSE parser: `data:` lines joined per event, events of at most
/// [`MAX_FRAME`] bytes.
#[derive(Default)]
struct Events {
    line: Vec<u8>,
    data: String,
    event: String,
    overflowed: bool,
    /// The last event id the server gave (bounded), for `Last-Event-ID`.
    last_id: Option<String>,
    /// The server's last `retry` (milliseconds).
    retry_ms: Option<u64>,
}

/// The longest event id kept.
const MAX_EVENT_ID: usize = 256;

impl Events {
    /// The events completed by `bytes`: (event type, data).
    fn feed(&mut self, bytes: &[u8]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for &b in bytes {
            if b != b'\n' {
                if self.line.len() > MAX_FRAME {
                    self.overflowed = true;
                    return out;
                }
                self.line.push(b);
                continue;
            }
            let mut line = std::mem::take(&mut self.line);
            if line.ends_with(b"\r") {
                line.pop();
            }
            if line.is_empty() {
                let event = std::mem::take(&mut self.event);
                if !self.data.is_empty() {
                    out.push((event, std::mem::take(&mut self.data)));
                }
                continue;
            }
            let text = String::from_utf8_lossy(&line);
            if let Some(rest) = text.strip_prefix("event:") {
                self.event = rest.trim().chars().take(64).collect();
            } else if let Some(rest) = text.strip_prefix("id:") {
                // As the SSE rules say: an id with NUL in it is ignored; a long one too.
                let v = rest.strip_prefix(' ').unwrap_or(rest);
                if !v.contains('\0') && v.len() <= MAX_EVENT_ID {
                    self.last_id = Some(v.to_string());
                }
            } else if let Some(rest) = text.strip_prefix("retry:") {
                let v = rest.strip_prefix(' ').unwrap_or(rest);
                if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
                    self.retry_ms = v.parse().ok();
                }
            } else if let Some(rest) = text.strip_prefix("data:") {
                if !self.data.is_empty() {
                    self.data.push('\n');
                }
                self.data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
                if self.data.len() > MAX_FRAME {
                    self.overflowed = true;
                    return out;
                }
            }
        }
        out
    }
}

/// The upstream could not be reached: `why` is logged, and every request the core sends
/// is answered with it until the core is done (the client closed). Ending at once instead
/// would race the client's first request: the relay would see the server gone before it
/// had read the request, which would then get no answer at all.
async fn refuse_all(
    mut from_core: crate::port::Receiver,
    lines: crate::port::Sender,
    log: Arc<dyn Fn(&str) + Send + Sync>,
    why: &str,
) {
    log(why);
    while let Some(msg) = from_core.recv().await {
        if let Ok(Kind::Request { id, .. }) = jsonrpc::classify(&msg) {
            let e = jsonrpc::error(
                &id,
                jsonrpc::INTERNAL_ERROR,
                &format!("the upstream server cannot be reached: {why}"),
                None,
            );
            if !lines.send(e).await {
                return;
            }
        }
    }
}

/// A 2024-11-05 HTTP+SSE server: one GET stream carries everything the server sends; its
/// first event names where to POST. That endpoint must be on the same origin as the stream
/// (the server does not get to send the gateway elsewhere).
async fn legacy_sse(
    remote: Remote,
    mut from_core: crate::port::Receiver,
    lines: crate::port::Sender,
    log: Arc<dyn Fn(&str) + Send + Sync>,
) {
    let resp = remote
        .client
        .send(
            Method::GET,
            &remote.target,
            vec![(ACCEPT, EVENTS)],
            Default::default(),
        )
        .await;
    let resp = match resp {
        Ok(r) if r.status.is_success() => r,
        Ok(r) => {
            return refuse_all(
                from_core,
                lines,
                log,
                &format!("the upstream SSE stream answered HTTP {}", r.status),
            )
            .await;
        }
        Err(e) => {
            return refuse_all(
                from_core,
                lines,
                log,
                &format!("the upstream SSE stream cannot be opened: {}", e.describe()),
            )
            .await;
        }
    };
    let mut body = resp.body;
    let mut events = Events::default();
    let mut endpoint = None;
    // The endpoint first; messages before it are kept.
    let mut early = Vec::new();
    while endpoint.is_none() {
        let Some(Ok(chunk)) = body.chunk().await else {
            return refuse_all(
                from_core,
                lines,
                log,
                "the upstream SSE stream ended before naming its endpoint",
            )
            .await;
        };
        for (event, data) in events.feed(&chunk) {
            if event == "endpoint" && endpoint.is_none() {
                match remote.url.join(data.trim()) {
                    Ok(u) if u.origin() == remote.url.origin() => match target(&u) {
                        Some(t) => endpoint = Some(t),
                        None => {
                            return refuse_all(from_core, lines, log, &format!(
                                "the upstream named an endpoint that is no request target ({data:?}); refused"
                            )).await;
                        }
                    },
                    _ => {
                        return refuse_all(from_core, lines, log, &format!(
                            "the upstream named an endpoint on another origin ({data:?}); refused"
                        )).await;
                    }
                }
            } else {
                early.push(data);
            }
        }
        if events.overflowed {
            return refuse_all(
                from_core,
                lines,
                log,
                "the upstream sent an SSE event over the size limit",
            )
            .await;
        }
    }
    let Some(endpoint) = endpoint else { return };
    for data in early {
        if let Ok(v) = serde_json::from_str::<Value>(&data) {
            let _ = lines.send(v).await;
        }
    }
    let down = {
        let lines = lines.clone();
        let log = Arc::clone(&log);
        async move {
            while let Some(chunk) = body.chunk().await {
                let Ok(chunk) = chunk else { break };
                for (event, data) in events.feed(&chunk) {
                    if event.is_empty() || event == "message" {
                        let Ok(v) = serde_json::from_str::<Value>(&data) else {
                            continue;
                        };
                        if !lines.send(v).await {
                            return;
                        }
                    }
                }
                if events.overflowed {
                    log("the upstream sent an SSE event over the size limit; stream dropped");
                    return;
                }
            }
            log("the upstream SSE stream ended");
        }
    };
    let up = async {
        let mut tasks = tokio::task::JoinSet::new();
        let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
        loop {
            while tasks.try_join_next().is_some() {}
            let Some(msg) = from_core.recv().await else {
                break;
            };
            let Ok(kind) = jsonrpc::classify(&msg) else {
                continue;
            };
            let id = match kind {
                Kind::Request { id, .. } => Some(id),
                _ => None,
            };
            let (fail_lines, fail_log) = (lines.clone(), Arc::clone(&log));
            let fail = move |why: String| {
                let lines = fail_lines.clone();
                let log = Arc::clone(&fail_log);
                let id = id.clone();
                async move {
                    log(&why);
                    if let Some(id) = id {
                        let e = jsonrpc::error(&id, jsonrpc::INTERNAL_ERROR, &why, None);
                        let _ = lines.send(e).await;
                    }
                }
            };
            let Ok(permit) = Arc::clone(&in_flight).try_acquire_owned() else {
                fail(format!(
                    "more than {MAX_IN_FLIGHT} requests in progress upstream"
                ))
                .await;
                continue;
            };
            let client = remote.client.clone();
            let endpoint = endpoint.clone();
            let body = jsonrpc::to_bytes(&msg);
            tasks.spawn(async move {
                let _permit = permit;
                let sent = client
                    .send(
                        Method::POST,
                        &endpoint,
                        vec![(CONTENT_TYPE, JSON)],
                        body.into(),
                    )
                    .await;
                match sent {
                    // The answer comes on the stream; the body is read so the connection
                    // can serve the next message.
                    Ok(r) if r.status.is_success() => drop(read_capped(r.body, 4096).await),
                    Ok(r) => fail(format!("the upstream server answered HTTP {}", r.status)).await,
                    Err(e) => {
                        fail(format!(
                            "the upstream server cannot be reached: {}",
                            e.describe()
                        ))
                        .await
                    }
                }
            });
        }
        tasks.abort_all();
    };
    tokio::select! {
        _ = down => {}
        _ = up => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_split_anywhere() {
        let text = b"id: 1\nevent: message\ndata: {\"a\":1}\n\n: comment\n\ndata: {\"b\":\ndata: 2}\r\n\r\n";
        for cut in 0..text.len() {
            let mut e = Events::default();
            let mut got = e.feed(&text[..cut]);
            got.extend(e.feed(&text[cut..]));
            let got: Vec<(&str, &str)> =
                got.iter().map(|(e, d)| (e.as_str(), d.as_str())).collect();
            assert_eq!(
                got,
                vec![("message", "{\"a\":1}"), ("", "{\"b\":\n2}")],
                "cut {cut}"
            );
        }
    }

    #[test]
    fn sse_ids_and_retry_are_kept_for_resuming() {
        let mut e = Events::default();
        assert!(e.feed(b"id: event-1\nretry: 500\ndata: \n\n").is_empty());
        assert_eq!(e.last_id.as_deref(), Some("event-1"));
        assert_eq!(e.retry_ms, Some(500));
        e.feed(b"retry: soon\nid: a\0b\n\n");
        assert_eq!(
            (e.last_id.as_deref(), e.retry_ms),
            (Some("event-1"), Some(500))
        );
        e.feed(format!("id: {}\n\n", "x".repeat(MAX_EVENT_ID + 1)).as_bytes());
        assert_eq!(e.last_id.as_deref(), Some("event-1"));
    }

    #[test]
    fn internal_upstreams_need_permission_and_metadata_never() {
        let t = Duration::from_secs(5);
        assert!(matches!(
            Remote::new("http://127.0.0.1:9/mcp", false, t),
            Err(RemoteError::Internal(..))
        ));
        assert!(Remote::new("http://127.0.0.1:9/mcp", true, t).is_ok());
        assert!(matches!(
            Remote::new("http://169.254.169.254/mcp", true, t),
            Err(RemoteError::Internal(..))
        ));
        assert!(matches!(
            Remote::new("http://[::ffff:10.0.0.1]/mcp", false, t),
            Err(RemoteError::Internal(..))
        ));
        assert!(matches!(
            Remote::new("file:///etc/passwd", true, t),
            Err(RemoteError::Url(_))
        ));
    }
}
