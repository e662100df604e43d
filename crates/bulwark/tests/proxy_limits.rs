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
