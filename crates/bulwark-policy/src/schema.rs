//! The policy file as written: one struct per section, every field optional with a documented
//! default, unknown keys refused. `compile` turns this into runtime tables.
//!
//! Values that need checks beyond their type (regexes, globs, pointers, destinations,
//! predicate names) are read as [`Spanned`] so an error can point at them.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::vocab::{Capability, ReasonCode, RuleScope, Severity, Taint, Verdict};

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    /// Schema version; only `1` exists.
    pub version: Option<Spanned<u32>>,
    /// A name for the policy, shown in `policy_version`.
    pub name: Option<String>,
    /// `enforce` (default) or `monitor`.
    pub mode: Option<Mode>,
    /// Who callers are.
    #[serde(default)]
    pub identities: Identities,
    /// The reviewed tool mapping, by tool name (case-insensitive).
    #[serde(default)]
    pub tools: BTreeMap<String, ToolEntry>,
    /// What to do with tools nobody mapped.
    pub unknown_tools: Option<UnknownTools>,
    /// Size and count limits.
    #[serde(default)]
    pub limits: Limits,
    /// Token buckets per scope.
    #[serde(default)]
    pub rate: Rate,
    /// The loop guard.
    #[serde(rename = "loop", default)]
    pub loop_guard: LoopGuard,
    /// Actions per content category and direction.
    #[serde(default)]
    pub content: Content,
    /// Allowlists, approved endpoints, schemes.
    #[serde(default)]
    pub destinations: Destinations,
    /// Taint sources and the revocation matrix.
    #[serde(default)]
    pub taint: TaintSection,
    /// Capability sequences.
    #[serde(default)]
    pub sequences: Vec<SequenceEntry>,
    /// Rule packs to load, by name.
    pub packs: Option<Vec<Spanned<String>>>,
    /// Rules defined in this file.
    #[serde(default)]
    pub rules: Vec<RuleEntry>,
    /// Changes to rules from packs, by rule id.
    #[serde(default)]
    pub overrides: BTreeMap<String, Spanned<RuleOverride>>,
    /// How rule points add up into decisions.
    #[serde(default)]
    pub scoring: Scoring,
    /// Actions for fail-closed reason codes.
    #[serde(default)]
    pub on_error: BTreeMap<String, Spanned<Verdict>>,
    /// Human approval.
    #[serde(default)]
    pub approvals: Approvals,
    /// Trust-on-first-use pinning of tool definitions.
    #[serde(default)]
    pub pinning: Pinning,
    /// The deep path's learned prompt-injection guard.
    #[serde(default)]
    pub guard: Guard,
    /// The MCP gateway.
    #[serde(default)]
    pub mcp: Mcp,
    /// The LLM API proxy.
    #[serde(default)]
    pub llm: Llm,
    /// MCP servers the gateway aggregates behind one endpoint, by name (the prefix of
    /// their tools' and prompts' names).
    #[serde(default)]
    pub servers: BTreeMap<String, Spanned<ServerEntry>>,
    /// The audit record.
    #[serde(default)]
    pub audit: Audit,
    /// The fleet connection.
    pub fleet: Option<Fleet>,
    /// Where session state and the shared tables live (default: this process).
    pub state: Option<StateSection>,
    /// Where every replica's decision records are gathered (default: only this host's
    /// store under the state directory).
    pub telemetry: Option<TelemetrySection>,
    /// The kill switch.
    #[serde(default)]
    pub lockdown: bool,
}

/// Enforce decisions, or only record what would have happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Decisions are enforced.
    Enforce,
    /// Anything stronger than warn becomes warn, with the real decision recorded.
    Monitor,
}

/// Identities section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identities {
    /// Bearer tokens accepted by HTTP fronts, stored as SHA-256 hex digests.
    #[serde(default)]
    pub bearer_tokens: Vec<BearerToken>,
    /// Environment variable holding the HMAC key for signed identity headers.
    pub header_signing_key_env: Option<String>,
    /// Refuse calls whose principal is not verified.
    #[serde(default)]
    pub require_verified: bool,
    /// Unix user ids allowed to connect to the local evaluator's socket (checked with the
    /// peer's kernel credentials). Empty: the daemon's own user and root.
    #[serde(default)]
    pub unix_uids: Vec<u32>,
}

