//! The writer: appends records to a log file with group commit, checkpoints, and recovery
//! after a crash.
//!
//! A block is written to the file before [`AuditLog::record`] returns — after every record
//! queued before it — so a client never sees a refusal the log lacks, even if the process is
//! killed the next instant. Other records are queued as they are (owned, not yet
//! serialised) and sealed — serialised, MAC-chained, written — by [`AuditLog::tick`] within
//! [`Options::flush_ms`], or by the caller that fills the queue to [`Options::group`]: the
//! request path pays for a digest and a copy, not for the cryptography. Checkpoints come
//! every [`Options::checkpoint_every`] records or [`Options::checkpoint_ms`]. After a
//! failed write every later call to `record` fails: a front must not go on as if recorded.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bulwark_engine::{Decision, Verdict};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::keys::{AuditKeys, hex};
use crate::record::{self, Chain};
use crate::verify::{self, VerifyKey};

/// When to commit and checkpoint.
#[derive(Clone, Debug)]
pub struct Options {
    /// Records buffered at most before they are written.
    pub group: usize,
    /// Buffered records are written at least this often (by [`AuditLog::tick`]).
    pub flush_ms: u64,
    /// A checkpoint after this many records.
    pub checkpoint_every: u64,
    /// A checkpoint at least this often, when there were records.
    pub checkpoint_ms: u64,
    /// Where to keep the chain's head (its last checkpoint, MAC-protected) outside the log,
    /// so that records cut off the end are noticed by the next writer and by verifiers.
    pub head: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            group: 4096,
            flush_ms: 20,
            checkpoint_every: 1000,
            checkpoint_ms: 60_000,
            head: None,
        }
    }
}

/// Why the log cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The file system refused.
    #[error("audit log {0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// The existing log does not verify: appending would hide that.
    #[error("audit log {0} does not verify ({1}); move it aside (and keep it) to start a new one")]
    Corrupt(PathBuf, verify::Failure),
    /// Another writer has the log open.
    #[error("audit log {0} is being written by another process (one writer per log)")]
    Busy(PathBuf),
    /// An earlier write failed; nothing since is recorded.
    #[error("audit log {0}: an earlier write failed ({1}); later decisions are not recorded")]
    Failed(PathBuf, String),
}

/// What is recorded of one decision. The arguments are kept as a digest only.
#[derive(Clone, Copy, Debug)]
pub struct Entry<'a> {
    /// The front (`check`, `daemon`, `mcp`, `proxy`).
    pub front: &'a str,
    /// The session.
    pub session: &'a str,
    /// The principal, when known.
    pub principal: Option<&'a str>,
    /// The upstream server, when known.
    pub server: Option<&'a str>,
    /// `request`, `response`, `definition` or `proposal`.
    pub direction: &'a str,
    /// The arguments (hashed, never stored).
    pub args: &'a Value,
    /// The tool definition, for a definition (hashed, never stored).
    pub definition: Option<&'a bulwark_engine::Definition>,
    /// The decision.
    pub decision: &'a Decision,
    /// Whether the front refuses the call with this decision: a refusal is on disk before
    /// the front returns it (a block always is).
    pub refused: bool,
}

impl<'a> Entry<'a> {
    /// An entry with no call behind it (input that was not a call at all).
    pub fn bare(front: &'a str, session: &'a str, decision: &'a Decision) -> Entry<'a> {
        Entry {
            front,
            session,
            principal: None,
            server: None,
            direction: "request",
            args: &Value::Null,
            definition: None,
            decision,
            refused: refuses(decision),
        }
    }

    /// The entry for `call` decided as `decision` by `front`.
    pub fn for_call(
        front: &'a str,
        call: &'a bulwark_engine::Call,
        decision: &'a Decision,
    ) -> Entry<'a> {
        Entry {
            front,
            session: &call.session,
            principal: call.principal.id.as_deref(),
            server: call.tool.server.as_deref(),
            direction: call.direction.as_str(),
            args: call.payload(),
            definition: call.definition.as_ref(),
            decision,
            refused: refuses(decision),
        }
    }
}

