//! The engine's side of one model request: taint from the history, then a ruling on every
//! tool call the model proposes.

use std::collections::HashMap;
use std::sync::Arc;

use bulwark_engine::token::Approved;
use bulwark_engine::{
    Call, Decision, Definition, Direction, Engine, Now, Principal, ReasonCode, Session, State,
    Taint, TaintSet, ToolRef, Verdict,
};
use bulwark_gate::{Approval, Gate, Person};
use serde_json::{Value, json};

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

/// One request's judge.
pub struct Judge {
    gate: Arc<Gate>,
    engine: Arc<Engine>,
    /// The session of a request that names none: this request's own, gone with it.
    scratch: Option<Session>,
    session: String,
    principal: Principal,
    tokens: Vec<(String, Approved)>,
    cache: Option<Arc<ResultCache>>,
    header_approvals: bool,
    blocked: Vec<Blocked>,
    rewritten: Vec<(String, String)>,
    approved: Vec<String>,
    judged: Vec<(String, String)>,
    following: TaintSet,
    definitions: HashMap<String, Definition>,
    provenance: bool,
    sources: crate::provenance::Sources,
    kept: usize,
    /// The model call's span, exported when the judge is done.
    trace: Option<crate::trace::Trace>,
}

impl Drop for Judge {
    fn drop(&mut self) {
        if let Some(t) = self.trace.take() {
            t.finish(&self.judged, &self.blocked);
        }
    }
}

/// Most bytes of conversation text kept for provenance. Past it nothing more is kept, so a
/// value can only look less settled (a call stays refused), never more.
pub const MAX_PROVENANCE_BYTES: usize = 8 << 20;

