//! The evaluator every local front shares, and the daemon's request handler on top of it.
//!
//! [`Evaluator`] is the engine with its state behind a lock and a monotonic clock: what
//! `libbulwark` exposes, what hooks use without a daemon, and what the daemon serves.
//! [`Service`] answers one JSON-RPC line; it knows nothing of sockets, so the same code is
//! tested without them and served by [`crate::server`].

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bulwark_audit::AuditLog;
use bulwark_audit::metrics::{Metrics, StageTimer};
use std::time::Instant;

use bulwark_engine::{Call, Decision, Engine, Principal, SharedEngine, Verdict};
use bulwark_policy::Policy;
use serde_json::{Value, json};

use crate::evaluate;
use crate::rpc::{self, RpcError};

/// The shared engine and a monotonic clock: what `libbulwark` exposes, what hooks use
/// without a daemon, and what the daemon serves.
pub struct Evaluator {
    shared: SharedEngine,
    clock: Instant,
}

impl Evaluator {
    /// An evaluator for `policy`.
    pub fn new(policy: Policy) -> Evaluator {
        Evaluator {
            shared: SharedEngine::new(policy),
            clock: Instant::now(),
        }
    }

    /// Builds first-use tables before the first real call ([`SharedEngine::warm_up`]).
    pub fn warm_up(&self) {
        self.shared.warm_up();
    }

    /// Milliseconds on this evaluator's monotonic clock.
    pub fn now_ms(&self) -> u64 {
        self.clock.elapsed().as_millis() as u64
    }

    /// Decides one call. `eval_us` includes any wait for the state lock: it is the time the
    /// caller spent waiting for its decision.
    pub fn evaluate(&self, call: &Call) -> Decision {
        let t0 = Instant::now();
        let mut d = self.shared.evaluate(call, self.now_ms());
        d.eval_us = t0.elapsed().as_micros() as u64;
        d
    }

    /// Decides a `bulwark check` line ([`SharedEngine::evaluate_line`]).
    pub fn evaluate_line(&self, text: &str) -> Decision {
        let t0 = Instant::now();
        let mut d = self.shared.evaluate_line(text, self.now_ms());
        d.eval_us = t0.elapsed().as_micros() as u64;
        d
    }

    /// Decides one call, timing its stages for `metrics` when this call is sampled.
    pub fn evaluate_measured(&self, call: &Call, metrics: Option<&Metrics>) -> Decision {
        match metrics {
            Some(m) if m.sample_stages() => {
                let t0 = Instant::now();
                let mut timer = StageTimer::default();
                let mut d = self
                    .shared
                    .evaluate_observed(call, self.now_ms(), &mut timer);
                d.eval_us = t0.elapsed().as_micros() as u64;
                m.observe_stages(&timer);
                d
            }
            _ => self.evaluate(call),
        }
    }

    /// Settles a decision the verdict cache missed ([`SharedEngine::settle_escalation`]).
    pub fn settle_escalation(&self, esc: &dyn Escalator, call: &Call, d: Decision) -> Decision {
        self.shared
            .settle_escalation(esc, call, d, || self.now_ms())
    }

    /// Decides one call after raising its session's taint by `taint`.
    pub fn evaluate_tainted(&self, call: &Call, taint: &[bulwark_engine::Taint]) -> Decision {
        let t0 = Instant::now();
        let mut d = self.shared.evaluate_tainted(call, self.now_ms(), taint);
        d.eval_us = t0.elapsed().as_micros() as u64;
        d
    }

    /// Decides a `bulwark check` line for `principal`, on this evaluator's clock
    /// ([`SharedEngine::evaluate_line_as`]).
    pub fn evaluate_line_as(&self, text: &str, principal: Principal) -> Decision {
        let t0 = Instant::now();
        let mut d = self.shared.evaluate_line_as(text, self.now_ms(), principal);
        d.eval_us = t0.elapsed().as_micros() as u64;
        d
    }

    /// Decides `call` with its session restored from, and returned as, a snapshot
    /// ([`SharedEngine::evaluate_with_session`]).
    pub fn evaluate_with_session(
        &self,
        call: &Call,
        snapshot: Option<bulwark_engine::session::Session>,
        now_ms: u64,
    ) -> (Decision, Option<bulwark_engine::session::Session>) {
        let t0 = Instant::now();
        let (mut d, s) = self.shared.evaluate_with_session(call, snapshot, now_ms);
        d.eval_us = t0.elapsed().as_micros() as u64;
        (d, s)
    }

    /// The policy in force.
    pub fn policy(&self) -> Arc<Engine> {
        self.shared.engine()
    }

