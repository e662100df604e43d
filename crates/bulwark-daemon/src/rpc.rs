//! JSON-RPC 2.0, one request per line: parsing with the spec's error codes, and replies.
//!
//! Batches are refused: one line is one call, so one slow or hostile batch cannot hold a
//! connection, and every decision has exactly one request id.

use serde_json::{Value, json};

/// Not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON, but not a request.
pub const INVALID_REQUEST: i64 = -32600;
/// No such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The method's parameters are wrong.
pub const INVALID_PARAMS: i64 = -32602;
/// Something failed on this side.
pub const INTERNAL_ERROR: i64 = -32603;
/// Too many requests on this connection (DESIGN §7's `rate_limited`).
pub const RATE_LIMITED: i64 = -32000;
/// The peer may not use this socket.
pub const PEER_REFUSED: i64 = -32001;

/// An error reply.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    /// The JSON-RPC code.
    pub code: i64,
    /// What was wrong, naming the field or limit.
    pub message: String,
    /// Extra detail (a decision, a limit).
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with a code and a message.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// `-32602` naming what was wrong.
    pub fn params(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_PARAMS, message)
    }
}

/// A request.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The id; `None` for a notification (no reply is sent).
    pub id: Option<Value>,
    /// The method.
    pub method: String,
    /// The parameters (`null` when absent).
    pub params: Value,
}

/// Parses one line. The error carries the id when one could be read, so the reply can name it.
///
/// ```
/// use bulwark_daemon::rpc::{parse, INVALID_REQUEST};
/// let r = parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
/// assert_eq!(r.method, "ping");
/// assert_eq!(parse(b"[]").unwrap_err().1.code, INVALID_REQUEST);
/// ```
pub fn parse(line: &[u8]) -> Result<Request, (Option<Value>, RpcError)> {
    let v: Value = serde_json::from_slice(line).map_err(|e| {
        (
            None,
            RpcError::new(PARSE_ERROR, format!("parse error: {e}")),
        )
    })?;
    let obj = match v {
        Value::Object(o) => o,
        Value::Array(_) => {
            return Err((
                None,
                RpcError::new(
                    INVALID_REQUEST,
                    "batches are not accepted: send one request per line",
                ),
            ));
        }
        _ => {
            return Err((
                None,
                RpcError::new(INVALID_REQUEST, "a request is a JSON object"),
            ));
        }
    };
    let id = match obj.get("id") {
        None => None,
        Some(i @ (Value::Number(_) | Value::String(_) | Value::Null)) => Some(i.clone()),
        Some(_) => {
            return Err((
                None,
                RpcError::new(INVALID_REQUEST, "id must be a number, a string or null"),
            ));
        }
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((
            id,
            RpcError::new(INVALID_REQUEST, "jsonrpc must be \"2.0\""),
        ));
    }
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        return Err((
            id,
            RpcError::new(INVALID_REQUEST, "method must be a string"),
        ));
    };
    let params = obj.get("params").cloned().unwrap_or(Value::Null);
    if !matches!(params, Value::Object(_) | Value::Array(_) | Value::Null) {
        return Err((
            id,
            RpcError::new(INVALID_REQUEST, "params must be an object or an array"),
        ));
    }
    Ok(Request {
        id,
        method: method.to_string(),
        params,
    })
}

/// A success reply line (no newline).
pub fn reply(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// An error reply line (no newline). A request whose id could not be read gets `null`.
pub fn error(id: Option<&Value>, e: &RpcError) -> String {
    let mut err = json!({"code": e.code, "message": e.message});
    if let Some(d) = &e.data {
        err["data"] = d.clone();
    }
    json!({"jsonrpc": "2.0", "id": id.cloned().unwrap_or(Value::Null), "error": err}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_shapes() {
        assert_eq!(parse(b"not json").unwrap_err().1.code, PARSE_ERROR);
        assert_eq!(parse(b"3").unwrap_err().1.code, INVALID_REQUEST);
        let (id, e) = parse(br#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#).unwrap_err();
        assert_eq!((id, e.code), (Some(json!(7)), INVALID_REQUEST));
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#)
                .unwrap_err()
                .1
                .code,
            INVALID_REQUEST
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":5}"#)
                .unwrap_err()
                .1
                .code,
            INVALID_REQUEST
        );
        let n = parse(br#"{"jsonrpc":"2.0","method":"ping"}"#).unwrap();
        assert_eq!(n.id, None);
    }

    #[test]
    fn replies() {
        assert_eq!(
            reply(&json!(1), json!({"ok": true})),
            r#"{"id":1,"jsonrpc":"2.0","result":{"ok":true}}"#
        );
        let e = error(None, &RpcError::new(PARSE_ERROR, "parse error"));
        assert!(e.contains(r#""id":null"#) && e.contains("-32700"));
    }
}
