//! The tool results in a request's history, each paired with the call that produced it.
//!
//! A model request carries the whole conversation: the calls the model proposed earlier
//! and what they returned. Taint comes from both — *what* ran (`cat ~/.ssh/id_rsa`, a
//! fetch) and *what came back* (a key, an injected instruction) — so every result is paired
//! with its call by id: Chat's `tool_call_id`, the Responses API's `call_id`, Anthropic's
//! `tool_use_id`.
//!
//! Each API reads its own history ([`crate::chat::results`], [`crate::messages::results`],
//! [`crate::responses::results`], or [`crate::Api::results`] for whichever a request
//! speaks); this module holds what they share: the [`Exchange`], the bound on how many
//! results a request may carry, and the readers of arguments and tool output.

use std::collections::HashMap;

use serde_json::{Value, json};

/// One tool result the agent has already seen.
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    /// The call id.
    pub id: String,
    /// The tool's name, when the call is in the history.
    pub tool: Option<String>,
    /// The call's arguments (`Null` when the call is not in the history).
    pub args: Value,
    /// What the tool returned.
    pub content: Value,
    /// A provider-run tool that reads the web (web search, web fetch): untrusted input
    /// whatever it says.
    pub web: bool,
}

/// Most results looked at in one request: more is refused rather than half-read.
pub const MAX_RESULTS: usize = 4096;

/// Why a history could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    /// More results than [`MAX_RESULTS`].
    #[error("the request holds more than {MAX_RESULTS} tool results")]
    TooMany,
    /// A field has the wrong type.
    #[error("{0}")]
    Shape(String),
}

pub(crate) fn items<'a>(body: &'a Value, key: &str) -> Result<&'a [Value], HistoryError> {
    match body.get(key) {
        None => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(HistoryError::Shape(format!("{key} must be an array"))),
    }
}

/// The calls a history has shown so far, and the results read, paired with them.
#[derive(Default)]
pub(crate) struct Collector {
    /// Calls by id: the tool's name and its arguments.
    pub(crate) calls: HashMap<String, (String, Value)>,
    /// The results, in order.
    pub(crate) out: Vec<Exchange>,
}

impl Collector {
    /// The result with `id`, paired with its call when the history showed it.
    pub(crate) fn exchange(&self, id: String, content: Value) -> Exchange {
        let (tool, args) = match self.calls.get(&id) {
            Some((name, args)) => (Some(name.clone()), args.clone()),
            None => (None, Value::Null),
        };
        Exchange {
            id,
            tool,
            args,
            content,
            web: false,
        }
    }

    /// Adds a result; past [`MAX_RESULTS`] the history is refused.
    pub(crate) fn push(&mut self, e: Exchange) -> Result<(), HistoryError> {
        if self.out.len() >= MAX_RESULTS {
            return Err(HistoryError::TooMany);
        }
        self.out.push(e);
        Ok(())
    }
}

/// The string at `key`, or empty.
pub(crate) fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Arguments as the APIs send them: a JSON text (Chat, Responses) or an object. Text that
/// is not JSON stays a string, so the engine still sees every byte of it.
pub fn arguments(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) if s.trim().is_empty() => json!({}),
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(v) => v.clone(),
        None => json!({}),
    }
}

/// A `local_shell_call` / `shell_call` action as shell-tool arguments.
pub(crate) fn shell_action(action: &Value) -> Value {
    let words = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|w| w.as_str().map(str::to_string))
            .collect()
    };
    // `local_shell_call` has one argv; `shell_call` a list of command lines.
    let argv = words(action.get("command"));
    if !argv.is_empty() {
        return json!({"command": join_argv(&argv)});
    }
    json!({"command": words(action.get("commands")).join("\n")})
}

/// An argv as one shell line, each word quoted where it needs to be.
fn join_argv(argv: &[String]) -> String {
    argv.iter()
        .map(|w| {
            if !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Tool output as text where it is text: a string, or the text parts of a content list.
/// Other parts (images, files) are kept as they are for the scanner.
pub(crate) fn content(v: Option<&Value>) -> Value {
    match v {
        Some(Value::Array(parts)) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            if texts.len() == parts.len() {
                Value::String(texts.join("\n"))
            } else {
                Value::Array(parts.clone())
            }
        }
        Some(v) => v.clone(),
        None => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_words_are_quoted() {
        assert_eq!(
            join_argv(&["sh".into(), "-c".into(), "echo 'a b'".into()]),
            r"sh -c 'echo '\''a b'\'''"
        );
    }
}
