//! Options and operands: one command's words split the way its own option parser would,
//! with flags canonicalised so `-rf`, `-r -f`, `-fr` and `--recursive --force` are the same
//! facts.
//!
//! Which short options take a value, which long spellings are aliases, and how many leading
//! operands name subcommands comes from [`crate::specs`]; programs it does not know get the
//! common conventions (clusters of one-letter flags, `--name[=value]`, `--` ends options).

use crate::specs::{self, Spec};

/// One option as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opt {
    /// Canonical name: one letter for short options, the name without dashes for long ones,
    /// after the program's aliases (`--recursive` → `r` for `rm`).
    pub name: String,
    /// The value, when the option has one.
    pub value: Option<String>,
}

/// A command's words, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Argv {
    /// Options in order.
    pub opts: Vec<Opt>,
    /// Operands (subcommand words first), quotes removed.
    pub operands: Vec<String>,
    /// How many leading operands are subcommand words.
    pub sub_len: usize,
}

impl Argv {
    /// Whether a flag is on: given, and not turned off later (`--no-x`, `--x=false`).
    pub fn flag(&self, name: &str) -> bool {
        let mut on = false;
        for o in &self.opts {
            if o.name == name {
                on = o.value.as_deref().is_none_or(truthy);
            } else if o.name.strip_prefix("no-") == Some(name) {
                on = false;
            }
        }
        on
    }

    /// Flags that are on, canonical names, each once.
    pub fn flags(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for o in &self.opts {
            if !out.contains(&o.name) && self.flag(&o.name) {
                out.push(o.name.clone());
            }
        }
        out
    }

    /// The last value given for an option.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.opts
            .iter()
            .rev()
            .find(|o| o.name == name)
            .and_then(|o| o.value.as_deref())
    }

    /// Every value given for an option.
    pub fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.opts
            .iter()
            .filter(move |o| o.name == name)
            .filter_map(|o| o.value.as_deref())
    }

    /// The subcommand words, joined by spaces (`"stash drop"`).
    pub fn sub(&self) -> String {
        self.operands[..self.sub_len].join(" ")
    }

    /// Operands after the subcommand words.
    pub fn args(&self) -> &[String] {
        &self.operands[self.sub_len..]
    }
}

/// `--x=false`, `=0`, `=no`, `=off` turn a flag off.
fn truthy(v: &str) -> bool {
    !matches!(
        v.to_ascii_lowercase().as_str(),
        "false" | "0" | "no" | "off" | "n"
    )
}

/// Parses `words` (without the program name) for program `name`.
///
/// ```
/// use bulwark_shell::argv::parse;
/// let a = parse("rm", &["--recursive", "--force", "--", "-x"]);
/// assert!(a.flag("r") && a.flag("f"));
/// assert_eq!(a.operands, ["-x"]);
/// let g = parse("git", &["-C", "repo", "push", "origin", "--force=true"]);
/// assert_eq!(g.sub(), "push");
/// assert!(g.flag("f"));
/// ```
pub fn parse(name: &str, words: &[&str]) -> Argv {
    parse_as(name, words, false)
}

/// Parses a wrapper's words: its options end at its first operand, whether or not the
/// wrapper is in the table (`nocache rm -rf /`: `-rf` belongs to `rm`).
pub fn parse_options_first(name: &str, words: &[&str]) -> Argv {
    parse_as(name, words, true)
}

