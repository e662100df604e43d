//! Bulwark's shared state store on Redis (or Valkey): several gateway replicas behind a load
//! balancer decide as one.
//!
//! [`RedisStore`] implements the gate's [`Store`] so that what one replica learns every
//! replica knows: a session's taint, capability-sequence progress and loop history (the
//! whole [`Session`]); the rate buckets above the session (principal, tool, global); the
//! fleet's cached verdicts; pins and quarantines of tool definitions; the runtime kill
//! switch; and the set of approval tokens already used.
//!
//! How each part keeps the store's contract ([`bulwark_gate::store`]):
//!
//! - **One decision sees one session whole.** A decision takes its session's lock and reads
//!   the session in one script (`SET NX PX`, then `GET`), and writes it back and lets go in
//!   another: two round trips per decision, whichever replica decides. Decisions of the same
//!   session on one replica queue on an in-process lock first, so they never spin on the
//!   server; a replica that died holding a lock holds it at most [`LOCK_MS`].
//! - **Taint only grows.** Taint is kept apart from the session blob as a bit set and every
//!   write merges it with `bit.bor` inside the script: two replicas writing the same session
//!   back keep the union, whichever wrote last.
//! - **Atomic table operations.** A rate draw is one script over every bucket the call needs
//!   (all or none, on the server's clock); a pin is set only where there is none; a
//!   quarantine is one script.
//! - **A token is used once, everywhere**: `SET NX EXAT` on the token's MAC, kept until the
//!   token expires.
//! - **Fail closed.** Every wait is bounded by `state.timeout_ms`; a store out of reach is a
//!   [`StoreError::Unavailable`], which the gate turns into a refusal, or — with
//!   `on_unavailable: local` — a decision on this replica's own [`MemoryStore`] that the
//!   gate marks as degraded in its reason and audit record. Connections are remade with
//!   exponential backoff (50 ms to 2 s), and while the backoff runs a decision fails at once
//!   instead of waiting out a connect timeout.
//!
//! **Key design decision: the synchronous client, called on the deciding thread.** The
//! gate's decide path is synchronous (the engine is sans-I/O and the fronts call the gate
//! from their request tasks, as they already do for CPU work of the same order); two
//! loopback round trips cost tens of microseconds — about what the engine spends parsing a
//! command — and every read and write is bounded by `timeout_ms`, so a slow store holds a
//! runtime worker for at most that long per step and, once down, for nothing at all while
//! the backoff runs. The alternative, the async client with its connection manager behind
//! a `block_on` or a channel, would add a thread hop per round trip and the tokio
//! integration's compile time, for no lower latency; a front that wants the wait off its
//! runtime can call the gate in `spawn_blocking`.
//!
//! Keys (all under `state.prefix`): `P:s:ID` session blob and `P:t:ID` its taint (both
//! expiring after the policy's idle time; ID is a digest of the session id, so key length
//! is bounded and ids do not leak), `P:l:ID` its lock, `P:sessions` the index that evicts
//! past `limits.max_sessions`, `P:b:…` buckets (expiring after their period, when they
//! would be full again), `P:v:HASH` cached verdicts (expiring with the verdict), `P:pins:*`
//! pins (at most [`MAX_PINS`], never evicted, as in process), `P:kill` the kill switch,
//! `P:tok:MAC` used tokens (expiring with the token), `P:appr:*` approval requests (the
//! `approvals` module: one document, bounded as the desk's file is).

mod approvals;
mod scripts;

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bulwark_engine::pins::{Pin, PinRecord, name_skeleton};
use bulwark_engine::stages::rate::{Draw, Wait};
use bulwark_engine::state::MAX_PINS;
use bulwark_engine::verdict_cache::VerdictCache;
use bulwark_engine::{Policy, ReasonCode, Session, Tables, Taint, TaintSet, Verdict};
use bulwark_gate::ledger::mac_of;
use bulwark_gate::store::DecideFn;
use bulwark_gate::{MemoryStore, Store, StoreError};
use bulwark_policy::{OnUnavailable, StateBackend, StatePolicy};
use redis::{Script, Value};
use sha2::{Digest, Sha256};

/// How long a decision may hold its session's lock before another replica may take it (a
/// replica that died mid-decision). Decisions take milliseconds; this only bounds a crash.
pub const LOCK_MS: u64 = 2_000;
/// First wait before connecting again after a failure; it doubles up to [`MAX_BACKOFF_MS`].
pub const MIN_BACKOFF_MS: u64 = 50;
/// Longest wait between connection attempts.
pub const MAX_BACKOFF_MS: u64 = 2_000;
/// Most idle connections kept for reuse.
pub const MAX_IDLE: usize = 32;
/// In-process lock shards: decisions of one session on one replica queue here.
const SHARDS: usize = 64;
/// Most pins cached in process (cleared whenever any replica changes a pin).
const MAX_CACHED_PINS: usize = 4096;

/// Why a store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The policy does not ask for Redis.
    #[error("the policy's state.backend is not redis")]
    NotRedis,
    /// The URL does not parse.
    #[error("bad state.url: {0}")]
    Url(String),
}

