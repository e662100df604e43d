//! A device's side of the protocol, without I/O: which requests it is waiting for, which
//! replies it accepts (authenticated, and bound to a request: device, nonce, tool hash),
//! which policy updates and kill commands it acts on. The MQTT client ([`crate::client`])
//! feeds it messages and a clock.

use std::collections::{HashMap, VecDeque};

use sha2::{Digest, Sha256};

use crate::auth::Trust;
use crate::wire::{Kill, KillCommand, PolicyUpdate, VerdictReply, VerdictRequest};

/// Requests waiting for a reply at once, at most.
pub const MAX_OUTSTANDING: usize = 1024;
/// Answered or expired nonces remembered, to tell a replay or a late reply from a forgery.
pub const MAX_REMEMBERED: usize = 4096;
/// Policy sequence numbers remembered.
pub const MAX_SEQS: usize = 1024;

/// A request waiting for its reply.
#[derive(Clone, Debug)]
struct Outstanding {
    tool_hash: String,
    deadline_ms: u64,
}

/// Why a reply was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Dropped {
    /// Not signed by a key this device trusts.
    #[error("forged: no valid signature")]
    Forged,
    /// For a request answered already.
    #[error("replayed: the request was answered already")]
    Replayed,
    /// For a request given up on.
    #[error("late: the request timed out")]
    Late,
    /// For another device, another request or another tool.
    #[error("mismatched: not an answer to a request of this device")]
    Mismatched,
}

/// Counters of what was accepted and dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Replies accepted.
    pub accepted: u64,
    /// [`Dropped::Forged`].
    pub forged: u64,
    /// [`Dropped::Replayed`].
    pub replayed: u64,
    /// [`Dropped::Late`].
    pub late: u64,
    /// [`Dropped::Mismatched`].
    pub mismatched: u64,
}

/// An accepted reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// The nonce it answers.
    pub nonce: String,
    /// The tool hash.
    pub tool_hash: [u8; 32],
    /// The verdict.
    pub action: crate::wire::Action,
    /// TTL in minutes as sent (the engine's verdict cache caps it).
    pub ttl_min: u64,
    /// Why.
    pub reason: String,
}

/// Why a policy update or kill command was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Bad or missing signature.
    #[error("bad signature")]
    BadSignature,
    /// `sha256` does not match the policy text.
    #[error("the policy does not match its digest")]
    BadDigest,
    /// Not newer than the policy in force.
    #[error("version {got} is not higher than {current} (anti-rollback)")]
    Rollback {
        /// The update's version.
        got: u64,
        /// The version in force.
        current: u64,
    },
    /// A sequence number seen before.
    #[error("sequence {0} was seen before (replay)")]
    Replay(u64),
    /// A kill command not newer than the last one.
    #[error("kill sequence {got} is not higher than {last}")]
    Stale {
        /// The command's sequence.
        got: u64,
        /// The last one acted on.
        last: u64,
    },
    /// Updates are refused during a lockdown.
    #[error("locked down: policy updates wait for RESUME")]
    LockedDown,
    /// Another protocol version.
    #[error("protocol version {0} is not supported")]
    Version(u32),
}

/// One device's protocol state.
pub struct Device {
    id: String,
    trust: Trust,
    outstanding: HashMap<String, Outstanding>,
    done: VecDeque<String>,
    /// What was accepted and dropped.
    pub counters: Counters,
    policy_version: u64,
    seqs: VecDeque<u64>,
    kill_seq: u64,
    locked: bool,
}

/// Why a request could not be made.
#[derive(Debug, thiserror::Error)]
#[error("{MAX_OUTSTANDING} verdict requests wait already")]
pub struct Busy;

/// What a call escalated to the fleet is.
#[derive(Clone, Debug, Default)]
pub struct Escalation<'a> {
    /// The tool name.
    pub tool: &'a str,
    /// DefenseClaw capability bits.
    pub capabilities: u8,
    /// Where it goes.
    pub destination: Option<&'a str>,
    /// Its content.
    pub content: &'a str,
    /// Session risk: id and taint.
    pub session: serde_json::Value,
}

