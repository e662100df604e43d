//! Stage 0, lockdown (seed 000's kill switch, the fleet's signed kill command): while it is
//! on, every call is blocked with `LOCKDOWN`. Never reads anything else.

use bulwark_policy::{ReasonCode, Severity, Verdict};

use crate::pipeline::Ctx;
use crate::state::Env;

pub(crate) fn run(ctx: &mut Ctx<'_>, env: &Env<'_>) {
    if ctx.policy.lockdown || env.tables.lockdown() {
        let by = if ctx.policy.lockdown {
            "the policy"
        } else {
            "an operator or the fleet"
        };
        ctx.raise(
            Verdict::Block,
            ReasonCode::Lockdown,
            None,
            Some(Severity::Critical),
            format!("Bulwark is in lockdown (set by {by}): every tool call is refused."),
            Some("Wait for the operator to lift the lockdown.".into()),
        );
    }
}
