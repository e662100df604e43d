//! The engine's side of one model request: taint from the history, then a ruling on every
//! tool call the model proposes.

use std::sync::Arc;

use bulwark_audit::{AuditLog, Entry};
use bulwark_engine::call_digest;
use bulwark_engine::token::Approved;
use bulwark_engine::{
    Call, Decision, Direction, Engine, Now, Principal, ReasonCode, SharedEngine, State, Taint,
    TaintSet, ToolRef, Verdict,
};
use serde_json::{Value, json};

use crate::approval::UsedTokens;
use crate::history::Exchange;

/// Most judged calls listed by [`Judge::judged`].
pub const MAX_JUDGED: usize = 1024;

/// The header that carries approval tokens.
pub const APPROVE_HEADER: &str = "X-Bulwark-Approve";

/// What happens to one proposed call.
#[derive(Clone, Debug, PartialEq)]
pub enum Ruling {
    /// Released as the model wrote it.
    Pass,
    /// Released with these arguments instead (masked, or sandboxed).
    Rewrite(Value),
    /// Withheld; the agent gets text saying why.
    Block(Box<Blocked>),
}

/// A withheld call.
#[derive(Clone, Debug, PartialEq)]
pub struct Blocked {
    /// The call id the model gave it.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The engine's decision.
    pub decision: Decision,
    /// Whether a person may approve this exact call with a token.
    pub approvable: bool,
    /// The approval request filed for it, when the proxy keeps approvals.
    pub request: Option<String>,
}

/// Where the session lives: a scratch state for one request, or the proxy's shared state
/// when the client names a session with `X-Bulwark-Session`.
enum Store {
    Scratch(Box<State>),
    Shared,
}

/// One request's judge.
pub struct Judge {
    shared: Arc<SharedEngine>,
    engine: Arc<Engine>,
    store: Store,
    session: String,
    principal: Principal,
    tokens: Vec<(String, Approved)>,
    used: Arc<UsedTokens>,
    audit: Option<Arc<AuditLog>>,
    clock: Arc<dyn Fn() -> (u64, u64) + Send + Sync>,
    cache: Option<Arc<ResultCache>>,
    header_approvals: bool,
    desk: Option<Arc<bulwark_approvals::Desk>>,
    metrics: Option<Arc<bulwark_audit::metrics::Metrics>>,
    escalator: Option<Arc<dyn bulwark_engine::Escalator>>,
    blocked: Vec<Blocked>,
    rewritten: Vec<(String, String)>,
    approved: Vec<String>,
    judged: Vec<(String, String)>,
    following: TaintSet,
}

/// What a [`Judge`] needs besides the engine.
pub struct Context {
    /// `Some(id)` keeps taint across requests under that session id.
    pub session: Option<String>,
    /// Who is calling (a digest of their API credential, unverified).
    pub principal: Principal,
    /// Valid approval tokens from the request's headers, with the token text.
    pub tokens: Vec<(String, Approved)>,
    /// Tokens already honoured.
    pub used: Arc<UsedTokens>,
    /// The audit log.
    pub audit: Option<Arc<AuditLog>>,
    /// (monotonic ms, Unix seconds).
    pub clock: Arc<dyn Fn() -> (u64, u64) + Send + Sync>,
    /// The taint of results read before; `None` reads every result every time.
    pub cache: Option<Arc<ResultCache>>,
    /// Where a withheld call that a person may approve is filed, so it shows in
    /// `bulwark approvals list` and the console.
    pub desk: Option<Arc<bulwark_approvals::Desk>>,
    /// Counts every judged call.
    pub metrics: Option<Arc<bulwark_audit::metrics::Metrics>>,
    /// The fleet, for tools the policy escalates; without it they are decided as if it
    /// never answered.
    pub escalator: Option<Arc<dyn bulwark_engine::Escalator>>,
}

impl Default for Context {
    /// A stateless judge with no tokens, no audit, no cache, and a clock at zero: for
    /// tests and benches, which set the fields they care about.
    fn default() -> Self {
        Context {
            session: None,
            principal: Principal::default(),
            tokens: Vec::new(),
            used: Arc::new(UsedTokens::in_memory()),
            audit: None,
            clock: Arc::new(|| (0, 0)),
            cache: None,
            desk: None,
            metrics: None,
            escalator: None,
        }
    }
}

