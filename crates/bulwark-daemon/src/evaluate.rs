//! DefenseClaw's `evaluate` (seed 000): its parameters checked and turned into a [`Call`], and
//! a [`Decision`] turned into its reply.
//!
//! The wire names are the seed's. The reply keeps the seed's fields — `verdict` (`ALLOW`,
//! `BLOCK`, `WARN`, `PENDING`), `reason` (the reason code), `rule_id`, `severity`,
//! `message`, `cache` — and adds every field of Bulwark's decision JSON except its
//! `reason` sentence, which is `message` here.

use bulwark_engine::{Call, CapSet, Decision, Direction, Principal, Profile, ToolRef, Verdict};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::rpc::RpcError;

/// Longest tool name accepted (seed 000's ASCII-only, bounded names).
pub const MAX_TOOL_NAME: usize = 128;
/// Longest destination accepted.
pub const MAX_DESTINATION: usize = 2048;
/// Longest session id accepted.
pub const MAX_SESSION_ID: usize = 128;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    tool_name: Value,
    tool_hash: Value,
    capabilities: Value,
    session_id: Value,
    #[serde(default)]
    destination: Option<Value>,
    #[serde(default)]
    direction: Option<Value>,
    #[serde(default)]
    content: Option<Value>,
}

/// Checks `evaluate`'s parameters and builds the call. `max_content` is the policy's limit
/// for the direction's payload (`max_args_bytes` for a request, `max_result_bytes` for a
/// response); `principal` comes from the peer's credentials.
pub fn call_from_params(
    params: &Value,
    max_content: (usize, usize),
    principal: Principal,
) -> Result<Call, RpcError> {
    let p: Params = serde_json::from_value(params.clone())
        .map_err(|e| RpcError::params(format!("evaluate: {e}")))?;
    let tool_name = match &p.tool_name {
        Value::String(s) if !s.is_empty() => s.clone(),
        _ => return Err(RpcError::params("tool_name: expected a non-empty string")),
    };
    if tool_name.len() > MAX_TOOL_NAME {
        return Err(RpcError::params(format!(
            "tool_name: longer than {MAX_TOOL_NAME} bytes"
        )));
    }
    if !tool_name.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(RpcError::params(
            "tool_name: only printable ASCII without spaces is accepted",
        ));
    }
    let tool_hash = match &p.tool_hash {
        Value::String(h) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
            h.to_ascii_lowercase()
        }
        _ => {
            return Err(RpcError::params(
                "tool_hash: expected 64 hexadecimal digits (the SHA-256 of tool_name)",
            ));
        }
    };
    let bits = p
        .capabilities
        .as_u64()
        .filter(|b| *b <= 0x7f)
        .ok_or_else(|| {
            RpcError::params(
                "capabilities: expected DefenseClaw bit flags 0..=0x7F (READ_FS 0x01, WRITE_FS 0x02, EXEC_SHELL 0x04, NET_FETCH 0x08, SEND_MSG 0x10, ACTUATE 0x20, SENSOR_READ 0x40)",
            )
        })?;
    let session = match &p.session_id {
        Value::Number(n) => n.to_string(),
        Value::String(s)
            if !s.is_empty()
                && s.len() <= MAX_SESSION_ID
                && s.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            s.clone()
        }
        _ => {
            return Err(RpcError::params(format!(
                "session_id: expected a number or a printable ASCII string of at most {MAX_SESSION_ID} bytes"
            )));
        }
    };
    let destination = match &p.destination {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) if d.len() <= MAX_DESTINATION => Some(d.clone()),
        Some(Value::String(_)) => {
            return Err(RpcError::params(format!(
                "destination: longer than {MAX_DESTINATION} bytes"
            )));
        }
        Some(_) => return Err(RpcError::params("destination: expected a string")),
    };
    let direction = match &p.direction {
        None | Some(Value::Null) => Direction::Request,
        Some(v) if v.as_u64() == Some(0) => Direction::Request,
        Some(v) if v.as_u64() == Some(1) => Direction::Response,
        Some(_) => {
            return Err(RpcError::params(
                "direction: expected 0 (request) or 1 (response)",
            ));
        }
    };
    let (max_content, limit_name) = match direction {
        Direction::Request => (max_content.0, "max_args_bytes"),
        _ => (max_content.1, "max_result_bytes"),
    };
    let content = match &p.content {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) if c.len() <= max_content => Some(c.clone()),
        Some(Value::String(_)) => {
            return Err(RpcError::params(format!(
                "content: longer than {max_content} bytes (policy limits.{limit_name})"
            )));
        }
        Some(_) => return Err(RpcError::params("content: expected a string")),
    };
    let mut args = serde_json::Map::new();
    let mut result = None;
    match (direction, content) {
        (Direction::Request, Some(c)) => {
            args.insert("content".into(), Value::String(c));
        }
        (_, Some(c)) => result = Some(json!({ "content": c })),
        (_, None) => {}
    }
    if direction == Direction::Response && result.is_none() {
        result = Some(json!({}));
    }
    Ok(Call {
        principal,
        session,
        tool: ToolRef {
            name: tool_name,
            server: None,
            hash: Some(tool_hash),
        },
        direction,
        args: Value::Object(args),
        result,
        definition: None,
        destination,
        declared_capabilities: Some(CapSet::from_defenseclaw(bits as u8).unwrap_or_default()),
        profile: Profile::Edge,
    })
}

