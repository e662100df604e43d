//! Bulwark's policy: the one YAML file that says what a gateway allows, and the built-in
//! packs that make it useful with no file at all.
//!
//! A policy is read strictly: unknown keys, wrong types, bad regexes, globs, pointers,
//! destination patterns and predicate names are refused, each with `FILE:LINE:COLUMN` and
//! what was expected. Bulwark never starts on a policy it only half understood.
//!
//! **Key design decision:** rules are data. Each rule (APERION's shape: `id`, `severity`,
//! `points`, `where`, `match`, `reason`, `safer_alternative`) matches on tool-name globs,
//! capabilities, JSON pointers into the arguments, regexes, session taint and *named
//! predicates*: structural facts the command and content analysers derive. The alternative,
//! rules written as Rust `if`s, would make every policy change a release and hide the
//! catalogue from the people who have to trust it.
//!
//! ```
//! let policy = bulwark_policy::load_str("policy.yaml", "version: 1\nname: demo\nmode: monitor\n").unwrap();
//! assert_eq!(policy.name, "demo");
//! assert!(policy.version.starts_with("demo@"));
//!
//! let err = bulwark_policy::load_str("policy.yaml", "version: 1\nmdoe: enforce\n").unwrap_err();
//! assert!(err.to_string().starts_with("policy.yaml:2:1: "));
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};

mod compile;
pub mod compiled;
mod error;
pub mod glob;
pub mod predicates;
pub mod schema;
pub mod summary;
pub mod vocab;

pub use compile::DEFAULT_SENSITIVE_PATHS;
pub use compiled::*;
pub use error::{Issue, PolicyError};
pub use glob::{Glob, GlobError};
pub use schema::{
    ApprovalChannel, BlockAs, FleetMode, GuardOn, GuardWhen, Mode, OnUnavailable, StateBackend,
    TelemetryBackend, UnknownAction,
};
pub use summary::Summary;
pub use vocab::{
    CapSet, Capability, ContentCategory, ReasonCode, RuleScope, Severity, Taint, TaintSet, Verdict,
};

/// The default policy: used when no file is given, and what `bulwark init` writes.
pub const DEFAULT_POLICY: &str = include_str!("../../../packs/default.yaml");

/// Built-in rule packs, by name.
pub const BUILTIN_PACKS: &[(&str, &str)] = &[
    ("core", include_str!("../../../packs/core.yaml")),
    ("commands", include_str!("../../../packs/commands.yaml")),
];

/// Policy files larger than this are refused.
pub const MAX_POLICY_BYTES: usize = 4 << 20;

/// A rule pack: tools, rules and sequences that a policy loads by name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackFile {
    /// Schema version; only `1` exists.
    pub version: Option<u32>,
    /// The pack's name.
    pub pack: Option<String>,
    /// What it covers.
    pub description: Option<String>,
    /// Tool mappings.
    #[serde(default)]
    pub tools: BTreeMap<String, schema::ToolEntry>,
    /// Rules.
    #[serde(default)]
    pub rules: Vec<schema::RuleEntry>,
    /// Capability sequences.
    #[serde(default)]
    pub sequences: Vec<schema::SequenceEntry>,
}

fn options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    // `enabled: no` is a YAML 1.1 trap; only true/false are booleans here.
    o.strict_booleans = true;
    o.with_snippet = false;
    o
}

/// Most problems one parse reports before it stops looking.
const MAX_PARSE_ISSUES: usize = 50;

fn parse<T: serde::de::DeserializeOwned>(file: &str, text: &str) -> Result<T, PolicyError> {
    if text.len() > MAX_POLICY_BYTES {
        return Err(PolicyError {
            file: file.into(),
            issues: vec![Issue {
                line: 0,
                column: 0,
                message: format!("file is larger than {MAX_POLICY_BYTES} bytes"),
            }],
        });
    }
    let first = match serde_saphyr::from_str_with_options::<T>(text, options()) {
        Ok(v) => return Ok(v),
        Err(e) => issue(&e),
    };
    Err(PolicyError {
        file: file.into(),
        issues: more_issues::<T>(text, first),
    })
}

fn issue(e: &serde_saphyr::Error) -> Issue {
    let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
    Issue {
        line,
        column,
        message: clean_message(&e.to_string()),
    }
}

/// Every problem of a file, not only the first the parser stops at: the entry the last
/// problem is in (its line and the lines indented under it) is blanked out — line numbers
/// stay — and the text parsed again, until it parses or a problem repeats. An entry taken
/// out can leave its block without a field it must have, or empty; such complaints after
/// the first problem are the blanking's doing, not the author's, and are left out.
fn more_issues<T: serde::de::DeserializeOwned>(text: &str, first: Issue) -> Vec<Issue> {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut seen = vec![(first.line, first.column)];
    let mut at = first.line as usize;
    let mut issues = vec![first];
    for _ in 0..2 * MAX_PARSE_ISSUES {
        if issues.len() >= MAX_PARSE_ISSUES || at == 0 || !blank_entry(&mut lines, at - 1) {
            break;
        }
        let again = lines.join("\n");
        let next = match serde_saphyr::from_str_with_options::<T>(&again, options()) {
            Ok(_) => break,
            Err(e) => issue(&e),
        };
        if seen.contains(&(next.line, next.column)) {
            break;
        }
        seen.push((next.line, next.column));
        at = next.line as usize;
        // A block whose entries were all blanked reads as empty, and one that lost an
        // entry may miss a field: the blanking's doing — blanked in turn, not reported.
        let emptied = lines
            .get(at.saturating_sub(1))
            .is_some_and(|l| l.trim_end().ends_with(':'))
            && (next.message.starts_with("expected mapping")
                || next.message.starts_with("expected sequence"));
        if !emptied && !next.message.starts_with("missing field") {
            issues.push(next);
        }
    }
    issues.sort_by_key(|i| (i.line, i.column));
    issues
}

