//! `bulwark approvals`: minting a token, and talking to a running instance's admin
//! endpoint (`bulwark_admin`) to list, show, approve and deny requests.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::cli::{ApprovalsCommand, Common};
use crate::config;

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
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
