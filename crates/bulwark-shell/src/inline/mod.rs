//! Inline interpreter code, parsed: what `python -c`, `node -e`, `perl -e`, `ruby -e` (and
//! the same code in a here-document or piped in) will do, as the facts a shell line gives.
//!
//! Python and JavaScript are parsed with their tree-sitter grammars, failing closed on any
//! syntax error as the bash parser does; Perl and Ruby are read by a small lexer at the
//! level of their process, deletion, write and socket calls. Each language module resolves
//! imports and aliases (`from os import system as s`, `const {execSync: x} =
//! require('child_process')`, `__import__('os')`, `getattr(os, 'system')`) and carries
//! literal values through simple assignments, then turns the calls it recognises into
//! [`Effect`]s:
//!
//! - a process started with an argv list — analysed by the walker as that command, so
//!   `subprocess.run(['rm','-rf','/'])` is `rm -rf /`, and a program it cannot name is
//!   *any program with these arguments*;
//! - a command line handed to a shell (`os.system`, `execSync`, backticks), parsed as
//!   commands;
//! - deletions as the command that does the same (`shutil.rmtree('build')` is
//!   `rm -r -f -- build`, `fs.unlinkSync(p)` is `rm -f -- p`), renames, copies and mode
//!   changes likewise;
//! - files written and read, connections to `host:port`, HTTP use with its URL;
//! - calls to functions and lambdas the program defines itself followed into their bodies
//!   with the caller's arguments ([`functions`]), so `def f(x): os.system(x)` then
//!   `f('rm -rf ~')` is `rm -rf ~`; a body reached otherwise is read with its parameters
//!   unknown;
//! - code evaluated: a literal or a decodable one (base64, hex, rot13) is analysed in
//!   turn, at most [`MAX_DEPTH`] levels deep; one known only at run time is unknown code,
//!   and where it comes from (decoded, downloaded, read from a socket) is kept.
//!
//! The walker ([`crate::walk`]) records these on the interpreter's invocation and runs the
//! commands through the same classifier as a shell line. Analysis is bounded: code longer
//! than [`MAX_CODE`], more than [`MAX_EFFECTS`] effects or nesting deeper than
//! [`MAX_NODE_DEPTH`] is an error, and an error makes the line fail closed.

mod decode;
mod functions;
mod javascript;
mod perl_ruby;
mod python;
mod tree;

/// Longest inline program analysed.
pub(crate) const MAX_CODE: usize = 64 * 1024;
/// Effects recorded per program (including code it evaluates).
pub(crate) const MAX_EFFECTS: usize = 256;
/// Levels of evaluated code (`exec(b64decode(…))` inside `exec(…)`) followed.
pub(crate) const MAX_DEPTH: usize = 4;
/// Syntax-tree depth followed; deeper code is an error rather than a stack overflow.
pub(crate) const MAX_NODE_DEPTH: usize = 200;
/// Variables remembered per program.
const MAX_VARS: usize = 256;
/// Bytes a computed string may reach.
const MAX_TEXT: usize = 64 * 1024;

/// Placeholder for the parts of a text only known at run time: an upper-case name reads
/// as the environment's to the shell interpreter, so it stays unknown there too.
pub(crate) const UNKNOWN: &str = "$UNKNOWN";

/// An inline-code language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lang {
    Python,
    JavaScript,
    Perl,
    Ruby,
}

impl Lang {
    /// The language of an interpreter family (`crate::specs::family`), if analysed here.
    pub(crate) fn of_family(fam: &str) -> Option<Lang> {
        match fam {
            "python" => Some(Lang::Python),
            "node" | "deno" | "bun" => Some(Lang::JavaScript),
            "perl" => Some(Lang::Perl),
            "ruby" => Some(Lang::Ruby),
            _ => None,
        }
    }
}

/// Where a value known only at run time comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Origin {
    Plain,
    /// Decoded or decompressed from something the analysis could not decode.
    Decoded,
    /// Downloaded.
    Fetched,
    /// Read from a socket.
    Net,
}

