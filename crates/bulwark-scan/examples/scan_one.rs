//! Scans one argument (or standard input) and prints the findings.
#![allow(clippy::unwrap_used, missing_docs)]
fn main() {
    let text = std::env::args().nth(1).unwrap_or_default();
    let s = bulwark_scan::Scanner::new().unwrap();
    for scope in [bulwark_scan::Scope::Request, bulwark_scan::Scope::Response] {
        println!("{scope}: {:?}", s.scan(&text, scope));
    }
}
