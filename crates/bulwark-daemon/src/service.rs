//! The daemon's request handler: one JSON-RPC line in, one answer out.
//!
//! [`Service`] parses a request, builds the call, decides it through the gate — the same
//! enforcement step every front takes ([`bulwark_gate::Gate::decide`]) — and renders the
//! decision in seed 000's vocabulary. It knows nothing of sockets, so the same code is
//! tested without them and served by [`crate::server`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bulwark_engine::{Call, Decision, Principal, Verdict};
use bulwark_gate::{Approval, Gate, Person};
use serde_json::{Value, json};

use crate::evaluate;
use crate::rpc::{self, RpcError};

pub use bulwark_gate::PolicySource;

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
    gate: Arc<Gate>,
    /// Counters.
    pub stats: Stats,
    started: Instant,
}

impl Service {
    /// A service for the policy at `source` on a gate of its own, writing decisions to
    /// `audit` when given (tests, benches; the binary builds the gate itself).
    pub fn new(
        source: PolicySource,
        audit: Option<Arc<bulwark_audit::AuditLog>>,
    ) -> Result<Service, bulwark_policy::PolicyError> {
        let gate = Gate::load(source, "daemon")?.with_audit(audit);
        Ok(Service::on(Arc::new(gate)))
    }

    /// A service deciding through `gate`.
    pub fn on(gate: Arc<Gate>) -> Service {
        gate.warm_up();
        Service {
            gate,
            stats: Stats::default(),
            started: Instant::now(),
        }
    }

    /// The gate it decides through.
    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
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
                json!({"pong": true, "policy_version": self.gate.policy_version(), "pid": std::process::id()}),
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

    fn count(&self, d: &Decision) {
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
    }

    /// Closes the audit log with a signed closing checkpoint.
    pub fn close_audit(&self) -> Result<(), bulwark_audit::AuditError> {
        match self.gate.audit() {
            Some(a) => a.close(),
            None => Ok(()),
        }
    }

    fn evaluate(&self, params: &Value, peer: &Peer) -> Result<Value, RpcError> {
        let engine = self.gate.engine();
        let limits = &engine.policy().limits;
        let max = (limits.max_args_bytes, limits.max_result_bytes);
        let call = evaluate::call_from_params(params, max, peer.principal())?;
        let ruling = self.gate.decide(&call);
        let mut d = ruling.decision;
        self.count(&d);
        let approval = ruling.approval.map(|a| match a {
            Approval::Pending(r) => {
                d.reason = format!(
                    "{} Waiting for a person: approval request {} (bulwark approvals approve {}); evaluate the same call again for the answer.",
                    d.reason, r.id, r.id
                );
                json!({"id": r.id, "status": "pending", "expires_s": r.expires_s})
            }
            Approval::Used(r) => json!({"id": r.id, "status": "used"}),
            Approval::Denied(r) => json!({"id": r.id, "status": "denied"}),
            Approval::TimedOut(r) => json!({"id": r.id, "status": "expired"}),
            Approval::Unavailable(why) => json!({"status": "unavailable", "reason": why}),
            Approval::Token(_) => json!({"status": "used"}),
        });
        let mut reply = evaluate::reply(&d);
        if let Some(a) = approval {
            reply["approval"] = a;
        }
        Ok(reply)
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
        // `delivered: true` (a hook's PostToolUse): the result has reached the agent whatever
        // is decided, so its taint is kept even when it is blocked. It can only add taint.
        let mut params = params.clone();
        let delivered = params
            .as_object_mut()
            .and_then(|o| o.remove("delivered"))
            .is_some_and(|v| v == Value::Bool(true));
        let d = match self.gate.parse_line(&params.to_string()) {
            Ok(mut l) => {
                l.call.principal = peer.principal();
                let taint = l.session_taint.iter().copied().collect();
                // A hook decides through here: its agent asks its user, not the desk.
                let mut ask = self
                    .gate
                    .call(&l.call)
                    .tainted(taint)
                    .person(Person::Caller);
                if delivered {
                    ask = ask.delivered();
                }
                ask.decide().decision
            }
            Err(e) => {
                let d = self.gate.invalid(&format!("not a call: {e}"));
                let n = self.stats.requests.load(Ordering::Relaxed);
                let call = Call::request(format!("call-{n}"), "(invalid)", Value::Null);
                // A refusal stands whether or not the log takes it.
                let _ = self.gate.record(&call, &d);
                d
            }
        };
        self.count(&d);
        serde_json::to_value(&d).map_err(|e| RpcError::new(rpc::INTERNAL_ERROR, e.to_string()))
    }

    /// Reloads the policy from its source; on failure the previous policy stays in force.
    pub fn reload(&self) -> Result<Value, RpcError> {
        match self.gate.reload() {
            Ok(version) => Ok(json!({"reloaded": true, "policy_version": version})),
            Err(e) => Err(RpcError::new(rpc::INTERNAL_ERROR, e.to_string())),
        }
    }

    /// The counters as JSON.
    pub fn stats_json(&self) -> Value {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let v = &self.stats.verdicts;
        json!({
            "uptime_ms": self.started.elapsed().as_millis() as u64,
            "policy_version": self.gate.policy_version(),
            "requests": g(&self.stats.requests),
            "evaluations": g(&self.stats.evaluations),
            "verdicts": {"allow": g(&v[0]), "warn": g(&v[1]), "mask": g(&v[2]), "approve": g(&v[3]), "block": g(&v[4])},
            "errors": g(&self.stats.errors),
            "cache_hits": g(&self.stats.cache_hits),
            "connections": {"total": g(&self.stats.connections), "open": g(&self.stats.open_connections), "refused": g(&self.stats.refused)},
            "sessions": self.gate.sessions(),
            "fleet": self.gate.escalator().map(|e| e.stats()),
        })
    }
}
