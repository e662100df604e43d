//! Unwrapping: walks the AST and finds every command that will run — through wrappers
//! (`sudo`, `env`, `timeout`, `nice`, `xargs`, `find -exec`, `watch`, `busybox`, …), through
//! text that becomes a command (`bash -c`, `eval`, `ssh host 'cmd'`, `docker exec`, here-docs
//! and pipes into a shell), and through substitutions. Each command found becomes an
//! [`Invocation`], classified by [`crate::classify`].
//!
//! Recursion is bounded twice: [`MAX_NESTING`] levels of text re-parsed as commands, and
//! [`MAX_INVOCATIONS`] commands per line. Reaching either limit is a parse error, so the line
//! fails closed.

use crate::argv;
use crate::ast::{Node, Redirect, Script, SimpleCommand, Word};
use crate::classify::{self, Io};
use crate::code::{self, Lang};
use crate::interp::{Env, Val};
use crate::model::{Analysis, Cap, FileContent, Invocation};
use crate::paths;
use crate::programs::{self as p, name_of};
use crate::sql;

mod inline_code;

/// Levels of text re-parsed as commands (`bash -c "eval '…'"`) that are followed.
pub const MAX_NESTING: usize = 12;
/// Commands analysed per line.
pub const MAX_INVOCATIONS: usize = 512;
/// Arguments `xargs` is known to receive from literal input; more is an error.
const MAX_XARGS: usize = 4096;
/// Functions remembered per line.
const MAX_FUNCTIONS: usize = 64;
/// Files whose content is remembered (this line's writes and those handed in); the oldest
/// is forgotten first, and a forgotten file runs as a script the line does not show.
pub(crate) const MAX_FILES: usize = 32;
/// Bytes of a remembered file; a longer one is remembered as unknown.
pub(crate) const MAX_FILE_BYTES: usize = 64 * 1024;

/// What a command writes to its standard output, as far as a pipe into a shell cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    /// Nothing worth knowing.
    Nothing,
    /// Text downloaded from the network.
    Fetch,
    /// Decoded or decompressed text of unknown origin.
    Decode,
    /// Whatever the other end of a connection sends.
    Net,
    /// Known text (`echo 'ls'`, a here-document through `cat`, a decoded literal).
    Literal(String),
    /// Something else.
    Other,
}

impl Output {
    /// The output of two commands writing one after the other.
    fn then(self, other: Output) -> Output {
        use Output::*;
        match (self, other) {
            (Nothing, x) | (x, Nothing) => x,
            (Literal(a), Literal(b)) => Literal(format!("{a}\n{b}")),
            (Fetch, _) | (_, Fetch) => Fetch,
            (Net, _) | (_, Net) => Net,
            (Decode, _) | (_, Decode) => Decode,
            _ => Other,
        }
    }
}

/// Where a command's standard input comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stdin {
    /// The terminal, or nothing in particular.
    Tty,
    /// A pipe from another command.
    Pipe(Output),
    /// A here-document or here-string.
    Text(String),
    /// A file (`< f`).
    File(String),
}

/// A word after variables were resolved.
#[derive(Clone, Debug)]
pub(crate) struct W {
    pub text: String,
    pub dynamic: bool,
    /// What its substitutions printed (`$(curl …)`).
    pub from: Output,
}

#[derive(Clone, Debug, Default)]
struct Ctx {
    via: Vec<String>,
    remote: Option<String>,
    nesting: usize,
    /// Errors inside this text are not the line's: code strings pulled from a program
    /// (`os.system("…")`) may not be shell at all, and the program is already arbitrary.
    lenient: bool,
}

impl Ctx {
    fn with(&self, via: impl Into<String>) -> Ctx {
        let mut c = self.clone();
        c.via.push(via.into());
        c
    }
}

pub(crate) struct Walker {
    pub a: Analysis,
    /// What the line has set: variables, arrays, IFS, positional parameters.
    env: Env,
    /// Functions defined on the line: their bodies run again, with arguments, when called.
    functions: Vec<(String, Vec<Node>)>,
    /// What the current command's words' substitutions printed (`echo "$(curl …)"`).
    pending_from: Output,
    /// Files written earlier (on this line or, handed in, on the session's earlier lines)
    /// with what they hold: running one runs that.
    files: Vec<(String, FileContent)>,
    /// The files this line wrote, in order.
    written: Vec<String>,
    /// Functions being defined or run, with the conditional depth they started at.
    frames: Vec<(String, usize)>,
    /// How many conditions (`if`, `case`, loops, the right of `&&`/`||`) enclose the node.
    conditional: usize,
}

/// Walks a parsed script run after `files` were written.
pub(crate) fn walk(script: &Script, files: &[(String, FileContent)]) -> Analysis {
    let mut w = Walker {
        a: Analysis::default(),
        env: Env::default(),
        functions: Vec::new(),
        pending_from: Output::Nothing,
        files: Vec::new(),
        written: Vec::new(),
        frames: Vec::new(),
        conditional: 0,
    };
    for (path, content) in files.iter().rev().take(MAX_FILES).rev() {
        w.files.push((path.clone(), content.clone()));
    }
    let ctx = Ctx::default();
    for n in &script.body {
        w.node(n, &ctx, Stdin::Tty);
    }
    let written = std::mem::take(&mut w.written);
    for path in written {
        if let Some((_, c)) = w.files.iter().find(|(p, _)| *p == path) {
            w.a.written.push((path, c.clone()));
        }
    }
    w.a
}

/// A remembered file's key: its normalised path (`./x.sh` is `x.sh`); `None` for a path
/// only known at run time.
fn file_key(path: &str) -> Option<String> {
    if path.is_empty() || path.contains('$') || path.contains("(…)") || path == "-" {
        return None;
    }
    Some(paths::normalize(path))
}

/// The redirections that send a command's standard output to a file: (target, appends).
fn stdout_targets(redirects: &[Redirect]) -> impl Iterator<Item = (&Word, bool)> {
    redirects.iter().filter_map(|r| {
        let out = matches!(r.op.as_str(), ">" | ">|" | "&>") && r.fd.is_none_or(|fd| fd == 1);
        let append = matches!(r.op.as_str(), ">>" | "&>>") && r.fd.is_none_or(|fd| fd == 1);
        (out || append).then_some((&r.target, append))
    })
}

impl Walker {
    fn error(&mut self, ctx: &Ctx, what: String) {
        if ctx.lenient {
            return;
        }
        self.a.errors.push(what);
        self.a.fact("shell.unparsable");
        self.a.caps.insert(Cap::ExecArbitrary);
    }

    /// Walks `text` as a new shell whose positional parameters are `params`.
    fn nested_with(
        &mut self,
        text: &str,
        ctx: &Ctx,
        stdin: Stdin,
        params: Option<Vec<String>>,
    ) -> Output {
        let saved = self.env.set_positional(params);
        let out = self.nested(text, ctx, stdin);
        self.env.set_positional(saved);
        out
    }

    /// Parses `text` as commands and walks it one level deeper.
    fn nested(&mut self, text: &str, ctx: &Ctx, stdin: Stdin) -> Output {
        if ctx.nesting + 1 > MAX_NESTING {
            self.error(
                ctx,
                format!("commands nested deeper than {MAX_NESTING} levels"),
            );
            return Output::Other;
        }
        match crate::parse::parse(text) {
            Ok(script) => {
                let mut inner = ctx.clone();
                inner.nesting += 1;
                let mut out = Output::Nothing;
                for n in &script.body {
                    out = out.then(self.node(n, &inner, stdin.clone()));
                }
                out
            }
            Err(e) => {
                let via = ctx.via.last().cloned().unwrap_or_default();
                self.error(ctx, format!("{via}: {e}"));
                Output::Other
            }
        }
    }

    fn node(&mut self, n: &Node, ctx: &Ctx, stdin: Stdin) -> Output {
        match n {
            Node::Command(c) => self.command(c, ctx, stdin, &[]),
            Node::Pipeline(stages) => {
                let mut input = stdin;
                let mut out = Output::Nothing;
                for s in stages {
                    out = self.node(s, ctx, input);
                    input = Stdin::Pipe(out.clone());
                }
                out
            }
            Node::List(a, op, b) => {
                let x = self.node(a, ctx, Stdin::Tty);
                let guarded = matches!(op, crate::ast::ListOp::And | crate::ast::ListOp::Or);
                self.conditional += usize::from(guarded);
                let y = self.node(b, ctx, Stdin::Tty);
                self.conditional -= usize::from(guarded);
                x.then(y)
            }
            Node::Subshell(v) | Node::Group(v) => {
                let mut out = Output::Nothing;
                for n in v {
                    out = out.then(self.node(n, ctx, stdin.clone()));
                }
                out
            }
            Node::If(v) => {
                // Any branch may read the input (`curl … | if true; then sh; fi`).
                self.conditional += 1;
                for n in v {
                    self.node(n, ctx, stdin.clone());
                }
                self.conditional -= 1;
                Output::Other
            }
            Node::Loop(_, header, body) => {
                for w in header {
                    self.word(w, ctx);
                }
                self.conditional += 1;
                for n in body {
                    self.node(n, ctx, stdin.clone());
                }
                self.conditional -= 1;
                Output::Other
            }
            Node::Case(subject, arms) => {
                self.word(subject, ctx);
                self.conditional += 1;
                for n in arms {
                    self.node(n, ctx, stdin.clone());
                }
                self.conditional -= 1;
                Output::Other
            }
            Node::Function(name, body) => {
                if self.functions.len() < MAX_FUNCTIONS {
                    self.functions.push((name.clone(), body.clone()));
                }
                let inner = ctx.with(format!("function {name}"));
                self.frames.push((name.clone(), self.conditional));
                for n in body {
                    self.node(n, &inner, Stdin::Tty);
                }
                self.frames.pop();
                Output::Nothing
            }
            Node::Test(words) => {
                for w in words {
                    self.word(w, ctx);
                }
                Output::Nothing
            }
            Node::Negated(x) => self.node(x, ctx, stdin),
            Node::Redirected(inner, redirects) => {
                let before = self.a.invocations.len();
                let (io, input) = self.redirects(redirects, ctx);
                let out = match (input, &**inner) {
                    // tree-sitter hangs `cmd <<EOF` at the end of a list or pipeline on the
                    // whole of it (`cd /srv && psql <<SQL`); the input is the last command's.
                    (Some(input), Node::List(..) | Node::Pipeline(_)) => {
                        self.tail_input(inner, ctx, input)
                    }
                    (input, _) => self.node(inner, ctx, input.unwrap_or(stdin)),
                };
                self.remember_output(redirects, &out);
                // Redirections of a compound command apply to everything inside it.
                for inv in &mut self.a.invocations[before..] {
                    classify::apply_io(inv, &io);
                }
                if self.a.invocations.len() == before && !io.is_empty() {
                    self.record(pseudo(":", &io, ctx));
                }
                out
            }
        }
    }

