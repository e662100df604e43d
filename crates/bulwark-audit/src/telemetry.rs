//! The telemetry store: the same decisions, queryable, in SQLite (WAL) under the state
//! directory — written off the request path.
//!
//! A front hands rows to a bounded queue and never waits: when the queue is full the row is
//! dropped and counted (`telemetry_dropped`), because telemetry must never slow a call. A
//! thread drains the queue in transactions. The tamper-evident record is the audit log;
//! this store is for questions ("what was blocked in the last hour, by which rule?").
//!
//! The audit log is the truth: a row lost on the way (a full queue, or rows still queued
//! when the process was killed) is rebuilt from it. Each row names its log and record
//! (`log`, `seq`); when a front starts, the writer first walks the log's decision records
//! it has not checked yet ([`Source`]) and inserts those the store lacks, counting them as
//! `telemetry_recovered`, before it takes new rows.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::time::{Duration, Instant};

pub use rusqlite::Connection;
use rusqlite::params;

/// Rows waiting at most, by default.
pub const QUEUE: usize = 8192;

/// How long rows are kept, and how many at most.
#[derive(Clone, Copy, Debug)]
pub struct Retention {
    /// Rows older than this many days are deleted.
    pub max_age_days: u64,
    /// When there are more rows, the oldest are deleted.
    pub max_rows: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            max_age_days: 30,
            max_rows: 5_000_000,
        }
    }
}

/// Why the store cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// SQLite refused.
    #[error("telemetry store {0}: {1}")]
    Sql(PathBuf, rusqlite::Error),
}

/// One decision, as stored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Row {
    /// Milliseconds since the epoch.
    pub ts: u64,
    /// The front.
    pub front: String,
    /// The session.
    pub session: String,
    /// The principal.
    pub principal: Option<String>,
    /// The upstream server.
    pub server: Option<String>,
    /// The tool.
    pub tool: String,
    /// The direction.
    pub direction: String,
    /// allow, warn, mask, approve, block.
    pub decision: String,
    /// The reason code.
    pub reason_code: Option<String>,
    /// The rule.
    pub rule_id: Option<String>,
    /// The severity.
    pub severity: Option<String>,
    /// Evaluation time in microseconds.
    pub eval_us: u64,
    /// The audit log the decision is recorded in (its path), if any.
    pub log: Option<String>,
    /// The decision's record number in that log.
    pub seq: Option<u64>,
}

/// An audit log whose decisions the store must hold: those numbered up to `upto` are
/// checked against it when the writer starts.
#[derive(Clone, Debug)]
pub struct Source {
    /// The log's name in the store (its path).
    pub log: String,
    /// The log file.
    pub file: PathBuf,
    /// The last record written before this process began adding rows itself.
    pub upto: u64,
}

/// A second destination for the same rows: a store shared by every replica (the
/// PostgreSQL writer in `bulwark-telemetry-pg`). Like [`Sink::send`], `forward` never waits:
/// a row it cannot queue is dropped and counted, and the audit log says so in its next
/// checkpoint.
pub trait Forward: Send + Sync {
    /// Queues a copy of `row`, or drops and counts it. Never blocks.
    fn forward(&self, row: &Row);
    /// The (queued, dropped) counters, read without waiting.
    fn counters(&self) -> (Arc<AtomicU64>, Arc<AtomicU64>);
}

/// The sending side, cheap to clone.
#[derive(Clone)]
pub struct Sink {
    tx: SyncSender<Row>,
    dropped: Arc<AtomicU64>,
    depth: Arc<AtomicU64>,
}

