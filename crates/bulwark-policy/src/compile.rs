//! From the file as written to the [`Policy`] the engine runs: defaults, packs, overrides,
//! and every check that needs more than a type (regexes, globs, pointers, destinations,
//! predicate and capability names, duplicate ids).

use std::collections::{HashMap, HashSet};

use bulwark_net::Allowlist;
use regex::{Regex, RegexBuilder};
use serde_saphyr::{Location, Spanned};
use sha2::{Digest, Sha256};

use crate::compiled::*;
use crate::error::{Issues, PolicyError};
use crate::glob::Glob;
use crate::schema::{self, Mode, PolicyFile, StateBackend, UnknownAction};
use crate::vocab::{
    Capability, ContentCategory, ReasonCode, RuleScope, Severity, Taint, TaintSet, Verdict,
};
use crate::{PackFile, predicates};

/// Regexes in policies are compiled with these limits so a hostile or careless pattern
/// cannot make start-up or matching blow up.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A parsed pack and the name it is known by.
pub(crate) struct LoadedPack {
    pub(crate) name: String,
    pub(crate) file: String,
    pub(crate) text_digest: [u8; 32],
    pub(crate) pack: PackFile,
}

pub(crate) fn compile(
    file: &str,
    text: &str,
    raw: PolicyFile,
    packs: Vec<LoadedPack>,
) -> Result<Policy, PolicyError> {
    let mut issues = Issues::default();
    let mut pack_errors: Vec<PolicyError> = Vec::new();

    if let Some(v) = &raw.version
        && v.value != 1
    {
        issues.at(
            v.referenced,
            format!("unsupported version {}: expected 1", v.value),
        );
    }

    let mut hasher = Sha256::new();
    hasher.update(text.as_bytes());
    for p in &packs {
        hasher.update(p.text_digest);
    }
    let digest = hasher.finalize();
    let name = raw.name.clone().unwrap_or_else(|| "policy".to_string());
    let version = format!("{name}@{}", hex12(&digest));

    // Packs first; the file's own tools replace theirs by name, its rules add to theirs.
    let mut tools = ToolTable::default();
    let mut rules: Vec<Rule> = Vec::new();
    let mut rule_index: HashMap<String, usize> = HashMap::new();
    let mut sequences: Vec<Sequence> = Vec::new();
    for p in &packs {
        let mut pi = Issues::default();
        for (tool, entry) in &p.pack.tools {
            tools.insert(tool_spec(tool, entry, &mut pi));
        }
        for r in &p.pack.rules {
            if let Some(rule) = rule(r, &p.name, &mut pi) {
                if let Some(&i) = rule_index.get(&rule.id) {
                    pi.at(
                        r.id.referenced,
                        format!(
                            "rule id {:?} is already defined by {}",
                            rule.id, rules[i].origin
                        ),
                    );
                    continue;
                }
                rule_index.insert(rule.id.clone(), rules.len());
                rules.push(rule);
            }
        }
        for s in &p.pack.sequences {
            if let Some(seq) = sequence(s, &mut pi) {
                sequences.push(seq);
            }
        }
        if let Err(e) = pi.into_result(&p.file, ()) {
            pack_errors.push(e);
        }
    }
    for (tool, entry) in &raw.tools {
        tools.insert(tool_spec(tool, entry, &mut issues));
    }

    for r in &raw.rules {
        if let Some(rule) = rule(r, file, &mut issues) {
            if let Some(&i) = rule_index.get(&rule.id) {
                issues.at(r.id.referenced, format!("rule id {:?} is already defined by {}; change it with `overrides:` instead", rule.id, rules[i].origin));
                continue;
            }
            rule_index.insert(rule.id.clone(), rules.len());
            rules.push(rule);
        }
    }
    let mut disabled = HashSet::new();
    for (id, ov) in &raw.overrides {
        let Some(&i) = rule_index.get(id) else {
            issues.at(
                ov.referenced,
                format!("override for unknown rule {id:?}: no loaded pack or rule has this id"),
            );
            continue;
        };
        let ov = &ov.value;
        if ov.disabled {
            disabled.insert(i);
        }
        let r = &mut rules[i];
        if let Some(s) = ov.severity {
            r.severity = s;
            if ov.points.is_none() {
                r.points = default_points(s);
            }
        }
        if let Some(p) = ov.points {
            r.points = p;
        }
        if let Some(a) = ov.action {
            r.action = Some(a);
        }
    }
    let rules: Vec<Rule> = rules
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !disabled.contains(i))
        .map(|(_, r)| r)
        .collect();

    let mut seq_ids: HashSet<String> = sequences.iter().map(|s| s.id.clone()).collect();
    for s in &raw.sequences {
        if let Some(seq) = sequence(s, &mut issues) {
            if !seq_ids.insert(seq.id.clone()) {
                issues.at(
                    s.id.referenced,
                    format!("duplicate sequence id {:?}", seq.id),
                );
                continue;
            }
            sequences.push(seq);
        }
    }

    let identities = identities(&raw.identities, &mut issues);
    let limits = limits(&raw.limits);
    let rate = rate(&raw.rate);
    let loop_guard = LoopPolicy {
        max_repeats: raw.loop_guard.max_repeats.unwrap_or(8),
        max_same_result: raw.loop_guard.max_same_result.unwrap_or(8),
        window_ms: raw
            .loop_guard
            .window_secs
            .unwrap_or(60)
            .saturating_mul(1000),
    };
    let content = content(&raw.content);
    let destinations = destinations(&raw.destinations, &mut issues);
    let taint = taint(&raw.taint, &mut issues);
    let scoring = scoring(&raw.scoring);

    let mut on_error = HashMap::new();
    for code in schema::ON_ERROR_CODES {
        on_error.insert(*code, Verdict::Block);
    }
    for (code, verdict) in &raw.on_error {
        match ReasonCode::from_name(code) {
            Some(c) if schema::ON_ERROR_CODES.contains(&c) => {
                if matches!(verdict.value, Verdict::Allow | Verdict::Mask) {
                    issues.at(verdict.referenced, format!("{code} cannot be {}: errors never read as clean; use warn, approve or block", verdict.value));
                } else {
                    on_error.insert(c, verdict.value);
                }
            }
            _ => {
                let names: Vec<&str> = schema::ON_ERROR_CODES.iter().map(|c| c.as_str()).collect();
                issues.at(
                    verdict.referenced,
                    format!(
                        "unknown on_error code {code:?}: expected one of {}",
                        names.join(", ")
                    ),
                );
            }
        }
    }

    let approvals = ApprovalPolicy {
        timeout_ms: raw
            .approvals
            .timeout_secs
            .unwrap_or(300)
            .saturating_mul(1000),
        tools: raw
            .approvals
            .tools
            .iter()
            .filter_map(|g| glob(g, &mut issues))
            .collect(),
        max_pending: raw.approvals.max_pending.unwrap_or(1000),
        // By default every channel that needs no configuration decides, and the webhook
        // too once it has a URL.
        channels: if raw.approvals.channels.is_empty() {
            let mut all = vec![
                schema::ApprovalChannel::Cli,
                schema::ApprovalChannel::Inbox,
                schema::ApprovalChannel::Mcp,
                schema::ApprovalChannel::Header,
            ];
            if raw.approvals.webhook_url.is_some() {
                all.push(schema::ApprovalChannel::Webhook);
            }
            all
        } else {
            raw.approvals.channels.clone()
        },
        webhook_url: raw.approvals.webhook_url.as_ref().map(|u| {
            if let Err(e) = bulwark_net::parse(&u.value) {
                issues.at(u.referenced, format!("bad webhook_url: {e}"));
            }
            u.value.clone()
        }),
        timeouts: raw
            .approvals
            .timeouts
            .iter()
            .filter_map(|t| {
                if t.secs.value == 0 || t.secs.value > 7 * 86_400 {
                    issues.at(
                        t.secs.referenced,
                        "approval timeout must be between 1 second and 7 days",
                    );
                    return None;
                }
                let tool = match &t.tool {
                    Some(g) => Some(glob(g, &mut issues)?),
                    None => None,
                };
                Some((tool, t.severity, t.secs.value.saturating_mul(1000)))
            })
            .collect(),
    };
    let guard = {
        use crate::schema::{GuardOn, GuardWhen};
        let g = &raw.guard;
        let threshold = g.threshold.as_ref().map_or(0.85, |t| t.value);
        if let Some(t) = &g.threshold
            && !(t.value > 0.0 && t.value <= 1.0)
        {
            issues.at(
                t.referenced,
                "guard.threshold must be above 0 and at most 1",
            );
        }
        let on_error = g.on_error.as_ref().map_or(Verdict::Block, |v| v.value);
        if let Some(v) = &g.on_error
            && !matches!(v.value, Verdict::Block | Verdict::Warn)
        {
            issues.at(v.referenced, "guard.on_error must be block or warn");
        }
        if let Some(t) = &g.timeout_ms
            && t.value == 0
        {
            issues.at(t.referenced, "guard.timeout_ms must be at least 1");
        }
        if let Some(e) = &g.endpoint
            && !e.value.starts_with("http://")
        {
            issues.at(
                e.referenced,
                "guard.endpoint must be http://HOST:PORT (a local Ollama)",
            );
        }
        crate::compiled::GuardPolicy {
            enabled: g.enabled.unwrap_or(false),
            model: g.model.clone().unwrap_or_else(|| {
                if g.endpoint.is_some() {
                    "llama-guard3:1b"
                } else {
                    "minilm-l6-v2"
                }
                .to_string()
            }),
            threshold: threshold as f32,
            on: g.on.clone().unwrap_or_else(|| {
                vec![GuardOn::Results, GuardOn::Definitions, GuardOn::Proposals]
            }),
            when: g.when.clone().unwrap_or_else(|| {
                vec![
                    GuardWhen::Untrusted,
                    GuardWhen::Tainted,
                    GuardWhen::HighRisk,
                ]
            }),
            timeout_ms: g.timeout_ms.as_ref().map_or(1000, |t| t.value),
            on_error,
            endpoint: g.endpoint.as_ref().map(|e| e.value.clone()),
        }
    };
    let pinning = PinningPolicy {
        enabled: raw.pinning.enabled.unwrap_or(true),
        on_change: raw.pinning.on_change.unwrap_or(Verdict::Block),
    };
    let mcp = McpPolicy {
        block_as: raw.mcp.block_as.unwrap_or(schema::BlockAs::Error),
        request_timeout_ms: match &raw.mcp.request_timeout_secs {
            Some(t) if t.value == 0 || t.value > 86_400 => {
                issues.at(
                    t.referenced,
                    "request_timeout_secs must be between 1 and 86400".to_string(),
                );
                300_000
            }
            Some(t) => t.value * 1000,
            None => 300_000,
        },
        listing_ttl_ms: match &raw.mcp.listing_ttl_secs {
            Some(t) if t.value == 0 || t.value > 86_400 => {
                issues.at(
                    t.referenced,
                    "listing_ttl_secs must be between 1 and 86400".to_string(),
                );
                300_000
            }
            Some(t) => t.value * 1000,
            None => 300_000,
        },
        extra_methods: raw
            .mcp
            .extra_methods
            .iter()
            .filter_map(|m| {
                // A name with spaces or control characters, or no name, would only ever
                // match a variant of a real method: refused, not allowlisted.
                let ok = !m.value.is_empty()
                    && m.value.len() <= 256
                    && m.value.chars().all(|c| c.is_ascii_graphic());
                if !ok {
                    issues.at(
                        m.referenced,
                        "mcp.extra_methods entries must be 1-256 printable ASCII characters without spaces".to_string(),
                    );
                }
                ok.then(|| m.value.clone())
            })
            .collect(),
        env: raw.mcp.env.clone(),
    };
    let llm = LlmPolicy {
        hint: match &raw.llm.hint {
            Some(h) if h.value.trim().is_empty() || h.value.len() > 4096 => {
                issues.at(
                    h.referenced,
                    "llm.hint must be between 1 and 4096 bytes".to_string(),
                );
                String::new()
            }
            Some(h) => h.value.clone(),
            None => crate::compiled::DEFAULT_HINT.to_string(),
        },
        sandbox: raw.llm.sandbox,
        request_timeout_ms: match &raw.llm.request_timeout_secs {
            Some(t) if t.value == 0 || t.value > 86_400 => {
                issues.at(
                    t.referenced,
                    "request_timeout_secs must be between 1 and 86400".to_string(),
                );
                600_000
            }
            Some(t) => t.value * 1000,
            None => 600_000,
        },
    };
    let mut servers = Vec::new();
    for (name, entry) in &raw.servers {
        let e = &entry.value;
        let valid_name = !name.is_empty()
            && name.len() <= 32
            && !name.contains("__")
            && !name.starts_with('_')
            && !name.ends_with('_')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid_name {
            issues.at(
                entry.referenced,
                format!(
                    "server name {name:?}: use 1-32 letters, digits, '-' or '_' (no \"__\", no '_' at either end): it prefixes tool names"
                ),
            );
            continue;
        }
        let upstream = match (&e.command, &e.url) {
            (Some(argv), None) if !argv.is_empty() => ServerUpstream::Command {
                argv: argv.clone(),
                env: e.env.clone(),
            },
            (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
                ServerUpstream::Url {
                    url: url.clone(),
                    allow_internal: e.allow_internal,
                }
            }
            _ => {
                issues.at(
                    entry.referenced,
                    format!(
                        "server {name:?}: give either command (a non-empty list) or url (http:// or https://)"
                    ),
                );
                continue;
            }
        };
        servers.push(ServerSpec {
            name: name.clone(),
            upstream,
        });
    }
    let audit = AuditPolicy {
        enabled: raw.audit.enabled,
        path: raw.audit.path.clone(),
        checkpoint_every: raw.audit.checkpoint_every.unwrap_or(1000),
        checkpoint_secs: raw.audit.checkpoint_secs.unwrap_or(60),
    };
    let fleet = raw.fleet.as_ref().map(|f| {
        let scheme_ok =
            f.broker.value.starts_with("mqtt://") || f.broker.value.starts_with("mqtts://");
        if !scheme_ok || bulwark_net::parse(&f.broker.value).is_err() {
            issues.at(
                f.broker.referenced,
                format!(
                    "bad broker {:?}: expected mqtt://HOST:PORT or mqtts://HOST:PORT",
                    f.broker.value
                ),
            );
        }
        FleetPolicy {
            broker: f.broker.value.clone(),
            device_id: f.device_id.clone(),
            mode: f.mode.unwrap_or(schema::FleetMode::SyncBlock),
            timeout_ms: f.timeout_ms.unwrap_or(2000),
            name: f.name.clone().unwrap_or_else(|| "default".into()),
            public_key: f.public_key.as_ref().map(|k| {
                let ok = k.value.len() == 64 && k.value.bytes().all(|b| b.is_ascii_hexdigit());
                if !ok {
                    issues.at(
                        k.referenced,
                        "public_key must be 64 hex digits (bulwark fleet keys)",
                    );
                }
                k.value.to_ascii_lowercase()
            }),
                        device_key_env: f.device_key_env.clone(),
            ca_file: {
                if f.broker.value.starts_with("mqtts://") && f.ca_file.is_none() {
                    issues.at(
                        f.broker.referenced,
                        "an mqtts:// broker needs fleet.ca_file: the CA that signed its certificate",
                    );
                }
                f.ca_file.clone()
            },
            canary: {
                let c = f.canary.as_ref();
                if let Some(c) = c {
                    if c.factor.is_some_and(|x| !x.is_finite() || x < 1.0) {
                        issues.at(
                            f.broker.referenced,
                            "fleet.canary.factor must be a number of at least 1",
                        );
                    }
                    if c.minutes == Some(0) || c.window_secs == Some(0) {
                        issues.at(
                            f.broker.referenced,
                            "fleet.canary.minutes and window_secs must be at least 1",
                        );
                    }
                }
                (
                    c.and_then(|c| c.window_secs)
                        .unwrap_or(600)
                        .saturating_mul(1000),
                    c.and_then(|c| c.factor).unwrap_or(5.0),
                    c.and_then(|c| c.minutes).unwrap_or(3),
                    c.and_then(|c| c.minute_secs)
                        .unwrap_or(60)
                        .max(1)
                        .saturating_mul(1000),
                )
            },
        }
    });

    let state = state_policy(raw.state.as_ref(), &mut issues);
    let telemetry = telemetry_policy(raw.telemetry.as_ref(), &mut issues);

    let policy = Policy {
        name,
        version,
        mode: raw.mode.unwrap_or(Mode::Enforce),
        lockdown: raw.lockdown,
        identities,
        tools,
        unknown_tools_explicit: raw.unknown_tools.is_some(),
        unknown_tools: raw
            .unknown_tools
            .as_ref()
            .map_or(UnknownAction::Analyse, |u| u.action),
        limits,
        rate,
        loop_guard,
        content,
        destinations,
        taint,
        sequences,
        rule_index: RuleIndex::new(&rules),
        rules,
        scoring,
        on_error,
        approvals,
        pinning,
        guard,
        mcp,
        llm,
        servers,
        audit,
        fleet,
        state,
        telemetry,
        packs: packs.iter().map(|p| p.name.clone()).collect(),
    };
    if let Some(first) = pack_errors.into_iter().next() {
        return Err(first);
    }
    issues.into_result(file, policy)
}

