//! The HTTP/1.1 client the gateway reaches a remote MCP server with: one origin, an
//! SSRF-checked connector, a small pool of kept-alive connections.
//!
//! Connections come from the SSRF-checked connector ([`bulwark_net::connect`]): the
//! upstream's name is resolved there, every address is classified, and internal ones are
//! refused unless the operator allowed them (cloud metadata never); the connection goes to
//! a checked address, so a second resolution (DNS rebinding) cannot swap it. `https`
//! goes through rustls with the platform's roots. Redirects are never followed: an answer
//! is an answer.
//!
//! Built on hyper's connection API rather than a general-purpose client because every
//! `tools/call` crosses it: a general client re-parses the URL, runs redirect and retry
//! layers and keys a pool by origin on every request, which was a sixth of the gateway's
//! work per call (docs/benchmarks.md, session 9). This one serves a single origin, so its
//! pool is a stack of idle connections.
//!
//! Every wait is bounded: connecting by [`CONNECT_TIMEOUT`]; the answer's head and each
//! read of its body by the read timeout given to [`Client::new`]; writing a request that
//! the server stops reading by [`WRITE_STALL`] (or the read timeout, when shorter).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, Uri, header};
use bulwark_net::connect::ConnectError;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::locks::lock;

/// How long a TCP connection (and its TLS handshake) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Idle connections kept per client; more are closed when they come back.
const MAX_IDLE: usize = 32;

/// How long a connection may sit idle before it is closed rather than reused: middleboxes
/// forget quiet connections without telling either end, and a request sent on one would
/// wait out the read timeout.
const IDLE_FOR: Duration = Duration::from_secs(60);

/// How long a connection back in the pool may take to become ready for the next request.
/// Its task has only to run once; one that is still busy (writing a request the server
/// answered without reading) is closed instead.
const READY_WITHIN: Duration = Duration::from_millis(100);

/// How long writing a request may make no progress (the server not reading it) before the
/// connection is closed; shorter when the read timeout is. As long as a call may wait by
/// default (`mcp.request_timeout_secs`): a server that reads nothing for longer is not
/// going to answer in time either.
pub const WRITE_STALL: Duration = Duration::from_secs(300);