impl Sink {
    /// Queues a row; when the queue is full the row is dropped and counted. Never blocks.
    pub fn send(&self, row: Row) {
        match self.tx.try_send(row) {
            Ok(()) => {
                self.depth.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Rows dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Rows queued and not yet written.
    pub fn depth(&self) -> u64 {
        self.depth.load(Ordering::Relaxed)
    }

    /// The (depth, dropped) counters themselves, for readers that must not wait.
    pub fn counters(&self) -> (Arc<AtomicU64>, Arc<AtomicU64>) {
        (Arc::clone(&self.depth), Arc::clone(&self.dropped))
    }
}

fn sql(path: &Path) -> impl Fn(rusqlite::Error) -> TelemetryError + '_ {
    move |e| TelemetryError::Sql(path.to_path_buf(), e)
}

/// Opens (creating) the store and its schema.
pub fn open_db(path: &Path) -> Result<Connection, TelemetryError> {
    let c = Connection::open(path).map_err(sql(path))?;
    c.busy_timeout(Duration::from_secs(5)).map_err(sql(path))?;
    c.execute_batch(
        "PRAGMA journal_mode=WAL;
         PRAGMA synchronous=NORMAL;
         CREATE TABLE IF NOT EXISTS decisions (
           id INTEGER PRIMARY KEY,
           ts INTEGER NOT NULL,
           front TEXT NOT NULL,
           session TEXT NOT NULL,
           principal TEXT,
           server TEXT,
           tool TEXT NOT NULL,
           direction TEXT NOT NULL,
           decision TEXT NOT NULL,
           reason_code TEXT,
           rule_id TEXT,
           severity TEXT,
           eval_us INTEGER NOT NULL);
         CREATE INDEX IF NOT EXISTS decisions_ts ON decisions(ts);
         CREATE INDEX IF NOT EXISTS decisions_decision ON decisions(decision, ts);
         CREATE INDEX IF NOT EXISTS decisions_rule ON decisions(rule_id, ts);
         CREATE INDEX IF NOT EXISTS decisions_tool ON decisions(tool, ts);
         CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);",
    )
    .map_err(sql(path))?;
    // Stores made before rows named their record gain the columns.
    let has_seq: bool = c
        .query_row(
            "SELECT count(*) FROM pragma_table_info('decisions') WHERE name = 'seq'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(sql(path))?
        > 0;
    if !has_seq {
        c.execute_batch(
            "ALTER TABLE decisions ADD COLUMN log TEXT;
             ALTER TABLE decisions ADD COLUMN seq INTEGER;",
        )
        .map_err(sql(path))?;
    }
    c.execute_batch("CREATE INDEX IF NOT EXISTS decisions_record ON decisions(log, seq);")
        .map_err(sql(path))?;
    Ok(c)
}

/// What [`reconcile`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reconciled {
    /// Decision records read.
    pub checked: u64,
    /// Rows the store lacked, now inserted.
    pub recovered: u64,
}

/// Inserts the decisions of `source` (records after the last reconciliation, up to
/// `source.upto`) that the store lacks, and remembers how far it got.
///
/// A record that does not parse is skipped (verifying the log is `bulwark audit verify`'s
/// work, not this one's); a log shorter than what was reconciled before was replaced, and
/// is read from its start.
pub fn reconcile(conn: &mut Connection, source: &Source) -> Result<Reconciled, TelemetryError> {
    use std::io::BufRead;
    let db = PathBuf::from(conn.path().unwrap_or("telemetry"));
    let err = sql(&db);
    let mark = format!("reconciled:{}", source.log);
    let mut from: u64 = conn
        .query_row(
            "SELECT value FROM counters WHERE name = ?1",
            params![mark],
            |r| r.get::<_, i64>(0),
        )
        .map(|v| v.max(0) as u64)
        .unwrap_or(0);
    if from > source.upto {
        from = 0;
    }
    let mut done = Reconciled::default();
    // Rows past the log's end were queued for records the process never wrote (it died
    // between sealing and writing them): the log does not have them, so neither may the
    // store — and the numbers go to the records this process writes next.
    conn.execute(
        "DELETE FROM decisions WHERE log = ?1 AND seq > ?2",
        params![source.log, source.upto as i64],
    )
    .map_err(&err)?;
    if from >= source.upto {
        return Ok(done);
    }
    let file = match std::fs::File::open(&source.file) {
        Ok(f) => f,
        Err(_) => return Ok(done),
    };
    let tx = conn.transaction().map_err(&err)?;
    {
        let mut exists = tx
            .prepare_cached("SELECT 1 FROM decisions WHERE log = ?1 AND seq = ?2 LIMIT 1")
            .map_err(&err)?;
        let mut insert_row = tx.prepare_cached(INSERT).map_err(&err)?;
        // Lines are bounded: a record is a decision, not a payload.
        let reader = std::io::BufReader::new(file);
        for line in reader.split(b'\n') {
            let Ok(line) = line else { break };
            let Some(row) = row_of_record(&line, &source.log) else {
                continue;
            };
            let seq = row.seq.unwrap_or(0);
            if seq <= from {
                continue;
            }
            if seq > source.upto {
                break;
            }
            done.checked += 1;
            let present = exists
                .exists(params![source.log, seq as i64])
                .map_err(&err)?;
            if !present {
                execute_insert(&mut insert_row, &row).map_err(&err)?;
                done.recovered += 1;
            }
        }
    }
    tx.execute(
        "INSERT INTO counters (name, value) VALUES (?1, ?2)
         ON CONFLICT(name) DO UPDATE SET value = excluded.value",
        params![mark, source.upto as i64],
    )
    .map_err(&err)?;
    tx.execute(
        "INSERT INTO counters (name, value) VALUES ('telemetry_recovered', ?1)
         ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
        params![done.recovered as i64],
    )
    .map_err(&err)?;
    tx.commit().map_err(&err)?;
    Ok(done)
}

/// The telemetry row of one audit log line, when it is a decision record.
fn row_of_record(line: &[u8], log: &str) -> Option<Row> {
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    if v.get("type")?.as_str()? != "decision" {
        return None;
    }
    let text =
        |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    let d = v.get("decision")?;
    Some(Row {
        ts: v.get("ts")?.as_u64()?,
        front: text(&v, "front").unwrap_or_default(),
        session: text(&v, "session").unwrap_or_default(),
        principal: text(&v, "principal"),
        server: text(&v, "server"),
        tool: text(&v, "tool")
            .or_else(|| text(d, "tool"))
            .unwrap_or_default(),
        direction: text(&v, "direction").unwrap_or_default(),
        decision: text(d, "decision")?,
        reason_code: text(d, "reason_code"),
        rule_id: text(d, "rule_id"),
        severity: text(d, "severity"),
        eval_us: d.get("eval_us").and_then(|x| x.as_u64()).unwrap_or(0),
        log: Some(log.to_string()),
        seq: Some(v.get("seq")?.as_u64()?),
    })
}

const INSERT: &str = "INSERT INTO decisions (ts, front, session, principal, server, tool, direction, decision, reason_code, rule_id, severity, eval_us, log, seq)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)";

fn execute_insert(st: &mut rusqlite::CachedStatement<'_>, r: &Row) -> rusqlite::Result<usize> {
    st.execute(params![
        r.ts as i64,
        r.front,
        r.session,
        r.principal,
        r.server,
        r.tool,
        r.direction,
        r.decision,
        r.reason_code,
        r.rule_id,
        r.severity,
        r.eval_us as i64,
        r.log,
        r.seq.map(|s| s as i64)
    ])
}

/// Starts the store: a sink for fronts and the thread that writes what it receives.
pub fn start(
    path: &Path,
    retention: Retention,
    capacity: usize,
) -> Result<(Sink, std::thread::JoinHandle<()>), TelemetryError> {
    start_for(path, retention, capacity, None)
}

/// [`start`], with the writer first rebuilding what the store lacks of `source`'s
/// decisions ([`reconcile`]); rows sent meanwhile wait in the queue.
pub fn start_for(
    path: &Path,
    retention: Retention,
    capacity: usize,
    source: Option<Source>,
) -> Result<(Sink, std::thread::JoinHandle<()>), TelemetryError> {
    let mut conn = open_db(path)?;
    let (tx, rx) = sync_channel(capacity.max(1));
    let dropped = Arc::new(AtomicU64::new(0));
    let depth = Arc::new(AtomicU64::new(0));
    let sink = Sink {
        tx,
        dropped: Arc::clone(&dropped),
        depth: Arc::clone(&depth),
    };
    let path = path.to_path_buf();
    let handle = std::thread::spawn(move || {
        if let Some(source) = source {
            match reconcile(&mut conn, &source) {
                Ok(r) if r.recovered > 0 => eprintln!(
                    "bulwark: telemetry store {}: {} decisions missing from it were rebuilt from the audit log {}",
                    path.display(),
                    r.recovered,
                    source.file.display()
                ),
                Ok(_) => {}
                Err(e) => {
                    eprintln!("bulwark: telemetry store: reconciling with the audit log: {e}")
                }
            }
        }
        writer(conn, &path, rx, retention, &dropped, &depth)
    });
    Ok((sink, handle))
}

fn writer(
    mut conn: Connection,
    path: &Path,
    rx: Receiver<Row>,
    retention: Retention,
    dropped: &AtomicU64,
    depth: &AtomicU64,
) {
    let mut last_retention = Instant::now() - Duration::from_secs(3600);
    let mut dropped_stored = 0u64;
    let mut batch: Vec<Row> = Vec::with_capacity(512);
    loop {
        let done = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(row) => {
                batch.push(row);
                while batch.len() < 512 {
                    match rx.try_recv() {
                        Ok(r) => batch.push(r),
                        Err(_) => break,
                    }
                }
                false
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => true,
        };
        if !batch.is_empty() {
            depth.fetch_sub(batch.len() as u64, Ordering::Relaxed);
            // Drops are added as increments: several processes may share the store.
            let now_dropped = dropped.load(Ordering::Relaxed);
            let delta = now_dropped.saturating_sub(dropped_stored);
            dropped_stored = now_dropped;
            if let Err(e) = insert(&mut conn, &batch, delta) {
                eprintln!(
                    "bulwark: telemetry store {}: {e}; {} rows lost",
                    path.display(),
                    batch.len()
                );
                dropped.fetch_add(batch.len() as u64, Ordering::Relaxed);
            }
            batch.clear();
        }
        if last_retention.elapsed() >= Duration::from_secs(600) || done {
            if let Err(e) = retain(&conn, retention) {
                eprintln!(
                    "bulwark: telemetry store {}: retention: {e}",
                    path.display()
                );
            }
            last_retention = Instant::now();
        }
        if done {
            break;
        }
    }
}

fn insert(conn: &mut Connection, rows: &[Row], dropped: u64) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    {
        let mut st = tx.prepare_cached(INSERT)?;
        for r in rows {
            execute_insert(&mut st, r)?;
        }
        tx.execute(
            "INSERT INTO counters (name, value) VALUES ('telemetry_dropped', ?1)
             ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
            params![dropped as i64],
        )?;
    }
    tx.commit()
}

