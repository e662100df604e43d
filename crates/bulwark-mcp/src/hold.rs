//! Calls that wait for a person (DESIGN §6 stage 11, issue 9): how the gateway asks for an
//! approval in the protocol the client speaks, and what it answers when the person has.
//!
//! - A 2026-07-28 client that declares elicitation gets an `InputRequiredResult` asking a
//!   yes/no question; its retry carries the answer (`inputResponses`) and the request id
//!   (`requestState`), and goes on if the answer is yes.
//! - A legacy client that declared elicitation in `initialize` is sent an
//!   `elicitation/create` request while the call waits.
//! - Any other client's call waits — bounded by the approval timeout — for a decision from
//!   another channel (console, CLI, inbox, webhook), then goes on or gets -32005.

use bulwark_approvals::Request;

use serde_json::{Value, json};

use crate::jsonrpc;

/// The `inputRequests` key and elicitation id prefix that are the gateway's own.
pub const KEY: &str = "bulwark.approval";
/// How the gateway's `requestState` starts.
pub const STATE_PREFIX: &str = "bulwark-approval:";
/// The id prefix of the gateway's own `elicitation/create` requests.
pub const ELICIT_PREFIX: &str = "bulwark-approval-";

/// A call held for a person.
#[derive(Debug)]
pub struct Held {
    /// The client's request, as it came.
    pub msg: Value,
    /// Its id.
    pub id: Value,
    /// The approval request.
    pub request: String,
    /// When the gateway stops waiting (its own clock).
    pub deadline_ms: u64,
    /// The decision that asked for a person.
    pub decision: bulwark_engine::Decision,
    /// The id of the `elicitation/create` the client was sent for it, if any: only an
    /// answer to that id counts.
    pub elicit: Option<String>,
    /// Being looked at (by the ticker, or by an answer that just came): nobody else
    /// settles it meanwhile.
    pub busy: bool,
}

/// The question a person is asked, in the client.
pub fn question(r: &Request) -> String {
    let args = serde_json::to_string(&r.args).unwrap_or_default();
    let args: String = args.chars().take(1500).collect();
    format!(
        "Bulwark: approve this call to {tool}{server}?\nArguments: {args}\nWhy it needs you: {reason}\nRequest {id}; it expires without an answer.",
        tool = r.tool,
        server = r
            .server
            .as_deref()
            .map(|s| format!(" on {s}"))
            .unwrap_or_default(),
        reason = r.reason,
        id = r.id,
    )
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "approve": {
                "type": "boolean",
                "title": "Approve this exact call",
                "description": "Yes lets this call through once; no refuses it.",
                "default": false
            }
        },
        "required": ["approve"]
    })
}

/// The legacy `elicitation/create` request for `r`, sent with id `id`.
pub fn elicitation(id: &str, r: &Request) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "elicitation/create",
        "params": {"message": question(r), "requestedSchema": schema()},
    })
}

/// The 2026-07-28 `InputRequiredResult` for `r`, answering request `id`.
pub fn input_required(id: &Value, r: &Request) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {
            "resultType": "input_required",
            "inputRequests": {
                KEY: {
                    "method": "elicitation/create",
                    "params": {"mode": "form", "message": question(r), "requestedSchema": schema()},
                }
            },
            "requestState": format!("{STATE_PREFIX}{}", r.id),
        },
    })
}

/// Whether a 2026-07-28 request's client can answer an elicitation.
pub fn modern_elicits(msg: &Value) -> bool {
    let meta = jsonrpc::at(msg, "/params/_meta");
    meta.and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .and_then(Value::as_str)
        .is_some_and(|v| v >= "2026-07-28")
        && meta
            .and_then(|m| m.get("io.modelcontextprotocol/clientCapabilities"))
            .and_then(|c| c.get("elicitation"))
            .is_some()
}

/// An elicitation answer: `Some(true)` approve, `Some(false)` deny, `None` no answer.
pub fn answer(result: &Value) -> Option<bool> {
    match result.get("action").and_then(Value::as_str)? {
        "accept" => Some(
            jsonrpc::at(result, "/content/approve")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        ),
        "decline" | "cancel" => Some(false),
        _ => None,
    }
}

/// Takes the gateway's own answer out of a 2026-07-28 retry: the request id from
/// `requestState` and the answer from `inputResponses`, both removed from `msg` so the
/// server sees the call as first sent (another `requestState` is the server's and stays).
pub fn take_retry(msg: &mut Value) -> Option<(String, Option<bool>)> {
    let params = msg.get_mut("params")?.as_object_mut()?;
    let id = params
        .get("requestState")
        .and_then(Value::as_str)
        .and_then(|s| s.strip_prefix(STATE_PREFIX))
        .map(str::to_string)?;
    params.remove("requestState");
    let mut said = None;
    if let Some(responses) = params
        .get_mut("inputResponses")
        .and_then(Value::as_object_mut)
    {
        said = responses.remove(KEY).as_ref().and_then(answer);
        if responses.is_empty() {
            params.remove("inputResponses");
        }
    }
    Some((id, said))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_gives_up_only_what_is_ours() {
        let mut m = json!({"params": {"name": "t", "arguments": {},
            "requestState": "bulwark-approval:abc",
            "inputResponses": {KEY: {"action": "accept", "content": {"approve": true}},
                               "theirs": {"action": "accept"}}}});
        assert_eq!(take_retry(&mut m), Some(("abc".into(), Some(true))));
        assert!(m["params"].get("requestState").is_none());
        assert_eq!(
            m["params"]["inputResponses"],
            json!({"theirs": {"action": "accept"}})
        );
        let mut theirs = json!({"params": {"requestState": "server-state"}});
        assert_eq!(take_retry(&mut theirs), None);
        assert_eq!(theirs["params"]["requestState"], "server-state");
        assert_eq!(
            answer(&json!({"action": "accept", "content": {"approve": false}})),
            Some(false)
        );
        assert_eq!(answer(&json!({"action": "accept"})), Some(false));
        assert_eq!(answer(&json!({"action": "decline"})), Some(false));
    }
}