/// An abstract value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    /// Text; where `known` is false, the unknown parts read [`UNKNOWN`].
    Str {
        text: String,
        known: bool,
    },
    Num(i64),
    Bool(bool),
    List(Vec<Value>),
    /// A literal dict or object with text keys.
    Obj(Vec<(String, Value)>),
    /// A module, or something reached through one, by qualified name (`os.system`).
    Name(String),
    /// An object of a class the analysis follows (`socket`, `pathlib.Path`), with the
    /// value it was made from.
    Inst(&'static str, Box<Value>),
    /// A method of such an object (`socket.connect` on that socket).
    Method(&'static str, String, Box<Value>),
    /// A function the program defines itself (an index into its reader's table,
    /// [`functions::Funcs`]).
    Func(usize),
    Unknown(Origin),
}

impl Value {
    pub(crate) fn str(s: impl Into<String>) -> Value {
        Value::Str {
            text: s.into(),
            known: true,
        }
    }

    pub(crate) fn unknown() -> Value {
        Value::Unknown(Origin::Plain)
    }

    /// The text, known or with placeholders.
    pub(crate) fn text(&self) -> Option<(String, bool)> {
        match self {
            Value::Str { text, known } => Some((text.clone(), *known)),
            Value::Num(n) => Some((n.to_string(), true)),
            Value::Inst("path", p) => p.text(),
            _ => None,
        }
    }

    /// The text when all of it is known.
    pub(crate) fn known(&self) -> Option<String> {
        match self.text() {
            Some((t, true)) => Some(t),
            _ => None,
        }
    }

    /// The text, with placeholders where it is not known.
    pub(crate) fn render(&self) -> String {
        self.text().map_or_else(|| UNKNOWN.to_string(), |(t, _)| t)
    }

    /// Where an unknown value comes from (the strongest of a list's members).
    pub(crate) fn origin(&self) -> Origin {
        match self {
            Value::Unknown(o) => *o,
            Value::List(v) => v.iter().map(Value::origin).max().unwrap_or(Origin::Plain),
            _ => Origin::Plain,
        }
    }

    /// A field of a literal object.
    pub(crate) fn field(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Obj(kv) => kv.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Whether it is true for certain (`shell=True`, `{recursive: true}`).
    pub(crate) fn is_true(&self) -> bool {
        match self {
            Value::Bool(b) => *b,
            Value::Num(n) => *n != 0,
            Value::Str { text, .. } => !text.is_empty(),
            _ => false,
        }
    }
}

/// Concatenates text values (`'rm ' + x`); anything that is not text becomes a placeholder.
pub(crate) fn concat(parts: &[Value]) -> Value {
    let mut text = String::new();
    let mut known = true;
    let mut origin = Origin::Plain;
    for p in parts {
        match p.text() {
            Some((t, k)) => {
                text.push_str(&t);
                known &= k;
            }
            None => {
                text.push_str(UNKNOWN);
                known = false;
                origin = origin.max(p.origin());
            }
        }
        if text.len() > MAX_TEXT {
            return Value::Unknown(origin);
        }
    }
    if !known && text.trim() == UNKNOWN {
        return Value::Unknown(origin);
    }
    Value::Str { text, known }
}

/// printf-style formatting (`'rm -rf %s' % x`, `sprintf`): each conversion takes the next
/// argument's text, or a placeholder.
pub(crate) fn format_percent(fmt: &str, mut known: bool, args: &[Value]) -> Value {
    let mut out = String::new();
    let mut it = fmt.chars().peekable();
    let mut k = 0;
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if it.peek() == Some(&'%') {
            it.next();
            out.push('%');
            continue;
        }
        // Flags, width and precision, then the conversion.
        while it
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | ' ' | '#' | '.'))
        {
            it.next();
        }
        it.next();
        let v = args.get(k).cloned().unwrap_or_else(Value::unknown);
        k += 1;
        match v.text() {
            Some((t, kn)) => {
                out.push_str(&t);
                known &= kn;
            }
            None => {
                out.push_str(UNKNOWN);
                known = false;
            }
        }
    }
    Value::Str { text: out, known }
}