/// One accepted bearer token.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BearerToken {
    /// The principal the token stands for.
    pub name: String,
    /// SHA-256 of the token, 64 hex digits.
    pub sha256: Spanned<String>,
}

/// One reviewed tool.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolEntry {
    /// What the tool can do.
    #[serde(default)]
    pub capabilities: Vec<Capability>,
    /// Taint its results give a session.
    #[serde(default)]
    pub taint: Vec<Taint>,
    /// JSON pointer to the argument holding a shell command.
    pub command: Option<Spanned<String>>,
    /// JSON pointer to the argument holding SQL.
    pub sql: Option<Spanned<String>>,
    /// JSON pointer to the argument holding a URL or host.
    pub url: Option<Spanned<String>>,
    /// JSON pointer to the argument holding a path.
    pub path: Option<Spanned<String>>,
    /// Always ask a human.
    #[serde(default)]
    pub approval: bool,
    /// Ask the fleet (verdict cache) about this tool.
    #[serde(default)]
    pub escalate: bool,
    /// Refuse every call.
    #[serde(default)]
    pub quarantine: bool,
    /// The tool's input schema, when known in advance.
    pub input_schema: Option<serde_json::Value>,
}

/// What to do with tools that neither the mapping nor the built-in catalogue knows.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnknownTools {
    /// The action.
    pub action: UnknownAction,
}

/// Unknown-tool actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnknownAction {
    /// Derive capabilities from the arguments and decide on those.
    Analyse,
    /// Analyse, and warn in any case.
    Warn,
    /// Ask a human.
    Approve,
    /// Refuse (`UNKNOWN_TOOL`).
    Block,
    /// Ask the fleet through the verdict cache.
    Escalate,
}

/// Limits section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Largest argument document, in bytes.
    pub max_args_bytes: Option<usize>,
    /// Largest tool result, in bytes.
    pub max_result_bytes: Option<usize>,
    /// Deepest JSON nesting.
    pub max_depth: Option<usize>,
    /// Longest tool name.
    pub max_tool_name: Option<usize>,
    /// Most sessions kept at once; the least recently used is evicted beyond this.
    pub max_sessions: Option<usize>,
    /// Seconds of inactivity after which a session is dropped.
    pub session_idle_secs: Option<u64>,
}

/// Rate section: one bucket set per scope.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rate {
    /// Per session (on by default with seed 000's numbers).
    pub session: Option<Buckets>,
    /// Per principal (off unless set).
    pub principal: Option<Buckets>,
    /// Per tool (off unless set).
    pub tool: Option<Buckets>,
    /// Across everything (off unless set).
    pub global: Option<Buckets>,
}

/// Token buckets for one scope; each number is calls per `per_secs`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Buckets {
    /// All tool calls.
    pub calls: Option<u32>,
    /// Calls with a network capability.
    pub network: Option<u32>,
    /// Calls that actuate devices.
    pub actuate: Option<u32>,
    /// The refill period in seconds (default 60).
    pub per_secs: Option<u32>,
}

/// Loop guard section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopGuard {
    /// The Nth identical call within the window is a loop (default 5).
    pub max_repeats: Option<u32>,
    /// The window in seconds (default 60).
    pub window_secs: Option<u64>,
    /// The Nth identical result within the window is a loop (default 5).
    pub max_same_result: Option<u32>,
}

/// Content actions.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Content {
    /// Arguments of calls.
    #[serde(default)]
    pub request: CategoryActions,
    /// Arguments of calls that cannot reach the network (default: mask secrets instead of
    /// blocking them).
    #[serde(default)]
    pub request_offline: CategoryActions,
    /// Tool results.
    #[serde(default)]
    pub response: CategoryActions,
    /// Tool definitions.
    #[serde(default)]
    pub definition: CategoryActions,
    /// Largest text the scanner reads; anything larger is `INVALID_INPUT`.
    pub max_scan_bytes: Option<usize>,
    /// Findings below these severities are reported but do not act (seed 000's scope table).
    #[serde(default)]
    pub thresholds: Thresholds,
}

