//! One client session of the HTTP front: its upstream link, its streams, and the two tasks
//! that move lines between them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::{Notify, mpsc, oneshot};

use super::streams::Streams;
use crate::frame::{self, Frame};
use crate::jsonrpc::{self, Kind};
use crate::stdio::MAX_FRAME;

/// One upstream session as the HTTP front sees it: a newline-delimited JSON-RPC pipe whose
/// far end is the gateway core in front of a server (see [`super::Connector`]).
pub struct Link {
    /// The pipe: client messages in, messages for the client out.
    pub io: DuplexStream,
    /// Ends the upstream at once (the server's process group is killed).
    pub stop: oneshot::Sender<()>,
}

/// Lines queued for the upstream per session.
const QUEUE: usize = 256;

/// A client session.
pub struct Session {
    /// The id the client sends back in `Mcp-Session-Id`.
    pub id: String,
    /// Served over the 2024-11-05 `/sse` + `/message` pair: everything goes out on one stream.
    pub legacy_sse: bool,
    streams: Mutex<Streams>,
    /// Wakes readers when a stream has something new (few readers per session: they each
    /// look again).
    pub(crate) notify: Notify,
    to_server: mpsc::Sender<Vec<u8>>,
    stop: Mutex<Option<oneshot::Sender<()>>>,
    version: Mutex<String>,
    initialize_id: Mutex<Option<String>>,
    last_seen: AtomicU64,
}

impl Session {
    /// Starts the session's tasks over `link`. `on_end` runs once the upstream is gone.
    pub fn start(
        id: String,
        legacy_sse: bool,
        link: Link,
        version: &str,
        now_ms: u64,
        on_end: impl FnOnce(&str) + Send + 'static,
    ) -> Arc<Session> {
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(QUEUE);
        let (read, mut write) = tokio::io::split(link.io);
        let session = Arc::new(Session {
            id,
            legacy_sse,
            streams: Mutex::new(Streams::new()),
            notify: Notify::new(),
            to_server: tx,
            stop: Mutex::new(Some(link.stop)),
            version: Mutex::new(version.to_string()),
            initialize_id: Mutex::new(None),
            last_seen: AtomicU64::new(now_ms),
        });
        tokio::spawn(async move {
            while let Some(mut line) = rx.recv().await {
                line.push(b'\n');
                if write.write_all(&line).await.is_err() {
                    break;
                }
            }
            let _ = write.shutdown().await;
        });
        let s = Arc::clone(&session);
        tokio::spawn(async move {
            let mut reader = BufReader::new(read);
            loop {
                match frame::read(&mut reader, MAX_FRAME + 4096).await {
                    Ok(Frame::Line(l)) => s.deliver(&l),
                    // The gateway core bounds what it sends; nothing here can be this big.
                    Ok(Frame::Oversized(_)) => {}
                    Ok(Frame::Eof) | Err(_) => break,
                }
            }
            s.streams().end();
            s.notify.notify_waiters();
            on_end(&s.id);
        });
        session
    }

    pub(crate) fn streams(&self) -> MutexGuard<'_, Streams> {
        match self.streams.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    fn deliver(&self, line: &[u8]) {
        let Ok(text) = std::str::from_utf8(line) else {
            return;
        };
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            return;
        };
        if let Ok(Kind::Response { id }) = jsonrpc::classify(&v) {
            let init = lock(&self.initialize_id).clone();
            if init.as_deref() == Some(jsonrpc::id_key(&id).as_str())
                && let Some(ver) = v.pointer("/result/protocolVersion").and_then(Value::as_str)
            {
                *lock(&self.version) = ver.to_string();
            }
        }
        self.streams().route(&v, Arc::from(text));
        self.notify.notify_waiters();
    }

    /// Notes the id of the `initialize` request, so the version the server answers with is
    /// the session's.
    pub fn initializing(&self, id: &Value) {
        *lock(&self.initialize_id) = Some(jsonrpc::id_key(id));
    }

    /// The protocol version of the session (the server's answer to `initialize`).
    pub fn version(&self) -> String {
        lock(&self.version).clone()
    }

    /// Sends one message to the upstream; false when the session is over or its queue stays
    /// full for `wait`.
    pub async fn send(&self, message: &Value, wait: std::time::Duration) -> bool {
        let line = message.to_string().into_bytes();
        matches!(
            tokio::time::timeout(wait, self.to_server.send(line)).await,
            Ok(Ok(()))
        )
    }

    /// Marks the session used now.
    pub fn touch(&self, now_ms: u64) {
        self.last_seen.store(now_ms, Ordering::Relaxed);
    }

    /// When the session was last used.
    pub fn last_seen(&self) -> u64 {
        self.last_seen.load(Ordering::Relaxed)
    }

    /// Ends the upstream now; readers end once they have what was sent.
    pub fn stop(&self) {
        if let Some(s) = lock(&self.stop).take() {
            let _ = s.send(());
        }
        self.streams().end();
        self.notify.notify_waiters();
    }

    /// Whether the upstream is gone.
    pub fn ended(&self) -> bool {
        self.streams().ended()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}
