//! Stage 9, sequences (seed 000 stage 5): capability sequences from policy, matched as
//! subsequences within a window of calls and time, so other calls in between do not hide
//! them. Emits `CAP_SEQUENCE`.
//!
//! Each sequence is an automaton with one slot per step: slot k holds the latest start of
//! any match of the first k+1 steps. A call with capability family `steps[k]` extends
//! slot k-1 into slot k. Keeping the latest start (not the first) leaves the most room in
//! the window, so a match is found whenever one exists. State per sequence: one
//! `(time, call number)` pair per step.

use bulwark_policy::{ReasonCode, Sequence};

use crate::decision::Finding;
use crate::pipeline::Ctx;
use crate::state::Env;

fn in_window(seq: &Sequence, start: (u64, u64), now_ms: u64, call_no: u64) -> bool {
    now_ms.saturating_sub(start.0) <= seq.within_ms
        && call_no.saturating_sub(start.1) < u64::from(seq.within_calls)
}

pub(crate) fn run(ctx: &mut Ctx<'_>, env: &mut Env<'_>) {
    let now = ctx.now.mono_ms;
    let policy = ctx.policy;
    let session = &mut *env.session;
    let call_no = session.calls + 1;
    let progress = session.sequences_for(policy);
    for (seq, prog) in policy.sequences.iter().zip(progress.iter()) {
        let last = seq.steps.len() - 1;
        if !ctx.caps.has_family(&seq.steps[last]) {
            continue;
        }
        let Some(start) = prog.best[last - 1] else {
            continue;
        };
        if !in_window(seq, start, now, call_no) {
            continue;
        }
        ctx.findings.push(Finding::new(seq.id.clone(), "sequence"));
        ctx.raise(
            seq.action,
            ReasonCode::CapSequence,
            Some(seq.id.clone()),
            Some(seq.severity),
            seq.reason.clone(),
            seq.safer_alternative.clone(),
        );
        ctx.explain(|| {
            format!(
                "{} completed ({} calls, {} ms after its first step)",
                seq.id,
                call_no - start.1 + 1,
                now - start.0
            )
        });
    }
}

pub(crate) fn commit(ctx: &Ctx<'_>, env: &mut Env<'_>) {
    let now = ctx.now.mono_ms;
    let policy = ctx.policy;
    let session = &mut *env.session;
    let call_no = session.calls + 1;
    let progress = session.sequences_for(policy);
    for (seq, prog) in policy.sequences.iter().zip(progress.iter_mut()) {
        // Highest step first, so one call does not advance two steps.
        for k in (0..seq.steps.len()).rev() {
            if !ctx.caps.has_family(&seq.steps[k]) {
                continue;
            }
            let candidate = if k == 0 {
                Some((now, call_no))
            } else {
                prog.best[k - 1].filter(|s| in_window(seq, *s, now, call_no))
            };
            if let Some(c) = candidate
                && prog.best[k].is_none_or(|b| c > b)
            {
                prog.best[k] = Some(c);
            }
        }
    }
}
