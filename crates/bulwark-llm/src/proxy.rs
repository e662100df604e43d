//! The HTTP side: requests in from agents, out to the model API, answers back.
//!
//! For `POST …/chat/completions`, `…/responses` and `…/messages` the proxy reads the
//! request (bounded), derives taint from its history, adds the safety hint when tainted,
//! forwards it, and judges every tool call in the answer — JSON or streamed. Every other
//! request passes through untouched, streamed both ways.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bulwark_engine::bounded::BoundedMap;
use bulwark_engine::{Principal, Taint, TaintSet};
use bulwark_gate::Gate;
use futures_util::StreamExt;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::api::Api;
use crate::approval;
use crate::judge::{Context, Judge, ResultCache};
use crate::sse;

/// Largest request body read from a client (default).
pub const MAX_BODY: usize = 32 * 1024 * 1024;
/// Largest JSON answer read from the upstream.
pub const MAX_ANSWER: usize = 64 * 1024 * 1024;
/// Largest single event in an upstream stream.
pub const MAX_EVENT: usize = 4 * 1024 * 1024;

/// Connections at once, by default (the MCP listener's bound).
pub const MAX_CONNECTIONS: usize = 512;
/// How long a request body may take to arrive.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of whole (not streamed) answers held at once — read from the upstream and not
/// yet written to their clients. A request that would go over waits for room, for at most
/// the request timeout; so answers nobody reads cannot fill memory, however many.
pub const ANSWER_BUDGET: usize = 64 * 1024 * 1024;

/// Most Responses API response ids whose taint is remembered.
pub const MAX_RESPONSES: usize = 10_000;
/// The header naming a session that keeps taint across requests.
pub const SESSION_HEADER: &str = "x-bulwark-session";

/// How the proxy is set up.
pub struct Config {
    /// The upstream base URL; request paths are appended to it.
    pub upstream: url::Url,
    /// Largest request body.
    pub max_body: usize,
    /// A key the operator sets for the upstream, replacing the client's: the header it
    /// goes in (`authorization` gets `Bearer KEY`) and the key.
    pub upstream_key: Option<(HeaderName, String)>,
    /// The key approval tokens are signed with; `None` refuses every token.
    pub approval_key: Option<[u8; 32]>,
    /// Host names (without port) clients may use; `None` accepts any. A proxy on loopback
    /// accepts only loopback names, so a web page cannot reach it by DNS rebinding and
    /// spend the operator's key.
    pub allowed_hosts: Option<Vec<String>>,
    /// Decide calls the matrix revokes once more by where their consequential arguments
    /// came from ([`crate::provenance`]). Off unless asked for: a client that puts the
    /// calls it wants in the user's message (a test harness, a scripted agent) would have
    /// every value count as the user's.
    pub provenance: bool,
}

/// The Host names a loopback proxy accepts.
pub const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "[::1]", "::1"];

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The HTTP client could not be built.
    #[error("cannot build the upstream client: {0}")]
    Client(String),
    /// The upstream URL is not http(s).
    #[error("the upstream must be an http:// or https:// URL, not {0:?}")]
    Scheme(String),
}

/// The proxy.
pub struct Proxy {
    gate: Arc<Gate>,
    client: reqwest::Client,
    cfg: Config,
    results: Arc<ResultCache>,
    responses: Arc<Mutex<BoundedMap<String, TaintSet>>>,
    /// Room for whole answers ([`ANSWER_BUDGET`] bytes).
    answers: Arc<tokio::sync::Semaphore>,
    /// The listener's bounds.
    listen: bulwark_listen::http::HttpLimits,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
];

impl Proxy {
    /// A proxy deciding through `gate` (its audit log, desk, fleet, used-token ledger).
    pub fn new(gate: Arc<Gate>, cfg: Config) -> Result<Proxy, ProxyError> {
        if !matches!(cfg.upstream.scheme(), "http" | "https") {
            return Err(ProxyError::Scheme(cfg.upstream.scheme().to_string()));
        }
        // One ring provider per process; a second install is refused, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| ProxyError::Client(e.to_string()))?;
        Ok(Proxy {
            gate,
            client,
            cfg,
            results: Arc::new(ResultCache::default()),
            responses: Arc::new(Mutex::new(BoundedMap::new(MAX_RESPONSES))),
            answers: Arc::new(tokio::sync::Semaphore::new(ANSWER_BUDGET)),
            listen: bulwark_listen::http::HttpLimits::for_max(MAX_CONNECTIONS),
        })
    }