/// Seed 000's verdict for a decision. `approve` is `PENDING` (a human has not answered);
/// a speculative fleet allow is `PENDING` too, with `decision: allow` saying the call may
/// proceed; `mask` is `WARN` with the masked payload in `masked`.
pub fn verdict(d: &Decision) -> &'static str {
    match d.decision {
        Verdict::Block => "BLOCK",
        Verdict::Approve => "PENDING",
        _ if d.pending => "PENDING",
        Verdict::Warn | Verdict::Mask => "WARN",
        Verdict::Allow => "ALLOW",
    }
}

/// The reply to `evaluate`.
pub fn reply(d: &Decision) -> Value {
    let mut v = serde_json::to_value(d).unwrap_or_else(|_| json!({}));
    let message = d.reason.clone();
    if let Value::Object(m) = &mut v {
        m.insert("verdict".into(), json!(verdict(d)));
        m.insert(
            "reason".into(),
            json!(d.reason_code.map_or("NONE", |c| c.as_str())),
        );
        m.insert("message".into(), json!(message));
        m.insert(
            "cache".into(),
            json!(if d.cache_hit { "hit" } else { "miss" }),
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: Value) -> Result<Call, RpcError> {
        call_from_params(&v, (1 << 20, 1 << 20), Principal::default())
    }

    #[test]
    fn the_seed_example_parses() {
        let c = p(json!({
            "tool_name": "call_api",
            "tool_hash": "515c7731d6367104f1431af261488829f178f87e0930fb7ca77785ba3ef19129",
            "capabilities": 8, "destination": "1.1.1.1", "session_id": 1, "direction": 0,
            "content": "Authorization: Bearer sk-proj-abc123..."
        }))
        .unwrap();
        assert_eq!(c.session, "1");
        assert_eq!(c.args["content"], "Authorization: Bearer sk-proj-abc123...");
        assert_eq!(c.destination.as_deref(), Some("1.1.1.1"));
    }

    #[test]
    fn bad_params_name_the_field() {
        let base = json!({"tool_name": "x", "tool_hash": "a".repeat(64), "capabilities": 1, "session_id": 1});
        for (field, value, want) in [
            ("tool_name", json!(""), "tool_name"),
            ("tool_name", json!("a b"), "tool_name"),
            ("tool_name", json!("é"), "tool_name"),
            ("tool_hash", json!("abc"), "tool_hash"),
            ("capabilities", json!(128), "capabilities"),
            ("capabilities", json!(-1), "capabilities"),
            ("session_id", json!({}), "session_id"),
            ("direction", json!(2), "direction"),
            ("destination", json!("a".repeat(3000)), "destination"),
            ("content", json!(5), "content"),
        ] {
            let mut v = base.clone();
            v[field] = value;
            let e = p(v).unwrap_err();
            assert!(e.message.starts_with(want), "{field}: {}", e.message);
        }
        let mut v = base.clone();
        v["extra"] = json!(1);
        assert!(p(v).is_err());
        let mut v = base;
        v.as_object_mut().unwrap().remove("session_id");
        assert!(p(v).unwrap_err().message.contains("session_id"));
    }
}