/// Most results whose taint is remembered.
pub const MAX_CACHED_RESULTS: usize = 100_000;

/// The taint each tool result adds, by a keyed hash of the policy version, the tool, its
/// arguments and the content. The hash key is random per process, so nobody outside can
/// make two results collide.
pub struct ResultCache {
    map: std::sync::Mutex<bulwark_engine::bounded::BoundedMap<u64, TaintSet>>,
    keys: std::collections::hash_map::RandomState,
}

impl Default for ResultCache {
    fn default() -> Self {
        ResultCache {
            map: std::sync::Mutex::new(bulwark_engine::bounded::BoundedMap::new(
                MAX_CACHED_RESULTS,
            )),
            keys: std::collections::hash_map::RandomState::new(),
        }
    }
}

impl ResultCache {
    fn key(&self, version: &str, r: &Exchange) -> u64 {
        use std::hash::{BuildHasher, Hash, Hasher};
        let mut h = self.keys.build_hasher();
        version.hash(&mut h);
        // Exactly as given: the engine's own case folding decides what the name means.
        r.tool.hash(&mut h);
        bulwark_engine::canonical::hash_value(&r.args, &mut h);
        bulwark_engine::canonical::hash_value(&r.content, &mut h);
        r.web.hash(&mut h);
        h.finish()
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, bulwark_engine::bounded::BoundedMap<u64, TaintSet>> {
        match self.map.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        }
    }

    fn get(&self, key: u64) -> Option<TaintSet> {
        self.lock().get_mut(&key).map(|t| *t)
    }

    fn put(&self, key: u64, taint: TaintSet) {
        self.lock().insert(key, taint);
    }
}

impl Judge {
    /// A judge for one request.
    pub fn new(shared: Arc<SharedEngine>, cx: Context) -> Judge {
        let engine = shared.engine();
        let (store, session) = match cx.session {
            Some(s) => (Store::Shared, format!("llm:{s}")),
            None => {
                let mut scratch = State::new(engine.policy());
                // A request without a session keeps no state of its own, but the fleet's
                // kill switch and verdicts are not session state: they hold here too.
                // Only the fleet sets them, so without one the shared lock is not taken.
                if cx.escalator.is_some() {
                    let state = shared.state();
                    scratch.lockdown = state.lockdown;
                    scratch.verdicts = state.verdicts.clone();
                }
                (Store::Scratch(Box::new(scratch)), "llm".into())
            }
        };
        let channels = &engine.policy().approvals.channels;
        let header_approvals =
            channels.is_empty() || channels.contains(&bulwark_policy::ApprovalChannel::Header);
        Judge {
            shared,
            engine,
            store,
            session,
            principal: cx.principal,
            tokens: if header_approvals {
                cx.tokens
            } else {
                Vec::new()
            },
            used: cx.used,
            audit: cx.audit,
            clock: cx.clock,
            cache: cx.cache,
            header_approvals,
            desk: cx.desk,
            metrics: cx.metrics,
            escalator: cx.escalator,
            blocked: Vec::new(),
            rewritten: Vec::new(),
            approved: Vec::new(),
            judged: Vec::new(),
            following: TaintSet::NONE,
        }
    }

    fn with_state<R>(&mut self, f: impl FnOnce(&Engine, &mut State) -> R) -> R {
        match &mut self.store {
            Store::Scratch(state) => f(&self.engine, state),
            Store::Shared => f(&self.engine, &mut self.shared.state()),
        }
    }

    fn now(&self) -> (u64, u64) {
        (self.clock)()
    }

