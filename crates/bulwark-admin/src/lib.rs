//! A front's admin listener: `GET /metrics` (Prometheus text), the approvals API that
//! `bulwark approvals` and webhook callbacks use, and the web console (`GET /`).
//!
//! On loopback by default, HTTP/1.1 without keep-alive on hyper, and bounded: a request head
//! over 8 KiB (431), a body over 64 KiB (413), a request slower than 5 s (dropped), or more
//! than 16 connections at once (turned away) are cut off.
//!
//! Everything but `/metrics` and the console page itself needs the admin token
//! (`Authorization: Bearer …`, STATE_DIR/admin.token); a webhook callback is authenticated
//! by its signature instead. Requests naming another host than the listener's, or sent by
//! a page on another origin, are refused (403): a browser tab cannot be turned against it.
//!
//! ```no_run
//! # async fn demo(metrics: std::sync::Arc<bulwark_audit::metrics::Metrics>) {
//! let admin = bulwark_admin::Admin {
//!     addr: "127.0.0.1:0".into(),
//!     front: "mcp",
//!     metrics,
//!     audit: None,
//!     desk: None,
//!     token: "0123456789abcdef".repeat(4),
//!     webhook_secret: None,
//!     decide_here: true,
//!     webhook_channel: false,
//!     addr_file: None,
//!     shared_telemetry: None,
//! };
//! let at = bulwark_admin::serve(admin).await.unwrap();
//! println!("console at http://{at}/");
//! # }
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bulwark_approvals::Desk;
use bulwark_audit::AuditLog;
use bulwark_audit::metrics::Metrics;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Largest request head.
pub const MAX_HEAD: usize = 8 * 1024;
/// Largest request body.
pub const MAX_BODY: usize = 64 * 1024;
/// Longest a request may take, from connection to answer.
pub const REQUEST_TIME: Duration = Duration::from_secs(5);
/// Most connections served at once.
pub const MAX_CONNECTIONS: usize = 16;
/// How often the deployment view polls the shared telemetry store.
const POLL: Duration = Duration::from_secs(1);
/// The console: one page, no external assets.
const CONSOLE: &str = include_str!("console.html");

/// What the admin listener serves.
pub struct Admin {
    /// Where to listen.
    pub addr: String,
    /// The front's name, for logs and the console.
    pub front: &'static str,
    /// Decisions counted by the front.
    pub metrics: Arc<Metrics>,
    /// The audit log (for its telemetry queue's gauges).
    pub audit: Option<Arc<AuditLog>>,
    /// Approvals, when the front asks for them.
    pub desk: Option<Arc<Desk>>,
    /// The bearer token for the API.
    pub token: String,
    /// The secret webhook callbacks are signed with (`BULWARK_WEBHOOK_SECRET`).
    pub webhook_secret: Option<Vec<u8>>,
    /// Whether the policy lets people decide here (`approvals.channels` has `cli`).
    pub decide_here: bool,
    /// Whether the policy takes webhook callbacks (`approvals.channels` has `webhook`).
    pub webhook_channel: bool,
    /// Where to write the listener's address for the CLI (STATE_DIR/admin.addr).
    pub addr_file: Option<PathBuf>,
    /// The store every replica writes its decisions to (`telemetry: { backend: postgres }`):
    /// when set, the console's feed and charts and `/metrics` show every instance's
    /// decisions, labelled by instance. (URL, longest wait for one answer.)
    pub shared_telemetry: Option<(String, Duration)>,
}

/// Where and how the listener is reached, as the operator configured it.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Where to listen (`HOST:PORT`).
    pub addr: String,
    /// The bearer token for the API (STATE_DIR/admin.token).
    pub token: String,
    /// The secret webhook callbacks are signed with (`BULWARK_WEBHOOK_SECRET`).
    pub webhook_secret: Option<Vec<u8>>,
    /// Where to write the listener's address for the CLI (STATE_DIR/admin.addr).
    pub addr_file: Option<PathBuf>,
}

impl Admin {
    /// The listener for `front`: its metrics, audit log and desk, and what the policy's
    /// approval channels let people do here.
    pub fn new(
        settings: Settings,
        front: &'static str,
        metrics: Arc<Metrics>,
        audit: Option<Arc<AuditLog>>,
        desk: Option<Arc<Desk>>,
        policy: &bulwark_policy::Policy,
    ) -> Admin {
        use bulwark_policy::ApprovalChannel;
        let channels = &policy.approvals.channels;
        Admin {
            addr: settings.addr,
            front,
            metrics,
            audit,
            desk,
            token: settings.token,
            webhook_secret: settings.webhook_secret,
            decide_here: channels.contains(&ApprovalChannel::Cli),
            webhook_channel: channels.contains(&ApprovalChannel::Webhook),
            addr_file: settings.addr_file,
            shared_telemetry: match (&policy.telemetry.backend, &policy.telemetry.url) {
                (bulwark_policy::TelemetryBackend::Postgres, Some(url)) => Some((
                    url.clone(),
                    Duration::from_millis(policy.telemetry.timeout_ms),
                )),
                _ => None,
            },
        }
    }
}

