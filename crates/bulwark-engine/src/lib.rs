//! Bulwark's evaluation engine: a [`Call`] in, a [`Decision`] out, the same for every front.
//!
//! The engine runs the pipeline of DESIGN §5 — lockdown, validate, classify, rate, loop,
//! integrity, content, destinations, taint, sequences, rules, approval, verdict cache —
//! one module per stage under [`stages`], in that order.
//!
//! **Key design decision: sans-I/O.** The engine is a synchronous library. It opens no
//! sockets or files, starts no threads, reads no clock and draws no randomness: the front
//! passes in the time ([`Now`]) and the state ([`State`]) with each call. The alternative —
//! an engine that owned a runtime, timers and its own storage — would tie it to one front's
//! concurrency model, make tests depend on wall-clock time, and make the C ABI heavy. As it
//! is, the same engine runs in a single-threaded CLI, behind a multi-threaded gateway and
//! inside `libbulwark`, and every test is deterministic. (The models: `rustls`,
//! `quinn-proto`, `h2`'s codec.)
//!
//! ```
//! use bulwark_engine::{Call, Engine, Now, State};
//! use bulwark_policy::{Policy, Verdict};
//!
//! let engine = Engine::new(Policy::builtin().unwrap());
//! let mut state = State::new(engine.policy());
//! let call = Call::request("s1", "execute_sql", serde_json::json!({"sql": "DROP DATABASE prod"}));
//! let d = engine.evaluate(&call, &mut state, Now::at(0));
//! assert_eq!(d.decision, Verdict::Block);
//! assert_eq!(d.rule_id.as_deref(), Some("sql.drop_database"));
//! ```

pub mod analysis;
pub mod bounded;
pub mod bucket;
pub mod call;
pub mod canonical;
pub mod decision;
pub mod deep;
pub mod escalation;
pub mod infer;
pub mod line;
pub mod pins;
pub mod pipeline;
pub mod provenance;
pub mod scanner;
pub mod schema_check;
pub mod session;
pub mod stages;
pub mod state;
pub mod time;
pub mod token;
pub mod toolset;
pub mod verdict_cache;

use std::sync::Arc;

pub use bulwark_policy::{
    self as policy, CapSet, Capability, Policy, ReasonCode, Severity, Taint, TaintSet,
    UnknownAction, Verdict,
};
pub use call::{Call, Definition, Direction, Principal, Profile, ToolRef};
pub use decision::{Decision, EscalationMode, Finding};
pub use deep::DeepGuard;
pub use escalation::{Escalator, FleetTarget};
pub use pipeline::{FleetAnswer, Observer, Outcome, Pass, Quiet};
pub use scanner::{
    BuiltinScanner, ContentFinding, ContentScanner, NoScanner, ScanInput, ScanOutput,
};
pub use session::Session;
pub use stages::Stage;
pub use stages::approval::call_digest;
pub use state::{State, Tables};
pub use time::Now;

/// The engine: a compiled policy and a content scanner. Cheap to clone; share it freely.
#[derive(Clone, Debug)]
pub struct Engine {
    policy: Arc<Policy>,
    scanner: Arc<dyn ContentScanner>,
    guard: Option<Arc<dyn DeepGuard>>,
}

impl Engine {
    /// An engine for `policy` with the built-in content scanner (`bulwark-scan`).
    pub fn new(policy: Policy) -> Engine {
        let scanner: Arc<dyn ContentScanner> = match bulwark_scan::Scanner::new() {
            Ok(s) => Arc::new(scanner::BuiltinScanner::new(
                s.with_max_bytes(policy.content.max_scan_bytes),
            )),
            // Cannot happen with the tested built-in tables; if it did, fail closed.
            Err(_) => Arc::new(scanner::Unavailable),
        };
        Engine {
            policy: Arc::new(policy),
            scanner,
            guard: None,
        }
    }

    /// The same engine with `guard` as its deep path (stage `guard`; it runs only when the
    /// policy enables it).
    pub fn with_guard(self, guard: Option<Arc<dyn DeepGuard>>) -> Engine {
        Engine { guard, ..self }
    }

    /// The same engine with `scanner` as its content stage.
    pub fn with_scanner(self, scanner: Arc<dyn ContentScanner>) -> Engine {
        Engine { scanner, ..self }
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    fn run(
        &self,
        call: &Call,
        state: &mut State,
        now: Now,
        observer: &mut dyn Observer,
        pass: Pass,
    ) -> Decision {
        let env = state.env(&call.session, now.mono_ms);
        self.decide(call, env.session, env.tables, now, observer, pass)
    }

    /// Decides one call with its session and the tables sessions share kept wherever the
    /// caller keeps them (a sharded store, another process): what a front that decides
    /// from many threads calls. `session` must be the call's own ([`Call::session`]).
    pub fn decide(
        &self,
        call: &Call,
        session: &mut Session,
        tables: &mut dyn Tables,
        now: Now,
        observer: &mut dyn Observer,
        pass: Pass,
    ) -> Decision {
        pipeline::run(
            &self.policy,
            self.scanner.as_ref(),
            self.guard.as_deref(),
            call,
            session,
            tables,
            now,
            observer,
            pass,
        )
    }

    /// Decides one call. `state` is updated (sessions, buckets, pins, …); `now` is the
    /// front's monotonic clock.
    pub fn evaluate(&self, call: &Call, state: &mut State, now: Now) -> Decision {
        self.run(call, state, now, &mut Quiet, Pass::default())
    }

    /// Decides a tool result that has already reached the agent — one in an LLM request's
    /// history — and adds its taint to the session whatever the verdict: refusing it now
    /// cannot take it out of the model's context, so a result the engine would block
    /// taints the session all the same.
    ///
    /// ```
    /// use bulwark_engine::{Call, Engine, Now, State, Taint};
    ///
    /// let engine = Engine::new(bulwark_engine::Policy::builtin().unwrap());
    /// let mut state = State::new(engine.policy());
    /// let read = Call::response("s1", "bash", serde_json::json!({"command": "cat ~/.ssh/id_rsa"}),
    ///     serde_json::json!("-----BEGIN OPENSSH PRIVATE KEY-----"));
    /// let d = engine.absorb(&read, &mut state, Now::at(0));
    /// assert!(d.taint.contains(Taint::PrivateData));
    /// ```
    pub fn absorb(&self, call: &Call, state: &mut State, now: Now) -> Decision {
        self.run(
            call,
            state,
            now,
            &mut Quiet,
            Pass {
                delivered: true,
                ..Pass::default()
            },
        )
    }

    /// Decides again a call whose `sync_block` escalation the fleet answered with
    /// `verdict`, `first` being the decision that escalated it: stage 12 takes `verdict` as
    /// if cached, nothing the first decision already charged (rate tokens, burst hits) is
    /// charged twice, and an approval it used still stands. Caching the verdict for later
    /// calls is the front's business ([`State::cache_verdict`]), so a TTL of 0 answers this call
    /// without ever being visible to another. Only a first decision that was not let
    /// through should be decided again: one that was has committed its session state.
    pub fn evaluate_answered(
        &self,
        call: &Call,
        state: &mut State,
        now: Now,
        first: &Decision,
        verdict: Verdict,
    ) -> Decision {
        self.run(call, state, now, &mut Quiet, Pass::answered(first, verdict))
    }

    /// Decides one call, reporting each stage to `observer` (for `policy explain`).
    pub fn evaluate_observed(
        &self,
        call: &Call,
        state: &mut State,
        now: Now,
        observer: &mut dyn Observer,
    ) -> Decision {
        self.run(call, state, now, observer, Pass::default())
    }
}
