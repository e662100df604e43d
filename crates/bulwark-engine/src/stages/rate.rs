//! Stage 3, rate (seed 000 stage 2, seed 002 filter 30): token buckets per scope.
//!
//! Scopes: session (seed 000's 60 calls, 30 network, 10 actuations per minute by default),
//! principal, tool and global (off unless the policy sets them). A call consumes a token
//! from every bucket that applies to it, or from none: when any is empty the call is
//! blocked with `RATE_LIMIT` and `retry_after_ms`. Never counts responses or definitions.

use bulwark_policy::{BucketSpec, Capability, ReasonCode, Severity, Verdict};

use crate::bucket::Bucket;
use crate::pipeline::Ctx;
use crate::session::ScopeBuckets;
use crate::state::Env;

/// Which buckets of a scope a call draws from.
#[derive(Clone, Copy)]
struct Draw {
    network: bool,
    actuate: bool,
}

/// The longest wait among the buckets this call needs, creating buckets on first use.
fn wait(b: &mut ScopeBuckets, spec: &BucketSpec, draw: Draw, now: u64) -> (u64, &'static str) {
    let mut worst = (0, "");
    let mut check =
        |slot: &mut Option<Bucket>, cap: Option<u32>, needed: bool, name: &'static str| {
            if let (Some(cap), true) = (cap, needed) {
                let bucket = slot.get_or_insert_with(|| Bucket::full(cap, now));
                let w = bucket.wait_ms(cap, spec.per_ms, now);
                if w > worst.0 {
                    worst = (w, name);
                }
            }
        };
    check(&mut b.calls, spec.calls, true, "calls");
    check(&mut b.network, spec.network, draw.network, "network calls");
    check(&mut b.actuate, spec.actuate, draw.actuate, "actuations");
    worst
}

fn take(b: &mut ScopeBuckets, spec: &BucketSpec, draw: Draw) {
    if spec.calls.is_some()
        && let Some(x) = b.calls.as_mut()
    {
        x.take();
    }
    if spec.network.is_some()
        && draw.network
        && let Some(x) = b.network.as_mut()
    {
        x.take();
    }
    if spec.actuate.is_some()
        && draw.actuate
        && let Some(x) = b.actuate.as_mut()
    {
        x.take();
    }
}

pub(crate) fn run(ctx: &mut Ctx<'_>, env: &mut Env<'_>) {
    if ctx.fleet_answer.is_some() {
        // The first decision of this call drew its tokens already.
        ctx.explain(|| "charged when the call was escalated".into());
        return;
    }
    let now = ctx.now.mono_ms;
    let draw = Draw {
        network: ctx.caps.has_family("net"),
        actuate: ctx.caps.contains(Capability::DeviceActuate),
    };
    let rate = &ctx.policy.rate;
    let principal = ctx.call.principal.id.clone().unwrap_or_default();
    let tool = ctx.tool_lc();

    let mut worst: (u64, &str, &str) = (0, "", "");
    let mut consider = |w: (u64, &'static str), scope: &'static str| {
        if w.0 > worst.0 {
            worst = (w.0, w.1, scope);
        }
    };
    if let Some(spec) = &rate.session {
        consider(wait(&mut env.session.buckets, spec, draw, now), "session");
    }
    if let Some(spec) = &rate.principal {
        consider(
            wait(
                env.principal_buckets
                    .get_or_insert_with(&principal, ScopeBuckets::default),
                spec,
                draw,
                now,
            ),
            "principal",
        );
    }
    if let Some(spec) = &rate.tool {
        consider(
            wait(
                env.tool_buckets
                    .get_or_insert_with(&tool, ScopeBuckets::default),
                spec,
                draw,
                now,
            ),
            "tool",
        );
    }
    if let Some(spec) = &rate.global {
        consider(wait(env.global_buckets, spec, draw, now), "global");
    }

    if worst.0 > 0 {
        ctx.retry_after_ms = Some(worst.0);
        ctx.raise(
            Verdict::Block,
            ReasonCode::RateLimit,
            None,
            Some(Severity::Medium),
            format!(
                "Too many {} for this {} (rate limit); try again in {} ms.",
                worst.1, worst.2, worst.0
            ),
            Some(format!(
                "Wait {} ms, or batch the work into fewer calls.",
                worst.0
            )),
        );
        ctx.explain(|| format!("{} {} bucket empty", worst.2, worst.1));
        return;
    }
    if let Some(spec) = &rate.session {
        take(&mut env.session.buckets, spec, draw);
    }
    if let Some(spec) = &rate.principal {
        take(
            env.principal_buckets
                .get_or_insert_with(&principal, ScopeBuckets::default),
            spec,
            draw,
        );
    }
    if let Some(spec) = &rate.tool {
        take(
            env.tool_buckets
                .get_or_insert_with(&tool, ScopeBuckets::default),
            spec,
            draw,
        );
    }
    if let Some(spec) = &rate.global {
        take(env.global_buckets, spec, draw);
    }
}
