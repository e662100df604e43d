//! JSON-RPC 2.0 as MCP uses it: one message per frame, classified without losing a field.
//!
//! A gateway must pass through what it does not decide exactly as it came, so messages stay
//! [`Value`]s; this module only says what kind each one is and builds the replies the gateway
//! writes itself.

use serde_json::{Value, json};

/// Parse error.
pub const PARSE_ERROR: i64 = -32700;
/// Not a JSON-RPC request or response.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist (or is not forwarded).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Internal error (the server is gone, or did not answer in time).
pub const INTERNAL_ERROR: i64 = -32603;

/// Where a message goes.
#[derive(Debug, PartialEq)]
pub enum Out {
    /// To the client.
    Client(Value),
    /// To the server.
    Server(Value),
}

/// What a frame holds.
#[derive(Debug, PartialEq)]
pub enum Kind {
    /// A request: it has a method and an id.
    Request {
        /// The id, as sent.
        id: Value,
        /// The method.
        method: String,
    },
    /// A notification: a method, no id.
    Notification {
        /// The method.
        method: String,
    },
    /// A response (a `result` or an `error`) to the request with this id.
    Response {
        /// The id, as sent.
        id: Value,
    },
}

/// Why a frame is not a JSON-RPC message.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum FrameError {
    /// Not JSON (or not UTF-8).
    #[error("parse error: {0}")]
    Parse(String),
    /// JSON, but not a JSON-RPC 2.0 message.
    #[error("invalid request: {0}")]
    Invalid(String),
}

impl FrameError {
    /// The JSON-RPC error code for it.
    pub fn code(&self) -> i64 {
        match self {
            FrameError::Parse(_) => PARSE_ERROR,
            FrameError::Invalid(_) => INVALID_REQUEST,
        }
    }
}

/// Parses one frame.
///
/// ```
/// use bulwark_mcp::jsonrpc::{parse, Kind};
/// let (_, kind) = parse(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#).unwrap();
/// assert_eq!(kind, Kind::Request { id: 7.into(), method: "tools/list".into() });
/// ```
pub fn parse(frame: &[u8]) -> Result<(Value, Kind), FrameError> {
    let v = parse_json(frame)?;
    let kind = classify(&v)?;
    Ok((v, kind))
}

/// Parses one frame as JSON, not yet asking what kind of message it is.
pub fn parse_json(frame: &[u8]) -> Result<Value, FrameError> {
    serde_json::from_slice(frame).map_err(|e| FrameError::Parse(e.to_string()))
}

/// `v.pointer(path)` for a constant path without escapes (`~0`, `~1`). serde_json's
/// `pointer` unescapes every segment into a new string; the gateway looks up a few paths
/// in every message, so it uses this instead.
///
/// ```
/// use bulwark_mcp::jsonrpc::at;
/// let v = serde_json::json!({"params": {"name": "echo", "list": [1, 2]}});
/// assert_eq!(at(&v, "/params/name"), v.pointer("/params/name"));
/// assert_eq!(at(&v, "/params/list/1"), Some(&serde_json::json!(2)));
/// assert_eq!(at(&v, "/params/nope"), None);
/// ```
pub fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    if !path.is_empty() && !path.starts_with('/') {
        return None;
    }
    path.split('/').skip(1).try_fold(v, |t, key| match t {
        Value::Object(m) => m.get(key),
        Value::Array(a) => key.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

/// `v` serialised, into a buffer sized from an estimate of its length: what goes out on
/// the wire. (`Value::to_string` formats through `fmt::Write` and grows its buffer as it
/// goes.)
pub fn to_bytes(v: &Value) -> Vec<u8> {
    let hint = crate::port::approx_len(v);
    let mut out = Vec::with_capacity(hint + hint / 8 + 16);
    if serde_json::to_writer(&mut out, v).is_err() {
        // Not reached for a `Value` (its keys are strings); the slow path says the same.
        out = v.to_string().into_bytes();
    }
    out
}

/// [`to_bytes`] as text.
pub fn to_text(v: &Value) -> String {
    String::from_utf8(to_bytes(v)).unwrap_or_else(|_| v.to_string())
}

/// Says what kind of message `v` is.
pub fn classify(v: &Value) -> Result<Kind, FrameError> {
    let Some(m) = v.as_object() else {
        return Err(FrameError::Invalid(if v.is_array() {
            "batches are not accepted; send one message per frame".into()
        } else {
            "a message must be a JSON object".into()
        }));
    };
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(FrameError::Invalid("\"jsonrpc\" must be \"2.0\"".into()));
    }
    let id = match m.get("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id.clone()),
        Some(Value::Null) if !m.contains_key("method") => Some(Value::Null),
        Some(_) => {
            return Err(FrameError::Invalid(
                "\"id\" must be a string or a number".into(),
            ));
        }
    };
    match (m.get("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Kind::Request {
            id,
            method: method.clone(),
        }),
        (Some(Value::String(method)), None) => Ok(Kind::Notification {
            method: method.clone(),
        }),
        (Some(_), _) => Err(FrameError::Invalid("\"method\" must be a string".into())),
        (None, Some(id)) if m.contains_key("result") || m.contains_key("error") => {
            Ok(Kind::Response { id })
        }
        (None, _) => Err(FrameError::Invalid(
            "neither a request (method) nor a response (result or error)".into(),
        )),
    }
}

/// An error response.
pub fn error(id: &Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut e = json!({"code": code, "message": message});
    if let Some(d) = data {
        e["data"] = d;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": e})
}

/// A result response.
pub fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A map key for an id: `1` and `"1"` are different requests.
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        let k = |s: &str| parse(s.as_bytes()).map(|(_, k)| k);
        assert!(matches!(
            k(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Kind::Notification { .. })
        ));
        assert!(matches!(
            k(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Ok(Kind::Response { .. })
        ));
        assert!(matches!(
            k(r#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}"#),
            Ok(Kind::Response { .. })
        ));
        for bad in [
            "[]",
            "1",
            r#"{"id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","method":5}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
        ] {
            assert_eq!(k(bad).unwrap_err().code(), INVALID_REQUEST, "{bad}");
        }
        assert_eq!(k("{").unwrap_err().code(), PARSE_ERROR);
    }
}