fn parse_as(name: &str, words: &[&str], options_first: bool) -> Argv {
    let global = specs::lookup(name);
    // First pass with the program's own options finds the subcommand words; the second
    // parses everything with the subcommands' options added.
    let mut first = parse_with(&[global], words, 0, options_first);
    if name == "ssh" && first.operands.len() > 1 {
        // OpenSSH reads options again after the host: `ssh host -t cmd`, `ssh host -R …`.
        let tail: Vec<&str> = first.operands[1..].iter().map(String::as_str).collect();
        let more = parse_with(&[global], &tail, 0, true);
        first.opts.extend(more.opts);
        first.operands.truncate(1);
        first.operands.extend(more.operands);
    }
    let mut remaining = global.map_or(0, |s| s.subcommands as usize);
    if remaining == 0 {
        return first;
    }
    let mut key = String::from(name);
    let mut chain: Vec<Option<&'static Spec>> = vec![global];
    let mut sub_len = 0;
    for w in &first.operands {
        if remaining == 0 {
            break;
        }
        key.push(' ');
        key.push_str(&w.to_ascii_lowercase());
        sub_len += 1;
        remaining -= 1;
        if let Some(s) = specs::lookup(&key) {
            chain.push(Some(s));
            remaining = s.subcommands as usize;
        }
    }
    let mut out = parse_with(&chain, words, sub_len, options_first);
    out.sub_len = sub_len.min(out.operands.len());
    out
}

fn takes_value_short(chain: &[Option<&Spec>], c: char) -> bool {
    chain.iter().flatten().any(|s| s.short_values.contains(c))
}

fn takes_value_long(chain: &[Option<&Spec>], name: &str) -> bool {
    chain
        .iter()
        .flatten()
        .any(|s| s.long_values.contains(&name))
}

fn canonical(chain: &[Option<&Spec>], name: &str) -> String {
    for s in chain.iter().rev().flatten() {
        if let Some((_, to)) = s.aliases.iter().find(|(from, _)| *from == name) {
            return (*to).to_string();
        }
    }
    name.to_string()
}

fn single_dash_long(chain: &[Option<&Spec>]) -> bool {
    chain.iter().flatten().any(|s| s.single_dash_long)
}

/// `sub_len`: options-first programs stop reading options after this many operands (the
/// subcommand words), so `docker exec -it box cmd -x` keeps `-x` for `cmd`.
fn parse_with(
    chain: &[Option<&Spec>],
    words: &[&str],
    sub_len: usize,
    options_first: bool,
) -> Argv {
    let mut out = Argv::default();
    let mut i = 0;
    let posix_stop = options_first || chain.iter().flatten().any(|s| s.options_first);
    let plus_options = chain.iter().flatten().any(|s| s.plus_options);
    while i < words.len() {
        let w = words[i];
        i += 1;
        if posix_stop && out.operands.len() > sub_len {
            out.operands.push(w.to_string());
            continue;
        }
        if w == "--" {
            out.operands
                .extend(words[i..].iter().map(|s| s.to_string()));
            break;
        }
        if let Some(long) = w.strip_prefix("--") {
            out.opts.push(long_option(chain, long, words, &mut i));
            continue;
        }
        if plus_options && let Some(plus) = w.strip_prefix('+').filter(|p| !p.is_empty()) {
            // `bash +x`, `set +o history`: options turned off, named with their `+`.
            for c in plus.chars() {
                let value = if matches!(c, 'o' | 'O') {
                    let v = words.get(i).map(|s| s.to_string());
                    i += 1;
                    v
                } else {
                    None
                };
                out.opts.push(Opt {
                    name: format!("+{c}"),
                    value,
                });
            }
            continue;
        }
        let Some(short) = w.strip_prefix('-') else {
            out.operands.push(w.to_string());
            continue;
        };
        if short.is_empty()
            || short.starts_with(|c: char| c.is_ascii_digit())
                && !chain.iter().flatten().any(|s| s.digit_flags)
        {
            // `-` is standard input; `-5` is usually a number (`head -5`, `nice -19`).
            if short.is_empty() {
                out.operands.push(w.to_string());
            } else {
                out.opts.push(Opt {
                    name: "NUM".into(),
                    value: Some(short.to_string()),
                });
            }
            continue;
        }
        if single_dash_long(chain) || takes_value_long(chain, short) || is_alias(chain, short) {
            // `find -name x`, `java -jar x`, `openssl s_client -connect h:p`.
            out.opts.push(long_option(chain, short, words, &mut i));
            continue;
        }
        // A cluster of one-letter flags; the first that takes a value takes the rest of the
        // word, or the next word.
        let chars: Vec<(usize, char)> = short.char_indices().collect();
        for &(pos, c) in &chars {
            if optional_value_short(chain, c) {
                // `mysql -psecret`, `sed -i.bak`: a value only when attached.
                let rest = &short[pos + c.len_utf8()..];
                out.opts.push(Opt {
                    name: canonical(chain, &c.to_string()),
                    value: (!rest.is_empty()).then(|| rest.to_string()),
                });
                break;
            }
            if takes_value_short(chain, c) {
                let rest = &short[pos + c.len_utf8()..];
                let value = if !rest.is_empty() {
                    Some(rest.trim_start_matches('=').to_string())
                } else {
                    let v = words.get(i).map(|s| s.to_string());
                    i += 1;
                    v
                };
                out.opts.push(Opt {
                    name: canonical(chain, &c.to_string()),
                    value,
                });
                break;
            }
            out.opts.push(Opt {
                name: canonical(chain, &c.to_string()),
                value: None,
            });
        }
    }
    out
}

