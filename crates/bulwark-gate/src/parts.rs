//! A front's gate from what the binary loaded: the policy, the state directory, the audit
//! log and the approval key.
//!
//! ```no_run
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use bulwark_gate::{Gate, Parts, PolicySource};
//! let gate = Gate::assemble(Parts {
//!     front: "proxy",
//!     policy: bulwark_engine::Policy::builtin()?,
//!     source: PolicySource::Builtin,
//!     state_dir: "/var/lib/bulwark".into(),
//!     audit: None,
//!     approval_key: [7; 32],
//!     count: true,
//!     ledger: true,
//!     store: None,
//!     admin: false,
//! })?;
//! # let _ = gate; Ok(()) }
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use bulwark_approvals::Desk;
use bulwark_audit::AuditLog;
use bulwark_audit::metrics::Metrics;
use bulwark_engine::Policy;
use bulwark_policy::{ApprovalChannel, StateBackend};

use crate::gate::{Gate, PolicySource};
use crate::ledger::{Ledger, UsedError};
use crate::memory::MemoryStore;
use crate::store::Store;

/// What a front's gate is made of.
pub struct Parts {
    /// The front's name (`mcp`, `proxy`, `daemon`).
    pub front: &'static str,
    /// The policy, loaded.
    pub policy: Policy,
    /// Where it came from, for a reload.
    pub source: PolicySource,
    /// The state directory: approvals under `approvals/`, the used-token ledger in
    /// `approvals-used`.
    pub state_dir: PathBuf,
    /// The audit log, when one was asked for.
    pub audit: Option<Arc<AuditLog>>,
    /// The key approval tokens are signed with.
    pub approval_key: [u8; 32],
    /// Count decisions in metrics (an admin listener serves them).
    pub count: bool,
    /// Keep the used-token ledger on disk, so a restart does not revive a used token (the
    /// proxy, which honours tokens); otherwise it is kept in memory.
    pub ledger: bool,
    /// The store the policy's `state:` section asked for, when it is not this process's
    /// memory (the binary opens it: `bulwark-store-redis`); `None` for the in-process one.
    pub store: Option<Arc<dyn Store>>,
    /// The front serves an admin listener, so `bulwark approvals approve` can answer it
    /// (the `cli` channel).
    pub admin: bool,
}

/// Why a gate could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum PartsError {
    /// The approvals store could not be opened.
    #[error(transparent)]
    Approvals(#[from] bulwark_approvals::StoreError),
    /// The used-token ledger could not be read.
    #[error(transparent)]
    Ledger(#[from] UsedError),
    /// The policy keeps state in a shared store and none was given: deciding on this
    /// process's own state would multiply every limit and lose taint across replicas.
    #[error(
        "the policy keeps state in a shared store (state.backend: {0}), and this gate was given none"
    )]
    NoSharedStore(&'static str),
}

impl Gate {
    /// The gate for a front: the in-process store (with the ledger on disk when asked), the
    /// audit log, metrics when counted, and the desk over the state directory's approvals
    /// (recording into the same log). Warmed up.
    pub fn assemble(p: Parts) -> Result<Gate, PartsError> {
        let store: Arc<dyn Store> = match (p.store, p.policy.state.backend) {
            (Some(s), _) => s,
            (None, StateBackend::Redis) => return Err(PartsError::NoSharedStore("redis")),
            (None, StateBackend::Memory) => {
                Arc::new(Self::memory_store(&p.policy, p.ledger, &p.state_dir)?)
            }
        };
        // Replicas share the store, not a directory: their requests go where the store is.
        let requests = match Arc::clone(&store).approvals() {
            Some(shared) => {
                bulwark_approvals::Store::shared(shared, p.policy.approvals.max_pending)
            }
            None => bulwark_approvals::Store::open(
                &p.state_dir.join("approvals"),
                p.policy.approvals.max_pending,
            )?,
        };
        let desk = Desk::new(requests, p.approval_key, p.front).with_audit(p.audit.clone());
        // Every front runs the approvals service (the inbox, a webhook); the CLI needs the
        // admin listener; in-protocol answers come through the MCP front, header tokens
        // through the proxy.
        let mut reachable = vec![ApprovalChannel::Inbox, ApprovalChannel::Webhook];
        if p.admin {
            reachable.push(ApprovalChannel::Cli);
        }
        match p.front {
            "mcp" => reachable.push(ApprovalChannel::Mcp),
            "proxy" => reachable.push(ApprovalChannel::Header),
            _ => {}
        }
        let gate = Gate::with_source(p.policy, p.source, p.front)
            .with_reachable(reachable)
            .with_state_dir(p.state_dir.clone())
            .with_store(store)
            .with_audit(p.audit)
            .with_desk(Some(Arc::new(desk)))
            .with_metrics(p.count.then(|| Arc::new(Metrics::new())));
        gate.warm_up();
        Ok(gate)
    }

    fn memory_store(
        policy: &Policy,
        ledger: bool,
        state_dir: &std::path::Path,
    ) -> Result<MemoryStore, PartsError> {
        let mut store = MemoryStore::new(policy);
        if ledger {
            let now_s = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            store = store.with_ledger(Ledger::open(&state_dir.join("approvals-used"), now_s)?);
        }
        Ok(store)
    }
}
