//! A fast path for the plainest command lines: words of ordinary characters, single and
//! double quotes without expansions, joined by `|`, `&&`, `||` and `;`.
//!
//! Most commands an agent runs (`git status`, `ls -la src`, `cargo test -p x | tail`) are
//! like this, and reading them needs no grammar; tree-sitter costs tens of microseconds per
//! call. Anything outside the subset — a `$`, a backslash, a redirection, a bracket, a glob,
//! a comment, a newline, a keyword, an assignment, non-ASCII text — returns `None` and the
//! full parser reads it. A test checks that both produce the same tree for every line the
//! fast path accepts.

use crate::ast::{ListOp, Node, Script, SimpleCommand, Word};

const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "in", "function", "select", "time", "coproc", "!", "{", "}", "[[", "]]", "export", "declare",
    "local", "readonly", "typeset", "unset",
];

enum Tok {
    Word(Word),
    Op(&'static str),
}

/// Parses `text` if it is in the plain subset.
pub(crate) fn parse(text: &str) -> Option<Script> {
    if text.len() > 4096 || !text.is_ascii() {
        return None;
    }
    let b = text.as_bytes();
    let mut toks: Vec<Tok> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' => i += 1,
            b'|' | b'&' | b';' => {
                let two = b.get(i + 1).copied();
                let op = match (c, two) {
                    (b'|', Some(b'|')) => "||",
                    (b'&', Some(b'&')) => "&&",
                    (b'|', Some(b'&')) | (b'&', _) => return None,
                    (b';', Some(b';' | b'&')) => return None,
                    (b'|', _) => "|",
                    _ => ";",
                };
                i += op.len();
                toks.push(Tok::Op(op));
            }
            _ => {
                let start = i;
                let mut text_out = String::new();
                while i < b.len() {
                    match b[i] {
                        b' ' | b'\t' | b'|' | b'&' | b';' => break,
                        b'\'' => {
                            let end = b[i + 1..].iter().position(|&x| x == b'\'')?;
                            text_out.push_str(&text[i + 1..i + 1 + end]);
                            i += end + 2;
                        }
                        b'"' => {
                            let end = b[i + 1..].iter().position(|&x| x == b'"')?;
                            let inner = &text[i + 1..i + 1 + end];
                            if inner
                                .bytes()
                                .any(|x| matches!(x, b'$' | b'`' | b'\\' | b'!' | b'\n' | b'\r'))
                            {
                                return None;
                            }
                            text_out.push_str(inner);
                            i += end + 2;
                        }
                        x if x.is_ascii_alphanumeric()
                            || matches!(
                                x,
                                b'-' | b'_'
                                    | b'.'
                                    | b'/'
                                    | b':'
                                    | b','
                                    | b'@'
                                    | b'%'
                                    | b'+'
                                    | b'^'
                                    | b'='
                            ) =>
                        {
                            text_out.push(x as char);
                            i += 1;
                        }
                        // `~` and the rest: tree-sitter reads them in more than one way.
                        _ => return None,
                    }
                }
                toks.push(Tok::Word(Word {
                    text: text_out,
                    dynamic: false,
                    substitutions: Vec::new(),
                    span: (start, i),
                    elements: None,
                }));
            }
        }
    }
    // statements := list (';' list)* ; list := pipeline (('&&'|'||') pipeline)*
    let mut body = Vec::new();
    let mut list: Option<Node> = None;
    let mut pending_op: Option<ListOp> = None;
    let mut stages: Vec<Node> = Vec::new();
    let mut words: Vec<Word> = Vec::new();
    let flush_cmd = |words: &mut Vec<Word>, stages: &mut Vec<Node>| -> Option<()> {
        if words.is_empty() {
            return None;
        }
        // A first word with `=` is an assignment; declaration keywords parse differently.
        if RESERVED.contains(&words[0].text.as_str()) || words[0].text.contains('=') {
            return None;
        }
        let span = (words[0].span.0, words[words.len() - 1].span.1);
        stages.push(Node::Command(SimpleCommand {
            assignments: Vec::new(),
            words: std::mem::take(words),
            redirects: Vec::new(),
            span,
        }));
        Some(())
    };
    let finish_pipeline = |stages: &mut Vec<Node>| -> Node {
        if stages.len() == 1 {
            stages.pop().unwrap_or(Node::Group(Vec::new()))
        } else {
            Node::Pipeline(std::mem::take(stages))
        }
    };
    let mut toks = toks.into_iter().peekable();
    while let Some(t) = toks.next() {
        match t {
            Tok::Word(w) => words.push(w),
            Tok::Op("|") => {
                flush_cmd(&mut words, &mut stages)?;
                toks.peek()?;
            }
            Tok::Op(op @ ("&&" | "||")) => {
                flush_cmd(&mut words, &mut stages)?;
                toks.peek()?;
                let p = finish_pipeline(&mut stages);
                list = Some(match (list.take(), pending_op.take()) {
                    (Some(l), Some(o)) => Node::List(Box::new(l), o, Box::new(p)),
                    _ => p,
                });
                pending_op = Some(if op == "&&" { ListOp::And } else { ListOp::Or });
            }
            Tok::Op(_) => {
                flush_cmd(&mut words, &mut stages)?;
                let p = finish_pipeline(&mut stages);
                body.push(match (list.take(), pending_op.take()) {
                    (Some(l), Some(o)) => Node::List(Box::new(l), o, Box::new(p)),
                    _ => p,
                });
            }
        }
    }
    if !words.is_empty() {
        flush_cmd(&mut words, &mut stages)?;
    }
    if !stages.is_empty() {
        let p = finish_pipeline(&mut stages);
        body.push(match (list.take(), pending_op.take()) {
            (Some(l), Some(o)) => Node::List(Box::new(l), o, Box::new(p)),
            _ => p,
        });
    } else if list.is_some() || pending_op.is_some() {
        return None;
    }
    if body.is_empty() {
        return None;
    }
    Some(Script { body })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path and tree-sitter agree on every line the fast path accepts.
    #[test]
    fn agrees_with_the_full_parser() {
        let lines = [
            "git status",
            "ls -la src",
            "cargo test -p bulwark-shell | tail -n 20",
            "git add . && git commit -m 'fix: tests' || echo failed",
            "a; b; c",
            "a && b || c && d",
            "echo \"hello world\" 'and more'",
            "a'b'\"c\"d",
            "echo '' \"\"",
            "npm run build --prefix ./web",
            "curl -fsSL https://example.com/install.sh | sh",
            "rm -rf ./build",
            "git push origin feature/x",
            "x | y | z && w",
            "echo '$HOME' \"a b\"",
            "kubectl get pods -n prod -o wide",
            "a;",
            "cmd --opt=1",
            "echo '#not a comment'",
        ];
        for l in lines {
            let fast = parse(l);
            let full = crate::parse::parse(l).ok();
            if let Some(f) = &fast {
                assert_eq!(Some(f), full.as_ref(), "{l}");
            }
        }
        assert!(parse("git status").is_some());
        for l in [
            "echo $HOME",
            "a > b",
            "a & b",
            "if x; then y; fi",
            "a\nb",
            "echo *",
            "x=1 y",
            "ls ~",
            "| a",
            "a &&",
            "a ||",
        ] {
            assert!(parse(l).is_none(), "{l}");
        }
    }
}
