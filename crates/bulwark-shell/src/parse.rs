//! From text to [`Script`]: tree-sitter-bash parses, this module converts its concrete tree
//! into the AST, and refuses anything tree-sitter could not read.
//!
//! tree-sitter never crashes and stays linear on hostile input, but it recovers from syntax
//! errors by guessing; its known here-document bugs show up as error nodes. Any `ERROR` or
//! `MISSING` node therefore makes the whole line unparsable: a guess is not an analysis.

use std::cell::RefCell;

use thiserror::Error;
use tree_sitter::{Node as TsNode, Parser};

use crate::ast::{ListOp, LoopKind, Node, Redirect, Script, SimpleCommand, Word};
use crate::words;

/// Longest command line parsed.
pub const MAX_BYTES: usize = 64 * 1024;
/// Deepest nesting of statements and substitutions followed.
pub const MAX_DEPTH: usize = 64;

/// Why a command line could not be read.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ParseError {
    /// Longer than [`MAX_BYTES`].
    #[error("command longer than {MAX_BYTES} bytes")]
    TooLong,
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("command nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// Not valid bash (or a construct the grammar gets wrong).
    #[error("syntax error at byte {at}: {what}")]
    Syntax {
        /// Byte offset of the first problem.
        at: usize,
        /// What the parser saw there.
        what: String,
    },
    /// The parser itself failed.
    #[error("the bash parser is unavailable")]
    Unavailable,
}

thread_local! {
    // tree-sitter parsers are not `Sync`; one per thread, reused.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Parses a command line.
///
/// ```
/// use bulwark_shell::{parse, Node};
/// let s = parse("curl -s https://x.example | sh").unwrap();
/// assert!(matches!(s.body[0], Node::Pipeline(_)));
/// assert!(parse("echo 'unterminated").is_err());
/// ```
pub fn parse(text: &str) -> Result<Script, ParseError> {
    if text.len() > MAX_BYTES {
        return Err(ParseError::TooLong);
    }
    match parse_exact(text, text) {
        Err(e @ ParseError::Syntax { .. }) if text.contains("<>") => {
            // tree-sitter-bash has no `<>` (open for reading and writing). `>|` has the same
            // length and the same shape, so the rewritten line parses with the same spans;
            // the converter reads the operator back from the original text.
            let rewritten = rewrite_read_write(text);
            parse_exact(&rewritten, text).map_err(|_| e)
        }
        other => other,
    }
}

/// Replaces unquoted `<>` with `>|`, leaving quoted text alone.
fn rewrite_read_write(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match (quote, c) {
            (None, b'\\') | (Some(b'"'), b'\\') => {
                out.push(c);
                if let Some(&n) = b.get(i + 1) {
                    out.push(n);
                }
                i += 2;
                continue;
            }
            (None, b'\'' | b'"') => quote = Some(c),
            (Some(q), x) if x == q => quote = None,
            (None, b'<') if b.get(i + 1) == Some(&b'>') => {
                out.extend_from_slice(b">|");
                i += 2;
                continue;
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

fn parse_exact(text: &str, original: &str) -> Result<Script, ParseError> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut p = Parser::new();
            p.set_language(&tree_sitter_bash::LANGUAGE.into())
                .map_err(|_| ParseError::Unavailable)?;
            *slot = Some(p);
        }
        let parser = slot.as_mut().ok_or(ParseError::Unavailable)?;
        let tree = parser.parse(text, None).ok_or(ParseError::Unavailable)?;
        let root = tree.root_node();
        if root.has_error() {
            let bad = first_error(root).unwrap_or(root);
            let what = if bad.is_missing() {
                format!("missing {}", bad.kind())
            } else {
                format!("unexpected {:?}", snippet(text, bad.start_byte()))
            };
            return Err(ParseError::Syntax {
                at: bad.start_byte(),
                what,
            });
        }
        let mut c = Converter {
            src: text.as_bytes(),
            original: original.as_bytes(),
            depth: 0,
        };
        Ok(Script {
            body: c.statements(root)?,
        })
    })
}