    /// The session id the engine sees.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Takes in the tool results the agent has seen; returns the session's taint.
    ///
    /// What a result adds depends only on the result (its tool, arguments and content) and
    /// the policy, not on the session, so each is read once in a scratch state and its
    /// taint remembered in the proxy's [`ResultCache`]: a conversation sends its whole
    /// history with every request, and re-scanning it each time would cost milliseconds a
    /// turn by the fiftieth tool result.
    pub fn absorb(&mut self, results: &[Exchange]) -> TaintSet {
        let (mono, _) = self.now();
        let mut added = TaintSet::NONE;
        let mut scratch: Option<State> = None;
        let version = self.engine.policy().version.clone();
        for (i, r) in results.iter().enumerate() {
            let key = self.cache.as_ref().map(|c| c.key(&version, r));
            if let (Some(c), Some(k)) = (&self.cache, key)
                && let Some(t) = c.get(k)
            {
                added = added.union(t);
                continue;
            }
            let mut extra = TaintSet::NONE;
            if r.web {
                extra.insert(Taint::UntrustedInput);
            }
            // A result whose call is not in the history came from somewhere nobody can
            // tell: read it as untrusted.
            let tool = match &r.tool {
                Some(t) if !t.is_empty() => t.clone(),
                _ => {
                    extra.insert(Taint::UntrustedInput);
                    "unknown".to_string()
                }
            };
            let session = format!("{}#result{i}", self.session);
            let call = Call {
                principal: self.principal.clone(),
                tool: ToolRef {
                    name: tool,
                    ..ToolRef::default()
                },
                ..Call::response(&session, "", r.args.clone(), r.content.clone())
            };
            let state = scratch.get_or_insert_with(|| State::new(self.engine.policy()));
            let d = self.engine.absorb(&call, state, Now::at(mono));
            // A result the engine could not read through (too large, too deep, the scanner
            // unavailable) may hold anything.
            if matches!(
                d.reason_code,
                Some(ReasonCode::InvalidInput | ReasonCode::AnalysisUnavailable)
            ) {
                extra.insert(Taint::PrivateData);
                extra.insert(Taint::UntrustedInput);
            }
            let taint = d.taint.union(extra);
            if let (Some(c), Some(k)) = (&self.cache, key) {
                c.put(k, taint);
            }
            added = added.union(taint);
            if d.decision != Verdict::Allow {
                let call = Call {
                    session: self.session.clone(),
                    ..call
                };
                // The result is in the model's context already: a log that cannot take
                // this changes nothing about it.
                let _ = self.record(&call, &d);
            }
        }
        self.inherit(added);
        self.taint()
    }

    /// Adds taint the session carries from elsewhere (a chained `previous_response_id`).
    pub fn inherit(&mut self, taint: TaintSet) {
        let (mono, _) = self.now();
        let session = self.session.clone();
        self.with_state(|_, state| {
            let s = state.sessions.get(&session, mono);
            s.taint = s.taint.union(taint);
        });
    }

    /// The answer being judged holds what a provider-run tool read from the web (Anthropic's
    /// web search and fetch, the Responses API's web search): untrusted input for every
    /// call after it.
    pub fn saw_untrusted(&mut self) {
        self.inherit([Taint::UntrustedInput].into_iter().collect());
    }

    /// The taint a conversation continuing from this answer holds: the session's, and
    /// what the calls released in it will bring (their results come back in a request
    /// that may not carry the calls themselves).
    pub fn taint_after(&mut self) -> TaintSet {
        let following = self.following;
        self.taint().union(following)
    }

    /// The session's taint now.
    pub fn taint(&mut self) -> TaintSet {
        let (mono, _) = self.now();
        let session = self.session.clone();
        self.with_state(|_, state| state.sessions.get(&session, mono).taint)
    }

