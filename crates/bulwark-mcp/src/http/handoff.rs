//! Sessions that survive a replica hop: an MCP session opened on one replica can be taken
//! over by any other replica on the same shared state store.
//!
//! A session's decision state (taint, sequences, limits) already lives in the shared store
//! under a key made from the session id, so whichever replica decides sees it. What a
//! replica holds alone is the upstream session: a stdio server process, or a session of a
//! remote server. So when a session is initialized, the front registers it in the store
//! ([`Registry`]): who opened it and the client's `initialize` parameters, expiring after
//! the idle timeout and renewed while the session is used. A replica that receives a
//! request for a session it does not hold looks the id up; if the registry knows it and the
//! caller is the identity that opened it, the replica opens its own upstream under the same
//! id, replays the client's `initialize` (and `notifications/initialized`) to it, and then
//! serves the request. Same id, same shared session key: the taint follows.
//!
//! Design decision: a shared registry rather than an id that carries the upstream session
//! (an authenticated, encrypted id). A stdio server's process cannot be carried in an id
//! anyway, and the registry lets `DELETE` end the session for every replica. What is not
//! carried: state the upstream server itself kept for the session (subscriptions, a
//! resource it was halfway through) — the new upstream starts fresh from `initialize`, as
//! after a server restart. Records are keyed by a digest of the id (the id is a credential)
//! and are bounded ([`MAX_RECORD`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::stateless::{INITIALIZE_WAIT, StopUnlessKept, next_answer};
use super::streams::Mode;
use super::{DEFAULT_VERSION, HttpFront, Reject, Session, Wire, id_digest, reject};
use crate::jsonrpc;
use bulwark_engine::Principal;

/// Where a front registers its sessions for other replicas.
pub trait Registry: Send + Sync {
    /// Keeps `record` for session `id` for `ttl_ms`.
    fn put(&self, id: &str, record: &str, ttl_ms: u64) -> Result<(), String>;
    /// The record of session `id`, if one is kept.
    fn get(&self, id: &str) -> Result<Option<String>, String>;
    /// Forgets session `id`.
    fn remove(&self, id: &str) -> Result<(), String>;
}

/// The record kind in the gate's store.
const KIND: &str = "mcp";

/// The largest record kept (the client's `initialize` parameters are most of it). A
/// session whose record is larger is served, but not taken over elsewhere.
pub const MAX_RECORD: usize = 16 * 1024;

impl Registry for bulwark_gate::Gate {
    fn put(&self, id: &str, record: &str, ttl_ms: u64) -> Result<(), String> {
        self.store()
            .put_record(KIND, id, record, ttl_ms)
            .map_err(|e| e.to_string())
    }

    fn get(&self, id: &str) -> Result<Option<String>, String> {
        self.store().record(KIND, id).map_err(|e| e.to_string())
    }

    fn remove(&self, id: &str) -> Result<(), String> {
        self.store()
            .remove_record(KIND, id)
            .map_err(|e| e.to_string())
    }
}

/// What is registered of a session.
#[derive(Serialize, Deserialize)]
struct Record {
    /// Who opened it: only the same identity may take it over.
    principal: Option<String>,
    verified: bool,
    /// The client's `initialize` parameters, replayed to a new upstream.
    params: Value,
}

impl HttpFront {
    /// Registers sessions in `registry` from now on, so other replicas can take them over.
    pub fn share_sessions(&self, registry: Arc<dyn Registry>) {
        let _ = self.registry.set(registry);
    }

    fn ttl_ms(&self) -> u64 {
        self.config.idle_timeout.as_millis().max(1) as u64
    }

    /// Registers a session its client has just initialized with `params`.
    pub(super) fn register(&self, session: &Session, params: &Value) {
        let Some(registry) = self.registry.get() else {
            return;
        };
        let record = Record {
            principal: session.principal.id.clone(),
            verified: session.principal.verified,
            params: params.clone(),
        };
        let Ok(text) = serde_json::to_string(&record) else {
            return;
        };
        if text.len() > MAX_RECORD {
            (self.log)(&format!(
                "session {}: its initialize parameters are over {MAX_RECORD} bytes; it is not shared, and a client that reaches another replica must initialize again",
                id_digest(&session.id)
            ));
            return;
        }
        self.put_record(registry.as_ref(), session, text);
    }

    fn put_record(&self, registry: &dyn Registry, session: &Session, text: String) {
        match registry.put(&session.id, &text, self.ttl_ms()) {
            Ok(()) => session
                .registered_ms
                .store(self.now_ms(), Ordering::Relaxed),
            Err(e) => (self.log)(&format!(
                "session {}: cannot register it for other replicas: {e}",
                id_digest(&session.id)
            )),
        }
        *crate::locks::lock(&session.registration) = Some(text);
    }

