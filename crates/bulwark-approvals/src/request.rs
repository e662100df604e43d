//! One approval request: what a person is asked to approve, and where it stands.

use bulwark_policy::Severity;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a request stands. `pending` is the only state a person can change; `approved`
/// becomes `used` when the call it approves goes through, once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Waiting for a person.
    Pending,
    /// A person said yes; the call may go through once.
    Approved,
    /// A person said no.
    Denied,
    /// Nobody answered in time: a no.
    Expired,
    /// The approved call went through.
    Used,
}

impl Status {
    /// The word in the store, the API and the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Approved => "approved",
            Status::Denied => "denied",
            Status::Expired => "expired",
            Status::Used => "used",
        }
    }
}

/// An approval request as stored and shown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Short id a person types (`bulwark approvals approve ID`).
    pub id: String,
    /// The call digest an approval is bound to (tool, canonical arguments, session,
    /// principal, policy version).
    pub digest: String,
    /// The front that asked (`mcp`, `proxy`, `daemon`).
    pub front: String,
    /// The tool.
    pub tool: String,
    /// The upstream server, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The session.
    pub session: String,
    /// The principal, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The policy version that asked for the approval.
    pub policy_version: String,
    /// The arguments with secrets and personal data masked: what the person sees.
    pub args: Value,
    /// Why the call needs a person.
    pub reason: String,
    /// The rule that asked, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_id: Option<String>,
    /// The decision's severity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// Created, in Unix seconds.
    pub created_s: u64,
    /// Past this (Unix seconds) a pending request reads as expired.
    pub expires_s: u64,
    /// Where it stands.
    pub status: Status,
    /// Which channel decided (`cli`, `console`, `webhook`, `inbox`, `mcp`, `timeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// When it was decided, in Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_s: Option<u64>,
    /// The person's note (a denial's reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Once approved: the token (a MAC over digest and expiry) that lets the call through
    /// once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// A denial or expiry has been told to the caller; a later identical call asks afresh.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reported: bool,
    /// The instance that created it (webhooks are sent by their creator only).
    #[serde(default)]
    pub owner: String,
}

impl Request {
    /// The status as of `now_s`: a pending request past its expiry reads as expired even
    /// before anyone wrote that down.
    pub fn status_at(&self, now_s: u64) -> Status {
        let approval_lapsed = self.status == Status::Approved
            && now_s
                >= self
                    .decided_s
                    .unwrap_or(0)
                    .saturating_add(crate::store::GRANT_TTL_S);
        if (self.status == Status::Pending && now_s >= self.expires_s) || approval_lapsed {
            Status::Expired
        } else {
            self.status
        }
    }

    /// The request as a person sees it, without the token (which only the admin API's
    /// approve answer and `show` carry).
    pub fn public(&self) -> Request {
        let mut r = self.clone();
        r.token = None;
        r
    }
}

impl Ask {
    /// The ask for `call`, which `front` decided as `d` under `policy`: `None` when the
    /// decision names no call digest (nothing an approval could be bound to). The timeout
    /// is the policy's for the tool and severity, a second at least.
    pub fn for_call(
        front: &str,
        call: &bulwark_engine::Call,
        d: &bulwark_engine::Decision,
        policy: &bulwark_policy::Policy,
    ) -> Option<Ask> {
        let timeout_ms = policy
            .approvals
            .timeout_for(&call.tool.name, d.severity)
            .max(1000);
        Some(Ask {
            digest: d.call_digest.clone()?,
            front: front.to_string(),
            tool: call.tool.name.clone(),
            server: call.tool.server.clone(),
            session: call.session.clone(),
            principal: call.principal.id.clone(),
            policy_version: d.policy_version.clone(),
            args: call.args.clone(),
            reason: d.reason.clone(),
            rule_id: d.rule_id.clone(),
            severity: d.severity,
            timeout_s: timeout_ms.div_ceil(1000),
        })
    }
}

/// What a front knows when it asks for a person.
#[derive(Clone, Debug)]
pub struct Ask {
    /// The call digest.
    pub digest: String,
    /// The front.
    pub front: String,
    /// The tool.
    pub tool: String,
    /// The upstream server.
    pub server: Option<String>,
    /// The session.
    pub session: String,
    /// The principal.
    pub principal: Option<String>,
    /// The policy version.
    pub policy_version: String,
    /// The arguments (masked before they are stored).
    pub args: Value,
    /// Why.
    pub reason: String,
    /// The rule.
    pub rule_id: Option<String>,
    /// The severity.
    pub severity: Option<Severity>,
    /// How long it may wait, in seconds.
    pub timeout_s: u64,
}