    /// Rules on one proposed call. `args` is what the model wrote, already parsed
    /// ([`crate::history::arguments`]); arguments that are not a JSON object are refused.
    pub fn judge(&mut self, id: &str, name: &str, args: &Value) -> Ruling {
        if self.judged.len() < MAX_JUDGED {
            self.judged.push((id.to_string(), name.to_string()));
        }
        let (mono, unix) = self.now();
        let call = Call {
            principal: self.principal.clone(),
            direction: Direction::Proposal,
            tool: ToolRef {
                name: name.to_string(),
                ..ToolRef::default()
            },
            ..Call::request(&self.session, name, args.clone())
        };
        let d = if !args.is_object() {
            invalid(
                &self.engine,
                name,
                "The tool call's arguments are not a JSON object, so they cannot be judged.",
            )
        } else if name.is_empty() {
            invalid(&self.engine, name, "The tool call has no name.")
        } else {
            // Only a token for this exact call matters; it is claimed before the engine
            // sees the grant, and given back if the call does not go through.
            // The digest costs a canonical encoding and a SHA-256: only worked out when a
            // token came with the request.
            let claimed = if self.tokens.is_empty() {
                None
            } else {
                let digest = call_digest(
                    name,
                    args,
                    &self.session,
                    self.principal.id.as_deref(),
                    &self.engine.policy().version,
                );
                self.tokens
                    .iter()
                    .find(|(_, a)| a.digest == digest)
                    .cloned()
                    .filter(|(t, a)| self.used.claim(t, a.expires_s, unix))
            };
            let (d, consumed, brought) = self.with_state(|engine, state| {
                if let Some((_, a)) = &claimed {
                    let left_ms = a.expires_s.saturating_sub(unix).saturating_mul(1000);
                    state.grant(a.digest.clone(), mono.saturating_add(left_ms));
                }
                // Taint comes from results, which arrive in the next request's history. A
                // proposal's own class (a read of private data, say) must not taint the
                // calls proposed beside it: they run in parallel and cannot see its
                // result.
                let before = state.sessions.get(&call.session, mono).taint;
                let d = engine.evaluate(&call, state, Now::at(mono));
                let session = state.sessions.get(&call.session, mono);
                let brought = session.taint;
                session.taint = before;
                let consumed = claimed
                    .as_ref()
                    .is_some_and(|(_, a)| state.grants.remove(&a.digest).is_none());
                (d, consumed, brought)
            });
            let (d, brought) = self.settle_escalation(&call, d, brought);
            // What a released call brings once it has run, for whoever continues this
            // answer without the call in hand (a chained Responses turn).
            self.following = self.following.union(brought);
            match claimed {
                Some((t, a)) if consumed => {
                    // Used once across every front: the store knows if the MCP gateway or
                    // the daemon used this approval already.
                    let unspent = self.desk.as_ref().is_none_or(|desk| desk.spend(&t, unix));
                    if !unspent {
                        invalid(
                            &self.engine,
                            name,
                            "This approval was used already; a person must approve the call again.",
                        )
                    } else if self.used.persist(&t, a.expires_s) {
                        self.approved.push(id.to_string());
                        d
                    } else {
                        invalid(
                            &self.engine,
                            name,
                            "The approval for this call could not be recorded as used, so it is not honoured.",
                        )
                    }
                }
                Some((t, _)) => {
                    self.used.release(&t);
                    d
                }
                None => d,
            }
        };
        // As at the MCP gateway: a call nobody could account for afterwards is not
        // released.
        let d = if !self.record(&call, &d) && d.is_allowed() {
            invalid(
                &self.engine,
                name,
                "The audit log cannot be written; nothing is let through unrecorded.",
            )
        } else {
            d
        };
        match d.decision {
            Verdict::Allow | Verdict::Warn => Ruling::Pass,
            Verdict::Mask => match &d.masked {
                Some(m) => {
                    self.rewritten.push((id.to_string(), "masked".into()));
                    Ruling::Rewrite(m.clone())
                }
                None => self.block(id, name, d, &call.args),
            },
            Verdict::Approve | Verdict::Block => {
                if let Some(args) = self.sandboxed(&call, &d) {
                    self.rewritten.push((id.to_string(), "sandboxed".into()));
                    return Ruling::Rewrite(args);
                }
                self.block(id, name, d, &call.args)
            }
        }
    }

    /// A proposal the verdict cache missed: `speculative` asks the fleet and keeps the
    /// provisional allow; `sync_block` waits for its verdict (caching it for later
    /// requests) and decides the proposal again with it, or keeps the `CLOUD_TIMEOUT`
    /// block. Returns the decision and the taint the call would bring.
    fn settle_escalation(
        &mut self,
        call: &Call,
        d: Decision,
        brought: TaintSet,
    ) -> (Decision, TaintSet) {
        let Some(esc) = self.escalator.clone() else {
            return (d, brought);
        };
        let settled = match d.escalate {
            Some(bulwark_engine::EscalationMode::SyncBlock) => match esc.escalate(call, &d, true) {
                None => (d, brought),
                Some((verdict, ttl)) => self.answered(call, d, brought, verdict, ttl),
            },
            Some(bulwark_engine::EscalationMode::Speculative) => {
                esc.escalate(call, &d, false);
                (d, brought)
            }
            None => (d, brought),
        };
        esc.observe(&settled.0);
        settled
    }