/// Header names and values, as a request carries them beyond the client's own.
pub type HeaderList = Vec<(axum::http::HeaderName, axum::http::HeaderValue)>;

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No checked address could be connected to (the SSRF-checked connector's answer:
    /// unresolved, only internal addresses, refused, or out of time).
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The TLS handshake took longer than [`CONNECT_TIMEOUT`].
    #[error("connecting to {0} timed out")]
    ConnectTimeout(String),
    /// The TLS handshake failed (an untrusted or mismatched certificate, most often).
    #[error("TLS with {host}: {source}")]
    Tls {
        /// The upstream's host.
        host: String,
        /// rustls's error.
        source: std::io::Error,
    },
    /// The HTTP exchange failed (the connection closed, a malformed answer).
    #[error("HTTP: {0}")]
    Http(#[from] hyper::Error),
    /// No answer, or no more of it, within the read timeout.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

impl ClientError {
    /// The error with its causes (a refused connection, a TLS alert), for a message to the
    /// client. Never the URL: it may carry credentials.
    pub fn describe(&self) -> String {
        let mut why = self.to_string();
        // The other variants' messages already name their cause.
        if let ClientError::Http(h) = self {
            let mut cause = std::error::Error::source(h);
            while let Some(c) = cause {
                why.push_str(": ");
                why.push_str(&c.to_string());
                cause = c.source();
            }
        }
        why
    }
}

/// An HTTP/1.1 client for one origin (cheap to clone: clones share the pool).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    /// The host as resolved and as TLS's server name (no IPv6 brackets).
    host: String,
    port: u16,
    /// The `Host` header.
    authority: HeaderValue,
    /// `Authorization: Basic` from the URL's user and password, when it has them.
    basic: Option<HeaderValue>,
    allow_internal: bool,
    tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
    read_timeout: Duration,
    /// Idle connections, and when each went idle.
    idle: Mutex<Vec<(SendRequest<Full<Bytes>>, tokio::time::Instant)>>,
}

impl Client {
    /// A client for `url`'s origin (`http` or `https`). The caller has checked the scheme
    /// and any address literal.
    pub fn new(
        url: &url::Url,
        allow_internal: bool,
        read_timeout: Duration,
    ) -> Result<Client, String> {
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_string(),
            Some(url::Host::Ipv4(a)) => a.to_string(),
            Some(url::Host::Ipv6(a)) => a.to_string(),
            None => return Err("the URL has no host".into()),
        };
        let port = url
            .port_or_known_default()
            .ok_or_else(|| "the URL has no port".to_string())?;
        let authority = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        let authority = HeaderValue::from_str(&authority).map_err(|e| e.to_string())?;
        let basic = basic_auth(url)?;
        let tls = if url.scheme() == "https" {
            use rustls_platform_verifier::BuilderVerifierExt;
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_platform_verifier()
                .map_err(|e| e.to_string())?
                .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            let name =
                rustls::pki_types::ServerName::try_from(host.clone()).map_err(|e| e.to_string())?;
            Some((tokio_rustls::TlsConnector::from(Arc::new(config)), name))
        } else {
            None
        };
        Ok(Client {
            inner: Arc::new(Inner {
                host,
                port,
                authority,
                basic,
                allow_internal,
                tls,
                read_timeout,
                idle: Mutex::new(Vec::new()),
            }),
        })
    }

    /// Sends one request to `target` (a path and query on this client's origin) and
    /// returns the answer's head; its body is read from the [`Response`].
    pub async fn send(
        &self,
        method: Method,
        target: &Uri,
        headers: HeaderList,
        body: Bytes,
    ) -> Result<Response, ClientError> {
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = method;
        *req.uri_mut() = target.clone();
        let h = req.headers_mut();
        h.insert(header::HOST, self.inner.authority.clone());
        if let Some(basic) = &self.inner.basic {
            h.insert(header::AUTHORIZATION, basic.clone());
        }
        for (name, value) in headers {
            h.append(name, value);
        }
        let timeout = self.inner.read_timeout;
        // A kept-alive connection the server has just closed takes no request: hyper hands
        // it back unsent, and it goes once more on a fresh connection.
        let mut fresh = false;
        loop {
            let pooled = if fresh { None } else { self.idle().await };
            let mut conn = match pooled {
                Some(c) => c,
                None => {
                    fresh = true;
                    self.connect().await?
                }
            };
            let sent = tokio::time::timeout(timeout, conn.try_send_request(req)).await;
            match sent {
                Err(_) => return Err(ClientError::Timeout(timeout)),
                Ok(Ok(resp)) => {
                    let (parts, incoming) = resp.into_parts();
                    let mut body = Body {
                        incoming,
                        conn: Some(conn),
                        client: Arc::clone(&self.inner),
                    };
                    body.release_if_done();
                    return Ok(Response {
                        status: parts.status,
                        headers: parts.headers,
                        body,
                    });
                }
                Ok(Err(mut e)) => match e.take_message() {
                    Some(unsent) if !fresh => {
                        req = unsent;
                        fresh = true;
                    }
                    _ => return Err(e.into_error().into()),
                },
            }
        }
    }

    /// An idle connection that is still open, not idle for too long, and ready for a
    /// request (the most recently used first).
    async fn idle(&self) -> Option<SendRequest<Full<Bytes>>> {
        loop {
            let (mut c, since) = lock(&self.inner.idle).pop()?;
            if c.is_closed() || since.elapsed() > IDLE_FOR {
                continue;
            }
            if c.is_ready() {
                return Some(c);
            }
            // Back in the pool as its answer ended: ready once its connection task has run.
            if let Ok(Ok(())) = tokio::time::timeout(READY_WITHIN, c.ready()).await {
                return Some(c);
            }
        }
    }

    /// A new connection to a checked address ([`bulwark_net::connect`]).
    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, ClientError> {
        let inner = &self.inner;
        let host = &inner.host;
        let timed_out = || ClientError::ConnectTimeout(host.clone());
        let stream =
            bulwark_net::connect::connect(host, inner.port, inner.allow_internal, CONNECT_TIMEOUT)
                .await?;
        tokio::time::timeout(CONNECT_TIMEOUT, async {
            // Requests are small and answered at once: Nagle's delay would be pure latency.
            let _ = stream.set_nodelay(true);
            let stream = WriteDeadline::new(stream, inner.read_timeout.min(WRITE_STALL));
            match &inner.tls {
                Some((tls, name)) => {
                    let stream = tls.connect(name.clone(), stream).await.map_err(|source| {
                        ClientError::Tls {
                            host: host.clone(),
                            source,
                        }
                    })?;
                    let (send, conn) =
                        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
                    tokio::spawn(conn);
                    Ok(send)
                }
                None => {
                    let (send, conn) =
                        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
                    tokio::spawn(conn);
                    Ok(send)
                }
            }
        })
        .await
        .map_err(|_| timed_out())?
    }
}