/// Whether a front refuses the call on `d`: a block, an approval nobody can give yet, or a
/// mask with nothing to mask.
fn refuses(d: &Decision) -> bool {
    matches!(d.decision, Verdict::Block | Verdict::Approve)
        || (d.decision == Verdict::Mask && d.masked.is_none())
}

struct Inner {
    file: File,
    buf: Vec<u8>,
    buffered: usize,
    chain: Chain,
    since_checkpoint: u64,
    last_checkpoint: Instant,
    first_buffered: Option<Instant>,
    failed: Option<String>,
    closed: bool,
    telemetry: Option<crate::telemetry::Sink>,
    telemetry_thread: Option<std::thread::JoinHandle<()>>,
    /// The store shared by every replica, when the policy names one.
    shared: Option<Box<dyn crate::telemetry::Forward>>,
    shared_thread: Option<std::thread::JoinHandle<()>>,
    /// Rows the shared store had lost when the log last said so.
    shared_dropped_said: u64,
}

/// An open audit log.
pub struct AuditLog {
    path: PathBuf,
    /// The log's name in the telemetry store: its absolute path, the same from any
    /// directory a front starts in.
    telemetry_name: String,
    keys: AuditKeys,
    mac_key: record::MacKey,
    opts: Options,
    inner: Mutex<Inner>,
    /// Decisions waiting to be sealed, in arrival order.
    queue: Mutex<Vec<Queued>>,
    failed: AtomicBool,
    closed: AtomicBool,
    /// Keys the argument digests: derived from the HMAC key, separate from the chain's.
    args_key: record::MacKey,
    /// Held while this writer lives: one writer per log.
    _writer_lock: File,
    /// The telemetry queue's (depth, dropped) counters, readable without the writer's lock.
    telemetry_counters: std::sync::OnceLock<(
        Arc<std::sync::atomic::AtomicU64>,
        Arc<std::sync::atomic::AtomicU64>,
    )>,
    /// The shared store's (depth, dropped) counters, likewise.
    shared_counters: std::sync::OnceLock<(
        Arc<std::sync::atomic::AtomicU64>,
        Arc<std::sync::atomic::AtomicU64>,
    )>,
}

