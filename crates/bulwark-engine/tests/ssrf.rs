//! No internal address in any spelling gets through the engine as a public one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bulwark_engine::ReasonCode;
use common::Harness;
use serde_json::{Value, json};

const REDIRECT_ONLY: &[&str] = &[
    "http://nicob.net/redir6a",
    "http://nicob.net/redir-http-169.254.169.254:80-",
];

#[test]
fn every_corpus_attack_is_blocked_through_fetch_and_through_shell() {
    let rows: Vec<Value> = include_str!("../../bulwark-net/tests/data/ssrf_payloads.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The destinations stage on its own (no content scanner) must refuse every payload with
    // SSRF_BLOCK; the full engine must block each one (some URLs also carry a userinfo
    // password, which the content stage blocks first).
    let mut h = Harness::default_policy();
    h.engine = h
        .engine
        .clone()
        .with_scanner(std::sync::Arc::new(bulwark_engine::NoScanner));
    let mut full = Harness::default_policy();
    let mut n = 0;
    for (i, row) in rows.iter().enumerate() {
        let url = row["url"].as_str().unwrap();
        if row["class"] == "other" || REDIRECT_ONLY.contains(&url) {
            continue;
        }
        n += 1;
        let d = h.req(&format!("f{i}"), "fetch", json!({"url": url}));
        assert_eq!(
            d.reason_code,
            Some(ReasonCode::SsrfBlock),
            "fetch {url}: {d:?}"
        );
        let d = full.req(&format!("f{i}"), "fetch", json!({"url": url}));
        assert_eq!(
            d.decision,
            bulwark_engine::Verdict::Block,
            "fetch {url} (full engine): {d:?}"
        );
        if !url.contains([
            '\'', '`', '\\', '$', '"', ' ', '<', '>', '|', ';', '&', '(', ')', '\n', '\t',
        ]) {
            // A command runs on the user's machine, where loopback and private hosts are
            // the user's own services: metadata services, link-local and rebinding names
            // are refused, the rest recorded as internal. Nothing passes as public.
            let d = h.req(
                &format!("b{i}"),
                "bash",
                json!({"command": format!("curl -s {url}")}),
            );
            let recorded = d
                .findings
                .iter()
                .any(|f| f.rule_id == "net.internal_destination");
            assert!(
                d.reason_code == Some(ReasonCode::SsrfBlock) || recorded,
                "curl {url}: {d:?}"
            );
        }
    }
    assert!(n > 590);
}

#[test]
fn internal_addresses_in_every_spelling() {
    let mut h = Harness::default_policy();
    let spellings = [
        "http://127.0.0.1/",
        "http://127.1/",
        "http://0x7f000001/",
        "http://2130706433/",
        "http://0177.0.0.1/",
        "http://0x7f.0.0.1/",
        "http://127.0.0.1./",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[0:0:0:0:0:ffff:7f00:1]/",
        "http://[::127.0.0.1]/",
        "http://[64:ff9b::7f00:1]/",
        "http://[2002:7f00:1::]/",
        "http://localhost/",
        "http://LOCALHOST./",
        "http://foo.localhost/",
        "http://%31%32%37.0.0.1/",
        "http://１２７.０.０.１/",
        "http://0/",
        "http://0.0.0.0/",
        "http://[::]/",
        "http://10.0.0.1/",
        "http://172.31.255.255/",
        "http://192.168.0.1/",
        "http://100.64.0.1/",
        "http://169.254.169.254/",
        "http://[fd00:ec2::254]/",
        "http://metadata.google.internal/",
        "http://169.254.169.254.nip.io/",
        "http://user@127.0.0.1/",
        "http://evil.com\\@127.0.0.1/",
        "http://127.0.0.1:80\\@evil.com/",
        "http://[fe80::1]/",
        "http://224.0.0.1/",
        "http://255.255.255.255/",
        "gopher://example.com/",
        "file:///etc/passwd",
        "http://127.0.0.1\t/",
        "http:127.0.0.1",
        "http:/127.0.0.1",
        "http:\\\\127.0.0.1",
    ];
    for (i, url) in spellings.iter().enumerate() {
        let d = h.req(&format!("s{i}"), "fetch", json!({"url": url}));
        assert_eq!(d.reason_code, Some(ReasonCode::SsrfBlock), "{url}: {d:?}");
    }
}
