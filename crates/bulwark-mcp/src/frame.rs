//! Newline-delimited frames (MCP's stdio transport), read with a size limit.
//!
//! A peer that sends a line longer than the limit, or never sends a newline, costs at most
//! the limit in memory: the rest of the line is read and thrown away.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// What a read produced.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A whole line, without its newline (and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line over the limit; its first bytes, for finding the id it answers.
    Oversized(Vec<u8>),
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
            buf.truncate(4096);
            // Throw the rest of the line away, a chunk at a time.
            loop {
                let mut sink = Vec::new();
                let n = (&mut *reader)
                    .take(64 * 1024)
                    .read_until(b'\n', &mut sink)
                    .await?;
                if n == 0 || sink.ends_with(b"\n") {
                    break;
                }
            }
            return Ok(Frame::Oversized(buf));
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
        assert!(
            matches!(read(&mut r, 1000).await.unwrap(), Frame::Oversized(p) if p.len() == 1001)
        );
        assert_eq!(
            read(&mut r, 1000).await.unwrap(),
            Frame::Line(b"{\"c\":3}".to_vec())
        );
    }
}
