//! Every attack payload in the PayloadsAllTheThings SSRF corpus must be refused.
//!
//! Data: `tests/data/ssrf_payloads.jsonl` (MIT, see `tests/data/PayloadsAllTheThings-MIT.txt`),
//! 621 URLs annotated by class. Rows of class `other` are context URLs from a cloud
//! cheat-sheet; the rest are attacks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bulwark_net::{DEFAULT_SCHEMES, assess};
use serde_json::Value;

/// Open-redirect services whose path does not reveal the target: no parser can see the
/// internal address, so the connector must re-check every redirect hop instead.
const REDIRECT_ONLY: &[&str] = &[
    "http://nicob.net/redir6a",
    "http://nicob.net/redir-http-169.254.169.254:80-",
];

fn rows() -> Vec<Value> {
    include_str!("data/ssrf_payloads.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn every_attack_payload_is_refused() {
    let mut missed = Vec::new();
    let mut total = 0;
    for row in rows() {
        let class = row["class"].as_str().unwrap();
        let url = row["url"].as_str().unwrap();
        if class == "other" || REDIRECT_ONLY.contains(&url) {
            continue;
        }
        total += 1;
        if assess(url, DEFAULT_SCHEMES, |_| false).finding.is_none() {
            missed.push(format!("{class}: {url}"));
        }
    }
    assert!(total > 590, "corpus shrank: {total}");
    assert!(
        missed.is_empty(),
        "{} of {total} attack payloads passed:\n{}",
        missed.len(),
        missed.join("\n")
    );
}

#[test]
fn whatwg_internal_hosts_agree_with_the_annotation() {
    // Where the corpus says the WHATWG host is internal, our WHATWG reading must say so too.
    for row in rows() {
        if row["whatwg_host_internal"] != Value::Bool(true) {
            continue;
        }
        let url = row["url"].as_str().unwrap();
        let d = bulwark_net::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert!(
            d.host.class().is_internal()
                || d.scheme
                    .as_deref()
                    .is_some_and(|s| !DEFAULT_SCHEMES.contains(&s)),
            "{url}: {:?}",
            d.host
        );
    }
}

#[test]
fn context_urls_for_public_services_pass() {
    for url in [
        "https://www.googleapis.com/auth/compute",
        "https://www.googleapis.com/oauth2/v1/tokeninfo?access_token=ya29.XXXXXKuXXXXXXXkGT0rJSA",
        "http://ⓔⓧⓐⓜⓟⓛⓔ.ⓒⓞⓜ",
        "http://ß.localdomain.pw/",
    ] {
        let a = assess(url, DEFAULT_SCHEMES, |_| false);
        assert!(a.finding.is_none(), "{url}: {:?}", a.finding);
    }
    for url in [
        "http://192.0.0.192/latest/",
        "http://rancher-metadata/",
        "http://foo/containers/json",
        "http://${AWS_LAMBDA_RUNTIME_API}/2018-06-01/runtime/invocation/next",
    ] {
        assert!(
            assess(url, DEFAULT_SCHEMES, |_| false).finding.is_some(),
            "{url}"
        );
    }
}

#[test]
fn look_alike_public_names_pass() {
    for url in [
        "https://fcc.gov/",
        "https://fd.io/",
        "https://fe80.example.com/",
        "fc00.example.net",
        "https://ff02.org",
        "http://100.128.0.1/",
        "https://172.32.0.1/",
        "https://[2606:4700:4700::1111]/",
    ] {
        let a = assess(url, DEFAULT_SCHEMES, |_| false);
        assert!(a.finding.is_none(), "{url}: {:?}", a.finding);
    }
}
