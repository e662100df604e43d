//! Bulwark's command analyser (WIP).
pub mod ast;
pub mod parse;
pub mod words;
pub use ast::*;
pub use parse::{ParseError, parse};