/// A decision as queued: owned, not yet serialised.
struct Queued {
    ts: u64,
    front: String,
    session: String,
    principal: Option<String>,
    server: Option<String>,
    direction: String,
    args_hmac: [u8; 32],
    decision: Decision,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl AuditLog {
    /// Opens (or creates) the log at `path`. An existing log is verified with `keys`; a line
    /// cut off by a crash is removed (and the removal recorded); then a `start` record
    /// begins this writer's part.
    pub fn open(
        path: &Path,
        keys: AuditKeys,
        front: &str,
        opts: Options,
    ) -> Result<AuditLog, AuditError> {
        AuditLog::open_with_retired(path, keys, &[], front, opts)
    }

    /// [`AuditLog::open`], reading the log's earlier parts with `retired` keys too. When the
    /// log was last written with a retired key, a `rotate` record signed by that key hands
    /// the chain over to `keys`.
    pub fn open_with_retired(
        path: &Path,
        keys: AuditKeys,
        retired: &[AuditKeys],
        front: &str,
        opts: Options,
    ) -> Result<AuditLog, AuditError> {
        let io = |e| AuditError::Io(path.to_path_buf(), e);
        let lock_path = {
            let mut name = path.as_os_str().to_os_string();
            name.push(".lock");
            PathBuf::from(name)
        };
        let writer_lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|e| AuditError::Io(lock_path.clone(), e))?;
        match writer_lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(AuditError::Busy(path.to_path_buf()));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(AuditError::Io(lock_path, e)),
        }
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)
            .map_err(io)?;
        // The head is read before the log: a checkpoint written in between (by nobody, as we
        // hold the lock, but the same order serves verifiers of live logs) can only make the
        // log longer than the head.
        let head_text = opts.head.as_deref().and_then(read_head);
        let mut text = Vec::new();
        file.read_to_end(&mut text).map_err(io)?;
        let keep = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let dropped = text.len() - keep;
        let dropped_sha = hex(&Sha256::digest(&text[keep..]));
        let ring: Vec<verify::RingKey> = std::iter::once(&keys)
            .chain(retired)
            .map(|k| verify::RingKey {
                hmac: k.hmac,
                public: Some(k.public()),
            })
            .collect();
        // Verified before anything is changed: a log that is refused stays as it was.
        let report = verify::verify(BufReader::new(&text[..keep]), &VerifyKey::Hmac(ring))
            .map_err(|f| AuditError::Corrupt(path.to_path_buf(), f))?;
        if let (Some(head), Some(text)) = (&opts.head, head_text) {
            check_head(head, text, &keys, retired, &report)
                .map_err(|why| AuditError::Corrupt(path.to_path_buf(), why))?;
        }
        drop(text);
        if dropped > 0 {
            // A record half written when the writer died: not part of the chain.
            file.set_len(keep as u64).map_err(io)?;
            file.seek(SeekFrom::End(0)).map_err(io)?;
        }
        let previous = match report.key_id.as_deref() {
            Some(id) if id != keys.key_id() => Some(
                retired
                    .iter()
                    .find(|k| k.key_id() == id)
                    .cloned()
                    .ok_or_else(|| {
                        AuditError::Corrupt(
                            path.to_path_buf(),
                            verify::Failure {
                                line: report.records,
                                why: format!("the log was last written with key {id}, which is not among the retired keys"),
                            },
                        )
                    })?,
            ),
            _ => None,
        };
        let log = AuditLog {
            path: path.to_path_buf(),
            telemetry_name: std::fs::canonicalize(path)
                .unwrap_or_else(|_| path.to_path_buf())
                .to_string_lossy()
                .into_owned(),
            mac_key: record::MacKey::new(&keys.hmac),
            queue: Mutex::new(Vec::new()),
            failed: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            args_key: record::MacKey::new(&record::next_mac(
                &keys.hmac,
                &[0; 32],
                b"bulwark audit args",
            )),
            _writer_lock: writer_lock,
            telemetry_counters: std::sync::OnceLock::new(),
            shared_counters: std::sync::OnceLock::new(),
            keys,
            opts,
            inner: Mutex::new(Inner {
                file,
                buf: Vec::with_capacity(64 * 1024),
                buffered: 0,
                chain: report.chain.clone(),
                since_checkpoint: 0,
                last_checkpoint: Instant::now(),
                first_buffered: None,
                failed: None,
                closed: false,
                telemetry: None,
                telemetry_thread: None,
                shared: None,
                shared_thread: None,
                shared_dropped_said: 0,
            }),
        };
        {
            let mut g = log.lock();
            if (report.records > 0 && !report.last_final) || dropped > 0 {
                let mut m = Map::new();
                m.insert("type".into(), json!("recover"));
                m.insert("ts".into(), json!(now_ms()));
                m.insert("dropped_bytes".into(), json!(dropped));
                m.insert("dropped_sha256".into(), json!(dropped_sha));
                m.insert(
                    "note".into(),
                    json!(if report.last_final {
                        "bytes after the closing checkpoint were removed"
                    } else {
                        "the previous writer stopped without a closing checkpoint"
                    }),
                );
                match &previous {
                    Some(old) => log.push_with(&mut g, m, &old.hmac),
                    None => log.push(&mut g, m),
                }
            }
            if let Some(old) = &previous {
                // Signed and chained by the key being retired: proof that its holder handed
                // over to the new one.
                let mut m = Map::new();
                m.insert("type".into(), json!("rotate"));
                m.insert("ts".into(), json!(now_ms()));
                m.insert("key_id".into(), json!(old.key_id()));
                m.insert("new_key_id".into(), json!(log.keys.key_id()));
                m.insert(
                    "new_public_key".into(),
                    json!(hex(&log.keys.public().to_bytes())),
                );
                let line = record::seal(&mut g.chain, &old.hmac, m, Some(&old.signing));
                g.buf.extend_from_slice(line.as_bytes());
                g.buf.push(b'\n');
                g.buffered += 1;
            }
            let mut m = Map::new();
            m.insert("type".into(), json!("start"));
            m.insert("ts".into(), json!(now_ms()));
            m.insert("front".into(), json!(front));
            m.insert("key_id".into(), json!(log.keys.key_id()));
            m.insert(
                "public_key".into(),
                json!(hex(&log.keys.public().to_bytes())),
            );
            log.push(&mut g, m);
            log.write_out(&mut g)
                .map_err(|e| AuditError::Io(path.to_path_buf(), e))?;
        }
        Ok(log)
    }

    /// Also sends every decision to the telemetry store behind `sink` (whose writer thread
    /// `close` waits for).
    pub fn attach_telemetry(
        &self,
        sink: crate::telemetry::Sink,
        thread: std::thread::JoinHandle<()>,
    ) {
        let _ = self.telemetry_counters.set(sink.counters());
        let mut g = self.lock();
        g.telemetry = Some(sink);
        g.telemetry_thread = Some(thread);
    }

    /// Also forwards every decision to a store shared by the replicas (whose writer thread
    /// `close` waits for). Rows it loses are counted, and each checkpoint that follows a
    /// loss is preceded by a `telemetry` record saying how many: the log stays the record.
    pub fn attach_shared(
        &self,
        shared: Box<dyn crate::telemetry::Forward>,
        thread: std::thread::JoinHandle<()>,
    ) {
        let _ = self.shared_counters.set(shared.counters());
        let mut g = self.lock();
        g.shared = Some(shared);
        g.shared_thread = Some(thread);
    }

    /// Rows of the shared store (queued, dropped), when one is attached.
    pub fn shared_queue(&self) -> Option<(u64, u64)> {
        self.shared_counters
            .get()
            .map(|(d, x)| (d.load(Ordering::Relaxed), x.load(Ordering::Relaxed)))
    }

    /// What the telemetry store must hold of this log: every decision recorded so far
    /// (before this process adds rows itself), for [`crate::telemetry::start_for`].
    pub fn telemetry_source(&self) -> crate::telemetry::Source {
        crate::telemetry::Source {
            log: self.telemetry_name.clone(),
            file: self.path.clone(),
            upto: self.lock().chain.seq,
        }
    }

    /// Telemetry rows (queued, dropped because the store's queue was full).
    pub fn telemetry_queue(&self) -> (u64, u64) {
        self.telemetry_counters.get().map_or((0, 0), |(d, x)| {
            (d.load(Ordering::Relaxed), x.load(Ordering::Relaxed))
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    fn push(&self, g: &mut Inner, body: Map<String, Value>) {
        self.push_with(g, body, &self.keys.hmac);
    }

    fn push_with(&self, g: &mut Inner, body: Map<String, Value>, hmac: &[u8; 32]) {
        let line = record::seal(&mut g.chain, hmac, body, None);
        g.buf.extend_from_slice(line.as_bytes());
        g.buf.push(b'\n');
        g.buffered += 1;
        g.since_checkpoint += 1;
        g.first_buffered.get_or_insert_with(Instant::now);
    }

    fn write_out(&self, g: &mut Inner) -> std::io::Result<()> {
        if let Some(why) = &g.failed {
            // A partial write may have left half a line: nothing more goes after it.
            return Err(std::io::Error::other(why.clone()));
        }
        if g.buf.is_empty() {
            return Ok(());
        }
        let r = g.file.write_all(&g.buf);
        g.buf.clear();
        g.buffered = 0;
        g.first_buffered = None;
        if let Err(e) = &r {
            g.failed = Some(e.to_string());
            self.failed.store(true, Ordering::Relaxed);
        }
        r
    }

    /// Writes a checkpoint; with `sync`, waits for the disk (ticker and close only: an fsync
    /// costs milliseconds).
    fn checkpoint(&self, g: &mut Inner, last: bool, sync: bool) -> std::io::Result<()> {
        if let Some((_, dropped)) = self.shared_counters.get() {
            let dropped = dropped.load(Ordering::Relaxed);
            if dropped > g.shared_dropped_said {
                let mut m = Map::new();
                m.insert("type".into(), json!("telemetry"));
                m.insert("ts".into(), json!(now_ms()));
                m.insert("shared_dropped".into(), json!(dropped));
                m.insert(
                    "shared_dropped_since".into(),
                    json!(dropped - g.shared_dropped_said),
                );
                m.insert(
                    "note".into(),
                    json!("decision rows the shared telemetry store did not receive (queue full or store away); this log has them"),
                );
                g.shared_dropped_said = dropped;
                self.push(g, m);
            }
        }
        let body = record::checkpoint(now_ms(), &g.chain, &self.keys.key_id(), last);
        let line = record::seal(
            &mut g.chain,
            &self.keys.hmac,
            body,
            Some(&self.keys.signing),
        );
        g.buf.extend_from_slice(line.as_bytes());
        g.buf.push(b'\n');
        g.since_checkpoint = 0;
        g.last_checkpoint = Instant::now();
        self.write_out(g)?;
        if !sync {
            return Ok(());
        }
        if let Err(e) = g.file.sync_data() {
            g.failed = Some(e.to_string());
            self.failed.store(true, Ordering::Relaxed);
            return Err(e);
        }
        // Only after the log itself is on disk: the head must never be ahead of it.
        if let Some(head) = &self.opts.head {
            write_head(head, &self.keys.hmac, &g.chain).inspect_err(|e| {
                g.failed = Some(format!(
                    "cannot write the chain head {}: {e}",
                    head.display()
                ));
                self.failed.store(true, Ordering::Relaxed);
            })?;
        }
        Ok(())
    }

    /// Records one decision. A block is on disk (in the kernel's hands) when this returns,
    /// after every record queued before it. Other decisions are queued as they are and
    /// sealed — serialised, MAC-chained, written — by the ticker or the next block, off the
    /// caller's path.
    pub fn record(&self, e: &Entry<'_>) -> Result<(), AuditError> {
        if let Some(why) = self.refusal() {
            return Err(AuditError::Failed(self.path.clone(), why));
        }
        // Keyed, so that nobody holding the log can test guesses of short secrets against
        // it. serde_json's maps are ordered by key: its output is the canonical form.
        let payload = match e.definition {
            Some(def) => serde_json::to_vec(&json!({
                "description": def.description,
                "input_schema": def.input_schema,
                "annotations": def.annotations,
            })),
            None => serde_json::to_vec(e.args),
        }
        .unwrap_or_default();
        let args = self.args_key.next(&[0; 32], &payload);
        let q = Queued {
            ts: now_ms(),
            front: e.front.to_string(),
            session: e.session.to_string(),
            principal: e.principal.map(str::to_string),
            server: e.server.map(str::to_string),
            direction: e.direction.to_string(),
            args_hmac: args,
            decision: e.decision.clone(),
        };
        if e.refused || e.decision.decision == Verdict::Block {
            let mut g = self.lock();
            if let Some(why) = g.failed.clone() {
                return Err(AuditError::Failed(self.path.clone(), why));
            }
            if g.closed {
                return Err(AuditError::Failed(
                    self.path.clone(),
                    "the log is closed".into(),
                ));
            }
            self.seal_queued(&mut g);
            self.seal(&mut g, &q);
            self.write_out(&mut g)
                .map_err(|e| AuditError::Io(self.path.clone(), e))?;
            return self.checkpoint_if_due(&mut g);
        }
        let queued = {
            // `close` sets its flag under this lock: nothing is queued after it drained.
            let mut queue = lock(&self.queue);
            if self.closed.load(Ordering::Relaxed) {
                return Err(AuditError::Failed(
                    self.path.clone(),
                    "the log is closed".into(),
                ));
            }
            queue.push(q);
            queue.len()
        };
        if queued >= self.opts.group {
            let mut g = self.lock();
            self.seal_queued(&mut g);
            self.write_out(&mut g)
                .map_err(|e| AuditError::Io(self.path.clone(), e))?;
            return self.checkpoint_if_due(&mut g);
        }
        Ok(())
    }

    fn refusal(&self) -> Option<String> {
        if self.failed.load(Ordering::Relaxed) {
            return Some(self.lock().failed.clone().unwrap_or_default());
        }
        if self.closed.load(Ordering::Relaxed) {
            return Some("the log is closed".into());
        }
        None
    }

    fn checkpoint_if_due(&self, g: &mut Inner) -> Result<(), AuditError> {
        if g.since_checkpoint >= self.opts.checkpoint_every {
            self.checkpoint(g, false, false)
                .map_err(|e| AuditError::Io(self.path.clone(), e))?;
        }
        Ok(())
    }

    /// Seals everything queued, in order (the caller holds the writer's lock, so a block
    /// cannot overtake them).
    fn seal_queued(&self, g: &mut Inner) {
        let queued = std::mem::take(&mut *lock(&self.queue));
        for q in &queued {
            self.seal(g, q);
        }
    }

    fn seal(&self, g: &mut Inner, q: &Queued) {
        let seq = g.chain.seq + 1;
        let content = decision_content(q, seq);
        let line = record::seal_content_with(&mut g.chain, &self.mac_key, content);
        g.buf.extend_from_slice(line.as_bytes());
        g.buf.push(b'\n');
        g.buffered += 1;
        g.since_checkpoint += 1;
        g.first_buffered.get_or_insert_with(Instant::now);
        if g.telemetry.is_none() && g.shared.is_none() {
            return;
        }
        let d = &q.decision;
        let row = crate::telemetry::Row {
            ts: q.ts,
            front: q.front.clone(),
            session: q.session.clone(),
            principal: q.principal.clone(),
            server: q.server.clone(),
            tool: d.tool.clone(),
            direction: q.direction.clone(),
            decision: d.decision.as_str().to_string(),
            reason_code: d.reason_code.map(|c| c.as_str().to_string()),
            rule_id: d.rule_id.clone(),
            severity: d.severity.map(|s| s.as_str().to_string()),
            eval_us: d.eval_us,
            log: Some(self.telemetry_name.clone()),
            seq: Some(seq),
        };
        if let Some(shared) = &g.shared {
            shared.forward(&row);
        }
        if let Some(sink) = &g.telemetry {
            sink.send(row);
        }
    }

    /// Group commit and timed checkpoints: call every few milliseconds.
    pub fn tick(&self) {
        let mut g = self.lock();
        if g.closed || g.failed.is_some() {
            return;
        }
        self.seal_queued(&mut g);
        let flush_due = g
            .first_buffered
            .is_some_and(|t| t.elapsed() >= Duration::from_millis(self.opts.flush_ms));
        if flush_due {
            let _ = self.write_out(&mut g);
        }
        if g.since_checkpoint >= self.opts.checkpoint_every {
            let _ = self.checkpoint(&mut g, false, false);
        }
        if g.since_checkpoint > 0
            && g.last_checkpoint.elapsed() >= Duration::from_millis(self.opts.checkpoint_ms)
        {
            let _ = self.checkpoint(&mut g, false, true);
        }
    }

    /// Writes what is buffered and a closing checkpoint. Further records are refused.
    pub fn close(&self) -> Result<(), AuditError> {
        let (shared, shared_thread) = {
            let mut g = self.lock();
            if g.closed {
                return Ok(());
            }
            g.closed = true;
            {
                // Under the queue's lock: a record queued from now on is refused, and all
                // queued before is sealed below.
                let _q = lock(&self.queue);
                self.closed.store(true, Ordering::Relaxed);
            }
            self.seal_queued(&mut g);
            if g.failed.is_none() {
                // On disk before the wait below; an error shows again at the checkpoint.
                let _ = self.write_out(&mut g);
            }
            (g.shared.take(), g.shared_thread.take())
        };
        // The shared store's writer is waited for before the closing checkpoint (it bounds
        // its own shutdown), so rows it could not deliver are stated in this log.
        drop(shared);
        if let Some(t) = shared_thread {
            let _ = t.join();
        }
        let (result, telemetry) = {
            let mut g = self.lock();
            let result = match &g.failed {
                Some(why) => Err(AuditError::Failed(self.path.clone(), why.clone())),
                None => self
                    .checkpoint(&mut g, true, true)
                    .map_err(|e| AuditError::Io(self.path.clone(), e)),
            };
            g.telemetry = None;
            (result, g.telemetry_thread.take())
        };
        // The local telemetry writer ends when its queue's last sender goes; waited for
        // after the closing checkpoint is on disk, and outside the lock.
        if let Some(t) = telemetry {
            let _ = t.join();
        }
        result
    }

    /// Starts a thread that calls [`AuditLog::tick`] until the log is closed.
    pub fn spawn_ticker(self: &Arc<Self>) -> std::thread::JoinHandle<()> {
        let log = Arc::clone(self);
        let every = Duration::from_millis(self.opts.flush_ms.clamp(1, 1000));
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(every);
                if log.lock().closed || Arc::strong_count(&log) == 1 {
                    break;
                }
                log.tick();
            }
        })
    }

    /// Where the log is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A decision record's content, written directly (keys in sorted order, as canonical JSON