    /// The same proxy with other listener bounds (connections, head and write deadlines).
    pub fn with_listen_limits(mut self, limits: bulwark_listen::http::HttpLimits) -> Proxy {
        self.listen = limits;
        self
    }

    /// The router serving every path.
    pub fn router(self: Arc<Self>) -> axum::Router {
        axum::Router::new().fallback(handle).with_state(self)
    }

    /// Serves on `listener` until `shutdown` completes, bounded as the MCP listener is
    /// ([`bulwark_listen::http`]: connections, per client address, idle ones giving way,
    /// head and write deadlines; TCP_NODELAY, without which a streamed answer's small
    /// writes wait on the client's delayed ACK).
    pub async fn serve(
        self: Arc<Self>,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let limits = self.listen.clone();
        bulwark_listen::http::serve(listener, self.router(), limits, shutdown, || {}).await;
        Ok(())
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(self.gate.engine().policy().llm.request_timeout_ms)
    }

    fn upstream_url(&self, uri: &axum::http::Uri) -> String {
        let base = self.cfg.upstream.as_str().trim_end_matches('/');
        let pq = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        format!("{base}{pq}")
    }

    /// The headers sent upstream: the client's, less hop-by-hop ones and Bulwark's own,
    /// with the operator's key in place of the client's when one is set.
    fn upstream_headers(&self, from: &HeaderMap, identity: bool) -> reqwest::header::HeaderMap {
        let mut h = reqwest::header::HeaderMap::new();
        for (name, value) in from {
            let n = name.as_str();
            if HOP_BY_HOP.contains(&n)
                || n.starts_with("x-bulwark-")
                || n == "x-ratchet-approve"
                || (identity && n == "accept-encoding")
                || (self.cfg.upstream_key.is_some() && (n == "authorization" || n == "x-api-key"))
            {
                continue;
            }
            h.append(name.clone(), value.clone());
        }
        if identity {
            // The answer is read and judged: it must come uncompressed.
            h.insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_static("identity"),
            );
        }
        if let Some((name, key)) = &self.cfg.upstream_key {
            let value = if name == header::AUTHORIZATION {
                format!("Bearer {key}")
            } else {
                key.clone()
            };
            if let Ok(v) = HeaderValue::from_str(&value) {
                h.insert(name.clone(), v);
            }
        }
        h
    }

    async fn pass_through(&self, req: Request) -> Response {
        let (parts, body) = req.into_parts();
        let url = self.upstream_url(&parts.uri);
        let headers = self.upstream_headers(&parts.headers, false);
        let send = self
            .client
            .request(parts.method, url)
            .headers(headers)
            .body(reqwest::Body::wrap_stream(body.into_data_stream()))
            .send();
        match tokio::time::timeout(self.timeout(), send).await {
            Ok(Ok(resp)) => relay(resp),
            Ok(Err(e)) => plain_error(
                StatusCode::BAD_GATEWAY,
                &format!("the upstream cannot be reached: {}", short(&e)),
            ),
            Err(_) => plain_error(
                StatusCode::GATEWAY_TIMEOUT,
                "the upstream did not answer in time",
            ),
        }
    }

    fn principal(&self, h: &HeaderMap) -> Principal {
        if self.cfg.upstream_key.is_some() {
            return Principal::default();
        }
        let cred = h
            .get(header::AUTHORIZATION)
            .or_else(|| h.get("x-api-key"))
            .map(|v| v.as_bytes());
        Principal {
            // A digest, never the key: it names whose approvals apply, and reaches the log.
            id: cred.map(|c| {
                let d = Sha256::digest(c);
                format!(
                    "key:{}",
                    d.iter()
                        .take(8)
                        .map(|b| format!("{b:02x}"))
                        .collect::<String>()
                )
            }),
            verified: false,
        }
    }

    async fn model_call(self: Arc<Self>, api: Api, req: Request) -> Response {
        let (parts, body) = req.into_parts();
        let too_big = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .is_some_and(|n| n > self.cfg.max_body as u64);
        if too_big {
            return api_error(
                api,
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("the request body is over {} bytes", self.cfg.max_body),
            );
        }
        let read =
            tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, self.cfg.max_body));
        let Ok(read) = read.await else {
            return api_error(
                api,
                StatusCode::REQUEST_TIMEOUT,
                &format!(
                    "the request body did not arrive within {} s",
                    BODY_TIMEOUT.as_secs()
                ),
            );
        };
        let bytes = match read {
            Ok(b) => b,
            Err(e) => {
                let over = std::error::Error::source(&e)
                    .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
                return if over {
                    api_error(
                        api,
                        StatusCode::PAYLOAD_TOO_LARGE,
                        &format!("the request body is over {} bytes", self.cfg.max_body),
                    )
                } else {
                    api_error(
                        api,
                        StatusCode::BAD_REQUEST,
                        &format!("the request body could not be read: {e}"),
                    )
                };
            }
        };
        let mut body: Value = match serde_json::from_slice(&bytes) {
            // A background response is fetched later by id, past the proxy's judgement.
            Ok(v) if api == Api::Responses && v.get("background") == Some(&Value::Bool(true)) => {
                return api_error(
                    api,
                    StatusCode::BAD_REQUEST,
                    "background responses are not supported through the proxy: their tool calls could not be judged",
                );
            }
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                return api_error(
                    api,
                    StatusCode::BAD_REQUEST,
                    "the request body must be a JSON object",
                );
            }
            Err(e) => {
                return api_error(
                    api,
                    StatusCode::BAD_REQUEST,
                    &format!("the request body is not valid JSON: {e}"),
                );
            }
        };
        let session = match parts.headers.get(SESSION_HEADER).map(|v| v.to_str()) {
            None => None,
            Some(Ok(s))
                if !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_graphic()) =>
            {
                Some(s.to_string())
            }
            Some(_) => {
                return api_error(
                    api,
                    StatusCode::BAD_REQUEST,
                    "X-Bulwark-Session must be 1-128 visible ASCII characters",
                );
            }
        };
        let now_s = self.gate.clock().unix_s();
        let (tokens, refused) = match &self.cfg.approval_key {
            Some(key) => {
                let values = parts
                    .headers
                    .get_all("x-bulwark-approve")
                    .iter()
                    .chain(parts.headers.get_all("x-ratchet-approve").iter())
                    .filter_map(|v| v.to_str().ok());
                approval::from_headers(key, values, now_s, self.gate.store())
            }
            None => (Vec::new(), Vec::new()),
        };
        let results = match api.results(&body) {
            Ok(r) => r,
            Err(e) => {
                return api_error(
                    api,
                    StatusCode::BAD_REQUEST,
                    &format!("the request's history cannot be read: {e}"),
                );
            }
        };
        let mut judge = Judge::new(
            Arc::clone(&self.gate),
            Context {
                session: session.clone(),
                principal: self.principal(&parts.headers),
                tokens,
                cache: Some(Arc::clone(&self.results)),
                definitions: crate::tools::definitions(&body),
                provenance: self.cfg.provenance,
            },
        );
        judge.traced(crate::trace::Trace::start(
            &self.gate,
            api.as_str(),
            parts.uri.path(),
            parts
                .headers
                .get("traceparent")
                .and_then(|v| v.to_str().ok()),
            &body,
            session.as_deref(),
        ));
        judge.hear_user(crate::provenance::user_texts(&body));

        judge.absorb(&results);
        if api == Api::Responses
            && let Some(prev) = body.get("previous_response_id").and_then(Value::as_str)
        {
            // A chain this proxy did not see (another route, or before a restart) may
            // have read anything.
            let inherited = lock(&self.responses).peek(prev).copied();
            judge.inherit(inherited.unwrap_or_else(|| {
                [Taint::PrivateData, Taint::UntrustedInput]
                    .into_iter()
                    .collect()
            }));
        }
        // A Responses conversation keeps its history on the provider's side too: its
        // taint is kept under its id, and one this proxy has not seen may hold anything.
        let conversation = (api == Api::Responses)
            .then(|| body.get("conversation"))
            .flatten()
            .and_then(|c| c.as_str().or_else(|| c.get("id").and_then(Value::as_str)))
            .map(|c| format!("conversation:{c}"));
        if let Some(c) = &conversation {
            let inherited = lock(&self.responses).peek(c).copied();
            judge.inherit(inherited.unwrap_or_else(|| {
                [Taint::PrivateData, Taint::UntrustedInput]
                    .into_iter()
                    .collect()
            }));
        }
        let taint = judge.taint();
        let forward = if taint.is_empty() {
            bytes
        } else {
            api.inject_hint(&mut body, &self.gate.engine().policy().llm.hint);
            match encode(api, &body, "the request") {
                Ok(b) => b,
                Err(r) => return *r,
            }
        };
        let url = self.upstream_url(&parts.uri);
        let send = self
            .client
            .request(Method::POST, url)
            .headers(self.upstream_headers(&parts.headers, true))
            .body(forward)
            .send();
        let resp = match tokio::time::timeout(self.timeout(), send).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                return api_error(
                    api,
                    StatusCode::BAD_GATEWAY,
                    &format!("the upstream cannot be reached: {}", short(&e)),
                );
            }
            Err(_) => {
                return api_error(
                    api,
                    StatusCode::GATEWAY_TIMEOUT,
                    "the upstream did not answer in time",
                );
            }
        };
        let mut extra = HeaderMap::new();
        if !taint.is_empty()
            && let Ok(v) = HeaderValue::from_str(
                &taint
                    .iter()
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            )
        {
            extra.insert("x-bulwark-taint", v);
        }
        if !refused.is_empty()
            && let Ok(v) = HeaderValue::from_str(&refused.join(","))
        {
            extra.insert("x-bulwark-approve-refused", v);
        }
        if !resp.status().is_success() {
            judge.trace_status(resp.status().as_u16());
            // The API's own errors (429s with retry hints included) reach the SDK as sent.
            return with_headers(relay(resp), extra);
        }
        // The answer is judged, so it must be readable: an encoding it was not asked for
        // is refused rather than passed on unread.
        let encoded = resp
            .headers()
            .get(header::CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| !v.eq_ignore_ascii_case("identity"));
        if encoded {
            return api_error(
                api,
                StatusCode::BAD_GATEWAY,
                "the upstream answered with a content encoding the proxy cannot judge",
            );
        }
        let event_stream = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if event_stream {
            return with_headers(self.streamed(api, resp, judge, conversation), extra);
        }
        self.whole(api, resp, judge, extra, conversation).await
    }

    async fn whole(
        &self,
        api: Api,
        resp: reqwest::Response,
        mut judge: Judge,
        extra: HeaderMap,
        conversation: Option<String>,
    ) -> Response {
        let status = resp.status();
        let headers = resp.headers().clone();
        let (bytes, room) =
            match read_bounded(resp, MAX_ANSWER, self.timeout(), &self.answers).await {
                Ok(b) => b,
                Err(e) => return api_error(api, StatusCode::BAD_GATEWAY, &e),
            };
        let mut body: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            // An answer that cannot be read cannot be judged: it is not passed on.
            Err(e) => {
                return api_error(
                    api,
                    StatusCode::BAD_GATEWAY,
                    &format!("the upstream's answer is not JSON: {e}"),
                );
            }
        };
        let changed = api.judge_answer(&mut body, &mut judge);
        if api == Api::Responses {
            let taint = judge.taint_after();
            let mut remembered = lock(&self.responses);
            if let Some(id) = body.get("id").and_then(Value::as_str) {
                remembered.insert(id.to_string(), taint);
            }
            if let Some(c) = conversation {
                remembered.insert(c, taint);
            }
        }
        let out = if changed {
            match encode(api, &body, "the answer") {
                Ok(b) => b,
                Err(r) => return *r,
            }
        } else {
            bytes
        };
        drop(body);
        // The answer keeps its room until the body is done with: written, or dropped with
        // its connection (which a client that does not read loses to the write deadline).
        let held =
            futures_util::stream::unfold((Some(out), Some(room)), |(data, room)| async move {
                match data {
                    Some(d) => Some((Ok::<Bytes, std::io::Error>(d), (None, room))),
                    None => {
                        drop(room);
                        None
                    }
                }
            });
        let mut r = Response::new(Body::from_stream(held));
        *r.status_mut() = status;
        copy_headers(&headers, r.headers_mut());
        with_headers(r, extra)
    }

    fn streamed(
        &self,
        api: Api,
        resp: reqwest::Response,
        mut judge: Judge,
        conversation: Option<String>,
    ) -> Response {
        let status = resp.status();
        let headers = resp.headers().clone();
        let idle = self.timeout();
        let responses = Arc::clone(&self.responses);
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(32);
        tokio::spawn(async move {
            let mut upstream = resp.bytes_stream();
            let mut parser = sse::Parser::new(MAX_EVENT);
            let mut t = api.stream();
            let mut response_id: Option<String> = None;
            loop {
                let mut out = Vec::new();
                let mut last = false;
                match tokio::time::timeout(idle, upstream.next()).await {
                    Ok(Some(Ok(chunk))) => match parser.push(&chunk) {
                        Ok(events) => {
                            for ev in events {
                                if api == Api::Responses
                                    && response_id.is_none()
                                    && ev.data.contains("\"response.created\"")
                                {
                                    response_id = serde_json::from_str::<Value>(&ev.data)
                                        .ok()
                                        .and_then(|v| {
                                            v.pointer("/response/id")
                                                .and_then(Value::as_str)
                                                .map(str::to_string)
                                        });
                                }
                                let completes = api == Api::Responses
                                    && (ev.data.contains("\"response.completed\"")
                                        || ev.data.contains("\"response.incomplete\""));
                                if let Err(e) = t.event(ev, &mut judge, &mut out) {
                                    out.extend_from_slice(&api.error_event(&e.to_string()).raw);
                                    last = true;
                                    break;
                                }
                                // Saved before the client has the answer, so a follow-up
                                // that chains to it cannot arrive first.
                                if completes && let Some(c) = &conversation {
                                    lock(&responses).insert(c.clone(), judge.taint_after());
                                }
                                if completes && let Some(id) = &response_id {
                                    lock(&responses).insert(id.clone(), judge.taint_after());
                                }
                            }
                        }
                        Err(e) => {
                            t.end(&mut judge, &mut out);
                            out.extend_from_slice(&api.error_event(&e.to_string()).raw);
                            last = true;
                        }
                    },
                    Ok(Some(Err(e))) => {
                        t.end(&mut judge, &mut out);
                        out.extend_from_slice(
                            &api.error_event(&format!("the upstream stream failed: {}", short(&e)))
                                .raw,
                        );
                        last = true;
                    }
                    Ok(None) => {
                        if let Some(ev) = parser.finish()
                            && let Err(e) = t.event(ev, &mut judge, &mut out)
                        {
                            out.extend_from_slice(&api.error_event(&e.to_string()).raw);
                        }
                        t.end(&mut judge, &mut out);
                        last = true;
                    }
                    Err(_) => {
                        t.end(&mut judge, &mut out);
                        out.extend_from_slice(&api.error_event("the upstream stream stalled").raw);
                        last = true;
                    }
                }
                if !out.is_empty() && tx.send(Ok(Bytes::from(out))).await.is_err() {
                    // The client left; dropping the upstream stream cancels the request.
                    break;
                }
                if last {
                    break;
                }
            }
            if let Some(id) = response_id {
                let taint = judge.taint_after();
                lock(&responses).insert(id, taint);
            }
        });
        let body = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        });
        let mut r = Response::new(Body::from_stream(body));
        *r.status_mut() = status;
        copy_headers(&headers, r.headers_mut());
        r.headers_mut()
            .insert("x-accel-buffering", HeaderValue::from_static("no"));
        r
    }
}