/// Longest `state.timeout_ms`: a decision never waits longer than this on the store.
pub const MAX_STATE_TIMEOUT_MS: u64 = 10_000;

/// The `state:` section, checked: a Redis backend needs a `redis://` URL; the prefix is a
/// short run of key-safe characters; the timeout is bounded.
fn state_policy(raw: Option<&schema::StateSection>, issues: &mut Issues) -> StatePolicy {
    let mut out = StatePolicy::default();
    let Some(raw) = raw else { return out };
    if let Some(b) = &raw.backend {
        out.backend = b.value;
    }
    if let Some(on) = raw.on_unavailable {
        out.on_unavailable = on;
    }
    if let Some(p) = &raw.prefix {
        let ok = !p.value.is_empty()
            && p.value.len() <= 64
            && p.value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b));
        if !ok {
            issues.at(
                p.referenced,
                "state.prefix must be 1 to 64 of A-Z a-z 0-9 _ - . :",
            );
        }
        out.prefix = p.value.clone();
    }
    if let Some(t) = &raw.timeout_ms {
        if t.value == 0 || t.value > MAX_STATE_TIMEOUT_MS {
            issues.at(
                t.referenced,
                format!("state.timeout_ms must be 1 to {MAX_STATE_TIMEOUT_MS}"),
            );
        }
        out.timeout_ms = t.value;
    }
    match (&out.backend, &raw.url) {
        (StateBackend::Redis, None) => {
            let at = raw.backend.as_ref().map(|b| b.referenced);
            let msg = "state.backend: redis needs state.url (redis://HOST:PORT)";
            match at {
                Some(at) => issues.at(at, msg),
                None => issues.list.push(crate::error::Issue {
                    line: 0,
                    column: 0,
                    message: msg.into(),
                }),
            }
        }
        (StateBackend::Redis, Some(u)) => {
            // TLS (rediss://) and Unix sockets are not built in: the client is compiled
            // without them (see docs/scale-out.md).
            let host = u.value.strip_prefix("redis://").map(|r| {
                let r = r.rsplit_once('@').map_or(r, |(_, h)| h);
                r.split('/').next().unwrap_or("")
            });
            if host.is_none_or(|h| {
                h.is_empty() || bulwark_net::parse(&format!("redis://{h}")).is_err()
            }) {
                issues.at(
                    u.referenced,
                    format!(
                        "bad state.url {:?}: expected redis://[:PASSWORD@]HOST:PORT[/DB]",
                        redact(&u.value)
                    ),
                );
            }
            out.url = Some(u.value.clone());
        }
        (StateBackend::Memory, Some(u)) => {
            issues.at(u.referenced, "state.url is only for state.backend: redis");
        }
        (StateBackend::Memory, None) => {}
    }
    out
}

