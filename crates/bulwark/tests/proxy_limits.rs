//! The proxy's front door, over raw HTTP: what it refuses before any model call is read.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{BIN, Peer, eventually, free_port, scratch};

/// `bulwark proxy` in front of an upstream nobody listens on (nothing here reaches it),
/// with `extra` arguments; its address once it listens.
fn proxy(dir: &Path, extra: &[&str]) -> (Peer, String) {
    let listen = format!("127.0.0.1:{}", free_port());
    let peer = Peer(
        Command::new(BIN)
            .args([
                "proxy",
                "--listen",
                &listen,
                "--upstream",
                "http://127.0.0.1:9",
            ])
            .arg("--state-dir")
            .arg(dir.join("state"))
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    eventually(Duration::from_secs(30), "the proxy did not listen", || {
        TcpStream::connect(&listen).ok()
    });
    (peer, listen)
}

/// Sends `raw` on a fresh connection; the whole answer (the proxy closes after it).
fn exchange(addr: &str, raw: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(raw).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn a_body_coded_other_than_chunked_is_refused() {
    let dir = scratch();
    let (_p, addr) = proxy(&dir, &[]);
    for (path, te) in [
        ("/v1/chat/completions", "gzip, chunked"),
        ("/v1/models", "gzip, chunked"),
        ("/v1/messages", "deflate,chunked"),
    ] {
        let raw = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Transfer-Encoding: {te}\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        );
        let answer = exchange(&addr, raw.as_bytes());
        assert!(
            answer.starts_with("HTTP/1.1 501 "),
            "{path} with {te}: {answer}"
        );
        assert!(answer.contains("Transfer-Encoding"), "{answer}");
    }
    // Plain chunking is read as ever (here: not JSON, so the API's 400).
    let raw = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    );
    let answer = exchange(&addr, raw.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
}

/// Whether the peer closed `s` within `within` (a read that ends or fails).
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 512];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn idle_connections_past_the_cap_give_way_and_a_client_is_still_served() {
    let dir = scratch();
    let (_p, addr) = proxy(&dir, &["--max-connections", "8"]);
    // N+1 connections that never send a byte (the head timeout is 30 s).
    let mut idle: Vec<TcpStream> = (0..9).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let closed = idle
        .iter_mut()
        .filter_map(|s| closed_within(s, Duration::from_millis(200)).then_some(()))
        .count();
    assert!(
        closed >= 1,
        "all 9 idle connections are still held by an 8-connection proxy"
    );
    // A client is answered at once.
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let answer = exchange(
            &addr,
            format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }
}

fn rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap()
        / 1024
}

#[test]
fn answers_nobody_reads_do_not_grow_memory_without_bound() {
    let dir = scratch();
    let (_model, base) = common::model_api(&dir);
    let listen = format!("127.0.0.1:{}", free_port());
    let proxy = Peer(
        Command::new(BIN)
            .args(["proxy", "--listen", &listen, "--upstream", &base])
            .arg("--state-dir")
            .arg(dir.join("state"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    eventually(Duration::from_secs(30), "the proxy did not listen", || {
        TcpStream::connect(&listen).ok()
    });
    let pid = proxy.0.id();
    let before = rss_mib(pid);
    // 48 clients ask for an 8 MB answer each and never read it.
    let body = r#"{"model":"big-8000000","messages":[{"role":"user","content":"hi"}]}"#;
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {listen}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut silent = Vec::new();
    for _ in 0..48 {
        let mut s = TcpStream::connect(&listen).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        silent.push(s);
    }
    let mut peak = 0;
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(250));
        peak = peak.max(rss_mib(pid));
    }
    eprintln!("proxy RSS: {before} MiB before, {peak} MiB at most with 48 unread 8 MB answers");
    // 48 answers held whole would be over 380 MiB; the budget is 64 MiB of answers.
    assert!(peak < before + 256, "{peak} MiB (from {before})");
    // Still serving.
    let answer = exchange(
        &listen,
        format!("GET /health HTTP/1.1\r\nHost: {listen}\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    drop(silent);
}
