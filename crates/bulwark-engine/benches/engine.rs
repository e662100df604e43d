//! The engine on representative calls with the default policy (DESIGN §10: one request with
//! 1 KB of arguments p50 ≤ 10 µs, p99 ≤ 30 µs).
//!
//! Every group also measures a baseline in the same process: parsing the call's JSON, which
//! any front does before the engine sees the call. Ratios against it hold up on a noisy,
//! shared machine where absolute numbers drift. `cargo bench -p bulwark-engine --bench
//! engine`; the p50/p99 table comes from `--bench latency`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;

use bulwark_engine::{Call, Engine, Now, State};
use bulwark_policy::Policy;
use criterion::{Criterion, criterion_group, criterion_main};

mod support;
use support as workload;

fn bench(c: &mut Criterion) {
    let engine = Engine::new(Policy::builtin().unwrap());
    for w in workload::all() {
        let mut group = c.benchmark_group(w.name);
        group.bench_function("baseline_json_parse", |b| {
            b.iter(|| {
                black_box(serde_json::from_str::<serde_json::Value>(black_box(&w.line)).unwrap())
            })
        });
        let mut state = State::new(engine.policy());
        let mut i: u64 = 0;
        group.bench_function("engine", |b| {
            b.iter(|| {
                i += 1;
                let call: &Call = &w.calls[(i % w.calls.len() as u64) as usize];
                black_box(engine.evaluate(call, &mut state, Now::at(i * 100)))
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
