//! The pipeline's stages, one module each, in DESIGN §5's order.
//!
//! Requests and proposals run every stage. Responses run lockdown, validate, classify,
//! loop, content and rules; definitions run lockdown, validate, integrity, content and
//! rules. A stage that blocks ends the run; [`commit`] then updates session state from
//! the final decision.

pub mod approval;
pub mod classify;
pub mod content;
pub mod destinations;
pub mod guard;
pub mod integrity;
pub mod lockdown;
pub mod loop_guard;
pub mod rate;
pub mod rules;
pub mod sequences;
pub mod taint;
pub mod validate;
pub mod verdict_cache;

use crate::call::Direction;
use crate::pipeline::Ctx;
use crate::state::Env;

/// A pipeline stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// 0. Kill switch.
    Lockdown,
    /// 1. Shape and size.
    Validate,
    /// 2. Capabilities, destinations, paths, facts.
    Classify,
    /// 3. Token buckets.
    Rate,
    /// 4. Repeated calls and results.
    Loop,
    /// 5. Quarantine, pins, schemas.
    Integrity,
    /// 6. Secrets, PII, injection, poisoning.
    Content,
    /// 7. SSRF and allowlists.
    Destinations,
    /// 8. The revocation matrix.
    Taint,
    /// 9. Capability sequences.
    Sequences,
    /// 10. The rule catalogue.
    Rules,
    /// 10b. The deep path: the learned injection guard, when the rest left it undecided.
    Guard,
    /// 11. Human approval.
    Approval,
    /// 12. Fleet verdicts.
    VerdictCache,
}

impl Stage {
    /// The stage's name in `policy explain`.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Lockdown => "lockdown",
            Stage::Validate => "validate",
            Stage::Classify => "classify",
            Stage::Rate => "rate",
            Stage::Loop => "loop",
            Stage::Integrity => "integrity",
            Stage::Content => "content",
            Stage::Destinations => "destinations",
            Stage::Taint => "taint",
            Stage::Sequences => "sequences",
            Stage::Rules => "rules",
            Stage::Guard => "guard",
            Stage::Approval => "approval",
            Stage::VerdictCache => "verdict_cache",
        }
    }
}

const ACTING: &[Stage] = &[
    Stage::Lockdown,
    Stage::Validate,
    Stage::Classify,
    Stage::Rate,
    Stage::Loop,
    Stage::Integrity,
    Stage::Content,
    Stage::Destinations,
    Stage::Taint,
    Stage::Sequences,
    Stage::Rules,
    Stage::Guard,
    Stage::Approval,
    Stage::VerdictCache,
];
const RESPONSE: &[Stage] = &[
    Stage::Lockdown,
    Stage::Validate,
    Stage::Classify,
    Stage::Loop,
    Stage::Content,
    Stage::Rules,
    Stage::Guard,
];
const DEFINITION: &[Stage] = &[
    Stage::Lockdown,
    Stage::Validate,
    Stage::Integrity,
    Stage::Content,
    Stage::Rules,
    Stage::Guard,
];

/// The stages a direction runs, in order.
pub fn order(d: Direction) -> &'static [Stage] {
    match d {
        Direction::Request | Direction::Proposal => ACTING,
        Direction::Response => RESPONSE,
        Direction::Definition => DEFINITION,
    }
}

pub(crate) fn run(stage: Stage, ctx: &mut Ctx<'_>, env: &mut Env<'_>) {
    match stage {
        Stage::Lockdown => lockdown::run(ctx, env),
        Stage::Validate => validate::run(ctx),
        Stage::Classify => classify::run(ctx, env),
        Stage::Rate => rate::run(ctx, env),
        Stage::Loop => loop_guard::run(ctx, env),
        Stage::Integrity => integrity::run(ctx, env),
        Stage::Content => content::run(ctx, env),
        Stage::Destinations => destinations::run(ctx),
        Stage::Taint => taint::run(ctx, env),
        Stage::Sequences => sequences::run(ctx, env),
        Stage::Rules => rules::run(ctx, env),
        Stage::Guard => guard::run(ctx, env),
        Stage::Approval => approval::run(ctx, env),
        Stage::VerdictCache => verdict_cache::run(ctx, env),
    }
}

/// Updates session state once the decision is final. Only what actually happens changes
/// state: a blocked call adds no taint, no loop or sequence history and pins nothing
/// (a blocked definition is withheld instead).
pub(crate) fn commit(ctx: &mut Ctx<'_>, env: &mut Env<'_>, allowed: bool) {
    rules::commit(ctx, env);
    match ctx.call.direction {
        Direction::Request | Direction::Proposal => {
            if !allowed {
                return;
            }
            if ctx.waived
                && let Some(d) = &ctx.call_digest
            {
                env.tables.use_grant(d);
            }
            loop_guard::commit_call(ctx, env);
            sequences::commit(ctx, env);
            env.session.remember_files(&ctx.written);
            env.session.calls += 1;
            if !ctx.hold_taint {
                env.session.add_taint(ctx.taint_out);
            }
        }
        Direction::Response => {
            if !allowed {
                return;
            }
            loop_guard::commit_result(ctx, env);
            if !ctx.hold_taint {
                env.session.add_taint(ctx.taint_out);
            }
        }
        Direction::Definition => integrity::commit_definition(ctx, env, allowed),
    }
}
