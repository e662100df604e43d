//! Which model API a request speaks, and errors in that API's own shape.

use serde_json::{Value, json};

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
            Api::Messages => json!({
                "type": "error",
                "error": {"type": anthropic_type(status), "message": message},
            }),
            Api::Chat | Api::Responses => json!({
                "error": {
                    "message": message,
                    "type": openai_type(status),
                    "param": null,
                    "code": null,
                },
            }),
        }
    }
}

fn anthropic_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        _ => "api_error",
    }
}

fn openai_type(status: u16) -> &'static str {
    match status {
        400 | 413 => "invalid_request_error",
        _ => "server_error",
    }
}
