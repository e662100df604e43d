//! Human approval end to end, per channel, with real clients: the official MCP Python SDK
//! through the gateway (stdio and Streamable HTTP, with and without elicitation), a socket
//! client of the local evaluator, the CLI, the inbox, a webhook, and the web console in
//! headless Chromium. (The LLM proxy's header channel is in tests/proxy.rs.)
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use common::{
    BIN, Peer, eventually, free_port, mcp_listen_everything, node_server, peers_dir, python,
    scratch,
};
use serde_json::{Value, json};

/// A policy where `echo` and `get-sum` need a person; `get-sum` gives up after 3 s.
fn policy(dir: &Path, extra: &str) -> PathBuf {
    let p = dir.join("approvals.yaml");
    std::fs::write(
        &p,
        format!(
            "version: 1\nname: approvals-test\ntools:\n  deploy:\n    capabilities: [exec.arbitrary]\n  rollback:\n    capabilities: [exec.arbitrary]\n  echo:\n    capabilities: [fs.read]\napprovals:\n  tools: [echo, get-sum, deploy, rollback]\n  timeout_secs: 60\n  timeouts:\n    - tool: get-sum\n      secs: 3\n    - tool: rollback\n      severity: high\n      secs: 3\n{extra}"
        ),
    )
    .unwrap();
    p
}

fn bulwark(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// `bulwark approvals ARGS --state-dir DIR`, which must succeed; its stdout.
fn approvals(state: &Path, args: &[&str]) -> String {
    let mut all = vec!["approvals"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--state-dir", state.to_str().unwrap()]);
    let o = bulwark(&all);
    assert!(
        o.status.success(),
        "bulwark {all:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Waits for a pending request not in `seen`; returns it.
fn next_pending(state: &Path, seen: &[String]) -> Value {
    eventually(
        Duration::from_secs(30),
        "no new pending approval request",
        || {
            let out = Command::new(BIN)
                .args(["approvals", "list", "--json", "--state-dir"])
                .arg(state)
                .output()
                .ok()?;
            let list: Value = serde_json::from_slice(&out.stdout).ok()?;
            list.as_array()?
                .iter()
                .find(|r| !seen.contains(&r["id"].as_str().unwrap_or_default().to_string()))
                .cloned()
        },
    )
}

/// A Python SDK client calling tools through the gateway; its lines as they come.
struct SdkClient {
    _peer: Peer,
    lines: Receiver<Value>,
}

impl SdkClient {
    fn start(answer: &str, calls: Value, target: &[&str]) -> SdkClient {
        let mut child = Command::new(python())
            .arg(peers_dir().join("sdk_approvals.py"))
            .arg(answer)
            .arg(calls.to_string())
            .args(target)
            .stdout(Stdio::piped())
            // Not inherited: the gateway it starts would hold the test harness's stderr open
            // for the moments it takes to stop its own server.
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                if let Ok(v) = serde_json::from_str::<Value>(&l)
                    && tx.send(v).is_err()
                {
                    break;
                }
            }
        });
        SdkClient {
            _peer: Peer(child),
            lines,
        }
    }

    fn next(&self, within: Duration) -> Value {
        self.lines
            .recv_timeout(within)
            .unwrap_or_else(|_| panic!("the SDK client said nothing within {within:?}"))
    }

    /// The next call outcome (skipping the protocol line and questions), and whether a
    /// question was asked before it.
    fn outcome(&self, within: Duration) -> (Value, Option<String>) {
        let mut asked = None;
        loop {
            let v = self.next(within);
            if let Some(q) = v.get("asked") {
                asked = q.as_str().map(str::to_string);
            } else if v.get("tool").is_some() {
                return (v, asked);
            }
        }
    }

    fn no_outcome_for(&self, d: Duration) {
        let end = Instant::now() + d;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(v) if v.get("tool").is_some() => panic!("answered while waiting: {v}"),
                Ok(_) => {}
                Err(_) => return,
            }
        }
    }
}

fn reason_code(outcome: &Value) -> &str {
    outcome["error"]["data"]["reason_code"]
        .as_str()
        .unwrap_or_default()
}