/// Deletes rows past the retention limits; returns how many.
pub fn retain(conn: &Connection, r: Retention) -> rusqlite::Result<usize> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let cutoff = now - (r.max_age_days as i64).saturating_mul(86_400_000);
    let mut n = conn.execute("DELETE FROM decisions WHERE ts < ?1", params![cutoff])?;
    n += conn.execute(
        "DELETE FROM decisions WHERE id <= (SELECT max(id) FROM decisions) - ?1",
        params![r.max_rows as i64],
    )?;
    Ok(n)
}

/// What to select.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Rows at or after this time (ms since the epoch).
    pub since_ms: Option<u64>,
    /// Only this decision.
    pub decision: Option<String>,
    /// Only this rule.
    pub rule_id: Option<String>,
    /// Only this tool.
    pub tool: Option<String>,
    /// At most this many rows (newest first).
    pub limit: usize,
}

fn where_clause(f: &Filter) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value as V;
    let mut clauses = vec!["1=1".to_string()];
    let mut args: Vec<V> = Vec::new();
    if let Some(s) = f.since_ms {
        clauses.push(format!("ts >= ?{}", args.len() + 1));
        args.push(V::Integer(s as i64));
    }
    for (col, val) in [
        ("decision", &f.decision),
        ("rule_id", &f.rule_id),
        ("tool", &f.tool),
    ] {
        if let Some(v) = val {
            clauses.push(format!("{col} = ?{}", args.len() + 1));
            args.push(V::Text(v.clone()));
        }
    }
    (clauses.join(" AND "), args)
}

