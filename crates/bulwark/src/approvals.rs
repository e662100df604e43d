//! Approvals in the binary: the desk each front asks through, the background loop that
//! reads the inbox, sends webhooks and writes down expiries, and `bulwark approvals`,
//! which talks to a running instance's admin endpoint.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bulwark_approvals::inbox::Inbox;
use bulwark_approvals::{Desk, Status, Store};
use bulwark_policy::{ApprovalChannel, Policy};
use serde_json::{Value, json};

use crate::cli::{ApprovalsCommand, Common};
use crate::config;

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The approvals directory: STATE_DIR/approvals.
pub fn dir(common: &Common) -> Result<PathBuf> {
    Ok(config::state_dir(common)?.join("approvals"))
}

/// The desk for `front`, over the state directory's store, recording into `audit`.
pub fn desk(
    common: &Common,
    policy: &Policy,
    audit: Option<Arc<bulwark_audit::AuditLog>>,
    front: &str,
) -> Result<Arc<Desk>> {
    let store = Store::open(&dir(common)?, policy.approvals.max_pending)?;
    let key = config::approval_key(common)?;
    Ok(Arc::new(Desk::new(store, key, front).with_audit(audit)))
}

/// What the admin listener needs to serve approvals and the console, when `addr` asks for
/// one.
pub fn admin(
    addr: Option<&str>,
    common: &Common,
    policy: &Policy,
    front: &'static str,
    metrics: Arc<bulwark_audit::metrics::Metrics>,
    audit: Option<Arc<bulwark_audit::AuditLog>>,
    desk: Option<Arc<Desk>>,
) -> Result<Option<crate::admin::Admin>> {
    let Some(addr) = addr else { return Ok(None) };
    Ok(Some(crate::admin::Admin {
        addr: addr.to_string(),
        front,
        metrics,
        audit,
        desk,
        token: config::admin_token(common)?,
        webhook_secret: webhook_secret(),
        decide_here: policy.approvals.channels.contains(&ApprovalChannel::Cli),
        webhook_channel: policy
            .approvals
            .channels
            .contains(&ApprovalChannel::Webhook),
        addr_file: Some(config::state_dir(common)?.join("admin.addr")),
    }))
}

fn webhook_secret() -> Option<Vec<u8>> {
    std::env::var("BULWARK_WEBHOOK_SECRET")
        .ok()
        .filter(|s| !s.is_empty())
        .map(String::into_bytes)
}

/// Runs the gate's desk's background work until the process ends: the inbox every 250 ms,
/// new requests to the webhook, expiries written down every 5 s.
pub fn spawn_service(gate: &bulwark_gate::Gate, common: &Common) {
    let Some(desk) = gate.desk().cloned() else {
        return;
    };
    let front = gate.front();
    let engine = gate.engine();
    let policy = engine.policy();
    let channels = policy.approvals.channels.clone();
    let inbox = match dir(common) {
        Ok(d) if channels.contains(&ApprovalChannel::Inbox) => Some(Inbox::new(&d.join("inbox"))),
        _ => None,
    };
    let webhook = policy
        .approvals
        .webhook_url
        .clone()
        .filter(|_| channels.contains(&ApprovalChannel::Webhook));
    let callback_base = config::state_dir(common).ok().map(|d| d.join("admin.addr"));
    tokio::spawn(async move {
        let client = webhook.as_ref().and_then(|_| {
            let _ = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .ok()
        });
        let mut posted: HashSet<String> = HashSet::new();
        let in_flight = Arc::new(tokio::sync::Semaphore::new(8));
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        let mut n: u64 = 0;
        loop {
            tick.tick().await;
            n += 1;
            let now = unix_now();
            if let Some(inbox) = &inbox {
                for note in inbox.take(&desk, now) {
                    eprintln!("bulwark {front}: {note}");
                }
            }
            if n.is_multiple_of(20) {
                desk.sweep(now);
            }
            let (Some(url), Some(client)) = (&webhook, &client) else {
                continue;
            };
            let Ok(list) = desk.list(now) else { continue };
            let mine: Vec<_> = list
                .into_iter()
                .filter(|r| r.status == Status::Pending && r.owner == desk.owner())
                .collect();
            posted.retain(|id| mine.iter().any(|r| &r.id == id));
            for r in mine {
                if posted.contains(&r.id) {
                    continue;
                }
                let Ok(permit) = Arc::clone(&in_flight).try_acquire_owned() else {
                    break;
                };
                posted.insert(r.id.clone());
                let callback = callback_base
                    .as_ref()
                    .and_then(|f| std::fs::read_to_string(f).ok())
                    .map(|a| format!("http://{}/api/approvals/{}/callback", a.trim(), r.id));
                let (client, url, desk) = (client.clone(), url.clone(), Arc::clone(&desk));
                tokio::spawn(async move {
                    post_webhook(&client, &url, &r, callback, &desk, front).await;
                    drop(permit);
                });
            }
        }
    });
}