/// `bulwark mcp` with an admin endpoint and an audit log around server-everything, as a
/// command line for the SDK client; the admin address and the audit log's path.
fn gateway_cmd(state: &Path, policy: &Path) -> (Vec<String>, String, PathBuf) {
    let admin = format!("127.0.0.1:{}", free_port());
    let audit = state.join("audit.jsonl");
    let everything = node_server("server-everything");
    let cmd = vec![
        BIN.into(),
        "mcp".into(),
        "--state-dir".into(),
        state.to_str().unwrap().into(),
        "--policy".into(),
        policy.to_str().unwrap().into(),
        "--admin".into(),
        admin.clone(),
        "--audit".into(),
        audit.to_str().unwrap().into(),
        "--".into(),
        "node".into(),
        everything.to_str().unwrap().into(),
        "stdio".into(),
    ];
    (cmd, admin, audit)
}

#[test]
fn an_mcp_call_waits_for_the_cli_and_each_answer_reaches_the_client() {
    let state = scratch();
    let policy = policy(&state, "");
    let (cmd, _admin, audit) = gateway_cmd(&state, &policy);
    let target: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let calls = json!([
        {"tool": "echo", "args": {"message": "deploy v2"}},
        {"tool": "echo", "args": {"message": "deploy v2"}},
        {"tool": "get-sum", "args": {"a": 1, "b": 2}},
        {"tool": "get-tiny-image", "args": {}},
    ]);
    let client = SdkClient::start("none", calls, &target);
    assert!(
        client
            .next(Duration::from_secs(60))
            .get("protocol")
            .is_some()
    );

    // 1. Approved through the CLI: the call goes on, once.
    let r1 = next_pending(&state, &[]);
    assert_eq!(r1["tool"], "echo");
    assert_eq!(r1["args"]["message"], "deploy v2");
    assert_eq!(r1["front"], "mcp");
    client.no_outcome_for(Duration::from_millis(800));
    let shown = approvals(&state, &["show", r1["id"].as_str().unwrap()]);
    assert!(shown.contains("\"status\": \"pending\""), "{shown}");
    let out = approvals(
        &state,
        &[
            "approve",
            r1["id"].as_str().unwrap(),
            "--reason",
            "planned release",
        ],
    );
    assert!(out.starts_with("approved "), "{out}");
    assert!(out.contains("token bwk1."), "{out}");
    let (first, _) = client.outcome(Duration::from_secs(20));
    assert_eq!(
        first["ok"]["content"][0]["text"], "Echo: deploy v2",
        "{first}"
    );

    // 2. The same call again is asked about afresh (the approval was used); denied.
    let r2 = next_pending(&state, &[r1["id"].as_str().unwrap().into()]);
    assert_ne!(r2["id"], r1["id"]);
    approvals(
        &state,
        &["deny", r2["id"].as_str().unwrap(), "--reason", "not today"],
    );
    let (second, _) = client.outcome(Duration::from_secs(20));
    assert_eq!(second["error"]["code"], -32005, "{second}");
    assert_eq!(reason_code(&second), "APPROVAL_DENIED");
    assert!(
        second["error"]["data"]["reason"]
            .as_str()
            .unwrap()
            .contains("not today"),
        "{second}"
    );
    // A decided request cannot be decided again.
    let again = bulwark(&[
        "approvals",
        "approve",
        r2["id"].as_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
    ]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("denied, not pending"));

    // 3. Nobody answers: get-sum's own 3 s timeout is a no.
    let t0 = Instant::now();
    let (third, _) = client.outcome(Duration::from_secs(20));
    assert_eq!(third["error"]["code"], -32005, "{third}");
    assert_eq!(reason_code(&third), "APPROVAL_TIMEOUT");
    assert!(t0.elapsed() < Duration::from_secs(10));

    // 4. Calls that need nobody are untouched.
    let (fourth, _) = client.outcome(Duration::from_secs(20));
    assert!(
        fourth["ok"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "image"),
        "{fourth}"
    );

    // Every change of state is in the audit log, and the log verifies.
    let text = eventually(Duration::from_secs(10), "audit entries", || {
        let t = std::fs::read_to_string(&audit).ok()?;
        t.contains("expired by timeout").then_some(t)
    });
    let id1 = r1["id"].as_str().unwrap();
    let id2 = r2["id"].as_str().unwrap();
    for want in [
        format!("approval {id1} created"),
        format!("approval {id1} approved by cli: planned release"),
        format!("approval {id1} used"),
        format!("approval {id2} denied by cli: not today"),
    ] {
        assert!(text.contains(&want), "{want} missing from the audit log");
    }
    drop(client);
    let v = bulwark(&[
        "audit",
        "verify",
        "--open",
        "--state-dir",
        state.to_str().unwrap(),
        audit.to_str().unwrap(),
    ]);
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
}