async fn handle(State(p): State<Arc<Proxy>>, req: Request) -> Response {
    // A body coded with anything but plain chunking (`gzip, chunked`) is not what the
    // proxy reads and judges, and would be forwarded with its coding stripped off as a
    // hop-by-hop header: refused, as the MCP listener refuses what it cannot read.
    if let Some(te) = unsupported_transfer_coding(req.headers()) {
        return plain_error(
            StatusCode::NOT_IMPLEMENTED,
            &format!(
                "Transfer-Encoding {te:?} is not accepted: send the body plain or only chunked"
            ),
        );
    }
    if let Some(allowed) = &p.cfg.allowed_hosts {
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let name = match host.rsplit_once(':') {
            Some((n, port)) if port.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => host,
        };
        if !allowed.iter().any(|a| a.eq_ignore_ascii_case(name)) {
            return plain_error(
                StatusCode::FORBIDDEN,
                &format!("Host {host:?} is not one this proxy serves"),
            );
        }
        // A web page may not use the proxy (and the operator's key) from the user's
        // browser: its requests carry an Origin that is not one of ours.
        let origin = req
            .headers()
            .get(header::ORIGIN)
            .and_then(|v| v.to_str().ok());
        if let Some(o) = origin {
            let host = url::Url::parse(o)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string))
                .unwrap_or_default();
            if !allowed.iter().any(|a| a.eq_ignore_ascii_case(&host)) {
                return plain_error(
                    StatusCode::FORBIDDEN,
                    &format!("Origin {o:?} may not use this proxy"),
                );
            }
        }
        if req
            .headers()
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            == Some("cross-site")
        {
            return plain_error(
                StatusCode::FORBIDDEN,
                "cross-site requests may not use this proxy",
            );
        }
    }
    if req.method() == Method::GET && matches!(req.uri().path(), "/health" | "/bulwark/health") {
        return (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"status":"ok"}"#,
        )
            .into_response();
    }
    let api = (req.method() == Method::POST)
        .then(|| Api::for_path(req.uri().path()))
        .flatten();
    // A model call is JSON; a form or plain text is what a page can send without asking
    // first, and is refused.
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    match api {
        Some(api) if !json => api_error(
            api,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "a model call must be sent as Content-Type: application/json",
        ),
        Some(api) => p.model_call(api, req).await,
        None => p.pass_through(req).await,
    }
}

