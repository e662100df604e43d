//! Per-session state: taint, buckets, loop history, sequence progress, burst history.
//!
//! Everything here is bounded. With the default policy a session costs about 1.5 KiB:
//! three buckets (48 B), 32 call fingerprints and 32 result fingerprints (16 B each),
//! 32 burst timestamps (8 B each), two 16-byte progress slots per sequence step, plus the
//! session id. `SessionTable` keeps at most `limits.max_sessions` of them and drops any idle
//! longer than `limits.session_idle_secs`.

use std::collections::VecDeque;

use bulwark_policy::{Policy, TaintSet};
use serde::{Deserialize, Serialize};

use crate::bounded::BoundedMap;
use crate::bucket::Bucket;

/// How many recent call and result fingerprints a session remembers.
pub const HISTORY: usize = 32;

/// Buckets for one scope: all calls, network calls, actuations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeBuckets {
    /// All calls.
    pub calls: Option<Bucket>,
    /// Network calls.
    pub network: Option<Bucket>,
    /// Actuations.
    pub actuate: Option<Bucket>,
}

/// Progress of one capability sequence: for each prefix length k, the latest start (time and
/// call number) of any match of the first k steps. Latest starts keep the most room in the
/// window, so this finds a match whenever one exists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceProgress {
    /// `best[k-1]`: latest start of a match of steps `0..k`.
    pub best: Vec<Option<(u64, u64)>>,
}

/// Most distinct masked values a session numbers; beyond it the oldest are forgotten (a
/// value seen again after that gets a new number).
pub const MAX_MASKED_VALUES: usize = 256;

/// Placeholder numbers: the same value gets the same placeholder within a session. Holds
/// hashes of the values, never the values.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MaskBook {
    ids: VecDeque<(u64, u32)>,
    counters: Vec<(String, u32)>,
}

impl MaskBook {
    /// The number for `value` under `label`, assigning the next one on first sight.
    pub fn number(&mut self, label: &str, value: &str) -> u32 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (label, value).hash(&mut h);
        let key = h.finish();
        if let Some(&(_, n)) = self.ids.iter().find(|(k, _)| *k == key) {
            return n;
        }
        let n = match self.counters.iter_mut().find(|(l, _)| l == label) {
            Some((_, c)) => {
                *c += 1;
                *c
            }
            None => {
                self.counters.push((label.to_string(), 1));
                1
            }
        };
        if self.ids.len() == MAX_MASKED_VALUES {
            self.ids.pop_front();
        }
        self.ids.push_back((key, n));
        n
    }
}

/// One session. Serialisable, so fronts that run one process per call (agent hooks) can
/// keep it in a file between calls.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Session {
    /// The taint collected so far; only grows ([`Session::add_taint`]).
    pub(crate) taint: TaintSet,
    /// Last activity on the monotonic clock.
    pub last_seen_ms: u64,
    /// Calls seen that acted (requests and proposals that were not blocked).
    pub calls: u64,
    /// Rate buckets.
    pub buckets: ScopeBuckets,
    /// Recent call fingerprints with their time.
    pub recent_calls: VecDeque<(u64, u64)>,
    /// Recent result fingerprints with their time.
    pub recent_results: VecDeque<(u64, u64)>,
    /// Times of recent rule matches at or above the burst severity.
    pub burst: VecDeque<u64>,
    /// Progress per policy sequence (index-aligned with `policy.sequences`).
    pub sequences: Vec<SequenceProgress>,
    /// The policy version the sequence progress belongs to.
    pub sequences_version: String,
    /// Placeholder numbers for masked values.
    pub masks: MaskBook,
}

impl Session {
    /// The taint collected so far.
    pub fn taint(&self) -> TaintSet {
        self.taint
    }

    /// Adds `taint`: the only way a session's taint changes, and it only grows.
    pub fn add_taint(&mut self, taint: TaintSet) {
        self.taint = self.taint.union(taint);
    }

    /// Pushes a fingerprint into a bounded history.
    pub fn remember(history: &mut VecDeque<(u64, u64)>, fingerprint: u64, now_ms: u64) {
        if history.len() == HISTORY {
            history.pop_front();
        }
        history.push_back((fingerprint, now_ms));
    }

    /// Sequence progress shaped for `policy`, reset if the policy changed.
    pub fn sequences_for(&mut self, policy: &Policy) -> &mut Vec<SequenceProgress> {
        if self.sequences_version != policy.version
            || self.sequences.len() != policy.sequences.len()
        {
            self.sequences = policy
                .sequences
                .iter()
                .map(|s| SequenceProgress {
                    best: vec![None; s.steps.len()],
                })
                .collect();
            self.sequences_version = policy.version.clone();
        }
        &mut self.sequences
    }
}

