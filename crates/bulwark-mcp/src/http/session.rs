//! One client session of the HTTP front: its upstream link, its streams, and the two tasks
//! that move lines between them.

use crate::locks::lock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::oneshot;

use super::streams::{Poll, Streams};
use crate::jsonrpc::{self, Kind};
use crate::param_headers::{Binding, ToolBindings};
use crate::port::{self, Port};

/// One upstream session as the HTTP front sees it: an in-process port whose far end is the
/// gateway core in front of a server (see [`super::Connector`]).
pub struct Link {
    /// The port: client messages out to the core, messages for the client in.
    pub port: Port,
    /// Ends the upstream at once (the server's process group is killed).
    pub stop: oneshot::Sender<()>,
    /// Where headers for a request's upstream POST are filed, when the upstream is reached
    /// over HTTP.
    pub extra: Option<Arc<crate::remote::ExtraHeaders>>,
}

/// How a session's client talks to the front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Streamable HTTP with `Mcp-Session-Id` (2025-03-26 … 2025-11-25).
    Sessions,
    /// The 2024-11-05 `/sse` + `/message` pair: everything goes out on one stream.
    LegacySse,
    /// The upstream session the front opens itself to serve 2026-07-28 (stateless)
    /// requests: only answers and progress reach clients; requests from the server are
    /// refused, since a stateless client cannot be asked.
    Stateless,
}

/// A client session.
pub struct Session {
    /// The id the client sends back in `Mcp-Session-Id`.
    pub id: String,
    /// How its client talks to the front.
    pub wire: Wire,
    /// Who opened it: only the same identity may use it.
    pub principal: bulwark_engine::Principal,
    streams: Mutex<Streams>,
    to_server: port::Sender,
    stop: Mutex<Option<oneshot::Sender<()>>>,
    version: Mutex<String>,
    initialize_id: Mutex<Option<String>>,
    last_seen: AtomicU64,
    /// Tools' `Mcp-Param-*` bindings, from the listings this session relayed (stateless
    /// sessions only; at most [`crate::param_headers::MAX_BOUND_TOOLS`]).
    bindings: Mutex<ToolBindings>,
    /// The upstream ids of the `tools/list` requests in flight (the newest 64).
    listings: Mutex<std::collections::VecDeque<String>>,
    extra: Option<Arc<crate::remote::ExtraHeaders>>,
    /// When the session's record was last put in the shared registry ([`super::handoff`]).
    pub(super) registered_ms: AtomicU64,
    /// The record itself, renewed while the session is used.
    pub(super) registration: Mutex<Option<String>>,
}

impl Session {
    /// Starts the session's tasks over `link`. `on_end` runs once the upstream is gone.
    pub fn start(
        id: String,
        wire: Wire,
        principal: bulwark_engine::Principal,
        link: Link,
        version: &str,
        now_ms: u64,
        on_end: impl FnOnce(&str) + Send + 'static,
    ) -> Arc<Session> {
        let Port {
            tx,
            rx: mut from_core,
        } = link.port;
        let session = Arc::new(Session {
            id,
            wire,
            principal,
            streams: Mutex::new(Streams::new()),
            to_server: tx,
            stop: Mutex::new(Some(link.stop)),
            version: Mutex::new(version.to_string()),
            initialize_id: Mutex::new(None),
            last_seen: AtomicU64::new(now_ms),
            bindings: Mutex::new(ToolBindings::default()),
            listings: Mutex::new(std::collections::VecDeque::new()),
            extra: link.extra,
            registered_ms: AtomicU64::new(0),
            registration: Mutex::new(None),
        });
        let s = Arc::clone(&session);
        tokio::spawn(async move {
            while let Some(v) = from_core.recv().await {
                s.deliver(v);
            }
            s.streams().end();
            on_end(&s.id);
        });
        session
    }

