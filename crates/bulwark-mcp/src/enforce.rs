//! A decision turned into what the MCP client receives (DESIGN §7).
//!
//! A refused call or result is answered with a JSON-RPC error whose `message` says what was
//! refused, why and what to do instead ([`explain`]), and whose `data` is the decision JSON
//! — never the refused payload — or, when the policy says `mcp.block_as: result`, with a
//! tool result marked `isError` whose text is the reason, for clients that show JSON-RPC
//! errors poorly to the model.

use bulwark_engine::{Decision, Direction, ReasonCode, Verdict};
use bulwark_policy::BlockAs;
use serde_json::{Value, json};

use crate::jsonrpc;

/// The JSON-RPC error code and message for a refused request or result.
pub fn code_for(d: &Decision, direction: Direction) -> (i64, &'static str) {
    match d.reason_code {
        Some(ReasonCode::RateLimit) => (-32000, "rate_limited"),
        Some(ReasonCode::LoopDetected) => (-32002, "loop_detected"),
        // As a server answers a call to a tool it does not have (MCP: invalid params).
        Some(ReasonCode::UnknownTool) => (-32602, "unknown_tool"),
        Some(ReasonCode::ApprovalDenied | ReasonCode::ApprovalTimeout) => {
            (-32005, "approval_denied")
        }
        _ if d.decision == Verdict::Approve => (-32005, "approval_denied"),
        Some(ReasonCode::RugPull | ReasonCode::ToolPoisoning) => (-32096, "tool_quarantined"),
        // A tool withheld for what its definition said (injection, a secret) is quarantined
        // too, whatever the code it was withheld with.
        _ if d.findings.iter().any(|f| f.category == "integrity") => (-32096, "tool_quarantined"),
        _ if direction == Direction::Response => (-32095, "result_blocked"),
        Some(ReasonCode::ContentBlock | ReasonCode::PiiDetected) => (-32004, "dlp_blocked"),
        _ => (-32099, "blocked"),
    }
}

/// What the model reads — clients such as Claude Code and Cursor show it only the error's
/// `message` — in two sentences: what was refused and why, then the safer alternative
/// (`Bulwark blocked execute_sql: DROP DATABASE destroys every table at once. Instead: …`).
pub fn explain(d: &Decision, direction: Direction) -> String {
    let tool = if d.tool.is_empty() {
        "the call"
    } else {
        &d.tool
    };
    let what = match direction {
        Direction::Response => format!("the result of {tool}"),
        _ => tool.to_string(),
    };
    let mut s = format!("Bulwark blocked {what}: {}", sentence(&d.reason));
    if let Some(id) = &d.rule_id {
        s.push_str(&format!(" [{id}]"));
    }
    if d.decision == Verdict::Approve {
        s.push_str(" It needs a person's approval, and no approval channel answered.");
    }
    let alt = d
        .safer_alternative
        .as_deref()
        .map(str::trim)
        .filter(|a| !a.is_empty());
    let alt = alt.unwrap_or(match direction {
        Direction::Response => {
            "Do not retry to get this content; tell the user what was withheld and why."
        }
        _ => "Tell the user what you wanted to do and why, and let them decide.",
    });
    s.push_str(&format!(" Instead: {}", sentence(alt)));
    s
}

/// `text` as one sentence: trimmed, ending with a full stop.
fn sentence(text: &str) -> String {
    let t = text.trim();
    if t.ends_with(['.', '!', '?']) {
        t.to_string()
    } else {
        format!("{t}.")
    }
}

/// The response to request `id` when `d` refuses it (or refuses its result).
pub fn refusal(id: &Value, d: &Decision, direction: Direction, block_as: BlockAs) -> Value {
    let data: Value = serde_json::to_value(d).unwrap_or_else(|_| json!({"decision": "block"}));
    match block_as {
        BlockAs::Error => {
            let (code, _) = code_for(d, direction);
            jsonrpc::error(id, code, &explain(d, direction), Some(data))
        }
        BlockAs::Result => jsonrpc::result(
            id,
            json!({
                "content": [{"type": "text", "text": explain(d, direction)}],
                "isError": true,
                "_meta": {"dev.bulwark/decision": data},
            }),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(verdict: Verdict, code: ReasonCode) -> Decision {
        let mut d = Decision::invalid_input("x", "v");
        d.decision = verdict;
        d.reason_code = Some(code);
        d
    }

    #[test]
    fn codes_follow_the_table() {
        let req = Direction::Request;
        for (code, want) in [
            (ReasonCode::RateLimit, -32000),
            (ReasonCode::LoopDetected, -32002),
            (ReasonCode::ContentBlock, -32004),
            (ReasonCode::PiiDetected, -32004),
            (ReasonCode::ApprovalTimeout, -32005),
            (ReasonCode::RugPull, -32096),
            (ReasonCode::ToolPoisoning, -32096),
            (ReasonCode::Rule, -32099),
            (ReasonCode::SsrfBlock, -32099),
        ] {
            assert_eq!(code_for(&decision(Verdict::Block, code), req).0, want);
        }
        let d = decision(Verdict::Block, ReasonCode::Injection);
        assert_eq!(code_for(&d, Direction::Response).0, -32095);
        let d = decision(Verdict::Approve, ReasonCode::Rule);
        assert_eq!(code_for(&d, req).0, -32005);
    }

    #[test]
    fn a_result_refusal_is_an_error_result() {
        let d = decision(Verdict::Block, ReasonCode::Rule);
        let r = refusal(&json!(3), &d, Direction::Request, BlockAs::Result);
        assert_eq!(r["result"]["isError"], true);
        assert!(
            r["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("Bulwark blocked")
        );
        let mut d = d;
        d.tool = "run".into();
        d.safer_alternative = None;
        let r = refusal(&json!(3), &d, Direction::Request, BlockAs::Error);
        assert_eq!(r["error"]["code"], -32099);
        // The message alone tells the model why and what to do instead.
        assert_eq!(
            r["error"]["message"],
            "Bulwark blocked run: x. Instead: Tell the user what you wanted to do and why, and let them decide."
        );
        assert_eq!(r["error"]["data"]["decision"], "block");
    }
}