    /// Takes the fleet's answer to a `sync_block` escalation: cached for later requests
    /// (and for the rest of this one, when it has no session), and the proposal decided
    /// again with it unless the first decision let it through (monitor mode).
    fn answered(
        &mut self,
        call: &Call,
        d: Decision,
        brought: TaintSet,
        verdict: Verdict,
        ttl: u64,
    ) -> (Decision, TaintSet) {
        let (mono, _) = self.now();
        if ttl > 0 {
            let hash = bulwark_engine::verdict_cache::tool_hash(&call.tool.name);
            self.shared.cache_verdict(hash, verdict, ttl, mono);
            if let Store::Scratch(state) = &mut self.store {
                let _ = state.verdicts.insert(hash, verdict, ttl, mono);
            }
        }
        if d.is_allowed() {
            return (d, brought);
        }
        let (mut again, brought) = self.with_state(|engine, state| {
            let before = state.sessions.get(&call.session, mono).taint;
            let again = engine.evaluate_answered(call, state, Now::at(mono), &d, verdict);
            let session = state.sessions.get(&call.session, mono);
            let brought = session.taint;
            session.taint = before;
            (again, brought)
        });
        again.eval_us += d.eval_us;
        (again, brought)
    }

    /// Withholds a call the answer broke off before finishing (the stream ended, or the
    /// message ended with the call still open): what it would have done is unknown.
    pub fn cut_off(&mut self, id: &str, name: &str) -> Ruling {
        self.withhold(
            id,
            name,
            "The answer ended before this tool call was complete, so it was not released.",
        )
    }

    /// Withholds a call the answer described in two ways (announced as one thing, finished
    /// as another): a client could run either.
    pub fn inconsistent(&mut self, id: &str, name: &str) -> Ruling {
        self.withhold(
            id,
            name,
            "The answer described this tool call differently as it went, so it was not released.",
        )
    }

    fn withhold(&mut self, id: &str, name: &str, reason: &str) -> Ruling {
        if self.judged.len() < MAX_JUDGED {
            self.judged.push((id.to_string(), name.to_string()));
        }
        let d = invalid(&self.engine, name, reason);
        let call = Call {
            principal: self.principal.clone(),
            direction: Direction::Proposal,
            ..Call::request(&self.session, name, Value::Null)
        };
        // A withheld call stays withheld whether or not the log took it.
        let _ = self.record(&call, &d);
        self.block(id, name, d, &Value::Null)
    }

    fn block(&mut self, id: &str, name: &str, d: Decision, args: &Value) -> Ruling {
        let approvable = self.header_approvals
            && d.call_digest.is_some()
            && (d.decision == Verdict::Approve || d.reason_code == Some(ReasonCode::TaintRevoked));
        let request = match &self.desk {
            Some(desk) if approvable => {
                let call = Call {
                    principal: self.principal.clone(),
                    ..Call::request(&self.session, name, args.clone())
                };
                bulwark_approvals::Ask::for_call("proxy", &call, &d, self.engine.policy())
                    .and_then(|ask| desk.file(&ask, self.now().1).ok())
                    .map(|r| r.id)
            }
            _ => None,
        };
        let b = Blocked {
            id: id.to_string(),
            tool: name.to_string(),
            decision: d,
            approvable,
            request,
        };
        if self.blocked.len() < MAX_JUDGED {
            self.blocked.push(b.clone());
        }
        Ruling::Block(Box::new(b))
    }

    /// Seed 001's sandbox: with `llm.sandbox`, a shell call refused only because taint
    /// revoked `net.egress` / `exec.arbitrary` runs without a network instead — if the rest
    /// of the pipeline (rules and all) lets it through once the revocation is waived.
    fn sandboxed(&mut self, call: &Call, d: &Decision) -> Option<Value> {
        if !self.engine.policy().llm.sandbox || d.reason_code != Some(ReasonCode::TaintRevoked) {
            return None;
        }
        let forbidden = self.engine.policy().taint.forbidden(d.taint);
        let violated = forbidden.intersection(d.capabilities);
        let only_network = violated.iter().all(|c| {
            matches!(
                c,
                bulwark_engine::Capability::NetEgress | bulwark_engine::Capability::ExecArbitrary
            )
        });
        let command = call.args.get("command").and_then(Value::as_str)?;
        if !only_network || violated.is_empty() {
            return None;
        }
        // Everything but the revocation must still pass: judged in a scratch state with a
        // grant for this exact call, so the real session is untouched.
        let digest = d.call_digest.clone()?;
        let (mono, _) = self.now();
        let mut scratch = State::new(self.engine.policy());
        let s = scratch.sessions.get(&call.session, mono);
        s.taint = d.taint;
        scratch.grant(digest, mono.saturating_add(1000));
        let again = self.engine.evaluate(call, &mut scratch, Now::at(mono));
        if !again.is_allowed() {
            return None;
        }
        let mut args = call.args.clone();
        args["command"] = Value::String(sandbox_command(command));
        Some(args)
    }