/// Minimum severity for a finding to act, per direction.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    /// Requests and proposals (default medium).
    pub request: Option<Severity>,
    /// Results (default medium).
    pub response: Option<Severity>,
    /// Definitions (default low).
    pub definition: Option<Severity>,
}

/// One action per content category; unset categories keep their defaults.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CategoryActions {
    /// Credentials and keys.
    pub secret: Option<Verdict>,
    /// Personal data.
    pub pii: Option<Verdict>,
    /// Instructions aimed at the model.
    pub injection: Option<Verdict>,
    /// Role markers and chat-template tokens.
    pub prefill: Option<Verdict>,
    /// Requests to hide something from the user.
    pub concealment: Option<Verdict>,
    /// Instructions hidden in tool definitions.
    pub poisoning: Option<Verdict>,
    /// Invisible characters and hidden markup.
    pub hidden_text: Option<Verdict>,
    /// Long encoded blobs.
    pub exfil: Option<Verdict>,
}

/// Destinations section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Destinations {
    /// When non-empty, only these hosts may be reached (`DEST_DENY` otherwise).
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
    /// Endpoints that make a call `net.egress.approved` (never revoked by taint).
    #[serde(default)]
    pub approved: Vec<Spanned<String>>,
    /// Internal hosts that may be reached despite the SSRF classes.
    #[serde(default)]
    pub internal_ok: Vec<Spanned<String>>,
    /// URL schemes allowed (default http, https, ws, wss).
    pub schemes: Option<Vec<String>>,
    /// Whether destinations given as names (not addresses) are accepted (default true).
    pub hostnames: Option<bool>,
    /// Whether a network call with no destination is refused (default true).
    pub require: Option<bool>,
}

/// Taint section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaintSection {
    /// Taint produced by results of calls with these capabilities.
    #[serde(default)]
    pub sources: BTreeMap<String, Spanned<Vec<Taint>>>,
    /// Taint produced by reading these paths (globs, `~` for home).
    #[serde(default)]
    pub sensitive_paths: Vec<Spanned<String>>,
    /// The revocation matrix; unset rows keep DESIGN §4's defaults.
    #[serde(default)]
    pub matrix: Matrix,
}

/// The revocation matrix.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    /// Forbidden after reading private data.
    #[serde(rename = "private-data")]
    pub private_data: Option<Vec<Capability>>,
    /// Forbidden after reading untrusted input.
    #[serde(rename = "untrusted-input")]
    pub untrusted_input: Option<Vec<Capability>>,
    /// Forbidden with both.
    pub both: Option<Vec<Capability>>,
}

/// One capability sequence.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequenceEntry {
    /// Identifier, e.g. `seq.fetch_then_shell`.
    pub id: Spanned<String>,
    /// Capabilities or capability families, in order.
    pub steps: Vec<Spanned<String>>,
    /// At most this many calls from the first step to the last (default 50).
    pub within_calls: Option<u32>,
    /// At most this many seconds from the first step to the last (default 600).
    pub within_secs: Option<u64>,
    /// Severity (default high).
    pub severity: Option<Severity>,
    /// Action when completed (default block).
    pub action: Option<Verdict>,
    /// Why, for the agent.
    pub reason: Option<String>,
    /// What to do instead.
    pub safer_alternative: Option<String>,
}

/// One rule.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleEntry {
    /// Identifier, e.g. `sql.drop_database`.
    pub id: Spanned<String>,
    /// Severity.
    pub severity: Severity,
    /// Points toward the tier (default by severity: 10, 30, 60, 100).
    pub points: Option<u32>,
    /// Where the rule looks (default `tool_call`).
    #[serde(rename = "where", default)]
    pub scope: Option<OneOrMany<RuleScope>>,
    /// The conditions.
    #[serde(rename = "match")]
    pub condition: Spanned<MatchEntry>,
    /// An action that overrides the severity's default.
    pub action: Option<Verdict>,
    /// Why, in a sentence the agent can read.
    pub reason: String,
    /// What to do instead.
    pub safer_alternative: Option<String>,
}

