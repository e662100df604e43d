//! The abstract interpreter: what the line itself sets, carried through it.
//!
//! A command word built at run time is only "unknown" when nothing on the line decides
//! it. Assignments (`c=rm`, `export`, `local`, `declare`, namerefs with `declare -n`),
//! `IFS`, arrays (`a=(rm -rf /)`, `"${a[@]}"`, `${a[1]}`), positional parameters (`set --`,
//! `sh -c '…' arg0 args`, function calls), `read` from a here-string or a literal pipe,
//! and substitutions whose output is known (`$(echo cm0= | base64 -d)`) all decide it. This
//! module holds those values and expands a word's text with them into the fields bash
//! would produce, splitting on `IFS` whether or not the original was quoted — quoting is
//! not kept in the tree, and reading more words than bash would never hides a command.
//!
//! Parameter operators read the way bash does for the forms attackers use to spell a
//! program: `${x:-d}`/`${x-d}`/`${x:=d}` (an unset lower-case name takes the default;
//! upper-case names are the environment's and stay unknown), `${x:+w}`, `${x:off[:len]}`,
//! `${x/pat/rep}` and `${x//pat/rep}` with literal patterns, `${x,,}`/`${x^^}`, `${#x}`.
//! Anything else leaves the word unknown: the walker then treats the command as *any
//! program with these arguments*.

/// Variables remembered per line.
const MAX_VARS: usize = 64;
/// Elements per array, fields per expanded word and bytes per value.
const MAX_ELEMENTS: usize = 4096;
const MAX_VALUE: usize = 64 * 1024;
/// Nameref hops followed.
const MAX_REFS: usize = 8;

/// A variable's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Val {
    Str(String),
    Array(Vec<String>),
    /// Set, to something only known at run time.
    Unknown,
}

/// One field of an expanded word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Field {
    pub text: String,
    /// Part of it is only known at run time (kept as written, `$HOME`).
    pub dynamic: bool,
}

/// What the line has set so far.
#[derive(Clone, Debug, Default)]
pub(crate) struct Env {
    vars: Vec<(String, Val)>,
    refs: Vec<(String, String)>,
    /// `$0`, `$1`, …; `None` when the line did not set them.
    positional: Option<Vec<String>>,
}

impl Env {
    /// Sets `name` (a later assignment wins; `IFS` included).
    pub fn assign(&mut self, name: &str, val: Val) {
        let name = self.target(name).to_string();
        let val = match val {
            Val::Str(s) if s.len() > MAX_VALUE => Val::Unknown,
            Val::Array(a) if a.len() > MAX_ELEMENTS => Val::Unknown,
            v => v,
        };
        if let Some(slot) = self.vars.iter_mut().find(|(n, _)| *n == name) {
            slot.1 = val;
        } else if self.vars.len() < MAX_VARS {
            self.vars.push((name, val));
        }
    }

    /// `declare -n name=target`.
    pub fn nameref(&mut self, name: &str, target: &str) {
        if self.refs.len() < MAX_VARS {
            self.refs.push((name.to_string(), target.to_string()));
        }
    }

    pub fn unset(&mut self, name: &str) {
        let name = self.target(name).to_string();
        self.vars.retain(|(n, _)| *n != name);
    }

    /// Replaces the positional parameters, returning the previous ones.
    pub fn set_positional(&mut self, p: Option<Vec<String>>) -> Option<Vec<String>> {
        std::mem::replace(&mut self.positional, p)
    }

    /// Replaces `$1…` keeping `$0` (`set -- a b`).
    pub fn set_args(&mut self, args: Vec<String>) {
        let zero = self
            .positional
            .as_ref()
            .and_then(|p| p.first().cloned())
            .unwrap_or_else(|| "bash".to_string());
        let mut p = vec![zero];
        p.extend(args.into_iter().take(MAX_ELEMENTS));
        self.positional = Some(p);
    }

    /// The separators `IFS` names (default blank, tab, newline), always with whitespace.
    fn ifs(&self) -> Vec<char> {
        let mut seps = vec![' ', '\t', '\n'];
        if let Some(Val::Str(s)) = self.get("IFS") {
            for c in s.chars() {
                if !seps.contains(&c) {
                    seps.push(c);
                }
            }
        }
        seps
    }

    fn target<'a>(&'a self, name: &'a str) -> &'a str {
        let mut name = name;
        for _ in 0..MAX_REFS {
            match self.refs.iter().rev().find(|(n, _)| n == name) {
                Some((_, t)) => name = t,
                None => break,
            }
        }
        name
    }

