//! The scanner on 4 KiB, 10 KiB, 100 KiB and 1 MiB of mixed tool output (prose, JSON, code,
//! logs, a few planted secrets), against the naive baseline in the same run: every rule's
//! regex over the whole input (DESIGN §10: 10 KB ≤ 1 ms, 100 KB ≤ 10 ms).
//!
//! `cargo bench -p bulwark-scan --bench scan`; instructions per scan, immune to the machine's
//! load: `SIZE=10240 SCANS=20 valgrind --tool=callgrind target/release/deps/scan-*`.
#![allow(clippy::unwrap_used, missing_docs)]

use std::hint::black_box;

use bulwark_scan::{Scanner, Scope};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};

/// Mixed text of about `size` bytes, deterministic.
pub fn haystack(size: usize) -> String {
    let parts = [
        "The deployment finished in 42.7 s; 3 services restarted and the health checks passed on all nodes.\n",
        "{\"id\": 1842, \"user\": \"alice\", \"email\": \"alice@example.com\", \"status\": \"active\", \"tags\": [\"ops\", \"beta\"]}\n",
        "fn handle(req: Request) -> Result<Response> { let body = req.json()?; Ok(Response::new(body)) }\n",
        "2026-11-30T03:30:09Z INFO request_id=7f3a2c path=/api/v1/orders latency_ms=12 status=200\n",
        "Please review the attached invoice and confirm the shipping address before Friday.\n",
        "export PATH=$HOME/.cargo/bin:$PATH && cargo build --release --locked\n",
        "| region | p50 | p99 |\n|---|---|---|\n| eu-west-1 | 12 ms | 48 ms |\n",
    ];
    let mut s = String::with_capacity(size + 256);
    let mut i = 0;
    while s.len() < size {
        s.push_str(parts[i % parts.len()]);
        if i % 97 == 13 {
            s.push_str("aws_access_key_id = AKIAZ7KDPQXL4MWN3BVC\n");
        }
        if i % 131 == 77 {
            s.push_str("curl -H 'Authorization: Bearer ghp_aBcD3fGh1jKlMn0pQrStUvWxYz0123456789' https://api.github.com\n");
        }
        i += 1;
    }
    s
}

fn bench(c: &mut Criterion) {
    let scanner = Scanner::new().unwrap();
    for (name, size) in [
        ("4KiB", 4 << 10),
        ("10KiB", 10 << 10),
        ("100KiB", 100 << 10),
        ("1MiB", 1 << 20),
    ] {
        let text = haystack(size);
        let mut g = c.benchmark_group("scan");
        g.throughput(Throughput::Bytes(text.len() as u64));
        if size >= 1 << 20 {
            g.sample_size(10);
        }
        g.bench_with_input(BenchmarkId::new("bulwark", name), &text, |b, t| {
            b.iter(|| black_box(scanner.scan(black_box(t), Scope::Response).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("naive_per_regex", name), &text, |b, t| {
            b.iter(|| black_box(scanner.scan_naive(black_box(t), Scope::Response)))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);

fn main() {
    // `SIZE=bytes SCANS=n`: scan n haystacks of that size on this thread and stop, for
    // counting instructions per scan under callgrind (run twice with different n and
    // subtract: the set-up cancels out), which the machine's other load cannot disturb.
    if let (Ok(size), Ok(scans)) = (std::env::var("SIZE"), std::env::var("SCANS")) {
        let scanner = Scanner::new().unwrap();
        let text = haystack(size.parse().unwrap());
        for _ in 0..scans.parse::<u64>().unwrap() {
            black_box(scanner.scan(black_box(&text), Scope::Response).unwrap());
        }
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
