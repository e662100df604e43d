//! Raw HTTP for the MCP tests: `bulwark mcp --listen` started around a server, one whole
//! HTTP exchange at a time, and what came back (JSON or SSE).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::BIN;

/// `bulwark mcp --listen 127.0.0.1:0` around a server.
pub struct HttpGateway {
    pub child: Child,
    pub addr: String,
    pub log: Arc<Mutex<String>>,
}

impl HttpGateway {
    pub fn start(state: &Path, extra: &[&str], server: &[&str]) -> HttpGateway {
        HttpGateway::start_env(state, extra, server, &[])
    }

    pub fn start_env(
        state: &Path,
        extra: &[&str],
        server: &[&str],
        envs: &[(&str, &str)],
    ) -> HttpGateway {
        let mut child = Command::new(BIN)
            .args(["mcp", "--state-dir", state.to_str().unwrap()])
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .arg("--")
            .args(server)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .envs(envs.iter().copied())
            .spawn()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let log = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&log);
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("listening on http://").nth(1) {
                    let _ = tx.send(rest.trim_end_matches("/mcp").to_string());
                }
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("the gateway did not start: {}", log.lock().unwrap()));
        HttpGateway { child, addr, log }
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("gateway log:\n{}", self.log.lock().unwrap());
        }
        // SIGTERM, so the gateway ends its servers' process groups.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

impl Resp {
    /// The JSON-RPC messages in the body: the body itself, or each SSE `data:` line.
    pub fn messages(&self) -> Vec<Value> {
        if self.headers.get("content-type").map(String::as_str) == Some("text/event-stream") {
            self.body
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter(|d| !d.trim().is_empty())
                .map(|d| serde_json::from_str(d).unwrap())
                .collect()
        } else {
            vec![serde_json::from_str(&self.body).unwrap_or(Value::Null)]
        }
    }
}

pub fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = raw.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = usize::from_str_radix(std::str::from_utf8(&raw[..end]).unwrap().trim(), 16)
            .unwrap_or(0);
        if size == 0 {
            return out;
        }
        let start = end + 2;
        let stop = (start + size).min(raw.len());
        out.extend_from_slice(&raw[start..stop]);
        raw = raw.get(stop + 2..).unwrap_or(&[]);
    }
}

pub fn send(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).unwrap();
    s
}

pub fn parse(raw: &[u8]) -> Resp {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let rest = &raw[split + 4..];
    let body = if headers.get("transfer-encoding").map(String::as_str) == Some("chunked") {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    Resp {
        status,
        headers,
        body: String::from_utf8_lossy(&body).to_string(),
    }
}

/// One whole HTTP exchange.
pub fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Resp {
    let mut s = send(addr, method, path, headers, body);
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    parse(&raw)
}

/// Reads from `s` until `want` appears (or 20 s pass); returns what was read.
pub fn read_until(s: &mut TcpStream, want: &str) -> String {
    let mut raw = Vec::new();
    let until = Instant::now() + Duration::from_secs(20);
    let mut buf = [0u8; 4096];
    while Instant::now() < until {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
        if String::from_utf8_lossy(&raw).contains(want) {
            break;
        }
    }
    String::from_utf8_lossy(&raw).to_string()
}

pub const JSON_SSE: (&str, &str) = ("Accept", "application/json, text/event-stream");
pub const CT: (&str, &str) = ("Content-Type", "application/json");

/// The headers of a stateless (2026-07-28) request of `method` naming `name`.
pub fn stateless_headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![
        CT,
        JSON_SSE,
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(n) = name {
        h.push(("Mcp-Name", n));
    }
    h
}

/// POSTs a stateless request of `method` (no `Mcp-Name`) to the gateway at `addr`.
pub fn post_stateless(addr: &str, id: Value, method: &str, params: Value) -> Resp {
    http(
        addr,
        "POST",
        "/mcp",
        &stateless_headers(method, None),
        &stateless_body(id, method, params),
    )
}

/// The body of a stateless (2026-07-28) request.
pub fn stateless_body(id: Value, method: &str, params: Value) -> String {
    let mut p = params;
    p["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":p}).to_string()
}
