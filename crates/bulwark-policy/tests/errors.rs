//! A wrong policy is refused with FILE:LINE:COLUMN and what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bulwark_policy::load_str;

fn err(yaml: &str) -> String {
    if std::env::var_os("SHOW").is_some() {
        eprintln!(
            "{}",
            load_str("p.yaml", yaml)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        );
    }
    match load_str("p.yaml", yaml) {
        Ok(_) => panic!("accepted:\n{yaml}"),
        Err(e) => e.to_string(),
    }
}

#[track_caller]
fn assert_err(yaml: &str, location: &str, needle: &str) {
    let e = err(yaml);
    assert!(
        e.starts_with(&format!("p.yaml:{location}: ")),
        "wrong location in {e:?} (want {location})"
    );
    assert!(e.contains(needle), "{e:?} lacks {needle:?}");
}

#[test]
fn unknown_top_level_key() {
    assert_err("version: 1\nmdoe: enforce\n", "2:1", "mdoe");
}

#[test]
fn unknown_nested_key() {
    assert_err(
        "version: 1\nlimits:\n  max_args_byte: 10\n",
        "3:3",
        "max_args_byte",
    );
}

#[test]
fn wrong_type() {
    assert_err("version: 1\nlimits:\n  max_depth: deep\n", "3:14", "");
}

#[test]
fn yes_is_not_a_boolean() {
    assert_err("version: 1\nlockdown: yes\n", "2:11", "");
}

#[test]
fn unknown_enum_value() {
    assert_err("version: 1\nmode: enforcing\n", "2:7", "enforcing");
    assert_err(
        "version: 1\ntools:\n  t:\n    capabilities: [net.egres]\n",
        "4:20",
        "net.egres",
    );
}

#[test]
fn bad_regex_points_at_the_regex() {
    let y = "version: 1\npacks: []\nrules:\n  - id: x.y\n    severity: high\n    match:\n      text: '(unclosed'\n    reason: r\n";
    assert_err(y, "7:13", "bad regex");
}

#[test]
fn bad_glob() {
    let y = "version: 1\npacks: []\nrules:\n  - id: x.y\n    severity: high\n    match:\n      tools: ['[ab]']\n    reason: r\n";
    assert_err(y, "7:15", "bad glob");
}

#[test]
fn bad_pointer() {
    assert_err(
        "version: 1\ntools:\n  t:\n    command: command\n",
        "4:14",
        "bad JSON pointer",
    );
}

#[test]
fn unknown_predicate() {
    let y = "version: 1\npacks: []\nrules:\n  - id: x.y\n    severity: high\n    match:\n      predicates: [sql.dorp]\n    reason: r\n";
    assert_err(y, "7:20", "unknown predicate");
}

#[test]
fn bad_destination_pattern() {
    assert_err(
        "version: 1\ndestinations:\n  allow: ['a.*.com']\n",
        "3:11",
        "bad destination pattern",
    );
    assert_err(
        "version: 1\ndestinations:\n  allow: ['10.0.0.0/33']\n",
        "3:11",
        "CIDR",
    );
}

#[test]
fn duplicate_key() {
    assert_err("version: 1\nmode: enforce\nmode: monitor\n", "3:1", "");
}

#[test]
fn duplicate_rule_id_with_a_pack() {
    let y = "version: 1\nrules:\n  - id: sql.truncate\n    severity: low\n    match: { predicates: [sql.truncate] }\n    reason: r\n";
    assert_err(y, "3:9", "overrides");
}

#[test]
fn override_of_unknown_rule() {
    assert_err(
        "version: 1\noverrides:\n  no.such_rule: { disabled: true }\n",
        "3:17",
        "unknown rule",
    );
}

#[test]
fn errors_never_read_as_clean() {
    assert_err(
        "version: 1\non_error:\n  INVALID_INPUT: allow\n",
        "3:18",
        "never read as clean",
    );
    assert_err(
        "version: 1\non_error:\n  NOPE: block\n",
        "3:9",
        "unknown on_error code",
    );
}

#[test]
fn unknown_capability_family() {
    let y = "version: 1\nsequences:\n  - id: s\n    steps: [net.egress, exec.shel]\n";
    assert_err(y, "4:25", "unknown capability");
}