    /// Puts a new policy in force. Sessions, pins and cached verdicts stay.
    pub fn replace_policy(&self, policy: Policy) {
        self.shared.replace_policy(policy);
    }

    /// Caches a fleet verdict for `tool_hash` ([`SharedEngine::cache_verdict`]).
    pub fn cache_verdict(&self, tool_hash: [u8; 32], verdict: Verdict, ttl_min: u64) {
        self.shared
            .cache_verdict(tool_hash, verdict, ttl_min, self.now_ms());
    }

    /// Drops every cached fleet verdict.
    pub fn flush_verdicts(&self) {
        self.shared.flush_verdicts();
    }

    /// Turns the lockdown stage on or off (the fleet's kill switch).
    pub fn set_lockdown(&self, on: bool) {
        self.shared.set_lockdown(on);
    }

    /// Lets the call with `digest` through once within `ttl_ms` (a person approved it).
    pub fn grant(&self, digest: String, ttl_ms: u64) {
        let until = self.now_ms().saturating_add(ttl_ms);
        self.shared.state().grant(digest, until);
    }

    /// How many sessions are held.
    pub fn sessions(&self) -> usize {
        self.shared.sessions()
    }
}

/// How the daemon reaches the fleet (the engine's [`bulwark_engine::Escalator`]; the
/// binary implements it with `bulwark-fleet`'s MQTT client, so the evaluator builds and
/// tests without a broker).
pub use bulwark_engine::Escalator;

/// Where the policy comes from, for `reload`.
#[derive(Clone, Debug)]
pub enum PolicySource {
    /// The built-in default.
    Builtin,
    /// A file.
    File(PathBuf),
}

impl PolicySource {
    /// Loads it.
    pub fn load(&self) -> Result<Policy, bulwark_policy::PolicyError> {
        match self {
            PolicySource::Builtin => Policy::builtin(),
            PolicySource::File(p) => bulwark_policy::load_file(p),
        }
    }
}

/// Who is on the other end of a connection.
#[derive(Clone, Debug, Default)]
pub struct Peer {
    /// The peer's user id, from the kernel.
    pub uid: Option<u32>,
    /// Its process id.
    pub pid: Option<i32>,
}

impl Peer {
    fn principal(&self) -> Principal {
        Principal {
            id: self.uid.map(|u| format!("uid:{u}")),
            verified: self.uid.is_some(),
        }
    }
}

/// Counters for `stats`.
#[derive(Debug, Default)]
pub struct Stats {
    /// Requests read.
    pub requests: AtomicU64,
    /// `evaluate` and `check` calls decided.
    pub evaluations: AtomicU64,
    /// Decisions by verdict: allow, warn, mask, approve, block.
    pub verdicts: [AtomicU64; 5],
    /// Error replies.
    pub errors: AtomicU64,
    /// Verdict-cache hits.
    pub cache_hits: AtomicU64,
    /// Connections accepted so far.
    pub connections: AtomicU64,
    /// Connections open now.
    pub open_connections: AtomicU64,
    /// Connections refused (peer not allowed, too many).
    pub refused: AtomicU64,
}

/// The daemon's request handler.
pub struct Service {
    /// The shared evaluator.
    pub evaluator: Evaluator,
    source: PolicySource,
    audit: Option<Arc<AuditLog>>,
    metrics: Option<Arc<Metrics>>,
    approvals: Option<Arc<bulwark_approvals::Desk>>,
    escalator: Option<Arc<dyn Escalator>>,
    /// Counters.
    pub stats: Stats,
    started: Instant,
}

impl Service {
    /// A service for the policy at `source`, writing decisions to `audit` when given.
    pub fn new(
        source: PolicySource,
        audit: Option<Arc<AuditLog>>,
    ) -> Result<Service, bulwark_policy::PolicyError> {
        let policy = source.load()?;
        let evaluator = Evaluator::new(policy);
        evaluator.warm_up();
        Ok(Service {
            evaluator,
            source,
            audit,
            metrics: None,
            approvals: None,
            escalator: None,
            stats: Stats::default(),
            started: Instant::now(),
        })
    }

    /// Counts every decision in `metrics` too (served by the front's admin listener).
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Service {
        self.metrics = Some(metrics);
        self
    }

    /// Sends the calls the policy escalates to the fleet through `escalator`.
    pub fn with_escalator(mut self, escalator: Option<Arc<dyn Escalator>>) -> Service {
        self.escalator = escalator;
        self
    }