/// A scalar or a list of scalars.
#[derive(Debug)]
pub struct OneOrMany<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for V<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a value or a list of values")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                T::deserialize(serde::de::value::StrDeserializer::<E>::new(v))
                    .map(|t| OneOrMany(vec![t]))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(t) = seq.next_element()? {
                    out.push(t);
                }
                Ok(OneOrMany(out))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A rule's conditions; every condition present must hold.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchEntry {
    /// Tool-name globs (any of).
    pub tools: Option<Vec<Spanned<String>>>,
    /// Capabilities or families (any of).
    pub capabilities: Option<Vec<Spanned<String>>>,
    /// Conditions on arguments (or the result) by JSON pointer (all of).
    pub args: Option<Vec<ArgEntry>>,
    /// A regex over every string in the arguments or result, JSON escapes decoded.
    pub text: Option<Spanned<String>>,
    /// Named predicates the analysers provide (all of).
    pub predicates: Option<Vec<Spanned<String>>>,
    /// Session taint labels that must be present (all of).
    pub taint: Option<Vec<Taint>>,
    /// One command the call runs (after unwrapping) must satisfy every field.
    pub command: Option<Spanned<CommandEntry>>,
    /// At least one of these must hold.
    pub any: Option<Vec<Spanned<MatchEntry>>>,
    /// None of this may hold.
    pub not: Option<Box<Spanned<MatchEntry>>>,
}

/// Conditions on one command a shell line runs, as the command analyser sees it after
/// unwrapping (`sudo`, `bash -c`, `xargs`, …) and flag normalisation. Every field given must
/// hold for the same command.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandEntry {
    /// Program names (globs, case-insensitive): `[rm]`, `[mkfs*]`.
    pub name: Option<Vec<Spanned<String>>>,
    /// Subcommand prefixes, words separated by spaces, each a glob: `[push]`,
    /// `[stash drop]`, `["* delete"]`.
    pub sub: Option<Vec<Spanned<String>>>,
    /// At least one of these canonical flags is on (`r` also matches `--recursive`).
    pub flags_any: Option<Vec<Spanned<String>>>,
    /// All of these flags are on.
    pub flags_all: Option<Vec<Spanned<String>>>,
    /// None of these flags is on (`dry-run`, `n`).
    pub flags_none: Option<Vec<Spanned<String>>>,
    /// Options whose value matches a regex: `{X: "(?i)^delete$"}`.
    pub options: Option<std::collections::BTreeMap<String, Spanned<String>>>,
    /// Options that must not have a matching value: `{dry-run: "^(client|server)$"}`.
    pub options_none: Option<std::collections::BTreeMap<String, Spanned<String>>>,
    /// An operand (after the subcommand words) matches one of these path globs…
    pub args_any: Option<Vec<Spanned<String>>>,
    /// …and none of these.
    pub args_except: Option<Vec<Spanned<String>>>,
    /// An operand (the same or another) matches this regex.
    pub args_regex: Option<Spanned<String>>,
    /// The command writes a path matching one of these globs.
    pub writes_any: Option<Vec<Spanned<String>>>,
    /// The command reads a path matching one of these globs.
    pub reads_any: Option<Vec<Spanned<String>>>,
    /// Inline code it runs (`python -c`, `mongosh --eval`) matches this regex.
    pub code: Option<Spanned<String>>,
    /// It was reached through one of these (globs over `sudo`, `bash -c`, `ssh HOST`,
    /// `find -exec`, `xargs`, `pipe to sh`, …).
    pub via: Option<Vec<Spanned<String>>>,
    /// Command-level predicates that must all hold (`shell.reverse_shell`, …).
    pub predicates: Option<Vec<Spanned<String>>>,
    /// The command has a capability within one of these families (`exec.irreversible`).
    pub capabilities: Option<Vec<Spanned<String>>>,
}