#[test]
fn unknown_pack() {
    assert_err("version: 1\npacks: [nope]\n", "2:9", "unknown pack");
}

#[test]
fn wrong_version() {
    assert_err("version: 2\n", "1:10", "unsupported version");
}

#[test]
fn reports_every_problem_at_once() {
    let y = "version: 1\ntools:\n  a:\n    command: x\n  b:\n    sql: y\n";
    let e = err(y);
    assert_eq!(e.lines().count(), 2, "{e}");
    assert!(e.lines().next().unwrap().starts_with("p.yaml:4:"));
    assert!(e.lines().nth(1).unwrap().starts_with("p.yaml:6:"));
}

#[test]
fn alias_bombs_are_refused() {
    let bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n";
    assert!(load_str("p.yaml", bomb).is_err());
}

#[test]
fn a_redis_state_backend_needs_a_redis_url() {
    assert_err(
        "version: 1\nstate:\n  backend: redis\n",
        "3:12",
        "needs state.url",
    );
    assert_err(
        "version: 1\nstate:\n  backend: redis\n  url: http://127.0.0.1:6379\n",
        "4:8",
        "expected redis://",
    );
    // A password in a refused URL is not repeated in the message.
    let e = err("version: 1\nstate:\n  backend: redis\n  url: redis://:hunter2@\n");
    assert!(!e.contains("hunter2"), "{e}");
    assert_err(
        "version: 1\nstate:\n  url: redis://127.0.0.1:6379\n",
        "3:8",
        "only for state.backend: redis",
    );
    assert_err(
        "version: 1\nstate:\n  backend: redis\n  url: redis://127.0.0.1:6379\n  timeout_ms: 0\n",
        "5:15",
        "timeout_ms must be 1 to",
    );
    assert_err(
        "version: 1\nstate:\n  backend: redis\n  url: redis://127.0.0.1:6379\n  prefix: 'a b'\n",
        "5:11",
        "state.prefix must be",
    );
    assert_err(
        "version: 1\nstate:\n  backend: postgres\n",
        "3:12",
        "postgres",
    );
}

#[test]
fn the_state_section_is_read_with_its_defaults() {
    let p = load_str("p.yaml", "version: 1\n").unwrap();
    assert_eq!(p.state, bulwark_policy::StatePolicy::default());
    assert_eq!(p.state.backend, bulwark_policy::StateBackend::Memory);
    let p = load_str(
        "p.yaml",
        "version: 1\nstate: { backend: redis, url: 'redis://:pw@10.0.0.5:6380/2', prefix: prod, timeout_ms: 40, on_unavailable: local }\n",
    )
    .unwrap();
    assert_eq!(p.state.backend, bulwark_policy::StateBackend::Redis);
    assert_eq!(p.state.url.as_deref(), Some("redis://:pw@10.0.0.5:6380/2"));
    assert_eq!(p.state.prefix, "prod");
    assert_eq!(p.state.timeout_ms, 40);
    assert_eq!(p.state.on_unavailable, bulwark_policy::OnUnavailable::Local);
}

#[test]
fn every_error_of_a_nested_block_is_reported() {
    let yaml = "version: 1\nlimits:\n  max_sessions: -3\n  session_idle_secs: abc\n  bogus: 1\n\
                rules:\n  - id: a\n    match: {tool: 3}\n    severity: bad\n\
                approvals:\n  timeout_secs: x\n";
    let e = load_str("p.yaml", yaml).expect_err("refused");
    let at: Vec<(u64, u64)> = e.issues.iter().map(|i| (i.line, i.column)).collect();
    assert_eq!(
        at,
        [(3, 17), (4, 22), (5, 3), (8, 13), (9, 15), (11, 17)],
        "{e}"
    );
    // Blanking an entry out to look further never shows up as an error of its own.
    assert!(!e.to_string().contains("missing field"), "{e}");
    assert!(!e.to_string().contains("expected mapping"), "{e}");
    // A wrong shape that is the author's own is still reported, with what comes after it.
    let e = err("version: 1\nlimits: 3\napprovals:\n  timeout_secs: x\n");
    assert!(
        e.starts_with("p.yaml:2:9: ") && e.contains("\np.yaml:4:17: "),
        "{e}"
    );
}