/// Blanks line `i` and the lines indented deeper under it; whether anything was blanked.
fn blank_entry(lines: &mut [String], i: usize) -> bool {
    let Some(line) = lines.get(i) else {
        return false;
    };
    if line.trim().is_empty() {
        return false;
    }
    let indent = line.len() - line.trim_start_matches([' ', '-']).len();
    let base = line.len() - line.trim_start().len();
    let mut end = i + 1;
    while let Some(next) = lines.get(end) {
        let t = next.trim_start();
        let depth = next.len() - t.len();
        if !t.is_empty() && !t.starts_with('#') && depth <= base.max(indent.saturating_sub(1)) {
            break;
        }
        end += 1;
    }
    for l in &mut lines[i..end] {
        l.clear();
    }
    true
}

/// serde-saphyr appends its own "at line X column Y"; the location is already in front.
fn clean_message(m: &str) -> String {
    let first = m.lines().next().unwrap_or(m).trim();
    let cut = first.find(" at line ").map_or(first, |i| &first[..i]);
    let m = cut.trim_start_matches("error: ");
    let m = m.split(", set DuplicateKeyPolicy").next().unwrap_or(m);
    match m {
        "invalid u64" | "invalid u32" | "invalid usize" | "invalid u16" | "invalid u8" => {
            "expected a whole number (0 or more)".to_string()
        }
        _ => m.to_string(),
    }
}

/// How a policy names the packs it loads.
enum PackSource<'a> {
    Builtin,
    Dir(&'a Path),
}

fn load_packs(
    file: &str,
    raw: &schema::PolicyFile,
    source: PackSource<'_>,
) -> Result<Vec<compile::LoadedPack>, PolicyError> {
    let default = vec!["core".to_string(), "commands".to_string()];
    let names: Vec<(String, Option<serde_saphyr::Location>)> = match &raw.packs {
        Some(list) => list
            .iter()
            .map(|s| (s.value.clone(), Some(s.referenced)))
            .collect(),
        None => default.into_iter().map(|n| (n, None)).collect(),
    };
    let mut out = Vec::new();
    for (name, loc) in names {
        let fail = |message: String| {
            let (line, column) = loc.map_or((0, 0), |l| (l.line(), l.column()));
            PolicyError {
                file: file.into(),
                issues: vec![Issue {
                    line,
                    column,
                    message,
                }],
            }
        };
        if out.iter().any(|p: &compile::LoadedPack| p.name == name) {
            return Err(fail(format!("pack {name:?} is listed twice")));
        }
        let (pack_file, text) =
            if let Some((_, text)) = BUILTIN_PACKS.iter().find(|(n, _)| *n == name) {
                (format!("<builtin pack {name}>"), (*text).to_string())
            } else if name.ends_with(".yaml") || name.ends_with(".yml") || name.contains('/') {
                let PackSource::Dir(dir) = source else {
                    return Err(fail(format!(
                        "pack {name:?}: pack files can only be loaded from a policy file on disk"
                    )));
                };
                let path = dir.join(&name);
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| fail(format!("cannot read pack {}: {e}", path.display())))?;
                (path.display().to_string(), text)
            } else {
                let names: Vec<&str> = BUILTIN_PACKS.iter().map(|(n, _)| *n).collect();
                return Err(fail(format!(
                    "unknown pack {name:?}: expected one of {} or a path ending in .yaml",
                    names.join(", ")
                )));
            };
        let pack: PackFile = parse(&pack_file, &text)?;
        out.push(compile::LoadedPack {
            name,
            file: pack_file,
            text_digest: Sha256::digest(text.as_bytes()).into(),
            pack,
        });
    }
    Ok(out)
}

/// Compiles a policy from text. Packs are resolved among the built-in ones.
pub fn load_str(file: &str, text: &str) -> Result<Policy, PolicyError> {
    let raw: schema::PolicyFile = parse(file, text)?;
    let packs = load_packs(file, &raw, PackSource::Builtin)?;
    compile::compile(file, text, raw, packs)
}

/// Reads and compiles a policy file. Packs may be built-in names or paths relative to the
/// file's directory.
pub fn load_file(path: &Path) -> Result<Policy, PolicyError> {
    let file = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| PolicyError {
        file: file.clone(),
        issues: vec![Issue {
            line: 0,
            column: 0,
            message: format!("cannot read: {e}"),
        }],
    })?;
    if meta.len() > MAX_POLICY_BYTES as u64 {
        return Err(PolicyError {
            file,
            issues: vec![Issue {
                line: 0,
                column: 0,
                message: format!("file is larger than {MAX_POLICY_BYTES} bytes"),
            }],
        });
    }
    let text = std::fs::read_to_string(path).map_err(|e| PolicyError {
        file: file.clone(),
        issues: vec![Issue {
            line: 0,
            column: 0,
            message: format!("cannot read: {e}"),
        }],
    })?;
    let raw: schema::PolicyFile = parse(&file, &text)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let packs = load_packs(&file, &raw, PackSource::Dir(dir))?;
    compile::compile(&file, &text, raw, packs)
}

impl Policy {
    /// The built-in default policy.
    ///
    /// # Errors
    /// Only if the embedded default is broken, which the crate's tests rule out.
    pub fn builtin() -> Result<Policy, PolicyError> {
        load_str("<builtin default>", DEFAULT_POLICY)
    }
}