/// Why the listener could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {addr} for the admin endpoint: {source}")]
pub struct AdminError {
    addr: String,
    source: std::io::Error,
}

/// Serves `admin` when there is one, saying where as `who`.
pub async fn start(admin: Option<Admin>, who: &str) -> Result<(), AdminError> {
    if let Some(admin) = admin {
        let at = serve(admin).await?;
        eprintln!("{who}: console at http://{at}/ and metrics at http://{at}/metrics");
    }
    Ok(())
}

/// Binds the listener (warning when it is not loopback) and serves it in the background.
pub async fn serve(admin: Admin) -> Result<SocketAddr, AdminError> {
    let err = |source| AdminError {
        addr: admin.addr.clone(),
        source,
    };
    let listener = TcpListener::bind(admin.addr.as_str()).await.map_err(err)?;
    let local = listener.local_addr().map_err(err)?;
    let front = admin.front;
    if !local.ip().is_loopback() {
        eprintln!(
            "bulwark {front}: warning: the admin endpoint listens on {local}, not loopback; anyone who can reach it can read the metrics, and anyone with the token can decide approvals"
        );
    }
    if let Some(f) = &admin.addr_file
        && let Err(e) = std::fs::write(f, local.to_string())
    {
        eprintln!("bulwark {front}: cannot write {}: {e}", f.display());
    }
    let deployment = admin
        .shared_telemetry
        .clone()
        .map(|(url, timeout)| bulwark_telemetry_pg::View::spawn(url, timeout, POLL));
    let admin = Arc::new(Served { admin, deployment });
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
                continue;
            };
            let admin = Arc::clone(&admin);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let admin = Arc::clone(&admin);
                    async move { Ok::<_, std::convert::Infallible>(answer(req, &admin, local).await) }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .keep_alive(false)
                    .max_buf_size(MAX_HEAD)
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                let _ = tokio::time::timeout(REQUEST_TIME, conn).await;
                drop(permit);
            });
        }
    });
    Ok(local)
}

/// The listener and what it built when it started.
struct Served {
    admin: Admin,
    /// Every instance's decisions, when the policy names a shared telemetry store.
    deployment: Option<Arc<bulwark_telemetry_pg::View>>,
}

/// One request as the routes read it.
struct Req {
    method: Method,
    path: String,
    query: String,
    headers: HeaderMap,
    body: Bytes,
}

impl Req {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn query(&self, name: &str) -> Option<&str> {
        self.query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    }
}

/// The status, the body and its content type.
type Reply = (StatusCode, String, &'static str);

fn json_reply(status: StatusCode, v: &Value) -> Reply {
    (status, v.to_string(), "application/json")
}

fn error(status: StatusCode, why: impl Into<String>) -> Reply {
    json_reply(status, &json!({"error": why.into()}))
}

async fn answer(
    req: Request<Incoming>,
    served: &Served,
    local: SocketAddr,
) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let reply = match Limited::new(body, MAX_BODY).collect().await {
        Ok(b) => route(
            &Req {
                method: parts.method,
                path: parts.uri.path().to_string(),
                query: parts.uri.query().unwrap_or_default().to_string(),
                headers: parts.headers,
                body: b.to_bytes(),
            },
            served,
            local,
        ),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("body over {MAX_BODY} bytes"),
        ),
        Err(e) => error(
            StatusCode::BAD_REQUEST,
            format!("cannot read the body: {e}"),
        ),
    };
    let (status, body, ctype) = reply;
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    let fixed = |v: &'static str| HeaderValue::from_static(v);
    h.insert("content-type", fixed(ctype));
    h.insert("cache-control", fixed("no-store"));
    h.insert("x-content-type-options", fixed("nosniff"));
    h.insert("x-frame-options", fixed("DENY"));
    h.insert(
        "content-security-policy",
        fixed(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
        ),
    );
    resp
}

/// Whether a Host or Origin host names this listener: a loopback name when it listens on
/// loopback (so a DNS-rebound page cannot reach it), anything otherwise.
fn host_ok(host: &str, local: SocketAddr) -> bool {
    if !local.ip().is_loopback() {
        return true;
    }
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    matches!(name, "127.0.0.1" | "localhost" | "::1")
}

