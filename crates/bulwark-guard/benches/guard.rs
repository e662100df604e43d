//! Latency of the guard on this machine, end to end (tokenize, embed, head), on English
//! text: a 2 KB text (about 420 tokens) and a 900-byte text, for the default distilled
//! static model (`static_*`) and the full encoder (`encoder_*`, two 254-token windows per
//! 2 KB). `*_score_*` is what the engine's guard stage waits for; `*_runner_2kb` adds the
//! hand-off to a worker thread with a deadline (what a `tools/call` waits for when the guard
//! runs); `static_load` is a start with the manifest current (no re-hash of the weights).
//!
//! Needs the installed model (`BULWARK_GUARD_MODEL_DIR`, or the test setup's
//! `target/guard-model`); fails loudly without it rather than measuring nothing.

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

fn model_dir() -> std::path::PathBuf {
    std::env::var_os("BULWARK_GUARD_MODEL_DIR")
        .map(Into::into)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/guard-model").into())
}

fn text(bytes: usize) -> String {
    let base = "The quarterly report lists revenue by region, churn by plan and the hiring plan \
                for the next two quarters; see the appendix for the method and the raw tables. ";
    base.repeat(bytes / base.len() + 1)[..bytes].to_owned()
}

fn bench(c: &mut Criterion) {
    let dir = model_dir();
    let load = |kind| match bulwark_guard::Guard::load_kind(&dir, kind) {
        Ok(g) => Arc::new(g),
        Err(e) => panic!("guard bench needs the model in {}: {e}", dir.display()),
    };
    let two_kb = text(2048);
    let one = text(900);
    let mut g = c.benchmark_group("guard");
    for (name, kind) in [
        ("static", bulwark_guard::Kind::Static),
        ("encoder", bulwark_guard::Kind::Encoder),
    ] {
        let guard = load(kind);
        let runner = bulwark_guard::Runner::start(guard.clone(), 1, 4);
        g.sample_size(if kind == bulwark_guard::Kind::Static {
            100
        } else {
            10
        });
        g.bench_function(format!("{name}_score_2kb"), |b| {
            b.iter(|| guard.score(&two_kb))
        });
        g.bench_function(format!("{name}_score_900b"), |b| {
            b.iter(|| guard.score(&one))
        });
        g.bench_function(format!("{name}_runner_2kb"), |b| {
            b.iter(|| runner.score(&two_kb, Duration::from_secs(10)))
        });
    }
    g.sample_size(10);
    g.bench_function("static_load", |b| {
        b.iter(|| load(bulwark_guard::Kind::Static))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