/// What inline code does, as far as the analysis can tell.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Effect {
    /// A process started with this argv list, program first.
    Exec(Vec<Value>),
    /// A command line handed to a shell.
    Shell(Value),
    /// A file written (created, truncated or appended to).
    Write(Value),
    /// A file read.
    Read(Value),
    /// A connection to `host:port`.
    Connect(Value, Value),
    /// An HTTP (or other URL) request.
    Request(Value),
    /// A listening socket.
    Listen,
}

/// The analysis of one program.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Facts {
    pub effects: Vec<Effect>,
    /// A process or socket module is used (`os`, `subprocess`, `child_process`, `net`, …).
    pub process_module: bool,
    /// A socket is made.
    pub socket: bool,
    /// A descriptor is bound to the socket (`os.dup2`, `.pipe(`) or a process started.
    pub bind: bool,
    /// Code known only at run time is evaluated.
    pub eval_unknown: bool,
    /// Decoded text the analysis could not decode is evaluated.
    pub decode_exec: bool,
    /// Downloaded text is evaluated.
    pub fetch_exec: bool,
    /// Text read from a socket is evaluated.
    pub net_exec: bool,
    /// Why the code could not be analysed.
    pub errors: Vec<String>,
}

impl Facts {
    fn push(&mut self, e: Effect) {
        if self.effects.len() >= MAX_EFFECTS {
            if self.errors.is_empty() {
                self.errors
                    .push(format!("inline code has more than {MAX_EFFECTS} effects"));
            }
            return;
        }
        if !self.effects.contains(&e) {
            self.effects.push(e);
        }
    }

    /// A process started with `argv`.
    pub(crate) fn exec(&mut self, argv: Vec<Value>) {
        self.process_module = true;
        self.bind = true;
        if !argv.is_empty() {
            self.push(Effect::Exec(argv));
        }
    }

    /// A command line run by a shell.
    pub(crate) fn shell(&mut self, cmd: Value) {
        self.process_module = true;
        self.bind = true;
        self.push(Effect::Shell(cmd));
    }

    /// A command given as a list or as one string; a string without `shell` is still read
    /// as a command line when it has spaces (reading more than runs, never less).
    pub(crate) fn command(&mut self, v: Value, shell: bool) {
        match v {
            Value::List(argv) if shell => {
                let joined: Vec<String> = argv.iter().map(Value::render).collect();
                let known = argv.iter().all(|a| a.known().is_some());
                self.shell(Value::Str {
                    text: joined.join(" "),
                    known,
                })
            }
            Value::List(argv) => self.exec(argv),
            Value::Str { ref text, .. } if shell || text.contains(char::is_whitespace) => {
                self.shell(v)
            }
            other => self.exec(vec![other]),
        }
    }

    /// A program that does what a library call does (`rm -r -f -- p` for `rmtree(p)`).
    pub(crate) fn as_command(&mut self, program: &[&str], operands: Vec<Value>) {
        if operands.is_empty() {
            return;
        }
        let mut argv: Vec<Value> = program.iter().map(|s| Value::str(*s)).collect();
        argv.push(Value::str("--"));
        argv.extend(operands);
        self.push(Effect::Exec(argv));
    }

    pub(crate) fn write(&mut self, path: Value) {
        self.push(Effect::Write(path));
    }

    pub(crate) fn read(&mut self, path: Value) {
        self.push(Effect::Read(path));
    }

    pub(crate) fn connect(&mut self, host: Value, port: Value) {
        self.socket = true;
        self.process_module = true;
        self.push(Effect::Connect(host, port));
    }