/// All sessions, bounded in count and idle time.
#[derive(Debug)]
pub struct SessionTable {
    map: BoundedMap<String, Session>,
    /// The taint of sessions pushed out by newer ones, by a digest of their id: without it,
    /// anyone able to open sessions could flood the table until a tainted session is
    /// evicted and comes back clean. Idle expiry still forgets taint, as the policy says.
    evicted_taint: BoundedMap<u64, TaintSet>,
    idle_ms: u64,
    expired: u64,
}

impl SessionTable {
    /// A copy of session `id`, if it is held.
    pub fn export(&self, id: &str) -> Option<Session> {
        self.map.peek(id).cloned()
    }

    /// Puts a session back (replacing one with the same id), e.g. from a state file.
    pub fn import(&mut self, id: &str, session: Session) {
        self.map.insert(id.to_string(), session);
    }

    /// A table for at most `max` sessions, each dropped after `idle_ms` without activity.
    pub fn new(max: usize, idle_ms: u64) -> Self {
        SessionTable {
            map: BoundedMap::new(max),
            evicted_taint: BoundedMap::new(max.saturating_mul(4).max(1024)),
            idle_ms,
            expired: 0,
        }
    }

    /// The session `id`, created fresh if absent or idle too long.
    pub fn get(&mut self, id: &str, now_ms: u64) -> &mut Session {
        let idle = self.idle_ms;
        let held = self
            .map
            .peek(id)
            .map(|s| now_ms.saturating_sub(s.last_seen_ms) > idle);
        let stale = held == Some(true);
        if stale {
            self.map.remove(id);
            self.expired += 1;
        }
        let key = id.to_string();
        let mut inherited = TaintSet::NONE;
        if held != Some(false) {
            if self.map.len() >= self.map.limit()
                && let Some((old_id, old)) = self.map.pop_oldest()
                && !old.taint.is_empty()
            {
                self.evicted_taint.insert(id_digest(&old_id), old.taint);
            }
            if !stale && let Some(t) = self.evicted_taint.remove(&id_digest(&key)) {
                inherited = t;
            }
        }
        let s = self.map.get_or_insert_with(&key, || Session {
            last_seen_ms: now_ms,
            taint: inherited,
            ..Session::default()
        });
        s.last_seen_ms = s.last_seen_ms.max(now_ms);
        s
    }

    /// How many evicted sessions' taint is remembered.
    pub fn remembered_taint(&self) -> usize {
        self.evicted_taint.len()
    }

    /// The session `id` without creating or touching it.
    pub fn peek(&self, id: &str) -> Option<&Session> {
        self.map.peek(id)
    }

    /// Drops every session idle longer than the limit; returns how many.
    pub fn expire(&mut self, now_ms: u64) -> usize {
        let before = self.map.len();
        let idle = self.idle_ms;
        self.map
            .retain(|_, s| now_ms.saturating_sub(s.last_seen_ms) <= idle);
        let n = before - self.map.len();
        self.expired += n as u64;
        n
    }

    /// Number of live sessions.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Sessions evicted because the table was full.
    pub fn evicted(&self) -> u64 {
        self.map.evicted()
    }

    /// Sessions dropped for idleness.
    pub fn expired(&self) -> u64 {
        self.expired
    }
}

/// A fixed-key digest of a session id. A collision can only give a session taint it did not
/// earn (stricter), never take taint away.
fn id_digest(id: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulwark_policy::Taint;

    #[test]
    fn evicts_the_least_recently_used_session_when_full() {
        let mut t = SessionTable::new(2, 60_000);
        t.get("a", 0)
            .add_taint([Taint::PrivateData].into_iter().collect());
        t.get("b", 1);
        t.get("a", 2);
        t.get("c", 3);
        assert_eq!(t.len(), 2);
        assert!(t.peek("b").is_none());
        assert!(t.peek("a").unwrap().taint.contains(Taint::PrivateData));
        assert_eq!(t.evicted(), 1);
    }

    #[test]
    fn flooding_the_table_does_not_wash_taint_away() {
        let mut t = SessionTable::new(4, 60_000);
        t.get("victim", 0)
            .add_taint([Taint::PrivateData].into_iter().collect());
        for i in 0..1000 {
            t.get(&format!("flood-{i}"), 1);
        }
        assert!(t.peek("victim").is_none(), "evicted");
        assert!(t.get("victim", 2).taint.contains(Taint::PrivateData));
        // Clean sessions leave nothing behind.
        assert_eq!(t.remembered_taint(), 0);
    }

    #[test]
    fn idle_sessions_start_fresh() {
        let mut t = SessionTable::new(10, 1000);
        t.get("a", 0)
            .add_taint([Taint::UntrustedInput].into_iter().collect());
        assert!(!t.get("a", 500).taint.is_empty());
        assert!(t.get("a", 2000).taint.is_empty());
        t.get("b", 2000);
        assert_eq!(t.expire(5000), 2);
        assert!(t.is_empty());
    }
}
