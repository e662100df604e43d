//! Where the gate keeps what decisions remember: the [`Store`] trait.
//!
//! A decision needs its session and the tables every session shares
//! ([`bulwark_engine::Tables`]); between decisions the gate also keeps the fleet's verdicts,
//! the kill switch, pins, and the ledger of approval tokens already used. The gate asks for
//! all of it through this trait, so the same gate runs on the in-process store
//! ([`crate::MemoryStore`], sharded) or on one shared by several replicas.
//!
//! What an implementation must guarantee, whatever it keeps the state in:
//!
//! - **One decision sees one session whole.** [`Store::decide`] gives its closure the
//!   session alone: no other decision of the same session runs in between, and what the
//!   closure changed is in place before the next one starts. Decisions of *different*
//!   sessions must not wait on each other.
//! - **Taint only grows.** Whatever a store does to merge a session written back by two
//!   replicas at once, the taint it keeps is the union of both ([`Store::add_taint`] is a
//!   union too). A session the store forgets (idle expiry, eviction) keeps its taint as
//!   long as the in-process store would ([`bulwark_engine::session::SessionTable`]).
//! - **Each table operation is atomic** ([`bulwark_engine::Tables`]): a rate draw takes a
//!   token from every bucket a call needs or from none (one script per decision, not a
//!   read-modify-write); a pin is set only where none is.
//! - **A token is used once, everywhere.** [`Store::claim_token`] succeeds for exactly one
//!   caller per token until the token expires.
//! - **Failing closed.** When the state cannot be reached, methods return a
//!   [`StoreError`]; the gate turns that into a refusal, never a decision that reads as
//!   clean.

use std::sync::Arc;

use bulwark_engine::pins::{Pin, PinRecord};
use bulwark_engine::{Session, Tables, TaintSet, Verdict};

/// Why the store could not answer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store is out of reach (a connection, a timeout).
    #[error("the state store is unavailable: {0}")]
    Unavailable(String),
    /// The used-token ledger could not be written.
    #[error(transparent)]
    Ledger(#[from] crate::ledger::UsedError),
}

/// One decision's closure: the session it decides in and the shared tables.
pub type DecideFn<'a> = dyn FnMut(&mut Session, &mut dyn Tables) + 'a;

