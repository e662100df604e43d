//! The messages on the wire and how they are signed (docs/fleet.md is the reference for
//! other implementations).
//!
//! Every message is one JSON object. A signed message carries `sig`; what is signed is the
//! message without `sig`, in canonical form — keys sorted, no whitespace, integers as
//! integers, UTF-8 — after a domain label naming the kind, so a signature for one kind of
//! message never verifies as another.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version in every message's `v`.
pub const VERSION: u32 = 1;
/// Most bytes of content a verdict request carries (seed 000's
/// `DCLAW_ESCALATION_PAYLOAD_MAX`).
pub const ESCALATION_PAYLOAD_MAX: usize = 256;
/// Longest tool name sent (seed 000's "shortened tool name").
pub const TOOL_NAME_MAX: usize = 64;
/// Largest message accepted from the broker.
pub const MAX_MESSAGE: usize = 1 << 20;

/// A device asks the fleet about a tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VerdictRequest {
    /// Protocol version.
    pub v: u32,
    /// The asking device.
    pub device: String,
    /// Fresh per request (32 hex digits): the reply must repeat it.
    pub nonce: String,
    /// SHA-256 of the tool name (64 hex digits): what verdicts are keyed by.
    pub tool_hash: String,
    /// The tool name, cut to [`TOOL_NAME_MAX`] bytes.
    pub tool: String,
    /// Capabilities, DefenseClaw bit flags.
    pub capabilities: u8,
    /// Where the call goes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// The content, cut to [`ESCALATION_PAYLOAD_MAX`] bytes.
    #[serde(default)]
    pub snippet: String,
    /// The session's risk: its id and taint labels.
    #[serde(default)]
    pub session: Value,
    /// The device's wall clock, Unix milliseconds (informational).
    pub ts_ms: u64,
}

/// A fleet verdict action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Action {
    /// Let it run.
    Allow,
    /// Let it run, flagged.
    Warn,
    /// Refuse it.
    Block,
}

/// How a message is signed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sig {
    /// `ed25519` (the fleet key) or `hmac-sha256` (the device's own key).
    pub alg: String,
    /// The signature or tag, hex.
    pub value: String,
}

/// The fleet's answer to one request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VerdictReply {
    /// Protocol version.
    pub v: u32,
    /// The device it answers.
    pub device: String,
    /// The request's nonce.
    pub nonce: String,
    /// The request's tool hash.
    pub tool_hash: String,
    /// The verdict.
    pub action: Action,
    /// How long to cache it, in minutes (capped by the device; 0 removes).
    pub ttl_min: u64,
    /// Why.
    #[serde(default)]
    pub reason: String,
    /// The signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<Sig>,
}

/// A signed policy for the whole fleet (published retained).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PolicyUpdate {
    /// Protocol version.
    pub v: u32,
    /// The policy's version: a device applies only a higher one (anti-rollback).
    pub version: u64,
    /// The publisher's sequence number: a device never applies one it has seen.
    pub seq: u64,
    /// The policy file (YAML).
    pub policy: String,
    /// SHA-256 of `policy`, hex.
    pub sha256: String,
    /// The fleet key's signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<Sig>,
}

/// Emergency commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum KillCommand {
    /// Refuse every call (the engine's lockdown).
    BlockAll,
    /// The same, and stop taking policy updates until `RESUME`.
    Lockdown,
    /// Drop every cached fleet verdict.
    FlushCache,
    /// Lift `BLOCK_ALL` / `LOCKDOWN`.
    Resume,
}

/// A signed emergency message (published retained).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Kill {
    /// Protocol version.
    pub v: u32,
    /// Strictly increasing: a device acts only on a higher one than it has seen.
    pub seq: u64,
    /// The command.
    pub command: KillCommand,
    /// Why, for the audit log.
    #[serde(default)]
    pub reason: String,
    /// The fleet key's signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<Sig>,
}

/// What a device reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// Protocol version.
    pub v: u32,
    /// The device.
    pub device: String,
    /// `online`, `policy_applied`, `policy_refused`, `rollback`, `kill_applied`,
    /// `retroactive_block`, `heartbeat`.
    pub event: String,
    /// The policy version in force.
    pub policy_version: u64,
    /// Whether a canary window is open.
    #[serde(default)]
    pub canary: bool,
    /// Blocks per decision over the last minute.
    #[serde(default)]
    pub block_rate: f64,
    /// What happened, for people.
    #[serde(default)]
    pub detail: String,
    /// Device wall clock, Unix milliseconds.
    pub ts_ms: u64,
}

/// The bytes a signature covers: a domain label for `kind`, then the canonical JSON of
/// `msg` without its `sig`.
pub fn signed_bytes<T: Serialize>(kind: &str, msg: &T) -> Vec<u8> {
    let mut v = serde_json::to_value(msg).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.remove("sig");
    }
    // serde_json's maps are ordered by key: `to_string` of a Value is the canonical form.
    let mut out = format!("bulwark-fleet v1 {kind}\n").into_bytes();
    out.extend_from_slice(v.to_string().as_bytes());
    out
}

/// Cuts `s` to at most `max` bytes on a character boundary.
pub fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The exact bytes other implementations must sign: if a dependency ever turned on
    /// serde_json's insertion-order maps, this would catch it.
    #[test]
    fn the_signed_form_is_pinned() {
        let r = VerdictReply {
            v: VERSION,
            device: "edge-1".into(),
            nonce: "ab".into(),
            tool_hash: "cd".into(),
            action: Action::Allow,
            ttl_min: 60,
            reason: "ok \"quoted\" é".into(),
            sig: Some(Sig {
                alg: "ed25519".into(),
                value: "ff".into(),
            }),
        };
        let bytes = signed_bytes("verdict-reply", &r);
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "bulwark-fleet v1 verdict-reply\n{\"action\":\"ALLOW\",\"device\":\"edge-1\",\"nonce\":\"ab\",\"reason\":\"ok \\\"quoted\\\" é\",\"tool_hash\":\"cd\",\"ttl_min\":60,\"v\":1}"
        );
    }
}