    pub(crate) fn request(&mut self, url: Value) {
        self.push(Effect::Request(url));
    }

    pub(crate) fn listen(&mut self) {
        self.socket = true;
        self.push(Effect::Listen);
    }

    /// Code evaluated in `lang`: analysed when its text is known, otherwise unknown code
    /// with its origin.
    pub(crate) fn eval(&mut self, code: &Value, lang: Lang, depth: usize) {
        match code {
            Value::Str { text, known: true } => {
                if depth + 1 > MAX_DEPTH {
                    self.errors.push(format!(
                        "evaluated code nested deeper than {MAX_DEPTH} levels"
                    ));
                    return;
                }
                let inner = analyse_at(text, lang, depth + 1);
                self.merge(inner);
            }
            other => match other.origin() {
                Origin::Plain => self.eval_unknown = true,
                Origin::Decoded => self.decode_exec = true,
                Origin::Fetched => self.fetch_exec = true,
                Origin::Net => self.net_exec = true,
            },
        }
    }

    fn merge(&mut self, other: Facts) {
        for e in other.effects {
            self.push(e);
        }
        self.process_module |= other.process_module;
        self.socket |= other.socket;
        self.bind |= other.bind;
        self.eval_unknown |= other.eval_unknown;
        self.decode_exec |= other.decode_exec;
        self.fetch_exec |= other.fetch_exec;
        self.net_exec |= other.net_exec;
        self.errors.extend(other.errors);
    }

    /// A socket with a process or descriptor bound to it: a reverse or bind shell.
    pub(crate) fn reverse_shell(&self) -> bool {
        self.socket && self.bind || self.net_exec
    }
}

/// Analyses inline code.
pub(crate) fn analyse(code: &str, lang: Lang) -> Facts {
    analyse_at(code, lang, 0)
}

fn analyse_at(code: &str, lang: Lang, depth: usize) -> Facts {
    let mut f = Facts::default();
    if code.len() > MAX_CODE {
        f.errors
            .push(format!("inline code longer than {MAX_CODE} bytes"));
        return f;
    }
    match lang {
        Lang::Python => python::analyse(code, depth, &mut f),
        Lang::JavaScript => javascript::analyse(code, depth, &mut f),
        Lang::Perl => perl_ruby::analyse(code, perl_ruby::Dialect::Perl, depth, &mut f),
        Lang::Ruby => perl_ruby::analyse(code, perl_ruby::Dialect::Ruby, depth, &mut f),
    }
    f
}

/// Variables a program binds, in order; a later binding wins.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scope {
    vars: Vec<(String, Value)>,
}

impl Scope {
    pub(crate) fn set(&mut self, name: &str, v: Value) {
        if let Some(slot) = self.vars.iter_mut().find(|(n, _)| n == name) {
            slot.1 = v;
        } else if self.vars.len() < MAX_VARS {
            self.vars.push((name.to_string(), v));
        }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        self.vars.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concatenation_keeps_what_is_known() {
        let v = concat(&[Value::str("rm -rf "), Value::unknown()]);
        assert_eq!(
            v,
            Value::Str {
                text: format!("rm -rf {UNKNOWN}"),
                known: false
            }
        );
        assert_eq!(
            concat(&[Value::Unknown(Origin::Fetched)]),
            Value::Unknown(Origin::Fetched)
        );
        assert_eq!(
            concat(&[Value::str("a"), Value::str("b")]).known(),
            Some("ab".into())
        );
    }

    #[test]
    fn limits_fail_closed() {
        let long = "x=1\n".repeat(MAX_CODE / 4 + 1);
        assert!(!analyse(&long, Lang::Python).errors.is_empty());
        let mut f = Facts::default();
        for i in 0..=MAX_EFFECTS {
            f.write(Value::str(format!("/tmp/{i}")));
        }
        assert_eq!(f.effects.len(), MAX_EFFECTS);
        assert!(!f.errors.is_empty());
    }
}
