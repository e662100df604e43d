//! Tool-name globs: `*` matches any run of characters, `?` exactly one; case-insensitive.
//!
//! Tool names are short and the patterns simple, so a literal-segment matcher is enough and
//! keeps a pattern's meaning obvious (no character classes, no escapes).

/// A compiled glob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob {
    source: String,
    /// Literal segments between `*`s, lower-cased; `?` stays as a one-character wildcard.
    segments: Vec<Vec<char>>,
    anchored_start: bool,
    anchored_end: bool,
}

/// Why a glob was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GlobError {
    /// The pattern is empty.
    #[error("empty glob")]
    Empty,
    /// The pattern uses syntax this matcher does not have.
    #[error("unsupported character {0:?} in glob (only `*` and `?` are special)")]
    Unsupported(char),
}

impl Glob {
    /// Compiles a pattern.
    ///
    /// ```
    /// use bulwark_policy::Glob;
    /// let g = Glob::new("*_sql").unwrap();
    /// assert!(g.matches("execute_SQL"));
    /// assert!(!g.matches("sql_execute"));
    /// ```
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        if pattern.is_empty() {
            return Err(GlobError::Empty);
        }
        if let Some(c) = pattern
            .chars()
            .find(|c| matches!(c, '[' | ']' | '{' | '}' | '\\'))
        {
            return Err(GlobError::Unsupported(c));
        }
        let segments = pattern
            .split('*')
            .filter(|s| !s.is_empty())
            .map(|s| s.chars().flat_map(char::to_lowercase).collect())
            .collect();
        Ok(Glob {
            source: pattern.to_string(),
            segments,
            anchored_start: !pattern.starts_with('*'),
            anchored_end: !pattern.ends_with('*'),
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the pattern is a plain name with no wildcard.
    pub fn is_literal(&self) -> bool {
        !self.source.contains(['*', '?'])
    }

    /// Whether `name` matches, ignoring case.
    pub fn matches(&self, name: &str) -> bool {
        // Rules test names thousands of times per second: ASCII names and patterns (nearly
        // all of them) match byte-wise, without allocating.
        if name.is_ascii() && self.source.is_ascii() {
            return self.matches_ascii(name.as_bytes());
        }
        let text: Vec<char> = name.chars().flat_map(char::to_lowercase).collect();
        let mut pos = 0;
        let n = self.segments.len();
        if n == 0 {
            // Pattern made only of `*`.
            return true;
        }
        for (i, seg) in self.segments.iter().enumerate() {
            let first = i == 0;
            let last = i == n - 1;
            if first && self.anchored_start {
                if !seg_at(seg, &text, 0) {
                    return false;
                }
                pos = seg.len();
                if last && self.anchored_end {
                    return pos == text.len();
                }
                continue;
            }
            if last && self.anchored_end {
                if text.len() < pos + seg.len() {
                    return false;
                }
                return seg_at(seg, &text, text.len() - seg.len());
            }
            match (pos..=text.len().saturating_sub(seg.len())).find(|&p| seg_at(seg, &text, p)) {
                Some(p) => pos = p + seg.len(),
                None => return false,
            }
        }
        true
    }
}

impl Glob {
    fn matches_ascii(&self, text: &[u8]) -> bool {
        let seg_at = |seg: &[char], at: usize| {
            at + seg.len() <= text.len()
                && seg
                    .iter()
                    .zip(&text[at..])
                    .all(|(p, t)| *p == '?' || *p as u32 == u32::from(t.to_ascii_lowercase()))
        };
        let n = self.segments.len();
        if n == 0 {
            return true;
        }
        let mut pos = 0;
        for (i, seg) in self.segments.iter().enumerate() {
            let (first, last) = (i == 0, i == n - 1);
            if first && self.anchored_start {
                if !seg_at(seg, 0) {
                    return false;
                }
                pos = seg.len();
                if last && self.anchored_end {
                    return pos == text.len();
                }
                continue;
            }
            if last && self.anchored_end {
                return text.len() >= pos + seg.len() && seg_at(seg, text.len() - seg.len());
            }
            match (pos..=text.len().saturating_sub(seg.len())).find(|&p| seg_at(seg, p)) {
                Some(p) => pos = p + seg.len(),
                None => return false,
            }
        }
        true
    }
}

fn seg_at(seg: &[char], text: &[char], at: usize) -> bool {
    at + seg.len() <= text.len()
        && seg
            .iter()
            .zip(&text[at..])
            .all(|(p, t)| *p == '?' || p == t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let cases = [
            ("bash", "bash", true),
            ("bash", "Bash", true),
            ("bash", "bash2", false),
            ("*sql*", "execute_sql", true),
            ("*sql*", "SQL", true),
            ("*sql*", "sq", false),
            ("run_*", "run_terminal_cmd", true),
            ("run_*", "xrun_", false),
            ("*_cmd", "run_terminal_cmd", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXbY", false),
            ("a*b*c", "acb", false),
            ("ab*ab", "ab", false),
            ("ab*ab", "abab", true),
            ("?ead_file", "read_file", true),
            ("?ead_file", "ead_file", false),
            ("*", "", true),
            ("**", "x", true),
            ("mcp__*__write", "mcp__fs__write", true),
            ("reboot", "reload", false),
            ("st?p", "STOP", true),
            ("*-delete", "kv-DELETE", true),
            ("ünï*", "ÜNÏcode", true),
        ];
        for (p, t, want) in cases {
            assert_eq!(Glob::new(p).unwrap().matches(t), want, "{p} ~ {t}");
        }
    }

    #[test]
    fn refuses_unsupported_syntax() {
        assert_eq!(Glob::new(""), Err(GlobError::Empty));
        assert_eq!(Glob::new("[ab]"), Err(GlobError::Unsupported('[')));
        assert_eq!(Glob::new("{a,b}"), Err(GlobError::Unsupported('{')));
    }
}