/// What one redirection node holds (see `Converter::redirect`).
#[derive(Default)]
struct RedirectParts {
    redirects: Vec<Redirect>,
    extra_words: Vec<Word>,
    /// The rest of the line: how it joins (`&&`, or a pipe when the bool is set) and what.
    continuation: Option<(ListOp, bool, Node)>,
}

/// `0>&1` read as a word after `>& /dev/tcp/h/p`: a descriptor duplication, not an argument.
fn is_descriptor(w: &Word) -> bool {
    !w.text.is_empty() && w.text.bytes().all(|b| b.is_ascii_digit())
}

/// tree-sitter-bash reads `x | y | z && w` as `x | (y | z && w)`; bash means
/// `(x | y | z) && w`. A list or pipeline can only be a pipeline stage through that misreading
/// (a real one needs braces or parentheses), so it is re-associated here.
fn pipeline_of(mut stages: Vec<Node>) -> Node {
    match stages.pop() {
        Some(Node::List(left, op, right)) => {
            stages.push(*left);
            Node::List(Box::new(pipeline_of(stages)), op, right)
        }
        Some(Node::Pipeline(inner)) => {
            stages.extend(inner);
            pipeline_of(stages)
        }
        Some(last) => {
            stages.push(last);
            if stages.len() == 1 {
                stages.pop().unwrap_or(Node::Group(Vec::new()))
            } else {
                Node::Pipeline(stages)
            }
        }
        None => Node::Group(Vec::new()),
    }
}

fn snippet(text: &str, at: usize) -> String {
    let mut end = (at + 20).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut start = at.min(end);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    text[start..end].to_string()
}

fn first_error(node: TsNode<'_>) -> Option<TsNode<'_>> {
    // Iterative, so hostile nesting cannot exhaust the stack.
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.is_error() || n.is_missing() {
            return Some(n);
        }
        if n.has_error() {
            let count = n.child_count();
            for i in (0..count).rev() {
                if let Some(c) = n.child(i) {
                    stack.push(c);
                }
            }
        }
    }
    None
}

struct Converter<'a> {
    src: &'a [u8],
    /// The text as written, when `src` had `<>` rewritten.
    original: &'a [u8],
    depth: usize,
}

