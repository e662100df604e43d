//! Seed 000 (DefenseClaw Edge Connector): its evaluate example, the hash binding, unknown
//! tools, destinations, rate defaults, sequences and the verdict cache's TTL caps.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bulwark_engine::verdict_cache::{MAX_ALLOW_MS, MAX_BLOCK_MS, MAX_WARN_MS};
use bulwark_engine::{Call, CapSet, ReasonCode, ToolRef, Verdict};
use common::Harness;
use serde_json::json;

/// The seed's IPC example, as a `Call`, with its content replaced by a harmless payload so
/// the destination and rate checks can be seen (the example's own content, a bearer token,
/// is blocked by the content stage: see `content.rs`).
fn example() -> Call {
    let mut c = seed_example();
    c.args = json!({"content": "GET /v1/weather?city=Paris"});
    c
}

/// The seed's IPC example exactly.
fn seed_example() -> Call {
    let mut c = Call::request(
        "1",
        "call_api",
        json!({"content": "Authorization: Bearer sk-proj-abc123..."}),
    );
    c.tool = ToolRef {
        name: "call_api".into(),
        server: None,
        hash: Some("515c7731d6367104f1431af261488829f178f87e0930fb7ca77785ba3ef19129".into()),
    };
    c.declared_capabilities = CapSet::from_defenseclaw(8);
    c.destination = Some("1.1.1.1".into());
    c
}

#[test]
fn the_example_hash_is_sha256_of_the_name() {
    assert_eq!(
        bulwark_engine::canonical::sha256_hex(b"call_api"),
        "515c7731d6367104f1431af261488829f178f87e0930fb7ca77785ba3ef19129"
    );
}

#[test]
fn the_example_as_written_is_blocked_for_its_bearer_token() {
    let mut h = Harness::default_policy();
    let d = h.eval(&seed_example());
    assert_eq!(
        (d.decision, d.reason_code),
        (Verdict::Block, Some(ReasonCode::ContentBlock))
    );
    assert!(
        matches!(
            d.rule_id.as_deref(),
            Some("secret.bearer_token" | "secret.auth_header")
        ),
        "{d:?}"
    );
}

#[test]
fn the_example_call_is_mapped_by_the_default_pack() {
    let mut h = Harness::default_policy();
    let d = h.eval(&example());
    assert_ne!(d.reason_code, Some(ReasonCode::UnknownTool));
    assert_ne!(d.reason_code, Some(ReasonCode::HashMismatch));
    assert_eq!(d.capabilities.names(), vec!["net.egress"]);
    assert_eq!(d.destinations, vec!["1.1.1.1"]);
}

#[test]
fn a_wrong_hash_is_hash_mismatch() {
    let mut h = Harness::default_policy();
    let mut c = example();
    c.tool.hash = Some("515c7731d6367104f1431af261488829f178f87e0930fb7ca77785ba3ef19128".into());
    let d = h.eval(&c);
    assert_eq!(
        (d.decision, d.reason_code),
        (Verdict::Block, Some(ReasonCode::HashMismatch))
    );
    // Hash of a different tool.
    c.tool.name = "send_email".into();
    c.tool.hash = Some(bulwark_engine::canonical::sha256_hex(b"call_api"));
    assert_eq!(h.eval(&c).reason_code, Some(ReasonCode::HashMismatch));
    // Upper-case hex of the right hash is the same hash.
    c.tool.hash = Some(bulwark_engine::canonical::sha256_hex(b"send_email").to_uppercase());
    assert_ne!(h.eval(&c).reason_code, Some(ReasonCode::HashMismatch));
}

#[test]
fn declared_capabilities_are_replaced_by_the_mapping() {
    let mut h = Harness::default_policy();
    let mut c = example();
    // The caller claims call_api only reads sensors; the reviewed mapping says network.
    c.declared_capabilities = CapSet::from_defenseclaw(0x40);
    assert_eq!(h.eval(&c).capabilities.names(), vec!["net.egress"]);
}

#[test]
fn unknown_tools_fail_closed_when_policy_says_block() {
    let mut h = Harness::yaml("version: 1\nunknown_tools: { action: block }\n");
    let d = h.req("s", "frobnicate", json!({}));
    assert_eq!(
        (d.decision, d.reason_code),
        (Verdict::Block, Some(ReasonCode::UnknownTool))
    );
    // Catalogue names are known.
    assert_ne!(
        h.req("s", "Bash", json!({"command": "ls"})).reason_code,
        Some(ReasonCode::UnknownTool)
    );
}

