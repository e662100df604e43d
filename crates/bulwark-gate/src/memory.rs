//! The in-process store: sessions in shards, shared tables behind short locks.
//!
//! Sessions are spread over up to [`MAX_SHARDS`] shards by a keyed hash of their id, each
//! shard a [`SessionTable`] behind its own lock, held for one decision of one of its
//! sessions. Two sessions in different shards never wait on each other; two in the same
//! shard take turns, and the shard count keeps that rare. The hash key is drawn per
//! process, so nobody can choose session ids that all land in one shard.
//!
//! The tables every session shares are each behind a lock of their own, taken for one
//! [`Tables`] operation at a time — a rate draw, a pin lookup — never for a whole decision:
//! the expensive part of a decision (parsing a command, scanning content) holds no lock that
//! another session needs. With the default policy (session rate limits only) a decision takes
//! none of them but the kill switch's atomic flag.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use bulwark_engine::pins::{Pin, PinRecord, Pins};
use bulwark_engine::session::SessionTable;
use bulwark_engine::stages::rate::{Draw, Wait};
use bulwark_engine::state::{Buckets, MAX_CACHED_VERDICTS, MAX_PINS};
use bulwark_engine::verdict_cache::VerdictCache;
use bulwark_engine::{Policy, ReasonCode, Session, Tables, TaintSet, Verdict};

use crate::ledger::Ledger;
use crate::store::{DecideFn, Store, StoreError};

/// Most session shards.
pub const MAX_SHARDS: usize = 16;
/// Fewest sessions per shard: a small session limit is kept in fewer shards, so that the
/// limit holds as written (a policy allowing 3 sessions gets one shard of 3).
pub const MIN_PER_SHARD: usize = 256;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// The tables shared by every session of a [`MemoryStore`].
struct Shared {
    buckets: Mutex<Buckets>,
    verdicts: Mutex<VerdictCache>,
    pins: RwLock<Pins>,
    lockdown: AtomicBool,
}

impl Shared {
    fn pins(&self) -> std::sync::RwLockReadGuard<'_, Pins> {
        match self.pins.read() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    fn pins_mut(&self) -> std::sync::RwLockWriteGuard<'_, Pins> {
        match self.pins.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
}

/// One decision's handle on the shared tables: each call locks what it touches, briefly.
struct Lease<'a>(&'a Shared);

impl Tables for Lease<'_> {
    fn lockdown(&self) -> bool {
        self.0.lockdown.load(Ordering::Acquire)
    }

    fn draw(&mut self, draw: &Draw<'_>, take: bool, now_ms: u64) -> Wait {
        lock(&self.0.buckets).draw(draw, take, now_ms)
    }

    fn verdict(&mut self, tool_hash: &[u8; 32], now_ms: u64) -> Option<Verdict> {
        lock(&self.0.verdicts).get(tool_hash, now_ms)
    }

    fn pin(&self, server: Option<&str>, tool: &str) -> Option<Arc<Pin>> {
        self.0.pins().get_shared(server, tool)
    }

    fn pins_full(&self) -> bool {
        self.0.pins().is_full()
    }

    fn pinned_elsewhere(&self, server: Option<&str>, tool: &str) -> Option<(String, String)> {
        self.0.pins().other_server(server, tool)
    }

    fn pin_definition(
        &mut self,
        server: Option<&str>,
        tool: &str,
        digest: String,
        schema: &serde_json::Value,
    ) {
        self.0.pins_mut().on_allowed(server, tool, digest, schema);
    }

    fn quarantine(
        &mut self,
        server: Option<&str>,
        tool: &str,
        digest: String,
        code: ReasonCode,
        reason: String,
    ) {
        self.0
            .pins_mut()
            .quarantine(server, tool, digest, code, reason);
    }
}

/// Sessions and shared tables in this process.
pub struct MemoryStore {
    shards: Box<[Mutex<SessionTable>]>,
    keys: std::collections::hash_map::RandomState,
    shared: Shared,
    ledger: Ledger,
}

impl MemoryStore {
    /// A store sized by `policy`'s limits (sessions, idle time), with an in-memory ledger.
    pub fn new(policy: &Policy) -> MemoryStore {
        let limits = &policy.limits;
        let max = limits.max_sessions.max(1);
        let shards = (max / MIN_PER_SHARD).clamp(1, MAX_SHARDS);
        let per_shard = max.div_ceil(shards);
        MemoryStore {
            shards: (0..shards)
                .map(|_| Mutex::new(SessionTable::new(per_shard, limits.session_idle_ms)))
                .collect(),
            keys: std::collections::hash_map::RandomState::new(),
            shared: Shared {
                buckets: Mutex::new(Buckets::default()),
                verdicts: Mutex::new(VerdictCache::new(MAX_CACHED_VERDICTS)),
                pins: RwLock::new(Pins::new(MAX_PINS)),
                lockdown: AtomicBool::new(false),
            },
            ledger: Ledger::in_memory(),
        }
    }

    /// The same store keeping its used-token ledger in `ledger` (a file under the state
    /// directory).
    pub fn with_ledger(mut self, ledger: Ledger) -> MemoryStore {
        self.ledger = ledger;
        self
    }

    /// How many shards the sessions are spread over.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Which shard keeps session `id` (for tests and benches that need two sessions
    /// apart).
    pub fn shard_of(&self, id: &str) -> usize {
        if self.shards.len() == 1 {
            0
        } else {
            (self.keys.hash_one(id) as usize) % self.shards.len()
        }
    }