/// Reads a whole answer of at most `max` bytes, taking room for it from `budget` as it
/// arrives (waiting, within `idle`, while other answers hold it); the room comes back
/// with the answer.
async fn read_bounded(
    resp: reqwest::Response,
    max: usize,
    idle: Duration,
    budget: &Arc<tokio::sync::Semaphore>,
) -> Result<(Bytes, tokio::sync::OwnedSemaphorePermit), String> {
    let mut out = Vec::new();
    let mut s = resp.bytes_stream();
    let mut room = match budget.clone().try_acquire_many_owned(0) {
        Ok(p) => p,
        Err(_) => return Err("the proxy is shutting down".into()),
    };
    loop {
        match tokio::time::timeout(idle, s.next()).await {
            Ok(Some(Ok(chunk))) => {
                if out.len() + chunk.len() > max {
                    return Err(format!("the upstream's answer is over {max} bytes"));
                }
                // One answer alone may use the whole budget, never more.
                let want = (out.len() + chunk.len())
                    .min(ANSWER_BUDGET)
                    .saturating_sub(room.num_permits());
                if want > 0 {
                    let more =
                        tokio::time::timeout(idle, budget.clone().acquire_many_owned(want as u32))
                            .await;
                    match more {
                        Ok(Ok(p)) => room.merge(p),
                        _ => {
                            return Err(format!(
                                "the proxy holds {} MiB of answers its clients have not read; try again",
                                ANSWER_BUDGET >> 20
                            ));
                        }
                    }
                }
                out.extend_from_slice(&chunk);
            }
            Ok(Some(Err(e))) => {
                return Err(format!("the upstream's answer broke off: {}", short(&e)));
            }
            Ok(None) => return Ok((Bytes::from(out), room)),
            Err(_) => return Err("the upstream's answer stalled".into()),
        }
    }
}

