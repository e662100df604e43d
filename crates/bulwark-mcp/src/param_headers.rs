//! The `Mcp-Param-*` headers of MCP 2026-07-28: which tool arguments a client mirrors into
//! headers (a property's `x-mcp-header` annotation), how a call's headers are checked against
//! its arguments, and which headers go upstream with the call as the gateway forwards it.
//!
//! Sans-I/O: headers and JSON in, headers or a [`Mismatch`] out. Both ways of serving the
//! revision over HTTP — wrapping a session-era upstream (`http::stateless`) and forwarding to
//! a native one (`http::native`) — and the remote upstream that posts the headers
//! ([`crate::remote`]) share these rules from here, below all of them, so none of them has
//! to reach into another for them.

use axum::http::HeaderMap;
use serde_json::Value;

use crate::client::HeaderList;
use crate::jsonrpc;

/// A call's `Mcp-Param-*` headers disagree with its arguments, or break a bound: what was
/// wrong, for the client (the HTTP front answers 400 with JSON-RPC error -32020).
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{0}")]
pub struct Mismatch(pub String);

/// A header value: optional whitespace trimmed, `=?base64?…?=` decoded.
pub(crate) fn header_value(h: &HeaderMap, name: &str) -> Option<Result<String, ()>> {
    h.get(name).map(decode_header)
}

/// What a header value says: optional whitespace trimmed, `=?base64?…?=` decoded.
fn decode_header(raw: &axum::http::HeaderValue) -> Result<String, ()> {
    let text = raw.to_str().map_err(|_| ())?;
    let text = text.trim_matches([' ', '\t']);
    match text
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        Some(b64) => base64_decode(b64)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or(()),
        None => Ok(text.to_string()),
    }
}

/// Strict standard base64 (with padding), as the revision's header encoding uses.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(4) {
        return None;
    }
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(b.len() / 4 * 3);
    for (i, chunk) in b.chunks(4).enumerate() {
        let last = i == b.len() / 4 - 1;
        let pad = chunk.iter().rev().take_while(|c| **c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for (j, c) in chunk.iter().enumerate() {
            let v = if j >= 4 - pad { 0 } else { val(*c)? };
            n = (n << 6) | v;
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// One tool argument a 2026-07-28 client mirrors into an `Mcp-Param-{name}` header: the
/// property's `x-mcp-header` annotation.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    /// The header, lower-cased, prefix included.
    header: String,
    /// The property's path from `arguments`.
    path: Vec<String>,
}

/// Tools whose header bindings a caller's state keeps at most.
pub const MAX_BOUND_TOOLS: usize = 4096;

/// Bindings one tool may declare that are enforced; a tool declaring more has none
/// enforced and its calls carry none of them (a listing is untrusted input).
const MAX_BINDINGS_PER_TOOL: usize = 64;

/// The longest header name or property name a binding may have.
const MAX_NAME: usize = 128;

/// `Mcp-Param-*` headers a call may carry that no argument is bound to, and their size.
const MAX_UNBOUND: usize = 16;
const MAX_UNBOUND_BYTES: usize = 1024;

/// The bindings of the tools a caller listed, by tool name (bounded).
#[derive(Debug, Default)]
pub struct ToolBindings(std::collections::HashMap<String, Vec<Binding>>);

impl ToolBindings {
    /// Takes in a `tools/list` result.
    pub fn learn(&mut self, result: &Value) {
        let Some(tools) = result.get("tools").and_then(Value::as_array) else {
            return;
        };
        for t in tools {
            let Some(name) = t.get("name").and_then(Value::as_str) else {
                continue;
            };
            if self.0.len() >= MAX_BOUND_TOOLS && !self.0.contains_key(name) {
                break;
            }
            self.0.insert(name.to_string(), bindings(t));
        }
    }

    /// The bindings of tool `name`, as last listed.
    pub fn of(&self, name: &str) -> Vec<Binding> {
        self.0.get(name).cloned().unwrap_or_default()
    }
}

/// The header bindings a tool definition declares. Only valid annotations count (an invalid
/// one is not enforced, as the revision says): a token name, unique in the tool regardless of
/// case, on a string, integer, number or boolean property reached through `properties`
/// keys alone.
pub fn bindings(tool: &Value) -> Vec<Binding> {
    fn walk(schema: &Value, path: &mut Vec<String>, out: &mut Vec<Binding>, depth: usize) {
        let Some(props) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        if depth > 8 {
            return;
        }
        for (key, prop) in props {
            path.push(key.clone());
            if let Some(name) = prop.get("x-mcp-header").and_then(Value::as_str)
                && path.iter().all(|k| k.len() <= MAX_NAME)
            {
                let token = !name.is_empty()
                    && name.len() <= MAX_NAME
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                let primitive = matches!(
                    prop.get("type").and_then(Value::as_str),
                    Some("string" | "integer" | "number" | "boolean")
                );
                if token && primitive {
                    out.push(Binding {
                        header: format!("mcp-param-{}", name.to_ascii_lowercase()),
                        path: path.clone(),
                    });
                }
            }
            walk(prop, path, out, depth + 1);
            path.pop();
        }
    }
    let mut out = Vec::new();
    if let Some(schema) = tool.get("inputSchema") {
        walk(schema, &mut Vec::new(), &mut out, 0);
    }
    if out.len() > MAX_BINDINGS_PER_TOOL {
        return Vec::new();
    }
    // Two properties claiming one header: neither is enforced.
    let mut count: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for b in &out {
        *count.entry(b.header.as_str()).or_default() += 1;
    }
    let dup: Vec<String> = count
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(h, _)| h.to_string())
        .collect();
    out.retain(|b| !dup.contains(&b.header));
    out
}

/// The value a header carries for argument `v`: as it is when it can travel as plain
/// visible ASCII, else `=?base64?…?=`.
fn encode_header(v: &Value) -> Option<String> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Bool(_) | Value::Number(_) => v.to_string(),
        _ => return None,
    };
    let plain = text
        .bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
        && text.trim_matches([' ', '\t']) == text
        && !(text.starts_with("=?base64?") && text.ends_with("?="));
    if plain {
        return Some(text);
    }
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::from("=?base64?");
    for chunk in text.as_bytes().chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out.push_str("?=");
    Some(out)
}

