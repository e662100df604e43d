//! Load harness for the MCP gateway's Streamable HTTP front (issue: ≤ 0.25 ms p50 /
//! ≤ 0.5 ms p99 added at 3k calls/s).
//!
//! Drives `tools/call` at fixed rates (open loop: calls are issued on schedule whether or
//! not earlier ones were answered, over a pool of keep-alive connections) against the same
//! HTTP upstream three ways, in one run, in alternating half-second rounds so that each
//! path meets the same moments of a shared machine:
//!
//! - **direct**: the client talks to the upstream;
//! - **tcp relay**: through a bare TCP relay (one more hop, no parsing) — the floor;
//! - **bulwark**: through `bulwark mcp --listen … --upstream-url …` with the default policy
//!   (arguments and results scanned, definitions pinned), its per-session rate limit lifted.
//!
//! The upstream is a minimal MCP server over HTTP/1.1 in this program, answering JSON, so
//! nothing but the hop under test differs. `cargo bench -p bulwark --bench mcp_http_load`
//! prints Markdown tables for docs/benchmarks.md: latency at each rate with the gateway's CPU time
//! per call, and each path's maximum throughput.
//!
//! With `BULWARK_BENCH_SCALE_OUT=1` it measures the scale-out instead (issue 28): the
//! throughput of one `bulwark mcp --listen` replica against three, all on one
//! `redis-server` it starts (`state.backend: redis`), each behind the same round-robin TCP
//! balancer in this program, in front of the same upstream, in alternating rounds of one run.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_bulwark");

/// CPU time (user + system) the process has used so far, in µs.
fn cpu_us(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after its ')'.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line; the state (field 3) is index 0 here.
    let hz = 100.0;
    (ticks(11) + ticks(12)) / hz * 1e6
}

/// One HTTP/1.1 request from `r`: (headers, body); `None` at the end of the connection.
fn read_request(r: &mut BufReader<TcpStream>) -> Option<(Vec<String>, Vec<u8>)> {
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end().to_string();
        if line.is_empty() {
            break;
        }
        headers.push(line);
    }
    let len = headers
        .iter()
        .find_map(|h| {
            let (k, v) = h.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some((headers, body))
}

/// The upstream: a minimal MCP server over HTTP with one tool, `echo`.
fn serve_upstream(listener: TcpListener) {
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        std::thread::spawn(move || {
            let _ = conn.set_nodelay(true);
            let mut w = conn.try_clone().unwrap();
            let mut r = BufReader::new(conn);
            while let Some((headers, body)) = read_request(&mut r) {
                let get = headers.first().is_some_and(|l| !l.starts_with("POST"));
                let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let reply = match (get, msg.get("id")) {
                    (true, _) | (false, None) => None,
                    (false, Some(id)) => {
                        let result = common::echo_result(&msg);
                        Some(json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string())
                    }
                };
                let head = match (&reply, get) {
                    (_, true) => {
                        "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n".to_string()
                    }
                    (None, _) => "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_string(),
                    (Some(b), _) => format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: load-1\r\nContent-Length: {}\r\n\r\n{b}",
                        b.len()
                    ),
                };
                if w.write_all(head.as_bytes()).is_err() {
                    break;
                }
            }
        });
    }
}

/// A bare TCP relay to `to`.
fn serve_relay(listener: TcpListener, to: String) {
    for conn in listener.incoming() {
        let Ok(a) = conn else { continue };
        let Ok(b) = TcpStream::connect(&to) else {
            continue;
        };
        let _ = a.set_nodelay(true);
        let _ = b.set_nodelay(true);
        let (mut a2, mut b2) = (a.try_clone().unwrap(), b.try_clone().unwrap());
        let (mut a, mut b) = (a, b);
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut a, &mut b);
        });
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut b2, &mut a2);
        });
    }
}

