//! OpenTelemetry traces over OTLP/HTTP with the JSON encoding: a span per MCP request a front
//! decides, with the MCP semantic-convention attributes (`mcp.method.name`,
//! `mcp.session.id`, `jsonrpc.request.id`, `gen_ai.tool.name`, …) and Bulwark's decision as
//! `bulwark.*` attributes, in the trace the caller named (W3C `traceparent`, from the
//! request's `params._meta` or the HTTP header).
//!
//! **Key design decision: OTLP/HTTP JSON written here, not the `opentelemetry` crates.** The
//! spans Bulwark emits are few and flat (one per request, a dozen attributes), and the OTLP
//! JSON mapping of a span is a small, stable document; the `opentelemetry` +
//! `opentelemetry-otlp` stack would bring its SDK, batch processor and (for gRPC) `tonic` and
//! `prost` into every front's build for that. Encoding is `serde_json`, which every crate
//! here already uses, and export is one HTTP/1.1 `POST` per batch on a plain socket from the
//! exporter's own thread — so neither the decide path nor a front's runtime ever waits on
//! the collector. Collectors take OTLP/HTTP JSON at `/v1/traces` (port 4318); the endpoint is
//! `http://` (a local collector or agent, which forwards over TLS where it must).
//!
//! **Never blocks a decision.** [`Exporter::export`] puts a finished span on a bounded queue
//! with `try_send`: a full queue (a collector slow or away) drops the span and counts it
//! ([`Exporter::dropped`]). A batch the collector refuses or that times out is dropped and
//! counted too; the thread waits before the next attempt, so a collector away costs one
//! connect timeout per back-off, on the exporter's thread only.
//!
//! Attribute names follow the OpenTelemetry semantic conventions for MCP (status:
//! Development, <https://opentelemetry.io/docs/specs/semconv/gen-ai/mcp/>): span name
//! `{mcp.method.name} {target}`, kind SERVER, `mcp.method.name`, `mcp.session.id`,
//! `mcp.protocol.version`, `jsonrpc.request.id`, `gen_ai.tool.name`,
//! `gen_ai.operation.name` = `execute_tool`, `network.transport`, `error.type`.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// Spans waiting at most by default.
pub const QUEUE: usize = 4096;
/// Spans per export request at most.
pub const BATCH: usize = 512;
/// How long a finished span may wait for companions before its batch is sent.
pub const FLUSH: Duration = Duration::from_secs(1);
/// Longest wait to connect, send or read one export.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// Wait after a failed export before the next attempt.
pub const BACKOFF: Duration = Duration::from_secs(2);
/// Attribute strings longer than this are cut (a reason, a tool name chosen by a server).
pub const MAX_ATTR: usize = 1024;

/// `url` with any `user:password@` taken out, for error messages.
fn without_userinfo(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) if scheme.is_empty() => format!("<redacted>@{}", &rest[at + 1..]),
        Some(at) => format!("{scheme}://<redacted>@{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// Why an exporter could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// The endpoint is not an `http://host:port/path` URL.
    #[error("bad OTLP endpoint {0:?}: {1}")]
    Endpoint(String, &'static str),
    /// The exporter's thread could not start.
    #[error("cannot start the OTLP exporter: {0}")]
    Thread(std::io::Error),
}

/// A W3C trace context (`traceparent`): the caller's trace and span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceContext {
    /// The trace.
    pub trace_id: [u8; 16],
    /// The caller's span, the parent of ours.
    pub span_id: [u8; 8],
    /// The caller's sampled flag.
    pub sampled: bool,
}

fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != N * 2 || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl TraceContext {
    /// Parses a `traceparent` value (`00-TRACEID-SPANID-FLAGS`, lower-case hex, as the W3C
    /// Trace Context recommendation writes it). Anything else — another version's layout
    /// we cannot read, an all-zero id, upper case — is `None`: the span starts a new trace.
    pub fn parse(s: &str) -> Option<TraceContext> {
        let mut parts = s.trim().split('-');
        let version = parts.next()?;
        let trace = parts.next()?;
        let span = parts.next()?;
        let flags = parts.next()?;
        // Version 00 has exactly four fields; a later version may append more.
        if version == "ff" || unhex::<1>(version).is_none() {
            return None;
        }
        if version == "00" && parts.next().is_some() {
            return None;
        }
        let trace_id = unhex::<16>(trace)?;
        let span_id = unhex::<8>(span)?;
        let flags = unhex::<1>(flags)?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(TraceContext {
            trace_id,
            span_id,
            sampled: flags[0] & 1 == 1,
        })
    }

    /// The `traceparent` value naming `span` in this trace.
    pub fn header(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            hex(&self.trace_id),
            hex(&self.span_id),
            u8::from(self.sampled)
        )
    }
}

/// An attribute's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    /// A string (cut at [`MAX_ATTR`] bytes).
    Str(String),
    /// An integer.
    Int(i64),
    /// A flag.
    Bool(bool),
}

/// `s` cut at [`MAX_ATTR`] bytes, on a character boundary: span names, statuses and
/// attributes carry what clients sent, and a queued span must stay small.
pub fn cut(s: &str) -> &str {
    let mut at = s.len().min(MAX_ATTR);
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    &s[..at]
}

impl From<&str> for Attr {
    fn from(s: &str) -> Attr {
        Attr::Str(cut(s).to_string())
    }
}

impl From<String> for Attr {
    fn from(s: String) -> Attr {
        Attr::from(s.as_str())
    }
}

impl From<i64> for Attr {
    fn from(v: i64) -> Attr {
        Attr::Int(v)
    }
}

impl From<bool> for Attr {
    fn from(v: bool) -> Attr {
        Attr::Bool(v)
    }
}

/// One span, built while a request is handled and exported when it ends.
#[derive(Clone, Debug)]
pub struct Span {
    /// `{mcp.method.name} {target}`.
    pub name: String,
    /// The trace (the caller's, or a new one).
    pub trace_id: [u8; 16],
    /// This span.
    pub span_id: [u8; 8],
    /// The caller's span, when the request named one.
    pub parent: Option<[u8; 8]>,
    /// Started, in nanoseconds since the Unix epoch.
    pub start_ns: u64,
    /// Ended (0 while open).
    pub end_ns: u64,
    /// Attributes, in the order set.
    pub attrs: Vec<(&'static str, Attr)>,
    /// Set when the request failed or was refused: the status message.
    pub error: Option<String>,
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Random-looking ids: not secrets (they travel in headers), only unique; a per-process
/// random key hashed with a counter and the time.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static KEY: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    let mut h = KEY
        .get_or_init(std::collections::hash_map::RandomState::new)
        .build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u64(now_ns());
    h.finish()
}

fn nonzero<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    for chunk in out.chunks_mut(8) {
        let r = random_u64().max(1).to_le_bytes();
        chunk.copy_from_slice(&r[..chunk.len()]);
    }
    out
}

impl Span {
    /// A span starting now, a child of `parent` when the request named one.
    pub fn start(name: impl Into<String>, parent: Option<&TraceContext>) -> Span {
        let mut name = name.into();
        name.truncate(cut(&name).len());
        Span {
            name,
            trace_id: parent.map_or_else(nonzero::<16>, |p| p.trace_id),
            span_id: nonzero::<8>(),
            parent: parent.map(|p| p.span_id),
            start_ns: now_ns(),
            end_ns: 0,
            attrs: Vec::new(),
            error: None,
        }
    }