/// would have them): the decision JSON without the payload it masked (data, not a decision)
/// and without its destinations (a URL can carry a token), which become a count.
fn decision_content(e: &Queued, seq: u64) -> String {
    let d = &e.decision;
    let ts = e.ts;
    let args_hmac = hex(&e.args_hmac);
    let redacted;
    let decision = if d.masked.is_some() || !d.destinations.is_empty() || d.reason.contains("://") {
        let mut c = d.clone();
        c.masked = None;
        c.destinations.clear();
        c.reason = redact_urls(&c.reason);
        redacted = c;
        &redacted
    } else {
        d
    };
    let s = |v: &str| serde_json::to_string(v).unwrap_or_else(|_| "\"\"".into());
    let mut c = String::with_capacity(1024);
    c.push_str("{\"args_hmac\":\"");
    c.push_str(&args_hmac);
    c.push_str("\",\"decision\":");
    c.push_str(
        &serde_json::to_string(decision).unwrap_or_else(|_| "{\"decision\":\"block\"}".into()),
    );
    if !d.destinations.is_empty() {
        c.push_str(&format!(",\"destinations\":{}", d.destinations.len()));
    }
    c.push_str(",\"direction\":");
    c.push_str(&s(&e.direction));
    c.push_str(",\"front\":");
    c.push_str(&s(&e.front));
    if let Some(p) = &e.principal {
        c.push_str(",\"principal\":");
        c.push_str(&s(p));
    }
    c.push_str(&format!(",\"seq\":{seq}"));
    if let Some(v) = &e.server {
        c.push_str(",\"server\":");
        c.push_str(&s(v));
    }
    c.push_str(",\"session\":");
    c.push_str(&s(&e.session));
    c.push_str(",\"tool\":");
    c.push_str(&s(&d.tool));
    c.push_str(&format!(
        ",\"ts\":{ts},\"type\":\"decision\",\"v\":{}}}",
        record::VERSION
    ));
    c
}

