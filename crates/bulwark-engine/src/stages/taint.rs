//! Stage 8, taint (seed 001's revocation matrix): once a session has read private data or
//! untrusted input, some capabilities are revoked for it. Emits `TAINT_REVOKED`. Taint is
//! added at commit, from the tool's class and from content findings; this stage only
//! compares. A grant for the exact call (a person's approval) waives the revocation once.

use bulwark_policy::{ReasonCode, Severity, Taint, Verdict};

use crate::decision::Finding;
use crate::pipeline::Ctx;
use crate::stages::approval::call_digest;
use crate::state::Env;

pub(crate) fn run(ctx: &mut Ctx<'_>, env: &mut Env<'_>) {
    let taint = env.session.taint();
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
    // Seed 001: a person may let one exact call through despite the taint. The grant is
    // bound to the call's digest and used up at commit, only if the call goes through;
    // the rules after this stage still apply.
    let digest = call_digest(
        &ctx.call.tool.name,
        &ctx.call.args,
        &ctx.call.session,
        ctx.call.principal.id.as_deref(),
        &ctx.policy.version,
    );
    let granted = ctx.approval.as_deref() == Some(digest.as_str())
        || env.tables.granted(&digest, ctx.now.mono_ms);
    ctx.call_digest = Some(digest);
    if granted {
        ctx.waived = true;
        ctx.approved = true;
        ctx.explain(|| "taint revocation waived: a human approved this exact call".into());
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