/// A condition on one value by JSON pointer.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgEntry {
    /// RFC 6901 pointer; `""` is the whole document.
    pub pointer: Spanned<String>,
    /// The value (a string, or a number/bool as text) must match this regex.
    pub regex: Option<Spanned<String>>,
    /// The value must equal this.
    pub equals: Option<serde_json::Value>,
    /// The pointer must (true) or must not (false) resolve.
    pub exists: Option<bool>,
}

/// Changes to one rule from a pack.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleOverride {
    /// Turn the rule off.
    #[serde(default)]
    pub disabled: bool,
    /// New severity.
    pub severity: Option<Severity>,
    /// New points.
    pub points: Option<u32>,
    /// New action.
    pub action: Option<Verdict>,
}

/// Scoring section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scoring {
    /// Points at which the summed score reaches each tier.
    #[serde(default)]
    pub tiers: Tiers,
    /// Destructive matches within a session that raise the tier by one.
    #[serde(default)]
    pub burst: Burst,
    /// The action for each severity.
    #[serde(default)]
    pub actions: SeverityActions,
}

/// Tier thresholds.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tiers {
    /// Default 30.
    pub medium: Option<u32>,
    /// Default 60.
    pub high: Option<u32>,
    /// Default 100.
    pub critical: Option<u32>,
}

/// Burst escalation.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Burst {
    /// Matches of at least `min_severity` (default 3).
    pub count: Option<u32>,
    /// Within this many seconds (default 300).
    pub window_secs: Option<u64>,
    /// Which matches count (default medium).
    pub min_severity: Option<Severity>,
}

/// Severity → action.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeverityActions {
    /// Default allow.
    pub low: Option<Verdict>,
    /// Default warn.
    pub medium: Option<Verdict>,
    /// Default approve.
    pub high: Option<Verdict>,
    /// Default block.
    pub critical: Option<Verdict>,
}

/// Approvals section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approvals {
    /// Seconds a request waits for a human before it reads as denied (default 300).
    pub timeout_secs: Option<u64>,
    /// Tool-name globs that always need a human.
    #[serde(default)]
    pub tools: Vec<Spanned<String>>,
    /// Most pending requests kept (default 1000).
    pub max_pending: Option<usize>,
    /// Channels that may decide (`cli`, `webhook`, `inbox`, `mcp`, `header`).
    #[serde(default)]
    pub channels: Vec<ApprovalChannel>,
    /// Webhook to POST approval requests to.
    pub webhook_url: Option<Spanned<String>>,
    /// Timeouts for some tools or severities; the first that matches wins, else
    /// `timeout_secs`.
    #[serde(default)]
    pub timeouts: Vec<ApprovalTimeout>,
}

/// One approval timeout: for calls to tools matching `tool` and/or decided with `severity`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalTimeout {
    /// Tool-name glob (any tool when absent).
    pub tool: Option<Spanned<String>>,
    /// The decision's severity (any when absent).
    pub severity: Option<Severity>,
    /// Seconds the request waits before it reads as denied.
    pub secs: Spanned<u64>,
}

/// Approval channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalChannel {
    /// `bulwark approvals approve ID`.
    Cli,
    /// A configured webhook.
    Webhook,
    /// An inbox file under the state directory.
    Inbox,
    /// In the MCP protocol (elicitation).
    Mcp,
    /// The `X-Bulwark-Approve` header of the LLM proxy.
    Header,
}

/// Pinning section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pinning {
    /// Pin definitions on first use (default true).
    pub enabled: Option<bool>,
    /// What a changed definition gets (default block: the tool is quarantined).
    pub on_change: Option<Verdict>,
}