/// A keep-alive client connection.
struct Conn {
    w: TcpStream,
    r: BufReader<TcpStream>,
    host: String,
}

impl Conn {
    fn open(addr: &str) -> Conn {
        let s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        Conn {
            w: s.try_clone().unwrap(),
            r: BufReader::new(s),
            host: addr.to_string(),
        }
    }

    /// POSTs `body`; returns the status, the session header and the body.
    fn post(&mut self, session: Option<&str>, body: &str) -> (u16, Option<String>, Vec<u8>) {
        let mut req = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json\r\nMCP-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\n",
            self.host,
            body.len()
        );
        if let Some(s) = session {
            req.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(body);
        self.w.write_all(req.as_bytes()).unwrap();
        let mut status = String::new();
        self.r.read_line(&mut status).unwrap();
        let code: u16 = status.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0);
        let (mut len, mut sid, mut chunked) = (0usize, None, false);
        loop {
            let mut h = String::new();
            self.r.read_line(&mut h).unwrap();
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                match k.to_ascii_lowercase().as_str() {
                    "content-length" => len = v.trim().parse().unwrap(),
                    "mcp-session-id" => sid = Some(v.trim().to_string()),
                    "transfer-encoding" => chunked = v.trim() == "chunked",
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                self.r.read_line(&mut size).unwrap();
                let n = usize::from_str_radix(size.trim(), 16).unwrap();
                let mut chunk = vec![0; n + 2];
                self.r.read_exact(&mut chunk).unwrap();
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&chunk[..n]);
            }
        } else {
            out.resize(len, 0);
            self.r.read_exact(&mut out).unwrap();
        }
        (code, sid, out)
    }
}

/// Opens an MCP session at `addr`; returns its id.
fn session(addr: &str) -> String {
    session_on(&mut Conn::open(addr))
}

/// Opens an MCP session on connection `c`; returns its id.
fn session_on(c: &mut Conn) -> String {
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"load","version":"1"}}});
    let (code, sid, body) = c.post(None, &init.to_string());
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let sid = sid.unwrap();
    c.post(
        Some(&sid),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    let (code, _, body) = c.post(
        Some(&sid),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    );
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    sid
}

const WORKERS: usize = 24;

/// One call to run: its id, when it was due, its tag, and where its round trip goes.
type Job = (u64, Instant, u64, Sender<f64>);

/// `WORKERS` threads, each with its own kept-alive connection to one path, for the whole
/// run: a round then costs no connection set-up, on any path.
struct Workers {
    jobs: Option<Sender<Job>>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl Workers {
    fn new(addr: &str, sid: &str) -> Workers {
        let (jobs_tx, jobs_rx) = channel::<Job>();
        let jobs = Arc::new(Mutex::new(jobs_rx));
        let handles = (0..WORKERS)
            .map(|_| {
                let (jobs, addr, sid) = (Arc::clone(&jobs), addr.to_string(), sid.to_string());
                std::thread::spawn(move || {
                    let mut c = Conn::open(&addr);
                    loop {
                        let job = jobs.lock().unwrap().recv();
                        let Ok((id, due, tag, done)) = job else { break };
                        let message = format!(
                            "Summarise the open pull requests for the payments service and list the ones \
                             waiting for review longer than three days, with their authors. (request {tag}-{id})"
                        );
                        let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"echo","arguments":{"message":message}}});
                        let (code, _, body) = c.post(Some(&sid), &call.to_string());
                        assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
                        let v: Value = serde_json::from_slice(&body).unwrap();
                        assert!(v.get("result").is_some(), "{v}");
                        done.send(due.elapsed().as_secs_f64() * 1e6).unwrap();
                    }
                })
            })
            .collect();
        Workers {
            jobs: Some(jobs_tx),
            handles,
        }
    }

    /// Calls at `rate` per second, `n` of them; round trips in µs, measured from when each
    /// call was due (open loop: calls are issued on schedule whether or not earlier ones
    /// were answered).
    fn open_loop(&self, n: u64, rate: u64, tag: u64) -> Vec<f64> {
        let jobs = self.jobs.as_ref().unwrap();
        let (done_tx, done_rx) = channel::<f64>();
        let start = Instant::now();
        for i in 0..n {
            let due = common::wait_due(start, i, rate);
            jobs.send((i + 2, due, tag, done_tx.clone())).unwrap();
        }
        drop(done_tx);
        let rtt: Vec<f64> = done_rx.iter().collect();
        assert_eq!(rtt.len() as u64, n);
        rtt
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        drop(self.jobs.take());
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// Calls per second with `WORKERS` connections each sending its next call as soon as the last
/// was answered, for `secs` seconds.
fn closed_loop(addr: &str, sid: &str, secs: f64) -> f64 {
    let stop = Instant::now() + Duration::from_secs_f64(secs);
    let handles: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (addr, sid) = (addr.to_string(), sid.to_string());
            std::thread::spawn(move || {
                let mut c = Conn::open(&addr);
                let mut n = 0u64;
                while Instant::now() < stop {
                    // Ids unique across connections: one session serves them all.
                    let id = (w as u64 + 1) * 1_000_000_000 + n;
                    let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"echo","arguments":{"message":format!("throughput {w}-{n}")}}});
                    let (code, _, body) = c.post(Some(&sid), &call.to_string());
                    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
                    n += 1;
                }
                n
            })
        })
        .collect();
    let calls: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    calls as f64 / secs
}

