//! Deployment-wide telemetry: every replica's decision records in one PostgreSQL database.
//!
//! Each replica keeps its own chained audit log and its own SQLite telemetry store; with
//! `telemetry: { backend: postgres, url }` in the policy it also forwards every decision,
//! labelled with its instance id, to a database all replicas share, so `bulwark audit stats`
//! and the web console answer for the whole deployment.
//!
//! Nothing here is on the decision path. [`start`] returns a [`PgSink`] whose
//! [`Forward::forward`] only tries to put the row on a bounded queue; a full queue drops the
//! row and counts it. One thread owns the connection and writes batches (one `INSERT …
//! SELECT FROM unnest(…)` each). When the database is away the thread reconnects with
//! backoff; the batch in hand waits for it, the queue fills, and further rows are dropped
//! and counted. The counts are written to the database (`bulwark_telemetry_counters`, per
//! instance) when it is back, shown in `/metrics`, and stated in the audit log (a
//! `telemetry` record before the next checkpoint): the local log stays the record.
//!
//! The schema is created idempotently under an advisory lock, so replicas starting
//! together do not race on `CREATE TABLE IF NOT EXISTS`.

mod query;
mod view;
mod writer;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::time::Duration;

pub use bulwark_audit::telemetry::{Forward, Row};
pub use query::{DeploymentStats, InstanceStats, Recent, connect, recent, stats};
pub use view::View;

/// Why the shared store cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The URL does not parse.
    #[error("telemetry.url: {0}")]
    Url(String),
    /// The database refused or went away.
    #[error("telemetry store: {0}")]
    Sql(#[from] tokio_postgres::Error),
    /// No answer in time.
    #[error("telemetry store: no answer within {0:?}")]
    Timeout(Duration),
    /// The writer's runtime could not start.
    #[error("telemetry store: {0}")]
    Io(#[from] std::io::Error),
}

/// Where and how to write.
#[derive(Clone, Debug)]
pub struct Config {
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`.
    pub url: String,
    /// This replica's label on every row.
    pub instance: String,
    /// Rows waiting at most.
    pub queue: usize,
    /// Rows per statement at most.
    pub batch: usize,
    /// Longest wait to connect or to write one batch.
    pub timeout: Duration,
}

impl Config {
    /// The policy's `telemetry:` section (its URL must be set), for this instance.
    pub fn of_policy(p: &bulwark_policy::TelemetryPolicy, instance: &str) -> Option<Config> {
        Some(Config {
            url: p.url.clone()?,
            instance: instance.to_string(),
            queue: p.queue,
            batch: p.batch,
            timeout: Duration::from_millis(p.timeout_ms),
        })
    }
}

/// The instance id: `BULWARK_INSTANCE` when set (each replica on one host needs its own),
/// else the host name.
pub fn instance_id() -> String {
    if let Ok(v) = std::env::var("BULWARK_INSTANCE") {
        let v = v.trim();
        if !v.is_empty() {
            return v.chars().take(128).collect();
        }
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().chars().take(128).collect::<String>())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// The sending side: cheap, never waits.
pub struct PgSink {
    tx: SyncSender<Row>,
    depth: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
    /// Set when the sink is dropped: the writer learns it is closing even while it holds a
    /// full batch and so reads nothing from the queue.
    closed: Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for PgSink {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::Relaxed);
    }
}

impl Forward for PgSink {
    fn forward(&self, row: &Row) {
        // Counted before the send so the writer never sees a row the depth does not hold.
        self.depth.fetch_add(1, Ordering::Relaxed);
        match self.tx.try_send(row.clone()) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.depth.fetch_sub(1, Ordering::Relaxed);
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn counters(&self) -> (Arc<AtomicU64>, Arc<AtomicU64>) {
        (Arc::clone(&self.depth), Arc::clone(&self.dropped))
    }
}

impl PgSink {
    /// Rows dropped so far (queue full, store away, or a batch the store refused).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Rows queued and not yet written.
    pub fn depth(&self) -> u64 {
        self.depth.load(Ordering::Relaxed)
    }
}

/// Starts the writer thread; it connects (and creates the schema) on its own, so a
/// database out of reach at start is handled as one lost later. Fails only on a URL that
/// does not parse.
pub fn start(cfg: Config) -> Result<(PgSink, std::thread::JoinHandle<()>), PgError> {
    let pg = parse(&cfg.url, cfg.timeout)?;
    let (tx, rx) = std::sync::mpsc::sync_channel(cfg.queue.max(1));
    let depth = Arc::new(AtomicU64::new(0));
    let dropped = Arc::new(AtomicU64::new(0));
    let closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sink = PgSink {
        tx,
        depth: Arc::clone(&depth),
        dropped: Arc::clone(&dropped),
        closed: Arc::clone(&closed),
    };
    let w = writer::Writer::new(pg, cfg, rx, depth, dropped, closed)?;
    let handle = std::thread::Builder::new()
        .name("bulwark-telemetry-pg".into())
        .spawn(move || w.run())?;
    Ok((sink, handle))
}

/// The client configuration of `url`, with `timeout` as its connect timeout.
pub(crate) fn parse(url: &str, timeout: Duration) -> Result<tokio_postgres::Config, PgError> {
    let mut c: tokio_postgres::Config = url
        .parse()
        .map_err(|e: tokio_postgres::Error| PgError::Url(e.to_string()))?;
    c.connect_timeout(timeout);
    if c.get_application_name().is_none() {
        c.application_name("bulwark");
    }
    Ok(c)
}

/// Creates the tables and indexes if they are not there. Several replicas may start at
/// once: `CREATE … IF NOT EXISTS` is not safe against a concurrent create of the same name,
/// so the statements run under a transaction-scoped advisory lock.
pub async fn ensure_schema(client: &mut tokio_postgres::Client) -> Result<(), PgError> {
    let tx = client.transaction().await?;
    // The key is arbitrary but fixed: "bulwark telemetry schema".
    tx.execute("SELECT pg_advisory_xact_lock(7301208822601)", &[])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS bulwark_decisions (
           id BIGSERIAL PRIMARY KEY,
           instance TEXT NOT NULL,
           ts BIGINT NOT NULL,
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
           eval_us BIGINT NOT NULL,
           log TEXT,
           seq BIGINT);
         CREATE INDEX IF NOT EXISTS bulwark_decisions_ts ON bulwark_decisions (ts);
         CREATE INDEX IF NOT EXISTS bulwark_decisions_instance ON bulwark_decisions (instance, ts);
         CREATE TABLE IF NOT EXISTS bulwark_telemetry_counters (
           instance TEXT NOT NULL,
           name TEXT NOT NULL,
           value BIGINT NOT NULL,
           PRIMARY KEY (instance, name));",
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