    /// Sets attribute `key`.
    pub fn set(&mut self, key: &'static str, value: impl Into<Attr>) -> &mut Span {
        let value = value.into();
        match self.attrs.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.attrs.push((key, value)),
        }
        self
    }

    /// The attribute `key`, if set.
    pub fn get(&self, key: &str) -> Option<&Attr> {
        self.attrs.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// This span as the parent of what it calls.
    pub fn context(&self) -> TraceContext {
        TraceContext {
            trace_id: self.trace_id,
            span_id: self.span_id,
            sampled: true,
        }
    }

    /// Marks the span failed with `message` (cut like an attribute).
    pub fn fail(&mut self, message: &str) {
        self.error = Some(cut(message).to_string());
    }

    /// Ends the span now.
    pub fn end(&mut self) {
        self.end_ns = now_ns().max(self.start_ns);
    }

    fn to_json(&self) -> Value {
        let attrs: Vec<Value> = self.attrs.iter().map(|(k, v)| attr_json(k, v)).collect();
        let mut span = json!({
            "traceId": hex(&self.trace_id),
            "spanId": hex(&self.span_id),
            "name": self.name,
            // SPAN_KIND_SERVER: the front receives the request.
            "kind": 2,
            "startTimeUnixNano": self.start_ns.to_string(),
            "endTimeUnixNano": self.end_ns.max(self.start_ns).to_string(),
            "attributes": attrs,
        });
        if let Some(p) = self.parent {
            span["parentSpanId"] = json!(hex(&p));
        }
        if let Some(m) = &self.error {
            // STATUS_CODE_ERROR.
            span["status"] = json!({"code": 2, "message": m});
        }
        span
    }
}

fn attr_json(key: &str, v: &Attr) -> Value {
    let value = match v {
        Attr::Str(s) => json!({ "stringValue": s }),
        // OTLP JSON writes 64-bit integers as strings.
        Attr::Int(i) => json!({ "intValue": i.to_string() }),
        Attr::Bool(b) => json!({ "boolValue": b }),
    };
    json!({ "key": key, "value": value })
}

/// The OTLP/JSON `ExportTraceServiceRequest` for `spans` from `service` (its
/// `service.name`) on `instance` (its `service.instance.id`: which replica).
pub fn encode(service: &str, instance: &str, spans: &[Span]) -> Value {
    json!({
        "resourceSpans": [{
            "resource": {"attributes": [
                attr_json("service.name", &Attr::from(service)),
                attr_json("service.instance.id", &Attr::from(instance)),
            ]},
            "scopeSpans": [{
                "scope": {"name": "bulwark", "version": env!("CARGO_PKG_VERSION")},
                "spans": spans.iter().map(Span::to_json).collect::<Vec<_>>(),
            }],
        }]
    })
}

/// Where and how spans are sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `http://HOST:PORT/v1/traces`.
    pub endpoint: String,
    /// `service.name`.
    pub service: String,
    /// `service.instance.id` (default: host name and process id).
    pub instance: String,
    /// Spans waiting at most.
    pub queue: usize,
}

impl Settings {
    /// The settings the standard OpenTelemetry environment names:
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL) or `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// (its base; `/v1/traces` is added), `OTEL_SERVICE_NAME` (default `bulwark`).
    /// `None` when neither endpoint is set: no traces.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Option<Settings> {
        let set = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        let endpoint = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| {
            set("OTEL_EXPORTER_OTLP_ENDPOINT")
                .map(|b| format!("{}/v1/traces", b.trim().trim_end_matches('/')))
        })?;
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default();
        Some(Settings {
            endpoint: endpoint.trim().to_string(),
            service: set("OTEL_SERVICE_NAME").unwrap_or_else(|| "bulwark".into()),
            instance: format!("{host}:{}", std::process::id()),
            queue: QUEUE,
        })
    }
}

/// `http://host:port/path` split up.
fn parse_endpoint(url: &str) -> Result<(String, String, String), &'static str> {
    let rest = url
        .strip_prefix("http://")
        .ok_or("only http:// is supported (send to a local collector, which forwards over TLS)")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/v1/traces"),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err("expected http://HOST:PORT/PATH, without credentials");
    }
    let addr = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    Ok((addr, authority.to_string(), path.to_string()))
}

/// The exporter: a bounded queue and the thread that sends it.
pub struct Exporter {
    tx: SyncSender<Span>,
    counts: Arc<Counts>,
}

#[derive(Default)]
struct Counts {
    dropped: AtomicU64,
    exported: AtomicU64,
}

