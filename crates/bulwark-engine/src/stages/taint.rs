//! Stage 8, taint (seed 001's revocation matrix): once a session has read private data or
//! untrusted input, some capabilities are revoked for it. Emits `TAINT_REVOKED`. Taint is
//! added at commit, from the tool's class and from content findings; this stage only
//! compares.

use bulwark_policy::{ReasonCode, Severity, Taint, Verdict};

use crate::decision::Finding;
use crate::pipeline::Ctx;
use crate::state::Env;

pub(crate) fn run(ctx: &mut Ctx<'_>, env: &mut Env<'_>) {
    let taint = env.session.taint;
    let forbidden = ctx.policy.taint.forbidden(taint).intersection(ctx.caps);
    ctx.explain(|| {
        format!(
            "session taint [{}]",
            taint
                .iter()
                .map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    });
    if forbidden.is_empty() {
        return;
    }
    let read = match (
        taint.contains(Taint::PrivateData),
        taint.contains(Taint::UntrustedInput),
    ) {
        (true, true) => "private data and untrusted input",
        (true, false) => "private data",
        _ => "untrusted input",
    };
    let caps = forbidden.names().join(", ");
    ctx.findings.push(Finding::new("taint.revoked", "taint"));
    ctx.raise(
        Verdict::Block,
        ReasonCode::TaintRevoked,
        None,
        Some(Severity::High),
        format!("This session has read {read}, so {caps} is revoked for it."),
        Some("Ask the user to approve this exact call, or continue in a fresh session that has not read that content.".into()),
    );
}