/// The parts of the policy the store is sized by.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `redis://…`.
    pub url: String,
    /// Prefix of every key.
    pub prefix: String,
    /// Longest wait for one answer.
    pub timeout: Duration,
    /// Refuse or decide locally when the store is out of reach.
    pub on_unavailable: OnUnavailable,
    /// Most sessions (`limits.max_sessions`).
    pub max_sessions: usize,
    /// Session idle time in milliseconds (`limits.session_idle_ms`).
    pub idle_ms: u64,
}

impl Settings {
    /// The settings `policy` asks for.
    pub fn of(policy: &Policy) -> Result<Settings, OpenError> {
        let StatePolicy {
            backend,
            url,
            prefix,
            timeout_ms,
            on_unavailable,
        } = &policy.state;
        let (StateBackend::Redis, Some(url)) = (backend, url) else {
            return Err(OpenError::NotRedis);
        };
        Ok(Settings {
            url: url.clone(),
            prefix: prefix.clone(),
            timeout: Duration::from_millis((*timeout_ms).max(1)),
            on_unavailable: *on_unavailable,
            max_sessions: policy.limits.max_sessions.max(1),
            idle_ms: policy.limits.session_idle_ms.max(1),
        })
    }
}

/// Connections, and when to try again after the server went away.
struct Pool {
    idle: Vec<redis::Connection>,
    retry_at: Option<Instant>,
    backoff_ms: u64,
    last_error: String,
}

/// Pins read from the server, valid while the pin epoch stays where it was.
#[derive(Default)]
struct PinCache {
    epoch: Option<i64>,
    map: HashMap<(String, String), Option<Arc<Pin>>>,
}

struct Scripts {
    load: Script,
    store: Script,
    unlock: Script,
    add_taint: Script,
    draw: Script,
    pin: Script,
    quarantine: Script,
    read_pin: Script,
    import: Script,
    merge: Script,
    accept: Script,
    export: Script,
    approvals_write: Script,
}

/// The store on a Redis server, shared by every replica that names the same server and
/// prefix.
pub struct RedisStore {
    client: redis::Client,
    settings: Settings,
    pool: Mutex<Pool>,
    shards: Box<[Mutex<()>]>,
    keys: std::collections::hash_map::RandomState,
    nonce: u64,
    owners: AtomicU64,
    pins: Mutex<PinCache>,
    scripts: Scripts,
    local: Option<MemoryStore>,
    degraded: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A digest of a caller-chosen name, for a key of bounded length that does not show it.
fn digest(s: &str) -> String {
    hex(&Sha256::digest(s.as_bytes())[..16])
}

fn taint_bits(t: TaintSet) -> u64 {
    t.iter().fold(0, |acc, x| acc | 1 << (x as u8))
}

fn taint_of(bits: u64) -> TaintSet {
    Taint::ALL
        .iter()
        .copied()
        .filter(|t| bits & (1 << (*t as u8)) != 0)
        .collect()
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        other => bytes(other).and_then(|b| std::str::from_utf8(b).ok()?.parse().ok()),
    }
}

fn text(v: &Value) -> Option<String> {
    bytes(v).map(|b| String::from_utf8_lossy(b).into_owned())
}

/// What a decision starts from besides its session.
#[derive(Clone, Copy, Default)]
struct Meta {
    lockdown: bool,
    epoch: i64,
}

impl RedisStore {
    /// A store with `settings`. Nothing is connected yet: the first decision connects, and
    /// a server out of reach then is the same as one lost later.
    pub fn open(settings: Settings) -> Result<RedisStore, OpenError> {
        let client = redis::Client::open(settings.url.as_str())
            .map_err(|e| OpenError::Url(e.to_string()))?;
        Ok(RedisStore {
            client,
            settings,
            pool: Mutex::new(Pool {
                idle: Vec::new(),
                retry_at: None,
                backoff_ms: 0,
                last_error: String::new(),
            }),
            shards: (0..SHARDS).map(|_| Mutex::new(())).collect(),
            keys: std::collections::hash_map::RandomState::new(),
            nonce: std::collections::hash_map::RandomState::new().hash_one(std::process::id()),
            owners: AtomicU64::new(0),
            pins: Mutex::new(PinCache::default()),
            scripts: Scripts {
                load: Script::new(scripts::LOAD),
                store: Script::new(scripts::STORE),
                unlock: Script::new(scripts::UNLOCK),
                add_taint: Script::new(scripts::ADD_TAINT),
                draw: Script::new(scripts::DRAW),
                pin: Script::new(scripts::PIN),
                quarantine: Script::new(scripts::QUARANTINE),
                read_pin: Script::new(scripts::READ_PIN),
                import: Script::new(scripts::IMPORT),
                merge: Script::new(scripts::MERGE),
                accept: Script::new(scripts::ACCEPT),
                export: Script::new(scripts::EXPORT),
                approvals_write: Script::new(scripts::APPROVALS_WRITE),
            },
            local: None,
            degraded: AtomicBool::new(false),
        })
    }