/// Bounds of the `telemetry:` numbers: a queue is memory held while the store is away.
pub const MAX_TELEMETRY_QUEUE: u64 = 1_000_000;
/// Longest `telemetry.batch`.
pub const MAX_TELEMETRY_BATCH: u64 = 10_000;
/// Longest `telemetry.timeout_ms`.
pub const MAX_TELEMETRY_TIMEOUT_MS: u64 = 60_000;

/// The `telemetry:` section, checked: a PostgreSQL backend needs a `postgres://` URL; the
/// queue, batch and timeout are bounded.
fn telemetry_policy(
    raw: Option<&schema::TelemetrySection>,
    issues: &mut Issues,
) -> crate::compiled::TelemetryPolicy {
    use crate::schema::TelemetryBackend;
    let mut out = crate::compiled::TelemetryPolicy::default();
    let Some(raw) = raw else { return out };
    if let Some(b) = &raw.backend {
        out.backend = b.value;
    }
    let mut bounded = |v: &Option<Spanned<u64>>, name: &str, max: u64| -> Option<u64> {
        let v = v.as_ref()?;
        if v.value == 0 || v.value > max {
            issues.at(v.referenced, format!("telemetry.{name} must be 1 to {max}"));
        }
        Some(v.value.clamp(1, max))
    };
    if let Some(q) = bounded(&raw.queue, "queue", MAX_TELEMETRY_QUEUE) {
        out.queue = q as usize;
    }
    if let Some(b) = bounded(&raw.batch, "batch", MAX_TELEMETRY_BATCH) {
        out.batch = b as usize;
    }
    if let Some(t) = bounded(&raw.timeout_ms, "timeout_ms", MAX_TELEMETRY_TIMEOUT_MS) {
        out.timeout_ms = t;
    }
    match (&out.backend, &raw.url) {
        (TelemetryBackend::Postgres, None) => {
            let msg =
                "telemetry.backend: postgres needs telemetry.url (postgres://USER@HOST:PORT/DB)";
            match raw.backend.as_ref().map(|b| b.referenced) {
                Some(at) => issues.at(at, msg),
                None => issues.list.push(crate::error::Issue {
                    line: 0,
                    column: 0,
                    message: msg.into(),
                }),
            }
        }
        (TelemetryBackend::Postgres, Some(u)) => {
            let ok = ["postgres://", "postgresql://"]
                .iter()
                .any(|s| u.value.strip_prefix(s).is_some_and(|r| !r.is_empty()));
            if !ok {
                issues.at(
                    u.referenced,
                    format!(
                        "bad telemetry.url {:?}: expected postgres://USER[:PASSWORD]@HOST[:PORT]/DB",
                        redact(&u.value)
                    ),
                );
            }
            out.url = Some(u.value.clone());
        }
        (TelemetryBackend::Local, Some(u)) => {
            issues.at(
                u.referenced,
                "telemetry.url is only for telemetry.backend: postgres",
            );
        }
        (TelemetryBackend::Local, None) => {}
    }
    out
}