/// The guard section: a learned injection classifier on the deep path (docs/guard.md).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guard {
    /// Run the guard (default false: it needs its model installed).
    pub enabled: Option<bool>,
    /// The model: an installed model's name (default `minilm-l6-v2`, in
    /// STATE_DIR/guard/NAME: its distilled static table; `minilm-l6-v2:encoder` for the
    /// full encoder, ~15x slower), a folder holding it, or with `endpoint` the Ollama
    /// model name.
    pub model: Option<String>,
    /// Block at or above this probability (default 0.85).
    pub threshold: Option<Spanned<f64>>,
    /// What it reads: `results`, `definitions`, `proposals` (tool input) (default all three).
    pub on: Option<Vec<GuardOn>>,
    /// When it is worth running on something the fast path left undecided: `untrusted`
    /// (content an outsider could write), `tainted` (the session already is), `high_risk`
    /// (the tool can run code, write files or reach the network), `always` (default the
    /// first three).
    pub when: Option<Vec<GuardWhen>>,
    /// How long one scoring may take, in milliseconds (default 1000: one 256-token window
    /// takes 60–130 ms on two loaded cores, docs/benchmarks.md).
    pub timeout_ms: Option<Spanned<u64>>,
    /// What a timeout, a full queue or a model that cannot load gets: `block` (default) or `warn`.
    pub on_error: Option<Spanned<Verdict>>,
    /// An Ollama-compatible endpoint (`http://127.0.0.1:11434`) to ask instead of the
    /// in-process model.
    pub endpoint: Option<Spanned<String>>,
}

/// What the guard reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardOn {
    /// Tool results.
    Results,
    /// Tool definitions.
    Definitions,
    /// Tool input: MCP requests and LLM-proposed calls.
    Proposals,
}

/// When the guard is worth running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardWhen {
    /// The content is of a kind an outsider could write (fetch, search, inbox).
    Untrusted,
    /// The session is already tainted.
    Tainted,
    /// The tool can execute, write or reach the network.
    HighRisk,
    /// Every time the fast path leaves it undecided.
    Always,
}

/// MCP gateway section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mcp {
    /// How a blocked call reaches the client (default `error`).
    pub block_as: Option<BlockAs>,
    /// How long a forwarded request may wait for the server (default 300 s).
    pub request_timeout_secs: Option<Spanned<u64>>,
    /// How long a server's tool listing is trusted before a call lists again (default 300 s).
    pub listing_ttl_secs: Option<Spanned<u64>>,
    /// Methods outside the MCP revisions the gateway speaks that it forwards anyway
    /// (default none: an unknown method is answered -32601 by the gateway).
    #[serde(default)]
    pub extra_methods: Vec<Spanned<String>>,
    /// Environment variables passed to stdio servers besides the built-in allowlist.
    #[serde(default)]
    pub env: Vec<String>,
}

/// The LLM API proxy's choices.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Llm {
    /// The safety hint added to a tainted request (default: Bulwark's own).
    pub hint: Option<Spanned<String>>,
    /// Rewrite a shell call whose only violation is `net.egress` or `exec.arbitrary` to
    /// run without a network (`unshare --net`) instead of blocking it (default false).
    #[serde(default)]
    pub sandbox: bool,
    /// How long the upstream may take to start answering (default 600 s).
    pub request_timeout_secs: Option<Spanned<u64>>,
}

/// One aggregated MCP server: a command (stdio) or a URL (Streamable HTTP).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerEntry {
    /// A stdio server: program and arguments.
    pub command: Option<Vec<String>>,
    /// A remote Streamable HTTP server.
    pub url: Option<String>,
    /// Allow `url` to be an internal address (loopback, private ranges; never metadata).
    #[serde(default)]
    pub allow_internal: bool,
    /// Environment variables for the command, besides the allowlist and `mcp.env`.
    #[serde(default)]
    pub env: Vec<String>,
}

/// How a blocked MCP call is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockAs {
    /// A JSON-RPC error with the decision in `data` (DESIGN §7's codes).
    Error,
    /// A tool result with `isError: true` and the reason as text.
    Result,
}

/// Audit section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Audit {
    /// Write the record (default false; `--audit FILE` also turns it on).
    #[serde(default)]
    pub enabled: bool,
    /// Where, relative to the state directory unless absolute.
    pub path: Option<String>,
    /// A signed checkpoint every this many entries (default 1000).
    pub checkpoint_every: Option<u64>,
    /// And at least every this many seconds (default 60).
    pub checkpoint_secs: Option<u64>,
}

