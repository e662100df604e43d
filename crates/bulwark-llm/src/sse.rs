//! Server-sent events, split and parsed without losing a byte: every event keeps its raw
//! text, so an event the proxy lets through is sent on exactly as it came.

/// One event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The event as received, with its terminating blank line.
    pub raw: Vec<u8>,
    /// The `event:` field, when present.
    pub name: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

impl Event {
    /// An event to send: `event:` (when named) and one `data:` line.
    pub fn new(name: Option<&str>, data: &str) -> Event {
        let mut raw = Vec::with_capacity(data.len() + 32);
        if let Some(n) = name {
            raw.extend_from_slice(b"event: ");
            raw.extend_from_slice(n.as_bytes());
            raw.push(b'\n');
        }
        // JSON text has no raw newlines, but a caller's text might: one data line each.
        for line in data.split('\n') {
            raw.extend_from_slice(b"data: ");
            raw.extend_from_slice(line.as_bytes());
            raw.push(b'\n');
        }
        raw.push(b'\n');
        Event {
            raw,
            name: name.map(str::to_string),
            data: data.to_string(),
        }
    }
}

impl Event {
    /// Only the event's comment lines, with the blank line that ends an event; empty when
    /// it has none.
    pub fn comments(&self) -> Vec<u8> {
        let text = String::from_utf8_lossy(&self.raw);
        let kept: Vec<&str> = text.split('\n').filter(|l| l.starts_with(':')).collect();
        if kept.is_empty() {
            return Vec::new();
        }
        format!("{}\n\n", kept.join("\n")).into_bytes()
    }

    /// Whether every line is a comment or a field SSE defines (`event`, `data`, `id`,
    /// `retry`): what a client would read from the event is all in those.
    pub fn known_fields_only(&self) -> bool {
        String::from_utf8_lossy(&self.raw).split('\n').all(|line| {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let field = line.split_once(':').map_or(line, |(f, _)| f);
            line.is_empty() || matches!(field, "" | "event" | "data" | "id" | "retry")
        })
    }
}

/// An event bigger than the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("an event in the upstream stream exceeds {0} bytes")]
pub struct TooBig(pub usize);

/// Splits a byte stream into events.
#[derive(Debug)]
pub struct Parser {
    buf: Vec<u8>,
    scanned: usize,
    max: usize,
}

impl Parser {
    /// A parser refusing events over `max` bytes.
    pub fn new(max: usize) -> Parser {
        Parser {
            buf: Vec::new(),
            scanned: 0,
            max,
        }
    }

    /// Adds bytes; returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Event>, TooBig> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(end) = self.boundary() {
            let raw: Vec<u8> = self.buf.drain(..end).collect();
            self.scanned = 0;
            out.push(parse(raw));
        }
        if self.buf.len() > self.max {
            return Err(TooBig(self.max));
        }
        Ok(out)
    }

    /// What is left at the end of the stream, as a last event (a stream may end without
    /// the final blank line).
    pub fn finish(&mut self) -> Option<Event> {
        let raw = std::mem::take(&mut self.buf);
        if raw.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        Some(parse(raw))
    }

    fn boundary(&mut self) -> Option<usize> {
        let b = &self.buf;
        let mut i = self.scanned;
        while i + 1 < b.len() {
            match (b[i], b[i + 1]) {
                (b'\n', b'\n') | (b'\r', b'\r') => return Some(i + 2),
                (b'\r', b'\n') if b.get(i + 2..i + 4) == Some(b"\r\n") => return Some(i + 4),
                // A line ending in CRLF followed by a bare LF (mixed endings).
                (b'\n', b'\r') if b.get(i + 2) == Some(&b'\n') => return Some(i + 3),
                _ => i += 1,
            }
        }
        // Rescan the last bytes next time: a boundary may straddle two reads.
        self.scanned = b.len().saturating_sub(3);
        None
    }
}

fn parse(raw: Vec<u8>) -> Event {
    let text = String::from_utf8_lossy(&raw);
    let mut name = None;
    let mut data: Option<String> = None;
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => name = Some(value.to_string()),
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_string()),
            },
            _ => {}
        }
    }
    Event {
        raw,
        name,
        data: data.unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_reads_keep_their_bytes() {
        let mut p = Parser::new(1024);
        let mut got = p.push(b"event: a\ndata: {\"x\":1}\n").unwrap();
        assert!(got.is_empty());
        got.extend(p.push(b"\nda").unwrap());
        got.extend(p.push(b"ta: [DONE]\r\n\r\n: comment\n\n").unwrap());
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].raw, b"event: a\ndata: {\"x\":1}\n\n");
        assert_eq!(got[0].name.as_deref(), Some("a"));
        assert_eq!(got[1].data, "[DONE]");
        assert_eq!(got[2].data, "");
        assert!(p.finish().is_none());
    }

    #[test]
    fn an_endless_event_is_refused() {
        let mut p = Parser::new(8);
        assert_eq!(p.push(b"data: 0123456789"), Err(TooBig(8)));
    }

    #[test]
    fn built_events_parse_back() {
        let e = Event::new(Some("message_delta"), "{\"a\":1}");
        let mut p = Parser::new(1024);
        assert_eq!(p.push(&e.raw).unwrap(), vec![e]);
    }
}
