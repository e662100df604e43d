//! Stage 12, verdict cache / fleet (seed 000 stages 6–7): tools the policy says to escalate
//! are decided by a cached fleet verdict, or escalated by the front. Without an answer,
//! `sync_block` blocks with `CLOUD_TIMEOUT` and `speculative` allows with `pending`; a
//! cached block is `CLOUD_BLOCK`. Runs after every local check, so a cache hit never skips
//! them.

use bulwark_policy::{FleetMode, ReasonCode, Severity, Verdict};

use crate::decision::EscalationMode;
use crate::pipeline::Ctx;
use crate::state::Env;

pub(crate) fn run(ctx: &mut Ctx<'_>, env: &mut Env<'_>) {
    if !ctx.escalate {
        return;
    }
    let name = &ctx.call.tool.name;
    let cached = match ctx.fleet_answer {
        Some(a) => Some(a.verdict),
        None => {
            let hash = crate::verdict_cache::tool_hash(name);
            let hit = env.tables.verdict(&hash, ctx.now.mono_ms);
            ctx.cache_hit = hit.is_some();
            hit
        }
    };
    match cached {
        Some(Verdict::Block) => {
            ctx.explain(|| "cache hit: block".into());
            ctx.raise(
                Verdict::Block,
                ReasonCode::CloudBlock,
                None,
                Some(Severity::High),
                format!("The fleet blocks {name:?}."),
                Some("Use another tool, or ask the operator.".into()),
            );
        }
        Some(Verdict::Warn) => {
            ctx.explain(|| "cache hit: warn".into());
            ctx.raise(
                Verdict::Warn,
                ReasonCode::CloudBlock,
                None,
                Some(Severity::Medium),
                format!("The fleet flags {name:?}."),
                None,
            );
        }
        Some(_) => ctx.explain(|| "cache hit: allow".into()),
        None => {
            let mode = ctx
                .policy
                .fleet
                .as_ref()
                .map_or(FleetMode::SyncBlock, |f| f.mode);
            ctx.escalation = Some(EscalationMode::from(mode));
            ctx.explain(|| format!("cache miss: escalate ({mode:?})"));
            match mode {
                FleetMode::SyncBlock => ctx.raise(
                    Verdict::Block,
                    ReasonCode::CloudTimeout,
                    None,
                    Some(Severity::High),
                    format!("No fleet verdict for {name:?} arrived in time; unknown means no."),
                    Some("Try again later, or ask the operator to review the tool.".into()),
                ),
                FleetMode::Speculative => ctx.pending = true,
            }
        }
    }
}