async fn post_webhook(
    client: &reqwest::Client,
    url: &str,
    r: &bulwark_approvals::Request,
    callback: Option<String>,
    desk: &Desk,
    front: &str,
) {
    let body =
        json!({"type": "bulwark.approval.request", "request": r.public(), "callback": callback})
            .to_string();
    let mut last = String::new();
    for attempt in 0..3u32 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_secs(1 << attempt)).await;
        }
        let mut req = client
            .post(url)
            .header("content-type", "application/json")
            .body(body.clone());
        if let Some(secret) = webhook_secret() {
            let ts = unix_now();
            req = req
                .header(bulwark_approvals::webhook::TIMESTAMP_HEADER, ts.to_string())
                .header(
                    bulwark_approvals::webhook::SIGNATURE_HEADER,
                    bulwark_approvals::webhook::sign(&secret, ts, &r.id, body.as_bytes()),
                );
        }
        match req.send().await {
            Ok(resp) if resp.status().is_success() => {
                let text = resp.text().await.unwrap_or_default();
                let verdict: Option<bulwark_approvals::webhook::Verdict> =
                    serde_json::from_str(&text).ok();
                if let Some(v) = verdict
                    && let Some(yes) = v.approves()
                {
                    match desk.decide(&r.id, yes, "webhook", v.note.as_deref(), unix_now()) {
                        Ok(_) | Err(bulwark_approvals::StoreError::NotPending(..)) => {}
                        Err(e) => eprintln!("bulwark {front}: webhook answer for {}: {e}", r.id),
                    }
                }
                return;
            }
            Ok(resp) => last = format!("HTTP {}", resp.status()),
            Err(e) => last = e.to_string(),
        }
    }
    eprintln!(
        "bulwark {front}: webhook for approval {} failed ({last}); it waits for another channel",
        r.id
    );
}

