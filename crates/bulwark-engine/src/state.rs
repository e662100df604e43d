//! Everything the engine remembers between calls, owned by the front and passed in.
//!
//! The engine keeps no state of its own. What one decision reads and changes comes in two
//! parts:
//!
//! - **its session** ([`Session`]): taint, the session's rate buckets, loop and sequence
//!   history, burst hits, mask numbers. Nothing another session touches.
//! - **the tables every session shares** ([`Tables`]): rate buckets above the session
//!   (principal, tool, global), the runtime kill switch, the fleet's cached verdicts, the
//!   pins of tool definitions, and stored approval grants.
//!
//! [`State`] holds both for one owner — the CLI, tests, a scratch evaluation — and is what
//! [`crate::Engine::evaluate`] takes. A front that decides from many threads keeps sessions
//! and tables apart instead (the gate shards sessions so that two never wait on each other,
//! and keeps the tables behind short locks) and calls [`crate::Engine::decide`] with one
//! session and its tables. Every [`Tables`] operation is one atomic step on its own, which is
//! what lets a store put the tables somewhere shared between processes.
//!
//! Taint only grows: nothing outside the engine can lower it ([`Session::add_taint`] and
//! [`State::add_taint`] are the only ways in).

use std::sync::Arc;

use bulwark_policy::{Policy, ReasonCode, TaintSet, Verdict};

use crate::bounded::BoundedMap;
use crate::pins::{Pin, PinRecord, Pins};
use crate::session::{ScopeBuckets, Session, SessionTable};
use crate::stages::rate::{Draw, Wait};
use crate::verdict_cache::{CacheError, VerdictCache};

/// Most principals and tools with their own rate buckets.
pub const MAX_SCOPED_BUCKETS: usize = 10_000;
/// Most tools in the verdict cache.
pub const MAX_CACHED_VERDICTS: usize = 10_000;
/// Most pinned tool definitions.
pub const MAX_PINS: usize = 10_000;

/// The state sessions share, as the pipeline sees it: one atomic operation per method.
///
/// The engine calls these while it decides, never anything else of the store, and each one
/// is a step that either happens whole or not at all — a draw from every bucket or from
/// none, a pin set only if absent — so a store may keep the tables behind short locks, or
/// in another process, without a decision ever seeing half of another's change.
pub trait Tables {
    /// Whether the runtime kill switch (a signal, the fleet) is on.
    fn lockdown(&self) -> bool;
    /// Draws one token from every bucket above the session that `draw` names — from all of
    /// them or from none. With `take` false nothing is drawn; the waits are only measured
    /// (buckets are still created full on first use). Returns the longest wait; 0 when the
    /// tokens were there (and, with `take`, drawn).
    fn draw(&mut self, draw: &Draw<'_>, take: bool, now_ms: u64) -> Wait;
    /// The fleet's cached verdict for the tool with this hash, unless expired.
    fn verdict(&mut self, tool_hash: &[u8; 32], now_ms: u64) -> Option<Verdict>;
    /// The pin of a tool on a server.
    fn pin(&self, server: Option<&str>, tool: &str) -> Option<Arc<Pin>>;
    /// Whether no new tool can be pinned ([`Pins::is_full`]).
    fn pins_full(&self) -> bool;
    /// A tool pinned already that this one would shadow, as (server, tool): the same name
    /// on another server, or a look-alike name on any ([`crate::pins::Pins::other_server`]).
    fn pinned_elsewhere(&self, server: Option<&str>, tool: &str) -> Option<(String, String)>;
    /// A definition that went through: pinned if the tool had no pin; a pin with the same
    /// digest and no schema learns this one's.
    fn pin_definition(
        &mut self,
        server: Option<&str>,
        tool: &str,
        digest: String,
        schema: &serde_json::Value,
    );
    /// Withholds a tool for what its definition (`digest`) said.
    fn quarantine(
        &mut self,
        server: Option<&str>,
        tool: &str,
        digest: String,
        code: ReasonCode,
        reason: String,
    );
    /// Whether a stored grant approves the call with `digest` at `now_ms`. Stores that pass
    /// approvals with each decision instead ([`crate::Pass::approval`]) keep none.
    fn granted(&self, _digest: &str, _now_ms: u64) -> bool {
        false
    }
    /// Uses a stored grant up.
    fn use_grant(&mut self, _digest: &str) {}
}

/// The shared tables of a [`State`]: plain maps, one owner.
#[derive(Debug)]
struct Shared {
    buckets: Buckets,
    verdicts: VerdictCache,
    pins: Pins,
    grants: BoundedMap<String, u64>,
    lockdown: bool,
}

/// Buckets above the session, for stores to keep: per principal, per tool, and global.
#[derive(Debug)]
pub struct Buckets {
    principal: BoundedMap<String, ScopeBuckets>,
    tool: BoundedMap<String, ScopeBuckets>,
    global: ScopeBuckets,
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets {
            principal: BoundedMap::new(MAX_SCOPED_BUCKETS),
            tool: BoundedMap::new(MAX_SCOPED_BUCKETS),
            global: ScopeBuckets::default(),
        }
    }
}

impl Buckets {
    /// [`Tables::draw`] on these buckets.
    pub fn draw(&mut self, draw: &Draw<'_>, take: bool, now_ms: u64) -> Wait {
        let principal = draw.principal.map(|(k, s)| {
            (
                self.principal
                    .get_or_insert_with(&k.to_owned(), ScopeBuckets::default),
                s,
            )
        });
        let tool = draw.tool.map(|(k, s)| {
            (
                self.tool
                    .get_or_insert_with(&k.to_owned(), ScopeBuckets::default),
                s,
            )
        });
        let global = draw.global.map(|s| (&mut self.global, s));
        crate::stages::rate::draw_from([principal, tool, global], draw, take, now_ms)
    }
}

