//! Stage 11, approval (seed 002's human-in-the-loop, seed 003's inbox): tools the policy
//! marks, and anything an earlier stage decided needs a human, become `approve` — unless a
//! single-use approval granted for this exact call (a digest of tool, canonical arguments,
//! session, principal and policy version) comes with it. An approval only lifts `approve`;
//! it never lowers a block.

use bulwark_policy::{ReasonCode, Severity, Verdict};
use serde_json::json;

use crate::canonical::{sha256_hex, to_string};
use crate::pipeline::Ctx;
use crate::state::Env;

/// The digest an approval for this call is bound to.
pub fn call_digest(
    tool: &str,
    args: &serde_json::Value,
    session: &str,
    principal: Option<&str>,
    policy_version: &str,
) -> String {
    let doc = json!({"tool": tool.to_lowercase(), "args": args, "session": session, "principal": principal, "policy_version": policy_version});
    sha256_hex(to_string(&doc).as_bytes())
}

pub(crate) fn run(ctx: &mut Ctx<'_>, env: &mut Env<'_>) {
    let name = &ctx.call.tool.name;
    let by_tool = ctx.spec.is_some_and(|s| s.approval);
    let by_glob = ctx.policy.approvals.tools.iter().any(|g| g.matches(name));
    if by_tool || by_glob {
        ctx.raise(
            Verdict::Approve,
            ReasonCode::PolicyTable,
            None,
            Some(Severity::High),
            format!("Calls to {name:?} need a human's approval."),
            Some("Wait for the approval, or ask the user to approve this exact call.".into()),
        );
    }
    if ctx.outcome.verdict != Verdict::Approve {
        return;
    }
    let digest = call_digest(
        name,
        &ctx.call.args,
        &ctx.call.session,
        ctx.call.principal.id.as_deref(),
        &ctx.policy.version,
    );
    let now = ctx.now.mono_ms;
    if ctx.fleet_answer.is_some_and(|a| a.approved) {
        // The grant was used by the decision this one completes.
        ctx.outcome = ctx.below_approve.clone();
        ctx.approved = true;
        ctx.call_digest = Some(digest);
        return;
    }
    let granted =
        ctx.approval.as_deref() == Some(digest.as_str()) || env.tables.granted(&digest, now);
    if granted {
        env.tables.use_grant(&digest);
        ctx.outcome = ctx.below_approve.clone();
        ctx.approved = true;
        ctx.explain(|| "a human approved this exact call".into());
    } else {
        ctx.explain(|| format!("waiting for approval of {}", &digest[..12]));
    }
    ctx.call_digest = Some(digest);
}