/// A URL with any password replaced, for messages.
fn redact(url: &str) -> String {
    match url
        .split_once("://")
        .and_then(|(s, r)| r.rsplit_once('@').map(|(_, h)| (s, h)))
    {
        Some((scheme, host)) => format!("{scheme}://***@{host}"),
        // Not a URL with a scheme (a libpq `key=value` string, `user:pw@host`): it may hold
        // a password anywhere, so none of it is repeated.
        None if !url.contains("://") => "<not shown: no scheme>".into(),
        None => url.to_string(),
    }
}

fn hex12(bytes: &[u8]) -> String {
    bytes.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn default_points(s: Severity) -> u32 {
    match s {
        Severity::Low => 10,
        Severity::Medium => 30,
        Severity::High => 60,
        Severity::Critical => 100,
    }
}

fn pointer(p: &Spanned<String>, issues: &mut Issues) -> Option<String> {
    match check_pointer(&p.value) {
        Ok(()) => Some(p.value.clone()),
        Err(why) => {
            issues.at(
                p.referenced,
                format!("bad JSON pointer {:?}: {why}", p.value),
            );
            None
        }
    }
}

/// RFC 6901: empty, or `/`-separated tokens where `~` is only followed by `0` or `1`.
pub(crate) fn check_pointer(p: &str) -> Result<(), &'static str> {
    if p.is_empty() {
        return Ok(());
    }
    if !p.starts_with('/') {
        return Err("expected \"\" or a pointer starting with '/', such as /command");
    }
    let b = p.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'~' && !matches!(b.get(i + 1), Some(b'0' | b'1')) {
            return Err("'~' must be followed by 0 or 1 (~0 is '~', ~1 is '/')");
        }
    }
    Ok(())
}

