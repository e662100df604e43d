//! Newline-delimited frames (MCP's stdio transport), read with a size limit.
//!
//! A peer that sends a line longer than the limit, or never sends a newline, costs at most
//! the limit in memory: the rest of the line is read and thrown away — but first read for
//! its top-level `"id"`, wherever in the object it stands, so the request it answers can be
//! failed rather than left waiting.

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// What a read produced.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A whole line, without its newline (and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line over the limit, with the id of the message when one was found at its top level.
    Oversized(Option<Value>),
    /// The peer closed the stream.
    Eof,
}

/// Reads the next non-blank frame of at most `max` bytes.
pub async fn read<R: AsyncBufRead + Unpin>(reader: &mut R, max: usize) -> std::io::Result<Frame> {
    loop {
        let mut buf = Vec::new();
        let n = (&mut *reader)
            .take(max as u64 + 1)
            .read_until(b'\n', &mut buf)
            .await?;
        if n == 0 {
            return Ok(Frame::Eof);
        }
        if !buf.ends_with(b"\n") && buf.len() > max {
            let mut sniffer = IdSniffer::default();
            sniffer.feed(&buf);
            drop(buf);
            // Throw the rest of the line away, a chunk at a time.
            loop {
                let mut sink = Vec::new();
                let n = (&mut *reader)
                    .take(64 * 1024)
                    .read_until(b'\n', &mut sink)
                    .await?;
                sniffer.feed(&sink);
                if n == 0 || sink.ends_with(b"\n") {
                    break;
                }
            }
            return Ok(Frame::Oversized(sniffer.id()));
        }
        if buf.ends_with(b"\n") {
            buf.pop();
        }
        if buf.ends_with(b"\r") {
            buf.pop();
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        return Ok(Frame::Line(buf));
    }
}

/// Finds the value of the top-level `"id"` member of a JSON object read in pieces, in
/// constant memory. Only a number or a short string is recognised.
#[derive(Default)]
pub struct IdSniffer {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The text of the current top-level string (kept while short).
    text: Vec<u8>,
    /// The last complete top-level string, when it may be a key.
    last_key: Option<Vec<u8>>,
    /// Reading the value of the top-level "id".
    in_id: bool,
    value: Vec<u8>,
    found: Option<Value>,
}

impl IdSniffer {
    /// Reads more of the document.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.found.is_some() {
                return;
            }
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                    self.text.clear();
                    self.text.extend_from_slice(b"\\");
                    continue;
                } else if b == b'"' {
                    self.in_string = false;
                    if self.depth == 1 {
                        if self.in_id {
                            self.found = std::str::from_utf8(&self.text)
                                .ok()
                                .filter(|t| !t.contains('\\'))
                                .map(|t| Value::String(t.to_string()));
                            self.in_id = false;
                        } else {
                            self.last_key = Some(std::mem::take(&mut self.text));
                        }
                    }
                    continue;
                }
                if self.depth == 1 && self.text.len() < 256 {
                    self.text.push(b);
                }
                continue;
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    self.text.clear();
                }
                b'{' | b'[' => {
                    self.depth += 1;
                    self.last_key = None;
                }
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                b':' if self.depth == 1 => {
                    self.in_id = self.last_key.as_deref() == Some(b"id");
                    self.last_key = None;
                    self.value.clear();
                }
                b',' if self.depth == 1 => {
                    self.finish_number();
                    self.last_key = None;
                }
                _ if self.in_id
                    && self.depth == 1
                    && !b.is_ascii_whitespace()
                    && self.value.len() < 32 =>
                {
                    self.value.push(b);
                }
                _ => {}
            }
            if self.depth == 0 {
                self.finish_number();
            }
        }
    }

    fn finish_number(&mut self) {
        if self.in_id && !self.value.is_empty() {
            self.found = std::str::from_utf8(&self.value)
                .ok()
                .and_then(|t| t.parse::<i64>().ok())
                .map(Value::from);
            self.in_id = false;
        }
    }

    /// The id, if one was found.
    pub fn id(mut self) -> Option<Value> {
        self.finish_number();
        self.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_are_bounded() {
        let mut input: &[u8] = b"{\"a\":1}\r\n\n  \n{\"b\":2}\n";
        let mut r = tokio::io::BufReader::new(&mut input);
        assert_eq!(
            read(&mut r, 100).await.unwrap(),
            Frame::Line(b"{\"a\":1}".to_vec())
        );
        assert_eq!(
            read(&mut r, 100).await.unwrap(),
            Frame::Line(b"{\"b\":2}".to_vec())
        );
        assert_eq!(read(&mut r, 100).await.unwrap(), Frame::Eof);
        let mut big = vec![b'x'; 300_000];
        big.extend_from_slice(b"\n{\"c\":3}\n");
        let mut input: &[u8] = &big;
        let mut r = tokio::io::BufReader::new(&mut input);
        assert_eq!(read(&mut r, 1000).await.unwrap(), Frame::Oversized(None));
        assert_eq!(
            read(&mut r, 1000).await.unwrap(),
            Frame::Line(b"{\"c\":3}".to_vec())
        );
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_stands() {
        let sniff = |doc: &str, piece: usize| {
            let mut s = IdSniffer::default();
            for chunk in doc.as_bytes().chunks(piece) {
                s.feed(chunk);
            }
            s.id()
        };
        let long = "y".repeat(10_000);
        for piece in [1, 7, 4096] {
            // The TypeScript SDK writes the id last; a nested "id" must not be taken for it.
            let ts = format!(
                r#"{{"result":{{"content":[{{"id":99,"text":"{long}"}}]}},"jsonrpc":"2.0","id":42}}"#
            );
            assert_eq!(sniff(&ts, piece), Some(serde_json::json!(42)), "{piece}");
            let first = format!(r#"{{"jsonrpc":"2.0","id":"req-7","result":{{"text":"{long}"}}}}"#);
            assert_eq!(sniff(&first, piece), Some(serde_json::json!("req-7")));
            let tricky = format!(r#"{{"result":{{"text":"\"id\": 5 {long}"}},"id" : 8 }}"#);
            assert_eq!(sniff(&tricky, piece), Some(serde_json::json!(8)));
        }
        assert_eq!(sniff(r#"{"result":{"id":1}}"#, 3), None);
    }
}