    /// Asks `desk` about calls that need a person: the first `evaluate` of such a call
    /// answers `PENDING` with the request's id, later ones the person's answer.
    pub fn with_approvals(mut self, desk: Option<Arc<bulwark_approvals::Desk>>) -> Service {
        self.approvals = desk;
        self
    }

    /// Answers one request line; `None` for a notification.
    pub fn handle(&self, line: &[u8], peer: &Peer) -> Option<String> {
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        let req = match rpc::parse(line) {
            Ok(r) => r,
            Err((id, e)) => {
                self.stats.errors.fetch_add(1, Ordering::Relaxed);
                return Some(rpc::error(id.as_ref(), &e));
            }
        };
        let result = match req.method.as_str() {
            "evaluate" => self.evaluate(&req.params, peer),
            "check" => self.check(&req.params, peer),
            "ping" => Ok(
                json!({"pong": true, "policy_version": self.evaluator.policy().policy().version}),
            ),
            "stats" => Ok(self.stats_json()),
            "reload" => self.reload(),
            other => Err(RpcError::new(
                rpc::METHOD_NOT_FOUND,
                format!("method {other:?} not found: evaluate, check, ping, stats and reload are"),
            )),
        };
        let id = req.id?;
        Some(match result {
            Ok(v) => rpc::reply(&id, v),
            Err(e) => {
                self.stats.errors.fetch_add(1, Ordering::Relaxed);
                rpc::error(Some(&id), &e)
            }
        })
    }

    fn record(&self, d: &Decision, call: &Call) -> Result<(), RpcError> {
        self.stats.evaluations.fetch_add(1, Ordering::Relaxed);
        let i = match d.decision {
            Verdict::Allow => 0,
            Verdict::Warn => 1,
            Verdict::Mask => 2,
            Verdict::Approve => 3,
            Verdict::Block => 4,
        };
        self.stats.verdicts[i].fetch_add(1, Ordering::Relaxed);
        if d.cache_hit {
            self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(m) = &self.metrics {
            m.observe("daemon", d);
        }
        if let Some(a) = &self.audit {
            // A decision the log cannot hold is not given: the caller gets an error instead.
            if let Err(e) = a.record(&bulwark_audit::Entry::for_call("daemon", call, d)) {
                eprintln!("bulwark daemon: {e}");
                return Err(RpcError::new(
                    rpc::INTERNAL_ERROR,
                    format!("the audit log cannot be written, so the call is not decided: {e}"),
                ));
            }
        }
        Ok(())
    }

    /// Closes the audit log with a signed closing checkpoint.
    pub fn close_audit(&self) -> Result<(), bulwark_audit::AuditError> {
        match &self.audit {
            Some(a) => a.close(),
            None => Ok(()),
        }
    }

    fn evaluate(&self, params: &Value, peer: &Peer) -> Result<Value, RpcError> {
        let engine = self.evaluator.policy();
        let limits = &engine.policy().limits;
        let max = (limits.max_args_bytes, limits.max_result_bytes);
        let call = evaluate::call_from_params(params, max, peer.principal())?;
        let mut d = self
            .evaluator
            .evaluate_measured(&call, self.metrics.as_deref());
        if let Some(esc) = &self.escalator {
            d = self.evaluator.settle_escalation(esc.as_ref(), &call, d);
        }
        let mut approval = None;
        if d.decision == Verdict::Approve
            && let Some(desk) = &self.approvals
        {
            approval = Some(self.ask(desk, &call, &mut d));
        }
        self.record(&d, &call)?;
        if let Some(esc) = &self.escalator {
            esc.observe(&d);
        }
        let mut reply = evaluate::reply(&d);
        if let Some(a) = approval {
            reply["approval"] = a;
        }
        Ok(reply)
    }

    /// Asks the desk about a call the engine says needs a person; `d` becomes the answer
    /// (still `approve` while it waits). Returns what the reply says of the request.
    fn ask(&self, desk: &bulwark_approvals::Desk, call: &Call, d: &mut Decision) -> Value {
        use bulwark_approvals::Outcome;
        use bulwark_engine::ReasonCode;
        let engine = self.evaluator.policy();
        let ask = bulwark_approvals::Ask::for_call("daemon", call, d, engine.policy());
        let now_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|t| t.as_secs())
            .unwrap_or(0);
        let refuse = |d: &mut Decision, code: Option<ReasonCode>, reason: String| {
            d.decision = Verdict::Block;
            if code.is_some() {
                d.reason_code = code;
            }
            d.reason = reason;
            d.safer_alternative = Some(
                "Do not retry this call as it is; ask the user what they want instead.".into(),
            );
        };
        let outcome = match &ask {
            Some(ask) => desk.ask(ask, now_s),
            None => Outcome::Unavailable("the decision names no call to approve".into()),
        };
        match outcome {
            Outcome::Pending(r) => {
                d.reason = format!(
                    "{} Waiting for a person: approval request {} (bulwark approvals approve {}); evaluate the same call again for the answer.",
                    d.reason, r.id, r.id
                );
                json!({"id": r.id, "status": "pending", "expires_s": r.expires_s})
            }
            Outcome::Granted(r) => {
                self.evaluator.grant(r.digest.clone(), 60_000);
                let mut again = self.evaluator.evaluate(call);
                again.eval_us += d.eval_us;
                *d = again;
                json!({"id": r.id, "status": "used"})
            }
            refused => {
                let about = match &refused {
                    Outcome::Denied(r) => json!({"id": r.id, "status": "denied"}),
                    Outcome::TimedOut(r) => json!({"id": r.id, "status": "expired"}),
                    Outcome::Unavailable(why) => json!({"status": "unavailable", "reason": why}),
                    Outcome::Pending(_) | Outcome::Granted(_) => json!({}),
                };
                if let Some((code, reason)) = refused.refusal(&d.reason) {
                    refuse(d, code, reason);
                }
                about
            }
        }
    }