/// Rows matching `f`, newest first.
pub fn query(conn: &Connection, f: &Filter) -> rusqlite::Result<Vec<Row>> {
    let (w, args) = where_clause(f);
    let mut st = conn.prepare(&format!(
        "SELECT ts, front, session, principal, server, tool, direction, decision, reason_code, rule_id, severity, eval_us
         FROM decisions WHERE {w} ORDER BY id DESC LIMIT {}",
        f.limit.max(1)
    ))?;
    let rows = st.query_map(rusqlite::params_from_iter(args), |r| {
        Ok(Row {
            ts: r.get::<_, i64>(0)? as u64,
            front: r.get(1)?,
            session: r.get(2)?,
            principal: r.get(3)?,
            server: r.get(4)?,
            tool: r.get(5)?,
            direction: r.get(6)?,
            decision: r.get(7)?,
            reason_code: r.get(8)?,
            rule_id: r.get(9)?,
            severity: r.get(10)?,
            eval_us: r.get::<_, i64>(11)? as u64,
            ..Row::default()
        })
    })?;
    rows.collect()
}

/// Counts and latency for rows matching `f`.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Stats {
    /// Rows.
    pub total: u64,
    /// By decision.
    pub by_decision: Vec<(String, u64)>,
    /// By rule (rules only), most frequent first.
    pub by_rule: Vec<(String, u64)>,
    /// By tool, most frequent first.
    pub by_tool: Vec<(String, u64)>,
    /// By front.
    pub by_front: Vec<(String, u64)>,
    /// Evaluation time percentiles in microseconds: p50, p90, p99, max.
    pub eval_us: [u64; 4],
    /// Rows the fronts dropped because the queue was full.
    pub dropped: u64,
    /// Rows rebuilt from audit logs because the store lacked them (dropped, or lost when a
    /// process was killed with rows still queued).
    pub recovered: u64,
}

