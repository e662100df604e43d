//! A front's admin listener, on loopback by default: `GET /metrics` (Prometheus text), the
//! approvals API the `bulwark approvals` commands and webhooks' callbacks use, and the web
//! console (`GET /`). Deliberately small — HTTP/1.1 without keep-alive — and bounded: a
//! request head over 8 KiB, a body over 64 KiB, a request slower than 5 s, or more than 16
//! connections at once are cut off.
//!
//! Everything but `/metrics` and the console page itself needs the admin token
//! (`Authorization: Bearer …`, STATE_DIR/admin.token); a webhook callback is authenticated
//! by its signature instead. Requests naming another host than the listener's, or sent by
//! a page on another origin, are refused (403): a browser tab cannot be turned against it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result};
use bulwark_approvals::Desk;
use bulwark_audit::AuditLog;
use bulwark_audit::metrics::Metrics;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

const MAX_HEAD: usize = 8 * 1024;
const MAX_BODY: usize = 64 * 1024;
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
}

/// Serves `admin` when there is one, saying where as `who`.
pub async fn start(admin: Option<Admin>, who: &str) -> Result<()> {
    if let Some(admin) = admin {
        let at = serve(admin).await?;
        eprintln!("{who}: console at http://{at}/ and metrics at http://{at}/metrics");
    }
    Ok(())
}

/// Binds the listener (warning when it is not loopback) and serves it in the background.
pub async fn serve(admin: Admin) -> Result<SocketAddr> {
    let addr = admin.addr.as_str();
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} for the admin endpoint"))?;
    let local = listener.local_addr()?;
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
    let admin = Arc::new(admin);
    let slots = Arc::new(Semaphore::new(16));
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
                let _ = tokio::time::timeout(Duration::from_secs(5), answer(stream, &admin, local))
                    .await;
                drop(permit);
            });
        }
    });
    Ok(local)
}

