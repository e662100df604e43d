//! Load harness for the MCP gateway's stdio wrapper (issue: ≤ 0.25 ms p50 / ≤ 0.5 ms p99
//! added at 3k calls/s; idle RSS ≤ 30 MB).
//!
//! Drives `tools/call` at fixed rates (open loop: calls are sent on schedule whether or
//! not earlier ones were answered) against the same upstream three ways, in one run:
//!
//! - **direct**: the client talks to the server;
//! - **relay**: through a bare line relay process — the floor any stdio wrapper pays (one
//!   more process, two more pipes);
//! - **bulwark**: through `bulwark mcp` with the default policy (arguments and results
//!   scanned, definitions pinned), its per-session rate limit lifted: one session makes
//!   every call here, thousands a second, where the default allows 60 a minute.
//!
//! The upstream and the relay are this program re-executed with `--role echo|relay`, so
//! nothing but the hop under test differs. `cargo bench -p bulwark --bench mcp_load`
//! prints a Markdown table for docs/benchmarks.md.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_bulwark");

fn echo() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = msg.get("id").cloned() else {
            continue;
        };
        let result = common::echo_result(&msg);
        let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
        if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
}

fn relay(command: &[OsString]) {
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child_in = child.stdin.take().unwrap();
    let child_out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if writeln!(child_in, "{line}")
                .and_then(|()| child_in.flush())
                .is_err()
            {
                break;
            }
        }
    });
    let mut out = std::io::stdout().lock();
    for line in BufReader::new(child_out).lines() {
        let Ok(line) = line else { break };
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

struct Upstream {
    child: Child,
    stdin: ChildStdin,
    replies: Receiver<(u64, Instant)>,
}

impl Upstream {
    fn start(argv: &[OsString]) -> Upstream {
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, replies) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let at = Instant::now();
                let v: Value = serde_json::from_str(&line).unwrap();
                assert!(v.get("result").is_some(), "{line}");
                if tx.send((v["id"].as_u64().unwrap(), at)).is_err() {
                    break;
                }
            }
        });
        let mut u = Upstream {
            child,
            stdin,
            replies,
        };
        u.send(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"load","version":"1"}}}));
        u.replies.recv_timeout(Duration::from_secs(30)).unwrap();
        u.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        u.send(&json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}));
        u.replies.recv_timeout(Duration::from_secs(30)).unwrap();
        u
    }

    fn send(&mut self, v: &Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn rss_mb(&self) -> f64 {
        common::rss_mb(self.child.id())
    }

    /// Sends `n` calls at `rate` per second; returns the round trips in microseconds.
    fn open_loop(&mut self, first_id: u64, n: u64, rate: u64) -> Vec<f64> {
        let message = "Summarise the open pull requests for the payments service and list the \
                       ones waiting for review longer than three days, with their authors.";
        let mut sent = Vec::with_capacity(n as usize);
        let start = Instant::now();
        for i in 0..n {
            common::wait_due(start, i, rate);
            let id = first_id + i;
            // A distinct message per call, as real traffic has; identical calls would (rightly)
            // trip the loop guard.
            let message = format!("{message} (request {id})");
            sent.push(Instant::now());
            self.send(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"echo","arguments":{"message":message}}}));
        }
        let mut rtt = vec![f64::NAN; n as usize];
        for _ in 0..n {
            let (id, at) = self.replies.recv_timeout(Duration::from_secs(30)).unwrap();
            let i = (id - first_id) as usize;
            rtt[i] = at.duration_since(sent[i]).as_secs_f64() * 1e6;
        }
        rtt
    }

    /// Calls/s with `window` calls in flight for `secs`.
    fn throughput(&mut self, first_id: u64, window: u64, secs: f64) -> f64 {
        let call = |id: u64| json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"echo","arguments":{"message":format!("throughput {id}")}}});
        let mut next = first_id;
        for _ in 0..window {
            self.send(&call(next));
            next += 1;
        }
        let start = Instant::now();
        let mut done = 0u64;
        while start.elapsed().as_secs_f64() < secs {
            self.replies.recv_timeout(Duration::from_secs(30)).unwrap();
            done += 1;
            self.send(&call(next));
            next += 1;
        }
        let rate = done as f64 / start.elapsed().as_secs_f64();
        for _ in 0..window {
            self.replies.recv_timeout(Duration::from_secs(30)).unwrap();
        }
        rate
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn main() {
    let args: Vec<OsString> = std::env::args_os().collect();
    if let Some(i) = args.iter().position(|a| a == "--role") {
        match args.get(i + 1).and_then(|r| r.to_str()) {
            Some("echo") => return echo(),
            Some("relay") => {
                let at = args.iter().position(|a| a == "--").unwrap();
                return relay(&args[at + 1..]);
            }
            other => panic!("unknown role {other:?}"),
        }
    }
    let me: OsString = std::env::current_exe().unwrap().into();
    let echo_cmd = vec![me.clone(), "--role".into(), "echo".into()];
    let mut relay_cmd = vec![me.clone(), "--role".into(), "relay".into(), "--".into()];
    relay_cmd.extend(echo_cmd.iter().cloned());
    let (state, policy) = common::state_and_policy("bulwark-mcp-load");
    // BULWARK_BIN runs another build (an A/B against an older commit).
    let bin: OsString = std::env::var_os("BULWARK_BIN")
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| BIN.into());
    let mut bulwark_cmd: Vec<OsString> = vec![
        bin,
        "mcp".into(),
        "--policy".into(),
        policy.into(),
        "--state-dir".into(),
        state.clone().into(),
        "--".into(),
    ];
    bulwark_cmd.extend(echo_cmd.iter().cloned());
    // The same with the tamper-evident audit log and the telemetry store on.
    let mut audited_cmd = bulwark_cmd.clone();
    let at = audited_cmd.iter().position(|a| a == "--").unwrap();
    audited_cmd.insert(at, state.join("audit.jsonl").into());
    audited_cmd.insert(at, "--audit".into());

    let setups = [
        ("direct", echo_cmd),
        ("relay", relay_cmd),
        ("bulwark", bulwark_cmd),
        ("bulwark + audit", audited_cmd),
    ];
    let rates = [1000u64, 3000];
    let secs = 4u64;
    println!(
        "| path | rate (calls/s) | p50 µs | p99 µs | p50 added µs | p99 added µs | max calls/s (32 in flight) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut direct: Vec<(f64, f64)> = Vec::new();
    let mut rss = 0.0;
    for (name, argv) in &setups {
        let mut u = Upstream::start(argv);
        if name.starts_with("bulwark") {
            std::thread::sleep(Duration::from_millis(500));
            rss = u.rss_mb();
        }
        // Warm up the path (page cache, allocator, first-use tables).
        u.open_loop(1_000_000, 2000, 2000);
        let max = u.throughput(2_000_000, 32, 3.0);
        for (k, &rate) in rates.iter().enumerate() {
            let mut rtt = u.open_loop(10_000_000 * (k as u64 + 1), rate * secs, rate);
            let (p50, p99) = (common::pct(&mut rtt, 0.50), common::pct(&mut rtt, 0.99));
            if *name == "direct" {
                direct.push((p50, p99));
            }
            let (d50, d99) = direct[k];
            println!(
                "| {name} | {rate} | {p50:.0} | {p99:.0} | {:.0} | {:.0} | {} |",
                p50 - d50,
                p99 - d99,
                if k == 0 {
                    format!("{max:.0}")
                } else {
                    String::new()
                }
            );
        }
        if name.starts_with("bulwark") {
            eprintln!(
                "{name}: idle RSS after start-up {:.1} MB; after the load {:.1} MB",
                rss,
                u.rss_mb()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&state);
}
