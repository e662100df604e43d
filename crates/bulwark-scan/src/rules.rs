//! Keyword-prefiltered rules: an Aho-Corasick pass finds keyword hits, and each rule's regex
//! runs only in a window around its hits (windows merged per rule, so every byte is read at
//! most once per rule). Work is linear in the input however many rules there are, and the
//! regexes never see the bulk of a large input.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::bytes::{Regex, RegexBuilder};

use crate::finding::{Category, Scope, Severity};

/// A rule as written in the detector tables.
#[derive(Clone, Copy, Debug)]
pub struct RuleDef {
    /// Detector id, e.g. `secret.github_token`.
    pub id: &'static str,
    /// Category.
    pub category: Category,
    /// Severity.
    pub severity: Severity,
    /// Placeholder label.
    pub label: &'static str,
    /// Literal keywords (ASCII case-insensitive) that must occur for the rule to apply.
    pub keywords: &'static [&'static str],
    /// The verifying regex (bytes, ASCII classes).
    pub regex: &'static str,
    /// Which capture group is the finding (0 = the whole match).
    pub group: usize,
    /// Bytes of context before a keyword hit.
    pub before: usize,
    /// Bytes of context after a keyword hit.
    pub after: usize,
    /// Scopes the rule runs in.
    pub scopes: &'static [Scope],
    /// Extra validation of the finding's bytes (checksums, entropy, placeholders).
    pub check: Option<fn(&[u8]) -> bool>,
    /// Extra validation of the whole match (for example the variable name around a value).
    pub context: Option<fn(&[u8]) -> bool>,
}

/// `group` value meaning "the first capture group that took part in the match".
pub const ANY_GROUP: usize = usize::MAX;

/// Defaults for table entries.
pub const BASE: RuleDef = RuleDef {
    id: "",
    category: Category::Secret,
    severity: Severity::High,
    label: "",
    keywords: &[],
    regex: "",
    group: 0,
    before: 0,
    after: 0,
    scopes: &[Scope::Request, Scope::Response, Scope::Definition],
    check: None,
    context: None,
};

/// A compiled rule.
#[derive(Debug)]
pub struct Rule {
    /// Its definition.
    pub def: RuleDef,
    /// Its regex.
    pub regex: Regex,
}

/// A compiled rule set with its keyword automaton.
#[derive(Debug)]
pub struct RuleSet {
    ac: AhoCorasick,
    /// For each keyword, the rules it triggers.
    triggers: Vec<Vec<usize>>,
    /// The rules.
    pub rules: Vec<Rule>,
}

/// A rule that did not compile (a bug in a detector table; tests catch it).
#[derive(Debug, thiserror::Error)]
#[error("detector {id}: {message}")]
pub struct RuleError {
    /// Rule id.
    pub id: &'static str,
    /// What went wrong.
    pub message: String,
}

/// A raw match from a rule set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit {
    /// Index of the rule.
    pub rule: usize,
    /// Byte range.
    pub span: (usize, usize),
}

impl RuleSet {
    /// Compiles `defs`. `case_insensitive` makes keywords match in any ASCII case (for raw
    /// text); the normalised view is already lower-case and skips that cost.
    pub fn new(defs: &[RuleDef], case_insensitive: bool) -> Result<RuleSet, RuleError> {
        let mut keywords: Vec<String> = Vec::new();
        let mut triggers: Vec<Vec<usize>> = Vec::new();
        let mut rules = Vec::with_capacity(defs.len());
        for (i, def) in defs.iter().enumerate() {
            let regex = RegexBuilder::new(def.regex)
                .unicode(false)
                .size_limit(4 << 20)
                .dfa_size_limit(4 << 20)
                .build()
                .map_err(|e| RuleError { id: def.id, message: e.to_string() })?;
            if def.keywords.is_empty() {
                return Err(RuleError { id: def.id, message: "a prefiltered rule needs keywords".into() });
            }
            for k in def.keywords {
                let k = k.to_ascii_lowercase();
                match keywords.iter().position(|x| *x == k) {
                    Some(j) => triggers[j].push(i),
                    None => {
                        keywords.push(k);
                        triggers.push(vec![i]);
                    }
                }
            }
            rules.push(Rule { def: *def, regex });
        }
        let ac = AhoCorasickBuilder::new()
            .ascii_case_insensitive(case_insensitive)
            .match_kind(MatchKind::Standard)
            // A DFA costs memory once and makes the overlapping search several times faster.
            .kind(Some(AhoCorasickKind::DFA))
            .build(&keywords)
            .map_err(|e| RuleError { id: "keywords", message: e.to_string() })?;
        Ok(RuleSet { ac, triggers, rules })
    }

    /// Every rule match in `hay` for `scope`, in no particular order, deduplicated.
    pub fn scan(&self, hay: &[u8], scope: Scope, out: &mut Vec<Hit>) {
        // Windows per rule, merged as they are added (hits arrive in order of end).
        let mut windows: Vec<Vec<(usize, usize)>> = vec![Vec::new(); self.rules.len()];
        for m in self.ac.find_overlapping_iter(hay) {
            for &r in &self.triggers[m.pattern().as_usize()] {
                let def = &self.rules[r].def;
                if !def.scopes.contains(&scope) {
                    continue;
                }
                let s = m.start().saturating_sub(def.before.max(1));
                let e = (m.end() + def.after.max(1)).min(hay.len());
                let w = &mut windows[r];
                match w.last_mut() {
                    Some(last) if s <= last.1 => last.1 = last.1.max(e),
                    _ => w.push((s, e)),
                }
            }
        }
        let before = out.len();
        for (r, ws) in windows.iter().enumerate() {
            let rule = &self.rules[r];
            for &(ws_start, ws_end) in ws {
                let window = &hay[ws_start..ws_end];
                for caps in rule.regex.captures_iter(window) {
                    let Some(whole) = caps.get(0) else { continue };
                    // A match cut off by the window edge lacks context; the text may continue.
                    if (whole.start() == 0 && ws_start > 0) || (whole.end() == window.len() && ws_end < hay.len()) {
                        continue;
                    }
                    let group = if rule.def.group == ANY_GROUP { (1..caps.len()).find_map(|i| caps.get(i)) } else { caps.get(rule.def.group) };
                    let Some(g) = group else { continue };
                    if rule.def.check.is_some_and(|check| !check(g.as_bytes())) || rule.def.context.is_some_and(|check| !check(whole.as_bytes())) {
                        continue;
                    }
                    out.push(Hit { rule: r, span: (ws_start + g.start(), ws_start + g.end()) });
                }
            }
        }
        let new = &mut out[before..];
        new.sort_unstable_by_key(|h| (h.rule, h.span));
        let mut keep = before;
        for i in before..out.len() {
            if i == before || out[i] != out[keep - 1] {
                out[keep] = out[i];
                keep += 1;
            }
        }
        out.truncate(keep);
    }

    /// The naive baseline for benchmarks: every applicable rule's regex over the whole input.
    pub fn scan_naive(&self, hay: &[u8], scope: Scope) -> usize {
        let mut n = 0;
        for rule in &self.rules {
            if rule.def.scopes.contains(&scope) {
                n += rule.regex.find_iter(hay).count();
            }
        }
        n
    }
}
