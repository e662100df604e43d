//! The writer thread: drains the queue in batches into PostgreSQL, reconnecting with backoff.
//!
//! It has its own single-threaded runtime, so the database's pace never touches the
//! gateway's runtime. A batch is held while the database is away (the queue behind it fills
//! and the sink drops and counts); a batch the database refuses is dropped and counted, not
//! retried, because a retry after an unknown outcome could store it twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use tokio_postgres::{Client, NoTls};

use crate::{Config, PgError, Row, ensure_schema};

/// Longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// First wait after a failure.
const MIN_BACKOFF: Duration = Duration::from_millis(100);

pub(crate) struct Writer {
    pg: tokio_postgres::Config,
    cfg: Config,
    rx: Receiver<Row>,
    depth: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
    /// The sink is gone (the log is closing).
    closed: Arc<AtomicBool>,
    rt: Runtime,
    client: Option<Client>,
    /// Drops already added to the database's counter.
    dropped_stored: u64,
    backoff: Duration,
    next_try: Instant,
}

impl Writer {
    pub(crate) fn new(
        pg: tokio_postgres::Config,
        cfg: Config,
        rx: Receiver<Row>,
        depth: Arc<AtomicU64>,
        dropped: Arc<AtomicU64>,
        closed: Arc<AtomicBool>,
    ) -> Result<Writer, PgError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Writer {
            pg,
            cfg,
            rx,
            depth,
            dropped,
            closed,
            rt,
            client: None,
            dropped_stored: 0,
            backoff: MIN_BACKOFF,
            next_try: Instant::now(),
        })
    }

    pub(crate) fn run(mut self) {
        let mut batch: Vec<Row> = Vec::with_capacity(self.cfg.batch.min(4096));
        let mut open = true;
        // Once the senders are gone (the log is closing), the rest must be written within
        // about one timeout, or is counted as lost: shutdown is bounded.
        let mut deadline: Option<Instant> = None;
        loop {
            // With a full batch in hand and the database away, nothing below reads the
            // queue, so its disconnection alone would never be seen: shutdown would wait for
            // the database to come back.
            if self.closed.load(Ordering::Relaxed) {
                open = false;
            }
            if !open {
                let d = *deadline.get_or_insert_with(|| Instant::now() + self.cfg.timeout);
                if Instant::now() >= d {
                    let left = batch.len() as u64 + self.rx.try_iter().count() as u64;
                    if left > 0 {
                        self.lose(left);
                        eprintln!(
                            "bulwark: telemetry store (postgres): {left} rows not written by shutdown"
                        );
                    }
                    return;
                }
                // Closing: what is still queued is written too, within the deadline.
                while batch.len() < self.cfg.batch {
                    match self.rx.try_recv() {
                        Ok(r) => batch.push(r),
                        Err(_) => break,
                    }
                }
            }
            if open && batch.len() < self.cfg.batch {
                // Waits for the first row only when there is nothing in hand.
                let wait = if batch.is_empty() {
                    Duration::from_millis(200)
                } else {
                    Duration::ZERO
                };
                match self.rx.recv_timeout(wait) {
                    Ok(r) => {
                        batch.push(r);
                        while batch.len() < self.cfg.batch {
                            match self.rx.try_recv() {
                                Ok(r) => batch.push(r),
                                Err(_) => break,
                            }
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => open = false,
                }
            }
            let unsaid_drops = self.dropped.load(Ordering::Relaxed) > self.dropped_stored;
            if batch.is_empty() && !unsaid_drops {
                if !open {
                    return;
                }
                continue;
            }
            if self.client.is_none() && !self.connect(!open) {
                if !open {
                    // Shutting down with the database away: what is left is lost, and counted.
                    let left = batch.len() as u64 + self.rx.try_iter().count() as u64;
                    self.lose(left);
                    eprintln!(
                        "bulwark: telemetry store (postgres) away at shutdown: {left} rows not written"
                    );
                    return;
                }
                // The batch waits; the queue behind it fills and the sink counts drops.
                std::thread::sleep(Duration::from_millis(50).min(self.backoff));
                continue;
            }
            match self.write(&batch) {
                Ok(()) => {
                    self.depth.fetch_sub(batch.len() as u64, Ordering::Relaxed);
                    batch.clear();
                }
                Err(e) => {
                    eprintln!(
                        "bulwark: telemetry store (postgres): {e}; {} rows lost",
                        batch.len()
                    );
                    let n = batch.len() as u64;
                    batch.clear();
                    self.lose(n);
                    self.client = None;
                    self.failed();
                }
            }
        }
    }

    /// Rows taken off the queue and not written: no longer queued, now dropped.
    fn lose(&self, n: u64) {
        self.depth.fetch_sub(n, Ordering::Relaxed);
        self.dropped.fetch_add(n, Ordering::Relaxed);
    }

    fn failed(&mut self) {
        self.next_try = Instant::now() + self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    /// Connects and makes the schema, if the backoff allows (or `now` insists).
    fn connect(&mut self, now: bool) -> bool {
        if !now && Instant::now() < self.next_try {
            return false;
        }
        let pg = self.pg.clone();
        let timeout = self.cfg.timeout;
        let got = self.rt.block_on(async move {
            let (mut client, conn) = tokio::time::timeout(timeout, pg.connect(NoTls))
                .await
                .map_err(|_| PgError::Timeout(timeout))??;
            // The connection is driven by this runtime while the writer is inside block_on,
            // which is whenever it talks to the database.
            tokio::spawn(async move {
                let _ = conn.await;
            });
            tokio::time::timeout(timeout, ensure_schema(&mut client))
                .await
                .map_err(|_| PgError::Timeout(timeout))??;
            Ok::<_, PgError>(client)
        });
        match got {
            Ok(c) => {
                self.client = Some(c);
                self.backoff = MIN_BACKOFF;
                true
            }
            Err(e) => {
                if self.backoff == MIN_BACKOFF {
                    eprintln!("bulwark: telemetry store (postgres): {e}; retrying with backoff");
                }
                self.failed();
                false
            }
        }
    }

    /// One transaction: the rows, and the drops counted since the last one.
    fn write(&mut self, rows: &[Row]) -> Result<(), PgError> {
        let Some(client) = self.client.as_mut() else {
            return Err(PgError::Timeout(Duration::ZERO));
        };
        let now_dropped = self.dropped.load(Ordering::Relaxed);
        let delta = now_dropped.saturating_sub(self.dropped_stored);
        let instance = self.cfg.instance.clone();
        let timeout = self.cfg.timeout;
        let cols = Columns::of(rows);
        let r = self.rt.block_on(async move {
            tokio::time::timeout(timeout, async {
                let tx = client.transaction().await?;
                if !cols.ts.is_empty() {
                    tx.execute(
                        "INSERT INTO bulwark_decisions (instance, ts, front, session, principal, server, tool, direction, decision, reason_code, rule_id, severity, eval_us, log, seq)
                         SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::bigint[], $14::text[], $15::bigint[])",
                        &[
                            &instance,
                            &cols.ts,
                            &cols.front,
                            &cols.session,
                            &cols.principal,
                            &cols.server,
                            &cols.tool,
                            &cols.direction,
                            &cols.decision,
                            &cols.reason_code,
                            &cols.rule_id,
                            &cols.severity,
                            &cols.eval_us,
                            &cols.log,
                            &cols.seq,
                        ],
                    )
                    .await?;
                }
                if delta > 0 {
                    // Increments: the count survives this process, and each instance has
                    // its own.
                    tx.execute(
                        "INSERT INTO bulwark_telemetry_counters (instance, name, value) VALUES ($1, 'dropped', $2)
                         ON CONFLICT (instance, name) DO UPDATE SET value = bulwark_telemetry_counters.value + excluded.value",
                        &[&instance, &(delta as i64)],
                    )
                    .await?;
                }
                tx.commit().await?;
                Ok::<_, PgError>(())
            })
            .await
            .map_err(|_| PgError::Timeout(timeout))?
        });
        if r.is_ok() {
            self.dropped_stored = now_dropped;
        }
        r
    }
}

/// A batch as one array per column (the `unnest` insert takes 15 parameters for any
/// number of rows).
struct Columns {
    ts: Vec<i64>,
    front: Vec<String>,
    session: Vec<String>,
    principal: Vec<Option<String>>,
    server: Vec<Option<String>>,
    tool: Vec<String>,
    direction: Vec<String>,
    decision: Vec<String>,
    reason_code: Vec<Option<String>>,
    rule_id: Vec<Option<String>>,
    severity: Vec<Option<String>>,
    eval_us: Vec<i64>,
    log: Vec<Option<String>>,
    seq: Vec<Option<i64>>,
}

impl Columns {
    fn of(rows: &[Row]) -> Columns {
        // PostgreSQL text cannot hold NUL; such a byte (possible in a session id an outsider
        // chose) would make the whole batch fail, so it is replaced.
        let t = |s: &str| {
            if s.contains('\0') {
                s.replace('\0', "\u{FFFD}")
            } else {
                s.to_string()
            }
        };
        let o = |s: &Option<String>| s.as_deref().map(t);
        Columns {
            ts: rows.iter().map(|r| clamp(r.ts)).collect(),
            front: rows.iter().map(|r| t(&r.front)).collect(),
            session: rows.iter().map(|r| t(&r.session)).collect(),
            principal: rows.iter().map(|r| o(&r.principal)).collect(),
            server: rows.iter().map(|r| o(&r.server)).collect(),
            tool: rows.iter().map(|r| t(&r.tool)).collect(),
            direction: rows.iter().map(|r| t(&r.direction)).collect(),
            decision: rows.iter().map(|r| t(&r.decision)).collect(),
            reason_code: rows.iter().map(|r| o(&r.reason_code)).collect(),
            rule_id: rows.iter().map(|r| o(&r.rule_id)).collect(),
            severity: rows.iter().map(|r| o(&r.severity)).collect(),
            eval_us: rows.iter().map(|r| clamp(r.eval_us)).collect(),
            log: rows.iter().map(|r| o(&r.log)).collect(),
            seq: rows.iter().map(|r| r.seq.map(clamp)).collect(),
        }
    }
}

fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
