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
    /// Severity per scope (request, response, definition), when it depends on the channel.
    pub per_scope: Option<[Severity; 3]>,
    /// Skip a match preceded by a negation (`do not reveal the password`).
    pub negation_guard: bool,
}

/// Whether the 16 bytes before a match hold a negation (`not`, `n't`, `never`, `no`).
fn negated(before: &[u8]) -> bool {
    let tail = &before[before.len().saturating_sub(16)..];
    let t = String::from_utf8_lossy(tail);
    t.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .any(|w| matches!(w, "not" | "never" | "no") || w.ends_with("n't"))
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
    per_scope: None,
    negation_guard: false,
};

impl RuleDef {
    /// The severity of this rule's findings in `scope`.
    pub fn severity_in(&self, scope: Scope) -> Severity {
        match self.per_scope {
            Some(s) => s[scope as usize],
            None => self.severity,
        }
    }
}

/// Which text a rule's regex reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// The text as given.
    Raw,
    /// The normalised text (see `normalize`).
    Normalized,
}

/// A compiled rule.
#[derive(Debug)]
pub struct Rule {
    /// Its definition.
    pub def: RuleDef,
    /// Its regex.
    pub regex: Regex,
    /// The text it reads.
    pub view: View,
}

/// Word characters as the phrase rules need them: those of the scripts and blocks people
/// write in (Latin and its extensions, Greek, Cyrillic, Armenian, Hebrew, Arabic, the
/// Indic scripts, Thai, Lao, Tibetan, Myanmar, Georgian, Ethiopic, Khmer, kana, Bopomofo,
/// CJK, Hangul, fullwidth forms, combining marks), less those scripts' sentence
/// punctuation. Not every `\\w` code point (historic scripts, mathematical letters) is
/// here: such text is not what the rules' filler words are written in.
const WORD: &str = r"[0-9A-Za-z_\x{AA}\x{B2}-\x{B3}\x{B5}\x{B9}-\x{BA}\x{BC}-\x{BE}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{2FF}\x{300}-\x{36F}\x{370}-\x{37D}\x{37F}-\x{386}\x{388}-\x{3FF}\x{400}-\x{52F}\x{531}-\x{588}\x{58A}-\x{58F}\x{591}-\x{5C2}\x{5C4}-\x{5FF}\x{610}-\x{61A}\x{620}-\x{669}\x{66E}-\x{6D3}\x{6D5}-\x{6FF}\x{750}-\x{77F}\x{8A0}-\x{8FF}\x{900}-\x{963}\x{966}-\x{DFF}\x{E00}-\x{EFF}\x{F00}-\x{F03}\x{F13}-\x{FFF}\x{1000}-\x{1049}\x{104C}-\x{10FA}\x{10FC}-\x{11FF}\x{1200}-\x{1360}\x{1369}-\x{139F}\x{1780}-\x{17D3}\x{17D7}-\x{17FF}\x{1AB0}-\x{1AFF}\x{1DC0}-\x{1EFF}\x{1F00}-\x{1FFF}\x{203F}-\x{2040}\x{20D0}-\x{20FF}\x{2C00}-\x{2DFF}\x{3005}-\x{3007}\x{3031}-\x{3035}\x{3040}-\x{30FA}\x{30FC}-\x{30FF}\x{3100}-\x{318F}\x{3400}-\x{4DBF}\x{4E00}-\x{9FFF}\x{A640}-\x{A69F}\x{A720}-\x{A7FF}\x{AB30}-\x{AB6F}\x{AC00}-\x{D7AF}\x{F900}-\x{FAFF}\x{FB00}-\x{FDFF}\x{FE70}-\x{FEFF}\x{FF10}-\x{FF19}\x{FF21}-\x{FF3A}\x{FF3F}\x{FF41}-\x{FF5A}\x{FF66}-\x{FFDC}]";

