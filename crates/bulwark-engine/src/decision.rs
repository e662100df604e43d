//! The `Decision`: what the front enforces, the audit writes, the CLI prints and metrics
//! count (DESIGN §4, §7). One vocabulary everywhere.

use bulwark_policy::{CapSet, FleetMode, ReasonCode, Severity, TaintSet, Verdict};
use serde::Serialize;
use serde_json::Value;

/// One thing a stage found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// The rule or detector that found it.
    pub rule_id: String,
    /// Its category (`sql`, `secret`, `ssrf`, `taint`, …).
    pub category: String,
    /// Byte span in the string it was found in, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span: Option<[usize; 2]>,
    /// JSON pointer to that string, when it is inside the arguments or result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// How bad it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// A learned model's probability, for the guard's finding (`guard.model`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
}

impl Finding {
    /// A finding with no span.
    pub fn new(rule_id: impl Into<String>, category: impl Into<String>) -> Finding {
        Finding {
            rule_id: rule_id.into(),
            category: category.into(),
            span: None,
            pointer: None,
            severity: None,
            score: None,
        }
    }
}

/// The engine's answer for one call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decision {
    /// allow · warn · mask · approve · block.
    pub decision: Verdict,
    /// Why; `null` for a plain allow.
    pub reason_code: Option<ReasonCode>,
    /// The rule that decided, when one did.
    pub rule_id: Option<String>,
    /// How bad.
    pub severity: Option<Severity>,
    /// A sentence the agent can read.
    pub reason: String,
    /// What to do instead.
    pub safer_alternative: Option<String>,
    /// The tool, as called.
    pub tool: String,
    /// What Bulwark derived the call can do.
    pub capabilities: CapSet,
    /// What led here.
    pub findings: Vec<Finding>,
    /// The session's taint after the call.
    pub taint: TaintSet,
    /// The policy that decided.
    pub policy_version: String,
    /// Evaluation time in microseconds, measured by the front.
    pub eval_us: u64,
    /// Where the call goes, as derived.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<String>,
    /// The payload with findings masked, when the decision is `mask`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub masked: Option<Value>,
    /// In monitor mode: the decision that would have been enforced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitor: Option<Verdict>,
    /// For `RATE_LIMIT`: when the bucket has a token again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// The fleet was asked and has not answered; the decision is provisional (seed 000's
    /// `PENDING`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
    /// The front should escalate this call to the fleet in this mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalate: Option<EscalationMode>,
    /// A human approval for this exact call was used.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub approved: bool,
    /// Digest of (tool, canonical arguments, session, principal, policy version): what an
    /// approval for this call is bound to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_digest: Option<String>,
    /// The verdict cache answered for this tool (seed 000's `cache: hit`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cache_hit: bool,
}

/// Fleet escalation modes, as the decision reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EscalationMode {
    /// Wait for the fleet.
    SyncBlock,
    /// Allow now, decide later.
    Speculative,
}

impl From<FleetMode> for EscalationMode {
    fn from(m: FleetMode) -> Self {
        match m {
            FleetMode::SyncBlock => EscalationMode::SyncBlock,
            FleetMode::Speculative => EscalationMode::Speculative,
        }
    }
}

impl Decision {
    /// The decision for input that is not a call at all: `INVALID_INPUT`, blocked, with
    /// the reason naming what was wrong. Every front answers malformed input with it.
    pub fn invalid_input(reason: impl Into<String>, policy_version: &str) -> Decision {
        Decision {
            decision: Verdict::Block,
            reason_code: Some(ReasonCode::InvalidInput),
            rule_id: None,
            severity: Some(Severity::High),
            reason: reason.into(),
            safer_alternative: Some(
                "Send one JSON object per call with at least a `tool` field (see docs/check.md)."
                    .into(),
            ),
            tool: String::new(),
            capabilities: CapSet::default(),
            findings: vec![Finding::new("input.malformed", "input")],
            taint: TaintSet::default(),
            policy_version: policy_version.to_string(),
            eval_us: 0,
            destinations: Vec::new(),
            masked: None,
            monitor: None,
            retry_after_ms: None,
            pending: false,
            escalate: None,
            approved: false,
            call_digest: None,
            cache_hit: false,
        }
    }

    /// Whether the front lets the call through (allow, warn, mask).
    pub fn is_allowed(&self) -> bool {
        self.decision <= Verdict::Mask
    }

    /// The decision as one JSON line.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"decision\":\"block\",\"reason_code\":\"INVALID_INPUT\",\"reason\":\"decision not serialisable: {e}\"}}"))
    }
}