/// Counts by decision, rule, tool and front, and latency percentiles.
pub fn stats(conn: &Connection, f: &Filter) -> rusqlite::Result<Stats> {
    let (w, args) = where_clause(f);
    let count_by = |col: &str| -> rusqlite::Result<Vec<(String, u64)>> {
        let mut st = conn.prepare(&format!(
            "SELECT {col}, count(*) FROM decisions WHERE {w} AND {col} IS NOT NULL GROUP BY {col} ORDER BY count(*) DESC, {col} LIMIT 50"
        ))?;
        let rows = st.query_map(rusqlite::params_from_iter(args.clone()), |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })?;
        rows.collect()
    };
    let by_decision = count_by("decision")?;
    let total = by_decision.iter().map(|(_, n)| n).sum();
    let mut s = Stats {
        total,
        by_decision,
        by_rule: count_by("rule_id")?,
        by_tool: count_by("tool")?,
        by_front: count_by("front")?,
        ..Stats::default()
    };
    if total > 0 {
        let pct = |q: f64| -> rusqlite::Result<u64> {
            let offset = ((total as f64 - 1.0) * q).round() as i64;
            conn.query_row(
                &format!("SELECT eval_us FROM decisions WHERE {w} ORDER BY eval_us LIMIT 1 OFFSET {offset}"),
                rusqlite::params_from_iter(args.clone()),
                |r| r.get::<_, i64>(0).map(|v| v as u64),
            )
        };
        s.eval_us = [pct(0.5)?, pct(0.9)?, pct(0.99)?, pct(1.0)?];
    }
    let counter = |name: &str| {
        conn.query_row(
            "SELECT value FROM counters WHERE name = ?1",
            params![name],
            |r| r.get::<_, i64>(0),
        )
        .map(|v| v.max(0) as u64)
        .unwrap_or(0)
    };
    s.dropped = counter("telemetry_dropped");
    s.recovered = counter("telemetry_recovered");
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: u64, decision: &str) -> Row {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        Row {
            ts: now + i,
            front: "mcp".into(),
            session: "s".into(),
            tool: if i.is_multiple_of(2) { "bash" } else { "fetch" }.into(),
            direction: "request".into(),
            decision: decision.into(),
            rule_id: (decision == "block").then(|| "fs.rm_root_or_home".to_string()),
            eval_us: i,
            ..Row::default()
        }
    }

    #[test]
    fn rows_go_in_and_come_back_counted() {
        let dir = std::env::temp_dir().join(format!("bulwark-tele-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("t.db");
        let (sink, handle) = start(&db, Retention::default(), 64).unwrap();
        for i in 0..100 {
            sink.send(row(
                i,
                if i.is_multiple_of(10) {
                    "block"
                } else {
                    "allow"
                },
            ));
            if i.is_multiple_of(50) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let dropped = sink.dropped();
        drop(sink);
        handle.join().unwrap();
        let conn = open_db(&db).unwrap();
        let s = stats(&conn, &Filter::default()).unwrap();
        assert_eq!(s.total + dropped, 100);
        let blocks = query(
            &conn,
            &Filter {
                decision: Some("block".into()),
                limit: 100,
                ..Filter::default()
            },
        )
        .unwrap();
        assert!(
            blocks
                .iter()
                .all(|r| r.rule_id.as_deref() == Some("fs.rm_root_or_home"))
        );
        assert!(s.eval_us[3] >= s.eval_us[0]);
        // Retention by age: a row from 1970 goes.
        conn.execute(
            "INSERT INTO decisions (ts, front, session, tool, direction, decision, eval_us) VALUES (5, 'mcp', 's', 't', 'request', 'allow', 1)",
            [],
        )
        .unwrap();
        assert_eq!(retain(&conn, Retention::default()).unwrap(), 1);
        // Retention by count.
        retain(
            &conn,
            Retention {
                max_age_days: 100_000,
                max_rows: 10,
            },
        )
        .unwrap();
        assert_eq!(stats(&conn, &Filter::default()).unwrap().total, 10);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_full_queue_drops_and_counts_without_waiting() {
        let (tx, _rx) = sync_channel(2);
        let sink = Sink {
            tx,
            dropped: Arc::new(AtomicU64::new(0)),
            depth: Arc::new(AtomicU64::new(0)),
        };
        let t = Instant::now();
        for i in 0..5 {
            sink.send(row(i, "allow"));
        }
        assert_eq!(sink.dropped(), 3);
        assert!(t.elapsed() < Duration::from_millis(100));
    }
}
