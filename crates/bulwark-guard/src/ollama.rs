//! The seed's alternative: a llama-guard model served by Ollama (`guard.endpoint`).
//!
//! One `POST {endpoint}/api/chat` per text with `stream: false`, the text as the user's
//! message; Ollama applies the model's own llama-guard template, and the model answers
//! `safe`, or `unsafe` followed by a line of category codes (`S1`…`S14`). `unsafe` scores
//! 1.0 and `safe` 0.0; any other answer is an error (fail closed per policy), because a
//! classifier that answers free text is not one we can threshold.
//!
//! Plain HTTP/1.1 over `std::net` with connect/read/write timeouts: Ollama listens on
//! loopback without TLS, and pulling an HTTP client stack into this crate for one local
//! request was not worth its build time. `https://` endpoints are refused.
//!
//! No Ollama runs on the machines this is built and tested on: the tests use a local stub
//! that answers in the shape Ollama's `/api/chat` documents (`tests/ollama.rs`).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::GuardError;
use crate::runner::Scorer;

/// Largest answer read from the endpoint.
const MAX_RESPONSE: u64 = 1 << 20;

/// A client for an Ollama-compatible endpoint.
#[derive(Debug, Clone)]
pub struct Ollama {
    host: String,
    port: u16,
    model: String,
    timeout: Duration,
}

impl Ollama {
    /// `endpoint` is `http://host:port` (no path); `model` e.g. `llama-guard3:1b`.
    pub fn new(endpoint: &str, model: &str, timeout: Duration) -> Result<Self, GuardError> {
        let rest = endpoint.strip_prefix("http://").ok_or_else(|| {
            GuardError::Model(format!(
                "guard.endpoint {endpoint}: only http:// (a local Ollama) is supported"
            ))
        })?;
        let authority = rest.trim_end_matches('/');
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse().map_err(|_| {
                    GuardError::Model(format!("guard.endpoint {endpoint}: bad port"))
                })?,
            ),
            None => (authority, 11434),
        };
        if host.is_empty() || host.contains('/') {
            return Err(GuardError::Model(format!(
                "guard.endpoint {endpoint}: expected http://host:port"
            )));
        }
        Ok(Self {
            host: host.to_owned(),
            port,
            model: model.to_owned(),
            timeout,
        })
    }

    /// Asks the model about `text`; `unsafe` is 1.0, `safe` is 0.0.
    pub fn classify(&self, text: &str) -> Result<f32, GuardError> {
        let body = serde_json::json!({
            "model": self.model,
            "messages": [{ "role": "user", "content": text }],
            "stream": false,
            "options": { "temperature": 0 }
        })
        .to_string();
        let answer = self.post("/api/chat", &body)?;
        let value: serde_json::Value = serde_json::from_slice(&answer)
            .map_err(|e| GuardError::Model(format!("ollama: answer is not JSON: {e}")))?;
        let content = value
            .pointer("/message/content")
            .and_then(|c| c.as_str())
            .ok_or_else(|| GuardError::Model("ollama: answer has no message.content".into()))?;
        let verdict = content
            .trim_start()
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match verdict.as_str() {
            "safe" => Ok(0.0),
            "unsafe" => Ok(1.0),
            other => Err(GuardError::Model(format!(
                "ollama: expected `safe` or `unsafe`, got {:?}",
                other.chars().take(40).collect::<String>()
            ))),
        }
    }

    fn post(&self, path: &str, body: &str) -> Result<Vec<u8>, GuardError> {
        let io = |e: std::io::Error| {
            GuardError::Model(format!("ollama {}:{}: {e}", self.host, self.port))
        };
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(io)?
            .next()
            .ok_or_else(|| GuardError::Model(format!("ollama: {} does not resolve", self.host)))?;
        let mut stream = TcpStream::connect_timeout(&addr, self.timeout).map_err(io)?;
        stream.set_read_timeout(Some(self.timeout)).map_err(io)?;
        stream.set_write_timeout(Some(self.timeout)).map_err(io)?;
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.host,
            self.port,
            body.len()
        );
        stream.write_all(request.as_bytes()).map_err(io)?;
        let mut raw = Vec::new();
        stream
            .take(MAX_RESPONSE)
            .read_to_end(&mut raw)
            .map_err(io)?;
        parse_response(&raw)
    }
}

impl Scorer for Ollama {
    fn score(&self, text: &str) -> Result<f32, GuardError> {
        self.classify(text)
    }
}

/// The body of a `200` HTTP/1.1 response (identity or chunked).
fn parse_response(raw: &[u8]) -> Result<Vec<u8>, GuardError> {
    let bad = |m: &str| GuardError::Model(format!("ollama: {m}"));
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("incomplete HTTP response"))?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let body = &raw[split + 4..];
    let status = head.split_whitespace().nth(1).unwrap_or("");
    if status != "200" {
        return Err(bad(&format!("HTTP status {status}")));
    }
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    if !chunked {
        return Ok(body.to_vec());
    }
    let mut out = Vec::new();
    let mut rest = body;
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| bad("bad chunk"))?;
        let size_text = String::from_utf8_lossy(&rest[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| bad("bad chunk size"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        out.extend_from_slice(rest.get(..size).ok_or_else(|| bad("truncated chunk"))?);
        rest = rest.get(size + 2..).ok_or_else(|| bad("truncated chunk"))?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_identity_and_chunked_bodies() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(parse_response(plain).unwrap(), b"{}");
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked).unwrap(), b"abcde");
        assert!(parse_response(b"HTTP/1.1 500 Oops\r\n\r\n").is_err());
    }

    #[test]
    fn refuses_https_and_bad_ports() {
        assert!(Ollama::new("https://x:1", "m", Duration::from_secs(1)).is_err());
        assert!(Ollama::new("http://x:port", "m", Duration::from_secs(1)).is_err());
        assert!(Ollama::new("http://127.0.0.1:11434", "m", Duration::from_secs(1)).is_ok());
    }
}
