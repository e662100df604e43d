//! The two directions between a front and the fleet, as traits, so neither needs the other.
//!
//! The engine only says that a call should be escalated ([`crate::Decision::escalate`]);
//! asking the fleet is I/O, so it happens outside the engine through an [`Escalator`] (the
//! MQTT device in `bulwark-fleet`). The fleet in turn drives the front's enforcement point
//! — its policy, its verdict cache, its kill switch — through a [`FleetTarget`] (the gate
//! implements it). The binary wires the two together.

use serde_json::Value;

use crate::{Call, Decision, Policy, Verdict};

/// How a front reaches the fleet.
pub trait Escalator: Send + Sync {
    /// Asks the fleet about `call`. With `wait`, blocks up to the policy's fleet timeout
    /// and returns the verdict (allow, warn or block) and its TTL in minutes, or `None`
    /// when none came; without, sends the request and returns `None` at once.
    fn escalate(&self, call: &Call, d: &Decision, wait: bool) -> Option<(Verdict, u64)>;
    /// Sees every decision made (the canary watches the block rate).
    fn observe(&self, d: &Decision);
    /// Fleet counters for `stats`.
    fn stats(&self) -> Value;
    /// The fleet's version of the policy in force, when the fleet put it there (a local
    /// reload would silently replace it).
    fn fleet_policy(&self) -> Option<u64>;
}

/// What the fleet drives in a front: the policy in force, the verdict cache, the kill
/// switch.
pub trait FleetTarget: Send + Sync {
    /// Puts a policy in force.
    fn replace_policy(&self, policy: Policy);
    /// Caches a verdict for a tool hash (0 minutes removes it).
    fn cache_verdict(&self, tool_hash: [u8; 32], verdict: Verdict, ttl_min: u64);
    /// Drops every cached verdict.
    fn flush_verdicts(&self);
    /// Turns the lockdown stage on or off.
    fn set_lockdown(&self, on: bool);
}