    /// The store `policy`'s `state:` section asks for; with `on_unavailable: local`, with
    /// this replica's own in-process store to fall back on.
    pub fn for_policy(policy: &Policy) -> Result<RedisStore, OpenError> {
        let mut s = RedisStore::open(Settings::of(policy)?)?;
        if s.settings.on_unavailable == OnUnavailable::Local {
            s.local = Some(MemoryStore::new(policy));
        }
        Ok(s)
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    fn key(&self, parts: &[&str]) -> String {
        let mut k = self.settings.prefix.clone();
        for p in parts {
            k.push(':');
            k.push_str(p);
        }
        k
    }

    /// A connection: an idle one, or a new one unless the backoff after a failure runs.
    fn conn(&self) -> Result<redis::Connection, StoreError> {
        let now = Instant::now();
        {
            let mut pool = lock(&self.pool);
            if let Some(c) = pool.idle.pop() {
                return Ok(c);
            }
            if let Some(at) = pool.retry_at
                && now < at
            {
                return Err(StoreError::Unavailable(format!(
                    "{}; connecting again in {} ms",
                    pool.last_error,
                    at.duration_since(now).as_millis()
                )));
            }
        }
        let t = self.settings.timeout;
        let made = self.client.get_connection_with_timeout(t).and_then(|c| {
            c.set_read_timeout(Some(t))?;
            c.set_write_timeout(Some(t))?;
            Ok(c)
        });
        let mut pool = lock(&self.pool);
        match made {
            Ok(c) => {
                pool.retry_at = None;
                pool.backoff_ms = 0;
                Ok(c)
            }
            Err(e) => {
                pool.backoff_ms = (pool.backoff_ms * 2).clamp(MIN_BACKOFF_MS, MAX_BACKOFF_MS);
                pool.retry_at = Some(Instant::now() + Duration::from_millis(pool.backoff_ms));
                pool.last_error = format!("cannot reach the state store: {e}");
                Err(StoreError::Unavailable(pool.last_error.clone()))
            }
        }
    }

    /// Gives a connection back after a clean exchange.
    fn give_back(&self, c: redis::Connection) {
        let mut pool = lock(&self.pool);
        if pool.idle.len() < MAX_IDLE {
            pool.idle.push(c);
        }
    }

    /// After an error: the connection is dropped, and the idle ones too, which share its
    /// fate when the server restarted.
    fn failed(&self, e: &redis::RedisError) -> StoreError {
        lock(&self.pool).idle.clear();
        StoreError::Unavailable(format!("the state store did not answer: {e}"))
    }

    /// Runs one exchange on a pooled connection.
    fn with<T>(
        &self,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let mut c = self.conn()?;
        match f(&mut c) {
            Ok(v) => {
                self.give_back(c);
                self.degraded.store(false, Ordering::Release);
                Ok(v)
            }
            Err(e) => Err(self.failed(&e)),
        }
    }

    /// The fallback for a store out of reach, when the policy degrades instead of refusing.
    fn fallback(&self, e: &StoreError) -> Option<&MemoryStore> {
        let local = self.local.as_ref()?;
        if matches!(e, StoreError::Unavailable(_)) {
            self.degraded.store(true, Ordering::Release);
            Some(local)
        } else {
            None
        }
    }

    fn session_keys(&self, id: &str) -> (String, [String; 3]) {
        let h = digest(id);
        let keys = [
            self.key(&["s", &h]),
            self.key(&["t", &h]),
            self.key(&["l", &h]),
        ];
        (h, keys)
    }

    fn shard(&self, id: &str) -> MutexGuard<'_, ()> {
        lock(&self.shards[(self.keys.hash_one(id) as usize) % self.shards.len()])
    }

    fn meta(&self, c: &mut redis::Connection) -> redis::RedisResult<Meta> {
        let (kill, epoch): (Option<String>, Option<i64>) = redis::pipe()
            .get(self.key(&["kill"]))
            .get(self.key(&["pins", "epoch"]))
            .query(c)?;
        Ok(Meta {
            lockdown: kill.is_some(),
            epoch: epoch.unwrap_or(0),
        })
    }