fn regex(r: &Spanned<String>, issues: &mut Issues) -> Option<Regex> {
    match RegexBuilder::new(&r.value)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
    {
        Ok(re) => Some(re),
        Err(e) => {
            let msg = e
                .to_string()
                .lines()
                .last()
                .unwrap_or_default()
                .trim()
                .trim_start_matches("error: ")
                .to_string();
            issues.at(r.referenced, format!("bad regex {:?}: {msg}", r.value));
            None
        }
    }
}

fn glob(g: &Spanned<String>, issues: &mut Issues) -> Option<Glob> {
    match Glob::new(&g.value) {
        Ok(glob) => Some(glob),
        Err(e) => {
            issues.at(g.referenced, format!("bad glob {:?}: {e}", g.value));
            None
        }
    }
}

/// Capability names and every dotted prefix of one (`net`, `exec`, `db`, …).
fn is_family(name: &str) -> bool {
    Capability::ALL
        .iter()
        .any(|c| c.is_within(name) && !name.is_empty())
}

fn family(f: &Spanned<String>, issues: &mut Issues) -> Option<String> {
    if is_family(&f.value) {
        Some(f.value.clone())
    } else {
        let names: Vec<&str> = Capability::ALL.iter().map(|c| c.as_str()).collect();
        issues.at(
            f.referenced,
            format!(
                "unknown capability {:?}: expected one of {} or a family such as net or exec",
                f.value,
                names.join(", ")
            ),
        );
        None
    }
}

fn tool_spec(name: &str, e: &schema::ToolEntry, issues: &mut Issues) -> ToolSpec {
    let p = |o: &Option<Spanned<String>>, issues: &mut Issues| {
        o.as_ref().and_then(|s| pointer(s, issues))
    };
    ToolSpec {
        name: name.to_string(),
        capabilities: e.capabilities.iter().copied().collect(),
        taint: e.taint.iter().copied().collect(),
        args: ArgPointers {
            command: p(&e.command, issues),
            sql: p(&e.sql, issues),
            url: p(&e.url, issues),
            path: p(&e.path, issues),
        },
        approval: e.approval,
        escalate: e.escalate,
        quarantine: e.quarantine,
        input_schema: e.input_schema.clone(),
    }
}

fn rule(r: &schema::RuleEntry, origin: &str, issues: &mut Issues) -> Option<Rule> {
    let id = &r.id.value;
    let id_ok = !id.is_empty()
        && id.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
        });
    if !id_ok {
        issues.at(r.id.referenced, format!("bad rule id {id:?}: expected lower-case letters, digits, '.', '_' or '-', like sql.drop_database"));
    }
    if r.reason.trim().is_empty() {
        issues.at(
            r.id.referenced,
            format!("rule {id:?} needs a reason the agent can read"),
        );
    }
    let before = issues.list.len();
    let condition = condition(&r.condition.value, r.condition.referenced, issues);
    if issues.list.len() > before || !id_ok {
        return None;
    }
    let scopes = r
        .scope
        .as_ref()
        .map_or_else(|| vec![RuleScope::ToolCall], |s| s.0.clone());
    let needs = Needs::of(&condition);
    Some(Rule {
        needs,
        id: id.clone(),
        severity: r.severity,
        points: r.points.unwrap_or_else(|| default_points(r.severity)),
        scopes,
        condition,
        action: r.action,
        reason: r.reason.clone(),
        safer_alternative: r.safer_alternative.clone(),
        origin: origin.to_string(),
    })
}

fn condition(m: &schema::MatchEntry, at: Location, issues: &mut Issues) -> Condition {
    let mut all = Vec::new();
    if let Some(tools) = &m.tools {
        all.push(Condition::Tools(
            tools.iter().filter_map(|g| glob(g, issues)).collect(),
        ));
    }
    if let Some(caps) = &m.capabilities {
        all.push(Condition::Capabilities(
            caps.iter().filter_map(|f| family(f, issues)).collect(),
        ));
    }
    if let Some(taint) = &m.taint {
        all.push(Condition::Taint(
            taint.iter().copied().collect::<TaintSet>(),
        ));
    }
    if let Some(preds) = &m.predicates {
        for p in preds {
            if predicates::is_known(&p.value) {
                all.push(Condition::Predicate(p.value.clone()));
            } else {
                issues.at(
                    p.referenced,
                    format!(
                        "unknown predicate {:?}: run `bulwark policy predicates` for the list",
                        p.value
                    ),
                );
            }
        }
    }
    if let Some(args) = &m.args {
        for a in args {
            let Some(ptr) = pointer(&a.pointer, issues) else {
                continue;
            };
            let tests = [a.regex.is_some(), a.equals.is_some(), a.exists.is_some()]
                .iter()
                .filter(|b| **b)
                .count();
            if tests != 1 {
                issues.at(
                    a.pointer.referenced,
                    "an args condition needs exactly one of regex, equals or exists",
                );
                continue;
            }
            let test = if let Some(r) = &a.regex {
                match regex(r, issues) {
                    Some(re) => ArgTest::Regex(re),
                    None => continue,
                }
            } else if let Some(v) = &a.equals {
                ArgTest::Equals(v.clone())
            } else {
                ArgTest::Exists(a.exists.unwrap_or(true))
            };
            all.push(Condition::Arg { pointer: ptr, test });
        }
    }
    if let Some(t) = &m.text
        && let Some(re) = regex(t, issues)
    {
        all.push(Condition::Text(re));
    }
    if let Some(c) = &m.command {
        all.push(Condition::Command(Box::new(command(
            &c.value,
            c.referenced,
            issues,
        ))));
    }
    if let Some(any) = &m.any {
        if any.is_empty() {
            issues.at(at, "`any` needs at least one condition");
        }
        all.push(Condition::Any(
            any.iter()
                .map(|c| condition(&c.value, c.referenced, issues))
                .collect(),
        ));
    }
    if let Some(not) = &m.not {
        all.push(Condition::Not(Box::new(condition(
            &not.value,
            not.referenced,
            issues,
        ))));
    }
    let given = [
        m.tools.is_some(),
        m.capabilities.is_some(),
        m.taint.is_some(),
        m.predicates.is_some(),
        m.args.is_some(),
        m.text.is_some(),
        m.any.is_some(),
        m.not.is_some(),
        m.command.is_some(),
    ];
    if !given.contains(&true) {
        issues.at(at, "empty match: give at least one of tools, capabilities, args, text, predicates, taint, command, any, not");
    }
    // Cheap conditions first, regexes last.
    all.sort_by_key(|c| match c {
        Condition::Tools(_)
        | Condition::Capabilities(_)
        | Condition::Taint(_)
        | Condition::Predicate(_) => 0,
        Condition::Arg { .. } | Condition::Command(_) => 1,
        Condition::Not(_) | Condition::Any(_) => 2,
        Condition::Text(_) | Condition::All(_) => 3,
    });
    Condition::All(all)
}

