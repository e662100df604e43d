//! Deployment-wide telemetry and audit, end to end with the binary and a real PostgreSQL
//! (started by the test on an ephemeral port): two replicas (each its own state directory,
//! audit log and instance id) write their decisions into one store and `bulwark audit stats`
//! answers for both; with the store stopped, decisions are exactly the same and the lost rows
//! are stated in the audit log; `bulwark audit verify`
//! checks a set of logs and fails the set when one was tampered with.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../bulwark-telemetry-pg/tests/support/mod.rs"]
mod pg;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const CALLS: &str = concat!(
    r#"{"tool":"frobnicate","session":"s1"}"#,
    "\n",
    r#"{"tool":"bash","args":{"command":"rm -rf /"},"session":"s1"}"#,
    "\n",
    r#"{"tool":"bash","args":{"command":"ls -la"},"session":"s2"}"#,
    "\n",
);

fn bulwark(args: &[&str], instance: &str, stdin: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_bulwark"));
    c.args(args)
        .env("BULWARK_INSTANCE", instance)
        .env_remove("BULWARK_POLICY")
        .env_remove("BULWARK_STATE_DIR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(p) = stdin {
        c.arg(p);
    }
    c.output().unwrap()
}

struct World {
    dir: PathBuf,
    policy: PathBuf,
    calls: PathBuf,
}