/// Where sessions and shared tables live.
pub trait Store: Send + Sync {
    /// Runs one decision: `decide` gets session `id` (created if absent or idle past the
    /// policy's limit) and the shared tables; what it changes is kept before this returns.
    fn decide(&self, id: &str, now_ms: u64, decide: &mut DecideFn<'_>) -> Result<(), StoreError>;

    /// Runs one decision in a session the caller holds (a request that names no session,
    /// a hook's session file), with this store's shared tables.
    fn decide_in(&self, session: &mut Session, decide: &mut DecideFn<'_>)
    -> Result<(), StoreError>;

    /// Adds `taint` to session `id` (created if absent); returns its taint now.
    fn add_taint(&self, id: &str, taint: TaintSet, now_ms: u64) -> Result<TaintSet, StoreError>;

    /// The taint of session `id` (none when it is not held).
    fn taint(&self, id: &str, now_ms: u64) -> Result<TaintSet, StoreError>;

    /// A copy of session `id`, if held.
    fn export_session(&self, id: &str) -> Result<Option<Session>, StoreError>;

    /// Puts a session in, replacing one with the same id: what a front loaded from where
    /// it keeps sessions between processes.
    fn import_session(&self, id: &str, session: Session) -> Result<(), StoreError>;

    /// How many sessions are held.
    fn sessions(&self) -> usize;

    /// Turns the runtime kill switch on or off.
    fn set_lockdown(&self, on: bool) -> Result<(), StoreError>;

    /// Whether the runtime kill switch is on.
    fn lockdown(&self) -> bool;

    /// Caches the fleet's verdict for a tool for `ttl_min` minutes (0 removes it).
    fn cache_verdict(
        &self,
        tool_hash: [u8; 32],
        verdict: Verdict,
        ttl_min: u64,
        now_ms: u64,
    ) -> Result<(), StoreError>;

    /// Drops every cached verdict.
    fn flush_verdicts(&self) -> Result<(), StoreError>;

    /// The pin of a tool on a server.
    fn pin(&self, server: Option<&str>, tool: &str) -> Result<Option<Arc<Pin>>, StoreError>;

    /// Replaces one server's pins with stored ones.
    fn import_pins(&self, server: Option<&str>, records: &[PinRecord]) -> Result<(), StoreError>;

    /// Takes in pins kept outside the store (a replica's pin file) without undoing what
    /// the store knows: a tool the store has no pin for gets the file's (quarantine
    /// included); a tool it has one for keeps it. So on a store other replicas share, a
    /// stale file can add pins and quarantines but never lift one; a person's accept goes
    /// through [`Store::accept_pins`]. The in-process store has no other replica: the file
    /// replaces its pins, as [`Store::import_pins`] does.
    fn merge_pins(&self, server: Option<&str>, records: &[PinRecord]) -> Result<(), StoreError> {
        self.import_pins(server, records)
    }

    /// A person accepted these pins (`bulwark pins accept`): each is set as given and its
    /// quarantine lifted; the server's other pins stay as they are.
    fn accept_pins(&self, server: Option<&str>, records: &[PinRecord]) -> Result<(), StoreError> {
        let mut all = self.export_pins(server)?;
        for r in records {
            let accepted = PinRecord {
                withheld: None,
                reason: None,
                offered: None,
                ..r.clone()
            };
            match all
                .iter_mut()
                .find(|p| p.tool.eq_ignore_ascii_case(&r.tool))
            {
                Some(p) => *p = accepted,
                None => all.push(accepted),
            }
        }
        self.import_pins(server, &all)
    }

    /// One server's pins, for storing.
    fn export_pins(&self, server: Option<&str>) -> Result<Vec<PinRecord>, StoreError>;

    /// Claims approval token `token` for one use until `expires_s`: `false` when it was
    /// used (or claimed) already. Claiming and checking are one step.
    fn claim_token(&self, token: &str, expires_s: u64, now_s: u64) -> Result<bool, StoreError>;

    /// Gives back a claim that was not used (the call did not go through).
    fn release_token(&self, token: &str);

    /// Makes a used token's use durable before the call it approved is released.
    fn spend_token(&self, token: &str, expires_s: u64) -> Result<(), StoreError>;

    /// Whether a token was used already (or cannot be remembered, which reads as used).
    fn token_used(&self, token: &str) -> bool;

    /// Keeps a front's record `value` under (`kind`, `id`) for `ttl_ms`, where every
    /// replica on this store can read it back (an MCP session's registration, so another
    /// replica can take the session over). The in-process store keeps nothing: there is no
    /// other replica to read it.
    fn put_record(&self, kind: &str, id: &str, value: &str, ttl_ms: u64) -> Result<(), StoreError> {
        let _ = (kind, id, value, ttl_ms);
        Ok(())
    }

    /// The record [`Store::put_record`] kept under (`kind`, `id`), if it has not expired.
    fn record(&self, kind: &str, id: &str) -> Result<Option<String>, StoreError> {
        let _ = (kind, id);
        Ok(None)
    }

    /// Forgets the record under (`kind`, `id`).
    fn remove_record(&self, kind: &str, id: &str) -> Result<(), StoreError> {
        let _ = (kind, id);
        Ok(())
    }

    /// Where approval requests live when this store is shared by replicas on other machines
    /// (they share no state directory): a backend for [`bulwark_approvals::Store::shared`],
    /// so a request created on one replica is answered and used through any other. `None`
    /// (the in-process store): the requests stay in the state directory's file.
    fn approvals(self: Arc<Self>) -> Option<Arc<dyn bulwark_approvals::Shared>> {
        None
    }

    /// Whether other processes share this store. A shared store's time stamps are compared
    /// across processes, so a gate on it reads the wall clock ([`crate::Clock::wall`])
    /// instead of one counting from its own start.
    fn shared(&self) -> bool {
        false
    }

    /// Why decisions are being made on this process's own state instead of the shared
    /// store (a shared store that is out of reach, configured to degrade rather than
    /// refuse); `None` when they are not. The gate marks every decision made meanwhile.
    fn degraded(&self) -> Option<String> {
        None
    }
}