/// Where a log's head is kept: under the key directory, named by a digest of the log's
/// absolute path (its directory resolved, so `./a.jsonl`, `a.jsonl` and a path through a
/// symlinked directory name one head, whether or not the file exists yet).
pub fn head_path(key_dir: &Path, log: &Path) -> PathBuf {
    let dir = match log.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(p) => std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()),
        None => std::env::current_dir()
            .and_then(std::fs::canonicalize)
            .unwrap_or_default(),
    };
    let abs = dir.join(log.file_name().unwrap_or(log.as_os_str()));
    let digest = Sha256::digest(abs.as_os_str().as_encoded_bytes());
    key_dir
        .join("heads")
        .join(format!("{}.json", hex(&digest[..12])))
}

/// A head file's text, `None` when there is none (read before the log it describes).
pub fn read_head(path: &Path) -> Option<std::io::Result<String>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Some(Ok(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(Err(e)),
    }
}

/// Writes the chain's head, MAC-protected, atomically.
fn write_head(path: &Path, hmac: &[u8; 32], chain: &Chain) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut m = Map::new();
    m.insert("seq".into(), json!(chain.seq));
    m.insert("sha".into(), json!(hex(&chain.sha)));
    m.insert("tag".into(), json!(hex(&chain.mac)));
    let body = record::canonical(&m);
    m.insert(
        "mac".into(),
        json!(hex(&record::next_mac(hmac, &[0; 32], body.as_bytes()))),
    );
    crate::files::write_private(path, record::canonical(&m).as_bytes())
}

