//! p50 and p99 per call, the way the budget is stated (DESIGN §10), against the JSON-parse
//! baseline measured in the same process. Prints a Markdown table for docs/benchmarks.md.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::time::Instant;

use bulwark_engine::{Engine, Now, State};
use bulwark_policy::Policy;

mod support;
use support as workload;

fn percentiles(mut v: Vec<u64>) -> (f64, f64) {
    v.sort_unstable();
    let at = |q: f64| v[((v.len() as f64 * q) as usize).min(v.len() - 1)] as f64 / 1000.0;
    (at(0.5), at(0.99))
}

fn main() {
    let iterations: usize = std::env::args()
        .skip_while(|a| a != "--iterations")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(200_000);
    let engine = Engine::new(Policy::builtin().unwrap());
    println!("| workload | engine p50 µs | engine p99 µs | baseline p50 µs | p50 ratio |");
    println!("|---|---:|---:|---:|---:|");
    for w in workload::all() {
        let mut state = State::new(engine.policy());
        let n = if w.name.starts_with("result_10kb") {
            iterations / 4
        } else {
            iterations
        };
        // Warm up sessions and caches.
        for (i, call) in w.calls.iter().enumerate() {
            black_box(engine.evaluate(call, &mut state, Now::at(i as u64 * 100)));
        }
        let mut eng = Vec::with_capacity(n);
        let mut base = Vec::with_capacity(n);
        for i in 0..n {
            let call = &w.calls[i % w.calls.len()];
            let now = Now::at((w.calls.len() + i) as u64 * 100);
            let t = Instant::now();
            black_box(engine.evaluate(call, &mut state, now));
            eng.push(t.elapsed().as_nanos() as u64);
            let t = Instant::now();
            black_box(serde_json::from_str::<serde_json::Value>(&w.line).unwrap());
            base.push(t.elapsed().as_nanos() as u64);
        }
        let (p50, p99) = percentiles(eng);
        let (b50, _) = percentiles(base);
        println!(
            "| {} | {p50:.2} | {p99:.2} | {b50:.2} | {:.1}× |",
            w.name,
            p50 / b50
        );
    }
}