/// `Authorization: Basic` for a URL with a user (and password), as browsers and curl send
/// it: the percent-decoded `user:password`, base64-encoded. Marked sensitive, so it is never
/// logged.
fn basic_auth(url: &url::Url) -> Result<Option<HeaderValue>, String> {
    if url.username().is_empty() && url.password().is_none() {
        return Ok(None);
    }
    use base64::Engine;
    let decode = |s: &str| percent_encoding::percent_decode_str(s).collect::<Vec<u8>>();
    let mut pair = decode(url.username());
    pair.push(b':');
    pair.extend(decode(url.password().unwrap_or_default()));
    let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
    let mut value =
        HeaderValue::from_str(&format!("Basic {encoded}")).map_err(|e| e.to_string())?;
    value.set_sensitive(true);
    Ok(Some(value))
}

/// A stream whose writes may stall for at most `limit` at a time.
///
/// hyper writes a request's body from the connection's own task. A server that answers
/// without reading the body (or never answers) and keeps the connection open would hold
/// that task, the socket and the rest of the body for ever once the caller has given up;
/// a write that makes no progress for `limit` fails instead, and the connection closes.
struct WriteDeadline<S> {
    inner: S,
    limit: Duration,
    /// The deadline of the current stall; made once, re-armed for each stall.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    stalled: bool,
}

impl<S> WriteDeadline<S> {
    fn new(inner: S, limit: Duration) -> Self {
        WriteDeadline {
            inner,
            limit,
            timer: None,
            stalled: false,
        }
    }