    fn get(&self, name: &str) -> Option<&Val> {
        let name = self.target(name);
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// Splits `value` on `IFS`, dropping empty fields (whitespace splitting's rule; fewer
    /// empty fields never hides a program word).
    pub fn split(&self, value: &str) -> Vec<String> {
        let seps = self.ifs();
        value
            .split(|c| seps.contains(&c))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// Expands a word as the tree keeps it (quotes removed, `$…` as written) into fields.
    /// `None` when nothing in it is known to the line (the caller keeps the word as is).
    pub fn expand(&self, text: &str) -> Option<Vec<Field>> {
        let mut b = Builder::default();
        let mut changed = false;
        let mut rest = text;
        while let Some(i) = rest.find('$') {
            b.literal(&rest[..i]);
            let (len, piece) = self.parameter(&rest[i..]);
            match piece {
                Piece::Known(fields) => {
                    changed = true;
                    b.fields(fields);
                }
                Piece::Unknown => b.unknown(&rest[i..i + len]),
            }
            rest = &rest[i + len..];
            if b.out.len() > MAX_ELEMENTS {
                return None;
            }
        }
        b.literal(rest);
        changed.then(|| b.finish())
    }

    /// The parameter at the start of `s` (which begins with `$`): its length and value.
    fn parameter(&self, s: &str) -> (usize, Piece) {
        let body = &s[1..];
        let Some(c) = body.chars().next() else {
            return (1, Piece::Unknown);
        };
        if c == '{' {
            let Some(end) = matching_brace(body) else {
                return (s.len(), Piece::Unknown);
            };
            return (end + 2, self.braced(&body[1..end]));
        }
        if c == '@' || c == '*' {
            return (
                2,
                match &self.positional {
                    Some(p) => Piece::Known(p.iter().skip(1).cloned().collect()),
                    None => Piece::Unknown,
                },
            );
        }
        if c.is_ascii_digit() {
            return (2, self.positional_at(c as usize - '0' as usize));
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let n = body
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(body.len());
            return (n + 1, self.scalar(&body[..n]));
        }
        // `$#`, `$?`, `$$`, `$(…)` placeholders and the like.
        let n = if body.starts_with("(…)") {
            "(…)".len()
        } else {
            c.len_utf8()
        };
        (n + 1, Piece::Unknown)
    }

    fn positional_at(&self, k: usize) -> Piece {
        match &self.positional {
            Some(p) => Piece::Known(self.split(p.get(k).map(String::as_str).unwrap_or(""))),
            None => Piece::Unknown,
        }
    }

    /// `$name`: the value split on IFS; an array's first element.
    fn scalar(&self, name: &str) -> Piece {
        match self.get(name) {
            Some(Val::Str(s)) => Piece::Known(self.split(s)),
            Some(Val::Array(a)) => Piece::Known(self.split(a.first().map_or("", |s| s))),
            _ => Piece::Unknown,
        }
    }

    /// The text of a variable when known: `None` unknown, `Some(None)` unset.
    fn value_of(&self, name: &str) -> Option<Option<String>> {
        if let Ok(k) = name.parse::<usize>() {
            return self
                .positional
                .as_ref()
                .map(|p| p.get(k).cloned().filter(|v| !v.is_empty()));
        }
        match self.get(name) {
            Some(Val::Str(s)) => Some(Some(s.clone())),
            Some(Val::Array(a)) => Some(a.first().cloned()),
            Some(Val::Unknown) => None,
            // Upper-case names are the environment's: set or not, unknown here.
            None if name.chars().any(|c| c.is_ascii_uppercase()) => None,
            None => Some(None),
        }
    }

    /// `${…}`'s inside.
    fn braced(&self, inner: &str) -> Piece {
        if let Some(name) = inner.strip_prefix('#') {
            return match self.value_of(name) {
                Some(v) => Piece::Known(vec![v.map_or(0, |v| v.chars().count()).to_string()]),
                None => Piece::Unknown,
            };
        }
        let n = inner
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(inner.len());
        let (name, op) = inner.split_at(n);
        if name.is_empty() {
            return match op {
                "@" | "*" => self.parameter("$@").1,
                _ => Piece::Unknown,
            };
        }
        if let Some(index) = op.strip_prefix('[').and_then(|o| o.strip_suffix(']')) {
            return match (self.get(name), index) {
                (Some(Val::Array(a)), "@" | "*") => Piece::Known(a.clone()),
                (Some(Val::Array(a)), k) => match k.trim().parse::<usize>() {
                    Ok(k) => Piece::Known(self.split(a.get(k).map_or("", |s| s))),
                    Err(_) => Piece::Unknown,
                },
                (Some(Val::Str(s)), "0" | "@" | "*") => Piece::Known(self.split(s)),
                _ => Piece::Unknown,
            };
        }
        let value = self.value_of(name);
        let known = |s: String| Piece::Known(self.split(&s));
        if op.is_empty() {
            return match value {
                Some(v) => known(v.unwrap_or_default()),
                None => Piece::Unknown,
            };
        }
        for (prefix, colon) in [(":-", true), ("-", false), (":=", true), ("=", false)] {
            if let Some(default) = op.strip_prefix(prefix) {
                return match value {
                    Some(Some(v)) if !(colon && v.is_empty()) => known(v),
                    Some(_) => known(default.to_string()),
                    // Set in the environment or not, the default is one reading.
                    None if name.chars().any(|c| c.is_ascii_uppercase()) => Piece::Unknown,
                    None => known(default.to_string()),
                };
            }
        }
        let Some(Some(v)) = value else {
            return Piece::Unknown;
        };
        if let Some(w) = op.strip_prefix(":+") {
            return known(if v.is_empty() {
                String::new()
            } else {
                w.to_string()
            });
        }
        match op {
            ",," => return known(v.to_lowercase()),
            "^^" => return known(v.to_uppercase()),
            _ => {}
        }
        if let Some(spec) = op.strip_prefix(':') {
            let (off, len) = match spec.split_once(':') {
                Some((o, l)) => (o, Some(l)),
                None => (spec, None),
            };
            let chars: Vec<char> = v.chars().collect();
            let Ok(off) = off.trim().parse::<usize>() else {
                return Piece::Unknown;
            };
            let len = match len.map(|l| l.trim().parse::<usize>()) {
                Some(Ok(l)) => l,
                Some(Err(_)) => return Piece::Unknown,
                None => chars.len(),
            };
            return known(chars.iter().skip(off).take(len).collect());
        }
        if let Some(spec) = op.strip_prefix('/') {
            let (all, spec) = match spec.strip_prefix('/') {
                Some(s) => (true, s),
                None => (false, spec),
            };
            let (pat, rep) = spec.split_once('/').unwrap_or((spec, ""));
            if pat.is_empty() || pat.contains(['*', '?', '[', '#', '%']) {
                return Piece::Unknown;
            }
            return known(if all {
                v.replace(pat, rep)
            } else {
                v.replacen(pat, rep, 1)
            });
        }
        Piece::Unknown
    }
}

enum Piece {
    Known(Vec<String>),
    Unknown,
}

/// Builds fields: text before an expansion joins its first field, text after its last.
#[derive(Default)]
struct Builder {
    out: Vec<Field>,
    cur: Option<Field>,
}

impl Builder {
    fn literal(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        self.cur
            .get_or_insert_with(|| Field {
                text: String::new(),
                dynamic: false,
            })
            .text
            .push_str(s);
    }

    fn unknown(&mut self, s: &str) {
        self.literal(s);
        if let Some(c) = &mut self.cur {
            c.dynamic = true;
        }
    }

    fn fields(&mut self, fields: Vec<String>) {
        let n = fields.len();
        for (k, f) in fields.into_iter().enumerate() {
            self.literal(&f);
            if k + 1 < n
                && let Some(c) = self.cur.take()
            {
                self.out.push(c);
            }
        }
    }

    fn finish(mut self) -> Vec<Field> {
        if let Some(c) = self.cur.take() {
            self.out.push(c);
        }
        self.out
    }
}

/// The index of the `}` closing the `{` at the start of `s`.
fn matching_brace(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(env: &Env, w: &str) -> Vec<String> {
        env.expand(w)
            .unwrap_or_default()
            .into_iter()
            .map(|f| f.text)
            .collect()
    }

    #[test]
    fn expansions() {
        let mut e = Env::default();
        e.assign("x", Val::Str("r".into()));
        e.assign("y", Val::Str("m".into()));
        e.assign("a", Val::Array(vec!["rm".into(), "-rf".into(), "/".into()]));
        assert_eq!(texts(&e, "$x$y"), ["rm"]);
        assert_eq!(texts(&e, "${a[@]}"), ["rm", "-rf", "/"]);
        assert_eq!(texts(&e, "pre${a[@]}post"), ["prerm", "-rf", "/post"]);
        assert_eq!(texts(&e, "${a[2]}"), ["/"]);
        assert_eq!(texts(&e, "${u:-rm}"), ["rm"]);
        assert_eq!(texts(&e, "${x:+yes}"), ["yes"]);
        assert_eq!(texts(&e, "${#a}"), ["2"]);
        assert!(e.expand("$HOME/x").is_none());
        assert!(e.expand("${HOME:-/root}").is_none());
        let f = e.expand("$x$HOME").unwrap_or_default();
        assert_eq!(f.len(), 1);
        assert!(f[0].dynamic && f[0].text == "r$HOME");
        e.assign("IFS", Val::Str(",".into()));
        e.assign("c", Val::Str("rm,-rf,/srv".into()));
        assert_eq!(texts(&e, "$c"), ["rm", "-rf", "/srv"]);
        e.nameref("r", "c");
        assert_eq!(texts(&e, "$r"), ["rm", "-rf", "/srv"]);
        e.set_args(vec!["rm".into(), "-rf".into(), "/".into()]);
        assert_eq!(texts(&e, "$@"), ["rm", "-rf", "/"]);
        assert_eq!(texts(&e, "$1"), ["rm"]);
        assert_eq!(texts(&e, "$0"), ["bash"]);
        assert!(e.expand(&"$".repeat(10)).is_none());
        assert!(e.expand("${").is_none());
    }
}