    fn shard(&self, id: &str) -> MutexGuard<'_, SessionTable> {
        lock(&self.shards[self.shard_of(id)])
    }
}

impl Store for MemoryStore {
    fn decide(&self, id: &str, now_ms: u64, decide: &mut DecideFn<'_>) -> Result<(), StoreError> {
        let mut shard = self.shard(id);
        let session = shard.get(id, now_ms);
        decide(session, &mut Lease(&self.shared));
        Ok(())
    }

    fn decide_in(
        &self,
        session: &mut Session,
        decide: &mut DecideFn<'_>,
    ) -> Result<(), StoreError> {
        decide(session, &mut Lease(&self.shared));
        Ok(())
    }

    fn add_taint(&self, id: &str, taint: TaintSet, now_ms: u64) -> Result<TaintSet, StoreError> {
        let mut shard = self.shard(id);
        let s = shard.get(id, now_ms);
        s.add_taint(taint);
        Ok(s.taint())
    }

    fn taint(&self, id: &str, now_ms: u64) -> Result<TaintSet, StoreError> {
        Ok(self.shard(id).get(id, now_ms).taint())
    }

    fn export_session(&self, id: &str) -> Result<Option<Session>, StoreError> {
        Ok(self.shard(id).export(id))
    }

    fn import_session(&self, id: &str, session: Session) -> Result<(), StoreError> {
        self.shard(id).import(id, session);
        Ok(())
    }

    fn sessions(&self) -> usize {
        self.shards.iter().map(|s| lock(s).len()).sum()
    }

    fn set_lockdown(&self, on: bool) -> Result<(), StoreError> {
        self.shared.lockdown.store(on, Ordering::Release);
        Ok(())
    }

    fn lockdown(&self) -> bool {
        self.shared.lockdown.load(Ordering::Acquire)
    }

    fn cache_verdict(
        &self,
        tool_hash: [u8; 32],
        verdict: Verdict,
        ttl_min: u64,
        now_ms: u64,
    ) -> Result<(), StoreError> {
        // A verdict the cache does not take (not allow, warn or block) is not cached, so
        // the tool stays escalated.
        let _ = lock(&self.shared.verdicts).insert(tool_hash, verdict, ttl_min, now_ms);
        Ok(())
    }

    fn flush_verdicts(&self) -> Result<(), StoreError> {
        lock(&self.shared.verdicts).clear();
        Ok(())
    }

    fn pin(&self, server: Option<&str>, tool: &str) -> Result<Option<Arc<Pin>>, StoreError> {
        Ok(self.shared.pins().get_shared(server, tool))
    }

    fn import_pins(&self, server: Option<&str>, records: &[PinRecord]) -> Result<(), StoreError> {
        self.shared.pins_mut().import(server, records);
        Ok(())
    }

    fn export_pins(&self, server: Option<&str>) -> Result<Vec<PinRecord>, StoreError> {
        Ok(self.shared.pins().export(server))
    }

    fn claim_token(&self, token: &str, expires_s: u64, now_s: u64) -> Result<bool, StoreError> {
        Ok(self.ledger.claim(token, expires_s, now_s))
    }

    fn release_token(&self, token: &str) {
        self.ledger.release(token);
    }

    fn spend_token(&self, token: &str, expires_s: u64) -> Result<(), StoreError> {
        Ok(self.ledger.persist(token, expires_s)?)
    }

    fn token_used(&self, token: &str) -> bool {
        self.ledger.is_used(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulwark_engine::Taint;

    fn policy(yaml: &str) -> Policy {
        bulwark_policy::load_str("t.yaml", yaml).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_small_session_limit_is_one_exact_shard() {
        let s = MemoryStore::new(&policy("version: 1\nlimits: { max_sessions: 3 }\n"));
        assert_eq!(s.shard_count(), 1);
        for i in 0..10 {
            s.add_taint(&format!("s{i}"), TaintSet::NONE, 0).ok();
        }
        assert_eq!(s.sessions(), 3);
        let big = MemoryStore::new(&Policy::builtin().unwrap_or_else(|e| panic!("{e}")));
        assert_eq!(big.shard_count(), MAX_SHARDS);
    }

    #[test]
    fn taint_only_grows_and_survives_a_flood() {
        let s = MemoryStore::new(&policy("version: 1\nlimits: { max_sessions: 300 }\n"));
        let private: TaintSet = [Taint::PrivateData].into_iter().collect();
        s.add_taint("victim", private, 0).ok();
        s.add_taint("victim", TaintSet::NONE, 1).ok();
        for i in 0..5000 {
            s.add_taint(&format!("flood-{i}"), TaintSet::NONE, 2).ok();
        }
        assert!(
            s.taint("victim", 3)
                .is_ok_and(|t| t.contains(Taint::PrivateData))
        );
    }

    #[test]
    fn a_tainted_flood_of_ten_tables_does_not_wash_taint_away() {
        // What a daemon client can do: open sessions that carry taint (`session_taint`),
        // ten times as many as the store holds.
        let s = MemoryStore::new(&policy("version: 1\nlimits: { max_sessions: 1024 }\n"));
        let private: TaintSet = [Taint::PrivateData].into_iter().collect();
        let untrusted: TaintSet = [Taint::UntrustedInput].into_iter().collect();
        s.add_taint("victim", private, 0).ok();
        for i in 0..10 * 1024 {
            s.add_taint(&format!("flood-{i}"), untrusted, 1).ok();
        }
        assert!(s.sessions() <= 1024);
        assert!(
            s.taint("victim", 2)
                .is_ok_and(|t| t.contains(Taint::PrivateData))
        );
    }
}
