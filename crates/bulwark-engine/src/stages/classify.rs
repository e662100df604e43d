//! Stage 2, classify (seed 000 stage 1's reviewed mapping, seed 001's command analysis):
//! what the call can do, derived, never declared.
//!
//! Capabilities come from the policy's reviewed mapping, then the built-in catalogue, then
//! the arguments: a command goes to shell analysis, SQL to SQL analysis, URLs and hosts to
//! destinations, paths to the sensitive-path check. Declared capabilities only add
//! scrutiny, and only for tools nobody mapped. Emits `UNKNOWN_TOOL` when policy blocks (or
//! warns about, or escalates) unknown tools; never decides anything else.

use bulwark_policy::{Capability, ReasonCode, Severity, UnknownAction, Verdict};

use crate::call::Profile;
use serde_json::Value;

use crate::analysis::catalogue::{self, Kind};
use crate::analysis::{Facts, json};
use crate::pipeline::{Ctx, Dest, Known};
use crate::state::Env;

pub(crate) fn run(ctx: &mut Ctx<'_>, env: &mut Env<'_>) {
    let call = ctx.call;
    let name = &call.tool.name;
    ctx.spec = ctx.policy.tools.get(name);
    ctx.entry = if ctx.spec.is_none() {
        catalogue::lookup(name).filter(|e| !object_method(name, *e, &call.args))
    } else {
        None
    };
    ctx.known = match (ctx.spec, ctx.entry) {
        (Some(_), _) => Known::Policy,
        (None, Some(_)) => Known::Catalogue,
        (None, None) => Known::Unknown,
    };
    let kind = ctx.entry.map(|e| e.kind);
    let mut inferred: Option<String> = None;
    if let Some(spec) = ctx.spec {
        ctx.caps = spec.capabilities;
        ctx.taint_out = spec.taint;
        ctx.escalate = spec.escalate;
    } else if let Some(entry) = ctx.entry {
        ctx.caps = entry.capabilities();
        ctx.taint_out = entry.taint();
        // The catalogue knows a reader by its name, which says what kind of tool it is, not
        // who wrote what it returns: AgentDojo's `read_file` reads a bill from outside
        // under a coding agent's name. Where the definition's words say a reader's results
        // are written by others, that taint is added (taint only ever adds). Only
        // `untrusted-input`: whether a file is a secret is the sensitive-path check's
        // call, and "every read is private" would end all egress after the first read.
        // Only readers: what a write or a command returns is its own outcome.
        if let Some(def) = call
            .definition
            .as_ref()
            .filter(|_| entry.kind == Kind::Read)
        {
            let found = crate::infer::infer(name, def);
            if found.taint.contains(bulwark_policy::Taint::UntrustedInput) {
                ctx.taint_out.insert(bulwark_policy::Taint::UntrustedInput);
                inferred = Some(found.summary());
            }
        }
    } else {
        // Nobody reviewed this tool: what its definition's words say (issue 26), plus any
        // hint from the caller, which can only add scrutiny.
        if let Some(def) = &call.definition {
            let found = crate::infer::infer(name, def);
            ctx.caps = found.capabilities;
            ctx.taint_out = found.taint;
            inferred = Some(found.summary());
        }
        if let Some(declared) = call.declared_capabilities {
            ctx.caps = ctx.caps.union(declared);
        }
    }
    ctx.net_by_tool = ctx.caps.has_family("net");

    let args = &call.args;
    let mut facts = Facts::default();
    let pointers = ctx.spec.map(|s| s.args.clone()).unwrap_or_default();
    let unknown = ctx.known == Known::Unknown;
    // Arguments the tool's definition does not declare are read as an unknown tool's are:
    // a lax server may act on them, so what they hold is analysed, not trusted by name.
    let undeclared = call
        .definition
        .as_ref()
        .filter(|_| !unknown)
        .map(|d| undeclared_strings(args, &d.input_schema))
        .unwrap_or_default();

    // Commands: a string, or an argv array (`["bash", "-lc", "ls -la"]`, OpenAI's
    // `local_shell`) read as the line that runs exactly those words. Files earlier calls of
    // the session wrote are known: running one runs what it holds.
    let files = env.session.files();
    let found = match by_pointer_command(args, pointers.command.as_deref()) {
        Some(c) => Some(c),
        None => match kind {
            Some(Kind::Shell) => json::command(args, catalogue::COMMAND_KEYS),
            None if unknown || ctx.caps.contains(Capability::ExecShell) => {
                json::command(args, catalogue::COMMAND_KEYS)
            }
            _ => None,
        },
    };
    let (command, consumed) = match found {
        Some((c, used)) => (Some(c), used),
        None => (None, Vec::new()),
    };
    if let Some(cmd) = command.as_deref() {
        let a = bulwark_shell::analyse_in(cmd, &files);
        ctx.written.extend(a.written.iter().cloned());
        facts.merge(Facts::from(&a));
        // SQL typed where a command goes still says what the agent means to run.
        if bulwark_shell::looks_like_sql(cmd) {
            let s = bulwark_shell::analyse_sql(cmd);
            if !s.has("sql.unparsable") {
                facts.merge(Facts::from(&s));
            }
        }
        ctx.commands = a.invocations;
        ctx.command_reasons = a.reasons.into_iter().map(|r| r.text).collect();
    } else if unknown {
        // Tools are recognised by what their arguments hold, whatever they are called.
        for text in json::strings(args).into_iter().take(64) {
            if bulwark_shell::looks_like_command(text) {
                let a = bulwark_shell::analyse_in(text, &files);
                ctx.written.extend(a.written.iter().cloned());
                facts.merge(Facts::from(&a));
                ctx.commands.extend(a.invocations);
                ctx.command_reasons
                    .extend(a.reasons.into_iter().map(|r| r.text));
            }
        }
    }
    for text in undeclared
        .iter()
        .copied()
        .filter(|t| Some(*t) != command.as_deref())
    {
        if bulwark_shell::looks_like_command(text) {
            let a = bulwark_shell::analyse(text);
            facts.merge(Facts::from(&a));
            ctx.commands.extend(a.invocations);
            ctx.command_reasons
                .extend(a.reasons.into_iter().map(|r| r.text));
        }
    }
    // A command can ride in any argument whose name says so, wherever it sits
    // (`pre_command`, `options.exec`, `hooks[0].cmd`), whatever the tool: each is analysed
    // like the command itself, so a known tool's extra field is no way around the analysis.
    for text in json::fields_deep(args, catalogue::NESTED_COMMAND_KEYS)
        .into_iter()
        .filter(|t| !consumed.contains(t) && !t.trim().is_empty())
        .take(64)
    {
        let a = bulwark_shell::analyse_in(text, &files);
        ctx.written.extend(a.written.iter().cloned());
        facts.merge(Facts::from(&a));
        ctx.commands.extend(a.invocations);
        ctx.command_reasons
            .extend(a.reasons.into_iter().map(|r| r.text));
    }
    if command.is_none() && kind == Some(Kind::Shell) && call.direction.acts() {
        // A shell tool with no command we can find: fail closed.
        facts.capabilities.insert(Capability::ExecArbitrary);
        facts.add("shell.unparsable");
    }

    // SQL. A string is SQL when the mapping, the catalogue or the argument's name says so
    // (then what no dialect reads fails closed), or when it has the shape of a statement;
    // prose that opens with an SQL verb ("Update the README") is not SQL.
    use bulwark_shell::SqlContext;
    let sql = if let Some(text) = by_pointer(args, pointers.sql.as_deref()) {
        bulwark_shell::sql_in(text, SqlContext::Declared)
    } else {
        match kind {
            Some(Kind::Sql) => json::field(args, catalogue::SQL_KEYS)
                .and_then(|(_, s)| bulwark_shell::sql_in(s, SqlContext::Declared)),
            None => json::field(args, catalogue::SQL_KEYS)
                .and_then(|(key, s)| bulwark_shell::sql_in(s, sql_context(&key)))
                .or_else(|| {
                    unknown
                        .then(|| {
                            json::strings(args)
                                .into_iter()
                                .take(64)
                                .find_map(|s| bulwark_shell::sql_in(s, SqlContext::Found))
                        })
                        .flatten()
                }),
            _ => None,
        }
    };
    if let Some(s) = sql {
        facts.merge(Facts::from(&s));
    }
    // SQL can ride in any argument named for it, wherever it sits (`options.sql`,
    // `filters[0].statement`), and in what the definition does not declare, whatever the
    // tool: each is analysed like the statement itself.
    let top = by_pointer(args, pointers.sql.as_deref())
        .or_else(|| json::field(args, catalogue::SQL_KEYS).map(|(_, s)| s));
    let named = json::fields_deep_named(args, catalogue::SQL_KEYS)
        .into_iter()
        .map(|(k, t)| (sql_context(k), t));
    let found = undeclared
        .iter()
        .map(|t| (bulwark_shell::SqlContext::Found, *t));
    for (context, text) in named
        .chain(found)
        .filter(|(_, t)| Some(*t) != top && !t.trim().is_empty())
        .take(64)
    {
        if let Some(s) = bulwark_shell::sql_in(text, context) {
            facts.merge(Facts::from(&s));
        }
    }

    // Destinations.
    let mut dests: Vec<String> = Vec::new();
    if let Some(u) = by_pointer(args, pointers.url.as_deref()) {
        dests.push(u.to_string());
    } else {
        // URLs and hosts wherever they sit: `options.endpoint` is as much a destination as
        // a top-level `url`.
        let candidates = json::fields_deep(args, catalogue::URL_KEYS);
        match kind {
            Some(Kind::Fetch) => dests.extend(candidates.iter().map(|s| s.to_string())),
            _ if unknown || ctx.net_by_tool => {
                let mut found: Vec<String> = candidates
                    .iter()
                    .filter(|s| looks_like_destination(s))
                    .map(|s| s.to_string())
                    .collect();
                found.extend(
                    json::fields_deep(args, catalogue::HOST_KEYS)
                        .into_iter()
                        .map(str::to_string),
                );
                if unknown && !found.is_empty() {
                    facts.capabilities.insert(Capability::NetEgress);
                }
                dests.extend(found);
            }
            // A tool that reaches no network by its mapping: an address under a name that
            // says so, or in an argument it does not declare, is still a destination (a
            // lax server may fetch it), decided as one.
            _ => dests.extend(
                candidates
                    .iter()
                    .chain(undeclared.iter())
                    .filter(|s| is_address(s))
                    .map(|s| s.to_string()),
            ),
        }
    }
    if let Some(d) = &call.destination {
        dests.push(d.clone());
    }
    let command_dests = std::mem::take(&mut facts.destinations);

    // Paths.
    let mut paths: Vec<String> = Vec::new();
    if let Some(p) = by_pointer(args, pointers.path.as_deref()) {
        paths.push(p.to_string());
    } else {
        // Whatever the tool: a path under a name that says so is a path.
        paths.extend(
            json::fields_deep(args, catalogue::PATH_KEYS)
                .into_iter()
                .filter(|p| looks_like_path(p))
                .map(str::to_string),
        );
    }
    paths.append(&mut facts.paths);

    // A file-writing tool's write is the write a shell redirect makes: the same rules about
    // where writes may go (startup files, cron, git hooks, sudoers, system files) judge it.
    let writes_files = matches!(kind, Some(Kind::Write | Kind::Delete))
        || (ctx.spec.is_some() && ctx.caps.contains(Capability::FsWrite));
    if writes_files && call.direction.acts() {
        for p in &paths {
            ctx.commands.push(bulwark_shell::Invocation {
                name: name.to_ascii_lowercase(),
                written: name.clone(),
                writes: vec![bulwark_shell::paths::normalize(p)],
                ..Default::default()
            });
        }
    }

    ctx.caps = ctx.caps.union(facts.capabilities);
    ctx.predicates = facts.predicates;

    // Destinations: assess once here; the destinations stage decides.
    let schemes: Vec<&str> = ctx
        .policy
        .destinations
        .schemes
        .iter()
        .map(String::as_str)
        .collect();
    let internal_ok = &ctx.policy.destinations.internal_ok;
    let all = dests
        .into_iter()
        .map(|d| (d, false))
        .chain(command_dests.into_iter().map(|d| (d, true)));
    for (text, from_command) in all {
        if ctx.destinations.iter().any(|d| d.text == text) {
            continue;
        }
        let mut assessment = bulwark_net::assess(&text, &schemes, |h| internal_ok.allows(h));
        if from_command {
            // A command names hosts in its own syntax (`user@host`, `host:port`,
            // `git@host:repo`) and speaks more protocols than a fetch tool (ssh, git,
            // sftp, rsync). A URL that does not parse stays refused: the program may read a
            // host out of it; `file:`, `gopher:`, `dict:` and the like stay refused too.
            let url = text.contains("://");
            match &assessment.finding {
                Some(bulwark_net::SsrfFinding::Scheme(s))
                    if COMMAND_SCHEMES.iter().any(|c| c.eq_ignore_ascii_case(s)) =>
                {
                    let with: Vec<&str> = schemes.iter().chain(COMMAND_SCHEMES).copied().collect();
                    assessment = bulwark_net::assess(&text, &with, |h| internal_ok.allows(h));
                }
                Some(bulwark_net::SsrfFinding::Unparsable(_)) if !url => assessment.finding = None,
                _ => {}
            }
            if let Some(bulwark_net::SsrfFinding::Internal { class, .. }) = &assessment.finding
                && !command_internal_refused(*class)
            {
                assessment.finding = None;
                if !ctx.predicates.contains(&"dest.internal") {
                    ctx.predicates.push("dest.internal");
                }
            }
        }
        ctx.destinations.push(Dest {
            text,
            assessment,
            from_command,
        });
    }
    if !ctx.destinations.is_empty() {
        ctx.predicates.push("dest.any");
        let approved = &ctx.policy.destinations.approved;
        let all_approved = !approved.is_empty()
            && ctx.destinations.iter().all(|d| {
                d.assessment.finding.is_none()
                    && d.assessment
                        .destination
                        .as_ref()
                        .is_some_and(|x| x.hosts().all(|h| approved.allows(h)))
            });
        if all_approved && ctx.caps.contains(Capability::NetEgress) {
            ctx.caps.remove(Capability::NetEgress);
            ctx.caps.insert(Capability::NetEgressApproved);
        } else {
            ctx.predicates.push("dest.unapproved");
        }
        if ctx.destinations.iter().any(|d| {
            d.assessment
                .destination
                .as_ref()
                .is_some_and(|x| matches!(x.host, bulwark_net::Host::Domain(_)))
        }) {
            ctx.predicates.push("dest.hostname");
        }
    }

    // Paths: reading a sensitive one means the session holds private data.
    // Reading a path on the policy's list, or a credential store, taints.
    let credential =
        |p: &String| bulwark_shell::paths::is_sensitive(&bulwark_shell::paths::normalize(p));
    let credential_named = paths.iter().any(credential);
    let sensitive = paths.iter().any(|p| ctx.policy.taint.is_sensitive_path(p))
        || credential_named
        || ctx.predicates.contains(&"shell.sensitive_read")
        || ctx.predicates.contains(&"shell.secret_read");
    if paths.iter().any(|p| ctx.policy.taint.is_control_path(p)) {
        ctx.predicates.push("path.bulwark_control");
    }
    if sensitive {
        ctx.predicates.push("path.sensitive");
        if ctx.caps.contains(Capability::FsRead) || ctx.caps.contains(Capability::ExecShell) {
            ctx.taint_out.insert(bulwark_policy::Taint::PrivateData);
        }
        // A file tool reading a credential store, by the command analyser's own test, so
        // that `Read ~/.ssh/id_rsa` is asked about as `cat ~/.ssh/id_rsa` is (and a public
        // key is read as freely as `cat` reads it). The shell's reads are
        // `shell.sensitive_read`.
        if credential_named
            && ctx.caps.contains(Capability::FsRead)
            && !ctx.caps.contains(Capability::ExecShell)
        {
            ctx.predicates.push("path.sensitive_read");
        }
    }
    ctx.paths = paths;

    // Taint sources by capability family.
    for (family, taint) in &ctx.policy.taint.sources {
        if ctx.caps.has_family(family) {
            ctx.taint_out = ctx.taint_out.union(*taint);
        }
    }

    let (known, caps) = (ctx.known, ctx.caps);
    ctx.explain(|| {
        let mut note = format!(
            "known from {known:?}; capabilities [{}]",
            caps.names().join(", ")
        );
        if let Some(why) = inferred {
            note.push_str("; ");
            note.push_str(&why);
        }
        note
    });

    if unknown {
        ctx.predicates.push("tool.unknown");
        if call.direction.acts() {
            unknown_tool(ctx);
        }
    }
}