    pub(crate) fn streams(&self) -> MutexGuard<'_, Streams> {
        lock(&self.streams)
    }

    fn deliver(&self, v: Value) {
        if self.wire == Wire::Stateless {
            match jsonrpc::classify(&v) {
                Ok(Kind::Request { id, method }) => {
                    let refusal = jsonrpc::error(
                        &id,
                        -32601,
                        &format!(
                            "{method} cannot be sent to a 2026-07-28 (stateless) client through this gateway"
                        ),
                        None,
                    );
                    let _ = self.to_server.try_send(refusal);
                    return;
                }
                Ok(Kind::Notification { method }) if method != "notifications/progress" => return,
                _ => {}
            }
            // Only an answer to a `tools/list` this session sent says what the tools are.
            if let Some(result) = v.get("result")
                && let Ok(Kind::Response { id }) = jsonrpc::classify(&v)
            {
                let key = jsonrpc::id_key(&id);
                let mut asked = lock(&self.listings);
                if let Some(at) = asked.iter().position(|k| *k == key) {
                    asked.remove(at);
                    drop(asked);
                    lock(&self.bindings).learn(result);
                }
            }
        }
        let mut failed_initialize = false;
        if let Ok(Kind::Response { id }) = jsonrpc::classify(&v) {
            let init = lock(&self.initialize_id).clone();
            if init.as_deref() == Some(jsonrpc::id_key(&id).as_str()) {
                match jsonrpc::at(&v, "/result/protocolVersion").and_then(Value::as_str) {
                    Some(ver) => *lock(&self.version) = ver.to_string(),
                    None => failed_initialize = v.get("error").is_some(),
                }
            }
        }
        {
            let mut streams = self.streams();
            // Serialised once, here: what the client's stream carries and replays.
            let text: Arc<str> = Arc::from(jsonrpc::to_text(&v));
            if let Some(n) = streams.route(&v, text) {
                streams.wake(n);
            }
        }
        // A session whose initialize failed is of no use to anyone: its server goes now
        // (the client still reads the error), not at the idle reaping.
        if failed_initialize && self.wire != Wire::Stateless {
            self.stop();
        }
    }

    /// Waits for what stream `stream` has after `cursor` for reader `reader`; `None` once
    /// the stream has ended (or was taken over). Cancel-safe: nothing is consumed.
    pub async fn next_events(
        &self,
        stream: u64,
        reader: u64,
        cursor: u64,
    ) -> Option<Vec<(u64, Arc<str>)>> {
        let waker = self.streams().waker(stream);
        loop {
            let notified = waker.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let polled = self.streams().poll(stream, reader, cursor);
            match polled {
                Poll::Events(e) => return Some(e),
                Poll::End => return None,
                Poll::Wait => notified.await,
            }
        }
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
    pub async fn send(&self, message: Value, wait: std::time::Duration) -> bool {
        self.to_server.send_within(message, wait).await
    }

    /// The `Mcp-Param-*` bindings of tool `name`, as last listed.
    pub fn bindings(&self, name: &str) -> Vec<Binding> {
        lock(&self.bindings).of(name)
    }

    /// Notes that the request with `id` is a `tools/list`, whose answer the session learns
    /// the tools' header bindings from.
    pub fn listing(&self, id: &Value) {
        let mut asked = lock(&self.listings);
        if asked.len() >= 64 {
            asked.pop_front();
        }
        asked.push_back(jsonrpc::id_key(id));
    }

    /// Where headers for the upstream's POSTs are filed, when it is reached over HTTP.
    pub fn extra(&self) -> Option<&Arc<crate::remote::ExtraHeaders>> {
        self.extra.as_ref()
    }

    /// Marks the session used now.
    pub fn touch(&self, now_ms: u64) {
        self.last_seen.store(now_ms, Ordering::Relaxed);
    }

    /// When the session was last used.
    pub fn last_seen(&self) -> u64 {
        self.last_seen.load(Ordering::Relaxed)
    }

    /// Tells the upstream that the request with `upstream_id` is given up on (its client
    /// closed the stream), and forgets its stream.
    pub fn cancel(&self, stream: u64, upstream_id: &Value) {
        let open = self.streams().is_open(stream);
        if open {
            self.streams().abandon(stream);
            let cancel = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": upstream_id, "reason": "the client closed the stream"}});
            let _ = self.to_server.try_send(cancel);
        }
    }

    /// Ends the upstream now; readers end once they have what was sent.
    pub fn stop(&self) {
        if let Some(s) = lock(&self.stop).take() {
            let _ = s.send(());
        }
        self.streams().end();
    }

    /// Whether the upstream is gone.
    pub fn ended(&self) -> bool {
        self.streams().ended()
    }
}