fn listen() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap().to_string();
    (l, a)
}

struct Gateway(Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A round-robin TCP balancer: each new connection goes to the next of `to`.
fn serve_balancer(listener: TcpListener, to: Vec<String>) {
    for (n, conn) in listener.incoming().enumerate() {
        let Ok(a) = conn else { continue };
        let Ok(b) = TcpStream::connect(&to[n % to.len()]) else {
            continue;
        };
        let _ = a.set_nodelay(true);
        let _ = b.set_nodelay(true);
        let (mut a2, mut b2) = (a.try_clone().unwrap(), b.try_clone().unwrap());
        let (mut a, mut b) = (a, b);
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut a, &mut b);
        });
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut b2, &mut a2);
        });
    }
}

/// Calls per second through `addr` for `secs` seconds, `WORKERS` connections each with its
/// own session (opened on that connection), each sending its next call when the last was
/// answered: sessions are what a shared store serialises on, so a deployment's many
/// sessions are what spreads over replicas.
fn closed_loop_sessions(addr: &str, secs: f64) -> f64 {
    let ready = Arc::new(std::sync::Barrier::new(WORKERS + 1));
    let handles: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (addr, ready) = (addr.to_string(), Arc::clone(&ready));
            std::thread::spawn(move || {
                let mut c = Conn::open(&addr);
                let sid = session_on(&mut c);
                ready.wait();
                let stop = Instant::now() + Duration::from_secs_f64(secs);
                let mut n = 0u64;
                while Instant::now() < stop {
                    let call = json!({"jsonrpc":"2.0","id":n + 2,"method":"tools/call","params":{"name":"echo","arguments":{"message":format!("throughput {w}-{n}")}}});
                    let (code, _, body) = c.post(Some(&sid), &call.to_string());
                    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
                    n += 1;
                }
                n
            })
        })
        .collect();
    ready.wait();
    let calls: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    calls as f64 / secs
}

