//! The enforcement step, once for every front: engine, fleet, a person, metrics, record.
//!
//! [`Decide`] runs it for one call:
//!
//! 1. **the engine** decides in the call's session (the store's, or one the caller holds),
//!    with a token's or a person's approval for this exact call when one came, and the
//!    stages of a sample timed for the metrics;
//! 2. **the fleet**: a call the verdict cache missed is escalated — `speculative` keeps
//!    the provisional allow; `sync_block` waits for the verdict, caches it, and decides
//!    the call again with it;
//! 3. **a person**, when the decision is `approve` and the front leaves asking to the gate
//!    ([`Person::Desk`]): the desk's answer for this exact call is used — granted, the call
//!    is decided again with the approval; denied, timed out or impossible to ask, it is a
//!    block saying so; not yet answered, the ruling says [`Approval::Pending`] and the
//!    front holds the call or tells the caller to ask again;
//! 4. **a token** that came with the call is claimed before the engine sees it and spent
//!    (durably, and at the desk) only if the decision used it — or given back;
//! 5. **metrics and the audit log**: a decision the log cannot take is refused — a block,
//!    whatever it was going to be (a block keeps its reason, with why added);
//! 6. the fleet's canary sees the decision of every call that acts.

use bulwark_approvals::{Outcome, Request};
use bulwark_audit::metrics::StageTimer;
use bulwark_engine::token::Approved;
use bulwark_engine::{
    Call, Decision, Direction, EscalationMode, Now, Observer, Pass, Quiet, ReasonCode, Session,
    Tables, TaintSet, Verdict, call_digest,
};

use crate::gate::Gate;

/// Who answers when a person must.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Person {
    /// The gate asks its approvals desk (the daemon's `evaluate`, the MCP gateway).
    #[default]
    Desk,
    /// The caller has its own way — a hook's user is asked by the agent, the LLM proxy's
    /// approvals come back as tokens — so an `approve` decision is returned as it is.
    Caller,
}

/// What became of a call that needed a person.
#[derive(Clone, Debug, PartialEq)]
pub enum Approval {
    /// Nobody has answered yet; this is the request a person answers.
    Pending(Request),
    /// A person approved: the call was decided again with the approval.
    Used(Request),
    /// A person said no.
    Denied(Request),
    /// Nobody answered in time.
    TimedOut(Request),
    /// No person could be asked (the desk is full, its disk or audit failed, the decision
    /// names no call to approve).
    Unavailable(String),
    /// An approval token that came with the call was used (and is spent for good).
    Token(String),
}

/// A decided call: the decision to enforce, and what a person had to do with it.
#[derive(Clone, Debug, PartialEq)]
pub struct Ruling {
    /// The decision, final: recorded, counted, and what the front enforces.
    pub decision: Decision,
    /// Set when a person was asked, or an approval token was used.
    pub approval: Option<Approval>,
}

/// One call to decide, with its options. Made by [`Gate::call`].
pub struct Decide<'a> {
    gate: &'a Gate,
    call: &'a Call,
    taint: TaintSet,
    session: Option<&'a mut Session>,
    approval: Option<String>,
    hold_taint: bool,
    delivered: bool,
    tokens: &'a [(String, Approved)],
    person: Person,
    answer: Option<(&'a str, bool)>,
    at: Option<u64>,
    fleet: bool,
}

