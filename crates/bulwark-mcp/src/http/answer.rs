//! How answers go back to an HTTP client: an SSE body per stream (event ids, priming,
//! keep-alive comments, stateless rewriting), or the answer alone as JSON; and what happens
//! when the reader goes away (the GET stream is freed, a 2024-11-05 session ends, a
//! stateless request is cancelled upstream).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::session::{Session, Wire};
use super::streams::GET_STREAM;
use super::{Rewrite, revision, rpc_error};
use crate::jsonrpc;

/// Waits for the answer on a JSON-mode stream. With `rewrite` (a stateless request), a
/// client that goes away first cancels the request upstream.
pub(super) async fn json_answer(
    session: &Arc<Session>,
    stream: u64,
    reader: u64,
    rewrite: Option<Arc<Rewrite>>,
) -> Response {
    let _guard = ReaderGuard {
        session: Arc::clone(session),
        stream,
        reader,
        cancel: rewrite.as_ref().map(|r| r.upstream_id.clone()),
    };
    let mut cursor = 0;
    while let Some(events) = session.next_events(stream, reader, cursor).await {
        for (seq, text) in events {
            cursor = seq;
            let answer = match &rewrite {
                Some(rw) => rw.apply(&text),
                None => Some(text.to_string()),
            };
            let Some(text) = answer else { continue };
            session.streams().delivered(stream, reader, seq);
            // A stateless client learns of an unknown method from the status.
            let unknown = rewrite.is_some()
                && serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|v| jsonrpc::at(&v, "/error/code").and_then(Value::as_i64))
                    == Some(revision::METHOD_NOT_FOUND);
            let status = if unknown {
                StatusCode::NOT_FOUND
            } else {
                StatusCode::OK
            };
            return (
                status,
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                text,
            )
                .into_response();
        }
    }
    rpc_error(
        StatusCode::BAD_GATEWAY,
        &rewrite.map(|r| r.client_id.clone()).unwrap_or(Value::Null),
        jsonrpc::INTERNAL_ERROR,
        "the upstream ended before answering",
    )
}

pub(super) fn sse_response(body: Body) -> Response {
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                header::HeaderName::from_static("x-accel-buffering"),
                HeaderValue::from_static("no"),
            ),
        ],
        body,
    )
        .into_response()
}

/// Ends the standalone stream's turn (or a legacy session) when its reader goes away, and
/// cancels a stateless request whose client went away before its answer.
struct ReaderGuard {
    session: Arc<Session>,
    stream: u64,
    reader: u64,
    /// The upstream id to cancel if the stream is still open when the reader goes.
    cancel: Option<Value>,
}

impl Drop for ReaderGuard {
    fn drop(&mut self) {
        if let Some(id) = &self.cancel {
            self.session.cancel(self.stream, id);
        }
        if self.stream == GET_STREAM {
            self.session.streams().close_get(self.reader);
            if self.session.wire == Wire::LegacySse {
                self.session.stop();
            }
        }
    }
}

/// How an SSE body is written.
pub(super) struct SseOpts {
    /// Read from after this sequence number.
    pub(super) cursor: u64,
    /// Send an empty event carrying the first id, so even a client cut off before any
    /// message can resume (2025-11-25).
    pub(super) prime: bool,
    /// Comment this often while nothing happens.
    pub(super) keepalive: Duration,
    /// Sent before anything else (the 2024-11-05 `endpoint` event).
    pub(super) first: Option<String>,
    /// A stateless request's: no event ids (nothing resumes), messages rewritten.
    pub(super) rewrite: Option<Arc<Rewrite>>,
}

impl Default for SseOpts {
    fn default() -> SseOpts {
        SseOpts {
            cursor: 0,
            prime: false,
            keepalive: Duration::from_secs(15),
            first: None,
            rewrite: None,
        }
    }
}

struct SseState {
    guard: ReaderGuard,
    cursor: u64,
    first: Option<String>,
    keepalive: Duration,
    rewrite: Option<Arc<Rewrite>>,
}

/// An SSE body reading stream `stream` of `session`.
pub(super) fn sse_body(session: Arc<Session>, stream: u64, reader: u64, opts: SseOpts) -> Body {
    let first = match (opts.first, opts.prime) {
        (Some(f), _) => Some(f),
        (None, true) => Some(format!("id: {stream}-{}\ndata: \n\n", opts.cursor)),
        (None, false) => None,
    };
    let state = SseState {
        guard: ReaderGuard {
            session,
            stream,
            reader,
            cancel: opts.rewrite.as_ref().map(|r| r.upstream_id.clone()),
        },
        cursor: opts.cursor,
        first,
        keepalive: opts.keepalive,
        rewrite: opts.rewrite,
    };
    let events = futures_util::stream::unfold(state, |mut st| async move {
        if let Some(f) = st.first.take() {
            return Some((Ok::<_, Infallible>(Bytes::from(f)), st));
        }
        loop {
            let session = Arc::clone(&st.guard.session);
            let (stream, reader) = (st.guard.stream, st.guard.reader);
            let next = session.next_events(stream, reader, st.cursor);
            let list = match tokio::time::timeout(st.keepalive, next).await {
                Err(_) => return Some((Ok(Bytes::from_static(b": keepalive\n\n")), st)),
                Ok(None) => return None,
                Ok(Some(list)) => list,
            };
            let mut chunk = String::new();
            for (seq, text) in list {
                st.cursor = seq;
                match &st.rewrite {
                    Some(rw) => {
                        if let Some(t) = rw.apply(&text) {
                            chunk.push_str(&format!("event: message\ndata: {t}\n\n"));
                        }
                    }
                    None => chunk.push_str(&format!(
                        "id: {stream}-{seq}\nevent: message\ndata: {text}\n\n"
                    )),
                }
            }
            session.streams().delivered(stream, reader, st.cursor);
            if !chunk.is_empty() {
                return Some((Ok(Bytes::from(chunk)), st));
            }
        }
    });
    Body::from_stream(events)
}