impl Tables for Shared {
    fn lockdown(&self) -> bool {
        self.lockdown
    }

    fn draw(&mut self, draw: &Draw<'_>, take: bool, now_ms: u64) -> Wait {
        self.buckets.draw(draw, take, now_ms)
    }

    fn verdict(&mut self, tool_hash: &[u8; 32], now_ms: u64) -> Option<Verdict> {
        self.verdicts.get(tool_hash, now_ms)
    }

    fn pin(&self, server: Option<&str>, tool: &str) -> Option<Arc<Pin>> {
        self.pins.get_shared(server, tool)
    }

    fn pins_full(&self) -> bool {
        self.pins.is_full()
    }

    fn pinned_elsewhere(&self, server: Option<&str>, tool: &str) -> Option<(String, String)> {
        self.pins.other_server(server, tool)
    }

    fn pin_definition(
        &mut self,
        server: Option<&str>,
        tool: &str,
        digest: String,
        schema: &serde_json::Value,
    ) {
        self.pins.on_allowed(server, tool, digest, schema);
    }

    fn quarantine(
        &mut self,
        server: Option<&str>,
        tool: &str,
        digest: String,
        code: ReasonCode,
        reason: String,
    ) {
        self.pins.quarantine(server, tool, digest, code, reason);
    }

    fn granted(&self, digest: &str, now_ms: u64) -> bool {
        self.grants.peek(digest).is_some_and(|exp| *exp > now_ms)
    }

    fn use_grant(&mut self, digest: &str) {
        self.grants.remove(digest);
    }
}

/// The engine's state for one owner: sessions and the tables they share.
#[derive(Debug)]
pub struct State {
    sessions: SessionTable,
    shared: Shared,
}

impl State {
    /// Fresh state sized by the policy's limits.
    pub fn new(policy: &Policy) -> State {
        let limits = &policy.limits;
        State {
            sessions: SessionTable::new(limits.max_sessions, limits.session_idle_ms),
            shared: Shared {
                buckets: Buckets::default(),
                verdicts: VerdictCache::new(MAX_CACHED_VERDICTS),
                pins: Pins::new(MAX_PINS),
                grants: BoundedMap::new(policy.approvals.max_pending),
                lockdown: false,
            },
        }
    }

    /// Grants a single-use approval for the call with this digest until `expires_ms`: the
    /// next decision of that exact call that it lets through uses it up.
    pub fn grant(&mut self, call_digest: String, expires_ms: u64) {
        self.shared.grants.insert(call_digest, expires_ms);
    }

    /// Adds `taint` to session `id` (created if absent); returns its taint now.
    pub fn add_taint(&mut self, id: &str, taint: TaintSet, now_ms: u64) -> TaintSet {
        let s = self.sessions.get(id, now_ms);
        s.add_taint(taint);
        s.taint()
    }

    /// The taint of session `id`, if it is held.
    pub fn taint(&self, id: &str) -> Option<TaintSet> {
        self.sessions.peek(id).map(Session::taint)
    }

    /// Turns the runtime kill switch on or off.
    pub fn set_lockdown(&mut self, on: bool) {
        self.shared.lockdown = on;
    }

    /// Whether the runtime kill switch is on.
    pub fn lockdown(&self) -> bool {
        self.shared.lockdown
    }

    /// Caches the fleet's verdict for a tool ([`VerdictCache::insert`]).
    pub fn cache_verdict(
        &mut self,
        tool_hash: [u8; 32],
        verdict: Verdict,
        ttl_minutes: u64,
        now_ms: u64,
    ) -> Result<u64, CacheError> {
        self.shared
            .verdicts
            .insert(tool_hash, verdict, ttl_minutes, now_ms)
    }

    /// The fleet's cached verdict for a tool, unless expired.
    pub fn cached_verdict(&mut self, tool_hash: &[u8; 32], now_ms: u64) -> Option<Verdict> {
        self.shared.verdicts.get(tool_hash, now_ms)
    }

    /// Drops every cached fleet verdict.
    pub fn flush_verdicts(&mut self) {
        self.shared.verdicts.clear();
    }

    /// The pin of a tool on a server.
    pub fn pin(&self, server: Option<&str>, tool: &str) -> Option<&Pin> {
        self.shared.pins.get(server, tool)
    }

    /// Replaces one server's pins with stored ones ([`Pins::import`]).
    pub fn import_pins(&mut self, server: Option<&str>, records: &[PinRecord]) {
        self.shared.pins.import(server, records);
    }

    /// One server's pins, for storing ([`Pins::export`]).
    pub fn export_pins(&self, server: Option<&str>) -> Vec<PinRecord> {
        self.shared.pins.export(server)
    }

    /// The sessions, to look at.
    pub fn sessions(&self) -> &SessionTable {
        &self.sessions
    }

    /// A copy of session `id`, if it is held (for fronts that keep sessions in files).
    pub fn export_session(&self, id: &str) -> Option<Session> {
        self.sessions.export(id)
    }

    /// Puts a session back, replacing one with the same id: what a front loaded from where
    /// it keeps sessions between processes.
    pub fn import_session(&mut self, id: &str, session: Session) {
        self.sessions.import(id, session);
    }

    /// The session `id` and the shared tables, for one decision.
    pub(crate) fn env(&mut self, session: &str, now_ms: u64) -> Env<'_> {
        Env {
            session: self.sessions.get(session, now_ms),
            tables: &mut self.shared,
        }
    }
}

/// One evaluation's view of the state: its session, looked up once, and the shared tables.
pub(crate) struct Env<'s> {
    pub(crate) session: &'s mut Session,
    pub(crate) tables: &'s mut dyn Tables,
}
