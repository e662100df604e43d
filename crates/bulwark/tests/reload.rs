//! SIGHUP on the long-running fronts: `bulwark mcp --listen` and `bulwark proxy` reload their
//! policy as the daemon does, instead of dying of the signal, and keep answering while a
//! reload is under way — even one whose policy file takes its time to read (a FIFO nobody
//! has written to yet stands in for a slow compile).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, Peer, eventually, free_port, node_server, scratch};

fn policy(path: &Path, name: &str) {
    std::fs::write(path, format!("version: 1\nname: {name}\n")).unwrap();
}

fn hup(peer: &Peer) {
    let ok = Command::new("kill")
        .args(["-HUP", &peer.0.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -HUP failed");
}

/// One HTTP/1.1 request on a fresh connection; the status line, within `within`.
fn status_line(addr: &str, request: &str, within: Duration) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(within)).ok()?;
    s.write_all(request.as_bytes()).ok()?;
    let mut buf = [0u8; 256];
    let n = s.read(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    text.lines().next().map(str::to_owned)
}

/// Waits until `log` holds `want` `times` times.
fn logged(log: &Path, want: &str, times: usize, what: &str) {
    eventually(Duration::from_secs(30), what, || {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        (text.matches(want).count() >= times).then_some(())
    });
}

/// Sends SIGHUP to `peer` twice: once with a new policy in place, once with the policy
/// path a FIFO; `probe` must be answered while that second reload waits, and the
/// reload completes once the FIFO is written.
fn reloads_and_keeps_answering(peer: &mut Peer, policy_path: &Path, log: &Path, probe: &dyn Fn()) {
    policy(policy_path, "second");
    hup(peer);
    logged(log, "reloaded the policy", 1, "SIGHUP did not reload");
    assert!(
        peer.0.try_wait().unwrap().is_none(),
        "the front died of SIGHUP"
    );
    probe();

    std::fs::remove_file(policy_path).unwrap();
    let made = Command::new("mkfifo").arg(policy_path).status().unwrap();
    assert!(made.success());
    hup(peer);
    // The reload now waits for a writer; calls must not wait with it.
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    probe();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a reload in progress stalled the front for {:?}",
        started.elapsed()
    );
    let mut fifo = std::fs::OpenOptions::new()
        .write(true)
        .open(policy_path)
        .unwrap();
    fifo.write_all(b"version: 1\nname: third\n").unwrap();
    drop(fifo);
    logged(
        log,
        "reloaded the policy",
        2,
        "the FIFO reload did not finish",
    );
    assert!(peer.0.try_wait().unwrap().is_none());
    probe();
}

fn spawn(args: &[&str], extra: &[PathBuf], log: &Path) -> Peer {
    Peer(
        Command::new(BIN)
            .args(args)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap(),
    )
}

#[test]
fn sighup_reloads_the_mcp_listener_and_it_keeps_answering() {
    let dir = scratch();
    let policy_path = dir.join("policy.yaml");
    policy(&policy_path, "first");
    let log = dir.join("mcp.log");
    let listen = format!("127.0.0.1:{}", free_port());
    let mut peer = Peer(
        Command::new(BIN)
            .args(["mcp", "--listen", &listen, "--state-dir"])
            .arg(dir.join("state"))
            .arg("--policy")
            .arg(&policy_path)
            .args(["--", "node"])
            .arg(node_server("server-everything"))
            .arg("stdio")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    logged(&log, "listening on", 1, "the gateway did not listen");
    let addr = listen.clone();
    let probe = move || {
        let line = status_line(
            &addr,
            &format!(
                "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n"
            ),
            Duration::from_secs(10),
        );
        assert!(
            line.as_deref().is_some_and(|l| l.starts_with("HTTP/1.1 ")),
            "no answer: {line:?}"
        );
    };
    probe();
    reloads_and_keeps_answering(&mut peer, &policy_path, &log, &probe);
}

#[test]
fn sighup_reloads_the_proxy_and_it_keeps_answering() {
    let dir = scratch();
    let policy_path = dir.join("policy.yaml");
    policy(&policy_path, "first");
    let log = dir.join("proxy.log");
    let listen = format!("127.0.0.1:{}", free_port());
    let mut peer = spawn(
        &[
            "proxy",
            "--listen",
            &listen,
            "--upstream",
            "http://127.0.0.1:9",
            "--policy",
            policy_path.to_str().unwrap(),
            "--state-dir",
        ],
        &[dir.join("state")],
        &log,
    );
    logged(&log, "listening on", 1, "the proxy did not listen");
    let addr = listen.clone();
    let probe = move || {
        let line = status_line(
            &addr,
            &format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
            Duration::from_secs(10),
        );
        assert!(
            line.as_deref()
                .is_some_and(|l| l.starts_with("HTTP/1.1 200")),
            "no health answer: {line:?}"
        );
    };
    probe();
    reloads_and_keeps_answering(&mut peer, &policy_path, &log, &probe);
}