fn unknown_tool(ctx: &mut Ctx<'_>) {
    let name = ctx.call.tool.name.clone();
    let action = match ctx.call.profile {
        Profile::Edge if !ctx.policy.unknown_tools_explicit => UnknownAction::Block,
        _ => ctx.policy.unknown_tools,
    };
    let (verdict, what) = match action {
        UnknownAction::Analyse => return,
        UnknownAction::Escalate => {
            ctx.escalate = true;
            return;
        }
        UnknownAction::Warn => (
            Verdict::Warn,
            "is not in the reviewed mapping; allowed on what its arguments show",
        ),
        UnknownAction::Approve => (
            Verdict::Approve,
            "is not in the reviewed mapping and needs a human",
        ),
        UnknownAction::Block => (
            Verdict::Block,
            "is not in the reviewed mapping, and unknown tools fail closed",
        ),
    };
    ctx.raise(
        verdict,
        ReasonCode::UnknownTool,
        None,
        Some(if verdict == Verdict::Block {
            Severity::High
        } else {
            Severity::Medium
        }),
        format!("Tool {name:?} {what}."),
        Some(format!(
            "Ask the operator to add {name:?} to the policy's tools mapping."
        )),
    );
}

/// Protocols shell commands use besides the policy's web schemes.
const COMMAND_SCHEMES: &[&str] = &[
    "ssh", "git", "git+ssh", "ssh+git", "sftp", "ftp", "ftps", "rsync", "scp", "s3", "gs",
];

