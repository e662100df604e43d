//! The pipeline: the stages of DESIGN §5 in order over one [`Ctx`], then the commit that
//! updates session state from the final decision.

use bulwark_net::Assessment;
use bulwark_policy::{CapSet, Mode, Policy, ReasonCode, Severity, TaintSet, ToolSpec, Verdict};
use serde_json::Value;

use crate::analysis::catalogue;
use crate::call::Call;
use crate::decision::{Decision, EscalationMode, Finding};
use crate::scanner::ContentScanner;
use crate::session::Session;
use crate::stages::{self, Stage};
use crate::state::{Env, Tables};
use crate::time::Now;

/// Where the engine's knowledge of a tool came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Known {
    /// The policy's reviewed mapping.
    Policy,
    /// The built-in catalogue.
    Catalogue,
    /// Neither.
    Unknown,
}

/// A destination the call reaches, with its SSRF assessment.
#[derive(Clone, Debug)]
pub struct Dest {
    /// As written.
    pub text: String,
    /// Parsed and checked.
    pub assessment: Assessment,
    /// Named by a shell command rather than by a URL argument or the caller.
    pub from_command: bool,
}

/// The decision being built.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The verdict.
    pub verdict: Verdict,
    /// Reason code.
    pub code: Option<ReasonCode>,
    /// Rule id.
    pub rule_id: Option<String>,
    /// Severity.
    pub severity: Option<Severity>,
    /// Reason.
    pub reason: String,
    /// Safer alternative.
    pub safer: Option<String>,
}

impl Outcome {
    fn allow() -> Outcome {
        Outcome {
            verdict: Verdict::Allow,
            code: None,
            rule_id: None,
            severity: None,
            reason: String::new(),
            safer: None,
        }
    }

    fn stronger_than(&self, other: &Outcome) -> bool {
        (self.verdict, self.severity) > (other.verdict, other.severity)
    }
}

/// Everything one evaluation knows.
pub struct Ctx<'a> {
    /// The call.
    pub call: &'a Call,
    /// The policy.
    pub policy: &'a Policy,
    /// The content scanner.
    pub scanner: &'a dyn ContentScanner,
    /// The deep path's guard, when the gate attached one.
    pub guard: Option<&'a dyn crate::deep::DeepGuard>,
    /// The time.
    pub now: Now,
    /// Where the tool is known from.
    pub known: Known,
    /// The policy's entry, when mapped.
    pub spec: Option<&'a ToolSpec>,
    /// The catalogue's entry, when in the catalogue.
    pub entry: Option<catalogue::Entry>,
    /// Derived capabilities.
    pub caps: CapSet,
    /// Whether the tool itself (not its arguments) has a network capability.
    pub net_by_tool: bool,
    /// Destinations.
    pub destinations: Vec<Dest>,
    /// Paths.
    pub paths: Vec<String>,
    /// Named predicates that hold.
    pub predicates: Vec<&'static str>,
    /// Commands a shell argument runs, after unwrapping.
    pub commands: Vec<bulwark_shell::Invocation>,
    /// Why the commands have their capabilities (`rm -r -f on /`, …).
    pub command_reasons: Vec<String>,
    /// Files the commands write with what they hold, remembered by the session if the
    /// call goes through.
    pub written: Vec<(String, bulwark_shell::FileContent)>,
    /// Taint this call gives the session if it goes through.
    pub taint_out: TaintSet,
    /// Whether the fleet should be asked about this tool.
    pub escalate: bool,
    /// What was found.
    pub findings: Vec<Finding>,
    /// The decision so far.
    pub outcome: Outcome,
    /// The strongest outcome below `approve`, restored when an approval is used.
    pub below_approve: Outcome,
    /// Masked payload.
    pub masked: Option<Value>,
    /// For rate limits.
    pub retry_after_ms: Option<u64>,
    /// Fleet verdict pending.
    pub pending: bool,
    /// Escalation the front should perform.
    pub escalation: Option<EscalationMode>,
    /// An approval was used.
    pub approved: bool,
    /// A taint revocation was waived by a grant for this exact call; the grant is used up
    /// when the call goes through.
    pub waived: bool,
    /// Digest bound to this exact call.
    pub call_digest: Option<String>,
    /// Rules that matched, with their severity (for burst tracking).
    pub rule_hits: Vec<Severity>,
    /// The loop guard's fingerprint of this call or result.
    pub loop_print: Option<u64>,
    /// The verdict cache answered.
    pub cache_hit: bool,
    /// A note for `policy explain`, set by the stage that just ran.
    pub note: String,
    /// Whether an observer wants notes.
    pub observed: bool,
    /// The fleet's answer for this call, when it is decided a second time after a
    /// `sync_block` escalation: stage 12 uses it instead of the cache, and what the first
    /// pass already charged (rate tokens, burst hits) is not charged again.
    pub fleet_answer: Option<FleetAnswer>,
    /// The digest of a call a person approved, carried with this decision ([`Pass::approval`]).
    pub approval: Option<String>,
    /// The session's taint is not raised by this call ([`Pass::hold_taint`]).
    pub hold_taint: bool,
}

