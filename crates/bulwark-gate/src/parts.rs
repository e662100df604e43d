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
//! })?;
//! # let _ = gate; Ok(()) }
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use bulwark_approvals::Desk;
use bulwark_audit::AuditLog;
use bulwark_audit::metrics::Metrics;
use bulwark_engine::Policy;

use crate::gate::{Gate, PolicySource};
use crate::ledger::{Ledger, UsedError};
use crate::memory::MemoryStore;

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
}

impl Gate {
    /// The gate for a front: the in-process store (with the ledger on disk when asked), the
    /// audit log, metrics when counted, and the desk over the state directory's approvals
    /// (recording into the same log). Warmed up.
    pub fn assemble(p: Parts) -> Result<Gate, PartsError> {
        let requests = bulwark_approvals::Store::open(
            &p.state_dir.join("approvals"),
            p.policy.approvals.max_pending,
        )?;
        let desk = Desk::new(requests, p.approval_key, p.front).with_audit(p.audit.clone());
        let mut store = MemoryStore::new(&p.policy);
        if p.ledger {
            let now_s = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            store = store.with_ledger(Ledger::open(&p.state_dir.join("approvals-used"), now_s)?);
        }
        let gate = Gate::with_source(p.policy, p.source, p.front)
            .with_state_dir(p.state_dir.clone())
            .with_store(Arc::new(store))
            .with_audit(p.audit)
            .with_desk(Some(Arc::new(desk)))
            .with_metrics(p.count.then(|| Arc::new(Metrics::new())));
        gate.warm_up();
        Ok(gate)
    }
}
