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

/// What one call draws from the buckets above its session: the scopes that apply, each with
/// its key and limits, and which kinds of token it needs.
#[derive(Clone, Copy, Debug)]
pub struct Draw<'a> {
    /// The principal's buckets, when the policy limits principals.
    pub principal: Option<(&'a str, &'a BucketSpec)>,
    /// The tool's buckets, when the policy limits tools.
    pub tool: Option<(&'a str, &'a BucketSpec)>,
    /// The global buckets, when the policy sets a global limit.
    pub global: Option<&'a BucketSpec>,
    /// The call reaches the network (draws a network token too).
    pub network: bool,
    /// The call actuates a device (draws an actuation token too).
    pub actuate: bool,
}

/// The longest wait among the buckets a call needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wait {
    /// Milliseconds until every token is there; 0: they are.
    pub ms: u64,
    /// Which kind of token is short (`calls`, `network calls`, `actuations`).
    pub bucket: &'static str,
    /// In which scope (`session`, `principal`, `tool`, `global`).
    pub scope: &'static str,
}

impl Wait {
    fn worse(&mut self, ms: u64, bucket: &'static str, scope: &'static str) {
        if ms > self.ms {
            *self = Wait { ms, bucket, scope };
        }
    }
}

/// The longest wait among the buckets this call needs, creating buckets on first use.
fn wait(
    b: &mut ScopeBuckets,
    spec: &BucketSpec,
    network: bool,
    actuate: bool,
    now: u64,
) -> (u64, &'static str) {
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
    check(&mut b.network, spec.network, network, "network calls");
    check(&mut b.actuate, spec.actuate, actuate, "actuations");
    worst
}

fn take(b: &mut ScopeBuckets, spec: &BucketSpec, network: bool, actuate: bool) {
    if spec.calls.is_some()
        && let Some(x) = b.calls.as_mut()
    {
        x.take();
    }
    if spec.network.is_some()
        && network
        && let Some(x) = b.network.as_mut()
    {
        x.take();
    }
    if spec.actuate.is_some()
        && actuate
        && let Some(x) = b.actuate.as_mut()
    {
        x.take();
    }
}

/// [`crate::Tables::draw`] over the principal's, the tool's and the global buckets (in that
/// order; absent where the policy sets no limit): the arithmetic every store shares.
pub fn draw_from(
    scopes: [Option<(&mut ScopeBuckets, &BucketSpec)>; 3],
    draw: &Draw<'_>,
    take_tokens: bool,
    now: u64,
) -> Wait {
    const NAMES: [&str; 3] = ["principal", "tool", "global"];
    let mut scopes = scopes;
    let mut worst = Wait::default();
    for (slot, scope) in scopes.iter_mut().zip(NAMES) {
        if let Some((b, spec)) = slot {
            let (ms, bucket) = wait(b, spec, draw.network, draw.actuate, now);
            worst.worse(ms, bucket, scope);
        }
    }
    if worst.ms == 0 && take_tokens {
        for (b, spec) in scopes.iter_mut().flatten() {
            take(b, spec, draw.network, draw.actuate);
        }
    }
    worst
}

pub(crate) fn run(ctx: &mut Ctx<'_>, env: &mut Env<'_>) {
    if ctx.fleet_answer.is_some() {
        // The first decision of this call drew its tokens already.
        ctx.explain(|| "charged when the call was escalated".into());
        return;
    }
    let now = ctx.now.mono_ms;
    let network = ctx.caps.has_family("net");
    let actuate = ctx.caps.contains(Capability::DeviceActuate);
    let rate = &ctx.policy.rate;
    let principal = ctx.call.principal.id.as_deref().unwrap_or_default();
    let tool = ctx.tool_lc();
    let draw = Draw {
        principal: rate.principal.as_ref().map(|s| (principal, s)),
        tool: rate.tool.as_ref().map(|s| (tool.as_str(), s)),
        global: rate.global.as_ref(),
        network,
        actuate,
    };
    // The session's buckets are this decision's own; the others are shared, and drawn in
    // one step — from all of them or none — only when the session's tokens are there.
    let mut worst = Wait::default();
    if let Some(spec) = &rate.session {
        let (ms, bucket) = wait(&mut env.session.buckets, spec, network, actuate, now);
        worst.worse(ms, bucket, "session");
    }
    let shared = draw.principal.is_some() || draw.tool.is_some() || draw.global.is_some();
    if shared {
        let w = env.tables.draw(&draw, worst.ms == 0, now);
        worst.worse(w.ms, w.bucket, w.scope);
    }

    if worst.ms > 0 {
        ctx.retry_after_ms = Some(worst.ms);
        ctx.raise(
            Verdict::Block,
            ReasonCode::RateLimit,
            None,
            Some(Severity::Medium),
            format!(
                "Too many {} for this {} (rate limit); try again in {} ms.",
                worst.bucket, worst.scope, worst.ms
            ),
            Some(format!(
                "Wait {} ms, or batch the work into fewer calls.",
                worst.ms
            )),
        );
        ctx.explain(|| format!("{} {} bucket empty", worst.scope, worst.bucket));
        return;
    }
    if let Some(spec) = &rate.session {
        take(&mut env.session.buckets, spec, network, actuate);
    }
}
