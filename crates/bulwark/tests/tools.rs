//! `bulwark tools` and `bulwark init --from-server` against the MCP reference servers, run
//! as real processes (issue 26, item 3).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

fn bulwark(state: &Path, args: &[&str]) -> Output {
    Command::new(common::BIN)
        .args(args)
        .env("BULWARK_STATE_DIR", state)
        .env_remove("BULWARK_POLICY")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn filesystem(root: &Path) -> Vec<String> {
    vec![
        "node".into(),
        common::node_server("server-filesystem")
            .to_string_lossy()
            .into_owned(),
        root.to_string_lossy().into_owned(),
    ]
}

/// The tool block `bulwark tools` prints for `name`.
fn block<'a>(text: &'a str, name: &str) -> &'a str {
    let start = text
        .find(&format!("\n{name}  ["))
        .unwrap_or_else(|| panic!("{name} not listed:\n{text}"));
    let rest = &text[start + 1..];
    let end = rest.find("\n\n").unwrap_or(rest.len());
    &rest[..end]
}

#[test]
fn lists_a_servers_tools_with_what_they_are_taken_to_do() {
    let dir = common::scratch();
    let server = filesystem(&dir);
    let mut args = vec!["tools", "--"];
    args.extend(server.iter().map(String::as_str));
    let o = bulwark(&dir, &args);
    assert!(o.status.success(), "{o:?}");
    let text = stdout(&o);
    assert!(text.contains(": 14 tools\n"), "{text}");
    // Every tool the server lists, each with where its capabilities come from.
    for name in [
        "read_text_file",
        "write_file",
        "edit_file",
        "move_file",
        "list_allowed_directories",
    ] {
        block(&text, name);
    }
    let read = block(&text, "read_text_file");
    assert!(read.contains("[catalogue]"), "{read}");
    assert!(read.contains("capabilities: fs.read"), "{read}");
    // The words are shown beside the catalogue's answer: the server calls a write
    // destructive, which only adds.
    let write = block(&text, "write_file");
    assert!(
        write.contains("words: annotation destructiveHint: true → exec.irreversible"),
        "{write}"
    );
    let allowed = block(&text, "list_allowed_directories");
    assert!(allowed.contains("[inferred]"), "{allowed}");

    // JSON: the same, per source.
    let mut args = vec!["tools", "--json", "--"];
    args.extend(server.iter().map(String::as_str));
    let o = bulwark(&dir, &args);
    assert!(o.status.success(), "{o:?}");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let tools = doc[0]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 14);
    let write = tools.iter().find(|t| t["name"] == "write_file").unwrap();
    assert_eq!(write["source"], "catalogue");
    assert_eq!(
        write["inferred"]["capabilities"],
        json!(["exec.irreversible"])
    );
}

#[test]
fn lists_a_tools_file_in_every_shape() {
    let dir = common::scratch();
    let chat = json!([{"type": "function", "function": {"name": "send_money",
        "description": "Sends money to the given recipient.",
        "parameters": {"type": "object", "properties": {"recipient": {"type": "string"},
            "amount": {"type": "number"}}}}},
        {"type": "function", "function": {"name": "get_unread_emails",
        "description": "Returns the unread emails in the inbox.", "parameters": {"type": "object"}}}]);
    let anthropic = json!([{"name": "send_money", "description": "Sends money to the given recipient.",
        "input_schema": {"type": "object"}}]);
    for doc in [chat, anthropic] {
        let f = dir.join("tools.json");
        std::fs::write(&f, doc.to_string()).unwrap();
        let o = bulwark(&dir, &["tools", "--from", f.to_str().unwrap()]);
        assert!(o.status.success(), "{o:?}");
        let text = stdout(&o);
        let send = block(&text, "send_money");
        assert!(send.contains("[inferred]"), "{send}");
        assert!(send.contains("capabilities: exec.irreversible"), "{send}");
        assert!(
            send.contains("words: \"send\" (name verb) + \"money\" (money) → exec.irreversible"),
            "{send}"
        );
    }
    let text = stdout(&bulwark(
        &dir,
        &["tools", "--from", dir.join("tools.json").to_str().unwrap()],
    ));
    assert!(text.contains(": 1 tools\n"), "{text}");

    // Not a tools document: refused, saying what was expected.
    let f = dir.join("bad.json");
    std::fs::write(&f, r#"{"hello": 1}"#).unwrap();
    let o = bulwark(&dir, &["tools", "--from", f.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no tools found: expected an MCP tools/list result"),
        "{err}"
    );
}

#[test]
fn a_server_that_cannot_list_fails_in_bounded_time() {
    let dir = common::scratch();
    let started = std::time::Instant::now();
    let o = bulwark(&dir, &["tools", "--timeout", "1", "--", "sleep", "30"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("did not list its tools within 1 s"), "{err}");
    assert!(started.elapsed().as_secs() < 15);
    let o = bulwark(&dir, &["tools"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing to list"));
}

#[test]
fn init_from_server_writes_a_mapping_to_review() {
    let dir = common::scratch();
    let out = dir.join("mapping.yaml");
    let everything = common::node_server("server-everything");
    let args = [
        "init",
        "--from-server",
        out.to_str().unwrap(),
        "--",
        "node",
        everything.to_str().unwrap(),
    ];
    let o = bulwark(&dir, &args);
    assert!(o.status.success(), "{o:?}");
    let yaml = std::fs::read_to_string(&out).unwrap();
    assert!(yaml.contains("NOT YET REVIEWED"), "{yaml}");
    // Every tool the server lists is an entry, commented with its description.
    for name in [
        "echo",
        "get-env",
        "gzip-file-as-resource",
        "toggle-simulated-logging",
    ] {
        assert!(
            yaml.contains(&format!("  \"{name}\":\n")),
            "{name}:\n{yaml}"
        );
    }
    assert!(
        yaml.contains("  # Echoes back the input string\n"),
        "{yaml}"
    );
    // It loads as a policy, and the entries are now the reviewed mapping.
    let check = bulwark(&dir, &["policy", "check", out.to_str().unwrap()]);
    assert!(check.status.success(), "{check:?}");
    let listed = bulwark(
        &dir,
        &[
            "tools",
            "--policy",
            out.to_str().unwrap(),
            "--",
            "node",
            everything.to_str().unwrap(),
        ],
    );
    let text = stdout(&listed);
    assert!(block(&text, "echo").contains("[mapping]"), "{text}");
    // An existing file is kept unless --force.
    let again = bulwark(&dir, &args);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
}
