//! The built-in policy and packs compile, and say what the docs say they say.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bulwark_policy::{Capability, Policy, Severity, Summary, Verdict, load_str};

#[test]
fn default_policy_compiles() {
    let p = Policy::builtin().unwrap();
    assert_eq!(p.name, "default");
    assert_eq!(p.packs, vec!["core", "commands"]);
    assert!(p.rules.len() >= 10);
    assert!(
        p.tools
            .get("CALL_API")
            .unwrap()
            .capabilities
            .contains(Capability::NetEgress)
    );
    let s = p.rate.session.unwrap();
    assert_eq!(
        (s.calls, s.network, s.actuate, s.per_ms),
        (Some(60), Some(30), Some(10), 60_000)
    );
    assert_eq!(p.sequences[0].steps, vec!["net", "exec.arbitrary"]);
}

#[test]
fn an_empty_file_means_the_defaults_with_the_core_pack() {
    let p = load_str("empty.yaml", "version: 1\n").unwrap();
    assert_eq!(p.packs, vec!["core", "commands"]);
    assert_eq!(p.loop_guard.max_repeats, 8);
    assert_eq!(p.scoring.action(Severity::High), Verdict::Approve);
    let none = load_str("none.yaml", "version: 1\npacks: []\n").unwrap();
    assert!(none.rules.is_empty());
}

#[test]
fn overrides_change_and_disable_pack_rules() {
    let y = "version: 1\noverrides:\n  sql.truncate: { severity: critical }\n  sql.multi_statement: { disabled: true }\n";
    let p = load_str("o.yaml", y).unwrap();
    let t = p.rules.iter().find(|r| r.id == "sql.truncate").unwrap();
    assert_eq!((t.severity, t.points), (Severity::Critical, 100));
    assert!(p.rules.iter().all(|r| r.id != "sql.multi_statement"));
}

#[test]
fn version_changes_with_the_text() {
    let a = load_str("a.yaml", "version: 1\nname: x\n").unwrap();
    let b = load_str("a.yaml", "version: 1\nname: x\nmode: monitor\n").unwrap();
    assert_ne!(a.version, b.version);
    assert!(a.version.starts_with("x@") && a.version.len() == 14);
}

#[test]
fn summary_names_tools_rules_limits_and_sequences() {
    let p = Policy::builtin().unwrap();
    let s = Summary(&p).to_string();
    for needle in [
        "tools mapped: 1",
        "call_api: net.egress",
        "rules:",
        "seq.fetch_then_exec",
        "limits:",
        "session: calls 60, network 30, actuate 10 per 60 s",
    ] {
        assert!(s.contains(needle), "{needle:?} missing from:\n{s}");
    }
}

#[test]
fn pack_files_load_relative_to_the_policy() {
    let dir = std::env::temp_dir().join(format!("bulwark-pack-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mine.yaml"), "version: 1\npack: mine\nrules:\n  - id: mine.x\n    severity: low\n    match: { tools: [x] }\n    reason: r\n").unwrap();
    std::fs::write(
        dir.join("policy.yaml"),
        "version: 1\npacks: [core, mine.yaml]\n",
    )
    .unwrap();
    let p = bulwark_policy::load_file(&dir.join("policy.yaml")).unwrap();
    assert!(
        p.rules
            .iter()
            .any(|r| r.id == "mine.x" && r.origin == "mine.yaml")
    );
    std::fs::write(dir.join("bad.yaml"), "version: 1\npack: bad\nrulez: []\n").unwrap();
    std::fs::write(dir.join("policy2.yaml"), "version: 1\npacks: [bad.yaml]\n").unwrap();
    let e = bulwark_policy::load_file(&dir.join("policy2.yaml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.yaml:3:1:"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
