//! The deployment as the web console and `/metrics` show it: a snapshot of the shared
//! store, refreshed in the background, read without waiting.
//!
//! The admin listener answers from memory (its routes are synchronous and bounded in
//! time); a task polls the store about once a second for rows it has not seen (by row id),
//! the per-minute counts of the last hour and the per-instance totals. When the store is
//! away the snapshot keeps its last state and says so (`store_up` false).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::{PgError, connect};

/// Rows kept for the live feed.
pub const FEED: usize = 500;
/// Minutes of per-verdict counts kept for the chart.
pub const MINUTES: i64 = 60;
/// Most label sets exported per family in `/metrics` (the rest are summed as `other`).
pub const MAX_SERIES: usize = 500;

const VERDICTS: [&str; 5] = ["allow", "warn", "mask", "approve", "block"];

#[derive(Default)]
struct Snapshot {
    store_up: bool,
    last_id: Option<i64>,
    feed: VecDeque<Value>,
    minutes: Vec<Value>,
    rules: Vec<(String, u64)>,
    /// (instance, decision, reason code) → decisions.
    decisions: Vec<(String, String, String, u64)>,
    /// instance → rows it could not deliver.
    dropped: Vec<(String, u64)>,
}

/// A live view of the shared store.
pub struct View {
    snap: Mutex<Snapshot>,
}

impl View {
    fn lock(&self) -> std::sync::MutexGuard<'_, Snapshot> {
        match self.snap.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Starts polling `url` on the current tokio runtime, every `every`.
    pub fn spawn(url: String, timeout: Duration, every: Duration) -> Arc<View> {
        let view = Arc::new(View {
            snap: Mutex::new(Snapshot::default()),
        });
        let v = Arc::clone(&view);
        tokio::spawn(async move {
            let mut client = None;
            loop {
                if client.is_none() {
                    client = connect(&url, timeout).await.ok();
                }
                let ok = match &client {
                    Some(c) => tokio::time::timeout(timeout, v.poll(c))
                        .await
                        .map_err(|_| PgError::Timeout(timeout))
                        .and_then(|r| r)
                        .is_ok(),
                    None => false,
                };
                if !ok {
                    client = None;
                }
                v.lock().store_up = ok;
                tokio::time::sleep(every).await;
            }
        });
        view
    }