    /// Takes session `id`'s lock and loads it, waiting (bounded by the lock's own lifetime)
    /// while another replica decides in it.
    fn lock_and_load(
        &self,
        c: &mut redis::Connection,
        keys: &[String; 3],
        owner: &str,
        now_ms: u64,
    ) -> Result<(Session, Meta), StoreError> {
        let give_up = Instant::now() + Duration::from_millis(LOCK_MS + 100);
        let mut pause = 1u64;
        loop {
            let v: Vec<Value> = self
                .scripts
                .load
                .key(&keys[0])
                .key(&keys[1])
                .key(&keys[2])
                .key(self.key(&["kill"]))
                .key(self.key(&["pins", "epoch"]))
                .arg(owner)
                .arg(LOCK_MS)
                .invoke(c)
                .map_err(|e| self.failed(&e))?;
            if v.first().and_then(int) == Some(1) {
                let mut session = match v.get(1).and_then(bytes) {
                    Some(b) => serde_json::from_slice::<Session>(b).map_err(|e| {
                        StoreError::Unavailable(format!("a stored session does not read: {e}"))
                    })?,
                    None => {
                        let mut s = Session::default();
                        s.last_seen_ms = now_ms;
                        s
                    }
                };
                let bits = v.get(2).and_then(int).unwrap_or(0);
                session.add_taint(taint_of(u64::try_from(bits).unwrap_or(0)));
                session.last_seen_ms = session.last_seen_ms.max(now_ms);
                let meta = Meta {
                    lockdown: v.get(3).and_then(bytes).is_some(),
                    epoch: v.get(4).and_then(int).unwrap_or(0),
                };
                return Ok((session, meta));
            }
            if Instant::now() >= give_up {
                return Err(StoreError::Unavailable(
                    "the session is held by another replica's decision for too long".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(pause));
            pause = (pause * 2).min(20);
        }
    }

    /// Writes a decided session back and lets go of its lock.
    fn write_back(
        &self,
        c: &mut redis::Connection,
        hashed: &str,
        keys: &[String; 3],
        owner: &str,
        session: &Session,
        now_ms: u64,
    ) -> Result<(), StoreError> {
        let blob = serde_json::to_vec(session).map_err(unavailable)?;
        let _: i64 = self
            .scripts
            .store
            .key(&keys[0])
            .key(&keys[1])
            .key(&keys[2])
            .key(self.key(&["sessions"]))
            .arg(owner)
            .arg(blob)
            .arg(taint_bits(session.taint()))
            .arg(self.settings.idle_ms)
            .arg(now_ms)
            .arg(self.settings.max_sessions)
            .arg(hashed)
            .arg(self.key(&["s", ""]))
            .invoke(c)
            .map_err(|e| self.failed(&e))?;
        Ok(())
    }

    fn pin_keys(&self) -> [String; 5] {
        ["d", "s", "w", "r", "o"].map(|k| self.key(&["pins", k]))
    }

    fn pin_field(server: Option<&str>, tool: &str) -> String {
        format!("{}\u{1f}{}", server.unwrap_or(""), tool.to_lowercase())
    }

    fn read_pin(
        &self,
        c: &mut redis::Connection,
        server: Option<&str>,
        tool: &str,
    ) -> redis::RedisResult<Option<Arc<Pin>>> {
        let mut inv = self.scripts.read_pin.prepare_invoke();
        for k in self.pin_keys() {
            inv.key(k);
        }
        let v: Vec<Value> = inv.arg(Self::pin_field(server, tool)).invoke(c)?;
        let Some(digest) = v.first().and_then(text) else {
            return Ok(None);
        };
        let schema = v
            .get(1)
            .and_then(bytes)
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or(serde_json::Value::Null);
        let code = v
            .get(2)
            .and_then(text)
            .and_then(|c| ReasonCode::from_name(&c));
        let reason = v.get(3).and_then(text);
        Ok(Some(Arc::new(Pin {
            digest,
            input_schema: schema,
            quarantined: code.map(|c| {
                (
                    c,
                    reason.unwrap_or_else(|| format!("withheld ({})", c.as_str())),
                )
            }),
            offered: v.get(4).and_then(text),
        })))
    }

    fn lease<'a>(&'a self, conn: redis::Connection, meta: Meta) -> Lease<'a> {
        Lease {
            store: self,
            conn: RefCell::new(Some(conn)),
            meta,
            error: RefCell::new(None),
        }
    }

    /// How long a verdict may be cached, as the in-process cache caps it (`None`: a verdict
    /// it does not take).
    fn verdict_ttl_ms(verdict: Verdict, ttl_min: u64) -> Option<u64> {
        VerdictCache::new(1)
            .insert([0; 32], verdict, ttl_min, 0)
            .ok()
    }
}

/// Where a decision on the shared store stopped.
enum Halt {
    /// Before the engine ran: nothing shared was touched.
    Before(StoreError),
    /// After: the decision ran, but its session or a table operation did not land.
    After(StoreError),
}

/// One decision's handle on the shared tables, over the connection the decision holds. An
/// operation that fails is remembered, and the decision is refused afterwards whatever the
/// engine made of the answer it got meanwhile (each failing operation answers the
/// strictest way it can: an empty bucket, the kill switch on).
struct Lease<'a> {
    store: &'a RedisStore,
    conn: RefCell<Option<redis::Connection>>,
    meta: Meta,
    error: RefCell<Option<StoreError>>,
}

impl Lease<'_> {
    fn run<T>(&self, f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>) -> Option<T> {
        if self.error.borrow().is_some() {
            return None;
        }
        let mut slot = self.conn.borrow_mut();
        let c = slot.as_mut()?;
        match f(c) {
            Ok(v) => Some(v),
            Err(e) => {
                *slot = None;
                *self.error.borrow_mut() = Some(self.store.failed(&e));
                None
            }
        }
    }

    fn finish(self) -> (Option<redis::Connection>, Option<StoreError>) {
        (self.conn.into_inner(), self.error.into_inner())
    }
}

const SCOPES: [&str; 3] = ["principal", "tool", "global"];
const KINDS: [&str; 3] = ["calls", "network calls", "actuations"];