    /// Walks `n`, giving `input` to its last command (the others read their own input).
    fn tail_input(&mut self, n: &Node, ctx: &Ctx, input: Stdin) -> Output {
        match n {
            Node::List(a, _, b) => {
                let x = self.node(a, ctx, Stdin::Tty);
                let y = self.tail_input(b, ctx, input);
                x.then(y)
            }
            Node::Pipeline(stages) => {
                let mut previous = Stdin::Tty;
                let mut out = Output::Nothing;
                for (i, s) in stages.iter().enumerate() {
                    out = if i + 1 == stages.len() {
                        self.tail_input(s, ctx, input.clone())
                    } else {
                        self.node(s, ctx, previous)
                    };
                    previous = Stdin::Pipe(out.clone());
                }
                out
            }
            other => self.node(other, ctx, input),
        }
    }

    /// Walks a word's substitutions and resolves its text.
    fn word(&mut self, w: &Word, ctx: &Ctx) -> W {
        let mut from = Output::Nothing;
        if !w.substitutions.is_empty() {
            let inner = ctx.with(if w.text.contains("/dev/fd/") {
                "<(…)"
            } else {
                "$(…)"
            });
            for n in &w.substitutions {
                from = from.then(self.node(n, &inner, Stdin::Tty));
            }
        }
        let (text, dynamic) = self.resolve(w);
        W {
            text,
            dynamic,
            from,
        }
    }

    /// Expands what the line set (variables, arrays, positional parameters) in a word; the
    /// fields are joined by spaces, for the caller to split as bash would.
    fn resolve(&self, w: &Word) -> (String, bool) {
        if !w.dynamic {
            return (w.text.clone(), false);
        }
        match self.env.expand(&w.text) {
            Some(fields) => {
                let dynamic = fields.iter().any(|f| f.dynamic);
                let text: Vec<String> = fields.into_iter().map(|f| f.text).collect();
                (text.join(" "), dynamic)
            }
            None => (w.text.clone(), true),
        }
    }

    /// A value to remember for `name`: an array's elements, known text, or unknown.
    fn value(&mut self, word: &Word, w: &W) -> Val {
        if let Some(elements) = &word.elements {
            let mut out = Vec::new();
            for e in elements {
                let (t, dynamic) = self.resolve(e);
                if dynamic {
                    return Val::Unknown;
                }
                if e.dynamic && t != e.text {
                    out.extend(self.env.split(&t));
                } else {
                    out.push(t);
                }
            }
            return Val::Array(out);
        }
        match known_text(w) {
            Some(t) => Val::Str(t),
            None => Val::Unknown,
        }
    }

    /// Builtins that change what later words expand to: `set --`, `read`, `unset`,
    /// `shift`, and the declaration keywords' assignments (namerefs included).
    fn builtin_effects(
        &mut self,
        c: &SimpleCommand,
        words: &[W],
        assigns: &[(String, W)],
        stdin: &Stdin,
    ) {
        let Some(first) = words.first().filter(|w| !w.dynamic) else {
            return;
        };
        let rest: Vec<&str> = words[1..].iter().map(|w| w.text.as_str()).collect();
        match first.text.as_str() {
            "export" | "local" | "declare" | "typeset" | "readonly" => {
                let nameref = rest
                    .iter()
                    .any(|w| w.starts_with('-') && w.contains('n') && !w.starts_with("--"));
                for ((name, w), (_, word)) in assigns.iter().zip(&c.assignments) {
                    if nameref {
                        self.env.nameref(name, &w.text);
                    } else {
                        let v = self.value(word, w);
                        self.env.assign(name, v);
                    }
                }
            }
            "unset" => {
                for n in rest.iter().filter(|w| !w.starts_with('-')) {
                    self.env.unset(n);
                }
            }
            "set" => {
                let args: Option<Vec<String>> = match rest.first() {
                    Some(&"--") => Some(rest[1..].iter().map(|s| s.to_string()).collect()),
                    Some(w) if !w.starts_with(['-', '+']) => {
                        Some(rest.iter().map(|s| s.to_string()).collect())
                    }
                    _ => None,
                };
                if let Some(args) = args {
                    if words[1..].iter().any(|w| w.dynamic) {
                        self.env.set_positional(None);
                    } else {
                        self.env.set_args(args);
                    }
                }
            }
            "shift" => {
                if let Some(p) = self.env.set_positional(None) {
                    let n = rest.first().and_then(|n| n.parse().ok()).unwrap_or(1usize);
                    let mut p = p;
                    let zero = p.first().cloned().unwrap_or_default();
                    let args: Vec<String> = p.drain(..).skip(1 + n).collect();
                    self.env
                        .set_positional(Some(std::iter::once(zero).chain(args).collect()));
                }
            }
            "read" | "mapfile" | "readarray" => {
                let input = match stdin {
                    Stdin::Text(t) | Stdin::Pipe(Output::Literal(t)) => Some(t.as_str()),
                    _ => None,
                };
                let a = argv::parse(&first.text, &rest);
                let array = if first.text == "read" {
                    a.value("a").map(str::to_string)
                } else {
                    Some(
                        a.operands
                            .first()
                            .cloned()
                            .unwrap_or_else(|| "MAPFILE".into()),
                    )
                };
                let names: Vec<String> = if first.text == "read" && array.is_none() {
                    a.operands.clone()
                } else {
                    Vec::new()
                };
                let Some(input) = input else {
                    for n in names.iter().chain(array.iter()) {
                        self.env.assign(n, Val::Unknown);
                    }
                    return;
                };
                if first.text != "read" {
                    if let Some(n) = array {
                        let lines = input.lines().map(str::to_string).collect();
                        self.env.assign(&n, Val::Array(lines));
                    }
                    return;
                }
                let line = input.lines().next().unwrap_or("");
                if let Some(n) = array {
                    let fields = self.env.split(line);
                    self.env.assign(&n, Val::Array(fields));
                    return;
                }
                let names = if names.is_empty() {
                    vec!["REPLY".to_string()]
                } else {
                    names
                };
                let mut fields = self.env.split(line).into_iter();
                for (k, n) in names.iter().enumerate() {
                    let v = if k + 1 == names.len() {
                        fields.by_ref().collect::<Vec<_>>().join(" ")
                    } else {
                        fields.next().unwrap_or_default()
                    };
                    self.env.assign(n, Val::Str(v));
                }
            }
            _ => {}
        }
    }