/// Checks a log against its recorded head (`text`, read before the log): the head must be
/// intact, the log must reach at least as far, and through the same chain.
pub fn check_head(
    path: &Path,
    text: std::io::Result<String>,
    keys: &AuditKeys,
    retired: &[AuditKeys],
    report: &verify::Report,
) -> Result<(), verify::Failure> {
    let bad = |why: String| verify::Failure {
        line: report.records,
        why: format!(
            "{why} (head {}; if the log was deliberately replaced, move that file aside too)",
            path.display()
        ),
    };
    let text = text.map_err(|e| bad(format!("cannot read the chain head: {e}")))?;
    let mut m: Map<String, Value> =
        serde_json::from_str(&text).map_err(|e| bad(format!("the chain head is damaged ({e})")))?;
    let mac = m.remove("mac").and_then(|v| v.as_str().map(str::to_string));
    let body = record::canonical(&m);
    let genuine = std::iter::once(keys).chain(retired).any(|k| {
        mac.as_deref() == Some(hex(&record::next_mac(&k.hmac, &[0; 32], body.as_bytes())).as_str())
    });
    if !genuine {
        return Err(bad("the chain head is not genuine".into()));
    }
    let seq = m.get("seq").and_then(Value::as_u64).unwrap_or(0);
    if report.chain.seq < seq {
        return Err(bad(format!(
            "the log ends at record {} but was written up to record {seq}: records were cut off the end",
            report.chain.seq
        )));
    }
    // The same chain, not just a long enough one: the head's values must be the log's at
    // that record.
    let at = report.checkpoints_at.iter().find(|(s, _, _)| *s == seq);
    let matches = at.is_some_and(|(_, sha, tag)| {
        m.get("sha").and_then(Value::as_str) == Some(hex(sha).as_str())
            && m.get("tag").and_then(Value::as_str) == Some(hex(tag).as_str())
    });
    if seq > 0 && !matches {
        return Err(bad(format!(
            "record {seq} of the log is not the checkpoint the head recorded: this is another log, or it was rewritten"
        )));
    }
    Ok(())
}