#[test]
fn network_calls_need_a_destination() {
    let mut h = Harness::default_policy();
    let d = h.eval(&Call::request("s", "call_api", json!({})));
    assert_eq!(
        (d.decision, d.reason_code),
        (Verdict::Block, Some(ReasonCode::DestDeny))
    );
}

#[test]
fn seed_ssrf_targets_are_blocked() {
    let mut h = Harness::default_policy();
    for dest in [
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "127.0.0.1",
        "169.254.169.254",
        "metadata.google.internal",
        "[fe80::1]",
        "0177.0.0.1",
        "0x7f.1",
        "2130706433",
        "127.1",
    ] {
        let mut c = example();
        c.session = format!("ssrf-{dest}");
        c.destination = Some(dest.into());
        let d = h.eval(&c);
        assert_eq!(
            (d.decision, d.reason_code),
            (Verdict::Block, Some(ReasonCode::SsrfBlock)),
            "{dest}"
        );
    }
}

#[test]
fn hostnames_are_refused_when_policy_says_so_and_unlisted_is_dest_deny() {
    let mut h = Harness::yaml(
        "version: 1\ndestinations: { hostnames: false, allow: ['1.1.1.1', '203.0.113.0/24'] }\n",
    );
    let mut c = example();
    c.destination = Some("example.com".into());
    assert_eq!(h.eval(&c).reason_code, Some(ReasonCode::DestDeny));
    c.destination = Some("8.8.8.8".into());
    c.session = "2".into();
    assert_eq!(h.eval(&c).reason_code, Some(ReasonCode::DestDeny));
    c.destination = Some("1.1.1.1".into());
    c.session = "3".into();
    assert!(h.eval(&c).is_allowed());
}

#[test]
fn rate_defaults_are_60_calls_30_network_10_actuations_per_minute() {
    let mut h = Harness::default_policy();
    for i in 0..60 {
        let d = h.req("r", "read_file", json!({"path": format!("/tmp/{i}")}));
        assert!(d.is_allowed(), "call {i}: {d:?}");
    }
    let d = h.req("r", "read_file", json!({"path": "/tmp/x"}));
    assert_eq!(d.reason_code, Some(ReasonCode::RateLimit));
    assert_eq!(d.retry_after_ms, Some(1000));
    h.advance(1000);
    assert!(
        h.req("r", "read_file", json!({"path": "/tmp/y"}))
            .is_allowed()
    );

    let mut h = Harness::default_policy();
    for i in 0..30 {
        assert!(
            h.req(
                "n",
                "call_api",
                json!({"url": format!("https://example.com/{i}")})
            )
            .is_allowed(),
            "{i}"
        );
    }
    assert_eq!(
        h.req("n", "call_api", json!({"url": "https://example.com/x"}))
            .reason_code,
        Some(ReasonCode::RateLimit)
    );

    let mut h = Harness::default_policy();
    for i in 0..10 {
        assert!(
            h.req("a", "control_device", json!({"device": format!("lamp{i}")}))
                .is_allowed(),
            "{i}"
        );
    }
    assert_eq!(
        h.req("a", "control_device", json!({"device": "lamp"}))
            .reason_code,
        Some(ReasonCode::RateLimit)
    );
    // Other sessions have their own buckets.
    assert!(
        h.req("b", "control_device", json!({"device": "lamp"}))
            .is_allowed()
    );
}

#[test]
fn the_seed_sequence_blocks_shell_after_fetch_when_configured() {
    let mut h = Harness::yaml(
        "version: 1\nsequences:\n  - id: seq.fetch_then_shell\n    steps: [net.egress, exec.shell]\n",
    );
    assert!(h.eval(&example()).is_allowed());
    let d = h.req("1", "bash", json!({"command": "ls"}));
    assert_eq!(
        (d.decision, d.reason_code, d.rule_id.as_deref()),
        (
            Verdict::Block,
            Some(ReasonCode::CapSequence),
            Some("seq.fetch_then_shell")
        )
    );
}

