//! Everything the engine remembers between calls, owned by the front and passed in.
//!
//! The engine keeps no state of its own: a front holds one `State` (behind whatever lock
//! or shard it likes) and hands it to [`crate::Engine::evaluate`] with each call. That is what
//! lets the same engine run in a single-threaded CLI, a multi-threaded gateway and behind a
//! C ABI.

use bulwark_policy::Policy;

use crate::bounded::BoundedMap;
use crate::pins::Pins;
use crate::session::{ScopeBuckets, SessionTable};
use crate::verdict_cache::VerdictCache;

/// Most principals and tools with their own rate buckets.
pub const MAX_SCOPED_BUCKETS: usize = 10_000;
/// Most tools in the verdict cache.
pub const MAX_CACHED_VERDICTS: usize = 10_000;
/// Most pinned tool definitions.
pub const MAX_PINS: usize = 10_000;

/// The engine's state.
#[derive(Debug)]
pub struct State {
    /// Sessions.
    pub sessions: SessionTable,
    /// Per-principal buckets.
    pub principal_buckets: BoundedMap<String, ScopeBuckets>,
    /// Per-tool buckets.
    pub tool_buckets: BoundedMap<String, ScopeBuckets>,
    /// Global buckets.
    pub global_buckets: ScopeBuckets,
    /// Fleet verdicts.
    pub verdicts: VerdictCache,
    /// Pinned definitions.
    pub pins: Pins,
    /// Approvals granted for exact calls, by call digest, with their expiry.
    pub grants: BoundedMap<String, u64>,
    /// The runtime kill switch (signal or fleet), on top of the policy's.
    pub lockdown: bool,
}

impl State {
    /// Fresh state sized by the policy's limits.
    pub fn new(policy: &Policy) -> State {
        State::with_limits(&policy.limits, policy.approvals.max_pending)
    }

    fn with_limits(limits: &bulwark_policy::LimitPolicy, max_grants: usize) -> State {
        State {
            sessions: SessionTable::new(limits.max_sessions, limits.session_idle_ms),
            principal_buckets: BoundedMap::new(MAX_SCOPED_BUCKETS),
            tool_buckets: BoundedMap::new(MAX_SCOPED_BUCKETS),
            global_buckets: ScopeBuckets::default(),
            verdicts: VerdictCache::new(MAX_CACHED_VERDICTS),
            pins: Pins::new(MAX_PINS),
            grants: BoundedMap::new(max_grants),
            lockdown: false,
        }
    }

    /// Grants a single-use approval for the call with this digest until `expires_ms`.
    pub fn grant(&mut self, call_digest: String, expires_ms: u64) {
        self.grants.insert(call_digest, expires_ms);
    }
}

/// One evaluation's view of the state: its session, looked up once, and the shared maps.
pub(crate) struct Env<'s> {
    pub(crate) session: &'s mut crate::session::Session,
    pub(crate) principal_buckets: &'s mut BoundedMap<String, ScopeBuckets>,
    pub(crate) tool_buckets: &'s mut BoundedMap<String, ScopeBuckets>,
    pub(crate) global_buckets: &'s mut ScopeBuckets,
    pub(crate) verdicts: &'s mut VerdictCache,
    pub(crate) pins: &'s mut Pins,
    pub(crate) grants: &'s mut BoundedMap<String, u64>,
    pub(crate) lockdown: bool,
}

impl State {
    pub(crate) fn env(&mut self, session: &str, now_ms: u64) -> Env<'_> {
        Env {
            session: self.sessions.get(session, now_ms),
            principal_buckets: &mut self.principal_buckets,
            tool_buckets: &mut self.tool_buckets,
            global_buckets: &mut self.global_buckets,
            verdicts: &mut self.verdicts,
            pins: &mut self.pins,
            grants: &mut self.grants,
            lockdown: self.lockdown,
        }
    }
}