/// `redis-server` on a free port, for the scale-out comparison: no persistence (what is
/// measured is the decision's round trips, not the disk).
fn start_redis() -> (Gateway, String) {
    let (l, addr) = listen();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server (scripts/setup-peers installs it)");
    let started = Instant::now();
    while TcpStream::connect(&addr).is_err() {
        assert!(started.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    }
    (Gateway(child), format!("redis://{addr}"))
}

fn start_gateway(
    state: &std::path::Path,
    policy: &std::path::Path,
    up_addr: &str,
) -> (Gateway, String) {
    let (l, addr) = listen();
    drop(l);
    let gw = Gateway(
        Command::new(std::env::var("BULWARK_BIN").unwrap_or_else(|_| BIN.to_string()))
            .args(["mcp", "--policy", policy.to_str().unwrap()])
            .args(["--state-dir", state.to_str().unwrap()])
            .args(["--listen", &addr])
            .args(["--upstream-url", &format!("http://{up_addr}/mcp")])
            .arg("--upstream-allow-internal")
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    while TcpStream::connect(&addr).is_err() {
        assert!(started.elapsed() < Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(50));
    }
    (gw, addr)
}

/// One replica against three on one Redis, each behind the same kind of balancer.
fn scale_out() {
    let (up, up_addr) = listen();
    std::thread::spawn(move || serve_upstream(up));
    let (_redis, url) = start_redis();
    let (state, policy) = common::state_and_policy("bulwark-scale-out-load");
    let mut text = std::fs::read_to_string(&policy).unwrap();
    text.push_str(&format!(
        "\nstate: {{ backend: redis, url: '{url}', prefix: load, timeout_ms: 500 }}\n"
    ));
    std::fs::write(&policy, text).unwrap();
    let mut gateways = Vec::new();
    let mut addrs = Vec::new();
    for n in 0..4 {
        let dir = state.join(format!("replica-{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        if n > 0 {
            // One approval key for the deployment, as docs/scale-out.md asks.
            let _ = std::fs::copy(
                state.join("replica-0/approval.key"),
                dir.join("approval.key"),
            );
        }
        let (gw, addr) = start_gateway(&dir, &policy, &up_addr);
        gateways.push(gw);
        addrs.push(addr);
    }
    let (l1, one) = listen();
    let single = vec![addrs[0].clone()];
    std::thread::spawn(move || serve_balancer(l1, single));
    let (l3, three) = listen();
    let trio = addrs[1..].to_vec();
    std::thread::spawn(move || serve_balancer(l3, trio));
    let secs: f64 = std::env::var("BULWARK_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5.0);
    // Warm up both, then alternate so each meets the same moments of a shared machine.
    closed_loop_sessions(&one, 1.0);
    closed_loop_sessions(&three, 1.0);
    let (mut r1, mut r3) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        r1.push(closed_loop_sessions(&one, secs));
        r3.push(closed_loop_sessions(&three, secs));
    }
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!(
        "| replicas (behind a round-robin balancer, one redis-server) | calls/s, {WORKERS} connections × own session, closed loop, 3 rounds of {secs} s | mean |"
    );
    println!("|---|---|---:|");
    for (name, r) in [("1", &r1), ("3", &r3)] {
        let all: Vec<String> = r.iter().map(|x| format!("{x:.0}")).collect();
        let mean = r.iter().sum::<f64>() / r.len() as f64;
        println!("| {name} | {} | {mean:.0} |", all.join(", "));
    }
    let m1 = r1.iter().sum::<f64>() / r1.len() as f64;
    let m3 = r3.iter().sum::<f64>() / r3.len() as f64;
    println!(
        "\n3 vs 1: {:.2}× on {cpus} CPUs (harness, upstream, balancer, Redis and replicas share them)",
        m3 / m1
    );
    drop(gateways);
    let _ = std::fs::remove_dir_all(&state);
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if std::env::var("BULWARK_BENCH_SCALE_OUT").is_ok_and(|v| v == "1") {
        scale_out();
        return;
    }
    let (up, up_addr) = listen();
    std::thread::spawn(move || serve_upstream(up));
    let (rl, relay_addr) = listen();
    let to = up_addr.clone();
    std::thread::spawn(move || serve_relay(rl, to));

    let (state, policy) = common::state_and_policy("bulwark-mcp-http-load");
    let bulwark_port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let bulwark_addr = format!("127.0.0.1:{bulwark_port}");
    let gw = Gateway(
        Command::new(std::env::var("BULWARK_BIN").unwrap_or_else(|_| BIN.to_string()))
            .args(["mcp", "--policy", policy.to_str().unwrap()])
            .args(["--state-dir", state.to_str().unwrap()])
            .args(["--listen", &bulwark_addr])
            .args(["--upstream-url", &format!("http://{up_addr}/mcp")])
            .arg("--upstream-allow-internal")
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    while TcpStream::connect(&bulwark_addr).is_err() {
        assert!(started.elapsed() < Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let idle = common::rss_mb(gw.0.id());

    let rates = [1000u64, 3000];
    let secs = 12u64;
    // Each rate's seconds are cut into half-second rounds that visit the paths in turn, so
    // that every path samples the same stretch of a shared, noisy machine: "added" then
    // compares like with like instead of one path's quiet second with another's busy one.
    // A stall of the machine (tens of ms, a few a minute here) lands on whichever path is
    // running; twelve seconds a path spread them evenly enough for the p99 to settle.
    let rounds = 24u64;
    let paths = [
        ("direct", up_addr.as_str()),
        ("tcp relay", relay_addr.as_str()),
        ("bulwark", bulwark_addr.as_str()),
    ];
    let sids: Vec<String> = paths.iter().map(|(_, addr)| session(addr)).collect();
    let workers: Vec<Workers> = paths
        .iter()
        .zip(&sids)
        .map(|((_, addr), sid)| Workers::new(addr, sid))
        .collect();
    for w in &workers {
        // Warm up the path.
        w.open_loop(2000, 2000, 0);
    }
    println!(
        "| path | rate (calls/s) | p50 µs | p99 µs | p50 added µs | p99 added µs | gateway CPU µs/call |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (k, &rate) in rates.iter().enumerate() {
        let mut rtt: Vec<Vec<f64>> = vec![Vec::new(); paths.len()];
        let mut cpu = 0.0;
        for round in 0..rounds {
            for (i, ((name, _), w)) in paths.iter().zip(&workers).enumerate() {
                let cpu0 = cpu_us(gw.0.id());
                let tag = (k as u64 + 1) * 100 + round;
                rtt[i].extend(w.open_loop(rate * secs / rounds, rate, tag));
                if *name == "bulwark" {
                    cpu += cpu_us(gw.0.id()) - cpu0;
                }
            }
        }
        let (d50, d99) = (
            common::pct(&mut rtt[0], 0.50),
            common::pct(&mut rtt[0], 0.99),
        );
        for (i, (name, _)) in paths.iter().enumerate() {
            let (p50, p99) = (
                common::pct(&mut rtt[i], 0.50),
                common::pct(&mut rtt[i], 0.99),
            );
            let cpu = match *name {
                "bulwark" => format!("{:.0}", cpu / (rate * secs) as f64),
                _ => String::new(),
            };
            println!(
                "| {name} | {rate} | {p50:.0} | {p99:.0} | {:.0} | {:.0} | {cpu} |",
                p50 - d50,
                p99 - d99
            );
        }
    }
    drop(workers);
    let throughput: Vec<(&str, f64)> = paths
        .iter()
        .zip(&sids)
        .map(|((name, addr), sid)| (*name, closed_loop(addr, sid, 3.0)))
        .collect();
    println!();
    println!("| path | max calls/s ({WORKERS} connections, closed loop) |");
    println!("|---|---:|");
    for (name, rate) in throughput {
        println!("| {name} | {rate:.0} |");
    }
    eprintln!(
        "bulwark --listen: idle RSS after start-up {idle:.1} MB; after the load {:.1} MB",
        common::rss_mb(gw.0.id())
    );
    drop(gw);
    let _ = std::fs::remove_dir_all(&state);
}
