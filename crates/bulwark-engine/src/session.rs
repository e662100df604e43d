//! Per-session state: taint, buckets, loop history, sequence progress, burst history.
//!
//! Everything here is bounded. With the default policy a session costs about 1.5 KiB:
//! three buckets (48 B), 32 call fingerprints and 32 result fingerprints (16 B each),
//! 32 burst hits (call fingerprint and time, 16 B each), two 16-byte progress slots per sequence step, plus the
//! session id, and at most [`MAX_FILE_TEXT`] of script text its commands wrote
//! ([`Session::remember_files`]). `SessionTable` keeps at most `limits.max_sessions` of them and drops any idle
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

/// Files a session's commands wrote that it remembers, and the text it keeps of them in
/// all: a later call that runs one (`sh x.sh` after `cat > x.sh <<EOF`) is judged by what
/// it holds. Past either limit the oldest are forgotten, and a forgotten file runs as a
/// script nobody has seen (as before any was remembered).
pub const MAX_FILES: usize = 16;
/// Bytes of remembered script text per session (see [`MAX_FILES`]).
pub const MAX_FILE_TEXT: usize = 16 * 1024;

/// What a remembered file holds (see [`bulwark_shell::FileContent`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileMemory {
    /// The whole text.
    Text(String),
    /// The known end of a file whose start nobody saw.
    Appended(String),
    /// A download.
    Fetched,
    /// Decoded text of unknown origin.
    Decoded,
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
    /// The fingerprint of the last call that changed the workspace (wrote files), which
    /// cleared the loop history: repeating the very same write is not a new change.
    #[serde(default)]
    pub last_change: Option<u64>,
    /// Recent rule matches at or above the burst severity: the fingerprint of the call that
    /// matched and the time. A burst is several *different* destructive calls; the same
    /// call asked again is a repeat, which the loop guard judges.
    #[serde(deserialize_with = "burst_hits")]
    pub burst: VecDeque<(u64, u64)>,
    /// Progress per policy sequence (index-aligned with `policy.sequences`).
    pub sequences: Vec<SequenceProgress>,
    /// The policy version the sequence progress belongs to.
    pub sequences_version: String,
    /// Placeholder numbers for masked values.
    pub masks: MaskBook,
    /// Files the session's commands wrote, oldest first.
    #[serde(default)]
    pub files: Vec<(String, FileMemory)>,
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

    /// The files remembered, as the command analysis takes them.
    pub fn files(&self) -> Vec<(String, bulwark_shell::FileContent)> {
        use bulwark_shell::FileContent as C;
        self.files
            .iter()
            .map(|(p, m)| {
                let c = match m {
                    FileMemory::Text(t) => C::Text(t.clone()),
                    FileMemory::Appended(t) => C::Appended(t.clone()),
                    FileMemory::Fetched => C::Fetched,
                    FileMemory::Decoded => C::Decoded,
                };
                (p.clone(), c)
            })
            .collect()
    }

    /// Remembers what a call's commands wrote (a file overwritten with something unknown
    /// is forgotten), within [`MAX_FILES`] and [`MAX_FILE_TEXT`].
    pub fn remember_files(&mut self, written: &[(String, bulwark_shell::FileContent)]) {
        use bulwark_shell::FileContent as C;
        for (path, content) in written {
            self.files.retain(|(p, _)| p != path);
            let m = match content {
                C::Text(t) if t.len() <= MAX_FILE_TEXT => FileMemory::Text(t.clone()),
                C::Appended(t) if t.len() <= MAX_FILE_TEXT => FileMemory::Appended(t.clone()),
                C::Fetched => FileMemory::Fetched,
                C::Decoded => FileMemory::Decoded,
                _ => continue,
            };
            self.files.push((path.clone(), m));
        }
        let text = |m: &FileMemory| match m {
            FileMemory::Text(t) | FileMemory::Appended(t) => t.len(),
            _ => 0,
        };
        while self.files.len() > MAX_FILES
            || self.files.iter().map(|(_, m)| text(m)).sum::<usize>() > MAX_FILE_TEXT
        {
            self.files.remove(0);
        }
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
    /// The taint of sessions pushed out by newer ones: without it, anyone able to open
    /// sessions could flood the table until a tainted session is evicted and comes back
    /// clean. Kept in a structure no flood can flush ([`EvictedTaint`]). Idle expiry still
    /// forgets taint, as the policy says.
    evicted_taint: EvictedTaint,
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
        if self.map.peek(id).is_none() {
            // No clock here: a slot whose taint ended is not cleared (stricter).
            self.make_room(0);
        }
        self.map.insert(id.to_string(), session);
    }

    /// A table for at most `max` sessions, each dropped after `idle_ms` without activity.
    pub fn new(max: usize, idle_ms: u64) -> Self {
        SessionTable {
            map: BoundedMap::new(max),
            evicted_taint: EvictedTaint::new(max),
            idle_ms,
            expired: 0,
        }
    }

    /// Evicts the least recently used session when the table is full, remembering its
    /// taint until it would have gone idle.
    fn make_room(&mut self, now_ms: u64) {
        if self.map.len() >= self.map.limit()
            && let Some((old_id, old)) = self.map.pop_oldest()
            && !old.taint.is_empty()
        {
            let until = old.last_seen_ms.saturating_add(self.idle_ms);
            self.evicted_taint
                .remember(&old_id, old.taint, until, now_ms);
        }
    }

    /// The session `id`, created fresh if absent or idle too long.
    pub fn get(&mut self, id: &str, now_ms: u64) -> &mut Session {
        let idle = self.idle_ms;
        let held = self
            .map
            .peek(id)
            .map(|s| now_ms.saturating_sub(s.last_seen_ms) > idle);
        if held == Some(true) {
            self.map.remove(id);
            self.expired += 1;
        }
        let key = id.to_string();
        let mut inherited = TaintSet::NONE;
        if held != Some(false) {
            self.make_room(now_ms);
            // An id idle past its time finds its own slot expired as well; what it can still
            // inherit is only another evicted session's taint sharing the slot (stricter).
            inherited = self.evicted_taint.recall(&key, now_ms);
        }
        let s = self.map.get_or_insert_with(&key, || Session {
            last_seen_ms: now_ms,
            taint: inherited,
            ..Session::default()
        });
        s.last_seen_ms = s.last_seen_ms.max(now_ms);
        s
    }

    /// How many slots hold the taint of evicted sessions (expired ones included).
    pub fn remembered_taint(&self) -> usize {
        self.evicted_taint.held()
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

/// Fewest slots of an [`EvictedTaint`].
const MIN_SLOTS: usize = 1024;
/// Most slots of an [`EvictedTaint`] (8 MiB at 9 bytes a slot).
const MAX_SLOTS: usize = 1 << 20;
/// Slots per session the table holds.
const SLOTS_PER_SESSION: usize = 16;

/// The taint of evicted sessions, in a fixed array of slots that nothing can flush.
///
/// An id maps to one slot by a keyed hash (the key drawn per table, so nobody can pick ids
/// that share a slot with someone else's). Remembering ORs the taint into the slot and
/// pushes its end out; nothing ever removes taint from a slot before its end, so no number
/// of new sessions — tainted or not — can make an evicted session come back clean while it
/// could still be used. The price of that is collisions: an id whose slot another evicted
/// session tainted inherits that taint (stricter, never laxer). With 16 slots per session
/// the table holds, a fresh session inherits taint it did not earn only when many tainted
/// sessions were evicted within the idle time — a flood, under which erring strict is the
/// point. A slot's taint ends when the sessions that put it there would have gone idle.
///
/// The alternative — a bounded map of evicted ids, as before — is exact, but a flood of
/// tainted sessions (a daemon client may send `session_taint`) larger than the map evicts
/// the victim from it too.
#[derive(Debug)]
struct EvictedTaint {
    /// Allocated on the first eviction of a tainted session: most tables never need it.
    taint: Vec<TaintSet>,
    /// Monotonic ms after which the slot's taint no longer counts.
    until_ms: Vec<u64>,
    slots: usize,
    keys: std::collections::hash_map::RandomState,
}

impl EvictedTaint {
    fn new(max_sessions: usize) -> Self {
        let slots = max_sessions
            .saturating_mul(SLOTS_PER_SESSION)
            .clamp(MIN_SLOTS, MAX_SLOTS)
            .next_power_of_two();
        EvictedTaint {
            taint: Vec::new(),
            until_ms: Vec::new(),
            slots,
            keys: std::collections::hash_map::RandomState::new(),
        }
    }

    fn slot(&self, id: &str) -> usize {
        use std::hash::BuildHasher;
        (self.keys.hash_one(id) as usize) & (self.slots - 1)
    }

    /// Remembers `taint` for `id` until `until_ms`; `now_ms` tells ended slots.
    fn remember(&mut self, id: &str, taint: TaintSet, until_ms: u64, now_ms: u64) {
        if self.taint.is_empty() {
            self.taint = vec![TaintSet::NONE; self.slots];
            self.until_ms = vec![0; self.slots];
        }
        let i = self.slot(id);
        let (Some(t), Some(u)) = (self.taint.get_mut(i), self.until_ms.get_mut(i)) else {
            return;
        };
        // An ended slot starts over; a live one only grows, in taint and in time.
        if *u < now_ms {
            *t = TaintSet::NONE;
        }
        *t = t.union(taint);
        *u = (*u).max(until_ms);
    }

    /// The taint remembered for `id` at `now_ms`.
    fn recall(&self, id: &str, now_ms: u64) -> TaintSet {
        let i = self.slot(id);
        match (self.taint.get(i), self.until_ms.get(i)) {
            (Some(t), Some(u)) if *u >= now_ms => *t,
            _ => TaintSet::NONE,
        }
    }

    /// Slots holding taint.
    fn held(&self) -> usize {
        self.taint.iter().filter(|t| !t.is_empty()).count()
    }
}

/// Reads the burst history, also in its earlier shape (times only, kept by hook fronts in a
/// state file across an upgrade): those hits keep counting, each as its own call.
fn burst_hits<'de, D: serde::Deserializer<'de>>(d: D) -> Result<VecDeque<(u64, u64)>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Hit {
        Call(u64, u64),
        Time(u64),
    }
    let hits: Vec<Hit> = Vec::deserialize(d)?;
    Ok(hits
        .into_iter()
        .enumerate()
        .map(|(i, h)| match h {
            Hit::Call(print, at) => (print, at),
            // Distinct made-up fingerprints: never the same call as each other or a new one
            // (a real fingerprint equal to a small index is as unlikely as any collision).
            Hit::Time(at) => (i as u64, at),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulwark_policy::Taint;
    use bulwark_shell::FileContent;

    #[test]
    fn burst_history_in_the_earlier_shape_is_kept() {
        // A hook's state file written before hits carried the call's fingerprint: its
        // times still count, each as a call of its own.
        let mut v = serde_json::to_value(Session::default()).unwrap();
        v["burst"] = serde_json::json!([1000, 2000]);
        let s: Session = serde_json::from_value(v).unwrap();
        assert_eq!(s.burst.len(), 2);
        assert_ne!(s.burst[0].0, s.burst[1].0);
        assert_eq!((s.burst[0].1, s.burst[1].1), (1000, 2000));
        // And the current shape round-trips.
        let mut now = Session::default();
        now.burst.push_back((42, 7));
        let back: Session = serde_json::from_value(serde_json::to_value(&now).unwrap()).unwrap();
        assert_eq!(back.burst, now.burst);
    }

    #[test]
    fn remembered_files_are_bounded_oldest_first() {
        let mut s = Session::default();
        let many: Vec<(String, FileContent)> = (0..MAX_FILES + 5)
            .map(|i| (format!("f{i}.sh"), FileContent::Text(format!("echo {i}"))))
            .collect();
        s.remember_files(&many);
        assert_eq!(s.files.len(), MAX_FILES);
        assert_eq!(s.files[0].0, "f5.sh");
        // Text past the budget pushes the oldest out; a file larger than it is not kept.
        let big = "x".repeat(MAX_FILE_TEXT / 2 + 1);
        s.remember_files(&[("a.sh".into(), FileContent::Text(big.clone()))]);
        s.remember_files(&[("b.sh".into(), FileContent::Text(big.clone()))]);
        assert!(s.files.iter().all(|(p, _)| p != "a.sh"));
        assert!(s.files.iter().any(|(p, _)| p == "b.sh"));
        let huge = "x".repeat(MAX_FILE_TEXT + 1);
        s.remember_files(&[("b.sh".into(), FileContent::Text(huge))]);
        assert!(
            s.files.iter().all(|(p, _)| p != "b.sh"),
            "too large: forgotten"
        );
        // Overwritten with something unknown: forgotten.
        s.remember_files(&[("f9.sh".into(), FileContent::Unknown)]);
        assert!(s.files.iter().all(|(p, _)| p != "f9.sh"));
        // A download is remembered as one, and survives a round trip through JSON.
        s.remember_files(&[("i.sh".into(), FileContent::Fetched)]);
        let back: Session = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert!(
            back.files()
                .contains(&("i.sh".to_string(), FileContent::Fetched))
        );
        // Sessions stored before files were remembered still load.
        let mut old = serde_json::to_value(Session::default()).unwrap();
        old.as_object_mut().unwrap().remove("files");
        assert!(
            serde_json::from_value::<Session>(old)
                .unwrap()
                .files
                .is_empty()
        );
    }

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
        // Clean sessions leave nothing behind: the victim's slot is the only one.
        assert_eq!(t.remembered_taint(), 1);
    }

    #[test]
    fn a_tainted_flood_of_ten_tables_does_not_wash_taint_away() {
        // Flood sessions that carry taint themselves (a daemon client may send
        // `session_taint`): each one evicted is remembered too, and must not push the
        // victim's taint out of whatever remembers evicted sessions.
        let max = 256;
        let mut t = SessionTable::new(max, 60_000);
        t.get("victim", 0)
            .add_taint([Taint::PrivateData].into_iter().collect());
        let untrusted: TaintSet = [Taint::UntrustedInput].into_iter().collect();
        for i in 0..10 * max {
            t.get(&format!("flood-{i}"), 1).add_taint(untrusted);
        }
        assert!(t.peek("victim").is_none(), "evicted");
        assert!(t.get("victim", 2).taint.contains(Taint::PrivateData));
        // Imported sessions that push a tainted one out remember it as well.
        let mut t = SessionTable::new(2, 60_000);
        t.get("victim", 0)
            .add_taint([Taint::PrivateData].into_iter().collect());
        for i in 0..20 {
            t.import(&format!("file-{i}"), Session::default());
        }
        assert!(t.peek("victim").is_none(), "evicted");
        assert!(t.get("victim", 2).taint.contains(Taint::PrivateData));
    }

    #[test]
    fn remembered_taint_ends_with_the_idle_time() {
        let mut t = SessionTable::new(1, 1000);
        t.get("victim", 0)
            .add_taint([Taint::PrivateData].into_iter().collect());
        t.get("other", 10);
        // Within its idle time the evicted session comes back tainted …
        assert!(t.get("victim", 500).taint.contains(Taint::PrivateData));
        t.get("other", 600);
        // … after it, it would have expired in the table too, and starts fresh.
        assert!(t.get("victim", 5000).taint.is_empty());
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
