//! What a front needs from the fleet at stage 12, and the one way every front settles an
//! escalated call.
//!
//! The engine only says that a call should be escalated ([`Decision::escalate`]); asking
//! the fleet is I/O, so it happens in the front through an [`Escalator`] (the MQTT client
//! in `bulwark-fleet`, wired up by the binary). [`SharedEngine::settle_escalation`] then
//! decides the call the same way in the daemon, the MCP gateway and the LLM proxy.

use serde_json::Value;

use crate::{Call, Decision, EscalationMode, SharedEngine, Verdict};

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

impl SharedEngine {
    /// Settles a decision whose verdict cache missed (`d.escalate` is set): `speculative`
    /// sends the request and keeps the provisional allow; `sync_block` waits for the
    /// fleet, caches its verdict (a TTL of 0 answers this call only) and decides the call
    /// again with it ([`SharedEngine::evaluate_answered`]), or keeps the `CLOUD_TIMEOUT`
    /// block when no answer came. A first decision that was let through anyway (monitor
    /// mode) stands: its session state is committed, so only the verdict is cached. `now`
    /// reads the front's monotonic clock after the wait. Any other decision is returned
    /// as it is.
    pub fn settle_escalation(
        &self,
        esc: &dyn Escalator,
        call: &Call,
        d: Decision,
        now: impl Fn() -> u64,
    ) -> Decision {
        match d.escalate {
            None => d,
            Some(EscalationMode::Speculative) => {
                esc.escalate(call, &d, false);
                d
            }
            Some(EscalationMode::SyncBlock) => {
                let Some((verdict, ttl)) = esc.escalate(call, &d, true) else {
                    return d;
                };
                let now_ms = now();
                if ttl > 0 {
                    let hash = crate::verdict_cache::tool_hash(&call.tool.name);
                    self.cache_verdict(hash, verdict, ttl, now_ms);
                }
                if d.is_allowed() {
                    return d;
                }
                let mut again = self.evaluate_answered(call, now_ms, &d, verdict);
                again.eval_us += d.eval_us;
                again
            }
        }
    }

    /// Caches the fleet's verdict for the tool with `tool_hash`
    /// ([`crate::verdict_cache::tool_hash`]) for `ttl_min` minutes (capped by the cache; 0
    /// removes it). A verdict the cache does not take (not allow, warn or block) is not
    /// cached, so the tool stays escalated.
    pub fn cache_verdict(&self, tool_hash: [u8; 32], verdict: Verdict, ttl_min: u64, now_ms: u64) {
        let _ = self
            .state()
            .verdicts
            .insert(tool_hash, verdict, ttl_min, now_ms);
    }

    /// Drops every cached fleet verdict (a policy update, the kill switch's `FLUSH_CACHE`).
    pub fn flush_verdicts(&self) {
        self.state().verdicts.clear();
    }

    /// Turns the lockdown stage on or off (the fleet's kill switch).
    pub fn set_lockdown(&self, on: bool) {
        self.state().lockdown = on;
    }
}