fn command(c: &schema::CommandEntry, at: Location, issues: &mut Issues) -> CommandMatch {
    let globs = |v: &[Spanned<String>], issues: &mut Issues| -> Vec<Glob> {
        v.iter().filter_map(|g| glob(g, issues)).collect()
    };
    let paths = |v: &Option<Vec<Spanned<String>>>, issues: &mut Issues| -> Vec<PathGlob> {
        v.iter()
            .flatten()
            .filter_map(|g| match path_glob(&g.value) {
                Ok(p) => Some(p),
                Err(e) => {
                    issues.at(g.referenced, format!("bad path glob {:?}: {e}", g.value));
                    None
                }
            })
            .collect()
    };
    let flags = |v: &Option<Vec<Spanned<String>>>| -> Vec<String> {
        v.iter()
            .flatten()
            .map(|f| f.value.trim_start_matches('-').to_string())
            .collect()
    };
    let all_names: Vec<Glob> = c
        .name
        .as_ref()
        .map(|n| globs(n, issues))
        .unwrap_or_default();
    let (literal, wild): (Vec<Glob>, Vec<Glob>) = all_names.into_iter().partition(Glob::is_literal);
    let mut literal_names: Vec<String> =
        literal.iter().map(|g| g.as_str().to_lowercase()).collect();
    literal_names.sort();
    literal_names.dedup();
    let mut out = CommandMatch {
        literal_names,
        names: wild,
        sub: Vec::new(),
        flags_any: flags(&c.flags_any),
        flags_all: flags(&c.flags_all),
        flags_none: flags(&c.flags_none),
        options: Vec::new(),
        options_none: Vec::new(),
        args_any: paths(&c.args_any, issues),
        args_except: paths(&c.args_except, issues),
        args_regex: c.args_regex.as_ref().and_then(|r| regex(r, issues)),
        writes_any: paths(&c.writes_any, issues),
        reads_any: paths(&c.reads_any, issues),
        code: c.code.as_ref().and_then(|r| regex(r, issues)),
        via: c.via.as_ref().map(|v| globs(v, issues)).unwrap_or_default(),
        predicates: Vec::new(),
        capabilities: c
            .capabilities
            .iter()
            .flatten()
            .filter_map(|f| family(f, issues))
            .collect(),
    };
    for s in c.sub.iter().flatten() {
        let words: Vec<Glob> = s
            .value
            .split_whitespace()
            .filter_map(|w| match Glob::new(w) {
                Ok(g) => Some(g),
                Err(e) => {
                    issues.at(
                        s.referenced,
                        format!("bad subcommand glob {:?}: {e}", s.value),
                    );
                    None
                }
            })
            .collect();
        if words.is_empty() {
            issues.at(s.referenced, "empty subcommand");
        } else {
            out.sub.push(words);
        }
    }
    for (name, r) in c.options.iter().flatten() {
        if let Some(re) = regex(r, issues) {
            out.options
                .push((name.trim_start_matches('-').to_string(), re));
        }
    }
    for (name, r) in c.options_none.iter().flatten() {
        if let Some(re) = regex(r, issues) {
            out.options_none
                .push((name.trim_start_matches('-').to_string(), re));
        }
    }
    for p in c.predicates.iter().flatten() {
        if bulwark_shell::is_predicate(&p.value) {
            out.predicates.push(p.value.clone());
        } else {
            issues.at(
                p.referenced,
                format!(
                    "unknown command predicate {:?}: run `bulwark policy predicates` for the list",
                    p.value
                ),
            );
        }
    }
    let given = [
        c.name.is_some(),
        c.sub.is_some(),
        c.flags_any.is_some(),
        c.flags_all.is_some(),
        c.flags_none.is_some(),
        c.options.is_some(),
        c.options_none.is_some(),
        c.args_any.is_some(),
        c.args_regex.is_some(),
        c.writes_any.is_some(),
        c.reads_any.is_some(),
        c.code.is_some(),
        c.via.is_some(),
        c.predicates.is_some(),
        c.capabilities.is_some(),
    ];
    if !given.contains(&true) {
        issues.at(at, "empty command condition: give at least one of name, sub, flags_any, flags_all, flags_none, options, args_any, args_regex, writes_any, reads_any, code, via, predicates, capabilities");
    }
    out
}

fn sequence(s: &schema::SequenceEntry, issues: &mut Issues) -> Option<Sequence> {
    if s.steps.len() < 2 {
        issues.at(
            s.id.referenced,
            format!("sequence {:?} needs at least two steps", s.id.value),
        );
        return None;
    }
    if s.steps.len() > 16 {
        issues.at(
            s.id.referenced,
            format!("sequence {:?} has more than 16 steps", s.id.value),
        );
        return None;
    }
    let before = issues.list.len();
    let steps: Vec<String> = s.steps.iter().filter_map(|f| family(f, issues)).collect();
    if issues.list.len() > before {
        return None;
    }
    let action = s.action.unwrap_or(Verdict::Block);
    Some(Sequence {
        id: s.id.value.clone(),
        within_calls: s.within_calls.unwrap_or(50).max(1),
        within_ms: s.within_secs.unwrap_or(600).saturating_mul(1000),
        severity: s.severity.unwrap_or(Severity::High),
        action,
        reason: s.reason.clone().unwrap_or_else(|| {
            format!(
                "this call completes the capability sequence {}",
                steps.join(" → ")
            )
        }),
        safer_alternative: s.safer_alternative.clone(),
        steps,
    })
}

fn identities(i: &schema::Identities, issues: &mut Issues) -> IdentityPolicy {
    let mut tokens = Vec::new();
    for t in &i.bearer_tokens {
        match decode_hex32(&t.sha256.value) {
            Some(d) => tokens.push((t.name.clone(), d)),
            None => issues.at(t.sha256.referenced, "bad sha256: expected 64 hex digits (the SHA-256 of the token, never the token itself)"),
        }
    }
    IdentityPolicy {
        bearer_tokens: tokens,
        header_signing_key_env: i.header_signing_key_env.clone(),
        require_verified: i.require_verified,
        unix_uids: i.unix_uids.clone(),
    }
}