/// Hosts a shell command may not reach even though it runs on the user's machine:
/// cloud metadata services (instance credentials) and names built to rebind to internal
/// addresses. Loopback, private and intranet hosts are the user's own services when a
/// command runs locally; they are reported as `dest.internal` for rules to use.
fn command_internal_refused(class: bulwark_net::HostClass) -> bool {
    use bulwark_net::HostClass as C;
    matches!(class, C::Metadata | C::RebindingName | C::LinkLocal)
}

/// An argument named for SQL (`sql`, `statement`, `sql_query`) holds SQL; `query` and `q`
/// are as often a search, so their text is SQL only when it reads as a statement.
/// A namespaced name whose last part is a catalogue tool (`legal_case.fetch`,
/// `history_fact.fetch`) is a method of that object, not the catalogue's tool, when its
/// arguments hold nothing the tool works on: a fetcher with no URL or host anywhere is not
/// a web fetcher. (`mcp__fetch__fetch` with a `url` is.) It is then judged as a tool nobody
/// mapped, by what its arguments hold.
fn object_method(name: &str, entry: catalogue::Entry, args: &Value) -> bool {
    let exact = catalogue::lookup_exact(name).is_some();
    !exact
        && entry.kind == Kind::Fetch
        && json::fields_deep(args, catalogue::URL_KEYS).is_empty()
        && json::fields_deep(args, catalogue::HOST_KEYS).is_empty()
        && !json::strings(args).into_iter().any(looks_like_destination)
}

