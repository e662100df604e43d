//! `evaluate` round trips over the Unix socket (DESIGN §10: p99 ≤ 100 µs), measured by a
//! load client against the daemon's server running in this process.
//!
//! The baseline is an echo server on the same kind of socket, same runtime, same client:
//! a line in, the same line out. What the daemon adds over it is parsing, evaluating and
//! answering. `cargo bench -p bulwark-daemon --bench roundtrip [-- --requests N]` prints a
//! Markdown table for docs/benchmarks.md; `RT_THREADS=N` sets the server's worker threads
//! (default 1, as `bulwark daemon --threads`).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bulwark_daemon::server::{self, Limits};
use bulwark_daemon::service::{PolicySource, Service};
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

fn percentile(sorted: &[u64], q: f64) -> f64 {
    sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)] as f64 / 1000.0
}

/// Sends `requests` one at a time on each of `clients` connections; nanoseconds per round trip.
fn load(socket: &Path, lines: &[String], clients: usize, requests: usize) -> Vec<u64> {
    let per_client = requests / clients;
    let mut all: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                s.spawn(move || {
                    let stream = UnixStream::connect(socket).unwrap();
                    let mut writer = stream.try_clone().unwrap();
                    let mut reader = BufReader::new(stream);
                    let mut reply = String::new();
                    let mut times = Vec::with_capacity(per_client);
                    for i in 0..per_client {
                        let line = &lines[(c * per_client + i) % lines.len()];
                        let t = Instant::now();
                        writer.write_all(line.as_bytes()).unwrap();
                        reply.clear();
                        reader.read_line(&mut reply).unwrap();
                        times.push(t.elapsed().as_nanos() as u64);
                        assert!(reply.contains("\"result\""), "{reply}");
                    }
                    times
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    all.sort_unstable();
    all
}

async fn echo(listener: tokio::net::UnixListener) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        tokio::spawn(async move {
            let (r, mut w) = stream.into_split();
            let mut r = tokio::io::BufReader::new(r);
            let mut line = String::new();
            loop {
                line.clear();
                if r.read_line(&mut line).await.unwrap_or(0) == 0 {
                    return;
                }
                // Answer with a result so the client's check holds for both servers.
                let reply = format!("{{\"result\":{}}}\n", line.trim_end().len());
                if w.write_all(reply.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
    }
}

fn main() {
    let requests: usize = std::env::args()
        .skip_while(|a| a != "--requests")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let dir = std::env::temp_dir().join(format!("bulwark-rt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let daemon_sock: PathBuf = dir.join("d.sock");
    let echo_sock: PathBuf = dir.join("e.sock");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(
            std::env::var("RT_THREADS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1),
        )
        .enable_all()
        .build()
        .unwrap();
    let service = Arc::new(Service::new(PolicySource::Builtin, None).unwrap());
    // The handler alone, no socket: the daemon's own work per request.
    let handle_only = |lines: &[String]| {
        let peer = bulwark_daemon::service::Peer {
            uid: Some(0),
            pid: None,
        };
        let mut t: Vec<u64> = (0..20_000)
            .map(|i| {
                let line = lines[i % lines.len()].trim_end().as_bytes();
                let start = Instant::now();
                std::hint::black_box(service.handle(line, &peer));
                start.elapsed().as_nanos() as u64
            })
            .collect();
        t.sort_unstable();
        t
    };
    let limits = Limits {
        per_second: u32::MAX,
        ..Limits::default()
    };
    {
        let _guard = runtime.enter();
        let listener = server::bind(&daemon_sock, &[]).unwrap();
        let path = daemon_sock.clone();
        runtime.spawn(server::serve(
            listener,
            path,
            Arc::clone(&service),
            limits.clone(),
            std::future::pending(),
        ));
        let e = tokio::net::UnixListener::bind(&echo_sock).unwrap();
        runtime.spawn(echo(e));
    }
    std::thread::sleep(Duration::from_millis(100));

    let hash: String = Sha256::digest(b"call_api")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let workloads: Vec<(&str, Vec<String>)> = vec![
        (
            "evaluate, no content",
            (0..1000)
                .map(|i| {
                    json!({"jsonrpc":"2.0","id":i,"method":"evaluate","params":{"tool_name":"call_api","tool_hash":hash,"capabilities":8,"session_id":i,"destination":"1.1.1.1","direction":0}}).to_string() + "\n"
                })
                .collect(),
        ),
        (
            "evaluate, 200 B content",
            (0..1000)
                .map(|i| {
                    json!({"jsonrpc":"2.0","id":i,"method":"evaluate","params":{"tool_name":"call_api","tool_hash":hash,"capabilities":8,"session_id":i,"destination":"1.1.1.1","direction":0,"content":"POST /v1/orders {\"sku\":\"A-1042\",\"qty\":3,\"note\":\"deliver to the loading dock before noon, ring twice\",\"customer\":\"c-88812\",\"priority\":\"normal\",\"tags\":[\"retail\",\"eu\"]}"}}).to_string() + "\n"
                })
                .collect(),
        ),
        (
            "check, shell command",
            (0..1000)
                .map(|i| {
                    json!({"jsonrpc":"2.0","id":i,"method":"check","params":{"tool":"bash","session":format!("s{i}"),"args":{"command":"git status --porcelain && ls -la src | head -20"}}}).to_string() + "\n"
                })
                .collect(),
        ),
    ];
    let std_sock = dir.join("s.sock");
    {
        let l = std::os::unix::net::UnixListener::bind(&std_sock).unwrap();
        std::thread::spawn(move || {
            for stream in l.incoming() {
                let stream = stream.unwrap();
                std::thread::spawn(move || {
                    let mut w = stream.try_clone().unwrap();
                    let mut r = BufReader::new(stream);
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let reply = format!("{{\"result\":{}}}\n", line.trim_end().len());
                        if w.write_all(reply.as_bytes()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
    }
    for clients in [1, 8] {
        let t = load(&std_sock, &workloads[0].1, clients, requests);
        println!(
            "std echo, {clients} clients: p50 {:.1} p99 {:.1}",
            percentile(&t, 0.5),
            percentile(&t, 0.99)
        );
    }
    // Warm up both servers and the client path.
    load(&daemon_sock, &workloads[0].1, 1, 5000);
    load(&echo_sock, &workloads[0].1, 1, 5000);

    for (name, lines) in &workloads {
        let t = handle_only(lines);
        println!(
            "handler only, {name}: p50 {:.1} p99 {:.1}",
            percentile(&t, 0.5),
            percentile(&t, 0.99)
        );
    }
    println!(
        "| workload | clients | p50 µs | p99 µs | echo p50 µs | echo p99 µs | p99 − echo p99 µs |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (name, lines) in &workloads {
        for clients in [1, 8] {
            let base = load(&echo_sock, lines, clients, requests);
            let t = load(&daemon_sock, lines, clients, requests);
            println!(
                "| {name} | {clients} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                percentile(&t, 0.5),
                percentile(&t, 0.99),
                percentile(&base, 0.5),
                percentile(&base, 0.99),
                percentile(&t, 0.99) - percentile(&base, 0.99),
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
