//! What sharing state costs a decision: the same calls decided on the in-process store and
//! on a `redis-server` on loopback (started here, stopped at the end), in the same run.
//!
//! A harness, not criterion: the figure is a latency distribution per store (p50, p90,
//! p99) and the difference of the medians. Blocks of calls alternate between the stores, so
//! machine noise hits both alike. Rows: the default policy (two round trips per decision:
//! lock+load, write-back), and with a global rate limit (one more: the draw script).
//!
//! ```sh
//! cargo bench -p bulwark-store-redis --bench decide            # 20 000 decisions per row
//! N=50000 cargo bench -p bulwark-store-redis --bench decide
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use bulwark_engine::Call;
use bulwark_gate::{Gate, Person};
use bulwark_store_redis::RedisStore;
use serde_json::json;

/// The `n`th call: a shell command and a SQL query by turns, in one session whose own rate
/// limit is lifted (one busy agent).
fn call(n: usize) -> Call {
    if n.is_multiple_of(2) {
        Call::request(
            "bench",
            "bash",
            json!({"command": format!("ls -la /tmp/d{}", n % 97)}),
        )
    } else {
        Call::request(
            "bench",
            "execute_sql",
            json!({"sql": format!("SELECT id, name FROM users WHERE id = {}", n % 89)}),
        )
    }
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

fn main() {
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let redis = support::Redis::start();
    let rows = [
        ("default policy", ""),
        (
            "with a global limit",
            "  global: { calls: 100000000, per_secs: 60 }\n",
        ),
    ];
    println!("| policy | store | p50 µs | p90 µs | p99 µs |");
    println!("|---|---|---|---|---|");
    for (i, (name, extra)) in rows.iter().enumerate() {
        let base = format!(
            "version: 1\nrate:\n  session: {{ calls: 0, network: 0, actuate: 0 }}\n{extra}"
        );
        let shared = format!(
            "{base}state: {{ backend: redis, url: '{}', prefix: bench{i}, timeout_ms: 1000 }}\n",
            redis.url()
        );
        let load = |y: &str| bulwark_policy::load_str("b.yaml", y).unwrap();
        let memory = Gate::new(load(&base), "bench");
        let store = RedisStore::for_policy(&load(&shared)).unwrap();
        let redis_gate = Gate::new(load(&shared), "bench").with_store(Arc::new(store));
        memory.warm_up();
        redis_gate.warm_up();
        let gates = [&memory, &redis_gate];
        let mut times: [Vec<u64>; 2] = [Vec::with_capacity(n), Vec::with_capacity(n)];
        for k in 0..1000 {
            for g in gates {
                black_box(g.call(&call(k)).person(Person::Caller).decide());
            }
        }
        let block = 500;
        let mut k = 0;
        while times[0].len() < n {
            for (g, t) in gates.iter().zip(times.iter_mut()) {
                for j in 0..block {
                    let c = call(k + j);
                    let t0 = Instant::now();
                    let r = g.call(&c).person(Person::Caller).decide();
                    t.push(t0.elapsed().as_nanos() as u64);
                    assert!(r.decision.is_allowed(), "{:?}", r.decision);
                }
            }
            k += block;
        }
        let mut p50 = [0.0; 2];
        for (s, (label, t)) in ["memory", "redis (loopback)"]
            .iter()
            .zip(times.iter_mut())
            .enumerate()
        {
            t.sort_unstable();
            p50[s] = pct(t, 0.5);
            println!(
                "| {name} | {label} | {:.1} | {:.1} | {:.1} |",
                pct(t, 0.5),
                pct(t, 0.9),
                pct(t, 0.99)
            );
        }
        println!(
            "| {name} | added by redis (p50) | {:.1} | | |",
            p50[1] - p50[0]
        );
    }
}