impl Exporter {
    /// Starts the exporter's thread for `settings`.
    pub fn start(settings: Settings) -> Result<Exporter, OtlpError> {
        let (addr, host, path) = parse_endpoint(&settings.endpoint)
            .map_err(|why| OtlpError::Endpoint(without_userinfo(&settings.endpoint), why))?;
        let (tx, rx) = sync_channel(settings.queue.max(1));
        let counts = Arc::new(Counts::default());
        let c = Arc::clone(&counts);
        std::thread::Builder::new()
            .name("bulwark-otlp".into())
            .spawn(move || run(rx, &c, &settings, &addr, &host, &path))
            .map_err(OtlpError::Thread)?;
        Ok(Exporter { tx, counts })
    }

    /// The shared exporter a front hands its gate, when `settings` names one.
    pub fn start_if(settings: Option<Settings>) -> Result<Option<Arc<Exporter>>, OtlpError> {
        settings
            .map(|s| Exporter::start(s).map(Arc::new))
            .transpose()
    }

    /// Queues a finished span; never waits. A full queue drops it (counted).
    pub fn export(&self, mut span: Span) {
        if span.end_ns == 0 {
            span.end();
        }
        match self.tx.try_send(span) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.counts.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Spans dropped so far: queue full, or the collector refused or did not answer.
    pub fn dropped(&self) -> u64 {
        self.counts.dropped.load(Ordering::Relaxed)
    }

    /// Spans the collector accepted so far.
    pub fn exported(&self) -> u64 {
        self.counts.exported.load(Ordering::Relaxed)
    }
}

fn run(
    rx: Receiver<Span>,
    counts: &Counts,
    settings: &Settings,
    addr: &str,
    host: &str,
    path: &str,
) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut quiet_until: Option<Instant> = None;
    loop {
        let deadline = Instant::now() + FLUSH;
        // Gather a batch: up to BATCH spans, or whatever came within FLUSH of the first.
        match rx.recv() {
            Ok(s) => batch.push(s),
            Err(_) => return,
        }
        while batch.len() < BATCH {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(s) => batch.push(s),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        let n = batch.len() as u64;
        if quiet_until.is_some_and(|t| Instant::now() < t) {
            counts.dropped.fetch_add(n, Ordering::Relaxed);
        } else {
            let body = encode(&settings.service, &settings.instance, &batch).to_string();
            match post(addr, host, path, body.as_bytes()) {
                Ok(()) => {
                    counts.exported.fetch_add(n, Ordering::Relaxed);
                    quiet_until = None;
                }
                Err(_) => {
                    counts.dropped.fetch_add(n, Ordering::Relaxed);
                    quiet_until = Some(Instant::now() + BACKOFF);
                }
            }
        }
        batch.clear();
    }
}

/// One `POST` of `body`; `Ok` on a 2xx answer.
fn post(addr: &str, host: &str, path: &str, body: &[u8]) -> std::io::Result<()> {
    let sock = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other("the endpoint's host has no address"))?;
    let mut s = TcpStream::connect_timeout(&sock, TIMEOUT)?;
    s.set_read_timeout(Some(TIMEOUT))?;
    s.set_write_timeout(Some(TIMEOUT))?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    // The status line is all that matters; the rest is read off (bounded) and dropped.
    let mut first = [0u8; 12];
    s.read_exact(&mut first)?;
    let ok = first.starts_with(b"HTTP/1.") && first[9] == b'2';
    let _ = std::io::copy(&mut (&mut s).take(64 << 10), &mut std::io::sink());
    if ok {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "the collector answered {}",
            String::from_utf8_lossy(&first)
        )))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// What a client sent is cut before it sits in the queue: the span's name (built from
    /// the method and the tool, or the model) and its status message.
    #[test]
    fn names_and_statuses_from_clients_are_cut() {
        let huge = "é".repeat(MAX_ATTR);
        let mut s = Span::start(format!("tools/call {huge}"), None);
        assert!(s.name.len() <= MAX_ATTR && s.name.starts_with("tools/call é"));
        s.fail(&huge);
        let m = s.error.as_deref().unwrap();
        assert!(m.len() <= MAX_ATTR && !m.is_empty());
    }

    #[test]
    fn an_endpoint_error_never_prints_its_password() {
        let e = Exporter::start(Settings {
            endpoint: "https://bob:hunter2@collector.example:4318/v1/traces".into(),
            service: "bulwark".into(),
            instance: "test".into(),
            queue: 8,
        });
        let msg = e.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("bad OTLP endpoint"), "{msg}");
        assert!(!msg.contains("hunter2") && !msg.contains("bob"), "{msg}");
        assert_eq!(
            without_userinfo("http://a:b@h:1/x"),
            "http://<redacted>@h:1/x"
        );
        assert_eq!(without_userinfo("http://h:1/x"), "http://h:1/x");
    }

    #[test]
    fn traceparent_parses_only_the_w3c_form() {
        let t =
            TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(hex(&t.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(hex(&t.span_id), "00f067aa0ba902b7");
        assert!(t.sampled);
        assert_eq!(
            t.header(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        for bad in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert!(TraceContext::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn a_span_encodes_as_otlp_json() {
        let parent = TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        let mut s = Span::start("tools/call deploy", parent.as_ref());
        s.set("mcp.method.name", "tools/call")
            .set("jsonrpc.request.id", "7")
            .set("bulwark.blocked", true)
            .set("bulwark.count", 3i64);
        s.error = Some("refused".into());
        s.end();
        let v = encode("bulwark", "host:1", &[s]);
        let span = &v["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        assert_eq!(span["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(span["parentSpanId"], "00f067aa0ba902b7");
        assert_eq!(span["kind"], 2);
        assert_eq!(span["status"]["code"], 2);
        assert_eq!(span["attributes"][0]["value"]["stringValue"], "tools/call");
        assert_eq!(span["attributes"][3]["value"]["intValue"], "3");
        assert!(span["startTimeUnixNano"].is_string());
        assert_eq!(
            v["resourceSpans"][0]["resource"]["attributes"][0]["key"],
            "service.name"
        );
        // Without a parent: a new trace, and no parent span.
        let fresh = Span::start("tools/list", None);
        assert_ne!(fresh.trace_id, [0; 16]);
        assert!(fresh.to_json().get("parentSpanId").is_none());
    }

    #[test]
    fn endpoints_are_plain_http_without_credentials() {
        assert_eq!(
            parse_endpoint("http://127.0.0.1:4318/v1/traces").unwrap(),
            (
                "127.0.0.1:4318".into(),
                "127.0.0.1:4318".into(),
                "/v1/traces".into()
            )
        );
        assert_eq!(
            parse_endpoint("http://collector").unwrap().0,
            "collector:80"
        );
        assert!(parse_endpoint("https://collector:4318").is_err());
        assert!(parse_endpoint("http://u:p@collector:4318/").is_err());
        let env =
            |k: &str| (k == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| String::from("http://c:4318/"));
        assert_eq!(
            Settings::from_env(env).unwrap().endpoint,
            "http://c:4318/v1/traces"
        );
        assert!(Settings::from_env(|_| None).is_none());
    }

    #[test]
    fn a_full_queue_drops_and_counts_without_waiting() {
        // A collector that accepts connections and never answers: the thread takes one
        // batch and is stuck exporting it, the queue fills, and export() still returns at
        // once, counting what it could not queue.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let e = Exporter::start(Settings {
            endpoint: format!("http://{addr}/v1/traces"),
            service: "t".into(),
            instance: "i".into(),
            queue: 4,
        })
        .unwrap();
        let started = Instant::now();
        let n = 2_000u64;
        for _ in 0..n {
            e.export(Span::start("x", None));
        }
        assert!(started.elapsed() < Duration::from_millis(500));
        // At most one batch in the thread's hands and a full queue were kept.
        assert!(
            e.dropped() >= n - BATCH as u64 - 4,
            "{} dropped",
            e.dropped()
        );
        assert_eq!(e.exported(), 0);
        drop(l);
    }
}
