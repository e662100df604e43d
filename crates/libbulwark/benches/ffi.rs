//! What crossing the C ABI costs (DESIGN §10: the FFI call ≤ the engine's time + 2 µs).
//!
//! Per workload, three measurements in one process, each call in one of 1000 sessions so rate
//! limits and the loop guard stay out of the way:
//! - `engine`: the shared evaluator deciding an already-built `Call` (no JSON either way);
//! - `rust_line`: the same through the Rust API a line at a time — parse the JSON line,
//!   decide, serialize the decision — which is the work the C API is defined to do;
//! - `ffi`: `bulwark_evaluate` on a C string plus `bulwark_string_free`.
//!
//! `ffi − rust_line` is the boundary's own cost; `ffi − engine` adds the JSON in and out.
//! `cargo bench -p libbulwark --bench ffi`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, unsafe_code)]

use std::ffi::CString;
use std::hint::black_box;

use bulwark::{Handle, bulwark_evaluate, bulwark_string_free};
use bulwark_engine::Call;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

struct Workload {
    name: &'static str,
    lines: Vec<String>,
    calls: Vec<Call>,
}

fn workload(name: &'static str, tool: &str, args: Value) -> Workload {
    let sessions = 0..1000;
    Workload {
        name,
        lines: sessions
            .clone()
            .map(|i| {
                json!({"tool": tool, "session": format!("bench-{i}"), "args": args}).to_string()
            })
            .collect(),
        calls: sessions
            .map(|i| Call::request(format!("bench-{i}"), tool, args.clone()))
            .collect(),
    }
}

fn bench(c: &mut Criterion) {
    let mut sql = String::from(
        "SELECT o.id, o.total, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.status IN (",
    );
    while sql.len() < 1000 {
        sql.push_str("'shipped', 'paid', 'refunded', ");
    }
    sql.push_str("'open') ORDER BY o.created_at DESC LIMIT 100");
    let workloads = [
        workload(
            "shell_short",
            "bash",
            json!({"command": "git status --porcelain && ls -la src | head -20"}),
        ),
        workload("sql_1kb", "execute_sql", json!({"sql": sql})),
        workload(
            "url_fetch",
            "fetch",
            json!({"url": "https://api.github.com/repos/rust-lang/rust/issues?state=open"}),
        ),
    ];
    let handle = Box::into_raw(Box::new(Handle::new(None).unwrap()));
    // SAFETY: `handle` is live until the end of this function.
    let h = unsafe { &*handle };
    for w in &workloads {
        let mut group = c.benchmark_group(format!("ffi/{}", w.name));
        let mut i = 0usize;
        group.bench_function("engine", |b| {
            b.iter(|| {
                i = (i + 1) % w.calls.len();
                black_box(h.gate().decide(&w.calls[i]))
            })
        });
        group.bench_function("rust_line", |b| {
            b.iter(|| {
                i = (i + 1) % w.lines.len();
                black_box(h.evaluate(w.lines[i].as_bytes()))
            })
        });
        let c_lines: Vec<CString> = w
            .lines
            .iter()
            .map(|l| CString::new(l.as_str()).unwrap())
            .collect();
        group.bench_function("ffi", |b| {
            b.iter(|| {
                i = (i + 1) % c_lines.len();
                // SAFETY: a live engine and a NUL-terminated line; the result is freed once.
                unsafe {
                    let out = bulwark_evaluate(handle, c_lines[i].as_ptr());
                    black_box(*out);
                    bulwark_string_free(out);
                }
            })
        });
        group.finish();
    }
    // SAFETY: no call is using the engine any more.
    unsafe { bulwark::bulwark_engine_free(handle) };
}

criterion_group!(benches, bench);
criterion_main!(benches);
