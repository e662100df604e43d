//! Stage 4, loop (seed 002 filter 35): the same tool with the same normalised arguments
//! `max_repeats` times within the window is a loop, and so is the same result
//! `max_same_result` times. Emits `LOOP_DETECTED`. Arguments are normalised to canonical
//! JSON, so key order and whitespace do not make a repeat look new.
//!
//! A repeat with the workspace changed in between is not a loop: an edit → test → edit →
//! test cycle runs the same test command again and again, and gets the same failure back
//! until the edit that fixes it, and that is ordinary work. So a call that writes files
//! (`fs.write`) clears the session's call and result history when it goes through — unless
//! it is the very write that last cleared it, since writing the same thing again changes
//! nothing and a loop of identical write → run pairs is still a loop.

use bulwark_policy::{Capability, ReasonCode, Severity, Verdict};

use crate::call::Direction;
use crate::canonical::fingerprint;
use crate::pipeline::Ctx;
use crate::session::Session;
use crate::state::Env;

fn call_print(ctx: &Ctx<'_>) -> u64 {
    fingerprint(&ctx.tool_lc(), &ctx.call.args)
}

fn result_print(ctx: &Ctx<'_>) -> u64 {
    fingerprint(&ctx.tool_lc(), ctx.call.payload())
}

pub(crate) fn run(ctx: &mut Ctx<'_>, env: &mut Env<'_>) {
    let lp = ctx.policy.loop_guard;
    let now = ctx.now.mono_ms;
    let (limit, print, what) = match ctx.call.direction {
        Direction::Response => (lp.max_same_result, result_print(ctx), "result"),
        _ => (lp.max_repeats, call_print(ctx), "call"),
    };
    if limit == 0 {
        return;
    }
    ctx.loop_print = Some(print);
    let session = &mut *env.session;
    let history = if ctx.call.direction == Direction::Response {
        &session.recent_results
    } else {
        &session.recent_calls
    };
    let seen = history
        .iter()
        .filter(|(f, t)| *f == print && now.saturating_sub(*t) <= lp.window_ms)
        .count();
    ctx.explain(|| format!("{} identical {what}s in the window", seen + 1));
    if seen as u64 + 1 >= u64::from(limit) {
        ctx.raise(
            Verdict::Block,
            ReasonCode::LoopDetected,
            None,
            Some(Severity::Medium),
            format!(
                "The same {what} has repeated {} times within {} s: this looks like a loop.",
                seen + 1,
                lp.window_ms / 1000
            ),
            Some("Stop repeating the call; change the approach or ask the user.".into()),
        );
    }
}

pub(crate) fn commit_call(ctx: &Ctx<'_>, env: &mut Env<'_>) {
    let print = ctx.loop_print.unwrap_or_else(|| call_print(ctx));
    let now = ctx.now.mono_ms;
    let session = &mut *env.session;
    if ctx.caps.contains(Capability::FsWrite) && session.last_change != Some(print) {
        session.recent_calls.clear();
        session.recent_results.clear();
        session.last_change = Some(print);
    }
    Session::remember(&mut session.recent_calls, print, now);
}

pub(crate) fn commit_result(ctx: &Ctx<'_>, env: &mut Env<'_>) {
    let print = ctx.loop_print.unwrap_or_else(|| result_print(ctx));
    let now = ctx.now.mono_ms;
    Session::remember(&mut env.session.recent_results, print, now);
}
