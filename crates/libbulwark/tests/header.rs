//! `include/bulwark.h` must declare exactly the functions `src/abi.rs` defines, with the same
//! types: a C caller trusts the header, and nothing else would catch a drift.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

const HEADER: &str = include_str!("../include/bulwark.h");
const ABI: &str = include_str!("../src/abi.rs");

type Signature = (String, Vec<String>);

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Prototypes from the header: `ret name(type name, ...);` with comments removed.
fn header_functions() -> BTreeMap<String, Signature> {
    let mut text = String::new();
    let mut rest = HEADER;
    while let Some(i) = rest.find("/*") {
        text.push_str(&rest[..i]);
        rest = rest[i..].split_once("*/").map_or("", |(_, after)| after);
    }
    text.push_str(rest);
    let mut out = BTreeMap::new();
    for decl in text.split(';') {
        let decl = squash(decl);
        // What precedes the first prototype is preprocessor lines and the typedef.
        let decl = decl
            .rsplit_once('{')
            .map_or(decl.as_str(), |(_, d)| d)
            .trim();
        let Some(paren) = decl.find('(') else {
            continue;
        };
        if decl.contains('#') || decl.contains("typedef") {
            continue;
        }
        // The name is the identifier right before the parameter list.
        let head = &decl[..paren];
        let start = head
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let (ret, name) = head.split_at(start);
        let params = &decl[paren + 1..];
        let params = params.trim_end_matches(')');
        let params = params
            .split(',')
            .map(|p| {
                // Drop the parameter's name, keep its type.
                let p = p.trim();
                let cut = p.rfind(['*', ' ']).expect("a typed parameter");
                squash(&p[..=cut].replace('*', " * ")).replace("* *", "**")
            })
            .collect();
        let ret = squash(&ret.replace('*', " * "));
        out.insert(name.trim().to_string(), (ret, params));
    }
    out
}

/// The C spelling of a Rust FFI type.
fn c_type(rust: &str) -> String {
    let t = squash(rust);
    match t.as_str() {
        "*const c_char" => "const char *",
        "*mut c_char" => "char *",
        "*mut *mut c_char" => "char **",
        "*mut Handle" => "bulwark_engine *",
        "*const Handle" => "const bulwark_engine *",
        "" => "void",
        other => panic!("no C spelling for Rust type {other:?}; extend c_type"),
    }
    .to_string()
}

/// Signatures of the `extern "C"` functions in src/abi.rs.
fn rust_functions() -> BTreeMap<String, Signature> {
    let mut out = BTreeMap::new();
    for part in ABI.split("extern \"C\" fn ").skip(1) {
        let (name, rest) = part.split_once('(').expect("fn name(");
        let (params, rest) = rest.split_once(')').expect("fn params)");
        let ret = rest.split_once('{').expect("fn body").0.trim();
        let ret = ret.strip_prefix("->").unwrap_or(ret);
        let params = params
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|p| c_type(p.split_once(':').expect("name: type").1))
            .collect();
        out.insert(name.trim().to_string(), (c_type(ret), params));
    }
    out
}

#[test]
fn header_declares_what_the_library_exports() {
    let header = header_functions();
    let rust = rust_functions();
    assert_eq!(
        header.keys().collect::<Vec<_>>(),
        [
            "bulwark_engine_free",
            "bulwark_engine_new",
            "bulwark_evaluate",
            "bulwark_string_free"
        ],
        "the header declares exactly the four API functions"
    );
    assert_eq!(header, rust, "include/bulwark.h and src/abi.rs disagree");
}

#[test]
fn header_names_the_opaque_type() {
    assert!(HEADER.contains("typedef struct bulwark_engine bulwark_engine;"));
}

#[test]
fn the_checker_sees_a_drift() {
    // The comparison must be able to fail: a changed parameter type is noticed.
    let mut rust = rust_functions();
    let sig = rust
        .get_mut("bulwark_evaluate")
        .expect("bulwark_evaluate is exported");
    sig.1[1] = "char *".into();
    assert_ne!(header_functions(), rust);
}
