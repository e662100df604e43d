//! Asking a stdio MCP server for its tools, without serving a client: what `bulwark tools
//! -- CMD` and `bulwark init --from-server -- CMD` read (issue 26, item 3).
//!
//! The server is started as the gateway starts it ([`stdio::spawn`]: its own process
//! group, only the allowlisted environment), greeted with `initialize` and
//! `notifications/initialized`, and asked `tools/list` page by page; then its whole group
//! is terminated. Nothing the server sends is trusted to end the exchange: every read is
//! bounded by [`stdio::MAX_FRAME`], the pages by [`MAX_PAGES`], the tools by
//! [`bulwark_engine::toolset::MAX_TOOLS`], and the whole exchange by the caller's
//! deadline. Requests the server makes of its client meanwhile (roots, sampling,
//! elicitation) are refused: a listing has no user to ask.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::frame::{self, Frame};
use crate::jsonrpc;
use crate::stdio::{self, MAX_FRAME, ServerCommand};

/// Most `tools/list` pages followed.
pub const MAX_PAGES: usize = 32;

/// The protocol version offered; servers answer with the one they speak.
const PROTOCOL_VERSION: &str = "2025-11-25";

/// Why a server's tools could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// The server could not be started.
    #[error(transparent)]
    Start(#[from] stdio::StdioError),
    /// Reading from or writing to it failed.
    #[error("talking to the server: {0}")]
    Io(#[from] std::io::Error),
    /// It closed its output before answering.
    #[error("the server exited before answering {0}")]
    Closed(&'static str),
    /// It answered with an error.
    #[error("the server refused {method}: {error}")]
    Refused {
        /// What was asked.
        method: &'static str,
        /// Its error object.
        error: String,
    },
    /// It sent something that is not an answer to what was asked.
    #[error("the server's answer to {method} is malformed: {why}")]
    Malformed {
        /// What was asked.
        method: &'static str,
        /// What was wrong.
        why: String,
    },
    /// It did not answer in time.
    #[error("the server did not list its tools within {0} s")]
    Timeout(u64),
}

/// The server's tool definitions (the entries of its `tools/list` results, in order),
/// within `deadline`. The server is terminated either way.
pub async fn tools(cmd: &ServerCommand, deadline: Duration) -> Result<Vec<Value>, ListError> {
    let mut child = stdio::spawn(cmd)?;
    let group = child.id();
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        stdio::terminate(&mut child, group).await;
        return Err(ListError::Closed("initialize"));
    };
    // Its stderr is passed on, so a server that fails to start says why.
    let errors = tokio::spawn(async move {
        let mut r = BufReader::new(stderr);
        while let Ok(Frame::Line(l)) = frame::read(&mut r, MAX_FRAME).await {
            eprintln!("server: {}", String::from_utf8_lossy(&l));
        }
    });
    let mut reader = BufReader::new(stdout);
    let mut writer = stdin;
    let result = tokio::time::timeout(deadline, exchange(&mut reader, &mut writer))
        .await
        .unwrap_or(Err(ListError::Timeout(deadline.as_secs())));
    drop(writer);
    stdio::terminate(&mut child, group).await;
    errors.abort();
    result
}

/// [`tools`] on a runtime of its own, for a caller that has none.
pub fn tools_blocking(cmd: &ServerCommand, deadline: Duration) -> Result<Vec<Value>, ListError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(tools(cmd, deadline))
}

async fn exchange<R, W>(reader: &mut R, writer: &mut W) -> Result<Vec<Value>, ListError>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let hello = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "bulwark-tools", "version": env!("CARGO_PKG_VERSION")}}});
    send(writer, &hello, "initialize").await?;
    answer(reader, writer, 1, "initialize").await?;
    send(
        writer,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        "initialize",
    )
    .await?;
    let mut out = Vec::new();
    let mut cursor: Option<Value> = None;
    for page in 0..MAX_PAGES {
        let id = 2 + page as u64;
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        send(
            writer,
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params}),
            "tools/list",
        )
        .await?;
        let result = answer(reader, writer, id, "tools/list").await?;
        let tools = result
            .get("tools")
            .and_then(Value::as_array)
            .ok_or_else(|| ListError::Malformed {
                method: "tools/list",
                why: "no tools array".into(),
            })?;
        let room = bulwark_engine::toolset::MAX_TOOLS.saturating_sub(out.len());
        out.extend(tools.iter().take(room).cloned());
        cursor = result.get("nextCursor").filter(|c| !c.is_null()).cloned();
        if cursor.is_none() || out.len() >= bulwark_engine::toolset::MAX_TOOLS {
            break;
        }
    }
    Ok(out)
}

async fn send<W: AsyncWrite + Unpin>(
    w: &mut W,
    msg: &Value,
    method: &'static str,
) -> Result<(), ListError> {
    let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let written = async {
        w.write_all(&line).await?;
        w.flush().await
    };
    match written.await {
        // The server is gone: said as such, not as an I/O error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(ListError::Closed(method)),
        other => Ok(other?),
    }
}

/// Reads until the answer to `id` arrives: notifications are skipped, the server's own
/// requests refused.
async fn answer<R, W>(
    reader: &mut R,
    writer: &mut W,
    id: u64,
    method: &'static str,
) -> Result<Value, ListError>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    loop {
        let line = match frame::read(reader, MAX_FRAME).await? {
            Frame::Line(l) => l,
            Frame::Eof => return Err(ListError::Closed(method)),
            Frame::Oversized(_) => {
                return Err(ListError::Malformed {
                    method,
                    why: format!("a message over {MAX_FRAME} bytes"),
                });
            }
        };
        let Ok(msg) = jsonrpc::parse_json(&line) else {
            // Servers that log to stdout by mistake: not an answer, not fatal.
            continue;
        };
        if msg.get("method").is_some() {
            if let Some(their) = msg.get("id").filter(|i| !i.is_null()) {
                let no = json!({"jsonrpc": "2.0", "id": their, "error": {"code": -32601,
                    "message": "bulwark tools only lists tools; it answers no requests"}});
                send(writer, &no, method).await?;
            }
            continue;
        }
        if msg.get("id").and_then(Value::as_u64) != Some(id) {
            continue;
        }
        if let Some(e) = msg.get("error") {
            return Err(ListError::Refused {
                method,
                error: e.to_string(),
            });
        }
        return msg.get("result").cloned().ok_or(ListError::Malformed {
            method,
            why: "neither result nor error".into(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(script: &str) -> ServerCommand {
        ServerCommand {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            env: Vec::new(),
        }
    }

    #[tokio::test]
    async fn a_server_that_never_answers_is_bounded() {
        let started = std::time::Instant::now();
        let r = tools(&server("sleep 30"), Duration::from_millis(300)).await;
        assert!(matches!(r, Err(ListError::Timeout(_))), "{r:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn a_server_that_exits_says_so() {
        let r = tools(&server("exit 3"), Duration::from_secs(10)).await;
        assert!(matches!(r, Err(ListError::Closed("initialize"))), "{r:?}");
    }

    #[tokio::test]
    async fn a_server_that_cannot_start_says_so() {
        let cmd = ServerCommand {
            argv: vec!["/nonexistent/bulwark-no-such-server".into()],
            env: Vec::new(),
        };
        let r = tools(&cmd, Duration::from_secs(10)).await;
        assert!(matches!(r, Err(ListError::Start(_))), "{r:?}");
    }
}