/// The bound `Mcp-Param-*` headers of a call as it goes upstream: built from the arguments
/// the gateway forwards (masked ones masked), never copied from the client's headers.
pub(crate) fn bound_headers(message: &Value, bound: &[Binding]) -> HeaderList {
    let mut out = Vec::new();
    for b in bound {
        let mut arg = jsonrpc::at(message, "/params/arguments");
        for key in &b.path {
            arg = arg.and_then(|a| a.get(key));
        }
        let Some(value) = arg.filter(|a| !a.is_null()).and_then(encode_header) else {
            continue;
        };
        if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::from_bytes(b.header.as_bytes()),
            axum::http::HeaderValue::from_str(&value),
        ) {
            out.push((name, value));
        }
    }
    out
}

/// The client's `Mcp-Param-*` headers that no argument of the tool is bound to: passed on
/// as they are (routers may use them), at most [`MAX_UNBOUND`] of at most
/// [`MAX_UNBOUND_BYTES`] each, each given once.
fn unbound_headers(h: &HeaderMap, bound: &[Binding]) -> Result<HeaderList, Mismatch> {
    let bad = Mismatch;
    let mut out: HeaderList = Vec::new();
    for name in h.keys() {
        let n = name.as_str();
        if !n.starts_with("mcp-param-") || bound.iter().any(|b| b.header == n) {
            continue;
        }
        let mut values = h.get_all(name).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return Err(bad(format!("header {n} is given more than once")));
        };
        if value.len() > MAX_UNBOUND_BYTES {
            return Err(bad(format!(
                "header {n} is longer than {MAX_UNBOUND_BYTES} bytes"
            )));
        }
        if out.len() == MAX_UNBOUND {
            return Err(bad(format!(
                "more than {MAX_UNBOUND} Mcp-Param-* headers name no argument of the tool"
            )));
        }
        out.push((name.clone(), value.clone()));
    }
    Ok(out)
}

/// What a call takes upstream in headers, once checked: its bindings (the values are taken
/// from the forwarded body when it is posted) and the unbound `Mcp-Param-*` headers.
pub(crate) struct Params {
    pub(crate) bound: Vec<Binding>,
    pub(crate) unbound: HeaderList,
}

impl Params {
    /// The headers for `message`, the call as the gateway forwards it: bound ones built
    /// from its arguments; unbound ones only where the value is that of one of its
    /// arguments. A header that mirrors no argument as forwarded (the gateway masked it,
    /// or it never was one) would carry what no decision saw, so it stays here.
    pub(crate) fn headers(&self, message: &Value) -> HeaderList {
        let mut out = bound_headers(message, &self.bound);
        let mut values = Vec::new();
        if let Some(args) = jsonrpc::at(message, "/params/arguments") {
            primitives(args, &mut values, 0);
        }
        for (name, value) in &self.unbound {
            if decode_header(value).is_ok_and(|text| values.contains(&text)) {
                out.push((name.clone(), value.clone()));
            }
        }
        out
    }
}