    fn check(&self, params: &Value, peer: &Peer) -> Result<Value, RpcError> {
        if !params.is_object() {
            return Err(RpcError::params(
                "check: params must be one `bulwark check` call object",
            ));
        }
        if params.get("time_ms").is_some() {
            // Time decides when taint expires and buckets refill; only the daemon's clock may.
            return Err(RpcError::params(
                "time_ms: not accepted over the socket; the daemon's own clock is used",
            ));
        }
        let n = self.stats.requests.load(Ordering::Relaxed);
        let (d, call) = match bulwark_engine::line::parse(&params.to_string(), &format!("call-{n}"))
        {
            Ok(mut l) => {
                l.call.principal = peer.principal();
                let mut d = self.evaluator.evaluate_tainted(&l.call, &l.session_taint);
                // Hooks decide through here: the fleet answers for them as for `evaluate`.
                if let Some(esc) = &self.escalator {
                    d = self.evaluator.settle_escalation(esc.as_ref(), &l.call, d);
                }
                (d, l.call)
            }
            Err(e) => (
                Decision::invalid_input(
                    format!("not a call: {e}"),
                    &self.evaluator.policy().policy().version,
                ),
                Call::request(format!("call-{n}"), "(invalid)", Value::Null),
            ),
        };
        self.record(&d, &call)?;
        if let Some(esc) = &self.escalator {
            esc.observe(&d);
        }
        serde_json::to_value(&d).map_err(|e| RpcError::new(rpc::INTERNAL_ERROR, e.to_string()))
    }

    /// Reloads the policy from its source; on failure the previous policy stays in force.
    pub fn reload(&self) -> Result<Value, RpcError> {
        if let Some(v) = self.escalator.as_ref().and_then(|e| e.fleet_policy()) {
            return Err(RpcError::new(
                rpc::INTERNAL_ERROR,
                format!(
                    "the fleet's policy version {v} is in force; publish a newer one instead (bulwark fleet publish-policy)"
                ),
            ));
        }
        match self.source.load() {
            Ok(p) => {
                let version = p.version.clone();
                self.evaluator.replace_policy(p);
                Ok(json!({"reloaded": true, "policy_version": version}))
            }
            Err(e) => Err(RpcError::new(
                rpc::INTERNAL_ERROR,
                format!("reload failed; the previous policy stays in force: {e}"),
            )),
        }
    }

    /// The counters as JSON.
    pub fn stats_json(&self) -> Value {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let v = &self.stats.verdicts;
        json!({
            "uptime_ms": self.started.elapsed().as_millis() as u64,
            "policy_version": self.evaluator.policy().policy().version,
            "requests": g(&self.stats.requests),
            "evaluations": g(&self.stats.evaluations),
            "verdicts": {"allow": g(&v[0]), "warn": g(&v[1]), "mask": g(&v[2]), "approve": g(&v[3]), "block": g(&v[4])},
            "errors": g(&self.stats.errors),
            "cache_hits": g(&self.stats.cache_hits),
            "connections": {"total": g(&self.stats.connections), "open": g(&self.stats.open_connections), "refused": g(&self.stats.refused)},
                        "sessions": self.evaluator.sessions(),
            "fleet": self.escalator.as_ref().map(|e| e.stats()),
        })
    }
}