/// `name`, `name=value` or `name value` (when the option takes a value); `i` is the index
/// of the next word and moves past a value taken from it.
fn long_option(chain: &[Option<&Spec>], text: &str, words: &[&str], i: &mut usize) -> Opt {
    let (n, v) = match text.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (text, None),
    };
    let value = if v.is_none() && takes_value_long(chain, n) {
        let v = words.get(*i).map(|s| s.to_string());
        *i += 1;
        v
    } else {
        v
    };
    Opt {
        name: canonical(chain, n),
        value,
    }
}

fn optional_value_short(chain: &[Option<&Spec>], c: char) -> bool {
    chain
        .iter()
        .flatten()
        .any(|s| s.optional_values.contains(c))
}

fn is_alias(chain: &[Option<&Spec>], word: &str) -> bool {
    word.len() > 1
        && chain
            .iter()
            .flatten()
            .any(|s| s.aliases.iter().any(|(from, _)| *from == word))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(name: &str, words: &[&str]) -> Vec<String> {
        let mut f = parse(name, words).flags();
        f.sort();
        f
    }

    #[test]
    fn rm_spellings_are_one_fact() {
        let want = vec!["f".to_string(), "r".to_string()];
        assert_eq!(flags("rm", &["-rf", "/"]), want);
        assert_eq!(flags("rm", &["-fr", "/"]), want);
        assert_eq!(flags("rm", &["-r", "-f", "/"]), want);
        assert_eq!(flags("rm", &["-R", "-f", "/"]), want);
        assert_eq!(flags("rm", &["--recursive", "--force", "/"]), want);
        assert_eq!(parse("rm", &["-rf", "--", "-x"]).operands, ["-x"]);
    }

    #[test]
    fn values_and_negations() {
        let a = parse("git", &["push", "--force=false", "origin", "main"]);
        assert!(!a.flag("f"));
        let a = parse("npm", &["publish", "--dry-run=false"]);
        assert!(!a.flag("dry-run"));
        let a = parse("npm", &["publish", "--no-dry-run"]);
        assert!(!a.flag("dry-run"));
        let a = parse("curl", &["-XDELETE", "https://x.example/a"]);
        assert_eq!(a.value("X"), Some("DELETE"));
        assert_eq!(a.operands, ["https://x.example/a"]);
        let a = parse("curl", &["https://x.example/a", "--request", "DELETE"]);
        assert_eq!(a.value("X"), Some("DELETE"));
    }

    #[test]
    fn subcommands_skip_global_options() {
        let a = parse("git", &["-C", "/repo", "-c", "x=y", "clean", "-fdx"]);
        assert_eq!(a.sub(), "clean");
        assert!(a.flag("f") && a.flag("d") && a.flag("x"));
        let a = parse("aws", &["--region", "us-east-1", "s3", "rm", "s3://b/k"]);
        assert_eq!(a.sub(), "s3 rm");
        assert_eq!(a.args(), ["s3://b/k"]);
        let a = parse("kubectl", &["-n", "prod", "delete", "ns", "prod"]);
        assert_eq!(a.sub(), "delete");
        assert_eq!(a.args(), ["ns", "prod"]);
    }
}
