//! The shared vocabulary: capabilities, taint, severities, verdicts and reason codes.
//!
//! Every part of Bulwark speaks these names (DESIGN §4); the policy file, decisions, the
//! audit record and metrics all use the strings defined here.

use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The name used in policy files, decisions and records.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// Looks a value up by its name.
            pub fn from_name(s: &str) -> Option<Self> {
                match s { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

named_enum! {
    /// What a tool call can do (DESIGN §4). Derived by Bulwark, never taken from a caller.
    pub enum Capability {
        /// Reads files.
        FsRead = "fs.read",
        /// Writes, moves or deletes files.
        FsWrite = "fs.write",
        /// Runs a shell command.
        ExecShell = "exec.shell",
        /// Sends data to a destination that is not approved.
        NetEgress = "net.egress",
        /// Sends data only to approved endpoints; never revoked by taint.
        NetEgressApproved = "net.egress.approved",
        /// Sends a message (email, chat, SMS).
        MsgSend = "msg.send",
        /// Changes the physical world.
        DeviceActuate = "device.actuate",
        /// Reads sensors.
        DeviceSense = "device.sense",
        /// Runs code not known in advance.
        ExecArbitrary = "exec.arbitrary",
        /// Destroys or publishes.
        ExecIrreversible = "exec.irreversible",
        /// Reads a database.
        DbRead = "db.read",
        /// Writes a database.
        DbWrite = "db.write",
        /// Changes a database's schema, users or server.
        DbAdmin = "db.admin",
    }
}

impl Capability {
    fn bit(self) -> u16 {
        1 << (self as u16)
    }

    /// Whether `self` is `family` or below it in the dotted hierarchy: `net.egress`
    /// covers `net.egress.approved`, `exec` covers `exec.shell`.
    pub fn is_within(self, family: &str) -> bool {
        let name = self.as_str();
        name == family
            || (name.starts_with(family) && name.as_bytes().get(family.len()) == Some(&b'.'))
    }
}

/// A set of capabilities.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CapSet(u16);

/// DefenseClaw's capability bits (seed 000) and the capability each maps to.
pub const DEFENSECLAW_BITS: &[(u8, Capability)] = &[
    (0x01, Capability::FsRead),
    (0x02, Capability::FsWrite),
    (0x04, Capability::ExecShell),
    (0x08, Capability::NetEgress),
    (0x10, Capability::MsgSend),
    (0x20, Capability::DeviceActuate),
    (0x40, Capability::DeviceSense),
];

impl CapSet {
    /// The empty set.
    pub const EMPTY: CapSet = CapSet(0);

    /// Adds a capability.
    pub fn insert(&mut self, c: Capability) {
        self.0 |= c.bit();
    }

    /// Removes a capability.
    pub fn remove(&mut self, c: Capability) {
        self.0 &= !c.bit();
    }

    /// Whether the set holds `c`.
    pub fn contains(self, c: Capability) -> bool {
        self.0 & c.bit() != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The union of two sets.
    pub fn union(self, other: CapSet) -> CapSet {
        CapSet(self.0 | other.0)
    }

    /// The capabilities in both sets.
    pub fn intersection(self, other: CapSet) -> CapSet {
        CapSet(self.0 & other.0)
    }

    /// Whether the sets share a capability.
    pub fn intersects(self, other: CapSet) -> bool {
        self.0 & other.0 != 0
    }

    /// The capabilities in declaration order.
    pub fn iter(self) -> impl Iterator<Item = Capability> {
        Capability::ALL
            .iter()
            .copied()
            .filter(move |c| self.contains(*c))
    }

    /// Whether any member is `family` or below it (see [`Capability::is_within`]).
    pub fn has_family(self, family: &str) -> bool {
        self.iter().any(|c| c.is_within(family))
    }

    /// Reads DefenseClaw's wire bits (seed 000). Bits above 0x7F are not capabilities.
    pub fn from_defenseclaw(bits: u8) -> Option<CapSet> {
        if bits & 0x80 != 0 {
            return None;
        }
        let mut set = CapSet::EMPTY;
        for &(bit, cap) in DEFENSECLAW_BITS {
            if bits & bit != 0 {
                set.insert(cap);
            }
        }
        Some(set)
    }

    /// DefenseClaw's wire bits for this set; `net.egress.approved` is `NET_FETCH` too.
    pub fn to_defenseclaw(self) -> u8 {
        let mut bits = 0;
        for &(bit, cap) in DEFENSECLAW_BITS {
            if self.contains(cap) {
                bits |= bit;
            }
        }
        if self.contains(Capability::NetEgressApproved) {
            bits |= 0x08;
        }
        bits
    }

    /// The names, for decisions and summaries.
    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(Capability::as_str).collect()
    }
}

impl FromIterator<Capability> for CapSet {
    fn from_iter<I: IntoIterator<Item = Capability>>(iter: I) -> Self {
        let mut s = CapSet::EMPTY;
        for c in iter {
            s.insert(c);
        }
        s
    }
}

impl Serialize for CapSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

named_enum! {
    /// A label a session collects from what its tools returned (DESIGN §4).
    pub enum Taint {
        /// The session has read private data.
        PrivateData = "private-data",
        /// The session has read content an outsider could write.
        UntrustedInput = "untrusted-input",
    }
}

/// A set of taint labels. Within a session it only grows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TaintSet(u8);

impl TaintSet {
    /// No taint.
    pub const NONE: TaintSet = TaintSet(0);

    /// Adds a label.
    pub fn insert(&mut self, t: Taint) {
        self.0 |= 1 << (t as u8);
    }

    /// Whether the set holds `t`.
    pub fn contains(self, t: Taint) -> bool {
        self.0 & (1 << (t as u8)) != 0
    }

    /// The union of two sets.
    pub fn union(self, other: TaintSet) -> TaintSet {
        TaintSet(self.0 | other.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The labels in declaration order.
    pub fn iter(self) -> impl Iterator<Item = Taint> {
        Taint::ALL
            .iter()
            .copied()
            .filter(move |t| self.contains(*t))
    }
}

impl FromIterator<Taint> for TaintSet {
    fn from_iter<I: IntoIterator<Item = Taint>>(iter: I) -> Self {
        let mut s = TaintSet::NONE;
        for t in iter {
            s.insert(t);
        }
        s
    }
}

impl Serialize for TaintSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for TaintSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let labels: Vec<Taint> = Vec::deserialize(d)?;
        Ok(labels.into_iter().collect())
    }
}

named_enum! {
    /// How bad a finding is. Ordered: `low < medium < high < critical`.
    pub enum Severity {
        /// Worth a note.
        Low = "low",
        /// Worth a warning.
        Medium = "medium",
        /// Needs a human by default.
        High = "high",
        /// Never auto-allowed.
        Critical = "critical",
    }
}

named_enum! {
    /// What happens to a call. Ordered by strength: `allow < warn < mask < approve < block`.
    pub enum Verdict {
        /// Let it through.
        Allow = "allow",
        /// Let it through and flag it.
        Warn = "warn",
        /// Let it through with sensitive content masked.
        Mask = "mask",
        /// Hold it for a human.
        Approve = "approve",
        /// Refuse it.
        Block = "block",
    }
}

named_enum! {
    /// Why a decision is what it is (DefenseClaw's codes plus Bulwark's; DESIGN §4).
    pub enum ReasonCode {
        /// The reviewed tool mapping or a per-tool policy decided.
        PolicyTable = "POLICY_TABLE",
        /// A dangerous capability sequence completed.
        CapSequence = "CAP_SEQUENCE",
        /// The destination is not on the allowlist.
        DestDeny = "DEST_DENY",
        /// The tool hash is denied.
        HashDeny = "HASH_DENY",
        /// A rate bucket is empty.
        RateLimit = "RATE_LIMIT",
        /// The fleet said block.
        CloudBlock = "CLOUD_BLOCK",
        /// The fleet did not answer in time.
        CloudTimeout = "CLOUD_TIMEOUT",
        /// Personal data was found.
        PiiDetected = "PII_DETECTED",
        /// The input was malformed or too large.
        InvalidInput = "INVALID_INPUT",
        /// The content scanner found something to block.
        ContentBlock = "CONTENT_BLOCK",
        /// The destination is internal or ambiguous.
        SsrfBlock = "SSRF_BLOCK",
        /// `tool_hash` is not SHA-256 of `tool_name`.
        HashMismatch = "HASH_MISMATCH",
        /// The session's taint forbids this capability.
        TaintRevoked = "TAINT_REVOKED",
        /// The same call, or the same result, keeps repeating.
        LoopDetected = "LOOP_DETECTED",
        /// A pinned tool definition changed.
        RugPull = "RUG_PULL",
        /// A tool definition carries instructions for the model.
        ToolPoisoning = "TOOL_POISONING",
        /// The arguments do not match the tool's input schema.
        SchemaInvalid = "SCHEMA_INVALID",
        /// Content tries to instruct the model.
        Injection = "INJECTION",
        /// A rule matched.
        Rule = "RULE",
        /// The tool is not known and policy does not analyse unknown tools.
        UnknownTool = "UNKNOWN_TOOL",
        /// A human said no.
        ApprovalDenied = "APPROVAL_DENIED",
        /// Nobody answered the approval request in time.
        ApprovalTimeout = "APPROVAL_TIMEOUT",
        /// An analyser could not run or could not read the input.
        AnalysisUnavailable = "ANALYSIS_UNAVAILABLE",
        /// The kill switch is on.
        Lockdown = "LOCKDOWN",
        /// The caller could not be authenticated.
        Unauthenticated = "UNAUTHENTICATED",
    }
}

named_enum! {
    /// Where a rule looks (APERION's `where`).
    pub enum RuleScope {
        /// Arguments of a call on its way to a tool.
        ToolCall = "tool_call",
        /// A tool's result on its way back.
        ToolResult = "tool_result",
        /// A tool definition as a server lists it.
        ToolDescription = "tool_description",
        /// A tool call an LLM proposes in a completion.
        LlmResponse = "llm_response",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defenseclaw_bits_round_trip() {
        for bits in 0u8..=0x7f {
            let set = CapSet::from_defenseclaw(bits).unwrap();
            assert_eq!(set.to_defenseclaw(), bits);
        }
        assert_eq!(CapSet::from_defenseclaw(0x80), None);
        assert_eq!(
            CapSet::from_defenseclaw(8).unwrap().names(),
            vec!["net.egress"]
        );
    }

    #[test]
    fn families_follow_the_dots() {
        assert!(Capability::NetEgressApproved.is_within("net.egress"));
        assert!(Capability::NetEgress.is_within("net"));
        assert!(Capability::ExecShell.is_within("exec"));
        assert!(!Capability::ExecShell.is_within("exec.s"));
        assert!(!Capability::NetEgress.is_within("net.egress.approved"));
    }

    #[test]
    fn orders_are_by_strength() {
        assert!(Verdict::Allow < Verdict::Warn && Verdict::Warn < Verdict::Mask);
        assert!(Verdict::Mask < Verdict::Approve && Verdict::Approve < Verdict::Block);
        assert!(Severity::Low < Severity::Critical);
    }
}

named_enum! {
    /// Content categories the scanner reports (issue: content scanner).
    pub enum ContentCategory {
        /// Credentials and keys.
        Secret = "secret",
        /// Personal data.
        Pii = "pii",
        /// Instructions aimed at the model.
        Injection = "injection",
        /// Role markers and chat-template tokens.
        Prefill = "prefill",
        /// Requests to hide something from the user.
        Concealment = "concealment",
        /// Instructions hidden in tool definitions.
        Poisoning = "poisoning",
        /// Invisible characters and hidden markup.
        HiddenText = "hidden_text",
        /// Long encoded blobs.
        Exfil = "exfil",
    }
}