    /// `poll` (a write or a flush) with the stall deadline around it.
    fn bounded<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: impl FnOnce(Pin<&mut S>, &mut Context<'_>) -> Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>>
    where
        S: Unpin,
    {
        if let Poll::Ready(r) = poll(Pin::new(&mut self.inner), cx) {
            self.stalled = false;
            return Poll::Ready(r);
        }
        let limit = self.limit;
        let deadline = tokio::time::Instant::now() + limit;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if !self.stalled {
            timer.as_mut().reset(deadline);
            self.stalled = true;
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the server read nothing for {limit:?}"),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteDeadline<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.bounded(cx, |s, cx| s.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.bounded(cx, |s, cx| s.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.bounded(cx, |s, cx| s.poll_flush(cx))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.bounded(cx, |s, cx| s.poll_shutdown(cx))
    }
}

/// An answer: its status and headers, and its body to read.
pub struct Response {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body, read as it arrives.
    pub body: Body,
}

impl Response {
    /// Whether the answer is an SSE stream.
    pub fn is_events(&self) -> bool {
        self.headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"))
    }
}

/// An answer's body. Read to its end, its connection goes back to the pool; dropped
/// before, the connection closes (what is left of the answer cannot be skipped safely).
pub struct Body {
    incoming: Incoming,
    conn: Option<SendRequest<Full<Bytes>>>,
    client: Arc<Inner>,
}

impl Body {
    /// The next part of the body, or `None` at its end.
    ///
    /// # Errors
    /// [`ClientError::Timeout`] when nothing arrives within the read timeout, or
    /// [`ClientError::Http`] when the connection fails; the body ends there.
    pub async fn chunk(&mut self) -> Option<Result<Bytes, ClientError>> {
        let timeout = self.client.read_timeout;
        loop {
            self.conn.as_ref()?;
            let frame = match tokio::time::timeout(timeout, self.incoming.frame()).await {
                Err(_) => return self.fail(ClientError::Timeout(timeout)),
                Ok(None) => {
                    self.release();
                    return None;
                }
                Ok(Some(Err(e))) => return self.fail(e.into()),
                Ok(Some(Ok(frame))) => frame,
            };
            self.release_if_done();
            // Trailers carry nothing the gateway reads.
            if let Ok(data) = frame.into_data()
                && !data.is_empty()
            {
                return Some(Ok(data));
            }
        }
    }

    fn fail(&mut self, e: ClientError) -> Option<Result<Bytes, ClientError>> {
        self.conn = None;
        Some(Err(e))
    }

    fn release_if_done(&mut self) {
        if hyper::body::Body::is_end_stream(&self.incoming) {
            self.release();
        }
    }

    fn release(&mut self) {
        if let Some(conn) = self.conn.take() {
            let mut idle = lock(&self.client.idle);
            if idle.len() < MAX_IDLE && !conn.is_closed() {
                idle.push((conn, tokio::time::Instant::now()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A loopback server answering each request head with `answer` (and closing the
    /// connection after it when `close_after_each`); the connections it accepted, counted,
    /// and the request heads it read.
    async fn server_heads(
        answer: &'static [u8],
        close_after_each: bool,
    ) -> (url::Url, Arc<AtomicUsize>, Arc<Mutex<Vec<String>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url =
            url::Url::parse(&format!("http://{}/mcp", listener.local_addr().unwrap())).unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&accepted);
        let heads = Arc::new(Mutex::new(Vec::new()));
        let read = Arc::clone(&heads);
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let read = Arc::clone(&read);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 1024];
                    loop {
                        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                            match s.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        lock(&read).push(String::from_utf8_lossy(&buf).to_string());
                        buf.clear();
                        if s.write_all(answer).await.is_err() || close_after_each {
                            return;
                        }
                    }
                });
            }
        });
        (url, accepted, heads)
    }

    async fn server(answer: &'static [u8], close_after_each: bool) -> (url::Url, Arc<AtomicUsize>) {
        let (url, accepted, _) = server_heads(answer, close_after_each).await;
        (url, accepted)
    }

    fn client(url: &url::Url, read_timeout: Duration) -> (Client, Uri) {
        let c = Client::new(url, true, read_timeout).unwrap();
        (c, "/mcp".parse().unwrap())
    }

    async fn get(c: &Client, target: &Uri) -> Result<Response, ClientError> {
        c.send(Method::GET, target, Vec::new(), Bytes::new()).await
    }

    async fn read_all(mut body: Body) -> Result<Vec<u8>, ClientError> {
        let mut out = Vec::new();
        while let Some(chunk) = body.chunk().await {
            out.extend_from_slice(&chunk?);
        }
        Ok(out)
    }

    const HELLO: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello";

    #[tokio::test]
    async fn a_connection_read_to_the_end_serves_the_next_request_and_an_unread_one_closes() {
        let (url, accepted) = server(HELLO, false).await;
        let (c, target) = client(&url, Duration::from_secs(5));
        for _ in 0..3 {
            let r = get(&c, &target).await.unwrap();
            assert_eq!(r.status, StatusCode::OK);
            assert_eq!(read_all(r.body).await.unwrap(), b"hello");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        // Dropped before its body was read: that connection cannot be reused.
        drop(get(&c, &target).await.unwrap());
        let r = get(&c, &target).await.unwrap();
        assert_eq!(read_all(r.body).await.unwrap(), b"hello");
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    // On one thread (as the gateway runs), the server's close is seen before the next
    // request is sent; a close racing a request already sent is an error, not retried.
    #[tokio::test(flavor = "current_thread")]
    async fn a_kept_connection_the_server_closed_is_replaced() {
        let (url, accepted) = server(HELLO, true).await;
        let (c, target) = client(&url, Duration::from_secs(5));
        for _ in 0..3 {
            let r = get(&c, &target).await.unwrap();
            assert_eq!(read_all(r.body).await.unwrap(), b"hello");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn an_answer_that_stops_coming_times_out() {
        // The head, and 2 of the 10 bytes promised.
        let (url, _) = server(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhe", false).await;
        let (c, target) = client(&url, Duration::from_millis(200));
        let r = get(&c, &target).await.unwrap();
        assert!(matches!(
            read_all(r.body).await,
            Err(ClientError::Timeout(_))
        ));
        // No head at all.
        let (url, _) = server(b"", false).await;
        let (c, target) = client(&url, Duration::from_millis(200));
        assert!(matches!(
            get(&c, &target).await,
            Err(ClientError::Timeout(_))
        ));
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_an_internal_address_is_refused_unless_allowed() {
        let (url, accepted) = server(HELLO, false).await;
        let port = url.port().unwrap();
        let named = url::Url::parse(&format!("http://localhost:{port}/mcp")).unwrap();
        let target: Uri = "/mcp".parse().unwrap();
        let refused = Client::new(&named, false, Duration::from_secs(5)).unwrap();
        let e = get(&refused, &target).await.err().unwrap();
        assert!(
            matches!(e, ClientError::Connect(ConnectError::Refused(_))),
            "{e}"
        );
        assert!(e.to_string().contains("may not connect"), "{e}");
        assert_eq!(accepted.load(Ordering::SeqCst), 0);
        let allowed = Client::new(&named, true, Duration::from_secs(5)).unwrap();
        let r = get(&allowed, &target).await.unwrap();
        assert_eq!(read_all(r.body).await.unwrap(), b"hello");
    }

    #[tokio::test]
    async fn a_user_and_password_in_the_url_are_sent_as_basic_auth_and_nothing_else_is() {
        let (url, _, heads) = server_heads(HELLO, false).await;
        let port = url.port().unwrap();
        let with = url::Url::parse(&format!("http://agent:s%40cret@127.0.0.1:{port}/mcp")).unwrap();
        let target: Uri = "/mcp".parse().unwrap();
        for u in [&with, &url] {
            let c = Client::new(u, true, Duration::from_secs(5)).unwrap();
            let r = c
                .send(Method::GET, &target, Vec::new(), Bytes::new())
                .await
                .unwrap();
            drop(r);
        }
        let heads = lock(&heads).clone();
        assert!(heads[0].starts_with("GET /mcp HTTP/1.1\r\n"), "{heads:?}");
        // base64("agent:s@cret")
        assert!(
            heads[0].contains("authorization: Basic YWdlbnQ6c0BjcmV0\r\n"),
            "{heads:?}"
        );
        assert!(
            !heads[1].to_lowercase().contains("authorization"),
            "{heads:?}"
        );
    }

    #[tokio::test]
    async fn a_server_that_answers_without_reading_the_body_does_not_hold_the_connection() {
        const BODY: usize = 64 << 20;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url =
            url::Url::parse(&format!("http://{}/mcp", listener.local_addr().unwrap())).unwrap();
        let (seen, outcome) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                s.read_exact(&mut byte).await.unwrap();
                head.push(byte[0]);
            }
            s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
                .await
                .unwrap();
            // Reads nothing for a while, keeping the connection open; then drains it.
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let mut read = 0usize;
            let mut chunk = vec![0u8; 1 << 16];
            let ended = tokio::time::timeout(Duration::from_secs(10), async {
                loop {
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => read += n,
                    }
                }
            })
            .await
            .is_ok();
            let _ = seen.send((ended, read));
        });
        let (c, target) = client(&url, Duration::from_millis(300));
        let answer = c
            .send(
                Method::POST,
                &target,
                Vec::new(),
                Bytes::from(vec![b' '; BODY]),
            )
            .await
            .unwrap();
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(read_all(answer.body).await.unwrap(), b"{}");
        let (ended, read) = outcome.await.unwrap();
        assert!(ended, "the client kept the connection open");
        assert!(
            read < BODY,
            "the whole body went, {read} bytes: nothing gave up"
        );
    }
}
