//! The one mechanism every front and channel goes through: a front asks about a call that
//! needs a person, a channel decides, the front learns the answer and uses an approval
//! once. Every change of state is an audit entry before it takes effect.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use bulwark_audit::{AuditLog, Entry};
use bulwark_engine::{Decision, ReasonCode, Verdict, token};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::request::{Ask, Request, Status};
use crate::store::{Store, StoreError};

pub use crate::store::GRANT_TTL_S;
/// Strings longer than this are cut in what a person is shown (the digest still covers
/// the whole call).
pub const SHOWN_STRING: usize = 4096;

/// What a front learns about a call that needs a person.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A person approved this exact call: it may pass once (the request is now `used`).
    Granted(Request),
    /// A person said no.
    Denied(Request),
    /// Nobody answered in time.
    TimedOut(Request),
    /// Still waiting for a person.
    Pending(Request),
    /// The request cannot be kept or recorded (too many pending, disk, audit): the call is
    /// refused, as a denial would be.
    Unavailable(String),
}

impl Outcome {
    /// For an answer that refuses the call: the reason code (none when no approval could
    /// be asked for) and what the agent is told, after `reason`, the decision's own.
    pub fn refusal(&self, reason: &str) -> Option<(Option<ReasonCode>, String)> {
        match self {
            Outcome::Denied(r) => {
                let note = r
                    .note
                    .as_deref()
                    .map(|n| format!(": {n}"))
                    .unwrap_or_default();
                let by = r.decided_by.as_deref().unwrap_or("a person");
                Some((
                    Some(ReasonCode::ApprovalDenied),
                    format!(
                        "A person denied this call (approval {}, via {by}){note}.",
                        r.id
                    ),
                ))
            }
            Outcome::TimedOut(r) => Some((
                Some(ReasonCode::ApprovalTimeout),
                format!(
                    "Nobody approved this call in time (approval {}); a timeout is a no.",
                    r.id
                ),
            )),
            Outcome::Unavailable(why) => Some((
                None,
                format!("{reason} The approval cannot be asked for: {why}."),
            )),
            Outcome::Granted(_) | Outcome::Pending(_) => None,
        }
    }
}

/// Approvals for one instance: the shared store, the key tokens are signed with, and the
/// audit log this instance writes.
pub struct Desk {
    store: Store,
    key: [u8; 32],
    audit: Option<Arc<AuditLog>>,
    front: String,
    owner: String,
    masker: OnceLock<Option<bulwark_scan::Scanner>>,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

impl Desk {
    /// A desk over `store`, signing tokens with `key`, for `front` (`mcp`, `proxy`,
    /// `daemon`, `admin`).
    pub fn new(store: Store, key: [u8; 32], front: &str) -> Desk {
        let owner = format!(
            "{front}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        Desk {
            store,
            key,
            audit: None,
            front: front.to_string(),
            owner,
            masker: OnceLock::new(),
        }
    }

    /// Records every change of state in `audit`.
    pub fn with_audit(mut self, audit: Option<Arc<AuditLog>>) -> Desk {
        self.audit = audit;
        self
    }

