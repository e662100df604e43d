//! Which model API a request speaks, and each thing the proxy does with a request or an
//! answer, handed to that API's own module ([`crate::chat`], [`crate::messages`],
//! [`crate::responses`]). The API modules share only what lies below them (the history's
//! [`Exchange`], the stream plumbing, the judge); nothing there knows about this one.

use serde_json::Value;

use crate::history::{Exchange, HistoryError};
use crate::judge::Judge;
use crate::sse::Event;
use crate::stream::Transform;

/// The three APIs whose tool calls the proxy judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// OpenAI Chat Completions (`…/chat/completions`).
    Chat,
    /// OpenAI Responses (`…/responses`).
    Responses,
    /// Anthropic Messages (`…/messages`).
    Messages,
}

impl Api {
    /// The API a `POST` to `path` speaks; anything else passes through untouched.
    ///
    /// ```
    /// use bulwark_llm::Api;
    /// assert_eq!(Api::for_path("/v1/messages"), Some(Api::Messages));
    /// assert_eq!(Api::for_path("/openai/v1/chat/completions"), Some(Api::Chat));
    /// assert_eq!(Api::for_path("/v1/messages/count_tokens"), None);
    /// ```
    pub fn for_path(path: &str) -> Option<Api> {
        let path = path.trim_end_matches('/');
        if path.ends_with("/chat/completions") {
            Some(Api::Chat)
        } else if path.ends_with("/responses") {
            Some(Api::Responses)
        } else if path.ends_with("/messages") {
            Some(Api::Messages)
        } else {
            None
        }
    }

    /// The name used in logs and the audit record.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Chat => "chat.completions",
            Api::Responses => "responses",
            Api::Messages => "messages",
        }
    }

    /// An error body the API's SDKs parse: OpenAI's `{"error":{…}}` or Anthropic's
    /// `{"type":"error","error":{…}}`.
    pub fn error(self, status: u16, message: &str) -> Value {
        match self {
            Api::Messages => crate::messages::error_body(status, message),
            Api::Chat | Api::Responses => crate::chat::error_body(status, message),
        }
    }

    /// The event that ends a stream that could not be finished safely, in this API's shape.
    pub fn error_event(self, message: &str) -> Event {
        match self {
            Api::Chat => crate::chat::error_event(message),
            Api::Messages => crate::messages::error_event(message),
            Api::Responses => crate::responses::error_event(message),
        }
    }

    /// The tool results in a request body, in order, each paired with its call
    /// ([`crate::history`]).
    pub fn results(self, body: &Value) -> Result<Vec<Exchange>, HistoryError> {
        match self {
            Api::Chat => crate::chat::results(body),
            Api::Messages => crate::messages::results(body),
            Api::Responses => crate::responses::results(body),
        }
    }

    /// Adds the safety hint where this API keeps its instructions: a system message after
    /// the leading ones (Chat), the `system` prompt (Messages), `instructions` (Responses).
    /// Existing instructions stay first and unchanged.
    pub fn inject_hint(self, body: &mut Value, hint: &str) {
        let Some(obj) = body.as_object_mut() else {
            return;
        };
        match self {
            Api::Chat => crate::chat::inject_hint(obj, hint),
            Api::Messages => crate::messages::inject_hint(obj, hint),
            Api::Responses => crate::responses::inject_hint(obj, hint),
        }
    }

    /// Judges every proposed call in a whole (not streamed) answer, rewriting it where a
    /// call is withheld: the call is replaced by text saying why, `finish_reason` /
    /// `stop_reason` follow, and a `bulwark` object carries the details for programs.
    /// Returns whether anything changed.
    pub fn judge_answer(self, body: &mut Value, judge: &mut Judge) -> bool {
        match self {
            Api::Chat => crate::chat::judge_answer(body, judge),
            Api::Messages => crate::messages::judge_answer(body, judge),
            Api::Responses => crate::responses::judge_answer(body, judge),
        }
        if !judge.changed() {
            return false;
        }
        let meta = judge.metadata();
        if let Some(obj) = body.as_object_mut() {
            obj.insert("bulwark".into(), meta);
        }
        true
    }

    /// The rewriting of a streamed answer in this API ([`crate::stream`]).
    pub fn stream(self) -> Box<dyn Transform> {
        match self {
            Api::Chat => Box::new(crate::chat::Stream::default()),
            Api::Messages => Box::new(crate::messages::Stream::default()),
            Api::Responses => Box::new(crate::responses::Stream::default()),
        }
    }
}