/// `bulwark approvals …`.
pub fn command(cmd: &ApprovalsCommand) -> Result<ExitCode> {
    match cmd {
        ApprovalsCommand::Token {
            common,
            digest,
            ttl,
        } => {
            let d = digest.trim().to_ascii_lowercase();
            if d.len() != 64 || !d.bytes().all(|b| b.is_ascii_hexdigit()) {
                bail!(
                    "--digest must be the 64 hex digits a blocked call names (bulwark.blocked[].approval.digest)"
                );
            }
            if *ttl == 0 || *ttl > 86_400 {
                bail!("--ttl must be between 1 and 86400 seconds");
            }
            let key = config::approval_key(common)?;
            println!(
                "{}",
                bulwark_engine::token::mint(&key, &d, unix_now() + ttl)
            );
            Ok(ExitCode::SUCCESS)
        }
        ApprovalsCommand::List {
            target,
            all,
            json: as_json,
        } => {
            let status = if *all { "all" } else { "pending" };
            let (code, v) = target.call("GET", &format!("/api/approvals?status={status}"), None)?;
            if code != 200 {
                return refused(&v);
            }
            if *as_json {
                println!("{}", serde_json::to_string_pretty(&v["requests"])?);
                return Ok(ExitCode::SUCCESS);
            }
            let now = v["now"].as_u64().unwrap_or_else(unix_now);
            let list = v["requests"].as_array().cloned().unwrap_or_default();
            if list.is_empty() {
                println!("no {} approval requests", if *all { "" } else { "pending" });
            }
            for r in list {
                let left = r["expires_s"].as_u64().unwrap_or(0).saturating_sub(now);
                println!(
                    "{:<12}  {:<8}  {:<24}  {:>6}  {}",
                    r["id"].as_str().unwrap_or(""),
                    r["status"].as_str().unwrap_or(""),
                    r["tool"].as_str().unwrap_or(""),
                    if r["status"] == "pending" {
                        format!("{left}s")
                    } else {
                        String::new()
                    },
                    r["reason"].as_str().unwrap_or("")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        ApprovalsCommand::Show { target, id } => {
            let (code, v) =
                target.call("GET", &format!("/api/approvals/{}", path_id(id)?), None)?;
            if code != 200 {
                return refused(&v);
            }
            println!("{}", serde_json::to_string_pretty(&v)?);
            Ok(ExitCode::SUCCESS)
        }
        ApprovalsCommand::Approve { target, id, reason }
        | ApprovalsCommand::Deny { target, id, reason } => {
            let verb = if matches!(cmd, ApprovalsCommand::Approve { .. }) {
                "approve"
            } else {
                "deny"
            };
            let body = json!({"note": reason, "via": "cli"});
            let (code, v) = target.call(
                "POST",
                &format!("/api/approvals/{}/{verb}", path_id(id)?),
                Some(&body),
            )?;
            if code != 200 {
                return refused(&v);
            }
            println!(
                "{} {}",
                v["status"].as_str().unwrap_or(verb),
                v["id"].as_str().unwrap_or(id)
            );
            if let Some(t) = v["token"].as_str() {
                // For the LLM proxy: the agent sends it back in X-Bulwark-Approve.
                println!("token {t}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn path_id(id: &str) -> Result<&str> {
    if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        bail!(
            "{id:?} is not an approval request id (letters and digits, as `bulwark approvals list` shows)"
        );
    }
    Ok(id)
}

fn refused(v: &Value) -> Result<ExitCode> {
    eprintln!(
        "bulwark approvals: {}",
        v["error"].as_str().unwrap_or("the admin endpoint refused")
    );
    Ok(ExitCode::FAILURE)
}

/// Where a running instance's admin endpoint is, and its token.
#[derive(Debug, clap::Args)]
pub struct Target {
    /// Shared options (the state directory holds the admin token and, by default, the
    /// address of the last instance that opened an admin endpoint).
    #[command(flatten)]
    pub common: Common,
    /// The admin endpoint (HOST:PORT), default STATE_DIR/admin.addr.
    #[arg(long, value_name = "ADDR", env = "BULWARK_ADMIN")]
    pub admin: Option<String>,
}

impl Target {
    fn addr(&self) -> Result<String> {
        if let Some(a) = &self.admin {
            return Ok(a
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .to_string());
        }
        let f = config::state_dir(&self.common)?.join("admin.addr");
        std::fs::read_to_string(&f)
            .map(|s| s.trim().to_string())
            .with_context(|| {
                format!(
                    "no admin endpoint known ({} is missing): start the front with --admin ADDR, or pass --admin",
                    f.display()
                )
            })
    }

    /// One request to the admin API; the status and the JSON answer.
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<(u16, Value)> {
        let addr = self.addr()?;
        let token = config::admin_token(&self.common)?;
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut s = std::net::TcpStream::connect(&addr).with_context(|| {
            format!("cannot reach the admin endpoint at {addr}; is the front running with --admin?")
        })?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        s.set_write_timeout(Some(Duration::from_secs(10)))?;
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )?;
        let mut reply = Vec::new();
        s.take(1 << 22).read_to_end(&mut reply)?;
        let text = String::from_utf8_lossy(&reply);
        let (head, rest) = text
            .split_once("\r\n\r\n")
            .context("the admin endpoint sent no HTTP answer")?;
        let code = head
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .context("the admin endpoint sent no status")?;
        let v = serde_json::from_str(rest).unwrap_or(json!({"error": rest.trim()}));
        Ok((code, v))
    }
}
