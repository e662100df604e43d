//! Prints tree-sitter's tree for a command (a development aid).
#![allow(clippy::unwrap_used, missing_docs)]
fn main() {
    let text = std::env::args().nth(1).unwrap_or_default();
    let mut p = tree_sitter::Parser::new();
    p.set_language(&tree_sitter_bash::LANGUAGE.into()).unwrap();
    let t = p.parse(&text, None).unwrap();
    println!("{}", t.root_node().to_sexp());
}