    /// Renews a session's record while it is used (after a quarter of its lifetime), so an
    /// active session never expires from the registry.
    pub(super) fn keep_registered(&self, session: &Session) {
        let Some(registry) = self.registry.get() else {
            return;
        };
        let since = self
            .now_ms()
            .saturating_sub(session.registered_ms.load(Ordering::Relaxed));
        if since < self.ttl_ms() / 4 {
            return;
        }
        let text = crate::locks::lock(&session.registration).clone();
        if let Some(text) = text {
            self.put_record(registry.as_ref(), session, text);
        }
    }

    /// Forgets a session the client ended.
    pub(super) fn unregister(&self, id: &str) {
        if let Some(registry) = self.registry.get()
            && let Err(e) = registry.remove(id)
        {
            (self.log)(&format!(
                "session {}: cannot remove it from the registry: {e}",
                id_digest(id)
            ));
        }
    }

    /// The registered owner of session `sid`: `Ok(None)` when no registry or no record.
    fn registered(&self, sid: &str) -> Result<Option<Record>, Reject> {
        let Some(registry) = self.registry.get() else {
            return Ok(None);
        };
        match registry.get(sid) {
            // A record that does not parse is no session (it was not written by us).
            Ok(Some(text)) => Ok(serde_json::from_str(&text).ok()),
            Ok(None) => Ok(None),
            // Not "no such session": the client would start afresh and lose its state.
            Err(e) => Err(reject(
                StatusCode::SERVICE_UNAVAILABLE,
                &Value::Null,
                jsonrpc::INTERNAL_ERROR,
                &format!("cannot look the session up in the shared registry: {e}"),
            )),
        }
    }

    /// Takes over session `sid` from another replica: `Ok(None)` when no replica registered
    /// it; 403 when `principal` did not open it; 502 when the new upstream does not
    /// initialize.
    pub(super) async fn take_over(
        self: &Arc<Self>,
        sid: &str,
        principal: &Principal,
    ) -> Result<Option<Arc<Session>>, Reject> {
        if self.registry.get().is_none() {
            return Ok(None);
        }
        let _one = self.handoffs.lock().await;
        if let Some(s) = self.session(sid) {
            // Another request of the session took it over while this one waited.
            return Ok((s.wire == Wire::Sessions).then_some(s));
        }
        let Some(record) = self.registered(sid)? else {
            return Ok(None);
        };
        let owner = Principal {
            id: record.principal.clone(),
            verified: record.verified,
        };
        super::owned_by(&owner, principal, &Value::Null)?;
        let version = record
            .params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_VERSION)
            .to_string();
        let session =
            self.open_session(Some(sid.to_string()), Wire::Sessions, &version, principal)?;
        let guard = StopUnlessKept(Some(Arc::clone(&session)));
        let unavailable = |why: &str| {
            reject(
                StatusCode::BAD_GATEWAY,
                &Value::Null,
                jsonrpc::INTERNAL_ERROR,
                &format!(
                    "the session could not be taken over from another replica: the upstream server {why}"
                ),
            )
        };
        let id = json!("bulwark-take-over");
        let init =
            json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": record.params});
        session.initializing(&id);
        let opened = session.streams().open(&id, &init, Mode::Json);
        let (stream, reader) = opened.map_err(|e| unavailable(&e.to_string()))?;
        if !session.send(init, self.config.send_wait).await {
            return Err(unavailable("does not take messages"));
        }
        match tokio::time::timeout(INITIALIZE_WAIT, next_answer(&session, stream, reader)).await {
            Ok(Some(v)) if v.get("result").is_some() => {}
            Ok(Some(v)) => return Err(unavailable(&format!("refused initialize: {}", v["error"]))),
            Ok(None) => return Err(unavailable("ended")),
            Err(_) => return Err(unavailable("did not answer in time")),
        }
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        if !session.send(initialized, self.config.send_wait).await {
            return Err(unavailable("does not take messages"));
        }
        guard.keep();
        if let Ok(text) = serde_json::to_string(&record)
            && let Some(registry) = self.registry.get()
        {
            self.put_record(registry.as_ref(), &session, text);
        }
        (self.log)(&format!(
            "session {} taken over from another replica",
            id_digest(sid)
        ));
        Ok(Some(session))
    }

    /// Ends a session this replica does not hold but the registry knows (a `DELETE` that
    /// reached another replica than the one serving it): `Ok(false)` when unknown.
    pub(super) fn end_registered(&self, sid: &str, principal: &Principal) -> Result<bool, Reject> {
        let Some(record) = self.registered(sid)? else {
            return Ok(false);
        };
        let owner = Principal {
            id: record.principal,
            verified: record.verified,
        };
        super::owned_by(&owner, principal, &Value::Null)?;
        self.unregister(sid);
        Ok(true)
    }
}