    async fn poll(&self, c: &tokio_postgres::Client) -> Result<(), PgError> {
        let after = self.lock().last_id;
        let rows = crate::recent(c, after, FEED).await?;
        let now_min = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64 / 60_000)
            .unwrap_or(0);
        let minutes = c
            .query(
                "SELECT ts / 60000 AS m, decision, count(*) FROM bulwark_decisions
                 WHERE ts >= $1 GROUP BY m, decision ORDER BY m",
                &[&((now_min - MINUTES + 1) * 60_000)],
            )
            .await?;
        let rules = c
            .query(
                "SELECT rule_id, count(*) FROM bulwark_decisions WHERE rule_id IS NOT NULL
                 GROUP BY rule_id ORDER BY count(*) DESC, rule_id LIMIT 50",
                &[],
            )
            .await?;
        let decisions = c
            .query(
                "SELECT instance, decision, coalesce(reason_code, 'NONE'), count(*) FROM bulwark_decisions
                 GROUP BY instance, decision, reason_code ORDER BY count(*) DESC LIMIT $1",
                &[&(MAX_SERIES as i64)],
            )
            .await?;
        let dropped = c
            .query(
                "SELECT instance, value FROM bulwark_telemetry_counters WHERE name = 'dropped' ORDER BY instance",
                &[],
            )
            .await?;
        let n = |v: i64| u64::try_from(v).unwrap_or(0);
        let mut per_min: Vec<(i64, [u64; 5])> = Vec::new();
        for r in &minutes {
            let m: i64 = r.get(0);
            let d: &str = r.get(1);
            let Some(i) = VERDICTS.iter().position(|v| *v == d) else {
                continue;
            };
            match per_min.last_mut() {
                Some((lm, c)) if *lm == m => c[i] += n(r.get(2)),
                _ => {
                    let mut c = [0u64; 5];
                    c[i] = n(r.get(2));
                    per_min.push((m, c));
                }
            }
        }
        let mut s = self.lock();
        for r in rows {
            s.last_id = Some(r.id);
            s.feed.push_back(json!({
                "seq": r.id,
                "ts_ms": r.row.ts,
                "instance": r.instance,
                "front": r.row.front,
                "tool": r.row.tool,
                "decision": r.row.decision,
                "reason_code": r.row.reason_code,
                "rule_id": r.row.rule_id,
                // The shared store keeps no reason text (it may quote arguments).
                "reason": r.row.reason_code.clone().unwrap_or_default(),
            }));
            if s.feed.len() > FEED {
                s.feed.pop_front();
            }
        }
        s.minutes = per_min
            .iter()
            .map(|(m, c)| {
                json!({"minute": m, "allow": c[0], "warn": c[1], "mask": c[2], "approve": c[3], "block": c[4]})
            })
            .collect();
        s.rules = rules
            .iter()
            .map(|r| (r.get::<_, String>(0), n(r.get(1))))
            .collect();
        s.decisions = decisions
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), n(r.get(3))))
            .collect();
        s.dropped = dropped.iter().map(|r| (r.get(0), n(r.get(1)))).collect();
        Ok(())
    }

    /// Every instance's decisions after `after` (a row id), oldest first, each with its
    /// `instance`.
    pub fn feed(&self, after: u64) -> Vec<Value> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.lock()
            .feed
            .iter()
            .filter(|v| v["seq"].as_i64().is_some_and(|s| s > after))
            .cloned()
            .collect()
    }

    /// The console's summary for the whole deployment: per-minute counts by verdict, totals
    /// by rule and decision, and each instance's totals.
    pub fn summary(&self) -> Value {
        let s = self.lock();
        let mut decisions = serde_json::Map::new();
        let mut instances: std::collections::BTreeMap<&str, serde_json::Map<String, Value>> =
            Default::default();
        for (inst, d, _, k) in &s.decisions {
            let e = decisions.entry(d.clone()).or_insert(json!(0));
            *e = json!(e.as_u64().unwrap_or(0) + k);
            let i = instances.entry(inst.as_str()).or_default();
            let e = i.entry(d.clone()).or_insert(json!(0));
            *e = json!(e.as_u64().unwrap_or(0) + k);
        }
        let rules: serde_json::Map<String, Value> =
            s.rules.iter().map(|(r, k)| (r.clone(), json!(k))).collect();
        json!({
            "deployment": true,
            "store_up": s.store_up,
            "minutes": s.minutes,
            "rules": rules,
            "decisions": decisions,
            "instances": instances,
        })
    }

    /// Prometheus text: every instance's decisions and drops, and whether the store
    /// answered at the last poll.
    pub fn render(&self) -> String {
        let s = self.lock();
        let esc = |v: &str| {
            v.replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n")
        };
        let mut out = String::new();
        out.push_str("# HELP bulwark_deployment_decisions_total Decisions of every instance, from the shared telemetry store.\n# TYPE bulwark_deployment_decisions_total counter\n");
        for (inst, d, code, k) in &s.decisions {
            out.push_str(&format!(
                "bulwark_deployment_decisions_total{{instance=\"{}\",decision=\"{}\",reason_code=\"{}\"}} {k}\n",
                esc(inst),
                esc(d),
                esc(code)
            ));
        }
        out.push_str("# HELP bulwark_deployment_telemetry_dropped_total Decision rows an instance could not deliver to the shared store.\n# TYPE bulwark_deployment_telemetry_dropped_total counter\n");
        for (inst, k) in &s.dropped {
            out.push_str(&format!(
                "bulwark_deployment_telemetry_dropped_total{{instance=\"{}\"}} {k}\n",
                esc(inst)
            ));
        }
        out.push_str("# HELP bulwark_deployment_store_up Whether the shared telemetry store answered at the last poll.\n# TYPE bulwark_deployment_store_up gauge\n");
        out.push_str(&format!(
            "bulwark_deployment_store_up {}\n",
            u8::from(s.store_up)
        ));
        out
    }
}