/// The fleet's answer to a `sync_block` escalation, for deciding the call again.
#[derive(Clone, Copy, Debug)]
pub struct FleetAnswer {
    /// What the fleet said.
    pub verdict: Verdict,
    /// The first decision used a person's approval of this call (and removed the grant),
    /// so the second stands approved too.
    pub approved: bool,
}

impl<'a> Ctx<'a> {
    /// Raises the decision to `verdict` if that is stronger than what stands.
    pub fn raise(
        &mut self,
        verdict: Verdict,
        code: ReasonCode,
        rule_id: Option<String>,
        severity: Option<Severity>,
        reason: impl Into<String>,
        safer: Option<String>,
    ) {
        let candidate = Outcome {
            verdict,
            code: Some(code),
            rule_id,
            severity,
            reason: reason.into(),
            safer,
        };
        if verdict < Verdict::Approve && candidate.stronger_than(&self.below_approve) {
            self.below_approve = candidate.clone();
        }
        if candidate.stronger_than(&self.outcome) {
            self.outcome = candidate;
        }
    }

    /// Sets the stage's note for `policy explain`; the text is only built when observed.
    pub fn explain(&mut self, note: impl FnOnce() -> String) {
        if self.observed {
            self.note = note();
        }
    }

    /// Whether the call is already blocked.
    pub fn blocked(&self) -> bool {
        self.outcome.verdict == Verdict::Block
    }

    /// The tool name, lower-cased.
    pub fn tool_lc(&self) -> String {
        self.call.tool.name.to_lowercase()
    }
}

/// Receives each stage's result; `bulwark policy explain` times and prints them.
pub trait Observer {
    /// Called before a stage runs.
    fn before(&mut self, _stage: Stage) {}
    /// Called after a stage ran, with the decision as it stands and the stage's note.
    fn after(&mut self, _stage: Stage, _outcome: &Outcome, _note: &str) {}
    /// Whether stages should write notes (they cost a few allocations).
    fn wants_notes(&self) -> bool {
        true
    }
}

/// An observer that does nothing.
pub struct Quiet;
impl Observer for Quiet {
    fn wants_notes(&self) -> bool {
        false
    }
}

/// How a call is run through the pipeline, beyond the call itself.
#[derive(Clone, Debug, Default)]
pub struct Pass {
    /// The call's content has already reached the agent (a tool result in an LLM
    /// request's history), so its taint is committed whatever the verdict: blocking it
    /// now cannot take it back.
    pub delivered: bool,
    /// The fleet answered an escalation of this call ([`Ctx::fleet_answer`]).
    pub fleet_answer: Option<FleetAnswer>,
    /// A person approved the call with this digest ([`crate::call_digest`]): for this
    /// decision only, it counts as a grant would — it lifts `approve` and waives a taint
    /// revocation for exactly that call, and the decision says whether it was used
    /// ([`Decision::approved`]). Nothing is stored, so nothing is left to use up later.
    pub approval: Option<String>,
    /// Decide without raising the session's taint: the decision's `taint` says what it
    /// would be once the call ran. For calls proposed together that cannot see each
    /// other's results (an LLM answer's parallel tool calls).
    pub hold_taint: bool,
}