#[test]
fn verdict_cache_ttl_caps() {
    let mut h = Harness::yaml(
        "version: 1\ntools:\n  lookup_stock: { capabilities: [net.egress], escalate: true }\n",
    );
    let hash: [u8; 32] = {
        use sha2::Digest;
        sha2::Sha256::digest(b"lookup_stock").into()
    };
    // Miss without a fleet: sync_block blocks with CLOUD_TIMEOUT.
    let d = h.req(
        "s",
        "lookup_stock",
        json!({"url": "https://api.example.com/q"}),
    );
    assert_eq!(d.reason_code, Some(ReasonCode::CloudTimeout));
    assert_eq!(
        h.state.cache_verdict(hash, Verdict::Allow, 24 * 60, h.now),
        Ok(MAX_ALLOW_MS)
    );
    assert!(
        h.req(
            "s2",
            "lookup_stock",
            json!({"url": "https://api.example.com/q"})
        )
        .is_allowed()
    );
    h.advance(MAX_ALLOW_MS);
    assert_eq!(
        h.req(
            "s3",
            "lookup_stock",
            json!({"url": "https://api.example.com/q"})
        )
        .reason_code,
        Some(ReasonCode::CloudTimeout)
    );
    assert_eq!(
        h.state
            .cache_verdict(hash, Verdict::Block, 365 * 24 * 60, h.now),
        Ok(MAX_BLOCK_MS)
    );
    assert_eq!(
        h.req(
            "s4",
            "lookup_stock",
            json!({"url": "https://api.example.com/q"})
        )
        .reason_code,
        Some(ReasonCode::CloudBlock)
    );
    assert_eq!(
        h.state
            .cache_verdict(hash, Verdict::Warn, 365 * 24 * 60, h.now),
        Ok(MAX_WARN_MS)
    );
    assert_eq!(
        h.req(
            "s5",
            "lookup_stock",
            json!({"url": "https://api.example.com/q"})
        )
        .decision,
        Verdict::Warn
    );
    assert_eq!(h.state.cache_verdict(hash, Verdict::Warn, 0, h.now), Ok(0));
    assert_eq!(
        h.req(
            "s6",
            "lookup_stock",
            json!({"url": "https://api.example.com/q"})
        )
        .reason_code,
        Some(ReasonCode::CloudTimeout)
    );
}

#[test]
fn speculative_escalation_allows_now_and_marks_pending() {
    let mut h = Harness::yaml(
        "version: 1\ntools:\n  lookup_stock: { capabilities: [net.egress], escalate: true }\nfleet: { broker: 'mqtt://127.0.0.1:1883', mode: speculative }\n",
    );
    let d = h.req(
        "s",
        "lookup_stock",
        json!({"url": "https://api.example.com/q"}),
    );
    assert!(d.is_allowed() && d.pending);
    assert_eq!(
        d.escalate,
        Some(bulwark_engine::EscalationMode::Speculative)
    );
}

#[test]
fn local_checks_run_before_the_cache() {
    let mut h = Harness::yaml(
        "version: 1\ntools:\n  lookup_stock: { capabilities: [net.egress], escalate: true, url: /url }\n",
    );
    let hash: [u8; 32] = {
        use sha2::Digest;
        sha2::Sha256::digest(b"lookup_stock").into()
    };
    h.state.cache_verdict(hash, Verdict::Allow, 60, 0).unwrap();
    let d = h.req(
        "s",
        "lookup_stock",
        json!({"url": "http://169.254.169.254/"}),
    );
    assert_eq!(d.reason_code, Some(ReasonCode::SsrfBlock));
}