pub(crate) fn decode_hex32(s: &str) -> Option<[u8; 32]> {
    let b = s.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in b.chunks(2).enumerate() {
        let hi = (pair[0] as char).to_digit(16)?;
        let lo = (pair[1] as char).to_digit(16)?;
        out[i] = (hi * 16 + lo) as u8;
    }
    Some(out)
}

fn limits(l: &schema::Limits) -> LimitPolicy {
    LimitPolicy {
        max_args_bytes: l.max_args_bytes.unwrap_or(1 << 20),
        max_result_bytes: l.max_result_bytes.unwrap_or(4 << 20),
        max_depth: l.max_depth.unwrap_or(64),
        max_tool_name: l.max_tool_name.unwrap_or(256),
        max_sessions: l.max_sessions.unwrap_or(10_000).max(1),
        session_idle_ms: l.session_idle_secs.unwrap_or(3600).saturating_mul(1000),
    }
}

fn buckets(b: &schema::Buckets, defaults: (Option<u32>, Option<u32>, Option<u32>)) -> BucketSpec {
    let nonzero = |v: Option<u32>| v.filter(|n| *n > 0);
    BucketSpec {
        calls: nonzero(b.calls.or(defaults.0)),
        network: nonzero(b.network.or(defaults.1)),
        actuate: nonzero(b.actuate.or(defaults.2)),
        per_ms: u64::from(b.per_secs.unwrap_or(60).max(1)) * 1000,
    }
}

fn rate(r: &schema::Rate) -> RatePolicy {
    // Seed 000's defaults: 60 tool calls, 30 network, 10 actuations per minute, per session.
    let seed = (Some(60), Some(30), Some(10));
    let none = (None, None, None);
    RatePolicy {
        session: Some(buckets(
            r.session.as_ref().unwrap_or(&schema::Buckets::default()),
            seed,
        )),
        principal: r.principal.as_ref().map(|b| buckets(b, none)),
        tool: r.tool.as_ref().map(|b| buckets(b, none)),
        global: r.global.as_ref().map(|b| buckets(b, none)),
    }
}

fn apply(table: &mut CategoryTable, a: &schema::CategoryActions) {
    let pairs = [
        (ContentCategory::Secret, a.secret),
        (ContentCategory::Pii, a.pii),
        (ContentCategory::Injection, a.injection),
        (ContentCategory::Prefill, a.prefill),
        (ContentCategory::Concealment, a.concealment),
        (ContentCategory::Poisoning, a.poisoning),
        (ContentCategory::HiddenText, a.hidden_text),
        (ContentCategory::Exfil, a.exfil),
    ];
    for (c, v) in pairs {
        if let Some(v) = v {
            table.set(c, v);
        }
    }
}

fn content(c: &schema::Content) -> ContentPolicy {
    use Verdict::*;
    // Order: secret, pii, injection, prefill, concealment, poisoning, hidden_text, exfil.
    let mut request = CategoryTable::new([Block, Warn, Warn, Warn, Warn, Warn, Warn, Warn]);
    apply(&mut request, &c.request);
    let mut request_offline = request;
    request_offline.set(ContentCategory::Secret, Mask);
    apply(&mut request_offline, &c.request_offline);
    let mut response = CategoryTable::new([Mask, Mask, Block, Block, Block, Warn, Warn, Allow]);
    apply(&mut response, &c.response);
    let mut definition =
        CategoryTable::new([Warn, Allow, Block, Block, Block, Block, Block, Allow]);
    apply(&mut definition, &c.definition);
    ContentPolicy {
        request,
        request_offline,
        response,
        definition,
        max_scan_bytes: c.max_scan_bytes.unwrap_or(4 << 20),
        threshold_request: c.thresholds.request.unwrap_or(Severity::Medium),
        threshold_response: c.thresholds.response.unwrap_or(Severity::Medium),
        threshold_definition: c.thresholds.definition.unwrap_or(Severity::Medium),
    }
}

fn allowlist(entries: &[Spanned<String>], issues: &mut Issues) -> Allowlist {
    let mut ok = Vec::new();
    for e in entries {
        match bulwark_net::HostPattern::parse(&e.value) {
            Ok(_) => ok.push(e.value.clone()),
            Err(err) => issues.at(e.referenced, err.to_string()),
        }
    }
    Allowlist::new(&ok).unwrap_or_default()
}

fn destinations(d: &schema::Destinations, issues: &mut Issues) -> DestinationPolicy {
    DestinationPolicy {
        allow: allowlist(&d.allow, issues),
        approved: allowlist(&d.approved, issues),
        internal_ok: allowlist(&d.internal_ok, issues),
        schemes: d
            .schemes
            .clone()
            .unwrap_or_else(|| {
                bulwark_net::DEFAULT_SCHEMES
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            })
            .into_iter()
            .map(|s| s.to_ascii_lowercase())
            .collect(),
        hostnames: d.hostnames.unwrap_or(true),
        hostnames_explicit: d.hostnames.is_some(),
        require: d.require.unwrap_or(true),
    }
}

/// Home directories as agents spell them, and the actual one (`$HOME`, wherever it is).
fn home_pattern() -> &'static str {
    static HOME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let own = bulwark_shell::paths::own_home()
            .map(|h| format!("|{}", regex::escape(h)))
            .unwrap_or_default();
        format!(r"(?:~|\$HOME|\$\{{HOME\}}|/home/[^/]+|/root|/Users/[^/]+{own})")
    })
}

pub(crate) fn path_glob(source: &str) -> Result<PathGlob, String> {
    if source.is_empty() {
        return Err("empty path pattern".into());
    }
    let mut re = String::from("^");
    let mut rest = source;
    if let Some(r) = rest.strip_prefix("~/") {
        re.push_str(home_pattern());
        re.push('/');
        rest = r;
    } else if let Some(r) = rest.strip_prefix("**/") {
        // `**/.env` also matches a bare `.env`.
        re.push_str("(?:.*/)?");
        rest = r;
    }
    let chars: Vec<char> = rest.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                re.push_str(".*");
                i += 1;
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    re.push('$');
    Regex::new(&re)
        .map(|regex| PathGlob {
            source: source.to_string(),
            regex,
        })
        .map_err(|e| e.to_string())
}

