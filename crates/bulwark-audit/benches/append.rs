//! Appending to the audit log (issue budget: ≤ 2 µs amortised), against the baseline of
//! what an unchained log costs per line in the same process: serialising the decision and
//! writing it through a buffer.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::io::Write;

use bulwark_audit::{AuditKeys, AuditLog, Entry, Options};
use bulwark_engine::{Call, Engine, Now, State};
use criterion::{Criterion, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("bulwark-audit-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let engine = Engine::new(bulwark_policy::Policy::builtin().unwrap());
    let call = Call::request(
        "s1",
        "execute_sql",
        serde_json::json!({"sql": "SELECT id, name FROM users WHERE id = 7"}),
    );
    let d = engine.evaluate(&call, &mut State::new(engine.policy()), Now::at(0));
    let entry = Entry {
        front: "mcp",
        session: "mcp:1234:1700000000000",
        principal: Some("mcp:stdio"),
        server: Some("postgres"),
        direction: "request",
        args: &call.args,
        definition: None,
        decision: &d,
        refused: false,
    };
    let mut g = c.benchmark_group("audit_append");
    let plain = std::fs::File::create(dir.join("plain.jsonl")).unwrap();
    let mut plain = std::io::BufWriter::with_capacity(64 * 1024, plain);
    g.bench_function("baseline_plain_json_line", |b| {
        b.iter(|| {
            let line = black_box(&d).to_json();
            plain.write_all(line.as_bytes()).unwrap();
            plain.write_all(b"\n").unwrap();
        })
    });
    let log = AuditLog::open(
        &dir.join("audit.jsonl"),
        AuditKeys::from_bytes([1; 32], [2; 32]),
        "mcp",
        Options::default(),
    )
    .unwrap();
    g.bench_function("chained_record_group_commit", |b| {
        b.iter(|| log.record(black_box(&entry)).unwrap())
    });
    log.close().unwrap();
    // The two halves: what the caller pays (queueing; the group is never reached here), and
    // what the ticker pays later, off the caller's path, to seal and write each record.
    let queued = AuditLog::open(
        &dir.join("queued.jsonl"),
        AuditKeys::from_bytes([1; 32], [2; 32]),
        "mcp",
        Options {
            group: usize::MAX,
            ..Options::default()
        },
    )
    .unwrap();
    g.bench_function("caller_side_enqueue", |b| {
        b.iter_custom(|iters| {
            let t = std::time::Instant::now();
            for _ in 0..iters {
                queued.record(black_box(&entry)).unwrap();
            }
            let spent = t.elapsed();
            queued.tick();
            spent
        })
    });
    g.bench_function("background_seal_and_write", |b| {
        b.iter_custom(|iters| {
            for _ in 0..iters {
                queued.record(black_box(&entry)).unwrap();
            }
            let t = std::time::Instant::now();
            queued.tick();
            t.elapsed()
        })
    });
    g.finish();
    queued.close().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