impl Converter<'_> {
    /// Source between two children of a quoted word, as the word's content.
    fn gap(&self, from: usize, to: usize, heredoc: bool) -> String {
        let text = std::str::from_utf8(self.src.get(from..to).unwrap_or(&[])).unwrap_or("");
        if heredoc {
            text.to_string()
        } else {
            words::unescape_double(text)
        }
    }

    fn text(&self, n: TsNode<'_>) -> &str {
        std::str::from_utf8(&self.src[n.start_byte()..n.end_byte()]).unwrap_or("")
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err(ParseError::TooDeep)
        } else {
            Ok(())
        }
    }

    fn named<'t>(n: TsNode<'t>) -> Vec<TsNode<'t>> {
        let mut cursor = n.walk();
        n.named_children(&mut cursor)
            .filter(|c| c.kind() != "comment")
            .collect()
    }

    /// Every statement among `n`'s named children.
    fn statements(&mut self, n: TsNode<'_>) -> Result<Vec<Node>, ParseError> {
        let mut out = Vec::new();
        for c in Self::named(n) {
            if let Some(s) = self.statement(c)? {
                out.push(s);
            }
        }
        Ok(out)
    }

    fn statement(&mut self, n: TsNode<'_>) -> Result<Option<Node>, ParseError> {
        self.enter()?;
        let r = self.statement_inner(n);
        self.depth -= 1;
        r
    }

    fn statement_inner(&mut self, n: TsNode<'_>) -> Result<Option<Node>, ParseError> {
        let node = match n.kind() {
            "command" => Node::Command(self.command(n)?),
            "variable_assignment"
            | "variable_assignments"
            | "declaration_command"
            | "unset_command" => Node::Command(self.declaration(n)?),
            "pipeline" => pipeline_of(self.statements(n)?),
            "list" => self.list(n)?,
            "subshell" => Node::Subshell(self.statements(n)?),
            "compound_statement" | "do_group" => Node::Group(self.statements(n)?),
            "if_statement" | "elif_clause" | "else_clause" => Node::If(self.all_statements(n)?),
            "while_statement" => {
                let kind = if self.text(n).trim_start().starts_with("until") {
                    LoopKind::Until
                } else {
                    LoopKind::While
                };
                Node::Loop(kind, Vec::new(), self.all_statements(n)?)
            }
            "for_statement" => {
                let kind = if self.text(n).trim_start().starts_with("select") {
                    LoopKind::Select
                } else {
                    LoopKind::For
                };
                let mut header = Vec::new();
                let mut cursor = n.walk();
                for v in n.children_by_field_name("value", &mut cursor) {
                    header.push(self.word(v)?);
                }
                let body = match n.child_by_field_name("body") {
                    Some(b) => self.statements(b)?,
                    None => Vec::new(),
                };
                Node::Loop(kind, header, body)
            }
            "c_style_for_statement" => {
                let words = self.words_in(n)?;
                let body = match n.child_by_field_name("body") {
                    Some(b) => self.statements(b)?,
                    None => Vec::new(),
                };
                Node::Loop(LoopKind::For, words, body)
            }
            "case_statement" => {
                let subject = match n.child_by_field_name("value") {
                    Some(v) => self.word(v)?,
                    None => Word::default(),
                };
                let mut arms = Vec::new();
                for item in Self::named(n)
                    .into_iter()
                    .filter(|c| c.kind() == "case_item")
                {
                    for s in Self::named(item) {
                        if !matches!(
                            s.kind(),
                            "word"
                                | "string"
                                | "raw_string"
                                | "concatenation"
                                | "extglob_pattern"
                                | "simple_expansion"
                                | "expansion"
                                | "number"
                        ) && let Some(st) = self.statement(s)?
                        {
                            arms.push(st);
                        }
                    }
                }
                Node::Case(subject, arms)
            }
            "function_definition" => {
                let name = n
                    .child_by_field_name("name")
                    .map(|x| self.text(x).to_string())
                    .unwrap_or_default();
                let body = match n.child_by_field_name("body") {
                    Some(b) => self.statement(b)?.into_iter().collect(),
                    None => Vec::new(),
                };
                Node::Function(name, body)
            }
            "negated_command" => match Self::named(n).first() {
                Some(&c) => Node::Negated(Box::new(
                    self.statement(c)?.unwrap_or(Node::Group(Vec::new())),
                )),
                None => return Ok(None),
            },
            "test_command" => Node::Test(self.words_in(n)?),
            "redirected_statement" => return self.redirected(n).map(Some),
            // `(( … ))` outside a test, bare arithmetic and the like: keep the words.
            "arithmetic_expansion"
            | "parenthesized_expression"
            | "binary_expression"
            | "unary_expression"
            | "postfix_expression"
            | "ternary_expression" => Node::Test(self.words_in(n)?),
            "heredoc_body"
            | "heredoc_start"
            | "heredoc_end"
            | "file_redirect"
            | "herestring_redirect"
            | "heredoc_redirect" => return Ok(None),
            other => {
                return Err(ParseError::Syntax {
                    at: n.start_byte(),
                    what: format!("unsupported construct {other}"),
                });
            }
        };
        Ok(Some(node))
    }

    /// Every statement anywhere under `n` (conditions and bodies of if/while).
    fn all_statements(&mut self, n: TsNode<'_>) -> Result<Vec<Node>, ParseError> {
        let mut out = Vec::new();
        for c in Self::named(n) {
            match c.kind() {
                "do_group" | "elif_clause" | "else_clause" => out.extend(self.all_statements(c)?),
                _ => {
                    if let Some(s) = self.statement(c)? {
                        out.push(s);
                    }
                }
            }
        }
        Ok(out)
    }

    fn list(&mut self, n: TsNode<'_>) -> Result<Node, ParseError> {
        let count = n.child_count();
        let mut acc: Option<Node> = None;
        let mut op = ListOp::Seq;
        for i in 0..count {
            let Some(c) = n.child(i) else { continue };
            if !c.is_named() {
                op = match self.text(c) {
                    "&&" => ListOp::And,
                    "||" => ListOp::Or,
                    "&" => ListOp::Background,
                    _ => ListOp::Seq,
                };
                continue;
            }
            if c.kind() == "comment" {
                continue;
            }
            let Some(stmt) = self.statement(c)? else {
                continue;
            };
            acc = Some(match acc {
                None => stmt,
                Some(left) => Node::List(Box::new(left), op, Box::new(stmt)),
            });
        }
        Ok(acc.unwrap_or(Node::Group(Vec::new())))
    }

    fn command(&mut self, n: TsNode<'_>) -> Result<SimpleCommand, ParseError> {
        let mut cmd = SimpleCommand {
            span: (n.start_byte(), n.end_byte()),
            ..SimpleCommand::default()
        };
        for c in Self::named(n) {
            match c.kind() {
                "variable_assignment" => cmd.assignments.push(self.assignment(c)?),
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {
                    let r = self.redirect(c)?;
                    cmd.redirects.extend(r.redirects);
                    cmd.words.extend(r.extra_words);
                    if r.continuation.is_some() {
                        return Err(ParseError::Syntax {
                            at: c.start_byte(),
                            what: "a command continues inside a here-document".into(),
                        });
                    }
                }
                "command_name" => {
                    let inner = Self::named(c).into_iter().next().unwrap_or(c);
                    cmd.words.push(self.word(inner)?);
                }
                _ => cmd.words.push(self.word(c)?),
            }
        }
        Ok(cmd)
    }

    fn declaration(&mut self, n: TsNode<'_>) -> Result<SimpleCommand, ParseError> {
        let mut cmd = SimpleCommand {
            span: (n.start_byte(), n.end_byte()),
            ..SimpleCommand::default()
        };
        if matches!(n.kind(), "declaration_command" | "unset_command") {
            // The keyword (export, local, declare, readonly, typeset, unset).
            if let Some(k) = n.child(0) {
                cmd.words.push(Word::literal(self.text(k)));
            }
        }
        if n.kind() == "variable_assignment" {
            cmd.assignments.push(self.assignment(n)?);
            return Ok(cmd);
        }
        for c in Self::named(n) {
            if c.kind() == "variable_assignment" {
                let (name, value) = self.assignment(c)?;
                let mut w = Word {
                    text: format!("{name}={}", value.text),
                    dynamic: value.dynamic,
                    substitutions: value.substitutions.clone(),
                    span: value.span,
                    elements: None,
                };
                if cmd.words.is_empty() {
                    cmd.assignments.push((name, value));
                } else {
                    cmd.assignments.push((name, value));
                    w.span = (c.start_byte(), c.end_byte());
                    cmd.words.push(w);
                }
            } else if !cmd.words.is_empty() {
                cmd.words.push(self.word(c)?);
            }
        }
        Ok(cmd)
    }

    fn assignment(&mut self, n: TsNode<'_>) -> Result<(String, Word), ParseError> {
        let name = n
            .child_by_field_name("name")
            .map(|x| self.text(x).to_string())
            .unwrap_or_default();
        let value = match n.child_by_field_name("value") {
            Some(v) => self.word(v)?,
            None => Word::default(),
        };
        Ok((name, value))
    }

    fn redirected(&mut self, n: TsNode<'_>) -> Result<Node, ParseError> {
        let body = n.child_by_field_name("body");
        let mut redirects = Vec::new();
        let mut extra: Vec<Word> = Vec::new();
        let mut continuation: Option<(ListOp, bool, Node)> = None;
        for c in Self::named(n) {
            if Some(c) == body {
                continue;
            }
            if matches!(
                c.kind(),
                "file_redirect" | "herestring_redirect" | "heredoc_redirect"
            ) {
                let r = self.redirect(c)?;
                redirects.extend(r.redirects);
                extra.extend(r.extra_words);
                if r.continuation.is_some() {
                    continuation = r.continuation;
                }
            }
        }
        let inner = match body {
            Some(b) => self.statement(b)?.unwrap_or(Node::Group(Vec::new())),
            None => Node::Group(Vec::new()),
        };
        let node = match inner {
            Node::Command(mut cmd) => {
                // `rm 2>/dev/null -rf ~`: tree-sitter hangs the words after a redirection
                // on the redirection; they are the command's arguments.
                cmd.words.extend(extra);
                cmd.redirects.extend(redirects);
                Node::Command(cmd)
            }
            _ if !extra.is_empty() => {
                return Err(ParseError::Syntax {
                    at: n.start_byte(),
                    what: "words after a redirection of a compound command".into(),
                });
            }
            other if redirects.is_empty() => other,
            other => Node::Redirected(Box::new(other), redirects),
        };
        Ok(match continuation {
            // `cat <<EOF | sh`: tree-sitter hangs the rest of the line off the here-doc.
            Some((_, true, Node::Pipeline(stages))) => {
                let mut all = vec![node];
                all.extend(stages);
                pipeline_of(all)
            }
            Some((_, true, other)) => pipeline_of(vec![node, other]),
            Some((op, false, other)) => Node::List(Box::new(node), op, Box::new(other)),
            None => node,
        })
    }

    /// One redirection node. A here-document node can also carry, in tree-sitter's tree,
    /// further redirections of the same command (`cat <<EOF >> f`) and the rest of the line
    /// after it (`psql <<EOF && true`, `cat <<EOF | sh`); a file redirection can carry the
    /// command's next words (`rm 2>/dev/null -rf ~`).
    fn redirect(&mut self, n: TsNode<'_>) -> Result<RedirectParts, ParseError> {
        let mut fd = None;
        let mut op = String::new();
        let mut target = Word::default();
        let mut body = None;
        let mut have_target = false;
        let mut out = RedirectParts::default();
        let mut joiner: Option<(ListOp, bool)> = None;
        let count = n.child_count();
        for i in 0..count {
            let Some(c) = n.child(i) else { continue };
            match c.kind() {
                "file_descriptor" => fd = self.text(c).parse().ok(),
                "heredoc_start" => {
                    op = "<<".into();
                    target = Word::literal(
                        self.text(c)
                            .trim_matches(|ch| ch == '\'' || ch == '"' || ch == '-'),
                    );
                }
                "heredoc_body" => body = Some(self.word(c)?),
                "heredoc_end" => {}
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {
                    let nested = self.redirect(c)?;
                    out.redirects.extend(nested.redirects);
                    out.extra_words.extend(nested.extra_words);
                }
                "pipeline"
                | "list"
                | "command"
                | "redirected_statement"
                | "subshell"
                | "compound_statement"
                | "if_statement"
                | "while_statement"
                | "for_statement"
                | "negated_command" => {
                    if let Some(st) = self.statement(c)? {
                        // `| sh` arrives as a pipeline node holding the `|` itself.
                        let (op, pipe) = joiner.unwrap_or((ListOp::Seq, c.kind() == "pipeline"));
                        out.continuation = Some((op, pipe, st));
                    }
                }
                _ if !c.is_named() => {
                    let t = match self.original.get(c.start_byte()..c.end_byte()) {
                        Some(b"<>") => "<>",
                        _ => self.text(c),
                    };
                    match t {
                        "|" | "|&" => joiner = Some((ListOp::Seq, true)),
                        "&&" => joiner = Some((ListOp::And, false)),
                        "||" => joiner = Some((ListOp::Or, false)),
                        ";" | "\n" => joiner = Some((ListOp::Seq, false)),
                        "&" if !op.is_empty() => joiner = Some((ListOp::Background, false)),
                        _ if op.is_empty()
                            && (t.starts_with('<') || t.starts_with('>') || t.starts_with('&')) =>
                        {
                            op = t.to_string();
                        }
                        _ => {}
                    }
                }
                _ => {
                    let w = self.word(c)?;
                    if n.kind() == "herestring_redirect" {
                        op = "<<<".into();
                        body = Some(w);
                    } else if !have_target {
                        target = w;
                        have_target = true;
                    } else if !is_descriptor(&w) {
                        out.extra_words.push(w);
                    }
                }
            }
        }
        out.redirects.insert(
            0,
            Redirect {
                op,
                fd,
                target,
                body,
            },
        );
        Ok(out)
    }

    /// Words appearing anywhere under `n`, for tests and arithmetic.
    fn words_in(&mut self, n: TsNode<'_>) -> Result<Vec<Word>, ParseError> {
        let mut out = Vec::new();
        for c in Self::named(n) {
            match c.kind() {
                "word"
                | "string"
                | "raw_string"
                | "ansi_c_string"
                | "concatenation"
                | "simple_expansion"
                | "expansion"
                | "command_substitution"
                | "process_substitution"
                | "number" => out.push(self.word(c)?),
                "test_operator" | "regex" | "variable_name" => {}
                _ => {
                    self.enter()?;
                    let inner = self.words_in(c);
                    self.depth -= 1;
                    out.extend(inner?);
                }
            }
        }
        Ok(out)
    }

    /// A word node's value.
    fn word(&mut self, n: TsNode<'_>) -> Result<Word, ParseError> {
        self.enter()?;
        let mut w = Word {
            span: (n.start_byte(), n.end_byte()),
            ..Word::default()
        };
        let r = self.word_into(n, &mut w, false);
        self.depth -= 1;
        r.map(|()| w)
    }

    fn word_into(&mut self, n: TsNode<'_>, w: &mut Word, quoted: bool) -> Result<(), ParseError> {
        match n.kind() {
            "word" | "number" | "command_name" | "extglob_pattern" | "regex" | "variable_name"
            | "file_descriptor" => {
                let t = self.text(n);
                if n.named_child_count() > 0 && n.kind() == "number" {
                    for c in Self::named(n) {
                        self.word_into(c, w, quoted)?;
                    }
                } else if quoted {
                    w.text.push_str(t);
                } else {
                    w.text.push_str(&words::unescape_bare(t));
                }
            }
            "raw_string" => {
                let t = self.text(n);
                w.text.push_str(
                    t.strip_prefix('\'')
                        .and_then(|x| x.strip_suffix('\''))
                        .unwrap_or(t),
                );
            }
            "ansi_c_string" => {
                let t = self.text(n);
                let inner = t
                    .strip_prefix("$'")
                    .and_then(|x| x.strip_suffix('\''))
                    .unwrap_or(t);
                w.text.push_str(&words::ansi_c(inner));
            }
            "string" | "translated_string" | "heredoc_body" => {
                let count = n.child_count();
                let heredoc = n.kind() == "heredoc_body";
                // Inside quotes, the text between the children tree-sitter names (a newline,
                // a lone `$`) is content too: `psql -c "-- note⏎DROP TABLE t"` must keep its
                // newline, or the DROP reads as part of the comment.
                let (open, close) = if heredoc {
                    (None, None)
                } else {
                    let t = self.text(n);
                    let open = if t.starts_with("$\"") { 2 } else { 1 };
                    let close = usize::from(t.len() > open && t.ends_with('"'));
                    (
                        Some(n.start_byte() + open),
                        Some(n.end_byte().saturating_sub(close)),
                    )
                };
                let mut last_end = open;
                let mut named = 0;
                for i in 0..count {
                    let Some(c) = n.child(i) else { continue };
                    if !c.is_named() {
                        continue;
                    }
                    named += 1;
                    // Text between children that tree-sitter does not name is literal content.
                    if let Some(le) = last_end
                        && c.start_byte() > le
                    {
                        w.text.push_str(&self.gap(le, c.start_byte(), heredoc));
                    }
                    match c.kind() {
                        "string_content" | "heredoc_content" => {
                            w.text.push_str(&words::unescape_double(self.text(c)))
                        }
                        _ => self.word_into(c, w, true)?,
                    }
                    last_end = Some(c.end_byte());
                }
                if named > 0
                    && let (Some(le), Some(end)) = (last_end, close)
                    && end > le
                {
                    w.text.push_str(&self.gap(le, end, heredoc));
                }
                if count == 0 || n.named_child_count() == 0 {
                    let t = self.text(n);
                    if n.kind() == "heredoc_body" {
                        w.text.push_str(t);
                    } else {
                        let inner = t
                            .strip_prefix('"')
                            .and_then(|x| x.strip_suffix('"'))
                            .unwrap_or("");
                        w.text.push_str(&words::unescape_double(inner));
                    }
                }
            }
            "array" => {
                // Each element is a word of its own; the text keeps them apart by spaces.
                let mut elements = Vec::new();
                for c in Self::named(n) {
                    let e = self.word(c)?;
                    if !w.text.is_empty() {
                        w.text.push(' ');
                    }
                    w.text.push_str(&e.text);
                    w.dynamic |= e.dynamic;
                    w.substitutions.extend(e.substitutions.iter().cloned());
                    elements.push(e);
                }
                w.elements = Some(elements);
            }
            "concatenation" | "brace_expression" => {
                for c in Self::named(n) {
                    self.word_into(c, w, quoted)?;
                }
                if n.kind() == "brace_expression" || n.named_child_count() == 0 {
                    w.text.push_str(self.text(n));
                }
            }
            "simple_expansion" | "expansion" | "arithmetic_expansion" => {
                w.dynamic = true;
                w.text.push_str(self.text(n));
                // `${x:-$(cmd)}` and `$(( $(cmd) ))` run commands too.
                self.nested_substitutions(n, w)?;
            }
            "command_substitution" | "process_substitution" => {
                w.dynamic = true;
                w.text.push_str(if n.kind() == "process_substitution" {
                    "/dev/fd/63"
                } else {
                    "$(…)"
                });
                self.enter()?;
                let body = self.statements(n);
                self.depth -= 1;
                w.substitutions.extend(body?);
            }
            "special_variable_name" => {
                w.dynamic = true;
                w.text.push_str(self.text(n));
            }
            _ => {
                // Unknown word shapes keep their source text and are treated as run-time values.
                w.dynamic = true;
                w.text.push_str(self.text(n));
                self.nested_substitutions(n, w)?;
            }
        }
        Ok(())
    }

    fn nested_substitutions(&mut self, n: TsNode<'_>, w: &mut Word) -> Result<(), ParseError> {
        let mut stack: Vec<TsNode<'_>> = Self::named(n);
        while let Some(c) = stack.pop() {
            if matches!(c.kind(), "command_substitution" | "process_substitution") {
                self.enter()?;
                let body = self.statements(c);
                self.depth -= 1;
                w.substitutions.extend(body?);
            } else {
                stack.extend(Self::named(c));
            }
        }
        Ok(())
    }
}