#[test]
fn a_legacy_client_with_elicitation_is_asked_in_the_protocol() {
    for (answer, passes) in [("yes", true), ("no", false)] {
        let state = scratch();
        let policy = policy(&state, "");
        let (cmd, _admin, _audit) = gateway_cmd(&state, &policy);
        let target: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let client = SdkClient::start(
            answer,
            json!([{"tool": "echo", "args": {"message": "rotate keys"}}]),
            &target,
        );
        let (out, asked) = client.outcome(Duration::from_secs(60));
        let asked = asked.expect("the client was asked");
        assert!(
            asked.contains("echo") && asked.contains("rotate keys"),
            "{asked}"
        );
        if passes {
            assert_eq!(
                out["ok"]["content"][0]["text"], "Echo: rotate keys",
                "{out}"
            );
        } else {
            assert_eq!(out["error"]["code"], -32005, "{out}");
            assert_eq!(reason_code(&out), "APPROVAL_DENIED");
        }
        // The gateway may have gone with its client: read the store itself.
        let store: Value = serde_json::from_str(
            &std::fs::read_to_string(state.join("approvals/requests.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(store["requests"][0]["decided_by"], "mcp", "{store}");
    }
}

#[test]
fn a_2026_client_gets_an_input_required_result_and_its_answer_decides() {
    for (answer, passes) in [("yes", true), ("no", false)] {
        let state = scratch();
        let policy = policy(&state, "");
        let (_gw, listen) = mcp_listen_everything(&state, &policy);
        let url = format!("auto+http://{listen}/mcp");
        let client = SdkClient::start(
            answer,
            json!([{"tool": "echo", "args": {"message": "ship it"}}, {"tool": "get-sum", "args": {"a": 2, "b": 3}}]),
            &[&url],
        );
        let proto = client.next(Duration::from_secs(60));
        assert_eq!(proto["protocol"], "2026-07-28", "{proto}");
        let (out, asked) = client.outcome(Duration::from_secs(30));
        assert!(asked.unwrap().contains("ship it"));
        if passes {
            assert_eq!(out["ok"]["content"][0]["text"], "Echo: ship it", "{out}");
        } else {
            assert_eq!(out["error"]["code"], -32005, "{out}");
            assert_eq!(reason_code(&out), "APPROVAL_DENIED");
        }
        let (sum, _) = client.outcome(Duration::from_secs(30));
        if passes {
            assert_eq!(
                sum["ok"]["content"][0]["text"], "The sum of 2 and 3 is 5.",
                "{sum}"
            );
        }
    }
}

/// The local evaluator's socket, one JSON-RPC line at a time.
struct Socket(BufReader<UnixStream>);

impl Socket {
    fn connect(path: &Path) -> Socket {
        let s = eventually(Duration::from_secs(30), "the daemon did not start", || {
            UnixStream::connect(path).ok()
        });
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        Socket(BufReader::new(s))
    }

    fn evaluate(&mut self, tool: &str, session: u64, content: &str) -> Value {
        let req = json!({"jsonrpc": "2.0", "id": 1, "method": "evaluate", "params": {
            "tool_name": tool, "tool_hash": sha256_hex(tool), "capabilities": 0,
            "session_id": session, "direction": 0, "content": content}});
        self.0
            .get_mut()
            .write_all(format!("{req}\n").as_bytes())
            .unwrap();
        let mut line = String::new();
        self.0.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap()["result"].clone()
    }
}

fn daemon(state: &Path, policy: &Path, extra: &[&str], env: &[(&str, &str)]) -> Peer {
    Peer(
        Command::new(BIN)
            .arg("daemon")
            .arg("--socket")
            .arg(state.join("d.sock"))
            .arg("--state-dir")
            .arg(state)
            .arg("--policy")
            .arg(policy)
            .args(extra)
            .envs(env.iter().copied())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// Evaluates until the verdict is not PENDING.
fn settle(s: &mut Socket, tool: &str, session: u64, content: &str) -> Value {
    eventually(Duration::from_secs(20), "the call stayed pending", || {
        let r = s.evaluate(tool, session, content);
        (r["verdict"] != "PENDING").then_some(r)
    })
}

#[test]
fn the_local_evaluator_answers_pending_then_the_verdict_across_a_restart() {
    let state = scratch();
    let policy = policy(&state, "");
    let admin = format!("127.0.0.1:{}", free_port());
    let mut d = daemon(&state, &policy, &["--admin", &admin], &[]);
    let mut s = Socket::connect(&state.join("d.sock"));
    let first = s.evaluate("deploy", 7, "release 42");
    assert_eq!(first["verdict"], "PENDING", "{first}");
    let id = first["approval"]["id"].as_str().unwrap().to_string();
    // Asking again while it waits: the same request.
    assert_eq!(s.evaluate("deploy", 7, "release 42")["approval"]["id"], id);

    // A restart loses nothing: the request is still pending afterwards.
    drop(s);
    let _ = d.0.kill();
    let _ = d.0.wait();
    let _ = std::fs::remove_file(state.join("d.sock"));
    let admin2 = format!("127.0.0.1:{}", free_port());
    d = daemon(&state, &policy, &["--admin", &admin2], &[]);
    let mut s = Socket::connect(&state.join("d.sock"));
    let listed = approvals(&state, &["list"]);
    assert!(
        listed.contains(&id) && listed.contains("pending"),
        "{listed}"
    );

    // Approved through the admin API (as the console does it): ALLOW once, then asked anew.
    let token = std::fs::read_to_string(state.join("admin.token")).unwrap();
    let (code, body) = http(
        &admin2,
        "POST",
        &format!("/api/approvals/{id}/approve"),
        Some(&token),
        "{\"via\":\"console\"}",
    );
    assert_eq!(code, 200, "{body}");
    let allowed = s.evaluate("deploy", 7, "release 42");
    assert_eq!(allowed["verdict"], "ALLOW", "{allowed}");
    assert_eq!(allowed["approval"]["status"], "used");
    let next = s.evaluate("deploy", 7, "release 42");
    assert_eq!(next["verdict"], "PENDING", "{next}");
    assert_ne!(next["approval"]["id"], id.as_str());

    // Denied through the inbox file under the state directory.
    let id2 = next["approval"]["id"].as_str().unwrap().to_string();
    let inbox = state.join("approvals/inbox");
    std::fs::write(&inbox, format!("deny {id2} not during the freeze\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&inbox, std::fs::Permissions::from_mode(0o600)).unwrap();
    let denied = settle(&mut s, "deploy", 7, "release 42");
    assert_eq!(denied["verdict"], "BLOCK", "{denied}");
    assert_eq!(denied["reason"], "APPROVAL_DENIED");
    assert!(
        denied["message"]
            .as_str()
            .unwrap()
            .contains("not during the freeze")
    );

    // Nobody answers within rollback's 3 s (a timeout for its tool and severity).
    let other = s.evaluate("rollback", 8, "release 41");
    assert_eq!(other["verdict"], "PENDING");
    std::thread::sleep(Duration::from_millis(3500));
    let late = s.evaluate("rollback", 8, "release 41");
    assert_eq!(late["verdict"], "BLOCK", "{late}");
    assert_eq!(late["reason"], "APPROVAL_TIMEOUT");
    drop(d);
}

/// One HTTP/1.1 request; the status and body.
fn http(addr: &str, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {}\r\n", t.trim()))
        .unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap();
    (
        head.split(' ').nth(1).unwrap().parse().unwrap(),
        rest.to_string(),
    )
}

#[test]
fn the_admin_api_wants_its_token_and_its_own_origin() {
    let state = scratch();
    let policy = policy(&state, "");
    let admin = format!("127.0.0.1:{}", free_port());
    let _d = daemon(&state, &policy, &["--admin", &admin], &[]);
    let _s = Socket::connect(&state.join("d.sock"));
    eventually(Duration::from_secs(10), "admin", || {
        std::net::TcpStream::connect(&admin).ok()
    });
    let token = std::fs::read_to_string(state.join("admin.token")).unwrap();
    assert_eq!(http(&admin, "GET", "/api/approvals", None, "").0, 401);
    assert_eq!(
        http(&admin, "GET", "/api/approvals", Some("wrong"), "").0,
        401
    );
    assert_eq!(
        http(&admin, "GET", "/api/approvals", Some(&token), "").0,
        200
    );
    assert_eq!(
        http(
            &admin,
            "POST",
            "/api/approvals/nosuch/approve",
            Some(&token),
            "{}"
        )
        .0,
        404
    );
    // The console page itself needs no token; a rebound Host or a foreign Origin is refused.
    let (code, page) = http(&admin, "GET", "/", None, "");
    assert_eq!(code, 200);
    assert!(page.contains("<title>Bulwark console</title>"));
    let mut s = std::net::TcpStream::connect(&admin).unwrap();
    write!(
        s,
        "GET /api/approvals HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer {}\r\n\r\n",
        token.trim()
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 403"), "{text}");
    let mut s = std::net::TcpStream::connect(&admin).unwrap();
    write!(s, "GET /api/approvals HTTP/1.1\r\nHost: {admin}\r\nOrigin: http://evil.example\r\nAuthorization: Bearer {}\r\n\r\n", token.trim()).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 403"), "{text}");
    // Oversized bodies are refused, not read.
    let big = "x".repeat(70_000);
    assert_eq!(
        http(&admin, "POST", "/api/approvals/x/deny", Some(&token), &big).0,
        413
    );
}

#[test]
fn a_webhook_decides_by_its_reply_or_by_a_signed_callback() {
    let state = scratch();
    let port_file = state.join("hook.port");
    let log = state.join("hook.jsonl");
    let _hook = Peer(
        Command::new(python())
            .arg(peers_dir().join("webhook_receiver.py"))
            .arg(&port_file)
            .arg(&log)
            .spawn()
            .unwrap(),
    );
    let port = eventually(Duration::from_secs(20), "webhook receiver", || {
        std::fs::read_to_string(&port_file).ok()
    });
    let extra = format!(
        "  channels: [cli, webhook]\n  webhook_url: http://127.0.0.1:{}/hook\n",
        port.trim()
    );
    let policy = policy(&state, &extra);
    let admin = format!("127.0.0.1:{}", free_port());
    let secret = "webhook-secret-for-tests";
    let _d = daemon(
        &state,
        &policy,
        &["--admin", &admin],
        &[("BULWARK_WEBHOOK_SECRET", secret)],
    );
    let mut s = Socket::connect(&state.join("d.sock"));
    // The receiver approves what mentions "approve-me" in its reply, and answers nothing
    // (202) otherwise.
    let first = s.evaluate("deploy", 1, "approve-me");
    assert_eq!(first["verdict"], "PENDING");
    let allowed = settle(&mut s, "deploy", 1, "approve-me");
    assert_eq!(allowed["verdict"], "ALLOW", "{allowed}");
    let second = s.evaluate("echo", 2, "later");
    assert_eq!(second["verdict"], "PENDING");
    let id = second["approval"]["id"].as_str().unwrap().to_string();
    let posts = eventually(Duration::from_secs(20), "the webhook got both", || {
        let t = std::fs::read_to_string(&log).ok()?;
        let posts: Vec<Value> = t
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (posts.len() >= 2).then_some(posts)
    });
    // Every POST is signed with the shared secret, and carries the masked request.
    for p in &posts {
        assert_eq!(p["signature_ok"], true, "{p}");
        assert_eq!(p["body"]["type"], "bulwark.approval.request");
        assert!(p["body"]["request"].get("token").is_none());
    }
    let callback = posts[1]["body"]["callback"].as_str().unwrap().to_string();
    assert!(
        callback.ends_with(&format!("/api/approvals/{id}/callback")),
        "{callback}"
    );
    let path = callback.split_once(&admin).unwrap().1.to_string();
    // A forged callback is refused; a signed one decides.
    let body = r#"{"decision":"deny","note":"change freeze"}"#;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let post = |ts: u64, signed_for: &str, sig_secret: &[u8]| -> String {
        let sig = sign(
            sig_secret,
            format!("v1:{ts}:{signed_for}:{body}").as_bytes(),
        );
        let mut c = std::net::TcpStream::connect(&admin).unwrap();
        write!(c, "POST {path} HTTP/1.1\r\nHost: {admin}\r\nX-Bulwark-Timestamp: {ts}\r\nX-Bulwark-Signature: {sig}\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        let mut text = String::new();
        c.read_to_string(&mut text).unwrap();
        text
    };
    // Forged, signed for another request, or stale: refused.
    assert!(post(now, &id, b"not the secret").starts_with("HTTP/1.1 401"));
    assert!(post(now, "0123456789ab", secret.as_bytes()).starts_with("HTTP/1.1 401"));
    assert!(post(now - 900, &id, secret.as_bytes()).starts_with("HTTP/1.1 401"));
    let text = post(now, &id, secret.as_bytes());
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    // Replayed: the request is decided already.
    assert!(post(now, &id, secret.as_bytes()).starts_with("HTTP/1.1 409"));
    let denied = settle(&mut s, "echo", 2, "later");
    assert_eq!(denied["reason"], "APPROVAL_DENIED", "{denied}");
    assert!(
        denied["message"]
            .as_str()
            .unwrap()
            .contains("change freeze")
    );
}

fn sha256_hex(text: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn sign(secret: &[u8], body: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    // HMAC-SHA256 by hand (RFC 2104), so the test does not share the code it checks.
    let mut key = [0u8; 64];
    key[..secret.len()].copy_from_slice(secret);
    let inner: Vec<u8> = key
        .iter()
        .map(|k| k ^ 0x36)
        .chain(body.iter().copied())
        .collect();
    let ih = Sha256::digest(&inner);
    let outer: Vec<u8> = key
        .iter()
        .map(|k| k ^ 0x5c)
        .chain(ih.iter().copied())
        .collect();
    let tag = Sha256::digest(&outer);
    format!(
        "sha256={}",
        tag.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

#[test]
fn the_console_in_headless_chromium_approves_a_waiting_mcp_call() {
    let state = scratch();
    let policy = policy(&state, "");
    let (cmd, admin, _audit) = gateway_cmd(&state, &policy);
    let target: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let client = SdkClient::start(
        "none",
        // The last call keeps the gateway up (it waits 3 s for nobody) while the list is
        // read.
        json!([{"tool": "get-tiny-image", "args": {}}, {"tool": "echo", "args": {"message": "from the console"}}, {"tool": "get-sum", "args": {"a": 1, "b": 1}}]),
        &target,
    );
    let pending = next_pending(&state, &[]);
    let token = std::fs::read_to_string(state.join("admin.token")).unwrap();
    let out = Command::new(common::node22())
        .arg(peers_dir().join("console_check.mjs"))
        .arg(format!("http://{admin}/"))
        .arg(token.trim())
        .arg(pending["id"].as_str().unwrap())
        .env("NODE_PATH", common::node_modules())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "console check failed: {said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(said.trim().lines().last().unwrap()).unwrap();
    assert_eq!(seen["approved"], true, "{seen}");
    assert!(seen["feed"].as_u64().unwrap() >= 1, "{seen}");
    assert!(seen["bars"].as_u64().unwrap() >= 1, "{seen}");
    assert!(
        seen["shown_args"]
            .as_str()
            .unwrap()
            .contains("from the console")
    );
    let (first, _) = client.outcome(Duration::from_secs(20));
    assert!(first["ok"].is_object(), "{first}");
    let (second, _) = client.outcome(Duration::from_secs(20));
    assert_eq!(
        second["ok"]["content"][0]["text"], "Echo: from the console",
        "{second}"
    );
    let list: Value =
        serde_json::from_str(&approvals(&state, &["list", "--all", "--json"])).unwrap();
    let decided = list
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == pending["id"])
        .unwrap();
    assert_eq!(decided["decided_by"], "console", "{list}");
    assert_eq!(decided["status"], "used", "{list}");
    let (third, _) = client.outcome(Duration::from_secs(20));
    assert_eq!(reason_code(&third), "APPROVAL_TIMEOUT", "{third}");
}
