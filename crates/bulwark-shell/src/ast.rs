//! The command AST: what a bash command line does, structurally.
//!
//! Words carry their literal value after quote removal and escape processing, plus whether
//! any part of them is only known at run time (a variable, a command substitution). Nested
//! commands — `$(…)`, backticks, `<(…)`, here-documents fed to a shell — are kept as
//! subtrees, so nothing a line runs is hidden inside a string.

/// A byte range in the parsed text.
pub type Span = (usize, usize);

/// One word (an argument, a command name, a redirect target).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Word {
    /// The value with quotes removed and escapes applied; run-time parts appear as `$…`.
    pub text: String,
    /// Whether part of the value is only known at run time.
    pub dynamic: bool,
    /// Commands that run while the word is expanded (`$(…)`, backticks, `<(…)`).
    pub substitutions: Vec<Node>,
    /// Where it is in the text.
    pub span: Span,
    /// An array value's elements (`a=(rm -rf /)`), each a word of its own.
    pub elements: Option<Vec<Word>>,
}

impl Word {
    /// A literal word.
    pub fn literal(text: impl Into<String>) -> Word {
        Word {
            text: text.into(),
            ..Word::default()
        }
    }
}

/// A redirection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    /// The operator: `>`, `>>`, `<`, `&>`, `>&`, `<<`, `<<<`, …
    pub op: String,
    /// The file descriptor, when one is written (`2>`).
    pub fd: Option<u32>,
    /// The target (a file, a descriptor, a here-doc delimiter).
    pub target: Word,
    /// The here-document or here-string content fed to the command.
    pub body: Option<Word>,
}

/// A simple command: assignments, words, redirections.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// `NAME=value` prefixes (or a bare assignment statement).
    pub assignments: Vec<(String, Word)>,
    /// The command name and its arguments.
    pub words: Vec<Word>,
    /// Redirections.
    pub redirects: Vec<Redirect>,
    /// Where it is in the text.
    pub span: Span,
}

/// How two parts of a list are joined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListOp {
    /// `;` or a newline.
    Seq,
    /// `&&`.
    And,
    /// `||`.
    Or,
    /// `&` (the left side runs in the background).
    Background,
}

/// Loop kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopKind {
    /// `for x in …` or `for ((…))`.
    For,
    /// `while …`.
    While,
    /// `until …`.
    Until,
    /// `select x in …`.
    Select,
}

/// A node of the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// A simple command.
    Command(SimpleCommand),
    /// `a | b | c`; each stage's standard input is the previous stage's output.
    Pipeline(Vec<Node>),
    /// `a && b`, `a || b`, `a ; b`, `a & b`.
    List(Box<Node>, ListOp, Box<Node>),
    /// `( … )`.
    Subshell(Vec<Node>),
    /// `{ …; }`.
    Group(Vec<Node>),
    /// `if …; then …; elif …; else …; fi`: every branch, conditions included.
    If(Vec<Node>),
    /// Loops: the header words and the body.
    Loop(LoopKind, Vec<Word>, Vec<Node>),
    /// `case word in … esac`: the subject and every arm's commands.
    Case(Word, Vec<Node>),
    /// `name() { … }`: the body runs whenever the name is called.
    Function(String, Vec<Node>),
    /// `[[ … ]]` and `(( … ))`: the words they expand.
    Test(Vec<Word>),
    /// `! cmd`.
    Negated(Box<Node>),
    /// A statement with redirections applied to it as a whole (`{ …; } > f`, `while …; done < f`).
    Redirected(Box<Node>, Vec<Redirect>),
}

/// A parsed command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Script {
    /// Top-level statements.
    pub body: Vec<Node>,
}
