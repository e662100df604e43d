//! Reading the shared store: deployment statistics (per instance and in total) and the
//! newest decisions, for `bulwark audit stats` and the web console.

use std::time::Duration;

use bulwark_audit::telemetry::Stats;
use tokio_postgres::{Client, NoTls};

use crate::{PgError, Row, ensure_schema, parse};

/// Connects (on the caller's runtime) and makes sure the schema is there, so a query
/// against a database no replica has written to yet answers "nothing" rather than failing.
pub async fn connect(url: &str, timeout: Duration) -> Result<Client, PgError> {
    let pg = parse(url, timeout)?;
    let (mut client, conn) = tokio::time::timeout(timeout, pg.connect(NoTls))
        .await
        .map_err(|_| PgError::Timeout(timeout))??;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    ensure_schema(&mut client).await?;
    Ok(client)
}

/// One instance's share.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct InstanceStats {
    /// The instance id.
    pub instance: String,
    /// Decisions it recorded.
    pub total: u64,
    /// By decision.
    pub by_decision: Vec<(String, u64)>,
    /// Evaluation time percentiles in microseconds: p50, p90, p99, max.
    pub eval_us: [u64; 4],
    /// Rows it could not deliver (queue full, store away).
    pub dropped: u64,
    /// Its newest decision (ms since the epoch).
    pub last_ts: u64,
}

/// The whole deployment: totals as the local store reports them, and each instance.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct DeploymentStats {
    /// Every instance together.
    pub total: Stats,
    /// Each instance, by id.
    pub instances: Vec<InstanceStats>,
}

fn u(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn since(since_ms: Option<u64>) -> i64 {
    since_ms.map_or(0, |s| i64::try_from(s).unwrap_or(i64::MAX))
}

/// Counts by decision, rule, tool and front, latency percentiles and drops, for the whole
/// deployment and per instance, over decisions at or after `since_ms`.
pub async fn stats(client: &Client, since_ms: Option<u64>) -> Result<DeploymentStats, PgError> {
    let from = since(since_ms);
    let count_by = async |col: &str| -> Result<Vec<(String, u64)>, PgError> {
        let rows = client
            .query(
                &format!(
                    "SELECT {col}, count(*) FROM bulwark_decisions WHERE ts >= $1 AND {col} IS NOT NULL
                     GROUP BY {col} ORDER BY count(*) DESC, {col} LIMIT 50"
                ),
                &[&from],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<_, String>(0), u(r.get::<_, i64>(1))))
            .collect())
    };
    let by_decision = count_by("decision").await?;
    let pct = "percentile_disc(ARRAY[0.5, 0.9, 0.99, 1.0]) WITHIN GROUP (ORDER BY eval_us)";
    let p = client
        .query_one(
            &format!("SELECT {pct} FROM bulwark_decisions WHERE ts >= $1"),
            &[&from],
        )
        .await?;
    let dropped_rows = client
        .query(
            "SELECT instance, value FROM bulwark_telemetry_counters WHERE name = 'dropped'",
            &[],
        )
        .await?;
    let dropped_of = |inst: &str| {
        dropped_rows
            .iter()
            .find(|r| r.get::<_, &str>(0) == inst)
            .map_or(0, |r| u(r.get::<_, i64>(1)))
    };
    let mut total = Stats {
        total: by_decision.iter().map(|(_, n)| n).sum(),
        by_decision,
        by_rule: count_by("rule_id").await?,
        by_tool: count_by("tool").await?,
        by_front: count_by("front").await?,
        eval_us: percentiles(p.get::<_, Option<Vec<i64>>>(0)),
        dropped: dropped_rows.iter().map(|r| u(r.get::<_, i64>(1))).sum(),
        recovered: 0,
    };
    let per = client
        .query(
            &format!(
                "SELECT instance, count(*), max(ts), {pct} FROM bulwark_decisions WHERE ts >= $1
                 GROUP BY instance ORDER BY instance"
            ),
            &[&from],
        )
        .await?;
    let by = client
        .query(
            "SELECT instance, decision, count(*) FROM bulwark_decisions WHERE ts >= $1
             GROUP BY instance, decision ORDER BY instance, count(*) DESC, decision",
            &[&from],
        )
        .await?;
    let mut instances: Vec<InstanceStats> = per
        .iter()
        .map(|r| {
            let instance: String = r.get(0);
            InstanceStats {
                total: u(r.get::<_, i64>(1)),
                last_ts: u(r.get::<_, i64>(2)),
                eval_us: percentiles(r.get::<_, Option<Vec<i64>>>(3)),
                dropped: dropped_of(&instance),
                by_decision: by
                    .iter()
                    .filter(|b| b.get::<_, &str>(0) == instance)
                    .map(|b| (b.get::<_, String>(1), u(b.get::<_, i64>(2))))
                    .collect(),
                instance,
            }
        })
        .collect();
    // An instance that lost every row it had still shows, with its drops.
    for r in &dropped_rows {
        let inst: &str = r.get(0);
        if !instances.iter().any(|i| i.instance == inst) {
            instances.push(InstanceStats {
                instance: inst.to_string(),
                dropped: u(r.get::<_, i64>(1)),
                ..InstanceStats::default()
            });
        }
    }
    instances.sort_by(|a, b| a.instance.cmp(&b.instance));
    total.total = total.total.max(instances.iter().map(|i| i.total).sum());
    Ok(DeploymentStats { total, instances })
}

fn percentiles(v: Option<Vec<i64>>) -> [u64; 4] {
    let mut out = [0u64; 4];
    for (o, x) in out.iter_mut().zip(v.unwrap_or_default()) {
        *o = u(x);
    }
    out
}

/// A decision from the shared store, with its instance and its row id (for paging).
#[derive(Clone, Debug)]
pub struct Recent {
    /// The store's row id: later rows have larger ids.
    pub id: i64,
    /// The instance that decided.
    pub instance: String,
    /// The decision.
    pub row: Row,
}

/// Decisions with an id above `after_id`, oldest first, at most `limit`; with no
/// `after_id`, the newest `limit`, oldest first.
pub async fn recent(
    client: &Client,
    after_id: Option<i64>,
    limit: usize,
) -> Result<Vec<Recent>, PgError> {
    let limit = i64::try_from(limit.clamp(1, 10_000)).unwrap_or(10_000);
    let cols = "id, instance, ts, front, session, principal, server, tool, direction, decision, reason_code, rule_id, severity, eval_us";
    let rows = match after_id {
        Some(a) => {
            client
                .query(
                    &format!(
                        "SELECT {cols} FROM bulwark_decisions WHERE id > $1 ORDER BY id LIMIT $2"
                    ),
                    &[&a, &limit],
                )
                .await?
        }
        None => {
            client
                .query(
                    &format!(
                        "SELECT * FROM (SELECT {cols} FROM bulwark_decisions ORDER BY id DESC LIMIT $1) t ORDER BY id"
                    ),
                    &[&limit],
                )
                .await?
        }
    };
    Ok(rows
        .iter()
        .map(|r| Recent {
            id: r.get(0),
            instance: r.get(1),
            row: Row {
                ts: u(r.get::<_, i64>(2)),
                front: r.get(3),
                session: r.get(4),
                principal: r.get(5),
                server: r.get(6),
                tool: r.get(7),
                direction: r.get(8),
                decision: r.get(9),
                reason_code: r.get(10),
                rule_id: r.get(11),
                severity: r.get(12),
                eval_us: u(r.get::<_, i64>(13)),
                log: None,
                seq: None,
            },
        })
        .collect())
}