impl Device {
    /// A device named `id` trusting `trust`, with policy `policy_version` in force.
    pub fn new(id: &str, trust: Trust, policy_version: u64) -> Device {
        Device {
            id: id.to_string(),
            trust,
            outstanding: HashMap::new(),
            done: VecDeque::new(),
            counters: Counters::default(),
            policy_version,
            seqs: VecDeque::new(),
            kill_seq: 0,
            locked: false,
        }
    }

    /// This device's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The policy version in force.
    pub fn policy_version(&self) -> u64 {
        self.policy_version
    }

    /// Takes back the kill switch state saved before a restart: commands at or below `seq`
    /// are stale, and `locked` says whether a `LOCKDOWN` is in force.
    pub fn restore_kill(&mut self, seq: u64, locked: bool) {
        self.kill_seq = seq;
        self.locked = locked;
    }

    /// Whether a `LOCKDOWN` is in force.
    pub fn locked(&self) -> bool {
        self.locked
    }

    /// A verdict request with `nonce` (fresh, random, 32 hex digits), waited for until
    /// `deadline_ms`.
    pub fn request(
        &mut self,
        nonce: &str,
        e: &Escalation<'_>,
        deadline_ms: u64,
        ts_ms: u64,
    ) -> Result<VerdictRequest, Busy> {
        if self.outstanding.len() >= MAX_OUTSTANDING {
            return Err(Busy);
        }
        let tool_hash: String = Sha256::digest(e.tool.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        self.outstanding.insert(
            nonce.to_string(),
            Outstanding {
                tool_hash: tool_hash.clone(),
                deadline_ms,
            },
        );
        Ok(VerdictRequest {
            v: crate::wire::VERSION,
            device: self.id.clone(),
            nonce: nonce.to_string(),
            tool_hash,
            tool: crate::wire::cut(e.tool, crate::wire::TOOL_NAME_MAX),
            capabilities: e.capabilities,
            destination: e.destination.map(str::to_string),
            snippet: crate::wire::cut(e.content, crate::wire::ESCALATION_PAYLOAD_MAX),
            session: e.session.clone(),
            ts_ms,
        })
    }

    fn remember(&mut self, nonce: String) {
        if self.done.len() >= MAX_REMEMBERED {
            self.done.pop_front();
        }
        self.done.push_back(nonce);
    }

    /// Gives up on requests past their deadline; their nonces, so the waiters can be told.
    pub fn expire(&mut self, now_ms: u64) -> Vec<String> {
        let late: Vec<String> = self
            .outstanding
            .iter()
            .filter(|(_, o)| o.deadline_ms <= now_ms)
            .map(|(n, _)| n.clone())
            .collect();
        for n in &late {
            self.outstanding.remove(n);
            self.remember(n.clone());
        }
        late
    }

    /// Stops waiting for `nonce` (its caller went away).
    pub fn forget(&mut self, nonce: &str) {
        if self.outstanding.remove(nonce).is_some() {
            self.remember(nonce.to_string());
        }
    }

    /// Checks a reply: authenticated, for this device, for a request still waiting, for
    /// the same tool. Anything else is dropped and counted.
    pub fn accept(&mut self, reply: &VerdictReply) -> Result<Accepted, Dropped> {
        let result = self.check(reply);
        match &result {
            Ok(_) => self.counters.accepted += 1,
            Err(Dropped::Forged) => self.counters.forged += 1,
            Err(Dropped::Replayed) => self.counters.replayed += 1,
            Err(Dropped::Late) => self.counters.late += 1,
            Err(Dropped::Mismatched) => self.counters.mismatched += 1,
        }
        result
    }

    fn check(&mut self, reply: &VerdictReply) -> Result<Accepted, Dropped> {
        let signed = reply
            .sig
            .as_ref()
            .is_some_and(|s| self.trust.verify("verdict-reply", reply, s, true));
        if !signed || reply.v != crate::wire::VERSION {
            return Err(Dropped::Forged);
        }
        if reply.device != self.id {
            return Err(Dropped::Mismatched);
        }
        let Some(o) = self.outstanding.get(&reply.nonce) else {
            return Err(if self.was_answered(&reply.nonce) {
                Dropped::Replayed
            } else if self.done.contains(&reply.nonce) {
                Dropped::Late
            } else {
                Dropped::Mismatched
            });
        };
        if o.tool_hash != reply.tool_hash {
            return Err(Dropped::Mismatched);
        }
        let mut hash = [0u8; 32];
        for (i, b) in hash.iter_mut().enumerate() {
            *b = u8::from_str_radix(reply.tool_hash.get(2 * i..2 * i + 2).unwrap_or("zz"), 16)
                .map_err(|_| Dropped::Mismatched)?;
        }
        self.outstanding.remove(&reply.nonce);
        self.remember(format!("answered:{}", reply.nonce));
        Ok(Accepted {
            nonce: reply.nonce.clone(),
            tool_hash: hash,
            action: reply.action,
            ttl_min: reply.ttl_min,
            reason: crate::wire::cut(&reply.reason, 500),
        })
    }

    fn was_answered(&self, nonce: &str) -> bool {
        let key = format!("answered:{nonce}");
        self.done.iter().any(|n| *n == key)
    }

    /// Checks a policy update: signed by the fleet key, its digest right, newer than the
    /// policy in force, a sequence never seen. The caller validates and applies the
    /// policy, then calls [`Device::applied`].
    pub fn check_policy(&mut self, u: &PolicyUpdate) -> Result<(), Refused> {
        if u.v != crate::wire::VERSION {
            return Err(Refused::Version(u.v));
        }
        let signed = u.sig.as_ref().is_some_and(|s| {
            s.alg == crate::auth::ED25519 && self.trust.verify("policy", u, s, false)
        });
        if !signed {
            return Err(Refused::BadSignature);
        }
        let digest: String = Sha256::digest(u.policy.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if digest != u.sha256 {
            return Err(Refused::BadDigest);
        }
        if self.seqs.contains(&u.seq) {
            return Err(Refused::Replay(u.seq));
        }
        if self.locked {
            return Err(Refused::LockedDown);
        }
        if u.version <= self.policy_version {
            self.note_seq(u.seq);
            return Err(Refused::Rollback {
                got: u.version,
                current: self.policy_version,
            });
        }
        self.note_seq(u.seq);
        Ok(())
    }

    fn note_seq(&mut self, seq: u64) {
        if self.seqs.len() >= MAX_SEQS {
            self.seqs.pop_front();
        }
        self.seqs.push_back(seq);
    }

    /// The policy `version` is in force (applied, or restored by a rollback).
    pub fn applied(&mut self, version: u64) {
        self.policy_version = version;
    }

    /// Checks a kill command: signed by the fleet key, a sequence higher than any acted
    /// on. Returns the command to carry out.
    pub fn check_kill(&mut self, k: &Kill) -> Result<KillCommand, Refused> {
        if k.v != crate::wire::VERSION {
            return Err(Refused::Version(k.v));
        }
        let signed = k.sig.as_ref().is_some_and(|s| {
            s.alg == crate::auth::ED25519 && self.trust.verify("kill", k, s, false)
        });
        if !signed {
            return Err(Refused::BadSignature);
        }
        if k.seq <= self.kill_seq {
            return Err(Refused::Stale {
                got: k.seq,
                last: self.kill_seq,
            });
        }
        self.kill_seq = k.seq;
        match k.command {
            KillCommand::Lockdown => self.locked = true,
            KillCommand::Resume => self.locked = false,
            KillCommand::BlockAll | KillCommand::FlushCache => {}
        }
        Ok(k.command)
    }
}