impl Tables for Lease<'_> {
    fn lockdown(&self) -> bool {
        self.meta.lockdown || self.error.borrow().is_some()
    }

    fn draw(&mut self, draw: &Draw<'_>, take: bool, _now_ms: u64) -> Wait {
        let scopes = [
            draw.principal.map(|(k, s)| (Some(k), s)),
            draw.tool.map(|(k, s)| (Some(k), s)),
            draw.global.map(|s| (None, s)),
        ];
        let mut keys = Vec::new();
        let mut args: Vec<u64> = vec![u64::from(take)];
        let mut labels = Vec::new();
        for (scope, slot) in SCOPES.iter().zip(scopes) {
            let Some((name, spec)) = slot else { continue };
            let kinds = [
                (spec.calls, true),
                (spec.network, draw.network),
                (spec.actuate, draw.actuate),
            ];
            for (kind, (cap, needed)) in KINDS.iter().zip(kinds) {
                let (Some(cap), true) = (cap, needed) else {
                    continue;
                };
                let who = name.map(digest).unwrap_or_default();
                keys.push(self.store.key(&["b", scope, &kind[..1], &who]));
                args.push(u64::from(cap));
                args.push(spec.per_ms);
                labels.push((*kind, *scope));
            }
        }
        if keys.is_empty() {
            return Wait::default();
        }
        let out = self.run(|c| {
            let mut inv = self.store.scripts.draw.prepare_invoke();
            for k in &keys {
                inv.key(k);
            }
            for a in &args {
                inv.arg(a);
            }
            inv.invoke::<(u64, usize)>(c)
        });
        match out {
            Some((0, _)) => Wait::default(),
            Some((ms, i)) => {
                let (bucket, scope) = labels
                    .get(i.wrapping_sub(1))
                    .copied()
                    .unwrap_or(("calls", "global"));
                Wait { ms, bucket, scope }
            }
            // The strictest answer; the decision is refused anyway.
            None => Wait {
                ms: 1000,
                bucket: "calls",
                scope: "global",
            },
        }
    }

    fn verdict(&mut self, tool_hash: &[u8; 32], _now_ms: u64) -> Option<Verdict> {
        let key = self.store.key(&["v", &hex(tool_hash)]);
        let v = self.run(|c| redis::cmd("GET").arg(&key).query::<Option<String>>(c))?;
        match v.as_deref() {
            Some("allow") => Some(Verdict::Allow),
            Some("warn") => Some(Verdict::Warn),
            Some("block") => Some(Verdict::Block),
            _ => None,
        }
    }

    fn pin(&self, server: Option<&str>, tool: &str) -> Option<Arc<Pin>> {
        let k = (server.unwrap_or("").to_string(), tool.to_lowercase());
        {
            let mut cache = lock(&self.store.pins);
            if cache.epoch != Some(self.meta.epoch) || cache.map.len() >= MAX_CACHED_PINS {
                cache.map.clear();
                cache.epoch = Some(self.meta.epoch);
            }
            if let Some(hit) = cache.map.get(&k) {
                return hit.clone();
            }
        }
        let read = self.run(|c| self.store.read_pin(c, server, tool))?;
        let mut cache = lock(&self.store.pins);
        if cache.epoch == Some(self.meta.epoch) {
            cache.map.insert(k, read.clone());
        }
        read
    }

    fn pins_full(&self) -> bool {
        let key = self.store.key(&["pins", "d"]);
        self.run(|c| redis::cmd("HLEN").arg(&key).query::<usize>(c))
            .is_none_or(|n| n >= MAX_PINS)
    }

    fn pinned_elsewhere(&self, server: Option<&str>, tool: &str) -> Option<(String, String)> {
        // The names set is keyed by the name's skeleton and holds pin fields, so a look-alike
        // name on any server (this one included) is found as the in-process pins find it. A
        // field whose pin an import replaced may linger in the set; it counts only while the
        // pin is still there.
        let key = self.store.key(&["pn", &name_skeleton(tool)]);
        let digests = self.store.key(&["pins", "d"]);
        let (me, name) = (server.unwrap_or(""), tool.to_lowercase());
        self.run(|c| {
            let mut fields: Vec<String> = redis::cmd("SMEMBERS").arg(&key).query(c)?;
            fields.sort();
            for f in fields {
                let Some((s, t)) = f.split_once('\u{1f}') else {
                    continue;
                };
                if s == me && t == name {
                    continue;
                }
                let pinned: bool = redis::cmd("HEXISTS").arg(&digests).arg(&f).query(c)?;
                if pinned {
                    return Ok(Some((s.to_string(), t.to_string())));
                }
            }
            Ok(None)
        })
        .flatten()
    }

    fn pin_definition(
        &mut self,
        server: Option<&str>,
        tool: &str,
        digest: String,
        schema: &serde_json::Value,
    ) {
        let schema = if schema.is_null() {
            String::new()
        } else {
            schema.to_string()
        };
        let s = self.store;
        let _ = self.run(|c| {
            let mut inv = s.scripts.pin.prepare_invoke();
            for k in s.pin_keys() {
                inv.key(k);
            }
            inv.key(s.key(&["pn", &name_skeleton(tool)]))
                .key(s.key(&["pf", &self::digest(server.unwrap_or(""))]))
                .key(s.key(&["pins", "epoch"]))
                .arg(RedisStore::pin_field(server, tool))
                .arg(&digest)
                .arg(schema)
                .arg(MAX_PINS)
                .arg(server.unwrap_or(""))
                .invoke::<i64>(c)
        });
    }

    fn quarantine(
        &mut self,
        server: Option<&str>,
        tool: &str,
        digest: String,
        code: ReasonCode,
        reason: String,
    ) {
        let s = self.store;
        let _ = self.run(|c| {
            let mut inv = s.scripts.quarantine.prepare_invoke();
            for k in s.pin_keys() {
                inv.key(k);
            }
            inv.key(s.key(&["pn", &name_skeleton(tool)]))
                .key(s.key(&["pf", &self::digest(server.unwrap_or(""))]))
                .key(s.key(&["pins", "epoch"]))
                .arg(RedisStore::pin_field(server, tool))
                .arg(&digest)
                .arg(code.as_str())
                .arg(reason)
                .arg(MAX_PINS)
                .arg(server.unwrap_or(""))
                .invoke::<i64>(c)
        });
    }
}