    fn redirects(&mut self, redirects: &[Redirect], ctx: &Ctx) -> (Io, Option<Stdin>) {
        let mut io = Io::default();
        let mut stdin = None;
        for r in redirects {
            let target = self.word(&r.target, ctx);
            let body = r.body.as_ref().map(|b| self.word(b, ctx));
            match r.op.as_str() {
                "<<" | "<<-" | "<<<" => {
                    if let Some(b) = body {
                        stdin = Some(Stdin::Text(b.text));
                    }
                }
                "<" => {
                    let t = paths::normalize(&target.text);
                    if let Some(dest) = dev_tcp(&t) {
                        io.destinations.push(dest);
                        io.dev_tcp = true;
                    } else {
                        io.reads.push(t.clone());
                    }
                    stdin = Some(Stdin::File(t));
                }
                op => {
                    let t = target.text.as_str();
                    let is_fd =
                        t == "-" || (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()));
                    if op.contains('&') && is_fd || op == "<&" || op == ">&" && is_fd {
                        io.fd_dup = true;
                        continue;
                    }
                    let t = paths::normalize(t);
                    if let Some(dest) = dev_tcp(&t) {
                        io.destinations.push(dest);
                        io.dev_tcp = true;
                    } else if op == "<>" {
                        io.reads.push(t.clone());
                        io.writes.push(t);
                    } else if !paths::is_harmless_device(&t) {
                        io.writes.push(t);
                    }
                }
            }
        }
        (io, stdin)
    }

    fn command(&mut self, c: &SimpleCommand, ctx: &Ctx, stdin: Stdin, _: &[W]) -> Output {
        let mut assigns: Vec<(String, W)> = Vec::new();
        for (name, value) in &c.assignments {
            let v = self.word(value, ctx);
            assigns.push((name.clone(), v));
        }
        let mut words: Vec<W> = Vec::with_capacity(c.words.len());
        for w in &c.words {
            let r = self.word(w, ctx);
            // `c='rm -rf /'; $c`: an unquoted expansion splits into words. Quoting is not
            // kept in the tree, so any expanded value with spaces is split — reading more
            // commands than bash would, never fewer.
            if w.dynamic && r.text != w.text && r.text.trim().is_empty() {
                // An expansion to nothing is no word.
                continue;
            }
            if w.dynamic && r.text != w.text && r.text.contains(char::is_whitespace) {
                words.extend(r.text.split_whitespace().map(|t| W {
                    text: t.to_string(),
                    dynamic: r.dynamic,
                    from: r.from.clone(),
                }));
            } else {
                words.push(r);
            }
        }
        let (io, input) = self.redirects(&c.redirects, ctx);
        let stdin = input.unwrap_or(stdin);
        for (name, v) in &assigns {
            classify::assignment(&mut self.a, name, &v.text);
        }
        if words.is_empty() {
            // `r=rm` on its own: later words on this line may use it.
            for ((name, v), (_, word)) in assigns.iter().zip(&c.assignments) {
                let val = self.value(word, v);
                self.env.assign(name, val);
            }
            if !io.is_empty() {
                self.record(pseudo(":", &io, ctx));
            }
            return Output::Nothing;
        }
        self.builtin_effects(c, &words, &assigns, &stdin);
        if let Some(out) = self.call_function(&words, ctx) {
            return out;
        }
        let env: Vec<(String, String)> = assigns.into_iter().map(|(n, v)| (n, v.text)).collect();
        let out = self.invoke(words, ctx.clone(), stdin, io, &env);
        self.remember_output(&c.redirects, &out);
        out
    }

    /// What a file now holds.
    fn remember(&mut self, path: &str, content: FileContent, append: bool) {
        let Some(key) = file_key(path) else {
            return;
        };
        let old = self
            .files
            .iter()
            .position(|(p, _)| *p == key)
            .map(|i| self.files.remove(i).1);
        let content = match (append, old, content) {
            (false, _, c) => c,
            // A download or decoded text with more after it still runs that first.
            (true, Some(o @ (FileContent::Fetched | FileContent::Decoded)), _) => o,
            (true, Some(FileContent::Text(a)), FileContent::Text(b)) => {
                FileContent::Text(format!("{a}\n{b}"))
            }
            (true, Some(FileContent::Appended(a)), FileContent::Text(b)) => {
                FileContent::Appended(format!("{a}\n{b}"))
            }
            (true, _, FileContent::Text(b)) => FileContent::Appended(b),
            (true, _, c) => c,
        };
        let content = match content {
            FileContent::Text(t) | FileContent::Appended(t) if t.len() > MAX_FILE_BYTES => {
                FileContent::Unknown
            }
            c => c,
        };
        if self.files.len() >= MAX_FILES {
            self.files.remove(0);
        }
        self.files.push((key.clone(), content));
        self.written.retain(|p| *p != key);
        self.written.push(key);
        if self.written.len() > MAX_FILES {
            self.written.remove(0);
        }
    }

    /// Records what a command's output redirections put in their files.
    fn remember_output(&mut self, redirects: &[Redirect], out: &Output) {
        let targets: Vec<(String, bool)> = stdout_targets(redirects)
            .filter_map(|(t, append)| {
                let (text, dynamic) = self.resolve(t);
                (!dynamic).then_some((text, append))
            })
            .collect();
        for (path, append) in targets {
            let content = match out {
                Output::Literal(t) => FileContent::Text(t.clone()),
                Output::Fetch => FileContent::Fetched,
                Output::Decode => FileContent::Decoded,
                _ => FileContent::Unknown,
            };
            self.remember(&path, content, append);
        }
    }

    /// What a remembered file holds, when it is known.
    fn file(&self, path: &str) -> Option<FileContent> {
        let key = file_key(path)?;
        self.files
            .iter()
            .rev()
            .find(|(p, _)| *p == key)
            .map(|(_, c)| c.clone())
            .filter(|c| *c != FileContent::Unknown)
    }

    /// Files a command writes besides its redirections: downloads (`curl -o`, `wget`),
    /// `tee`, and copies or moves of a remembered file.
    fn remember_effects(&mut self, inv: &Invocation, stdin: &Stdin) {
        let name = inv.name.as_str();
        let a = &inv.argv;
        if p::FETCHERS.contains(&name) {
            for f in downloads(inv) {
                self.remember(&f, FileContent::Fetched, false);
            }
            return;
        }
        match name {
            "tee" => {
                let content = match stdin {
                    Stdin::Text(t) | Stdin::Pipe(Output::Literal(t)) => {
                        FileContent::Text(t.clone())
                    }
                    Stdin::Pipe(Output::Fetch) => FileContent::Fetched,
                    Stdin::Pipe(Output::Decode) => FileContent::Decoded,
                    _ => FileContent::Unknown,
                };
                let append = a.flag("a");
                for f in a.operands.clone() {
                    self.remember(&f, content.clone(), append);
                }
            }
            "cp" | "mv" | "install" | "ln" if a.operands.len() == 2 && a.value("t").is_none() => {
                let (src, dst) = (&a.operands[0], &a.operands[1]);
                let content = self.file(src).unwrap_or(FileContent::Unknown);
                let dst = if dst.ends_with('/') {
                    format!("{dst}{}", src.rsplit('/').next().unwrap_or(src))
                } else {
                    dst.clone()
                };
                self.remember(&dst, content, false);
            }
            _ => {}
        }
    }

    /// A call of a function defined on the line: its body, with the call's arguments as
    /// the positional parameters.
    fn call_function(&mut self, words: &[W], ctx: &Ctx) -> Option<Output> {
        let first = words.first().filter(|w| !w.dynamic)?;
        // A function that calls itself with nothing to stop it never returns: with `|` or
        // `&` each call starts two more (`:(){ :|:& };:`), and the host runs out of
        // processes. Called under a condition it may be ordinary recursion.
        if let Some(&(_, depth)) = self.frames.iter().rev().find(|(n, _)| *n == first.text) {
            if depth == self.conditional {
                self.a.fact("shell.fork_bomb");
                self.a.caps.insert(Cap::ExecIrreversible);
                self.a.reasons.push(crate::model::Reason {
                    cap: Cap::ExecIrreversible,
                    text: format!("the function {} calls itself unconditionally", first.text),
                });
            }
            return Some(Output::Other);
        }
        let body = self
            .functions
            .iter()
            .rev()
            .find(|(n, _)| *n == first.text)
            .map(|(_, b)| b.clone())?;
        if ctx.nesting + 1 > MAX_NESTING {
            return None;
        }
        let mut inner = ctx.with(format!("function {}", first.text));
        inner.nesting += 1;
        let args: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
        let saved = self.env.set_positional(Some(args));
        let mut out = Output::Nothing;
        self.frames.push((first.text.clone(), self.conditional));
        for n in &body {
            out = out.then(self.node(n, &inner, Stdin::Tty));
        }
        self.frames.pop();
        self.env.set_positional(saved);
        Some(out)
    }

    fn record(&mut self, inv: Invocation) {
        if self.a.invocations.len() >= MAX_INVOCATIONS {
            if !self
                .a
                .errors
                .iter()
                .any(|e| e.contains("commands per line"))
            {
                self.a
                    .errors
                    .push(format!("more than {MAX_INVOCATIONS} commands per line"));
                self.a.fact("shell.unparsable");
                self.a.caps.insert(Cap::ExecArbitrary);
            }
            return;
        }
        self.a.invocations.push(inv);
    }

    /// Runs `words` as a command: unwraps wrappers, then dispatches on the program.
    fn invoke(
        &mut self,
        mut words: Vec<W>,
        mut ctx: Ctx,
        stdin: Stdin,
        io: Io,
        env: &[(String, String)],
    ) -> Output {
        let mut env: Vec<(String, String)> = env.to_vec();
        loop {
            let Some(first) = words.first() else {
                return Output::Nothing;
            };
            if first.dynamic {
                return self.dynamic_command(words, &ctx, io);
            }
            let name = name_of(&first.text);
            let texts: Vec<&str> = words[1..].iter().map(|w| w.text.as_str()).collect();
            let skip = match name.as_str() {
                "sudo" | "doas" | "pkexec" => {
                    let a = argv::parse_options_first(&name, &texts);
                    if a.operands.is_empty() {
                        let mut inv = self.base(&name, &words, &ctx);
                        if a.flag("s") || a.flag("i") {
                            inv.because(Cap::ExecArbitrary, format!("{name} opens a root shell"));
                        }
                        if a.flag("e") {
                            inv.writes.extend(texts.iter().map(|t| paths::normalize(t)));
                        }
                        inv.fact("shell.privileged");
                        return self.finish(inv, &stdin, &io, &ctx);
                    }
                    if a.flag("e") {
                        // `sudo -e FILE` edits files as root.
                        let mut inv = self.base("sudoedit", &words, &ctx);
                        inv.writes
                            .extend(a.operands.iter().map(|t| paths::normalize(t)));
                        inv.fact("shell.privileged");
                        return self.finish(inv, &stdin, &io, &ctx);
                    }
                    Some((words.len() - a.operands.len(), name.clone()))
                }
                "env" => {
                    let a = argv::parse_options_first("env", &texts);
                    for u in a.values("u") {
                        classify::assignment(&mut self.a, u, "");
                    }
                    let mut start = words.len() - a.operands.len();
                    while start < words.len() && is_assignment(&words[start].text) {
                        if let Some((n, v)) = words[start].text.split_once('=') {
                            classify::assignment(&mut self.a, n, v);
                            env.push((n.to_string(), v.to_string()));
                        }
                        start += 1;
                    }
                    if let Some(split) = a.value("S") {
                        // `env -S 'rm -rf /'` splits its argument into words.
                        let mut inner: Vec<W> = split
                            .split_whitespace()
                            .map(|t| W {
                                text: t.to_string(),
                                dynamic: false,
                                from: Output::Nothing,
                            })
                            .collect();
                        inner.extend(words.drain(start..));
                        words = inner;
                        ctx.via.push("env".into());
                        continue;
                    }
                    if start >= words.len() {
                        let mut inv = self.base("env", &words, &ctx);
                        inv.fact("shell.env_dump");
                        return self.finish(inv, &stdin, &io, &ctx);
                    }
                    Some((start, "env".to_string()))
                }
                "timeout" | "chroot" | "chrt" | "taskset" => {
                    let a = argv::parse_options_first(&name, &texts);
                    if a.operands.len() <= 1 || name == "taskset" && a.flag("p") {
                        None
                    } else {
                        Some((words.len() - a.operands.len() + 1, name.clone()))
                    }
                }
                "nice" | "nohup" | "stdbuf" | "time" | "setsid" | "ionice" | "unbuffer"
                | "chronic" | "caffeinate" | "torsocks" | "torify" | "proxychains"
                | "proxychains4" | "firejail" | "catchsegv" | "xvfb-run" | "dbus-run-session"
                | "unshare" | "nsenter" | "strace" | "ltrace" | "builtin" | "systemd-run"
                | "sshpass" | "faketime" | "fakeroot" | "eatmydata" | "numactl" | "cgexec"
                | "run-one" | "nocache" | "with-contenv" | "tini" | "dumb-init" | "gosu"
                | "su-exec" | "setpriv" | "prlimit" => {
                    let a = argv::parse_options_first(&name, &texts);
                    let mut start = words.len() - a.operands.len();
                    if matches!(name.as_str(), "gosu" | "su-exec") {
                        start += 1;
                    }
                    if start >= words.len() {
                        None
                    } else {
                        Some((start, name.clone()))
                    }
                }
                "command" => {
                    let a = argv::parse_options_first("command", &texts);
                    if a.flag("v") || a.flag("V") || a.operands.is_empty() {
                        None
                    } else {
                        Some((words.len() - a.operands.len(), name.clone()))
                    }
                }
                "exec" => {
                    let a = argv::parse_options_first("exec", &texts);
                    if a.operands.is_empty() {
                        None
                    } else {
                        Some((words.len() - a.operands.len(), name.clone()))
                    }
                }
                "flock" => {
                    let a = argv::parse_options_first("flock", &texts);
                    // `flock FILE -c CMD` (util-linux's form) puts `-c` after the lock file.
                    let after_file = a
                        .operands
                        .iter()
                        .position(|w| w == "-c" || w == "--command")
                        .filter(|&p| p == 1)
                        .and_then(|p| a.operands.get(p + 1));
                    if let Some(cmd) = a.value("c").or(after_file.map(String::as_str)) {
                        let cmd = cmd.to_string();
                        let inner = ctx.with("flock -c");
                        return self.nested(&cmd, &inner, stdin);
                    }
                    if a.operands.len() <= 1 {
                        None
                    } else {
                        Some((words.len() - a.operands.len() + 1, name.clone()))
                    }
                }
                "busybox" => {
                    if words.len() > 1 {
                        Some((1, name.clone()))
                    } else {
                        None
                    }
                }
                _ => None,
            };
            match skip {
                Some((start, label)) if start < words.len() && start > 0 => {
                    words.drain(..start);
                    ctx.via.push(label);
                }
                _ => break,
            }
        }
        let mut inv = self.base(&name_of(&words[0].text), &words, &ctx);
        inv.dynamic = words.iter().any(|w| w.dynamic);
        if !env.is_empty() {
            for (n, v) in &env {
                if is_command_variable(n) && !v.trim().is_empty() {
                    // `GIT_SSH_COMMAND='…' git fetch` runs the value.
                    let mut inner = ctx.with(n.clone());
                    inner.lenient = true;
                    self.nested(v, &inner, Stdin::Tty);
                }
                if classify::is_loader_variable(n) {
                    inv.fact("shell.ld_preload");
                    inv.because(
                        Cap::ExecArbitrary,
                        format!("{n}={v} loads a library into the command"),
                    );
                }
            }
        }
        self.pending_from = words[1..]
            .iter()
            .fold(Output::Nothing, |a, w| a.then(w.from.clone()));
        self.dispatch(inv, &words, ctx, stdin, io)
    }

    /// A fresh invocation for `name` with `words[1..]` as arguments.
    fn base(&self, name: &str, words: &[W], ctx: &Ctx) -> Invocation {
        let args: Vec<String> = words.iter().skip(1).map(|w| w.text.clone()).collect();
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let argv = argv::parse(name, &refs);
        Invocation {
            args: argv.operands.iter().map(|o| paths::normalize(o)).collect(),
            name: name.to_string(),
            written: words.first().map(|w| w.text.clone()).unwrap_or_default(),
            words: args,
            argv,
            dynamic: words.iter().any(|w| w.dynamic),
            via: ctx.via.clone(),
            remote: ctx.remote.clone(),
            ..Invocation::default()
        }
    }

    fn dynamic_command(&mut self, words: Vec<W>, ctx: &Ctx, io: Io) -> Output {
        // `$(echo rm) -rf /`: the command word is printed by a command whose output is
        // known, and split into words the way the shell would.
        if let Some(t) = known_text(&words[0])
            && words[0].dynamic
            && ctx.nesting < MAX_NESTING
        {
            let mut split: Vec<W> = t
                .split_whitespace()
                .map(|s| W {
                    text: s.to_string(),
                    dynamic: false,
                    from: Output::Nothing,
                })
                .collect();
            if !split.is_empty() {
                split.extend(words.into_iter().skip(1));
                let mut inner = ctx.with("$(…)");
                inner.nesting += 1;
                return self.invoke(split, inner, Stdin::Tty, io, &[]);
            }
        }
        let first = &words[0];
        let mut inv = self.base(&first.text, &words, ctx);
        inv.name = first.text.clone();
        inv.dynamic = true;
        inv.fact("shell.variable_command");
        inv.because(
            Cap::ExecArbitrary,
            format!("the command is {} (known only at run time)", first.text),
        );
        match first.from {
            Output::Fetch => {
                inv.fact("shell.fetch_to_shell");
                self.a.fact("shell.fetch_to_shell");
            }
            Output::Decode => {
                inv.fact("shell.decode_to_shell");
                self.a.fact("shell.decode_to_shell");
            }
            _ => {}
        }
        self.finish(inv, &Stdin::Tty, &io, ctx)
    }

    /// Classifies, records and returns what the command prints.
    fn finish(&mut self, mut inv: Invocation, stdin: &Stdin, io: &Io, _ctx: &Ctx) -> Output {
        classify::apply_io(&mut inv, io);
        classify::classify(&mut inv, stdin);
        let from = std::mem::replace(&mut self.pending_from, Output::Nothing);
        let out = classify::output(&inv, stdin, from);
        self.remember_effects(&inv, stdin);
        self.record(inv);
        out
    }

    fn dispatch(
        &mut self,
        mut inv: Invocation,
        words: &[W],
        ctx: Ctx,
        stdin: Stdin,
        io: Io,
    ) -> Output {
        let name = inv.name.clone();
        let fam = crate::specs::family(&name).to_string();
        match fam.as_str() {
            _ if p::SHELLS.contains(&name.as_str()) => self.shell(inv, words, &ctx, stdin, io),
            "eval" => {
                let known: Option<Vec<String>> = words[1..].iter().map(known_text).collect();
                let from = words[1..]
                    .iter()
                    .fold(Output::Nothing, |a, w| a.then(w.from.clone()));
                if let (Some(parts), true) = (&known, words.len() >= 2) {
                    // Literal, or printed by commands whose output is known
                    // (`eval "$(echo cm0gLXJmIC8= | base64 -d)"`).
                    let text = parts.join(" ");
                    self.finish(inv, &stdin, &io, &ctx);
                    return self.nested(&text, &ctx.with("eval"), stdin);
                }
                if known.is_none() || words.len() < 2 {
                    inv.fact("shell.eval_dynamic");
                    inv.because(Cap::ExecArbitrary, "eval runs text known only at run time");
                    self.note_origin(&mut inv, &from);
                    // `eval "$X -rf /etc"`: the unknown parts stay unknown words, and the
                    // rest still says what the command does to what.
                    let text = inv.words.join(" ");
                    let out = self.finish(inv, &stdin, &io, &ctx);
                    if !text.contains("(…)") {
                        let mut inner = ctx.with("eval");
                        inner.lenient = true;
                        self.nested(&text, &inner, Stdin::Tty);
                    }
                    out
                } else {
                    let text = inv.words.join(" ");
                    self.finish(inv, &stdin, &io, &ctx);
                    self.nested(&text, &ctx.with("eval"), stdin)
                }
            }
            "source" | "." if words.get(1).and_then(|w| self.file(&w.text)).is_some() => {
                let path = words[1].text.clone();
                let params: Vec<String> = words[1..].iter().map(|w| w.text.clone()).collect();
                let content = self.file(&path).unwrap_or(FileContent::Unknown);
                self.run_file(inv, &path, content, params, false, &ctx, stdin, io)
            }
            "source" | "." => {
                let from = words
                    .get(1)
                    .map(|w| w.from.clone())
                    .unwrap_or(Output::Nothing);
                inv.fact("shell.script_file");
                inv.because(Cap::ExecArbitrary, "sources a script file");
                self.note_origin(&mut inv, &from);
                self.finish(inv, &stdin, &io, &ctx)
            }
            "alias" => {
                // `alias ls='rm -rf ~'`: the body runs whenever the name is used.
                let bodies: Vec<(String, String)> = inv
                    .words
                    .iter()
                    .filter_map(|w| w.split_once('='))
                    .map(|(n, b)| (n.to_string(), b.to_string()))
                    .collect();
                self.finish(inv, &stdin, &io, &ctx);
                for (n, b) in bodies {
                    self.nested(&b, &ctx.with(format!("alias {n}")), Stdin::Tty);
                }
                Output::Nothing
            }
            "redis-cli" | "valkey-cli" | "keydb-cli"
                if inv.argv.args().is_empty() && inv.argv.sub().is_empty() =>
            {
                // Commands on its input: each line is one Redis command.
                let lines: Vec<String> = match &stdin {
                    Stdin::Text(t) | Stdin::Pipe(Output::Literal(t)) => {
                        t.lines().map(str::to_string).collect()
                    }
                    _ => Vec::new(),
                };
                let base: Vec<W> = words.to_vec();
                self.finish(inv, &stdin, &io, &ctx);
                for line in lines
                    .iter()
                    .filter(|l| !l.trim().is_empty())
                    .take(MAX_XARGS)
                {
                    let mut w = base.clone();
                    w.extend(line.split_whitespace().map(|t| W {
                        text: t.to_string(),
                        dynamic: false,
                        from: Output::Nothing,
                    }));
                    self.invoke(
                        w,
                        ctx.with(format!("input to {name}")),
                        Stdin::Tty,
                        Io::default(),
                        &[],
                    );
                }
                Output::Other
            }
            "trap" => {
                let text = inv.argv.operands.first().cloned();
                self.finish(inv, &stdin, &io, &ctx);
                match text {
                    Some(t) if !t.is_empty() && t != "-" => {
                        self.nested(&t, &ctx.with("trap"), Stdin::Tty)
                    }
                    _ => Output::Nothing,
                }
            }
            "at" | "batch" => {
                let text = match &stdin {
                    Stdin::Text(t) | Stdin::Pipe(Output::Literal(t)) => Some(t.clone()),
                    _ => None,
                };
                match text {
                    Some(t) => {
                        self.finish(inv, &Stdin::Tty, &io, &ctx);
                        self.nested(&t, &ctx.with(name), Stdin::Tty)
                    }
                    None => {
                        if !matches!(stdin, Stdin::Tty) || inv.argv.flag("f") {
                            inv.because(
                                Cap::ExecArbitrary,
                                format!("{name} schedules commands the line does not show"),
                            );
                        }
                        self.finish(inv, &stdin, &io, &ctx)
                    }
                }
            }
            "xargs" => {
                let inner_start = words.len() - inv.argv.operands.len();
                let mut inner: Vec<W> = words[inner_start..].to_vec();
                if inner.is_empty() {
                    inner.push(W {
                        text: "echo".into(),
                        dynamic: false,
                        from: Output::Nothing,
                    });
                }
                // Known input becomes the arguments; otherwise they are run-time values.
                let supplied: Vec<W> = match &stdin {
                    Stdin::Pipe(Output::Literal(t)) | Stdin::Text(t) => t
                        .split_whitespace()
                        .take(MAX_XARGS + 1)
                        .map(|s| W {
                            text: s.to_string(),
                            dynamic: false,
                            from: Output::Nothing,
                        })
                        .collect(),
                    _ => vec![W {
                        text: "$XARGS".into(),
                        dynamic: true,
                        from: Output::Nothing,
                    }],
                };
                if supplied.len() > MAX_XARGS {
                    self.error(
                        &ctx,
                        format!("xargs receives more than {MAX_XARGS} arguments"),
                    );
                }
                let replace = inv.argv.value("I").map(str::to_string).or_else(|| {
                    inv.argv
                        .opts
                        .iter()
                        .any(|o| o.name == "i")
                        .then(|| "{}".to_string())
                });
                match replace {
                    Some(r) => {
                        let joined = supplied
                            .iter()
                            .map(|w| w.text.as_str())
                            .collect::<Vec<_>>()
                            .join(" ");
                        let dynamic = supplied.iter().any(|w| w.dynamic);
                        for w in inner.iter_mut().skip(1) {
                            if w.text.contains(&r) {
                                w.text = w.text.replace(&r, &joined);
                                w.dynamic |= dynamic;
                            }
                        }
                    }
                    None => inner.extend(supplied),
                }
                self.finish(inv, &Stdin::Tty, &io, &ctx);
                self.invoke(inner, ctx.with("xargs"), Stdin::Tty, Io::default(), &[])
            }
            "find" => self.find(inv, words, &ctx, stdin, io),
            "watch" => {
                let ops = inv.argv.operands.clone();
                let exec = inv.argv.flag("x");
                self.finish(inv, &stdin, &io, &ctx);
                if ops.is_empty() {
                    return Output::Other;
                }
                if exec {
                    let inner: Vec<W> = words[words.len() - ops.len()..].to_vec();
                    self.invoke(inner, ctx.with("watch"), Stdin::Tty, Io::default(), &[])
                } else {
                    self.nested(&ops.join(" "), &ctx.with("watch"), Stdin::Tty)
                }
            }
            "parallel" => {
                let args: Vec<&str> = inv.words.iter().map(String::as_str).collect();
                let end = args
                    .iter()
                    .position(|a| a.starts_with(":::"))
                    .unwrap_or(args.len());
                let mut i = 0;
                while i < end && args[i].starts_with('-') {
                    if matches!(
                        args[i],
                        "-j" | "-S"
                            | "--jobs"
                            | "--sshlogin"
                            | "-a"
                            | "--arg-file"
                            | "--delay"
                            | "--timeout"
                            | "-I"
                    ) {
                        i += 1;
                    }
                    i += 1;
                }
                let template = args[i.min(end)..end].join(" ");
                let inputs = args.get(end + 1..).unwrap_or(&[]).join(" ");
                self.finish(inv, &stdin, &io, &ctx);
                if template.is_empty() {
                    return Output::Other;
                }
                let text = if template.contains("{}") {
                    template.replace("{}", &inputs)
                } else {
                    format!("{template} {inputs}")
                };
                self.nested(&text, &ctx.with("parallel"), Stdin::Tty)
            }
            "ssh" => self.ssh(inv, &ctx, stdin, io),
            "git" => {
                // Settings git runs as commands: `git -c core.sshCommand=…`, and, kept for
                // every later git command, `git config core.sshCommand …`, `alias.x '!…'`.
                let (commands, kept) = git_commands(&inv);
                if let Some((key, _)) = kept.first() {
                    inv.fact("shell.git_command_config");
                    inv.because(
                        Cap::ExecArbitrary,
                        format!("git config {key} runs a command on later git operations"),
                    );
                }
                let out = self.finish(inv, &stdin, &io, &ctx);
                for (key, text) in commands.iter().chain(kept.iter()) {
                    let mut inner = ctx.with(format!("git {key}"));
                    inner.lenient = true;
                    self.nested(text, &inner, Stdin::Tty);
                }
                out
            }
            "su" | "runuser" => {
                inv.fact("shell.privileged");
                let cmd = inv.argv.value("c").map(str::to_string);
                match cmd {
                    Some(c) => {
                        self.finish(inv, &Stdin::Tty, &io, &ctx);
                        self.nested(&c, &ctx.with(format!("{name} -c")), stdin)
                    }
                    None if name == "runuser" && words.iter().any(|w| w.text == "--") => {
                        let at = words.iter().position(|w| w.text == "--").unwrap_or(0);
                        let inner = words[at + 1..].to_vec();
                        self.finish(inv, &Stdin::Tty, &io, &ctx);
                        self.invoke(inner, ctx.with("runuser"), stdin, Io::default(), &[])
                    }
                    None => {
                        inv.because(
                            Cap::ExecArbitrary,
                            format!("{name} opens a shell as another user"),
                        );
                        self.finish(inv, &stdin, &io, &ctx)
                    }
                }
            }
            "docker"
                if matches!(
                    inv.argv.sub().as_str(),
                    "exec" | "run" | "container exec" | "container run"
                ) =>
            {
                let exec = inv.argv.sub().ends_with("exec");
                let args = inv.argv.args().to_vec();
                let label = format!(
                    "{name} {} {}",
                    if exec { "exec" } else { "run" },
                    args.first().cloned().unwrap_or_default()
                );
                let inner: Vec<W> = if args.len() > 1 {
                    words[words.len() - (args.len() - 1)..].to_vec()
                } else {
                    Vec::new()
                };
                self.finish(inv, &stdin, &io, &ctx);
                if inner.is_empty() {
                    return Output::Other;
                }
                self.invoke(inner, ctx.with(label), stdin, Io::default(), &[])
            }
            "kubectl" if inv.argv.sub() == "exec" => {
                let at = words.iter().position(|w| w.text == "--");
                let inner: Vec<W> = match at {
                    Some(i) => words[i + 1..].to_vec(),
                    None => {
                        let args = inv.argv.args().to_vec();
                        if args.len() > 1 {
                            words[words.len() - (args.len() - 1)..].to_vec()
                        } else {
                            Vec::new()
                        }
                    }
                };
                let pod = inv.argv.args().first().cloned().unwrap_or_default();
                self.finish(inv, &stdin, &io, &ctx);
                if inner.is_empty() {
                    return Output::Other;
                }
                self.invoke(
                    inner,
                    ctx.with(format!("{name} exec {pod}")),
                    stdin,
                    Io::default(),
                    &[],
                )
            }
            _ if p::INTERPRETERS.contains(&name.as_str()) || fam == "awk" => {
                self.interpreter(inv, words, &ctx, stdin, io)
            }
            _ if classify::is_sql_client(&name) => self.sql_client(inv, &ctx, stdin, io),
            _ if inv.written.contains('/') && self.file(&inv.written).is_some() => {
                let path = inv.written.clone();
                let params: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
                let content = self.file(&path).unwrap_or(FileContent::Unknown);
                self.run_file(inv, &path, content, params, true, &ctx, stdin, io)
            }
            _ => self.finish(inv, &stdin, &io, &ctx),
        }
    }

    /// Runs a file an earlier command wrote: what it holds runs, with `params` as `$0`,
    /// `$1`, …. Run `directly` (`./x`), a `#!` line naming an interpreter hands the text to
    /// that interpreter; through `sh x` it is shell whatever its first line says.
    #[allow(clippy::too_many_arguments)]
    fn run_file(
        &mut self,
        mut inv: Invocation,
        path: &str,
        content: FileContent,
        params: Vec<String>,
        directly: bool,
        ctx: &Ctx,
        stdin: Stdin,
        io: Io,
    ) -> Output {
        let label = format!("script {path}");
        if !inv.reads.iter().any(|r| *r == paths::normalize(path)) {
            inv.reads.push(paths::normalize(path));
        }
        let text = match content {
            FileContent::Text(t) => t,
            FileContent::Appended(t) => {
                inv.fact("shell.script_file");
                inv.because(
                    Cap::ExecArbitrary,
                    format!("runs {path}, whose start the line does not show"),
                );
                t
            }
            other => {
                let from = if other == FileContent::Fetched {
                    Output::Fetch
                } else {
                    Output::Decode
                };
                inv.fact("shell.script_file");
                inv.because(Cap::ExecArbitrary, format!("runs {path}"));
                self.note_origin(&mut inv, &from);
                return self.finish(inv, &stdin, &io, ctx);
            }
        };
        let interpreter = text
            .strip_prefix("#!")
            .and_then(|l| l.lines().next())
            .map(|l| {
                let mut w = l.split_whitespace();
                let first = name_of(w.next().unwrap_or(""));
                if first == "env" {
                    w.find(|x| !x.starts_with('-') && !x.contains('='))
                        .map(name_of)
                        .unwrap_or(first)
                } else {
                    first
                }
            })
            .filter(|n| directly && !p::SHELLS.contains(&n.as_str()) && !n.is_empty());
        self.finish(inv, &Stdin::Tty, &io, ctx);
        match interpreter {
            Some(n) => {
                let words = vec![W {
                    text: n,
                    dynamic: false,
                    from: Output::Nothing,
                }];
                self.invoke(
                    words,
                    ctx.with(label),
                    Stdin::Text(text),
                    Io::default(),
                    &[],
                )
            }
            None => self.nested_with(&text, &ctx.with(label), stdin, Some(params)),
        }
    }

    /// Records what downloaded or decoded text reaching an interpreter means.
    fn note_origin(&mut self, inv: &mut Invocation, from: &Output) {
        match from {
            Output::Fetch => {
                inv.fact("shell.fetch_to_shell");
                inv.because(Cap::ExecArbitrary, "runs downloaded code");
            }
            Output::Decode => {
                inv.fact("shell.decode_to_shell");
                inv.because(Cap::ExecArbitrary, "runs decoded text");
            }
            Output::Net => {
                inv.fact("shell.reverse_shell");
                inv.because(Cap::ExecArbitrary, "runs what a network peer sends");
            }
            _ => {}
        }
    }

    /// A shell: `-c TEXT`, a script file, a here-document, or whatever is piped in.
    fn shell(
        &mut self,
        mut inv: Invocation,
        words: &[W],
        ctx: &Ctx,
        stdin: Stdin,
        io: Io,
    ) -> Output {
        let name = inv.name.clone();
        let a = inv.argv.clone();
        let first_operand = words.len() - a.operands.len();
        if a.flag("c") {
            let Some(code) = words.get(first_operand) else {
                inv.because(Cap::ExecArbitrary, format!("{name} -c without a command"));
                return self.finish(inv, &stdin, &io, ctx);
            };
            // `sh -c '$0 -rf /' rm`, `bash -c '"$@"' _ rm -rf /`: the words after the text
            // are its `$0`, `$1`, ….
            let params: Option<Vec<String>> = words[first_operand + 1..]
                .iter()
                .map(known_text)
                .collect::<Option<Vec<_>>>()
                .map(|mut p| {
                    if p.is_empty() {
                        p.push(name.clone());
                    }
                    p
                });
            if let (true, Some(text)) = (code.dynamic, known_text(code)) {
                self.finish(inv, &Stdin::Tty, &io, ctx);
                return self.nested_with(&text, &ctx.with(format!("{name} -c")), stdin, params);
            }
            if code.dynamic {
                inv.fact("shell.eval_dynamic");
                inv.because(
                    Cap::ExecArbitrary,
                    format!("{name} -c runs text known only at run time"),
                );
                let from = code.from.clone();
                self.note_origin(&mut inv, &from);
                return self.finish(inv, &stdin, &io, ctx);
            }
            let text = code.text.clone();
            self.finish(inv, &Stdin::Tty, &io, ctx);
            return self.nested_with(&text, &ctx.with(format!("{name} -c")), stdin, params);
        }
        // `bash -s ARGS` reads the script from its input; ARGS are the script's arguments.
        let script = if a.flag("s") {
            None
        } else {
            words.get(first_operand)
        };
        if let Some(script) = script {
            let params: Vec<String> = words[first_operand..]
                .iter()
                .map(|w| w.text.clone())
                .collect();
            let path = script.text.clone();
            if let Some(content) = self.file(&path) {
                return self.run_file(inv, &path, content, params, false, ctx, stdin, io);
            }
            inv.fact("shell.script_file");
            inv.because(
                Cap::ExecArbitrary,
                format!("{name} runs the script {}", script.text),
            );
            let from = script.from.clone();
            self.note_origin(&mut inv, &from);
            if !script.text.contains("/dev/fd/") {
                inv.reads.push(paths::normalize(&script.text));
            }
            return self.finish(inv, &stdin, &io, ctx);
        }
        match stdin {
            Stdin::Text(t) => {
                self.finish(inv, &Stdin::Tty, &io, ctx);
                self.nested(&t, &ctx.with(format!("here-doc to {name}")), Stdin::Tty)
            }
            Stdin::Pipe(Output::Literal(t)) => {
                self.finish(inv, &Stdin::Tty, &io, ctx);
                self.nested(&t, &ctx.with(format!("pipe to {name}")), Stdin::Tty)
            }
            Stdin::Pipe(from) => {
                inv.fact("shell.pipe_to_shell");
                inv.because(
                    Cap::ExecArbitrary,
                    format!("{name} runs what is piped into it"),
                );
                self.note_origin(&mut inv, &from);
                self.finish(inv, &Stdin::Tty, &io, ctx)
            }
            Stdin::File(f) => {
                inv.fact("shell.script_file");
                inv.because(Cap::ExecArbitrary, format!("{name} runs the script {f}"));
                self.finish(inv, &Stdin::Tty, &io, ctx)
            }
            Stdin::Tty => {
                inv.because(Cap::ExecArbitrary, format!("{name} runs interactively"));
                inv.fact("shell.interactive");
                self.finish(inv, &Stdin::Tty, &io, ctx)
            }
        }
    }

    fn interpreter(
        &mut self,
        mut inv: Invocation,
        words: &[W],
        ctx: &Ctx,
        stdin: Stdin,
        io: Io,
    ) -> Output {
        let name = inv.name.clone();
        // `bun` shares npm's grammar as a package manager, and node's as an interpreter.
        let fam = match crate::specs::family(&name) {
            "npm" if name == "bun" => "bun".to_string(),
            other => other.to_string(),
        };
        let a = inv.argv.clone();
        let lang = match fam.as_str() {
            "python" => Lang::Python,
            "node" | "deno" | "bun" => Lang::Node,
            "perl" | "ruby" | "php" => Lang::Backticks,
            _ => Lang::Other,
        };
        // Where the program text is.
        let code_flag: &[&str] = match fam.as_str() {
            "python" => &["c"],
            "node" => &["e", "p"],
            "perl" => &["e", "E"],
            "ruby" | "lua" | "rscript" | "osascript" => &["e"],
            "php" => &["r", "B", "R", "E"],
            "powershell" => &["c", "command", "Command"],
            "awk" => &[],
            _ => &["c", "e"],
        };
        let mut code: Option<(String, Output, bool)> = None;
        for f in code_flag {
            if let Some(v) = a.value(f) {
                let w = words.iter().find(|w| w.text == v);
                let (from, dynamic) =
                    w.map_or((Output::Nothing, false), |w| (w.from.clone(), w.dynamic));
                code = Some((v.to_string(), from, dynamic));
                break;
            }
        }
        if fam == "powershell" {
            for f in ["e", "ec", "encodedcommand", "EncodedCommand"] {
                if let Some(v) = a.value(f) {
                    inv.fact("shell.decode_to_shell");
                    let decoded = classify::decode_utf16_base64(v);
                    code = Some((decoded.unwrap_or_default(), Output::Decode, false));
                }
            }
        }
        if fam == "deno"
            && a.sub() == "eval"
            && let Some(c) = a.args().first()
        {
            code = Some((c.clone(), Output::Nothing, false));
        }
        // `bun -e CODE`, `bun --eval=CODE`, `bun -p CODE` (TypeScript that is also
        // JavaScript parses; type annotations do not, and fail closed).
        if fam == "bun" && code.is_none() {
            for (i, w) in words.iter().enumerate().skip(1) {
                let eq = ["--eval=", "--print="]
                    .iter()
                    .find_map(|f| w.text.strip_prefix(f));
                let taken = if let Some(v) = eq {
                    Some((v.to_string(), w))
                } else if matches!(w.text.as_str(), "-e" | "--eval" | "-p" | "--print") {
                    words.get(i + 1).map(|v| (v.text.clone(), v))
                } else {
                    None
                };
                if let Some((text, from)) = taken {
                    code = Some((text, from.from.clone(), from.dynamic));
                    break;
                }
            }
        }
        if fam == "awk"
            && a.value("f").is_none()
            && let Some(first) = a.operands.first()
        {
            code = Some((first.clone(), Output::Nothing, false));
        }
        if fam == "python"
            && let Some(m) = a.value("m")
        {
            {
                let m = m.to_string();
                match m.as_str() {
                    "pip" | "pip3" | "twine" | "venv" | "ensurepip" => {
                        let at = words
                            .iter()
                            .position(|w| w.text == m)
                            .unwrap_or(words.len());
                        let mut inner = vec![W {
                            text: m.clone(),
                            dynamic: false,
                            from: Output::Nothing,
                        }];
                        inner.extend(words[(at + 1).min(words.len())..].iter().cloned());
                        return self.invoke(inner, ctx.with(format!("{name} -m")), stdin, io, &[]);
                    }
                    "http.server" | "SimpleHTTPServer" | "smtpd" | "pyftpdlib" => {
                        inv.fact("shell.listener");
                        inv.because(
                            Cap::NetEgress,
                            format!("{name} -m {m} serves files to the network"),
                        );
                        return self.finish(inv, &stdin, &io, ctx);
                    }
                    "json.tool" | "py_compile" | "compileall" | "tabnanny" | "pydoc" | "timeit"
                    | "this" | "site" | "platform" | "sysconfig" | "zipfile" | "tarfile"
                    | "base64" | "uuid" | "calendar" => {
                        return self.finish(inv, &stdin, &io, ctx);
                    }
                    _ => {
                        inv.because(Cap::ExecArbitrary, format!("{name} runs the module {m}"));
                        return self.finish(inv, &stdin, &io, ctx);
                    }
                }
            }
        }
        if let Some((text, from, dynamic)) = code {
            if fam != "awk" {
                inv.fact("shell.interpreter_inline");
                inv.because(Cap::ExecArbitrary, format!("{name} runs inline code"));
            }
            if dynamic {
                inv.fact("shell.eval_dynamic");
                inv.because(
                    Cap::ExecArbitrary,
                    format!("{name} runs code known only at run time"),
                );
            }
            self.note_origin(&mut inv, &from);
            return self.code(inv, &text, lang, ctx, stdin, io);
        }
        // A script file operand.
        let script_at = if fam == "awk" {
            None
        } else {
            a.operands.first()
        };
        if let Some(script) = script_at
            && let Some(FileContent::Text(text)) = self.file(script)
        {
            inv.fact("shell.interpreter_inline");
            inv.because(Cap::ExecArbitrary, format!("{name} runs {script}"));
            inv.reads.push(paths::normalize(script));
            return self.code(inv, &text, lang, ctx, stdin, io);
        }
        if let Some(script) = script_at {
            let w = words.iter().rev().find(|w| &w.text == script);
            let from = match self.file(script) {
                Some(FileContent::Fetched) => Output::Fetch,
                Some(FileContent::Decoded) => Output::Decode,
                _ => w.map_or(Output::Nothing, |w| w.from.clone()),
            };
            inv.fact("shell.script_file");
            inv.because(
                Cap::ExecArbitrary,
                format!("{name} runs the script {script}"),
            );
            if !script.contains("/dev/fd/") && script != "-" {
                inv.reads.push(paths::normalize(script));
            }
            self.note_origin(&mut inv, &from);
            if script != "-" {
                return self.finish(inv, &stdin, &io, ctx);
            }
        }
        match stdin.clone() {
            Stdin::Text(t) | Stdin::Pipe(Output::Literal(t)) if fam != "awk" => {
                inv.fact("shell.interpreter_inline");
                inv.because(
                    Cap::ExecArbitrary,
                    format!("{name} runs code from its input"),
                );
                self.code(inv, &t, lang, ctx, Stdin::Tty, io)
            }
            Stdin::Pipe(from) if fam != "awk" => {
                inv.fact("shell.pipe_to_shell");
                inv.because(
                    Cap::ExecArbitrary,
                    format!("{name} runs what is piped into it"),
                );
                self.note_origin(&mut inv, &from);
                self.finish(inv, &Stdin::Tty, &io, ctx)
            }
            Stdin::File(f) if fam != "awk" => {
                inv.fact("shell.script_file");
                inv.because(Cap::ExecArbitrary, format!("{name} runs the script {f}"));
                self.finish(inv, &Stdin::Tty, &io, ctx)
            }
            _ => {
                if fam != "awk" {
                    inv.because(Cap::ExecArbitrary, format!("{name} runs interactively"));
                }
                self.finish(inv, &stdin, &io, ctx)
            }
        }
    }

    /// Inline code: what it shows, and the commands it hands to a shell.
    fn code(
        &mut self,
        mut inv: Invocation,
        text: &str,
        lang: Lang,
        ctx: &Ctx,
        stdin: Stdin,
        io: Io,
    ) -> Output {
        // Python, JavaScript, Perl and Ruby are parsed (`crate::inline`); the rest is read
        // for what it shows.
        let fam = match crate::specs::family(&inv.name) {
            "npm" if inv.name == "bun" => "bun".to_string(),
            other => other.to_string(),
        };
        if let Some(l) = crate::inline::Lang::of_family(&fam) {
            return self.inline(inv, text, l, ctx, stdin, io);
        }
        let facts = code::analyse(text, lang);
        inv.code = Some(text.chars().take(4096).collect());
        for d in &facts.destinations {
            if !inv.destinations.contains(d) {
                inv.destinations.push(d.clone());
            }
        }
        if facts.network {
            inv.because(
                Cap::NetEgress,
                format!("{} code uses the network", inv.name),
            );
        }
        for path in &facts.paths {
            inv.reads.push(paths::normalize(path));
        }
        for d in &facts.deletes {
            inv.because(
                Cap::ExecIrreversible,
                format!("{} code calls {d}", inv.name),
            );
            inv.caps.insert(Cap::FsWrite);
        }
        if facts.reverse_shell {
            inv.fact("shell.reverse_shell");
        }
        if facts.decode_exec {
            inv.fact("shell.decode_to_shell");
        }
        if facts.fetch_exec {
            inv.fact("shell.fetch_to_shell");
        }
        let label = format!("{} code", inv.name);
        let out = self.finish(inv, &stdin, &io, ctx);
        let mut inner = ctx.with(label);
        inner.lenient = true;
        if facts.shell.len() > code::MAX_SHELL {
            self.error(
                ctx,
                format!(
                    "inline code hands more than {} command strings to a shell",
                    code::MAX_SHELL
                ),
            );
        }
        for cmd in facts.shell.iter().take(code::MAX_SHELL) {
            self.nested(cmd, &inner, Stdin::Tty);
        }
        out
    }

    fn find(
        &mut self,
        mut inv: Invocation,
        words: &[W],
        ctx: &Ctx,
        stdin: Stdin,
        io: Io,
    ) -> Output {
        let args: Vec<&W> = words[1..].iter().collect();
        let roots: Vec<String> = args
            .iter()
            .take_while(|w| !w.text.starts_with('-') && w.text != "(" && w.text != "!")
            .map(|w| paths::normalize(&w.text))
            .collect();
        let mut execs: Vec<(String, Vec<W>)> = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text.as_str();
            if matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
                let mut cmd = Vec::new();
                i += 1;
                while i < args.len() && args[i].text != ";" && args[i].text != "+" {
                    cmd.push(args[i].clone());
                    i += 1;
                }
                execs.push((t.to_string(), cmd));
            }
            i += 1;
        }
        inv.argv.operands = roots.clone();
        inv.args = roots.clone();
        let before = inv.words.clone();
        inv.words = before;
        let out = self.finish(inv, &stdin, &io, ctx);
        // `{}` is a path found under a root: `find / … -exec rm -rf {} +` deletes under `/`,
        // `find . … -exec rm -rf {} +` inside the workspace.
        // With `-maxdepth 0` what is found is the root itself.
        let depth0 = args
            .windows(2)
            .any(|w| w[0].text == "-maxdepth" && w[1].text == "0");
        let found: Vec<String> = if depth0 {
            if roots.is_empty() {
                vec![".".to_string()]
            } else {
                roots.clone()
            }
        } else if roots.is_empty() {
            vec!["{}".to_string()]
        } else {
            roots
                .iter()
                .map(|r| match r.as_str() {
                    "." => "{}".to_string(),
                    "/" => "/{}".to_string(),
                    r => format!("{}/{{}}", r.trim_end_matches('/')),
                })
                .collect()
        };
        for (how, cmd) in execs {
            let cmd: Vec<W> = cmd
                .into_iter()
                .flat_map(|w| {
                    if w.text == "{}" {
                        found
                            .iter()
                            .map(|f| W {
                                text: f.clone(),
                                ..w.clone()
                            })
                            .collect::<Vec<W>>()
                    } else {
                        vec![w]
                    }
                })
                .collect();
            if !cmd.is_empty() {
                self.invoke(
                    cmd,
                    ctx.with(format!("find {how}")),
                    Stdin::Tty,
                    Io::default(),
                    &[],
                );
            }
        }
        out
    }

    fn ssh(&mut self, inv: Invocation, ctx: &Ctx, stdin: Stdin, io: Io) -> Output {
        let host = inv.argv.operands.first().cloned();
        let remote_cmd: Vec<String> = inv.argv.operands.iter().skip(1).cloned().collect();
        let proxy = inv.argv.values("o").find_map(|o| {
            let (k, v) = o.split_once(['=', ' '])?;
            k.eq_ignore_ascii_case("ProxyCommand")
                .then(|| v.to_string())
        });
        let out = self.finish(inv, &stdin, &io, ctx);
        if let Some(cmd) = proxy {
            self.nested(&cmd, &ctx.with("ssh ProxyCommand"), Stdin::Tty);
        }
        if let (Some(h), false) = (host, remote_cmd.is_empty()) {
            let mut inner = ctx.with(format!("ssh {h}"));
            inner.remote = Some(h.rsplit('@').next().unwrap_or(&h).to_string());
            self.nested(&remote_cmd.join(" "), &inner, stdin);
        }
        out
    }

    fn sql_client(&mut self, mut inv: Invocation, ctx: &Ctx, stdin: Stdin, io: Io) -> Output {
        let texts = classify::sql_texts(&inv, &stdin);
        if texts.is_empty() && classify::sql_script(&inv, &stdin) {
            inv.fact("shell.script_file");
            inv.because(
                Cap::ExecArbitrary,
                format!("{} runs a SQL script the line does not show", inv.name),
            );
        }
        for t in texts {
            let s = sql::analyse_sql(&t);
            inv.caps = inv.caps.union(s.caps);
            if s.destroys() {
                inv.because(
                    Cap::ExecIrreversible,
                    format!(
                        "{} runs destructive SQL ({})",
                        inv.name,
                        s.statements
                            .iter()
                            .map(|x| x.kind.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
            self.a.sql.push(s);
        }
        self.finish(inv, &stdin, &io, ctx)
    }
}

/// An invocation standing for redirections with no command (`> file`, `exec 3<>…`).
fn pseudo(name: &str, io: &Io, ctx: &Ctx) -> Invocation {
    let mut inv = Invocation {
        name: name.to_string(),
        written: name.to_string(),
        via: ctx.via.clone(),
        remote: ctx.remote.clone(),
        ..Invocation::default()
    };
    classify::apply_io(&mut inv, io);
    classify::classify(&mut inv, &Stdin::Tty);
    inv
}

/// A word's value when it is known before run time: literal text, or exactly one command
/// substitution whose output is known (`$(echo rm)`, `$(echo … | base64 -d)`).
fn known_text(w: &W) -> Option<String> {
    if !w.dynamic {
        return Some(w.text.clone());
    }
    match &w.from {
        Output::Literal(t) if w.text == "$(…)" => Some(t.trim_end_matches('\n').to_string()),
        _ => None,
    }
}

/// Variables whose value git or ssh runs as a command.
fn is_command_variable(name: &str) -> bool {
    matches!(
        name,
        "GIT_SSH_COMMAND"
            | "GIT_SSH"
            | "GIT_PROXY_COMMAND"
            | "GIT_EXTERNAL_DIFF"
            | "GIT_ASKPASS"
            | "SSH_ASKPASS"
            | "GIT_EDITOR"
            | "GIT_SEQUENCE_EDITOR"
            | "GIT_PAGER"
    )
}

/// Git settings that hold a command (lower case).
fn git_command_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    matches!(
        key.as_str(),
        "core.sshcommand"
            | "core.gitproxy"
            | "core.fsmonitor"
            | "core.pager"
            | "core.editor"
            | "core.askpass"
            | "sequence.editor"
            | "diff.external"
            | "uploadpack.packobjectshook"
            | "credential.helper"
    ) || key.starts_with("alias.")
        || key.starts_with("filter.")
            && (key.ends_with(".clean") || key.ends_with(".smudge") || key.ends_with(".process"))
        || key.starts_with("diff.") && key.ends_with(".textconv")
        || key.starts_with("pager.")
}

/// The commands a git invocation's settings name: those it runs now (`-c key=value`) and
/// those `git config` keeps for later, as (key, command text). Aliases run a command only
/// when they start with `!`; a credential helper only when it does or is a path; an editor
/// or pager that is a plain program and a workspace hooks directory (husky's `.husky`) are
/// ordinary settings.
/// Git settings that name a command: (key, command text).
type GitCommands = Vec<(String, String)>;

fn git_commands(inv: &Invocation) -> (GitCommands, GitCommands) {
    let a = &inv.argv;
    let command = |key: &str, value: &str| -> Option<String> {
        let k = key.to_ascii_lowercase();
        let v = value.trim();
        if k.starts_with("alias.") || k == "credential.helper" {
            return v.strip_prefix('!').map(str::to_string).or_else(|| {
                (k == "credential.helper" && v.starts_with('/')).then(|| v.to_string())
            });
        }
        (git_command_key(&k) && !v.is_empty()).then(|| v.to_string())
    };
    let now: Vec<(String, String)> = a
        .values("c")
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), command(k, v)?))
        })
        .collect();
    let mut kept = Vec::new();
    if a.sub() == "config" {
        let args = a.args();
        let reading = inv.words.iter().any(|w| {
            matches!(
                w.as_str(),
                "--get"
                    | "--get-all"
                    | "--get-regexp"
                    | "--list"
                    | "-l"
                    | "--unset"
                    | "--unset-all"
                    | "--remove-section"
                    | "--show-origin"
            )
        }) || matches!(
            args.first().map(String::as_str),
            Some("get" | "list" | "unset")
        );
        let args = match args.first().map(String::as_str) {
            Some("set") => &args[1..],
            _ => args,
        };
        if !reading && let [key, value, ..] = args {
            let k = key.to_ascii_lowercase();
            if k == "core.hookspath" {
                let v = value.trim();
                if v.starts_with('/') || v.starts_with('~') || v.starts_with("..") {
                    kept.push((key.clone(), format!("{v}/pre-commit")));
                }
            } else if let Some(c) = command(key, value) {
                let plain = |c: &str| {
                    let first = name_of(c.split_whitespace().next().unwrap_or(""));
                    !c.contains([';', '|', '&', '$', '`', '>', '<', '('])
                        && matches!(
                            first.as_str(),
                            "vim"
                                | "vi"
                                | "nvim"
                                | "nano"
                                | "emacs"
                                | "code"
                                | "subl"
                                | "less"
                                | "more"
                                | "cat"
                                | "delta"
                                | "diff-so-fancy"
                                | "bat"
                                | "most"
                                | "ssh"
                                | "cache"
                                | "store"
                                | "osxkeychain"
                                | "manager"
                                | "manager-core"
                                | "libsecret"
                                | "gh"
                        )
                };
                if k.starts_with("alias.") || !plain(&c) {
                    kept.push((key.clone(), c));
                }
            }
        }
    }
    (now, kept)
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((n, _)) => {
            !n.is_empty()
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !n.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// `/dev/tcp/host/port` and `/dev/udp/host/port` as `host:port`.
fn dev_tcp(path: &str) -> Option<String> {
    let rest = path
        .strip_prefix("/dev/tcp/")
        .or_else(|| path.strip_prefix("/dev/udp/"))?;
    let (host, port) = rest.split_once('/').unwrap_or((rest, ""));
    Some(if port.is_empty() {
        host.to_string()
    } else {
        format!("{host}:{port}")
    })
}

/// The files a downloader saves: `curl -o F`, `curl -O URL` and `wget URL` (the URL's last
/// segment), `wget -O F`, `aria2c -o F`; under `--output-dir`/`-P` when given.
fn downloads(inv: &Invocation) -> Vec<String> {
    let a = &inv.argv;
    let urls: Vec<&String> = a.operands.iter().filter(|o| o.contains("://")).collect();
    let basename = |u: &str| -> String {
        let path = u.split(['?', '#']).next().unwrap_or(u);
        let path = path.split_once("://").map_or(path, |(_, p)| p);
        match path.split_once('/') {
            Some((_, rest)) if !rest.is_empty() && !rest.ends_with('/') => {
                rest.rsplit('/').next().unwrap_or(rest).to_string()
            }
            _ => "index.html".to_string(),
        }
    };
    let dir = a
        .value("output-dir")
        .or_else(|| a.value("P"))
        .map(|d| d.trim_end_matches('/').to_string());
    let under = |f: String| match &dir {
        Some(d) if !f.starts_with('/') => format!("{d}/{f}"),
        _ => f,
    };
    let mut out: Vec<String> = Vec::new();
    match inv.name.as_str() {
        "curl" => {
            out.extend(a.values("o").filter(|o| *o != "-").map(str::to_string));
            if a.flag("O") || a.flag("remote-name-all") {
                out.extend(urls.iter().map(|u| basename(u)));
            }
        }
        "wget" => match a.value("O") {
            Some("-") => {}
            Some(f) => out.push(f.to_string()),
            None => out.extend(urls.iter().map(|u| basename(u))),
        },
        _ => out.extend(a.values("o").filter(|o| *o != "-").map(str::to_string)),
    }
    out.into_iter().map(under).collect()
}