/// `pattern` with every `\\w` read as [`WORD`]. Unicode's own `\\w` spans some 770 ranges,
/// and each use compiles to its own UTF-8 automaton (forward and reverse, with the lazy
/// DFA's cache sized to match): one multilingual rule with twenty uses took 6 MB, the
/// scanner's compiled rules 14.9 MB of a 33 MB gateway (10.3 MB after).
fn compact_word(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('w') => out.push_str(WORD),
            Some(n) => {
                out.push('\\');
                out.push(n);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// A compiled rule set: every rule of both views behind one keyword automaton.
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
    /// Byte range in the rule's view.
    pub span: (usize, usize),
}

impl RuleSet {
    /// Compiles the raw-view and normalised-view rules. Keywords match in any ASCII case.
    pub fn new(raw: &[RuleDef], normalized: &[RuleDef]) -> Result<RuleSet, RuleError> {
        let mut keywords: Vec<String> = Vec::new();
        let mut triggers: Vec<Vec<usize>> = Vec::new();
        let mut rules = Vec::with_capacity(raw.len() + normalized.len());
        let tagged = raw
            .iter()
            .map(|d| (d, View::Raw))
            .chain(normalized.iter().map(|d| (d, View::Normalized)));
        for (i, (def, view)) in tagged.enumerate() {
            // Raw-view rules read bytes with ASCII classes (secrets are ASCII); phrase rules read
            // the normalised text, where words can be in any script.
            let source = match view {
                View::Normalized => compact_word(def.regex),
                View::Raw => def.regex.to_string(),
            };
            let regex = RegexBuilder::new(&source)
                .unicode(view == View::Normalized)
                .size_limit(4 << 20)
                .dfa_size_limit(4 << 20)
                .build()
                .map_err(|e| RuleError {
                    id: def.id,
                    message: e.to_string(),
                })?;
            if def.keywords.is_empty() {
                return Err(RuleError {
                    id: def.id,
                    message: "a prefiltered rule needs keywords".into(),
                });
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
            rules.push(Rule {
                def: *def,
                regex,
                view,
            });
        }
        let ac = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            // A DFA costs memory once and makes the overlapping search several times faster.
            .kind(Some(AhoCorasickKind::DFA))
            .build(&keywords)
            .map_err(|e| RuleError {
                id: "keywords",
                message: e.to_string(),
            })?;
        Ok(RuleSet {
            ac,
            triggers,
            rules,
        })
    }

    /// Every rule match for `scope`: raw-view rules read `raw`, normalised-view rules read
    /// `norm`. When `identity` holds (the normalised text maps byte for byte onto the raw
    /// text), one keyword pass over `norm` serves both views; otherwise each view is searched
    /// on its own text.
    pub fn scan(&self, raw: &[u8], norm: &[u8], identity: bool, scope: Scope, out: &mut Vec<Hit>) {
        let mut wanted: Vec<(usize, usize, usize)> = Vec::new();
        let mut collect = |hay: &[u8], only: Option<View>| {
            for m in self.ac.find_overlapping_iter(hay) {
                for &r in &self.triggers[m.pattern().as_usize()] {
                    let rule = &self.rules[r];
                    if only.is_some_and(|v| v != rule.view) || !rule.def.scopes.contains(&scope) {
                        continue;
                    }
                    let s = m.start().saturating_sub(rule.def.before.max(1));
                    let e = (m.end() + rule.def.after.max(1)).min(hay.len());
                    wanted.push((r, s, e));
                }
            }
        };
        if identity {
            collect(norm, None);
        } else {
            collect(raw, Some(View::Raw));
            collect(norm, Some(View::Normalized));
        }
        wanted.sort_unstable();
        let mut windows: Vec<(usize, usize, usize)> = Vec::with_capacity(wanted.len());
        for (r, s, e) in wanted {
            match windows.last_mut() {
                Some(last) if last.0 == r && s <= last.2 => last.2 = last.2.max(e),
                _ => windows.push((r, s, e)),
            }
        }
        let before = out.len();
        for &(r, ws_start, ws_end) in &windows {
            let rule = &self.rules[r];
            let hay = if rule.view == View::Raw { raw } else { norm };
            {
                let window = &hay[ws_start..ws_end];
                for caps in rule.regex.captures_iter(window) {
                    let Some(whole) = caps.get(0) else { continue };
                    // A match cut off by the window edge lacks context; the text may continue.
                    if (whole.start() == 0 && ws_start > 0)
                        || (whole.end() == window.len() && ws_end < hay.len())
                    {
                        continue;
                    }
                    let group = if rule.def.group == ANY_GROUP {
                        (1..caps.len()).find_map(|i| caps.get(i))
                    } else {
                        caps.get(rule.def.group)
                    };
                    let Some(g) = group else { continue };
                    if rule.def.check.is_some_and(|check| !check(g.as_bytes()))
                        || rule
                            .def
                            .context
                            .is_some_and(|check| !check(whole.as_bytes()))
                    {
                        continue;
                    }
                    if rule.def.negation_guard && negated(&hay[..ws_start + whole.start()]) {
                        continue;
                    }
                    out.push(Hit {
                        rule: r,
                        span: (ws_start + g.start(), ws_start + g.end()),
                    });
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

    /// The naive baseline for benchmarks: every applicable rule's regex over its whole view.
    pub fn scan_naive(&self, raw: &[u8], norm: &[u8], scope: Scope) -> usize {
        let mut n = 0;
        for rule in &self.rules {
            if rule.def.scopes.contains(&scope) {
                n += rule
                    .regex
                    .find_iter(if rule.view == View::Raw { raw } else { norm })
                    .count();
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_word_replaces_only_word_escapes() {
        assert_eq!(compact_word(r"a\w*b"), format!("a{WORD}*b"));
        assert_eq!(compact_word(r"[\w.-]"), format!("[{WORD}.-]"));
        // An escaped backslash followed by `w` is a literal, and other escapes stay.
        assert_eq!(compact_word(r"\\w\W\s"), r"\\w\W\s");
        let re = RegexBuilder::new(&compact_word(r"^[\w-]+$"))
            .unicode(true)
            .build()
            .map_err(|e| e.to_string());
        let re = re.as_ref().map_err(String::as_str);
        for word in [
            "instructions",
            "инструкции",
            "οδηγίες",
            "지시를",
            "निर्देश",
            "التعليمات",
            "無視",
            "tür-kçe",
        ] {
            assert_eq!(re.map(|r| r.is_match(word.as_bytes())), Ok(true), "{word}");
        }
        for not_word in ["a b", "end.", "終わり。", "समाप्त।", "نهاية؟"] {
            assert_eq!(
                re.map(|r| r.is_match(not_word.as_bytes())),
                Ok(false),
                "{not_word}"
            );
        }
    }
}