impl<'a> Decide<'a> {
    pub(crate) fn new(gate: &'a Gate, call: &'a Call) -> Decide<'a> {
        Decide {
            gate,
            call,
            taint: TaintSet::NONE,
            session: None,
            approval: None,
            hold_taint: false,
            delivered: false,
            tokens: &[],
            person: Person::Desk,
            answer: None,
            at: None,
            fleet: true,
        }
    }

    /// Adds `taint` to the session before deciding (a `bulwark check` line's
    /// `session_taint`).
    pub fn tainted(mut self, taint: TaintSet) -> Self {
        self.taint = taint;
        self
    }

    /// Decides in `session`, which the caller holds (a request naming no session, a hook's
    /// session file), instead of the store's session of that id.
    pub fn in_session(mut self, session: &'a mut Session) -> Self {
        self.session = Some(session);
        self
    }

    /// A person approved the call with this digest (a desk request granted earlier): it
    /// counts for this decision only ([`Pass::approval`]).
    pub fn approved(mut self, digest: Option<String>) -> Self {
        self.approval = digest;
        self
    }

    /// Decides without raising the session's taint ([`Pass::hold_taint`]).
    pub fn holding_taint(mut self) -> Self {
        self.hold_taint = true;
        self
    }

    /// Decides a tool result that has reached the agent already: its taint is kept
    /// whatever the verdict ([`bulwark_engine::Engine::absorb`]).
    pub fn delivered(mut self) -> Self {
        self.delivered = true;
        self
    }

    /// Verified approval tokens that came with the call (with their text): the one for
    /// this exact call, if any, is claimed, and spent if the decision uses it.
    pub fn tokens(mut self, tokens: &'a [(String, Approved)]) -> Self {
        self.tokens = tokens;
        self
    }

    /// Who answers when a person must ([`Person::Desk`] unless set).
    pub fn person(mut self, person: Person) -> Self {
        self.person = person;
        self
    }

    /// A person's answer to approval request `request` that came with this call (an MCP
    /// client's retry): applied at the desk first, if the request is for this exact call.
    pub fn answer(mut self, answer: Option<(&'a str, bool)>) -> Self {
        self.answer = answer;
        self
    }

    /// Decides at `now_ms` instead of the gate's clock (an in-process caller that keeps
    /// its own time, as `bulwark check` does).
    pub fn at(mut self, now_ms: u64) -> Self {
        self.at = Some(now_ms);
        self
    }

    /// Leaves the fleet out: an escalation stays as the engine decided it (`sync_block`:
    /// refused, `speculative`: allowed) and the canary does not see the decision.
    pub fn without_fleet(mut self) -> Self {
        self.fleet = false;
        self
    }

    fn now_ms(&self) -> u64 {
        self.at.unwrap_or_else(|| self.gate.now_ms())
    }

    /// Runs the enforcement step (the module doc) and returns the final decision.
    pub fn decide(mut self) -> Ruling {
        let t0 = std::time::Instant::now();
        let claimed = self.claim_token();
        let mut d = self.run(Pass::default());
        d.eval_us = t0.elapsed().as_micros() as u64;
        d = self.escalate(d);
        let mut approval = None;
        if let Some((token, expires_s)) = claimed {
            let (spent, a) = self.spend_token(&token, expires_s, d);
            d = spent;
            approval = a;
        }
        if d.decision == Verdict::Approve && self.person == Person::Desk {
            let (asked, a) = self.ask(d);
            d = asked;
            approval = a.or(approval);
        }
        let d = self.gate.account(self.call, d);
        if self.fleet
            && matches!(
                self.call.direction,
                Direction::Request | Direction::Proposal
            )
            && let Some(esc) = self.gate.escalator()
        {
            esc.observe(&d);
        }
        Ruling {
            decision: d,
            approval,
        }
    }

    /// The engine's decision, with what this call carries; a store that could not answer
    /// is a refusal.
    fn run(&mut self, pass: Pass) -> Decision {
        let engine = self.gate.engine();
        let now = Now::at(self.now_ms());
        let pass = Pass {
            approval: self.approval.clone(),
            hold_taint: self.hold_taint,
            delivered: self.delivered,
            ..pass
        };
        let sampled = self.gate.metrics().filter(|m| m.sample_stages());
        let mut timer = StageTimer::default();
        let mut quiet = Quiet;
        let observer: &mut dyn Observer = if sampled.is_some() {
            &mut timer
        } else {
            &mut quiet
        };
        // Added once: a decision made again (the fleet answered, a person approved) finds
        // it there already.
        let taint = std::mem::replace(&mut self.taint, TaintSet::NONE);
        let call = self.call;
        let mut out = None;
        let mut decide = |s: &mut Session, t: &mut dyn Tables| {
            if !taint.is_empty() {
                s.add_taint(taint);
            }
            out = Some(engine.decide(call, s, t, now, observer, pass.clone()));
        };
        let stored = match self.session.as_deref_mut() {
            Some(s) => self.gate.store().decide_in(s, &mut decide),
            None => self
                .gate
                .store()
                .decide(&call.session, now.mono_ms, &mut decide),
        };
        if let Some(m) = sampled {
            m.observe_stages(&timer);
        }
        match (stored, out) {
            (Ok(()), Some(mut d)) => {
                if let Some(why) = self.gate.store().degraded() {
                    degrade(&mut d, &why);
                }
                d
            }
            (Err(e), _) => self.refused(ReasonCode::AnalysisUnavailable, &e.to_string()),
            (Ok(()), None) => self.refused(
                ReasonCode::AnalysisUnavailable,
                "the state store did not run the decision",
            ),
        }
    }

    fn refused(&self, code: ReasonCode, reason: &str) -> Decision {
        let mut d = Decision::invalid_input(reason, &self.gate.policy_version());
        d.reason_code = Some(code);
        d.tool = self.call.tool.name.clone();
        d
    }

    /// Settles a decision whose verdict cache missed (`d.escalate` is set).
    fn escalate(&mut self, d: Decision) -> Decision {
        let Some(esc) = self.gate.escalator().filter(|_| self.fleet).cloned() else {
            return d;
        };
        match d.escalate {
            None => d,
            Some(EscalationMode::Speculative) => {
                esc.escalate(self.call, &d, false);
                d
            }
            Some(EscalationMode::SyncBlock) => {
                let Some((verdict, ttl)) = esc.escalate(self.call, &d, true) else {
                    return d;
                };
                if ttl > 0 {
                    let hash = bulwark_engine::verdict_cache::tool_hash(&self.call.tool.name);
                    let _ = self
                        .gate
                        .store()
                        .cache_verdict(hash, verdict, ttl, self.now_ms());
                }
                // A first decision that was let through anyway (monitor mode) stands: its
                // session state is committed, so only the verdict is cached.
                if d.is_allowed() {
                    return d;
                }
                let mut again = self.run(Pass::answered(&d, verdict));
                again.eval_us += d.eval_us;
                again
            }
        }
    }

    /// The token among [`Decide::tokens`] for this exact call, claimed for this decision.
    fn claim_token(&mut self) -> Option<(String, u64)> {
        if self.tokens.is_empty() {
            return None;
        }
        // The digest costs a canonical encoding and a SHA-256: only worked out when a
        // token came with the call.
        let call = self.call;
        let digest = call_digest(
            &call.tool.name,
            &call.args,
            &call.session,
            call.principal.id.as_deref(),
            &self.gate.policy_version(),
        );
        let now_s = self.gate.clock().unix_s();
        let (token, a) = self.tokens.iter().find(|(_, a)| a.digest == digest)?;
        match self.gate.store().claim_token(token, a.expires_s, now_s) {
            Ok(true) => {
                self.approval = Some(digest);
                Some((token.clone(), a.expires_s))
            }
            _ => None,
        }
    }

    /// A claimed token after the decision: spent if the decision used it, at the desk too
    /// (the request it came from is used, whichever front used it first) and durably in
    /// the ledger — or given back.
    fn spend_token(
        &mut self,
        token: &str,
        expires_s: u64,
        d: Decision,
    ) -> (Decision, Option<Approval>) {
        let store = self.gate.store();
        if !d.approved {
            store.release_token(token);
            return (d, None);
        }
        let now_s = self.gate.clock().unix_s();
        let unspent = self.gate.desk().is_none_or(|desk| desk.spend(token, now_s));
        if !unspent {
            let refused = self.refused(
                ReasonCode::InvalidInput,
                "This approval was used already; a person must approve the call again.",
            );
            return (without_alternative(refused), None);
        }
        match store.spend_token(token, expires_s) {
            Ok(()) => (d, Some(Approval::Token(token.to_string()))),
            Err(e) => {
                let refused = self.refused(
                    ReasonCode::InvalidInput,
                    &format!(
                        "The approval for this call could not be recorded as used ({e}), so it is not honoured."
                    ),
                );
                (without_alternative(refused), None)
            }
        }
    }

    /// Asks the desk about a call the engine says needs a person.
    fn ask(&mut self, d: Decision) -> (Decision, Option<Approval>) {
        let Some(desk) = self.gate.desk().cloned() else {
            return (d, None);
        };
        let engine = self.gate.engine();
        let now_s = self.gate.clock().unix_s();
        if let (Some((rid, yes)), Some(digest)) = (self.answer, &d.call_digest)
            && desk
                .store()
                .get(rid)
                .ok()
                .flatten()
                .is_some_and(|r| &r.digest == digest)
        {
            let note = (!yes).then_some("declined in the client");
            // An answer that cannot be taken (decided already) leaves the request as it is.
            let _ = desk.decide(rid, yes, self.gate.front(), note, now_s);
        }
        if let Some(why) = self.gate.unanswerable() {
            let outcome = Outcome::Unavailable(why.clone());
            return (refusal(&outcome, d), Some(Approval::Unavailable(why)));
        }
        let Some(ask) =
            bulwark_approvals::Ask::for_call(self.gate.front(), self.call, &d, engine.policy())
        else {
            let why = "the decision names no call to approve".to_string();
            let outcome = Outcome::Unavailable(why.clone());
            return (refusal(&outcome, d), Some(Approval::Unavailable(why)));
        };
        match desk.ask(&ask, now_s) {
            Outcome::Pending(r) => (d, Some(Approval::Pending(r))),
            Outcome::Granted(r) => {
                self.approval = Some(r.digest.clone());
                let mut again = self.run(Pass::default());
                again.eval_us += d.eval_us;
                let again = self.escalate(again);
                (again, Some(Approval::Used(r)))
            }
            refused => {
                let approval = approval_of(&refused);
                (refusal(&refused, d), approval)
            }
        }
    }
}