    /// Records a decision; `false` when the log could not take it.
    fn record(&self, call: &Call, d: &Decision) -> bool {
        if let Some(m) = &self.metrics {
            m.observe("proxy", d);
        }
        match &self.audit {
            Some(a) => a.record(&Entry::for_call("proxy", call, d)).is_ok(),
            None => true,
        }
    }

    /// The calls judged so far, as (id, tool), the first [`MAX_JUDGED`].
    pub fn judged(&self) -> &[(String, String)] {
        &self.judged
    }

    /// Calls withheld so far.
    pub fn blocked(&self) -> &[Blocked] {
        &self.blocked
    }

    /// Whether anything was changed so far.
    pub fn changed(&self) -> bool {
        !self.blocked.is_empty() || !self.rewritten.is_empty()
    }

    /// The `bulwark` object added to a changed response.
    pub fn metadata(&mut self) -> Value {
        let taint: Vec<&str> = self.taint().iter().map(|t| t.as_str()).collect();
        json!({
            "blocked": self.blocked.iter().map(|b| {
                let d = &b.decision;
                json!({
                    "id": b.id,
                    "tool": b.tool,
                    "decision": d.decision.as_str(),
                    "reason_code": d.reason_code.map(|c| c.as_str()),
                    "rule_id": d.rule_id,
                    "severity": d.severity.map(|s| s.as_str()),
                    "reason": d.reason,
                    "safer_alternative": d.safer_alternative,
                    "capabilities": d.capabilities,
                    "approval": b.approvable.then(|| json!({
                        "request": b.request,
                        "digest": d.call_digest,
                        "header": APPROVE_HEADER,
                        "mint": format!("bulwark approvals token --digest {}", d.call_digest.as_deref().unwrap_or("")),
                    })),
                })
            }).collect::<Vec<_>>(),
            "rewritten": self.rewritten.iter().map(|(id, why)| json!({"id": id, "why": why})).collect::<Vec<_>>(),
            "approved": self.approved,
            "taint": taint,
            "session": self.session,
        })
    }
}

fn invalid(engine: &Engine, name: &str, reason: &str) -> Decision {
    let mut d = Decision::invalid_input(reason, &engine.policy().version);
    d.tool = name.to_string();
    d.safer_alternative = None;
    d
}

/// The text an agent reads instead of a withheld call.
pub fn explain(b: &Blocked) -> String {
    let d = &b.decision;
    let code = d.reason_code.map(|c| c.as_str()).unwrap_or("BLOCKED");
    let mut s = format!(
        "[Bulwark] The tool call `{}` (id {}) was not run: {} ({code}",
        b.tool, b.id, d.reason
    );
    if let Some(r) = &d.rule_id {
        s.push_str(&format!(", rule {r}"));
    }
    s.push(')');
    if let Some(alt) = &d.safer_alternative {
        s.push_str(&format!(" {alt}"));
    }
    match (&d.call_digest, b.approvable) {
        (Some(_), true) if b.request.is_some() => s.push_str(&format!(
            " Tell the user what you wanted to do and why; do not try to approve it yourself. A person who agrees approves request {id} (`bulwark approvals approve {id}`, or the console) and has the token it gives sent in the {APPROVE_HEADER} header; then propose the same call again.",
            id = b.request.as_deref().unwrap_or_default()
        )),
        (Some(digest), true) => s.push_str(&format!(
            " Tell the user what you wanted to do and why; do not try to approve it yourself. A person who agrees can mint a token for this exact call (`bulwark approvals token --digest {digest}`) and have it sent in the {APPROVE_HEADER} header; then propose the same call again."
        )),
        _ => s.push_str(" This call cannot be approved through the proxy."),
    }
    s
}

/// `command` run in a new network namespace: the process sees no network at all.
pub fn sandbox_command(command: &str) -> String {
    format!(
        "unshare --map-root-user --net -- sh -c '{}'",
        command.replace('\'', r"'\''")
    )
}
