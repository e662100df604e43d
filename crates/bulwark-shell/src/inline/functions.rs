//! Functions an inline program defines itself (`def f(x): os.system(x)`, `lambda c: …`,
//! `const f = (c) => execSync(c)`), followed into their bodies at each call so that a
//! sink inside sees the caller's arguments: `f('rm -rf ~')` is `rm -rf ~`.
//!
//! The readers do not run a function body where it is defined. A call to a function the
//! program defined binds its parameters to the call's values and reads the body then, in
//! the caller's scope (late binding, as both languages look names up at run time); the
//! first `return` gives the call's value. A body reached in any other way — a function
//! never called by name, one passed as a value (`map(f, xs)`, `setTimeout(f)`), or a call
//! past a limit — is read once more at the end with every parameter unknown, so a sink
//! inside it gets *a value known only at run time*: a process started with it is any
//! program, which the walker judges by its arguments like an unknown command word.
//!
//! Bounded: [`MAX_CALL_DEPTH`] nested calls, [`MAX_CALLS`] calls followed per program and
//! [`MAX_FOLLOWED`] bytes of bodies read in all. A call past a limit is not followed and its
//! function counts as reached in another way — never an error and never silence: the end
//! pass still reads its body with unknown parameters.

use tree_sitter::Node;

use super::{MAX_CODE, Value};

/// Calls followed inside calls (`f` calling `g` calling `h` …); recursion stops here.
pub(crate) const MAX_CALL_DEPTH: usize = 8;
/// Calls to local functions followed per program.
pub(crate) const MAX_CALLS: usize = 64;
/// Bytes of function bodies read by followed calls, in all.
pub(crate) const MAX_FOLLOWED: usize = 4 * MAX_CODE;

/// One function the program defines.
#[derive(Clone, Copy)]
pub(crate) struct Func<'t> {
    /// The definition (its id tells a definition read twice from a new one).
    node: Node<'t>,
    /// The parameter list, or the one parameter of `x => …`.
    pub params: Option<Node<'t>>,
    /// The body: a block, or the expression of a lambda or arrow function.
    pub body: Node<'t>,
    /// Called by name with its arguments at least once.
    followed: bool,
    /// Reached some other way (or a call past a limit): needs a read with unknown
    /// parameters.
    escaped: bool,
    /// That read is done.
    read_unknown: bool,
}

/// The program's functions and the state of the calls being followed.
#[derive(Default)]
pub(crate) struct Funcs<'t> {
    list: Vec<Func<'t>>,
    calls: usize,
    depth: usize,
    bytes: usize,
    /// The value of the first `return` in the body being followed.
    pub ret: Option<Value>,
}

impl<'t> Funcs<'t> {
    /// Records a definition; reading the same definition again gives the same function.
    pub(crate) fn define(
        &mut self,
        node: Node<'t>,
        params: Option<Node<'t>>,
        body: Node<'t>,
    ) -> Value {
        if let Some(i) = self.list.iter().position(|f| f.node.id() == node.id()) {
            return Value::Func(i);
        }
        self.list.push(Func {
            node,
            params,
            body,
            followed: false,
            escaped: false,
            read_unknown: false,
        });
        Value::Func(self.list.len() - 1)
    }

    /// Starts following a call to function `i`: its definition, or `None` past a limit
    /// (the function then counts as reached in another way).
    pub(crate) fn enter(&mut self, i: usize) -> Option<Func<'t>> {
        let f = self.list.get_mut(i)?;
        let size = f.body.end_byte().saturating_sub(f.body.start_byte());
        if self.depth >= MAX_CALL_DEPTH
            || self.calls >= MAX_CALLS
            || self.bytes.saturating_add(size) > MAX_FOLLOWED
        {
            f.escaped = true;
            return None;
        }
        f.followed = true;
        self.calls += 1;
        self.depth += 1;
        self.bytes += size;
        Some(*f)
    }

    /// Ends following a call.
    pub(crate) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Whether a body is being followed (a `return` gives the call's value).
    pub(crate) fn in_call(&self) -> bool {
        self.depth > 0
    }

    /// A value that leaves the reader's sight (an argument to a library call, an element
    /// of a list): any function in it may be called with anything.
    pub(crate) fn escape(&mut self, v: &Value) {
        match v {
            Value::Func(i) => {
                if let Some(f) = self.list.get_mut(*i) {
                    f.escaped = true;
                }
            }
            Value::List(items) => items.iter().for_each(|x| self.escape(x)),
            Value::Obj(kv) => kv.iter().for_each(|(_, x)| self.escape(x)),
            _ => {}
        }
    }

    /// The next function whose body must be read with unknown parameters: never called by
    /// name, or reached some other way. Each is given once.
    pub(crate) fn next_unread(&mut self) -> Option<Func<'t>> {
        let f = self
            .list
            .iter_mut()
            .find(|f| !f.read_unknown && (!f.followed || f.escaped))?;
        f.read_unknown = true;
        Some(*f)
    }
}