impl Pass {
    /// Deciding again a call whose `sync_block` escalation the fleet answered with
    /// `verdict`, `first` being the decision that escalated it.
    pub fn answered(first: &Decision, verdict: Verdict) -> Pass {
        Pass {
            fleet_answer: Some(FleetAnswer {
                verdict,
                approved: first.approved,
            }),
            ..Pass::default()
        }
    }
}

/// Runs the pipeline over one session and the shared tables.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    policy: &Policy,
    scanner: &dyn ContentScanner,
    guard: Option<&dyn crate::deep::DeepGuard>,
    call: &Call,
    session: &mut Session,
    tables: &mut dyn Tables,
    now: Now,
    observer: &mut dyn Observer,
    pass: Pass,
) -> Decision {
    let mut ctx = Ctx {
        call,
        policy,
        scanner,
        guard,
        now,
        known: Known::Unknown,
        spec: None,
        entry: None,
        caps: CapSet::EMPTY,
        net_by_tool: false,
        destinations: Vec::new(),
        paths: Vec::new(),
        predicates: Vec::new(),
        commands: Vec::new(),
        command_reasons: Vec::new(),
        written: Vec::new(),
        taint_out: TaintSet::NONE,
        escalate: false,
        findings: Vec::new(),
        outcome: Outcome::allow(),
        below_approve: Outcome::allow(),
        masked: None,
        retry_after_ms: None,
        pending: false,
        escalation: None,
        approved: false,
        waived: false,
        call_digest: None,
        rule_hits: Vec::new(),
        loop_print: None,
        cache_hit: false,
        note: String::new(),
        observed: observer.wants_notes(),
        fleet_answer: pass.fleet_answer,
        approval: pass.approval,
        hold_taint: pass.hold_taint,
    };
    let mut env = Env { session, tables };
    for &stage in stages::order(call.direction) {
        observer.before(stage);
        ctx.note.clear();
        stages::run(stage, &mut ctx, &mut env);
        observer.after(stage, &ctx.outcome, &ctx.note);
        if ctx.blocked() {
            break;
        }
    }
    finish(ctx, &mut env, pass.delivered)
}

/// Monitor mode, the commit of session state, and the decision.
fn finish(mut ctx: Ctx<'_>, env: &mut Env<'_>, delivered: bool) -> Decision {
    let mut monitor = None;
    if ctx.policy.mode == Mode::Monitor && ctx.outcome.verdict > Verdict::Warn {
        monitor = Some(ctx.outcome.verdict);
        ctx.outcome.verdict = Verdict::Warn;
    }
    let allowed = ctx.outcome.verdict <= Verdict::Mask;
    let committed = allowed || delivered;
    stages::commit(&mut ctx, env, committed);
    let mut taint = env.session.taint();
    if ctx.hold_taint && committed && ctx.call.direction != crate::call::Direction::Definition {
        taint = taint.union(ctx.taint_out);
    }
    let o = ctx.outcome;
    let reason = if o.reason.is_empty() {
        "no rule or check stood in the way".to_string()
    } else {
        o.reason
    };
    Decision {
        decision: o.verdict,
        reason_code: o.code,
        rule_id: o.rule_id,
        severity: o.severity,
        reason,
        safer_alternative: o.safer,
        tool: ctx.call.tool.name.clone(),
        capabilities: ctx.caps,
        findings: ctx.findings,
        taint,
        policy_version: ctx.policy.version.clone(),
        eval_us: 0,
        destinations: ctx.destinations.into_iter().map(|d| d.text).collect(),
        masked: if o.verdict == Verdict::Mask || (monitor.is_some() && ctx.masked.is_some()) {
            ctx.masked
        } else {
            None
        },
        monitor,
        retry_after_ms: ctx.retry_after_ms,
        pending: ctx.pending,
        escalate: ctx.escalation,
        approved: ctx.approved,
        // A taint revocation names the digest too: a person may approve that exact call.
        call_digest: if o.verdict == Verdict::Approve
            || ctx.approved
            || o.code == Some(ReasonCode::TaintRevoked)
        {
            ctx.call_digest
        } else {
            None
        },
        cache_hit: ctx.cache_hit,
    }
}