/// Fleet section.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fleet {
    /// MQTT broker URL (`mqtt://host:port` or `mqtts://…`).
    pub broker: Spanned<String>,
    /// This device's identity.
    pub device_id: Option<String>,
    /// `sync_block` (default) or `speculative`.
    pub mode: Option<FleetMode>,
    /// How long `sync_block` waits for a verdict (default 2000 ms).
    pub timeout_ms: Option<u64>,
    /// The fleet's name: the topic prefix `bulwark/v1/NAME/` (default `default`).
    pub name: Option<String>,
    /// The fleet's Ed25519 public key (64 hex digits, `bulwark fleet keys`): replies,
    /// policies and kill commands signed by anything else are dropped.
    pub public_key: Option<Spanned<String>>,
    /// Environment variable holding this device's own HMAC-SHA256 key (64 hex digits),
    /// which may sign its verdict replies too.
    pub device_key_env: Option<String>,
    /// Canary rollback after a policy update.
    pub canary: Option<CanarySettings>,
    /// For `mqtts://`: the PEM file of the CA that signed the broker's certificate (the
    /// only one trusted).
    pub ca_file: Option<String>,
}

/// State section: where sessions, rate buckets, pins, the kill switch and the used-token
/// set live.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateSection {
    /// `memory` (default: this process) or `redis` (shared by every replica).
    pub backend: Option<Spanned<StateBackend>>,
    /// For `redis`: `redis://[:PASSWORD@]HOST:PORT[/DB]`.
    pub url: Option<Spanned<String>>,
    /// Prefix of every key (default `bulwark`), so several deployments share one server.
    pub prefix: Option<Spanned<String>>,
    /// Longest wait for one answer from the store, in milliseconds (default 100).
    pub timeout_ms: Option<Spanned<u64>>,
    /// What a decision does when the store is out of reach: `refuse` (default) or `local`
    /// (decide on this replica's own state, each such decision marked degraded).
    pub on_unavailable: Option<OnUnavailable>,
}

/// Telemetry section: a store shared by every replica for the decision records.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySection {
    /// `local` (default: the SQLite store under the state directory only) or `postgres`
    /// (also every decision into a PostgreSQL database shared by the replicas).
    pub backend: Option<Spanned<TelemetryBackend>>,
    /// For `postgres`: `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`.
    pub url: Option<Spanned<String>>,
    /// Rows waiting for the shared store at most (default 8192); past it rows are dropped
    /// and counted.
    pub queue: Option<Spanned<u64>>,
    /// Rows written in one statement at most (default 500).
    pub batch: Option<Spanned<u64>>,
    /// Longest wait for the store to connect or take one batch, in milliseconds
    /// (default 2000).
    pub timeout_ms: Option<Spanned<u64>>,
}

/// Where decision records are gathered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TelemetryBackend {
    /// Only this host's store.
    Local,
    /// A PostgreSQL database shared by every replica (as well as the local store).
    Postgres,
}

/// Where state lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StateBackend {
    /// This process (sharded, in memory).
    Memory,
    /// A Redis (or Valkey) server shared by every replica.
    Redis,
}

/// What a decision does when the shared store is out of reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnUnavailable {
    /// Refuse the call (`ANALYSIS_UNAVAILABLE`).
    Refuse,
    /// Decide on this replica's own state; the decision says it was degraded.
    Local,
}

/// Canary rollback settings.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CanarySettings {
    /// Watch this long after an update (default 600 s).
    pub window_secs: Option<u64>,
    /// A minute spikes over this many times the earlier block rate (default 5).
    pub factor: Option<f64>,
    /// Consecutive spiking minutes that roll back (default 3).
    pub minutes: Option<u32>,
    /// The length of a "minute" in seconds (default 60; tests shorten it).
    pub minute_secs: Option<u64>,
}

/// How an escalated call proceeds while the fleet decides (seed 000).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FleetMode {
    /// Block until the fleet answers; no answer is a block.
    SyncBlock,
    /// Allow at once; a later block is recorded, not undone.
    Speculative,
}

/// Codes whose action `on_error` may set.
pub const ON_ERROR_CODES: &[ReasonCode] = &[
    ReasonCode::InvalidInput,
    ReasonCode::AnalysisUnavailable,
    ReasonCode::SchemaInvalid,
];