impl RedisStore {
    fn decide_shared(&self, id: &str, now_ms: u64, decide: &mut DecideFn<'_>) -> Result<(), Halt> {
        let _turn = self.shard(id);
        let (hashed, keys) = self.session_keys(id);
        let owner = format!(
            "{:x}-{}",
            self.nonce,
            self.owners.fetch_add(1, Ordering::Relaxed)
        );
        // A pooled connection may be stale (the server restarted since): a first exchange
        // that fails on one is tried once more on a fresh connection.
        let mut tries = 0;
        let (c, mut session, meta) = loop {
            tries += 1;
            let mut c = self.conn().map_err(Halt::Before)?;
            match self.lock_and_load(&mut c, &keys, &owner, now_ms) {
                Ok((s, m)) => break (c, s, m),
                Err(e) if tries >= 2 => return Err(Halt::Before(e)),
                Err(_) => {}
            }
        };
        let mut lease = self.lease(c, meta);
        decide(&mut session, &mut lease);
        let (conn, error) = lease.finish();
        // Written back even when a table operation failed: taint learnt stays learnt.
        let written = match conn {
            Some(mut c) => {
                match self.write_back(&mut c, &hashed, &keys, &owner, &session, now_ms) {
                    Ok(()) => {
                        self.give_back(c);
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            None => {
                // The lease lost its connection; try once more on a fresh one, then let the
                // lock expire.
                self.conn().and_then(|mut c| {
                    self.write_back(&mut c, &hashed, &keys, &owner, &session, now_ms)
                        .map(|()| self.give_back(c))
                })
            }
        };
        if let Err(e) = &written {
            let _ = self.with(|c| {
                self.scripts
                    .unlock
                    .key(&keys[2])
                    .arg(&owner)
                    .invoke::<i64>(c)
            });
            return Err(Halt::After(StoreError::Unavailable(e.to_string())));
        }
        match error {
            Some(e) => Err(Halt::After(e)),
            None => {
                self.degraded.store(false, Ordering::Release);
                Ok(())
            }
        }
    }
}

impl RedisStore {
    /// Runs [`scripts::IMPORT`], [`scripts::MERGE`] or [`scripts::ACCEPT`] over `records`
    /// of one server (`most`: pass the table's bound, which MERGE needs).
    fn run_pin_script(
        &self,
        script: &Script,
        server: Option<&str>,
        records: &[PinRecord],
        most: bool,
    ) -> Result<(), StoreError> {
        let me = server.unwrap_or("");
        self.with(|c| {
            let mut inv = script.prepare_invoke();
            for k in self.pin_keys() {
                inv.key(k);
            }
            inv.key(self.key(&["pf", &digest(me)]))
                .key(self.key(&["pins", "epoch"]))
                .arg(me)
                .arg(self.key(&["pn", ""]));
            if most {
                inv.arg(MAX_PINS);
            }
            for r in records.iter().take(MAX_PINS) {
                let tool = r.tool.to_lowercase();
                let schema = if r.input_schema.is_null() {
                    String::new()
                } else {
                    r.input_schema.to_string()
                };
                inv.arg(Self::pin_field(server, &tool))
                    .arg(name_skeleton(&tool))
                    .arg(&r.digest)
                    .arg(schema)
                    .arg(r.withheld.map(|c| c.as_str()).unwrap_or(""))
                    .arg(r.reason.as_deref().unwrap_or(""))
                    .arg(r.offered.as_deref().unwrap_or(""));
            }
            inv.invoke::<i64>(c)
        })?;
        Ok(())
    }
}

impl Store for RedisStore {
    fn decide(&self, id: &str, now_ms: u64, decide: &mut DecideFn<'_>) -> Result<(), StoreError> {
        // Only a decision that could not start falls back: one that failed halfway has run
        // against the shared state already, and is refused.
        match self.decide_shared(id, now_ms, decide) {
            Ok(()) => Ok(()),
            Err(Halt::Before(e)) => match self.fallback(&e) {
                Some(local) => local.decide(id, now_ms, decide),
                None => Err(e),
            },
            Err(Halt::After(e)) => Err(e),
        }
    }

    fn decide_in(
        &self,
        session: &mut Session,
        decide: &mut DecideFn<'_>,
    ) -> Result<(), StoreError> {
        let mut c = match self.conn() {
            Ok(c) => c,
            Err(e) => {
                return match self.fallback(&e) {
                    Some(local) => local.decide_in(session, decide),
                    None => Err(e),
                };
            }
        };
        let meta = self.meta(&mut c).map_err(|e| self.failed(&e))?;
        let mut lease = self.lease(c, meta);
        decide(session, &mut lease);
        let (conn, error) = lease.finish();
        if let Some(c) = conn {
            self.give_back(c);
        }
        error.map_or(Ok(()), Err)
    }

    fn add_taint(&self, id: &str, taint: TaintSet, now_ms: u64) -> Result<TaintSet, StoreError> {
        let (_, keys) = self.session_keys(id);
        let r = self.with(|c| {
            self.scripts
                .add_taint
                .key(&keys[1])
                .arg(taint_bits(taint))
                .arg(self.settings.idle_ms)
                .invoke::<u64>(c)
        });
        match r {
            Ok(bits) => Ok(taint_of(bits)),
            Err(e) => match self.fallback(&e) {
                Some(local) => local.add_taint(id, taint, now_ms),
                None => Err(e),
            },
        }
    }

    fn taint(&self, id: &str, now_ms: u64) -> Result<TaintSet, StoreError> {
        let (_, keys) = self.session_keys(id);
        let r = self.with(|c| redis::cmd("GET").arg(&keys[1]).query::<Option<u64>>(c));
        match r {
            Ok(bits) => Ok(taint_of(bits.unwrap_or(0))),
            Err(e) => match self.fallback(&e) {
                Some(local) => local.taint(id, now_ms),
                None => Err(e),
            },
        }
    }

    fn export_session(&self, id: &str) -> Result<Option<Session>, StoreError> {
        let (_, keys) = self.session_keys(id);
        let (blob, bits): (Option<Vec<u8>>, Option<u64>) =
            self.with(|c| redis::pipe().get(&keys[0]).get(&keys[1]).query(c))?;
        let Some(blob) = blob else { return Ok(None) };
        let mut s: Session = serde_json::from_slice(&blob).map_err(unavailable)?;
        s.add_taint(taint_of(bits.unwrap_or(0)));
        Ok(Some(s))
    }

    fn import_session(&self, id: &str, session: Session) -> Result<(), StoreError> {
        let (hashed, keys) = self.session_keys(id);
        let _turn = self.shard(id);
        let owner = format!("{:x}-import", self.nonce);
        let now = session.last_seen_ms;
        let mut c = self.conn()?;
        let _ = self.lock_and_load(&mut c, &keys, &owner, now)?;
        self.write_back(&mut c, &hashed, &keys, &owner, &session, now)?;
        self.give_back(c);
        Ok(())
    }

    fn sessions(&self) -> usize {
        self.with(|c| {
            redis::cmd("ZCARD")
                .arg(self.key(&["sessions"]))
                .query::<usize>(c)
        })
        .unwrap_or(0)
    }

    fn set_lockdown(&self, on: bool) -> Result<(), StoreError> {
        let key = self.key(&["kill"]);
        self.with(|c| {
            if on {
                redis::cmd("SET").arg(&key).arg("1").query::<()>(c)
            } else {
                redis::cmd("DEL").arg(&key).query::<()>(c)
            }
        })
    }

    /// On when the store says so, or cannot say.
    fn lockdown(&self) -> bool {
        self.with(|c| {
            redis::cmd("EXISTS")
                .arg(self.key(&["kill"]))
                .query::<bool>(c)
        })
        .unwrap_or(true)
    }

    fn cache_verdict(
        &self,
        tool_hash: [u8; 32],
        verdict: Verdict,
        ttl_min: u64,
        _now_ms: u64,
    ) -> Result<(), StoreError> {
        let key = self.key(&["v", &hex(&tool_hash)]);
        match Self::verdict_ttl_ms(verdict, ttl_min) {
            // Not a verdict the cache takes: the tool stays escalated.
            None => Ok(()),
            Some(0) => self.with(|c| redis::cmd("DEL").arg(&key).query::<()>(c)),
            Some(ms) => self.with(|c| {
                redis::cmd("SET")
                    .arg(&key)
                    .arg(verdict.as_str())
                    .arg("PX")
                    .arg(ms)
                    .query::<()>(c)
            }),
        }
    }

    fn flush_verdicts(&self) -> Result<(), StoreError> {
        let pattern = self.key(&["v", "*"]);
        self.with(|c| {
            let keys: Vec<String> = redis::cmd("SCAN")
                .cursor_arg(0)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .clone()
                .iter(c)?
                .collect::<redis::RedisResult<Vec<String>>>()?;
            for chunk in keys.chunks(500) {
                redis::cmd("DEL").arg(chunk).query::<()>(c)?;
            }
            Ok(())
        })
    }

    fn pin(&self, server: Option<&str>, tool: &str) -> Result<Option<Arc<Pin>>, StoreError> {
        self.with(|c| self.read_pin(c, server, tool))
    }

    fn import_pins(&self, server: Option<&str>, records: &[PinRecord]) -> Result<(), StoreError> {
        self.run_pin_script(&self.scripts.import, server, records, false)
    }

    fn merge_pins(&self, server: Option<&str>, records: &[PinRecord]) -> Result<(), StoreError> {
        self.run_pin_script(&self.scripts.merge, server, records, true)
    }

    fn accept_pins(&self, server: Option<&str>, records: &[PinRecord]) -> Result<(), StoreError> {
        self.run_pin_script(&self.scripts.accept, server, records, false)
    }

    fn put_record(&self, kind: &str, id: &str, value: &str, ttl_ms: u64) -> Result<(), StoreError> {
        let key = self.key(&["r", kind, &digest(id)]);
        self.with(|c| {
            redis::cmd("SET")
                .arg(&key)
                .arg(value)
                .arg("PX")
                .arg(ttl_ms.max(1))
                .query::<()>(c)
        })
    }

    fn record(&self, kind: &str, id: &str) -> Result<Option<String>, StoreError> {
        let key = self.key(&["r", kind, &digest(id)]);
        self.with(|c| redis::cmd("GET").arg(&key).query::<Option<String>>(c))
    }

    fn remove_record(&self, kind: &str, id: &str) -> Result<(), StoreError> {
        let key = self.key(&["r", kind, &digest(id)]);
        self.with(|c| redis::cmd("DEL").arg(&key).query::<()>(c))
    }

    fn export_pins(&self, server: Option<&str>) -> Result<Vec<PinRecord>, StoreError> {
        let me = server.unwrap_or("");
        let v: Vec<Vec<Value>> = self.with(|c| {
            let mut inv = self.scripts.export.prepare_invoke();
            for k in self.pin_keys() {
                inv.key(k);
            }
            inv.key(self.key(&["pf", &digest(me)])).invoke(c)
        })?;
        let col = |i: usize, j: usize| v.get(i).and_then(|c| c.get(j));
        let fields = v.first().map_or(0, Vec::len);
        let mut out = Vec::with_capacity(fields);
        for j in 0..fields {
            let Some(field) = col(0, j).and_then(text) else {
                continue;
            };
            let tool = field
                .split_once('\u{1f}')
                .map_or(field.as_str(), |(_, t)| t);
            let Some(digest) = col(1, j).and_then(text) else {
                continue;
            };
            out.push(PinRecord {
                tool: tool.to_string(),
                digest,
                input_schema: col(2, j)
                    .and_then(bytes)
                    .and_then(|b| serde_json::from_slice(b).ok())
                    .unwrap_or(serde_json::Value::Null),
                withheld: col(3, j)
                    .and_then(text)
                    .and_then(|c| ReasonCode::from_name(&c)),
                reason: col(4, j).and_then(text),
                offered: col(5, j).and_then(text),
            });
        }
        out.sort_by(|a, b| a.tool.cmp(&b.tool));
        Ok(out)
    }

    fn claim_token(&self, token: &str, expires_s: u64, now_s: u64) -> Result<bool, StoreError> {
        if expires_s <= now_s {
            return Ok(false);
        }
        let key = self.key(&["tok", mac_of(token)]);
        let set: Option<String> = self.with(|c| {
            redis::cmd("SET")
                .arg(&key)
                .arg("claimed")
                .arg("NX")
                .arg("EXAT")
                .arg(expires_s)
                .query(c)
        })?;
        Ok(set.is_some())
    }

    fn release_token(&self, token: &str) {
        let key = self.key(&["tok", mac_of(token)]);
        // Only a claim not yet spent is given back.
        let _ = self.with(|c| {
            redis::cmd("SET")
                .arg(&key)
                .arg("released")
                .arg("XX")
                .arg("GET")
                .query::<Option<String>>(c)
                .and_then(|was| match was.as_deref() {
                    Some("claimed") => redis::cmd("DEL").arg(&key).query::<()>(c),
                    _ => Ok(()),
                })
        });
    }

    fn spend_token(&self, token: &str, expires_s: u64) -> Result<(), StoreError> {
        let key = self.key(&["tok", mac_of(token)]);
        let kept: Option<String> = self.with(|c| {
            redis::cmd("SET")
                .arg(&key)
                .arg("spent")
                .arg("EXAT")
                .arg(expires_s.max(1))
                .arg("GET")
                .query(c)
        })?;
        match kept.as_deref() {
            Some("claimed") => Ok(()),
            // The claim vanished (the server lost it) or changed hands: the use cannot be
            // shown to be the only one.
            _ => Err(StoreError::Unavailable(
                "the claim on this approval was lost by the state store".into(),
            )),
        }
    }

    /// Used when the store says so, or cannot say.
    fn token_used(&self, token: &str) -> bool {
        let key = self.key(&["tok", mac_of(token)]);
        self.with(|c| redis::cmd("EXISTS").arg(&key).query::<bool>(c))
            .unwrap_or(true)
    }

    fn shared(&self) -> bool {
        true
    }

    fn approvals(self: Arc<Self>) -> Option<Arc<dyn bulwark_approvals::Shared>> {
        Some(Arc::new(approvals::Approvals(self)))
    }

    fn degraded(&self) -> Option<String> {
        if self.local.is_some() && self.degraded.load(Ordering::Acquire) {
            let why = lock(&self.pool).last_error.clone();
            Some(format!("the shared state store is out of reach ({why})"))
        } else {
            None
        }
    }
}