fn short(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

fn copy_headers(from: &reqwest::header::HeaderMap, to: &mut HeaderMap) {
    for (name, value) in from {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            to.append(name.clone(), value.clone());
        }
    }
}

fn with_headers(mut r: Response, extra: HeaderMap) -> Response {
    r.headers_mut().extend(extra);
    r
}

fn relay(resp: reqwest::Response) -> Response {
    let status = resp.status();
    let headers = resp.headers().clone();
    let mut r = Response::new(Body::from_stream(resp.bytes_stream()));
    *r.status_mut() = status;
    copy_headers(&headers, r.headers_mut());
    r
}

/// `body` as JSON bytes, or the 500 that says `what` could not be encoded.
fn encode(api: Api, body: &Value, what: &str) -> Result<Bytes, Box<Response>> {
    serde_json::to_vec(body).map(Bytes::from).map_err(|e| {
        Box::new(api_error(
            api,
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot encode {what}: {e}"),
        ))
    })
}

fn api_error(api: Api, status: StatusCode, message: &str) -> Response {
    let body = api.error(status.as_u16(), &format!("bulwark proxy: {message}"));
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The request's `Transfer-Encoding`, when it holds any coding other than `chunked`
/// (every field line counted).
fn unsupported_transfer_coding(headers: &HeaderMap) -> Option<String> {
    let values: Vec<&HeaderValue> = headers.get_all(header::TRANSFER_ENCODING).iter().collect();
    let plain = values.iter().all(|v| {
        v.to_str().is_ok_and(|s| {
            s.split(',')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .all(|c| c.eq_ignore_ascii_case("chunked"))
        })
    });
    (!plain).then(|| {
        values
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    })
}

fn plain_error(status: StatusCode, message: &str) -> Response {
    api_error(Api::Chat, status, message)
}
