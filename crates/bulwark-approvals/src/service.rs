//! The desk's background work in a running front: the [`crate::inbox`] read every 250 ms,
//! each new request this instance made posted to the webhook (signed, retried, bounded in
//! flight) with the answer it carries taken, and expiries written down every 5 s.
//!
//! ```no_run
//! # async fn demo(desk: std::sync::Arc<bulwark_approvals::Desk>, policy: &bulwark_policy::Policy) {
//! let state = std::path::Path::new("/var/lib/bulwark");
//! bulwark_approvals::service::Service::new(desk, policy, state, "mcp", None).spawn();
//! # }
//! ```

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bulwark_policy::{ApprovalChannel, Policy};
use serde_json::json;

use crate::inbox::Inbox;
use crate::{Desk, Request, Status, StoreError, webhook};

/// Most webhook posts in flight at once; past it, new requests wait for the next tick.
pub const MAX_IN_FLIGHT: usize = 8;
/// Attempts per webhook post (1 s, then 2 s between them).
pub const ATTEMPTS: u32 = 3;

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The background work of one front's desk.
pub struct Service {
    desk: Arc<Desk>,
    front: &'static str,
    inbox: Option<Inbox>,
    webhook: Option<String>,
    secret: Option<Vec<u8>>,
    /// Where the admin listener wrote its address: the base of a webhook's callback URL.
    callback_base: PathBuf,
}

impl Service {
    /// The work `policy`'s approval channels ask of `desk` in a front whose state
    /// directory is `state_dir`; webhook posts are signed with `secret` when one is given.
    pub fn new(
        desk: Arc<Desk>,
        policy: &Policy,
        state_dir: &Path,
        front: &'static str,
        secret: Option<Vec<u8>>,
    ) -> Service {
        let channels = &policy.approvals.channels;
        Service {
            desk,
            front,
            inbox: channels
                .contains(&ApprovalChannel::Inbox)
                .then(|| Inbox::new(&state_dir.join("approvals").join("inbox"))),
            webhook: policy
                .approvals
                .webhook_url
                .clone()
                .filter(|_| channels.contains(&ApprovalChannel::Webhook)),
            secret,
            callback_base: state_dir.join("admin.addr"),
        }
    }

    /// Runs until the process ends (call inside a tokio runtime).
    pub fn spawn(self) {
        tokio::spawn(self.run());
    }

    async fn run(self) {
        let client = self.webhook.as_ref().and_then(|_| {
            let _ = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .ok()
        });
        let me = Arc::new(self);
        let mut posted: HashSet<String> = HashSet::new();
        let in_flight = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        let mut n: u64 = 0;
        loop {
            tick.tick().await;
            n += 1;
            let now = unix_now();
            if let Some(inbox) = &me.inbox {
                for note in inbox.take(&me.desk, now) {
                    eprintln!("bulwark {}: {note}", me.front);
                }
            }
            if n.is_multiple_of(20) {
                me.desk.sweep(now);
            }
            let (Some(url), Some(client)) = (&me.webhook, &client) else {
                continue;
            };
            let Ok(list) = me.desk.list(now) else {
                continue;
            };
            let mine: Vec<_> = list
                .into_iter()
                .filter(|r| r.status == Status::Pending && r.owner == me.desk.owner())
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
                let callback = std::fs::read_to_string(&me.callback_base)
                    .ok()
                    .map(|a| format!("http://{}/api/approvals/{}/callback", a.trim(), r.id));
                let (client, url, me) = (client.clone(), url.clone(), Arc::clone(&me));
                tokio::spawn(async move {
                    me.post(&client, &url, &r, callback).await;
                    drop(permit);
                });
            }
        }
    }

    async fn post(
        &self,
        client: &reqwest::Client,
        url: &str,
        r: &Request,
        callback: Option<String>,
    ) {
        let body = json!({"type": "bulwark.approval.request", "request": r.public(), "callback": callback})
            .to_string();
        let mut last = String::new();
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_secs(1 << attempt)).await;
            }
            let mut req = client
                .post(url)
                .header("content-type", "application/json")
                .body(body.clone());
            if let Some(secret) = &self.secret {
                let ts = unix_now();
                req = req
                    .header(webhook::TIMESTAMP_HEADER, ts.to_string())
                    .header(
                        webhook::SIGNATURE_HEADER,
                        webhook::sign(secret, ts, &r.id, body.as_bytes()),
                    );
            }
            match req.send().await {
                Ok(resp) if resp.status().is_success() => {
                    let text = resp.text().await.unwrap_or_default();
                    let verdict: Option<webhook::Verdict> = serde_json::from_str(&text).ok();
                    if let Some(v) = verdict
                        && let Some(yes) = v.approves()
                    {
                        match self
                            .desk
                            .decide(&r.id, yes, "webhook", v.note.as_deref(), unix_now())
                        {
                            Ok(_) | Err(StoreError::NotPending(..)) => {}
                            Err(e) => {
                                eprintln!(
                                    "bulwark {}: webhook answer for {}: {e}",
                                    self.front, r.id
                                )
                            }
                        }
                    }
                    return;
                }
                Ok(resp) => last = format!("HTTP {}", resp.status()),
                Err(e) => last = e.to_string(),
            }
        }
        eprintln!(
            "bulwark {}: webhook for approval {} failed ({last}); it waits for another channel",
            self.front, r.id
        );
    }
}