fn sql_context(pointer: &str) -> bulwark_shell::SqlContext {
    let name = pointer.trim_start_matches('/').to_ascii_lowercase();
    // `statement` may be SQL or what a person said (a support tool's `statement`): like
    // `query`, SQL when it parses or has a statement's structure.
    if name.contains("sql") {
        bulwark_shell::SqlContext::Declared
    } else {
        bulwark_shell::SqlContext::Found
    }
}

fn by_pointer<'v>(args: &'v Value, pointer: Option<&str>) -> Option<&'v str> {
    args.pointer(pointer?)?.as_str()
}

/// The command a policy's mapping points at: a string, or an argv array.
fn by_pointer_command<'v>(
    args: &'v Value,
    pointer: Option<&str>,
) -> Option<(String, Vec<&'v str>)> {
    match args.pointer(pointer?)? {
        Value::String(s) => Some((s.clone(), vec![s.as_str()])),
        Value::Array(a) => {
            let words: Vec<&str> = a.iter().map(Value::as_str).collect::<Option<_>>()?;
            (!words.is_empty()).then(|| (json::argv_line(&words), words))
        }
        _ => None,
    }
}

/// For tools nobody described: a URL, written with a scheme or as `www.…` (how people and
/// models write addresses; AgentDojo's web tools take them so).
fn looks_like_destination(s: &str) -> bool {
    let s = s.trim();
    s.contains("://") || s.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("www."))
}

/// A string that is an address and nothing else (no spaces: a command line that names one
/// is analysed as a command), and not a `file:` URL, which names a path on this machine.
fn is_address(s: &str) -> bool {
    let s = s.trim();
    looks_like_destination(s)
        && !s.contains(char::is_whitespace)
        && !s.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("file:"))
}

/// Every string under the top-level arguments `schema` does not declare (all of them when
/// it declares none), bounded.
fn undeclared_strings<'a>(args: &'a Value, schema: &Value) -> Vec<&'a str> {
    let Some(obj) = args.as_object() else {
        return Vec::new();
    };
    let declared = schema.get("properties").and_then(Value::as_object);
    let mut out = Vec::new();
    for (k, v) in obj {
        if declared.is_some_and(|d| d.contains_key(k)) {
            continue;
        }
        out.extend(json::strings(v));
        if out.len() >= 64 {
            out.truncate(64);
            break;
        }
    }
    out
}

/// Absolute, home-relative or relative paths with a separator or a dotfile name.
fn looks_like_path(s: &str) -> bool {
    let s = s.trim();
    !s.is_empty() && !s.contains("://") && (s.starts_with(['/', '~', '.', '$']) || s.contains('/'))
}