/// Marks a decision made on this process's own state while the shared store was away: a
/// finding the audit record carries, and a reason that says so.
fn degrade(d: &mut Decision, why: &str) {
    d.findings.push(bulwark_engine::decision::Finding::new(
        "state.degraded",
        "state",
    ));
    d.reason = format!("{} (Decided on this replica's own state: {why}.)", d.reason);
}

fn without_alternative(mut d: Decision) -> Decision {
    d.safer_alternative = None;
    d
}

/// What an answer that is not a yes tells the front.
pub(crate) fn approval_of(outcome: &Outcome) -> Option<Approval> {
    match outcome {
        Outcome::Granted(r) => Some(Approval::Used(r.clone())),
        Outcome::Pending(r) => Some(Approval::Pending(r.clone())),
        Outcome::Denied(r) => Some(Approval::Denied(r.clone())),
        Outcome::TimedOut(r) => Some(Approval::TimedOut(r.clone())),
        Outcome::Unavailable(why) => Some(Approval::Unavailable(why.clone())),
    }
}

/// A decision that needed a person, after the person's answer refused it: a block with the
/// answer's reason code (when a person answered) and why. Other outcomes leave it as it is.
pub fn refusal(outcome: &Outcome, mut d: Decision) -> Decision {
    if let Some((code, reason)) = outcome.refusal(&d.reason) {
        d.decision = Verdict::Block;
        if code.is_some() {
            d.reason_code = code;
        }
        d.reason = reason;
        d.safer_alternative =
            Some("Do not retry this call as it is; ask the user what they want instead.".into());
    }
    d
}
