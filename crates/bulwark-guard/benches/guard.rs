//! Latency of one guard window on this machine: a 2 KB text, scored end to end
//! (tokenize, encode, head). Needs the installed model (`BULWARK_GUARD_MODEL_DIR`, or the
//! test setup's `target/guard-model`); fails loudly without it rather than measuring nothing.

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
    let guard = match bulwark_guard::Guard::load(&dir) {
        Ok(g) => g,
        Err(e) => panic!("guard bench needs the model in {}: {e}", dir.display()),
    };
    let window = text(2048);
    let mut g = c.benchmark_group("guard");
    g.sample_size(30);
    g.bench_function("score_2kb", |b| b.iter(|| guard.score(&window)));
    let one = text(900);
    g.bench_function("score_one_window_256_tokens", |b| {
        b.iter(|| guard.score(&one))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