/// Bulwark's own control files, wherever the state directory is: whoever writes the inbox
/// or reads the admin token or approval key can approve calls, so no tool call may touch
/// them (rule `tamper.control_files`).
pub const CONTROL_PATHS: &[&str] = &[
    "**/approvals/inbox",
    "**/approvals/requests.*",
    "**/admin.token",
    "**/admin.addr",
    "**/approval.key",
    "**/approvals-used",
    "~/.local/state/bulwark/**",
];

/// Paths whose reading means a session holds private data (defaults; the policy may add).
pub const DEFAULT_SENSITIVE_PATHS: &[&str] = &[
    "~/.ssh/**",
    "**/id_rsa*",
    "**/id_ed25519*",
    "**/id_ecdsa*",
    "~/.aws/**",
    "~/.gnupg/**",
    "~/.kube/**",
    "~/.config/gcloud/**",
    "~/.azure/**",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.pgpass",
    "~/.git-credentials",
    "~/.npmrc",
    "~/.pypirc",
    "~/.config/gh/hosts.yml",
    "~/.mozilla/**",
    "~/.config/google-chrome/**",
    "~/.config/chromium/**",
    "~/Library/Application Support/Google/Chrome/**",
    "~/Library/Keychains/**",
    "**/.env",
    "**/.env.*",
    "**/*.pem",
    "**/*.key",
    "**/credentials.json",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/sudoers",
    "/etc/sudoers.d/**",
    "/var/run/secrets/**",
    "/run/secrets/**",
];

fn taint(t: &schema::TaintSection, issues: &mut Issues) -> TaintPolicy {
    use crate::vocab::Capability as C;
    let mut sources: Vec<(String, TaintSet)> = vec![
        (
            "net".to_string(),
            [Taint::UntrustedInput].into_iter().collect(),
        ),
        (
            "db.read".to_string(),
            [Taint::PrivateData].into_iter().collect(),
        ),
    ];
    for (fam, labels) in &t.sources {
        if !is_family(fam) {
            issues.at(
                labels.referenced,
                format!("unknown capability {fam:?} in taint.sources"),
            );
            continue;
        }
        let set: TaintSet = labels.value.iter().copied().collect();
        sources.retain(|(f, _)| f != fam);
        sources.push((fam.clone(), set));
    }
    let mut sensitive_paths: Vec<PathGlob> = DEFAULT_SENSITIVE_PATHS
        .iter()
        .filter_map(|p| path_glob(p).ok())
        .collect();
    for p in &t.sensitive_paths {
        match path_glob(&p.value) {
            Ok(g) => sensitive_paths.push(g),
            Err(e) => issues.at(p.referenced, format!("bad path pattern {:?}: {e}", p.value)),
        }
    }
    let caps = |v: &Option<Vec<C>>, default: &[C]| -> crate::vocab::CapSet {
        v.as_ref().map_or_else(
            || default.iter().copied().collect(),
            |v| v.iter().copied().collect(),
        )
    };
    TaintPolicy {
        sources,
        sensitive_paths,
        control_paths: CONTROL_PATHS
            .iter()
            .filter_map(|p| path_glob(p).ok())
            .collect(),
        private_data: caps(&t.matrix.private_data, &[C::NetEgress]),
        // A message cannot be unsent, and after untrusted input its recipient and text may
        // be the attacker's (issue 26): `msg.send` is revoked with what cannot be undone.
        untrusted_input: caps(
            &t.matrix.untrusted_input,
            &[C::ExecIrreversible, C::MsgSend],
        ),
        both: caps(
            &t.matrix.both,
            &[
                C::NetEgress,
                C::ExecArbitrary,
                C::ExecIrreversible,
                C::MsgSend,
            ],
        ),
    }
}

fn scoring(s: &schema::Scoring) -> ScoringPolicy {
    use Verdict::*;
    let a = &s.actions;
    ScoringPolicy {
        medium: s.tiers.medium.unwrap_or(30),
        high: s.tiers.high.unwrap_or(60),
        critical: s.tiers.critical.unwrap_or(100),
        burst_count: s.burst.count.unwrap_or(3),
        burst_window_ms: s.burst.window_secs.unwrap_or(300).saturating_mul(1000),
        burst_min_severity: s.burst.min_severity.unwrap_or(Severity::Medium),
        actions: [
            a.low.unwrap_or(Allow),
            a.medium.unwrap_or(Warn),
            a.high.unwrap_or(Approve),
            a.critical.unwrap_or(Block),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_url_in_a_message_never_shows_its_password() {
        assert_eq!(
            redact("postgres://u:pw@db:5432/x"),
            "postgres://***@db:5432/x"
        );
        assert_eq!(redact("u:pw@db/x"), "<not shown: no scheme>");
        assert_eq!(
            redact("host=db user=u password=pw"),
            "<not shown: no scheme>"
        );
        assert_eq!(redact("redis://db:6379"), "redis://db:6379");
    }

    #[test]
    fn path_globs() {
        let cases = [
            ("~/.ssh/**", "/home/alice/.ssh/id_rsa", true),
            ("~/.ssh/**", "~/.ssh/config", true),
            ("~/.ssh/**", "$HOME/.ssh/known_hosts", true),
            ("~/.ssh/**", "/root/.ssh/authorized_keys", true),
            ("~/.ssh/**", "/home/alice/ssh/x", false),
            ("**/.env", ".env", true),
            ("**/.env", "/srv/app/.env", true),
            ("**/.env", "/srv/app/.envrc", false),
            ("**/.env.*", "config/.env.production", true),
            ("**/*.pem", "certs/server.pem", true),
            ("/etc/shadow", "/etc/shadow", true),
            ("/etc/shadow", "/etc/shadow-", false),
        ];
        for (p, path, want) in cases {
            assert_eq!(path_glob(p).unwrap().matches(path), want, "{p} ~ {path}");
        }
    }

    #[test]
    fn pointers() {
        assert!(check_pointer("").is_ok());
        assert!(check_pointer("/a/b~0c~1d").is_ok());
        assert!(check_pointer("a").is_err());
        assert!(check_pointer("/a~2").is_err());
        assert!(check_pointer("/a~").is_err());
    }
}