/// A `sync_block` escalation decides the call twice (miss, then the fleet's answer), but
/// charges it once: the rate tokens and burst hits of the first pass are not drawn again,
/// and a verdict given only for this call is never in the cache.
#[test]
fn an_answered_escalation_is_charged_once() {
    let mut h = Harness::yaml(
        "version: 1\nrate: { session: { calls: 2 } }\ntools:\n  lookup_stock: { capabilities: [net.egress], escalate: true }\n  note: { capabilities: [] }\n",
    );
    let call = Call::request(
        "s",
        "lookup_stock",
        json!({"url": "https://api.example.com/q"}),
    );
    let miss = h
        .engine
        .evaluate(&call, &mut h.state, bulwark_engine::Now::at(h.now));
    assert_eq!(miss.reason_code, Some(ReasonCode::CloudTimeout));
    assert!(miss.escalate.is_some());
    let answered = h.engine.evaluate_answered(
        &call,
        &mut h.state,
        bulwark_engine::Now::at(h.now),
        &miss,
        Verdict::Allow,
    );
    assert_eq!(answered.decision, Verdict::Allow, "{answered:?}");
    assert!(answered.escalate.is_none());
    // The answer was for that call only: the next one escalates again.
    let again = h
        .engine
        .evaluate(&call, &mut h.state, bulwark_engine::Now::at(h.now));
    assert_eq!(again.reason_code, Some(ReasonCode::CloudTimeout));
    // Two calls drawn in all (the escalated one once, and `again`): the bucket is empty.
    let third = h.req("s", "note", json!({}));
    assert_eq!(third.reason_code, Some(ReasonCode::RateLimit), "{third:?}");

    // A fleet block decides the same way a cached one would.
    let mut h = Harness::yaml(
        "version: 1\ntools:\n  lookup_stock: { capabilities: [net.egress], escalate: true }\n",
    );
    let blocked = h.engine.evaluate_answered(
        &call,
        &mut h.state,
        bulwark_engine::Now::at(h.now),
        &miss,
        Verdict::Block,
    );
    assert_eq!(blocked.reason_code, Some(ReasonCode::CloudBlock));
}

/// The second decision of an answered escalation keeps what the first one used: a
/// person's approval of the call (its grant is gone by then) and the burst history (the
/// call's own rule hits were saved once, and are not counted against it again).
#[test]
fn an_answered_escalation_keeps_its_approval_and_counts_its_hits_once() {
    let mut h = Harness::yaml(
        "version: 1\ntools:\n  lookup_stock: { capabilities: [net.egress], escalate: true }\napprovals: { tools: [lookup_stock] }\n",
    );
    let call = Call::request(
        "s",
        "lookup_stock",
        json!({"url": "https://api.example.com/q"}),
    );
    let now = bulwark_engine::Now::at(h.now);
    // Without the fleet's answer the call is blocked for that, approval or not; with
    // it, it needs a person.
    let unanswered = h.engine.evaluate(&call, &mut h.state, now);
    assert_eq!(unanswered.reason_code, Some(ReasonCode::CloudTimeout));
    assert_eq!(
        h.engine
            .evaluate_answered(&call, &mut h.state, now, &unanswered, Verdict::Allow)
            .decision,
        Verdict::Approve
    );
    let digest = bulwark_engine::call_digest(
        "lookup_stock",
        &call.args,
        "s",
        None,
        &h.engine.policy().version,
    );
    h.state.grant(digest, h.now + 60_000);
    let first = h.engine.evaluate(&call, &mut h.state, now);
    assert!(first.approved, "{first:?}");
    assert_eq!(first.reason_code, Some(ReasonCode::CloudTimeout));
    let answered = h
        .engine
        .evaluate_answered(&call, &mut h.state, now, &first, Verdict::Allow);
    assert_eq!(answered.decision, Verdict::Allow, "{answered:?}");
    assert!(answered.approved);

    // A burst of three medium hits raises the tier. One before, and the escalated call's
    // own: two, decided twice, still two.
    let mut h = Harness::yaml(
        "version: 1\npacks: []\ntools:\n  lookup_stock: { capabilities: [net.egress], escalate: true }\nrules:\n  - { id: t.a, severity: medium, match: { text: 'alpha' }, reason: a }\nscoring: { burst: { count: 3, window_secs: 60 } }\n",
    );
    assert_eq!(
        h.req("s", "write_file", json!({"content": "alpha 1"}))
            .decision,
        Verdict::Warn
    );
    let call = Call::request(
        "s",
        "lookup_stock",
        json!({"url": "https://api.example.com/q", "note": "alpha 2"}),
    );
    let now = bulwark_engine::Now::at(h.now);
    let first = h.engine.evaluate(&call, &mut h.state, now);
    assert_eq!(
        first.reason_code,
        Some(ReasonCode::CloudTimeout),
        "{first:?}"
    );
    let answered = h
        .engine
        .evaluate_answered(&call, &mut h.state, now, &first, Verdict::Allow);
    assert_eq!(answered.decision, Verdict::Warn, "{answered:?}");
    // The third hit does raise it.
    assert_eq!(
        h.req("s", "write_file", json!({"content": "alpha 3"}))
            .decision,
        Verdict::Approve
    );
}