/// What a [`Judge`] needs besides the gate.
#[derive(Default)]
pub struct Context {
    /// `Some(id)` keeps taint across requests under that session id.
    pub session: Option<String>,
    /// Who is calling (a digest of their API credential, unverified).
    pub principal: Principal,
    /// Valid approval tokens from the request's headers, with the token text.
    pub tokens: Vec<(String, Approved)>,
    /// The taint of results read before; `None` reads every result every time.
    pub cache: Option<Arc<ResultCache>>,
    /// The request's tool definitions by name ([`crate::tools::definitions`]): what the
    /// engine infers an unmapped tool does, for its calls and its results.
    pub definitions: HashMap<String, Definition>,
    /// Decide calls the revocation matrix refuses once more by where their consequential
    /// arguments came from ([`crate::provenance`]).
    pub provenance: bool,
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
    fn key(&self, version: &str, r: &Exchange, def: Option<&Definition>) -> u64 {
        use std::hash::{BuildHasher, Hash, Hasher};
        let mut h = self.keys.build_hasher();
        version.hash(&mut h);
        // The definition decides what an unmapped tool's result gives.
        if let Some(d) = def {
            d.description.hash(&mut h);
            bulwark_engine::canonical::hash_value(&d.input_schema, &mut h);
            bulwark_engine::canonical::hash_value(&d.annotations, &mut h);
        }
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
    /// A judge for one request, deciding through `gate`.
    pub fn new(gate: Arc<Gate>, cx: Context) -> Judge {
        let engine = gate.engine();
        let (scratch, session) = match cx.session {
            Some(s) => (None, format!("llm:{s}")),
            // A request without a session keeps no state of its own past itself; the
            // tables every session shares (the fleet's verdicts and kill switch, rate
            // limits above the session) hold for it as for any other.
            None => (Some(Session::default()), "llm".into()),
        };
        let channels = &engine.policy().approvals.channels;
        let header_approvals =
            channels.is_empty() || channels.contains(&bulwark_policy::ApprovalChannel::Header);
        Judge {
            gate,
            engine,
            scratch,
            session,
            principal: cx.principal,
            tokens: if header_approvals {
                cx.tokens
            } else {
                Vec::new()
            },
            cache: cx.cache,
            header_approvals,
            blocked: Vec::new(),
            rewritten: Vec::new(),
            approved: Vec::new(),
            judged: Vec::new(),
            following: TaintSet::NONE,
            definitions: cx.definitions,
            provenance: cx.provenance,
            sources: Default::default(),
            kept: 0,
            trace: None,
        }
    }

    /// Keeps the model call's span, to be exported with what was judged when this judge
    /// is done.
    pub fn traced(&mut self, trace: Option<crate::trace::Trace>) {
        self.trace = trace;
    }

    /// Notes the upstream's status on the span, if there is one.
    pub fn trace_status(&mut self, code: u16) {
        if let Some(t) = &mut self.trace {
            t.status(code);
        }
    }

    /// Takes in the user's own messages, for provenance.
    pub fn hear_user(&mut self, texts: Vec<String>) {
        for t in texts {
            if self.keep(&t) {
                self.sources.user.push(t);
            }
        }
    }

    fn keep(&mut self, t: &str) -> bool {
        if !self.provenance || self.kept + t.len() > MAX_PROVENANCE_BYTES {
            return false;
        }
        self.kept += t.len();
        true
    }

    fn heard_result(&mut self, content: &Value, taint: TaintSet) {
        let text = match content {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if self.keep(&text) {
            if taint.contains(Taint::UntrustedInput) {
                self.sources.untrusted.push(text);
            } else {
                self.sources.trusted.push(text);
            }
        }
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
        let mono = self.gate.now_ms();
        let mut added = TaintSet::NONE;
        let mut scratch: Option<State> = None;
        let version = self.engine.policy().version.clone();
        for (i, r) in results.iter().enumerate() {
            let def = r.tool.as_ref().and_then(|t| self.definitions.get(t));
            let key = self.cache.as_ref().map(|c| c.key(&version, r, def));
            if let (Some(c), Some(k)) = (&self.cache, key)
                && let Some(t) = c.get(k)
            {
                added = added.union(t);
                self.heard_result(&r.content, t);
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
                definition: def.cloned(),
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
            self.heard_result(&r.content, taint);
            added = added.union(taint);
            if d.decision != Verdict::Allow {
                let call = Call {
                    session: self.session.clone(),
                    ..call
                };
                // The result is in the model's context already: a log that cannot take
                // this changes nothing about it.
                let _ = self.gate.record(&call, &d);
            }
        }
        self.inherit(added);
        self.taint()
    }

    /// Adds taint the session carries from elsewhere (a chained `previous_response_id`).
    pub fn inherit(&mut self, taint: TaintSet) {
        match &mut self.scratch {
            Some(s) => s.add_taint(taint),
            None => {
                if self.gate.add_taint(&self.session, taint).is_err() {
                    // Taint the store cannot keep: the rest of this request is judged in a
                    // session of its own that holds both kinds.
                    let mut s = Session::default();
                    s.add_taint(everything());
                    self.scratch = Some(s);
                }
            }
        }
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
        match &self.scratch {
            Some(s) => s.taint(),
            None => self
                .gate
                .taint(&self.session)
                .unwrap_or_else(|_| everything()),
        }
    }

    /// Rules on one proposed call. `args` is what the model wrote, already parsed
    /// ([`crate::history::arguments`]); arguments that are not a JSON object are refused.
    pub fn judge(&mut self, id: &str, name: &str, args: &Value) -> Ruling {
        if self.judged.len() < MAX_JUDGED {
            self.judged.push((id.to_string(), name.to_string()));
        }
        let call = Call {
            principal: self.principal.clone(),
            direction: Direction::Proposal,
            tool: ToolRef {
                name: name.to_string(),
                ..ToolRef::default()
            },
            definition: self.definitions.get(name).cloned(),
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
            // Taint comes from results, which arrive in the next request's history. A
            // proposal's own class (a read of private data, say) must not taint the calls
            // proposed beside it: they run in parallel and cannot see its result.
            let decide = self
                .gate
                .call(&call)
                .holding_taint()
                .person(Person::Caller)
                .tokens(&self.tokens);
            let mut ruling = match self.scratch.as_mut() {
                Some(s) => decide.in_session(s).decide(),
                None => decide.decide(),
            };
            if self.provenance && ruling.decision.reason_code == Some(ReasonCode::TaintRevoked) {
                ruling = self.by_provenance(&call, ruling);
            }
            // What a released call brings once it has run, for whoever continues this
            // answer without the call in hand (a chained Responses turn).
            self.following = self.following.union(ruling.decision.taint);
            if matches!(ruling.approval, Some(Approval::Token(_))) {
                self.approved.push(id.to_string());
            }
            return self.rule(id, name, &call, ruling.decision);
        };
        // Refused before the engine: recorded whether or not the log takes it.
        let _ = self.gate.record(&call, &d);
        self.rule(id, name, &call, d)
    }

    /// A call the matrix revoked, looked at by where its consequential values came from
    /// ([`crate::provenance`]): settled ones are decided again without the session's taint
    /// (every other check still runs); the others stay refused, saying which value.
    fn by_provenance(
        &mut self,
        call: &Call,
        mut ruling: bulwark_gate::Ruling,
    ) -> bulwark_gate::Ruling {
        use crate::provenance::Origin;
        match self.sources.origin(&call.args) {
            Origin::Settled => {
                let mut fresh = Session::default();
                self.gate
                    .call(call)
                    .holding_taint()
                    .person(Person::Caller)
                    .tokens(&self.tokens)
                    .in_session(&mut fresh)
                    .decide()
            }
            Origin::Untrusted(v) => {
                ruling.decision.reason.push_str(&format!(
                    " Its value {v:?} appears only in content from outside (a tool result that carried untrusted input), not in anything the user wrote."
                ));
                ruling
            }
            Origin::Unknown(v) => {
                ruling.decision.reason.push_str(&format!(
                    " Its value {v:?} does not appear in the user's messages, so where it came from cannot be settled."
                ));
                ruling
            }
        }
    }

    fn rule(&mut self, id: &str, name: &str, call: &Call, d: Decision) -> Ruling {
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
                if let Some(args) = self.sandboxed(call, &d) {
                    self.rewritten.push((id.to_string(), "sandboxed".into()));
                    return Ruling::Rewrite(args);
                }
                self.block(id, name, d, &call.args)
            }
        }
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
        let _ = self.gate.record(&call, &d);
        self.block(id, name, d, &Value::Null)
    }

    fn block(&mut self, id: &str, name: &str, d: Decision, args: &Value) -> Ruling {
        let approvable = self.header_approvals
            && d.call_digest.is_some()
            && (d.decision == Verdict::Approve || d.reason_code == Some(ReasonCode::TaintRevoked));
        let request = match self.gate.desk() {
            Some(desk) if approvable => {
                let call = Call {
                    principal: self.principal.clone(),
                    ..Call::request(&self.session, name, args.clone())
                };
                bulwark_approvals::Ask::for_call(self.gate.front(), &call, &d, self.engine.policy())
                    .and_then(|ask| desk.file(&ask, self.gate.clock().unix_s()).ok())
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
        let mono = self.gate.now_ms();
        let mut scratch = State::new(self.engine.policy());
        scratch.add_taint(&call.session, d.taint, mono);
        scratch.grant(digest, mono.saturating_add(1000));
        let again = self.engine.evaluate(call, &mut scratch, Now::at(mono));
        if !again.is_allowed() {
            return None;
        }
        let mut args = call.args.clone();
        args["command"] = Value::String(sandbox_command(command));
        Some(args)
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

/// Both kinds of taint: what a session whose taint cannot be read is taken to hold.
fn everything() -> TaintSet {
    [Taint::PrivateData, Taint::UntrustedInput]
        .into_iter()
        .collect()
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