/// The string, number and boolean values in `v`, as header text (bounded).
fn primitives(v: &Value, out: &mut Vec<String>, depth: usize) {
    if depth > 8 || out.len() >= 256 {
        return;
    }
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Number(_) | Value::Bool(_) => out.push(v.to_string()),
        Value::Array(a) => a.iter().for_each(|x| primitives(x, out, depth + 1)),
        Value::Object(o) => o.values().for_each(|x| primitives(x, out, depth + 1)),
        Value::Null => {}
    }
}

/// Checks a `tools/call`'s `Mcp-Param-*` headers (see [`check_params`],
/// [`unbound_headers`]) and returns what goes upstream with it. The front answers a
/// [`Mismatch`] with HTTP 400 and JSON-RPC error -32020.
pub(crate) fn check(
    h: &HeaderMap,
    message: &Value,
    bound: Vec<Binding>,
) -> Result<Params, Mismatch> {
    check_params(h, message, &bound)?;
    let unbound = unbound_headers(h, &bound)?;
    Ok(Params { bound, unbound })
}

/// Checks a `tools/call`'s `Mcp-Param-*` headers against its arguments: each bound argument
/// that is present and not null must be mirrored, with the same value (numbers compared as
/// numbers).
fn check_params(h: &HeaderMap, message: &Value, bound: &[Binding]) -> Result<(), Mismatch> {
    let bad = Mismatch;
    for b in bound {
        let mut arg = jsonrpc::at(message, "/params/arguments");
        for key in &b.path {
            arg = arg.and_then(|a| a.get(key));
        }
        let Some(arg) = arg.filter(|a| !a.is_null()) else {
            continue;
        };
        if h.get_all(b.header.as_str()).iter().count() > 1 {
            return Err(bad(format!("header {} is given more than once", b.header)));
        }
        let header = match header_value(h, &b.header) {
            Some(Ok(v)) => v,
            Some(Err(())) => return Err(bad(format!("header {} is not readable", b.header))),
            None => {
                return Err(bad(format!(
                    "header {} is required: the tool mirrors argument {} into it",
                    b.header,
                    b.path.join(".")
                )));
            }
        };
        let same = match arg {
            Value::String(s) => *s == header,
            Value::Bool(v) => header == v.to_string(),
            // Integers compare exactly; other numbers as numbers (42.0 is 42).
            Value::Number(n) => match (n.as_i64(), header.parse::<i64>()) {
                (Some(a), Ok(b)) => a == b,
                _ => header
                    .parse::<f64>()
                    .ok()
                    .zip(n.as_f64())
                    .is_some_and(|(a, b)| a == b && a.abs() < 9_007_199_254_740_992.0),
            },
            _ => false,
        };
        if !same {
            return Err(bad(format!(
                "header {} is {header:?} but argument {} is {arg}",
                b.header,
                b.path.join(".")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use serde_json::json;

    fn headers(list: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in list {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn header_values_round_trip() {
        for text in [
            "eu-west",
            "",
            "a b",
            " padded",
            "ünïcödé",
            "line\nbreak",
            "=?base64?x?=",
            "ab",
            "abc",
            "abcd",
        ] {
            let encoded = encode_header(&json!(text)).unwrap();
            let h = headers(&[("mcp-param-x", encoded.as_str())]);
            assert_eq!(
                header_value(&h, "mcp-param-x"),
                Some(Ok(text.to_string())),
                "{encoded}"
            );
        }
        assert_eq!(encode_header(&json!(42)).as_deref(), Some("42"));
        assert_eq!(encode_header(&json!(true)).as_deref(), Some("true"));
        assert_eq!(encode_header(&json!({"a": 1})), None);
    }

    #[test]
    fn bindings_are_valid_annotations_only() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "bad name": {"type": "string", "x-mcp-header": "Not A Token"},
            "obj": {"type": "object", "x-mcp-header": "Obj", "properties": {
                "zone": {"type": "integer", "x-mcp-header": "Zone"}}},
            "a": {"type": "string", "x-mcp-header": "Twice"},
            "b": {"type": "string", "x-mcp-header": "twice"}}}});
        let mut got: Vec<String> = bindings(&tool).into_iter().map(|b| b.header).collect();
        got.sort();
        assert_eq!(got, ["mcp-param-region", "mcp-param-zone"]);
    }

    #[test]
    fn base64_is_strict() {
        assert_eq!(base64_decode("SGVsbG8="), Some(b"Hello".to_vec()));
        assert_eq!(base64_decode("SGVsbG8"), None, "bad padding");
        assert_eq!(base64_decode("SGVs!!!bG8="), None);
        assert_eq!(base64_decode("SG=sbG8="), None);
    }
}
