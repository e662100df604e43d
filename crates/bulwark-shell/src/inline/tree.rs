//! tree-sitter plumbing shared by the Python and JavaScript readers: one reused parser per
//! thread and grammar, syntax errors refused (any `ERROR` or `MISSING` node, as for bash:
//! tree-sitter's recovery is a guess, not an analysis), and small node helpers.

use std::cell::RefCell;

use tree_sitter::{Language, Node, Parser, Tree};

/// A grammar this module parses with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grammar {
    Python,
    JavaScript,
}

thread_local! {
    // tree-sitter parsers are not `Sync`; one per thread and grammar, reused.
    static PARSERS: RefCell<[Option<Parser>; 2]> = const { RefCell::new([None, None]) };
}

/// Parses `code`, or says where it is not valid.
pub(crate) fn parse(code: &str, g: Grammar) -> Result<Tree, String> {
    PARSERS.with(|cell| {
        let mut slots = cell.borrow_mut();
        let slot = &mut slots[g as usize];
        if slot.is_none() {
            let lang: Language = match g {
                Grammar::Python => tree_sitter_python::LANGUAGE.into(),
                Grammar::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            };
            let mut p = Parser::new();
            p.set_language(&lang)
                .map_err(|e| format!("the {g:?} parser is unavailable: {e}"))?;
            *slot = Some(p);
        }
        let parser = slot
            .as_mut()
            .ok_or_else(|| format!("the {g:?} parser is unavailable"))?;
        let tree = parser
            .parse(code, None)
            .ok_or_else(|| format!("the {g:?} parser gave up"))?;
        let root = tree.root_node();
        if root.has_error() {
            let at = first_error(root).map_or(0, |n| n.start_byte());
            return Err(format!(
                "{g:?} syntax error at byte {at}: {:?}",
                snippet(code, at)
            ));
        }
        Ok(tree)
    })
}

fn first_error(node: Node<'_>) -> Option<Node<'_>> {
    // Iterative, so hostile nesting cannot exhaust the stack.
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.is_error() || n.is_missing() {
            return Some(n);
        }
        if n.has_error() {
            for i in (0..n.child_count()).rev() {
                if let Some(c) = n.child(i) {
                    stack.push(c);
                }
            }
        }
    }
    None
}

fn snippet(text: &str, at: usize) -> String {
    text.get(at..)
        .unwrap_or("")
        .chars()
        .take(24)
        .collect::<String>()
}

/// A node's source text.
pub(crate) fn text<'a>(n: Node<'_>, src: &'a str) -> &'a str {
    src.get(n.start_byte()..n.end_byte()).unwrap_or("")
}

/// A node's named children.
pub(crate) fn named(n: Node<'_>) -> Vec<Node<'_>> {
    let mut c = n.walk();
    n.named_children(&mut c).collect()
}

/// A node's children, named or not.
pub(crate) fn all(n: Node<'_>) -> Vec<Node<'_>> {
    let mut c = n.walk();
    n.children(&mut c).collect()
}

/// Backslash escapes common to Python and JavaScript string literals (`\n`, `\x41`,
/// `\u0041`, `\u{41}`, `\101`); an unknown escape is the character itself.
pub(crate) fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = it.next() else { break };
        let hex = |n: usize, it: &mut std::iter::Peekable<std::str::Chars<'_>>| {
            let h: String = (0..n).filter_map(|_| it.next()).collect();
            u32::from_str_radix(&h, 16).ok().and_then(char::from_u32)
        };
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match it.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            it.next();
                        }
                        None => break,
                    }
                }
                out.extend(char::from_u32(v));
            }
            'x' => out.extend(hex(2, &mut it)),
            'u' if it.peek() == Some(&'{') => {
                it.next();
                let h: String = it.by_ref().take_while(|c| *c != '}').collect();
                out.extend(u32::from_str_radix(&h, 16).ok().and_then(char::from_u32));
            }
            'u' => out.extend(hex(4, &mut it)),
            'U' => out.extend(hex(8, &mut it)),
            '\n' => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(unescape(r"\x72\x6d \u002drf \u{2f}\101"), "rm -rf /A");
        assert_eq!(unescape(r"a\'b\\c"), r"a'b\c");
    }

    #[test]
    fn syntax_errors_are_refused() {
        assert!(parse("print(1", Grammar::Python).is_err());
        assert!(parse("console.log(", Grammar::JavaScript).is_err());
        assert!(parse("print(1)", Grammar::Python).is_ok());
    }
}