/// URLs in a reason keep their scheme, host and path; user information, and everything from
/// the query or fragment on to the next whitespace (where tokens travel, quoted or not),
/// become `…`.
pub fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        out.push_str(&rest[..at + 3]);
        let after = &rest[at + 3..];
        let word_end = after.find(char::is_whitespace).unwrap_or(after.len());
        let word = &after[..word_end];
        // Where the URL itself ends when only punctuation follows it.
        let url_end = word.find(['"', '\'', '>', ')']).unwrap_or(word.len());
        let mut start = 0;
        if let Some(i) = word[..url_end]
            .find('@')
            .filter(|i| !word[..*i].contains('/'))
        {
            out.push_str("…@");
            start = i + 1;
        }
        match word[start..].find(['?', '#']).map(|q| q + start) {
            // Past a `?` or `#`, nothing up to the next whitespace is kept: a quote or a
            // parenthesis inside a query must not end the redaction early.
            Some(q) => {
                out.push_str(&word[start..=q]);
                out.push('…');
                rest = &after[word_end..];
            }
            None => {
                out.push_str(&word[start..url_end.max(start)]);
                rest = &after[url_end.max(start)..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_in_urls_are_redacted() {
        assert_eq!(
            redact_urls("Destination \"https://u:p@api.example.com/v1?key=SECRET#x\" is refused."),
            "Destination \"https://…@api.example.com/v1?… is refused."
        );
        assert_eq!(
            redact_urls("to https://h/p?a=x)&token=SECRET and on"),
            "to https://h/p?… and on"
        );
        assert_eq!(redact_urls("https://?x"), "https://?…");
        assert_eq!(redact_urls("no url here"), "no url here");
        assert_eq!(
            redact_urls("\"http://169.254.169.254/latest\" refused"),
            "\"http://169.254.169.254/latest\" refused"
        );
        assert_eq!(redact_urls("é://ü?ö"), "é://ü?…");
    }
}
