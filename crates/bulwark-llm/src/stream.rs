//! Streamed responses: text streams through as it comes; a proposed tool call is held
//! back until it is complete, judged, then released exactly as it came, released with new
//! arguments, or replaced by text saying why it was withheld.
//!
//! Each API streams tool calls its own way — Chat as `tool_calls` deltas closed by a
//! `finish_reason`, Anthropic as a `tool_use` content block, the Responses API as a
//! `function_call` output item — so each has its own [`Transform`], in its own module
//! ([`crate::chat::Stream`], [`crate::messages::Stream`], [`crate::responses::Stream`];
//! [`crate::Api::stream`] picks one). This module holds what they share. Held bytes are
//! bounded: past [`MAX_HELD`] the stream ends with an error in the API's shape instead of
//! releasing what could not be judged.

use serde_json::Value;

use crate::judge::Judge;
use crate::sse::Event;

/// Most bytes held back while tool calls are being completed.
pub const MAX_HELD: usize = 8 * 1024 * 1024;

/// Why a stream was ended early.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The held calls grew past [`MAX_HELD`].
    #[error("a proposed tool call grew past {MAX_HELD} bytes before it was complete")]
    TooMuchHeld,
    /// An event's data is not JSON, so what it carries cannot be judged.
    #[error("the upstream sent an event that is not JSON, so it cannot be judged")]
    NotJson,
    /// An event's name and its data's `type` differ: a client might read it either way.
    #[error("the upstream sent an event whose name and type disagree")]
    Mismatch,
}

/// The event's data `type`, which must be its SSE name when it has one (Anthropic and the
/// Responses API send both; SDKs dispatch on one or the other).
pub(crate) fn kind_of(ev: &Event, v: &Value) -> Result<String, StreamError> {
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
    match &ev.name {
        Some(name) if name != kind => Err(StreamError::Mismatch),
        _ => Ok(kind.to_string()),
    }
}

/// The data of an event that is meant to be JSON: an empty event (a comment, a keep-alive)
/// and Chat's `[DONE]` are fine as they are; anything else that does not parse ends the
/// stream, since a call inside it could not be judged.
pub(crate) fn data_json(ev: &mut Event) -> Result<Option<Value>, StreamError> {
    // Lines that are no SSE field would go to the client unread: refused like bad data.
    if !ev.known_fields_only() {
        return Err(StreamError::NotJson);
    }
    let d = ev.data.trim();
    if d == "[DONE]" {
        return Ok(None);
    }
    if d.is_empty() {
        // Nothing a client dispatches: only its comments (keep-alives) go on.
        ev.raw = ev.comments();
        return Ok(None);
    }
    serde_json::from_str(d)
        .map(Some)
        .map_err(|_| StreamError::NotJson)
}

/// One API's stream rewriting.
pub trait Transform: Send {
    /// Takes one upstream event; appends what to send to `out`.
    fn event(&mut self, ev: Event, judge: &mut Judge, out: &mut Vec<u8>)
    -> Result<(), StreamError>;
    /// The upstream ended; releases or replaces whatever is still held.
    fn end(&mut self, judge: &mut Judge, out: &mut Vec<u8>);
}

/// Events held back while a call is being completed, each with what the transform needs
/// to know about it; at most [`MAX_HELD`] bytes.
pub(crate) struct Held<T> {
    pub(crate) events: Vec<(Event, T)>,
    bytes: usize,
}

impl<T> Default for Held<T> {
    fn default() -> Self {
        Held {
            events: Vec::new(),
            bytes: 0,
        }
    }
}

impl<T> Held<T> {
    pub(crate) fn push(&mut self, ev: Event, tag: T) -> Result<(), StreamError> {
        self.bytes += ev.raw.len();
        if self.bytes > MAX_HELD {
            return Err(StreamError::TooMuchHeld);
        }
        self.events.push((ev, tag));
        Ok(())
    }

    pub(crate) fn take(&mut self) -> Vec<(Event, T)> {
        self.bytes = 0;
        std::mem::take(&mut self.events)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

/// Appends `v` as one event named `name`.
pub(crate) fn emit_json(out: &mut Vec<u8>, name: Option<&str>, v: &Value) {
    out.extend_from_slice(&Event::new(name, &v.to_string()).raw);
}