    /// This instance's name on the requests it creates.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    fn new_id(digest: &str, now_s: u64) -> String {
        let mut h = Sha256::new();
        h.update(digest.as_bytes());
        h.update(now_s.to_le_bytes());
        h.update(std::process::id().to_le_bytes());
        h.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        h.update(nanos.to_le_bytes());
        h.finalize()[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The arguments as a person is shown them: secrets and personal data masked, long
    /// strings cut.
    pub fn masked(&self, v: &Value) -> Value {
        let scanner = self
            .masker
            .get_or_init(|| bulwark_scan::Scanner::new().ok())
            .as_ref();
        mask_value(v, scanner, 0)
    }

    fn record(&self, r: &Request, event: &str) -> Result<(), String> {
        let Some(a) = &self.audit else { return Ok(()) };
        let d = audit_decision(r, event);
        let e = Entry {
            front: &self.front,
            session: &r.session,
            principal: r.principal.as_deref(),
            server: r.server.as_deref(),
            direction: "approval",
            args: &Value::Null,
            definition: None,
            decision: &d,
            // Written through before the change it records takes effect.
            refused: true,
        };
        a.record(&e).map_err(|e| e.to_string())
    }

    fn record_all(&self, rs: &[Request], event: &str) {
        for r in rs {
            // The expiry stands whether or not the log takes it: it only ever refuses.
            let _ = self.record(r, event);
        }
    }

    /// Asks about the call `ask` describes: the answer of the newest request for the same
    /// digest that has not been told yet, or a new pending request.
    pub fn ask(&self, ask: &Ask, now_s: u64) -> Outcome {
        self.ask_inner(ask, now_s, true)
    }

    fn ask_inner(&self, ask: &Ask, now_s: u64, settle: bool) -> Outcome {
        let max = self.store.max_pending();
        let result = self.store.change(now_s, |rs| {
            let found = rs.iter_mut().rev().find(|r| {
                r.digest == ask.digest
                    && !r.reported
                    && r.status != Status::Used
                    && (settle || matches!(r.status, Status::Pending | Status::Approved))
            });
            if let Some(r) = found {
                if !settle {
                    return Ok(Outcome::Pending(r.public()));
                }
                return self.settle(r, now_s);
            }
            let pending = rs.iter().filter(|r| r.status == Status::Pending).count();
            if pending >= max {
                return Err(StoreError::Full(max));
            }
            let r = Request {
                id: Self::new_id(&ask.digest, now_s),
                digest: ask.digest.clone(),
                front: ask.front.clone(),
                tool: ask.tool.clone(),
                server: ask.server.clone(),
                session: ask.session.clone(),
                principal: ask.principal.clone(),
                policy_version: ask.policy_version.clone(),
                args: self.masked(&ask.args),
                reason: ask.reason.clone(),
                rule_id: ask.rule_id.clone(),
                severity: ask.severity,
                created_s: now_s,
                expires_s: now_s.saturating_add(ask.timeout_s.max(1)),
                status: Status::Pending,
                decided_by: None,
                decided_s: None,
                note: None,
                token: None,
                reported: false,
                owner: self.owner.clone(),
            };
            self.record(&r, "created").map_err(unrecorded)?;
            rs.push(r.clone());
            Ok(Outcome::Pending(r))
        });
        self.finish(result)
    }

    /// The request a person would answer for this call — the newest one still pending or
    /// approved, or a new pending one — without settling it: for a front whose approvals
    /// travel as tokens (the LLM proxy), where the token, not this lookup, lets the call
    /// through.
    pub fn file(&self, ask: &Ask, now_s: u64) -> Result<Request, StoreError> {
        match self.ask_inner(ask, now_s, false) {
            Outcome::Pending(r) | Outcome::Granted(r) => Ok(r),
            Outcome::Unavailable(why) => Err(StoreError::Io(
                self.store.path().to_path_buf(),
                std::io::Error::other(why),
            )),
            Outcome::Denied(r) | Outcome::TimedOut(r) => Ok(r),
        }
    }

    fn finish(&self, result: Result<(Outcome, Vec<Request>), StoreError>) -> Outcome {
        match result {
            Ok((o, expired)) => {
                self.record_all(&expired, "expired");
                o
            }
            Err(e) => Outcome::Unavailable(e.to_string()),
        }
    }

    /// What a request found for a call tells the front, with the request updated: an
    /// approval is used up, a denial or expiry is marked told.
    fn settle(&self, r: &mut Request, now_s: u64) -> Result<Outcome, StoreError> {
        match r.status {
            Status::Pending => Ok(Outcome::Pending(r.clone())),
            Status::Approved => {
                let valid = r
                    .token
                    .as_deref()
                    .and_then(|t| token::verify(&self.key, t, now_s).ok())
                    .is_some_and(|a| a.digest == r.digest);
                if !valid {
                    // An approval that can no longer be verified (expired, another key)
                    // lets nothing through.
                    r.status = Status::Expired;
                    r.reported = true;
                    r.decided_by.get_or_insert_with(|| "timeout".into());
                    self.record(r, "expired").map_err(unrecorded)?;
                    return Ok(Outcome::TimedOut(r.clone()));
                }
                r.status = Status::Used;
                self.record(r, "used").map_err(unrecorded)?;
                Ok(Outcome::Granted(r.clone()))
            }
            Status::Denied => {
                r.reported = true;
                Ok(Outcome::Denied(r.clone()))
            }
            Status::Expired => {
                r.reported = true;
                Ok(Outcome::TimedOut(r.clone()))
            }
            Status::Used => Ok(Outcome::Unavailable(format!(
                "approval request {} was used already",
                r.id
            ))),
        }
    }

    /// The state of the request with `id`, for a call held while it waits. An answer is
    /// settled as in [`Desk::ask`].
    pub fn poll(&self, id: &str, now_s: u64) -> Outcome {
        // Most polls find it still pending: answered from the cached copy, no lock.
        match self.store.get(id) {
            Ok(Some(r)) if r.status_at(now_s) == Status::Pending => {
                return Outcome::Pending(r);
            }
            Ok(_) => {}
            Err(e) => return Outcome::Unavailable(e.to_string()),
        }
        let result = self.store.change(now_s, |rs| {
            let Some(r) = rs.iter_mut().find(|r| r.id == id) else {
                return Err(StoreError::Unknown(id.to_string()));
            };
            self.settle(r, now_s)
        });
        self.finish(result)
    }

    /// A person's answer through `channel`. Approving mints the token that lets the call
    /// through once, valid for [`GRANT_TTL_S`].
    pub fn decide(
        &self,
        id: &str,
        approve: bool,
        channel: &str,
        note: Option<&str>,
        now_s: u64,
    ) -> Result<Request, StoreError> {
        let (r, expired) = self.store.change(now_s, |rs| {
            let Some(r) = rs.iter_mut().find(|r| r.id == id) else {
                return Err(StoreError::Unknown(id.to_string()));
            };
            if r.status != Status::Pending {
                return Err(StoreError::NotPending(r.id.clone(), r.status.as_str()));
            }
            let mut next = r.clone();
            next.decided_by = Some(channel.to_string());
            next.decided_s = Some(now_s);
            next.note = note.map(|n| n.chars().take(500).collect());
            if approve {
                next.status = Status::Approved;
                next.token = Some(token::mint(
                    &self.key,
                    &next.digest,
                    now_s.saturating_add(GRANT_TTL_S),
                ));
            } else {
                next.status = Status::Denied;
            }
            self.record(&next, next.status.as_str())
                .map_err(unrecorded)?;
            *r = next.clone();
            Ok(next)
        })?;
        self.record_all(&expired, "expired");
        Ok(r)
    }

    /// Writes down the expiry of pending requests past their time.
    pub fn sweep(&self, now_s: u64) {
        if let Ok(((), expired)) = self.store.change(now_s, |_| Ok(())) {
            self.record_all(&expired, "expired");
        }
    }

    /// Ends the wait of a held call whose time is up, whatever the request's own expiry
    /// says: told as a timeout.
    pub fn time_out(&self, id: &str, now_s: u64) -> Outcome {
        let result = self.store.change(now_s, |rs| {
            let Some(r) = rs.iter_mut().find(|r| r.id == id) else {
                return Err(StoreError::Unknown(id.to_string()));
            };
            if r.status == Status::Pending {
                r.status = Status::Expired;
                r.decided_by = Some("timeout".into());
                r.decided_s = Some(now_s);
                self.record(r, "expired").map_err(unrecorded)?;
            }
            self.settle(r, now_s)
        });
        self.finish(result)
    }

    /// Every request, newest first, with expiry applied as of `now_s`; tokens left out.
    pub fn list(&self, now_s: u64) -> Result<Vec<Request>, StoreError> {
        let v = self.store.view()?;
        Ok(v.iter()
            .rev()
            .map(|r| {
                let mut p = r.public();
                p.status = r.status_at(now_s);
                p
            })
            .collect())
    }

    /// A token presented at another channel (the proxy's header) was honoured: the request
    /// it came from, if any, is used. `false` when that request was used already (by
    /// another front), so the token must not pass twice.
    pub fn spend(&self, token_text: &str, now_s: u64) -> bool {
        let result = self.store.change(now_s, |rs| {
            match rs
                .iter_mut()
                .find(|r| r.token.as_deref() == Some(token_text.trim()))
            {
                Some(r) if r.status == Status::Used => Ok(false),
                Some(r) => {
                    r.status = Status::Used;
                    self.record(r, "used").map_err(unrecorded)?;
                    Ok(true)
                }
                None => Ok(true),
            }
        });
        match result {
            Ok((ok, expired)) => {
                self.record_all(&expired, "expired");
                ok
            }
            Err(_) => false,
        }
    }
}

fn unrecorded(why: String) -> StoreError {
    StoreError::Io(
        "audit log".into(),
        std::io::Error::other(format!("the change cannot be recorded: {why}")),
    )
}

/// The decision-shaped audit entry for a change of state.
fn audit_decision(r: &Request, event: &str) -> Decision {
    let mut d = Decision::invalid_input(String::new(), &r.policy_version);
    d.findings.clear();
    d.safer_alternative = None;
    d.tool = r.tool.clone();
    d.rule_id = r.rule_id.clone();
    d.severity = r.severity;
    d.call_digest = Some(r.digest.clone());
    let (verdict, code) = match event {
        "created" => (Verdict::Approve, None),
        "approved" | "used" => (Verdict::Allow, None),
        "denied" => (Verdict::Block, Some(ReasonCode::ApprovalDenied)),
        _ => (Verdict::Block, Some(ReasonCode::ApprovalTimeout)),
    };
    d.decision = verdict;
    d.reason_code = code;
    d.approved = matches!(event, "approved" | "used");
    let by = r
        .decided_by
        .as_deref()
        .filter(|_| event != "created" && event != "used")
        .map(|b| format!(" by {b}"))
        .unwrap_or_default();
    let note = r
        .note
        .as_deref()
        .filter(|_| event == "denied" || event == "approved")
        .map(|n| format!(": {n}"))
        .unwrap_or_default();
    d.reason = format!("approval {} {event}{by}{note}", r.id);
    d
}

fn mask_value(v: &Value, scanner: Option<&bulwark_scan::Scanner>, depth: usize) -> Value {
    match v {
        Value::String(s) => Value::String(mask_text(s, scanner)),
        Value::Array(a) if depth < 32 => Value::Array(
            a.iter()
                .take(200)
                .map(|x| mask_value(x, scanner, depth + 1))
                .collect(),
        ),
        Value::Object(o) if depth < 32 => Value::Object(
            o.iter()
                .take(200)
                .map(|(k, x)| (k.clone(), mask_value(x, scanner, depth + 1)))
                .collect(),
        ),
        Value::Array(_) | Value::Object(_) => Value::String("[nested too deep to show]".into()),
        other => other.clone(),
    }
}

fn mask_text(s: &str, scanner: Option<&bulwark_scan::Scanner>) -> String {
    let Some(scanner) = scanner else {
        return "[not shown: the masker is unavailable]".into();
    };
    let shown = match scanner.scan(s, bulwark_scan::Scope::Request) {
        Ok(f) if f.is_empty() => s.to_string(),
        Ok(f) => bulwark_scan::mask(s, &f, |f| format!("[{}]", f.label)),
        Err(_) => return "[not shown: too large to scan]".into(),
    };
    if shown.len() > SHOWN_STRING {
        let mut cut = SHOWN_STRING;
        while !shown.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}… [{} bytes]", &shown[..cut], shown.len())
    } else {
        shown
    }
}