/// One parsed request.
struct Req {
    method: String,
    path: String,
    query: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Req {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn query(&self, name: &str) -> Option<&str> {
        self.query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    }
}

enum Read {
    Req(Req),
    /// Something that cannot be answered normally: the status and why.
    Bad(&'static str, String),
}

async fn read(stream: &mut TcpStream) -> std::io::Result<Option<Read>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        if buf.len() + n > MAX_HEAD + MAX_BODY {
            return Ok(Some(Read::Bad(
                "431 Request Header Fields Too Large",
                "request head too large".into(),
            )));
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > MAX_HEAD && !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            return Ok(Some(Read::Bad(
                "431 Request Header Fields Too Large",
                format!("request head over {MAX_HEAD} bytes"),
            )));
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default().to_string();
    let target = first.next().unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.parse::<usize>());
    let length = match length {
        None => 0,
        Some(Ok(n)) if n <= MAX_BODY => n,
        Some(Ok(n)) => {
            return Ok(Some(Read::Bad(
                "413 Payload Too Large",
                format!("body of {n} bytes, over {MAX_BODY}"),
            )));
        }
        Some(Err(_)) => {
            return Ok(Some(Read::Bad(
                "400 Bad Request",
                "bad Content-Length".into(),
            )));
        }
    };
    let mut body = buf[end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Ok(Some(Read::Req(Req {
        method,
        path: path.to_string(),
        query: query.to_string(),
        headers,
        body,
    })))
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

type Reply = (&'static str, String, &'static str);

fn json_reply(status: &'static str, v: &Value) -> Reply {
    (status, v.to_string(), "application/json")
}

fn error(status: &'static str, why: impl Into<String>) -> Reply {
    json_reply(status, &json!({"error": why.into()}))
}

async fn answer(mut stream: TcpStream, admin: &Admin, local: SocketAddr) -> Result<()> {
    let reply = match read(&mut stream).await? {
        None => return Ok(()),
        Some(Read::Bad(status, why)) => error(status, why),
        Some(Read::Req(req)) => route(&req, admin, local),
    };
    let (status, body, ctype) = reply;
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\nContent-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await?;
    Ok(())
}

fn route(req: &Req, admin: &Admin, local: SocketAddr) -> Reply {
    let segments: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    match (req.method.as_str(), segments.as_slice()) {
        ("GET", ["metrics"]) => {
            if let Some(a) = &admin.audit {
                let (depth, dropped) = a.telemetry_queue();
                admin.metrics.queue_depth.store(depth, Ordering::Relaxed);
                admin
                    .metrics
                    .queue_dropped
                    .store(dropped, Ordering::Relaxed);
            }
            (
                "200 OK",
                admin.metrics.render(),
                "text/plain; version=0.0.4; charset=utf-8",
            )
        }
        ("GET", [""]) | ("GET", ["console"]) => {
            if let Err(why) = same_origin(req, local) {
                return error("403 Forbidden", why);
            }
            ("200 OK", CONSOLE.to_string(), "text/html; charset=utf-8")
        }
        (_, ["api", "approvals", id, "callback"]) => {
            if req.method != "POST" {
                return error("405 Method Not Allowed", "POST a signed callback here");
            }
            callback(req, admin, id)
        }
        (_, ["api", ..]) => {
            if let Err(why) = same_origin(req, local) {
                return error("403 Forbidden", why);
            }
            if !authorised(req, &admin.token) {
                return error(
                    "401 Unauthorized",
                    "the admin token is needed (Authorization: Bearer, from STATE_DIR/admin.token)",
                );
            }
            api(req, admin, &segments[1..])
        }
        ("GET", _) => error("404 Not Found", "not here: /, /metrics, /api/…"),
        _ => error("405 Method Not Allowed", "not a method this endpoint takes"),
    }
}

fn api(req: &Req, admin: &Admin, rest: &[&str]) -> Reply {
    let now = unix_now();
    match (req.method.as_str(), rest) {
        ("GET", ["feed"]) => {
            let after = req.query("after").and_then(|a| a.parse().ok()).unwrap_or(0);
            json_reply("200 OK", &json!({"decisions": admin.metrics.feed(after)}))
        }
        ("GET", ["summary"]) => {
            let mut s = admin.metrics.summary();
            s["front"] = json!(admin.front);
            s["approvals"] = json!(admin.desk.is_some());
            s["decide_here"] = json!(admin.decide_here);
            json_reply("200 OK", &s)
        }
        (_, ["approvals", ..]) => {
            let Some(desk) = &admin.desk else {
                return error("404 Not Found", "this instance asks for no approvals");
            };
            approvals(req, admin, desk, &rest[1..], now)
        }
        _ => error("404 Not Found", "no such API"),
    }
}

fn approvals(req: &Req, admin: &Admin, desk: &Desk, rest: &[&str], now: u64) -> Reply {
    match (req.method.as_str(), rest) {
        ("GET", []) => match desk.list(now) {
            Ok(list) => {
                let want = req.query("status");
                let list: Vec<_> = list
                    .into_iter()
                    .filter(|r| want.is_none_or(|w| w == "all" || w == r.status.as_str()))
                    .take(500)
                    .collect();
                json_reply("200 OK", &json!({"now": now, "requests": list}))
            }
            Err(e) => error("500 Internal Server Error", e.to_string()),
        },
        ("GET", [id]) => match desk.store().get(id) {
            Ok(Some(r)) => {
                // The token is shown while it can still be used: the proxy's agent needs it.
                let mut shown = r.clone();
                shown.status = r.status_at(now);
                if shown.status != bulwark_approvals::Status::Approved {
                    shown.token = None;
                }
                json_reply("200 OK", &json!(shown))
            }
            Ok(None) => error("404 Not Found", format!("no approval request {id:?}")),
            Err(e) => error("500 Internal Server Error", e.to_string()),
        },
        ("POST", [id, verb @ ("approve" | "deny")]) => {
            if !admin.decide_here {
                return error(
                    "403 Forbidden",
                    "the policy's approvals.channels leaves out `cli`: nobody decides here",
                );
            }
            let body: Value = if req.body.is_empty() {
                json!({})
            } else {
                match serde_json::from_slice(&req.body) {
                    Ok(v) => v,
                    Err(e) => return error("400 Bad Request", format!("body is not JSON: {e}")),
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
                    json_reply("200 OK", &json!(r))
                }
                Err(e @ bulwark_approvals::StoreError::Unknown(_)) => {
                    error("404 Not Found", e.to_string())
                }
                Err(e @ bulwark_approvals::StoreError::NotPending(..)) => {
                    error("409 Conflict", e.to_string())
                }
                Err(e) => error("500 Internal Server Error", e.to_string()),
            }
        }
        _ => error("404 Not Found", "no such approvals API"),
    }
}

fn callback(req: &Req, admin: &Admin, id: &str) -> Reply {
    let (Some(desk), Some(secret), true) =
        (&admin.desk, &admin.webhook_secret, admin.webhook_channel)
    else {
        return error(
            "404 Not Found",
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
            "401 Unauthorized",
            "bad, stale or missing X-Bulwark-Signature / X-Bulwark-Timestamp",
        );
    }
    let verdict: bulwark_approvals::webhook::Verdict = match serde_json::from_slice(&req.body) {
        Ok(v) => v,
        Err(e) => return error("400 Bad Request", format!("not a verdict: {e}")),
    };
    let Some(yes) = verdict.approves() else {
        return error("400 Bad Request", "decision must be approve or deny");
    };
    match desk.decide(id, yes, "webhook", verdict.note.as_deref(), unix_now()) {
        Ok(r) => json_reply("200 OK", &json!({"id": r.id, "status": r.status.as_str()})),
        Err(e @ bulwark_approvals::StoreError::Unknown(_)) => error("404 Not Found", e.to_string()),
        Err(e @ bulwark_approvals::StoreError::NotPending(..)) => {
            error("409 Conflict", e.to_string())
        }
        Err(e) => error("500 Internal Server Error", e.to_string()),
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