impl World {
    fn new(name: &str, url: &str) -> World {
        let dir = std::env::temp_dir().join(format!("bwk-telepg-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("logs")).unwrap();
        let policy = dir.join("policy.yaml");
        std::fs::write(
            &policy,
            format!(
                "version: 1\nname: scaled\nunknown_tools: {{ action: block }}\ntelemetry: {{ backend: postgres, url: \"{url}\", timeout_ms: 500 }}\n"
            ),
        )
        .unwrap();
        let calls = dir.join("calls.jsonl");
        std::fs::write(&calls, CALLS).unwrap();
        World { dir, policy, calls }
    }

    fn log(&self, replica: &str) -> PathBuf {
        self.dir.join("logs").join(format!("{replica}.jsonl"))
    }

    fn state(&self, replica: &str) -> PathBuf {
        self.dir.join(format!("state-{replica}"))
    }

    /// One replica decides the calls, recording them in its own log.
    fn replica(&self, replica: &str) -> Output {
        let o = bulwark(
            &[
                "check",
                "--policy",
                self.policy.to_str().unwrap(),
                "--state-dir",
                self.state(replica).to_str().unwrap(),
                "--audit",
                self.log(replica).to_str().unwrap(),
            ],
            replica,
            Some(&self.calls),
        );
        assert!(
            o.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        o
    }

    fn stats(&self) -> Value {
        let o = bulwark(
            &[
                "audit",
                "stats",
                "--json",
                "--policy",
                self.policy.to_str().unwrap(),
                "--state-dir",
                self.state("a").to_str().unwrap(),
            ],
            "reader",
            None,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The decisions printed, without the timing that differs run to run.
fn decisions(o: &Output) -> Vec<(Value, Value, Value)> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| {
            (
                v["decision"].clone(),
                v["reason_code"].clone(),
                v["rule_id"].clone(),
            )
        })
        .collect()
}

#[test]
fn two_replicas_one_deployment_in_stats_and_a_store_away_changes_no_decision() {
    let mut pg = pg::Postgres::start();
    let w = World::new("two", &pg.url());
    let a = w.replica("a");
    w.replica("b");
    w.replica("b");
    let s = w.stats();
    assert_eq!(s["total"]["total"], 9, "{s}");
    let inst = s["instances"].as_array().unwrap();
    assert_eq!(inst.len(), 2, "{s}");
    assert_eq!(
        (&inst[0]["instance"], &inst[0]["total"]),
        (&"a".into(), &3.into())
    );
    assert_eq!(
        (&inst[1]["instance"], &inst[1]["total"]),
        (&"b".into(), &6.into())
    );
    assert_eq!(s["total"]["by_front"][0], serde_json::json!(["check", 9]));
    assert_eq!(s["total"]["dropped"], 0);
    let blocks = s["total"]["by_decision"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d[0] == "block")
        .map(|d| d[1].as_u64().unwrap())
        .unwrap();
    assert!(blocks >= 6, "{s}");
    // The text form names each instance.
    let o = bulwark(
        &[
            "audit",
            "stats",
            "--policy",
            w.policy.to_str().unwrap(),
            "--state-dir",
            w.state("a").to_str().unwrap(),
        ],
        "reader",
        None,
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("from 2 instances") && text.contains("  a  (") && text.contains("  b  ("),
        "{text}"
    );
    // `--local` still reads this host's own store.
    let o = bulwark(
        &[
            "audit",
            "stats",
            "--json",
            "--local",
            "--policy",
            w.policy.to_str().unwrap(),
            "--state-dir",
            w.state("a").to_str().unwrap(),
        ],
        "reader",
        None,
    );
    let local: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(local["total"], 3, "{local}");

    // The store goes away: the same calls get the same decisions, the run ends in bounded
    // time, and the log says the shared store lost the rows.
    pg.stop();
    let t = std::time::Instant::now();
    let again = w.replica("a");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(decisions(&again), decisions(&a));
    assert_eq!(decisions(&a).len(), 3);
    let log = std::fs::read_to_string(w.log("a")).unwrap();
    let said: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "telemetry")
        .collect();
    assert_eq!(said.len(), 1, "{log}");
    assert_eq!(said[0]["shared_dropped"], 3);
    // The log with that record still verifies.
    let o = bulwark(
        &[
            "audit",
            "verify",
            "--state-dir",
            w.state("a").to_str().unwrap(),
            w.log("a").to_str().unwrap(),
        ],
        "reader",
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    // Back: the next run writes again. (The 3 rows lost by a process that ended while the
    // store was away are stated in its audit log, above; a long-running replica adds its
    // drops to the store's counter once it is back — bulwark-telemetry-pg's tests.)
    pg.restart();
    w.replica("a");
    let s = w.stats();
    assert_eq!(s["total"]["total"], 12, "{s}");
    assert_eq!(s["instances"][0]["total"], 6, "{s}");
}

#[test]
fn verify_over_a_set_fails_the_set_when_one_log_was_tampered_with() {
    let pg = pg::Postgres::start();
    let w = World::new("verify", &pg.url());
    // Replicas share the audit keys (as a deployment gives them the same
    // BULWARK_AUDIT_HMAC_KEY / state): both logs are written with replica a's state.
    for r in ["a", "b", "c"] {
        let o = bulwark(
            &[
                "check",
                "--policy",
                w.policy.to_str().unwrap(),
                "--state-dir",
                w.state("a").to_str().unwrap(),
                "--audit",
                w.log(r).to_str().unwrap(),
            ],
            r,
            Some(&w.calls),
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let st = w.state("a");
    let logs = w.dir.join("logs");
    let verify = |paths: &[&Path]| {
        let mut args = vec!["audit", "verify", "--state-dir", st.to_str().unwrap()];
        args.extend(paths.iter().map(|p| p.to_str().unwrap()));
        bulwark(&args, "reader", None)
    };
    let o = verify(&[&logs]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{out}");
    assert!(out.contains("3 logs: 3 check out, 0 failed"), "{out}");
    // One record of b's log edited: b fails, a and c still check out, the set fails.
    let b = w.log("b");
    let text = std::fs::read_to_string(&b).unwrap();
    assert!(text.contains("\"session\":\"s2\""));
    std::fs::write(
        &b,
        text.replacen("\"session\":\"s2\"", "\"session\":\"s9\"", 1),
    )
    .unwrap();
    let o = verify(&[&w.log("a"), &b, &w.log("c")]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("3 logs: 2 check out, 1 failed"), "{out}");
    let failed: Vec<&str> = out.lines().filter(|l| l.contains("FAILED")).collect();
    assert_eq!(failed.len(), 1, "{out}");
    assert!(failed[0].contains("b.jsonl"), "{out}");
    // A directory with no logs is an error, not a pass.
    let empty = w.dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert_eq!(verify(&[&empty]).status.code(), Some(2));
}

/// One GET to the admin listener at `addr`, as the console sends it (its own Host).
fn get(addr: &str, path: &str, token: Option<&str>) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {}\r\n", t.trim()))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (
        head.split(' ').nth(1).unwrap().parse().unwrap(),
        body.to_string(),
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills the daemon when the test ends, passed or not.
struct Daemon(std::process::Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn one_replicas_console_and_metrics_show_every_instances_decisions() {
    let pg = pg::Postgres::start();
    let w = World::new("console", &pg.url());
    w.replica("a");
    w.replica("b");
    // A third replica, a long-running front with the admin listener, decides nothing itself:
    // what its console and /metrics show can only have come from the shared store.
    let state = w.state("c");
    std::fs::create_dir_all(&state).unwrap();
    let admin = format!("127.0.0.1:{}", free_port());
    let _d = Daemon(
        Command::new(env!("CARGO_BIN_EXE_bulwark"))
            .args(["daemon", "--socket"])
            .arg(state.join("d.sock"))
            .arg("--state-dir")
            .arg(&state)
            .arg("--policy")
            .arg(&w.policy)
            .args(["--admin", &admin])
            .env("BULWARK_INSTANCE", "c")
            .env_remove("BULWARK_POLICY")
            .env_remove("BULWARK_STATE_DIR")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // The view polls the store once a second; wait for a poll that saw both instances.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let metrics = loop {
        let m = std::net::TcpStream::connect(&admin)
            .ok()
            .map(|_| get(&admin, "/metrics", None));
        if let Some((200, body)) = &m
            && body.contains("instance=\"a\"")
            && body.contains("instance=\"b\"")
        {
            break body.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the console never showed both instances: {m:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert!(
        metrics.contains("bulwark_deployment_store_up 1"),
        "{metrics}"
    );
    let count = |inst: &str| -> u64 {
        metrics
            .lines()
            .filter(|l| {
                l.starts_with("bulwark_deployment_decisions_total{")
                    && l.contains(&format!("instance=\"{inst}\""))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    assert_eq!((count("a"), count("b"), count("c")), (3, 3, 0), "{metrics}");

    // The live feed (with the admin token, as the console asks) labels each decision.
    let token = std::fs::read_to_string(state.join("admin.token")).unwrap();
    let (code, body) = get(&admin, "/api/feed", Some(&token));
    assert_eq!(code, 200, "{body}");
    let feed: Value = serde_json::from_str(&body).unwrap();
    let from: Vec<&str> = feed["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["instance"].as_str().unwrap())
        .collect();
    assert_eq!(from.iter().filter(|i| **i == "a").count(), 3, "{body}");
    assert_eq!(from.iter().filter(|i| **i == "b").count(), 3, "{body}");
    // Without the token the feed is refused.
    assert_eq!(get(&admin, "/api/feed", None).0, 401);
}