fn same_origin(req: &Req, local: SocketAddr) -> Result<(), String> {
    let host = req.header("host").unwrap_or_default();
    if !host_ok(host, local) {
        return Err(format!("Host {host:?} does not name this listener"));
    }
    if let Some(o) = req.header("origin")
        && o != "null"
    {
        let h = o
            .strip_prefix("http://")
            .or_else(|| o.strip_prefix("https://"))
            .unwrap_or(o);
        if h != host {
            return Err(format!("Origin {o:?} is not this console"));
        }
    }
    if req.header("sec-fetch-site") == Some("cross-site") {
        return Err("cross-site request".into());
    }
    Ok(())
}

fn eq_ct(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn authorised(req: &Req, token: &str) -> bool {
    req.header("authorization")
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| eq_ct(t.trim().as_bytes(), token.as_bytes()))
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn route(req: &Req, served: &Served, local: SocketAddr) -> Reply {
    let admin = &served.admin;
    let segments: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    let get = req.method == Method::GET;
    match segments.as_slice() {
        ["metrics"] if get => {
            if let Some(a) = &admin.audit {
                let (depth, dropped) = a.telemetry_queue();
                admin.metrics.queue_depth.store(depth, Ordering::Relaxed);
                admin
                    .metrics
                    .queue_dropped
                    .store(dropped, Ordering::Relaxed);
            }
            let mut text = admin.metrics.render();
            if let Some((depth, dropped)) = admin.audit.as_ref().and_then(|a| a.shared_queue()) {
                text.push_str(&format!(
                    "# HELP bulwark_shared_telemetry_queue_depth Decision rows waiting for the shared telemetry store.\n# TYPE bulwark_shared_telemetry_queue_depth gauge\nbulwark_shared_telemetry_queue_depth {depth}\n# HELP bulwark_shared_telemetry_dropped_total Decision rows this instance could not deliver to the shared telemetry store (queue full or store away).\n# TYPE bulwark_shared_telemetry_dropped_total counter\nbulwark_shared_telemetry_dropped_total {dropped}\n"
                ));
            }
            if let Some(d) = &served.deployment {
                text.push_str(&d.render());
            }
            (
                StatusCode::OK,
                text,
                "text/plain; version=0.0.4; charset=utf-8",
            )
        }
        [""] | ["console"] if get => {
            if let Err(why) = same_origin(req, local) {
                return error(StatusCode::FORBIDDEN, why);
            }
            (
                StatusCode::OK,
                CONSOLE.to_string(),
                "text/html; charset=utf-8",
            )
        }
        ["api", "approvals", id, "callback"] => {
            if req.method != Method::POST {
                return error(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "POST a signed callback here",
                );
            }
            callback(req, admin, id)
        }
        ["api", rest @ ..] => {
            if let Err(why) = same_origin(req, local) {
                return error(StatusCode::FORBIDDEN, why);
            }
            if !authorised(req, &admin.token) {
                return error(
                    StatusCode::UNAUTHORIZED,
                    "the admin token is needed (Authorization: Bearer, from STATE_DIR/admin.token)",
                );
            }
            api(req, served, rest)
        }
        _ if get => error(StatusCode::NOT_FOUND, "not here: /, /metrics, /api/…"),
        _ => error(
            StatusCode::METHOD_NOT_ALLOWED,
            "not a method this endpoint takes",
        ),
    }
}

fn api(req: &Req, served: &Served, rest: &[&str]) -> Reply {
    let admin = &served.admin;
    let now = unix_now();
    let get = req.method == Method::GET;
    match rest {
        ["feed"] if get => {
            let after = req.query("after").and_then(|a| a.parse().ok()).unwrap_or(0);
            let decisions = match &served.deployment {
                Some(d) => d.feed(after),
                None => admin.metrics.feed(after),
            };
            json_reply(StatusCode::OK, &json!({"decisions": decisions}))
        }
        ["summary"] if get => {
            let mut s = match &served.deployment {
                Some(d) => d.summary(),
                None => admin.metrics.summary(),
            };
            s["front"] = json!(admin.front);
            s["approvals"] = json!(admin.desk.is_some());
            s["decide_here"] = json!(admin.decide_here);
            json_reply(StatusCode::OK, &s)
        }
        ["approvals", rest @ ..] => {
            let Some(desk) = &admin.desk else {
                return error(StatusCode::NOT_FOUND, "this instance asks for no approvals");
            };
            approvals(req, admin, desk, rest, now)
        }
        _ => error(StatusCode::NOT_FOUND, "no such API"),
    }
}

fn approvals(req: &Req, admin: &Admin, desk: &Desk, rest: &[&str], now: u64) -> Reply {
    let (get, post) = (req.method == Method::GET, req.method == Method::POST);
    match rest {
        [] if get => match desk.list(now) {
            Ok(list) => {
                let want = req.query("status");
                let list: Vec<_> = list
                    .into_iter()
                    .filter(|r| want.is_none_or(|w| w == "all" || w == r.status.as_str()))
                    .take(500)
                    .collect();
                json_reply(StatusCode::OK, &json!({"now": now, "requests": list}))
            }
            Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        },
        [id] if get => match desk.store().get(id) {
            Ok(Some(r)) => {
                // The token is shown while it can still be used: the proxy's agent needs it.
                let mut shown = r.clone();
                shown.status = r.status_at(now);
                if shown.status != bulwark_approvals::Status::Approved {
                    shown.token = None;
                }
                json_reply(StatusCode::OK, &json!(shown))
            }
            Ok(None) => error(StatusCode::NOT_FOUND, format!("no approval request {id:?}")),
            Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        },
        [id, verb @ ("approve" | "deny")] if post => {
            if !admin.decide_here {
                return error(
                    StatusCode::FORBIDDEN,
                    "the policy's approvals.channels leaves out `cli`: nobody decides here",
                );
            }
            let body: Value = if req.body.is_empty() {
                json!({})
            } else {
                match serde_json::from_slice(&req.body) {
                    Ok(v) => v,
                    Err(e) => {
                        return error(StatusCode::BAD_REQUEST, format!("body is not JSON: {e}"));
                    }
                }
            };
            let via = match body.get("via").and_then(Value::as_str) {
                Some("console") => "console",
                _ => "cli",
            };
            let note = body.get("note").and_then(Value::as_str);
            match desk.decide(id, *verb == "approve", via, note, now) {
                Ok(r) => {
                    eprintln!(
                        "bulwark {}: approval {} {} via {via}",
                        admin.front,
                        r.id,
                        r.status.as_str()
                    );
                    json_reply(StatusCode::OK, &json!(r))
                }
                Err(e) => store_error(e),
            }
        }
        _ => error(StatusCode::NOT_FOUND, "no such approvals API"),
    }
}

fn store_error(e: bulwark_approvals::StoreError) -> Reply {
    use bulwark_approvals::StoreError;
    match e {
        StoreError::Unknown(_) => error(StatusCode::NOT_FOUND, e.to_string()),
        StoreError::NotPending(..) => error(StatusCode::CONFLICT, e.to_string()),
        e => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

fn callback(req: &Req, admin: &Admin, id: &str) -> Reply {
    let (Some(desk), Some(secret), true) =
        (&admin.desk, &admin.webhook_secret, admin.webhook_channel)
    else {
        return error(
            StatusCode::NOT_FOUND,
            "no webhook callbacks here (set BULWARK_WEBHOOK_SECRET and approvals.webhook_url)",
        );
    };
    let sig = req
        .header(bulwark_approvals::webhook::SIGNATURE_HEADER)
        .unwrap_or_default();
    let ts = req
        .header(bulwark_approvals::webhook::TIMESTAMP_HEADER)
        .unwrap_or_default();
    if !bulwark_approvals::webhook::verify(secret, ts, id, &req.body, sig, unix_now()) {
        return error(
            StatusCode::UNAUTHORIZED,
            "bad, stale or missing X-Bulwark-Signature / X-Bulwark-Timestamp",
        );
    }
    let verdict: bulwark_approvals::webhook::Verdict = match serde_json::from_slice(&req.body) {
        Ok(v) => v,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("not a verdict: {e}")),
    };
    let Some(yes) = verdict.approves() else {
        return error(StatusCode::BAD_REQUEST, "decision must be approve or deny");
    };
    match desk.decide(id, yes, "webhook", verdict.note.as_deref(), unix_now()) {
        Ok(r) => json_reply(
            StatusCode::OK,
            &json!({"id": r.id, "status": r.status.as_str()}),
        ),
        Err(e) => store_error(e),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_loopback_names_only_on_loopback() {
        let lo: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert!(host_ok("127.0.0.1:9", lo));
        assert!(host_ok("localhost", lo));
        assert!(host_ok("[::1]:9", lo));
        assert!(!host_ok("evil.example:9", lo));
        assert!(!host_ok("127.0.0.1.evil.example", lo));
        assert!(host_ok("anything", "0.0.0.0:9".parse().unwrap()));
    }
}
