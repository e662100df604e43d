//! The fleet end to end with a real broker: Mosquitto on an ephemeral loopback port,
//! `bulwark fleet serve`, and `bulwark daemon`s as devices, driven over their sockets and
//! attacked with `mosquitto_pub`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, Peer, eventually, free_port, scratch, test_certificates};
use serde_json::{Value, json};

fn mosquitto() -> PathBuf {
    for p in [
        "/usr/sbin/mosquitto",
        "/usr/bin/mosquitto",
        "/usr/local/sbin/mosquitto",
    ] {
        if Path::new(p).exists() {
            return p.into();
        }
    }
    panic!("mosquitto is not installed: run scripts/setup-peers");
}

/// A Mosquitto of our own on a free loopback port.
struct Broker {
    _peer: Peer,
    port: u16,
}

impl Broker {
    fn start(dir: &Path) -> Broker {
        Broker::run(dir, "")
    }

    /// Mosquitto on a free loopback port with `extra` configuration for its listener.
    fn run(dir: &Path, extra: &str) -> Broker {
        let port = free_port();
        let conf = dir.join(format!("mosquitto-{port}.conf"));
        std::fs::write(
            &conf,
            format!("listener {port} 127.0.0.1\n{extra}allow_anonymous true\npersistence false\nset_tcp_nodelay true\n"),
        )
        .unwrap();
        let peer = Peer(
            Command::new(mosquitto())
                .arg("-c")
                .arg(&conf)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        eventually(Duration::from_secs(10), "mosquitto did not start", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        Broker { _peer: peer, port }
    }

    /// A Mosquitto that speaks only TLS, with a certificate from a CA made for the test;
    /// the CA's PEM file with it.
    fn start_tls(dir: &Path) -> (Broker, PathBuf) {
        test_certificates(dir);
        let tls = format!(
            "cafile {d}/ca.pem\ncertfile {d}/server.pem\nkeyfile {d}/server.key\n",
            d = dir.display()
        );
        (Broker::run(dir, &tls), dir.join("ca.pem"))
    }

    fn url(&self) -> String {
        format!("mqtt://127.0.0.1:{}", self.port)
    }

    /// `mosquitto_pub` / `mosquitto_sub` reaching this broker at QoS 1 on `topic`.
    fn client(&self, program: &str, topic: &str) -> Command {
        let mut c = Command::new(program);
        c.args([
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-q",
            "1",
            "-t",
            topic,
        ]);
        c
    }

    fn publish(&self, topic: &str, body: &str) {
        let ok = self
            .client("mosquitto_pub", topic)
            .args(["-m", body])
            .status()
            .unwrap()
            .success();
        assert!(ok, "mosquitto_pub failed");
    }

    /// Starts capturing `count` messages on `topic`; the lines come from the returned
    /// child's stdout.
    fn subscribe(&self, topic: &str, count: u32) -> std::process::Child {
        let c = self
            .client("mosquitto_sub", topic)
            .args(["-C", &count.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        // Subscribed before anything is published.
        std::thread::sleep(Duration::from_millis(300));
        c
    }
}

fn bulwark(state: &Path, args: &[&str]) -> String {
    let o = Command::new(BIN)
        .args(args)
        .arg("--state-dir")
        .arg(state)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "bulwark {args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The fleet service and its state directory.
struct Fleet {
    state: PathBuf,
    _peer: Peer,
    key: String,
}

impl Fleet {
    fn start(broker: &Broker) -> Fleet {
        let state = scratch();
        let key = bulwark(&state, &["fleet", "keys"]).trim().to_string();
        let peer = Peer(
            Command::new(BIN)
                .args([
                    "fleet",
                    "serve",
                    "--broker",
                    &broker.url(),
                    "--fleet",
                    "test",
                    "--state-dir",
                ])
                .arg(&state)
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        // Serving once it writes its device table.
        eventually(Duration::from_secs(15), "fleet serve did not start", || {
            state.join("fleet/devices.json").exists().then_some(())
        });
        Fleet {
            state,
            _peer: peer,
            key,
        }
    }

    fn verdict(&self, tool: &str, action: &str, ttl: u64) {
        bulwark(
            &self.state,
            &[
                "fleet",
                "verdict",
                "set",
                tool,
                "--action",
                action,
                "--ttl",
                &ttl.to_string(),
            ],
        );
    }

    fn devices(&self) -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(self.state.join("fleet/devices.json")).unwrap(),
        )
        .unwrap()
    }
}

fn policy_text(
    name: &str,
    broker: &str,
    key: &str,
    device: &str,
    mode: &str,
    extra: &str,
) -> String {
    format!(
        "version: 1\nname: {name}\n{extra}tools:\n  read_sensor:\n    capabilities: [device.sense]\n    escalate: true\n  read_gauge:\n    capabilities: [device.sense]\n    escalate: true\n  open_valve:\n    capabilities: [device.actuate]\n    escalate: true\nfleet:\n  broker: {broker}\n  device_id: {device}\n  name: test\n  public_key: {key}\n  mode: {mode}\n  timeout_ms: 1500\n  canary: {{window_secs: 30, minute_secs: 1, minutes: 3, factor: 5}}\n"
    )
}

/// Writes a device policy named `name` to `file` and publishes it as `version`, signed
/// with the key in `key_state`.
#[allow(clippy::too_many_arguments)]
fn publish_policy(
    key_state: &Path,
    file: &Path,
    broker: &Broker,
    fleet_key: &str,
    name: &str,
    device: &str,
    version: u64,
    extra: &str,
) {
    let text = policy_text(name, &broker.url(), fleet_key, device, "sync_block", extra);
    std::fs::write(file, text).unwrap();
    let v = version.to_string();
    bulwark(
        key_state,
        &[
            "fleet",
            "publish-policy",
            file.to_str().unwrap(),
            "--version",
            &v,
            "--broker",
            &broker.url(),
            "--fleet",
            "test",
        ],
    );
}

/// Sends a kill command signed with the key in `key_state`.
fn kill(key_state: &Path, broker: &Broker, command: &str, reason: &str) {
    bulwark(
        key_state,
        &[
            "fleet",
            "kill",
            command,
            "--reason",
            reason,
            "--broker",
            &broker.url(),
            "--fleet",
            "test",
        ],
    );
}

/// A `bulwark daemon` as a device.
struct Edge {
    state: PathBuf,
    _peer: Peer,
    sock: BufReader<UnixStream>,
    next: u64,
}

impl Edge {
    fn start(broker: &str, key: &str, device: &str, mode: &str) -> Edge {
        Edge::start_in(scratch(), broker, key, device, mode)
    }

    fn start_in(state: PathBuf, broker: &str, key: &str, device: &str, mode: &str) -> Edge {
        let _ = std::fs::remove_file(state.join("d.sock"));
        let policy = state.join("edge.yaml");
        if !policy.exists() {
            std::fs::write(&policy, policy_text("edge", broker, key, device, mode, "")).unwrap();
        }
        let socket = state.join("d.sock");
        let peer = Peer(
            Command::new(BIN)
                .arg("daemon")
                .arg("--socket")
                .arg(&socket)
                .arg("--state-dir")
                .arg(&state)
                .arg("--policy")
                .arg(&policy)
                .arg("--audit")
                .arg(state.join("audit.jsonl"))
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let s = eventually(Duration::from_secs(20), "the daemon did not start", || {
            UnixStream::connect(&socket).ok()
        });
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut e = Edge {
            state,
            _peer: peer,
            sock: BufReader::new(s),
            next: 0,
        };
        // Connected to the broker once the first report went out.
        std::thread::sleep(Duration::from_millis(500));
        e.next = 1;
        e
    }

    fn rpc(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let req = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        self.sock
            .get_mut()
            .write_all(format!("{req}\n").as_bytes())
            .unwrap();
        let mut line = String::new();
        self.sock.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap()["result"].clone()
    }

    fn evaluate(&mut self, tool: &str) -> Value {
        use sha2::{Digest, Sha256};
        let hash: String = Sha256::digest(tool.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        // Another reading each time: the loop guard is not what this is about.
        let content = format!("reading {}", self.next);
        self.rpc("evaluate", json!({"tool_name": tool, "tool_hash": hash, "capabilities": 0, "session_id": 1, "content": content}))
    }

    fn fleet_stats(&mut self) -> Value {
        self.rpc("stats", json!({}))["fleet"].clone()
    }

    fn audit(&self) -> String {
        std::fs::read_to_string(self.state.join("audit.jsonl")).unwrap_or_default()
    }
}

#[test]
fn sync_block_waits_for_the_fleet_and_unknown_tools_are_blocked() {
    let dir = scratch();
    let broker = Broker::start(&dir);
    let fleet = Fleet::start(&broker);
    fleet.verdict("read_sensor", "allow", 30);
    let mut edge = Edge::start(&broker.url(), &fleet.key, "edge-1", "sync_block");
    let first = edge.evaluate("read_sensor");
    assert_eq!(first["verdict"], "ALLOW", "{first}");
    assert_eq!(
        first["cache"], "miss",
        "the fleet answered, not the cache: {first}"
    );
    // Cached now: no second trip.
    let before = edge.fleet_stats()["replies"]["accepted"].as_u64().unwrap();
    let second = edge.evaluate("read_sensor");
    assert_eq!(second["verdict"], "ALLOW");
    assert_eq!(second["cache"], "hit", "{second}");
    assert_eq!(
        edge.fleet_stats()["replies"]["accepted"].as_u64().unwrap(),
        before
    );
    // A tool the fleet has no verdict for: BLOCK.
    let unknown = edge.evaluate("open_valve");
    assert_eq!(unknown["verdict"], "BLOCK", "{unknown}");
    assert_eq!(unknown["reason"], "CLOUD_BLOCK");
    // Hooks ask through `check`: the fleet answers there too.
    fleet.verdict("read_gauge", "allow", 30);
    let hooked = edge.rpc(
        "check",
        json!({"tool": "read_gauge", "args": {"gauge": 3}, "session": "hook-1"}),
    );
    assert_eq!(hooked["decision"], "allow", "{hooked}");
    // The service tracks the device.
    let devices = eventually(Duration::from_secs(5), "the device is tracked", || {
        let d = fleet.devices();
        (d["devices"]["edge-1"]["requests"].as_u64() >= Some(2)).then_some(d)
    });
    assert_eq!(
        devices["devices"]["edge-1"]["last_event"], "online",
        "{devices}"
    );
}

#[test]
fn with_the_broker_down_sync_block_blocks_and_speculative_allows() {
    let dead = format!("mqtt://127.0.0.1:{}", free_port());
    let key = "11".repeat(32);
    let mut sync = Edge::start(&dead, &key, "edge-s", "sync_block");
    let t0 = Instant::now();
    let r = sync.evaluate("read_sensor");
    assert_eq!(r["verdict"], "BLOCK", "{r}");
    assert_eq!(r["reason"], "CLOUD_TIMEOUT");
    assert!(t0.elapsed() < Duration::from_secs(5));
    let mut spec = Edge::start(&dead, &key, "edge-p", "speculative");
    let r = spec.evaluate("read_sensor");
    assert_eq!(r["verdict"], "PENDING", "{r}");
    assert_eq!(r["decision"], "allow");
}

#[test]
fn a_speculative_allow_that_the_fleet_blocks_is_recorded_as_retroactive() {
    let dir = scratch();
    let broker = Broker::start(&dir);
    let fleet = Fleet::start(&broker);
    fleet.verdict("open_valve", "block", 60);
    let mut edge = Edge::start(&broker.url(), &fleet.key, "edge-r", "speculative");
    let r = edge.evaluate("open_valve");
    assert_eq!(r["verdict"], "PENDING", "{r}");
    assert_eq!(r["decision"], "allow");
    eventually(Duration::from_secs(10), "a RETROACTIVE record", || {
        edge.audit().contains("RETROACTIVE").then_some(())
    });
    // From the cache now: blocked at once.
    let again = edge.evaluate("open_valve");
    assert_eq!(again["verdict"], "BLOCK", "{again}");
    assert_eq!(again["reason"], "CLOUD_BLOCK");
    assert_eq!(edge.fleet_stats()["retroactive_blocks"], 1);
}

#[test]
fn forged_replayed_and_misdirected_replies_are_dropped_and_counted() {
    let dir = scratch();
    let broker = Broker::start(&dir);
    let fleet = Fleet::start(&broker);
    fleet.verdict("read_sensor", "allow", 0);
    let mut one = Edge::start(&broker.url(), &fleet.key, "edge-1", "sync_block");
    let mut two = Edge::start(&broker.url(), &fleet.key, "edge-2", "sync_block");
    let capture = broker.subscribe("bulwark/v1/test/verdict/reply/edge-1", 1);
    assert_eq!(one.evaluate("read_sensor")["verdict"], "ALLOW");
    let out = capture.wait_with_output().unwrap();
    let genuine = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let reply: Value = serde_json::from_str(&genuine).unwrap();
    assert_eq!(reply["sig"]["alg"], "ed25519");
    // Replayed to its device; sent to another device; altered (BLOCK instead of ALLOW).
    broker.publish("bulwark/v1/test/verdict/reply/edge-1", &genuine);
    broker.publish("bulwark/v1/test/verdict/reply/edge-2", &genuine);
    let mut altered = reply.clone();
    altered["action"] = json!("BLOCK");
    broker.publish("bulwark/v1/test/verdict/reply/edge-1", &altered.to_string());
    broker.publish("bulwark/v1/test/verdict/reply/edge-1", "not json at all");
    let s1 = eventually(Duration::from_secs(10), "edge-1 counted both", || {
        let s = one.fleet_stats();
        (s["replies"]["replayed"] == 1
            && s["replies"]["forged"] == 1
            && s["dropped"].as_u64() >= Some(3))
        .then_some(s)
    });
    assert_eq!(s1["replies"]["accepted"], 1, "{s1}");
    assert!(s1["dropped"].as_u64().unwrap() >= 3, "{s1}");
    let s2 = eventually(Duration::from_secs(10), "edge-2 counted it", || {
        let s = two.fleet_stats();
        (s["replies"]["mismatched"] == 1).then_some(s)
    });
    assert_eq!(s2["replies"]["accepted"], 0, "{s2}");
    // Nothing of that reached a decision: TTL 0 was not cached, and a fresh call asks again.
    assert_eq!(one.evaluate("read_sensor")["verdict"], "ALLOW");
    assert_eq!(one.fleet_stats()["replies"]["accepted"], 2);
}

#[test]
fn signed_policy_updates_apply_and_older_or_forged_ones_do_not() {
    let dir = scratch();
    let broker = Broker::start(&dir);
    let fleet = Fleet::start(&broker);
    fleet.verdict("read_sensor", "allow", 30);
    let mut edge = Edge::start(&broker.url(), &fleet.key, "edge-1", "sync_block");
    assert!(
        edge.evaluate("read_sensor")["policy_version"]
            .as_str()
            .unwrap()
            .starts_with("edge@")
    );
    publish_policy(
        &fleet.state,
        &dir.join("v2.yaml"),
        &broker,
        &fleet.key,
        "edge-v2",
        "edge-1",
        2,
        "",
    );
    eventually(Duration::from_secs(10), "policy 2 in force", || {
        (edge.fleet_stats()["policy_version"] == 2).then_some(())
    });
    let r = edge.evaluate("read_sensor");
    assert!(
        r["policy_version"]
            .as_str()
            .unwrap()
            .starts_with("edge-v2@"),
        "{r}"
    );
    // An older version: refused (anti-rollback).
    publish_policy(
        &fleet.state,
        &dir.join("v1.yaml"),
        &broker,
        &fleet.key,
        "edge-old",
        "edge-1",
        1,
        "",
    );
    // Signed by another key: refused.
    let rogue = scratch();
    publish_policy(
        &rogue,
        &dir.join("v9.yaml"),
        &broker,
        &fleet.key,
        "edge-rogue",
        "edge-1",
        9,
        "lockdown: true\n",
    );
    eventually(Duration::from_secs(10), "both refusals counted", || {
        (edge.fleet_stats()["dropped"].as_u64() >= Some(2)).then_some(())
    });
    assert_eq!(edge.fleet_stats()["policy_version"], 2);
    let r = edge.evaluate("read_sensor");
    assert!(
        r["policy_version"]
            .as_str()
            .unwrap()
            .starts_with("edge-v2@"),
        "{r}"
    );
    assert_eq!(r["verdict"], "ALLOW");
    // The service saw the device report it.
    eventually(
        Duration::from_secs(5),
        "the report reached the service",
        || (fleet.devices()["devices"]["edge-1"]["policy_version"] == 2).then_some(()),
    );
}

#[test]
fn a_block_rate_spike_after_an_update_rolls_it_back() {
    let dir = scratch();
    let broker = Broker::start(&dir);
    let fleet = Fleet::start(&broker);
    fleet.verdict("read_sensor", "allow", 30);
    let mut edge = Edge::start(&broker.url(), &fleet.key, "edge-c", "sync_block");
    // A baseline: two "minutes" (1 s each here) of allowed calls.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(2200) {
        assert_eq!(edge.evaluate("read_sensor")["verdict"], "ALLOW");
        std::thread::sleep(Duration::from_millis(50));
    }
    // An update that blocks everything.
    publish_policy(
        &fleet.state,
        &dir.join("bad.yaml"),
        &broker,
        &fleet.key,
        "edge-bad",
        "edge-c",
        5,
        "lockdown: true\n",
    );
    eventually(Duration::from_secs(10), "the update applied", || {
        (edge.fleet_stats()["policy_version"] == 5).then_some(())
    });
    // Blocked minute after minute, until the canary restores the previous policy.
    let restored = eventually(Duration::from_secs(15), "rolled back", || {
        let r = edge.evaluate("read_sensor");
        std::thread::sleep(Duration::from_millis(50));
        (r["verdict"] == "ALLOW").then_some(r)
    });
    assert!(
        restored["policy_version"]
            .as_str()
            .unwrap()
            .starts_with("edge@"),
        "{restored}"
    );
    assert!(edge.audit().contains("rolled back to the previous policy"));
    eventually(
        Duration::from_secs(5),
        "the rollback reached the service",
        || (fleet.devices()["devices"]["edge-c"]["last_event"] == "rollback").then_some(()),
    );
}

#[test]
fn the_kill_switch_reaches_every_device_and_resume_lifts_it() {
    let dir = scratch();
    let broker = Broker::start(&dir);
    let fleet = Fleet::start(&broker);
    fleet.verdict("read_sensor", "allow", 30);
    let mut edges: Vec<Edge> = (1..=3)
        .map(|i| {
            Edge::start(
                &broker.url(),
                &fleet.key,
                &format!("edge-{i}"),
                "sync_block",
            )
        })
        .collect();
    for e in &mut edges {
        assert_eq!(e.evaluate("read_sensor")["verdict"], "ALLOW");
    }
    let t0 = Instant::now();
    kill(&fleet.state, &broker, "BLOCK_ALL", "incident 7");
    for e in &mut edges {
        let r = eventually(Duration::from_secs(10), "locked down", || {
            let r = e.evaluate("read_sensor");
            (r["verdict"] == "BLOCK").then_some(r)
        });
        assert_eq!(r["reason"], "LOCKDOWN", "{r}");
    }
    assert!(t0.elapsed() < Duration::from_secs(10));
    // A restart keeps it, even once the retained command is a later FLUSH_CACHE.
    let state = edges[0].state.clone();
    drop(edges.remove(0));
    kill(&fleet.state, &broker, "FLUSH_CACHE", "");
    let mut again = Edge::start_in(state, &broker.url(), &fleet.key, "edge-1", "sync_block");
    assert_eq!(again.evaluate("read_sensor")["reason"], "LOCKDOWN");
    edges.insert(0, again);
    // A kill command signed by anyone else is ignored.
    let rogue = scratch();
    kill(&rogue, &broker, "RESUME", "");
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(edges[0].evaluate("read_sensor")["reason"], "LOCKDOWN");
    kill(&fleet.state, &broker, "RESUME", "");
    for e in &mut edges {
        eventually(Duration::from_secs(10), "resumed", || {
            (e.evaluate("read_sensor")["verdict"] == "ALLOW").then_some(())
        });
    }
}

#[test]
fn over_tls_the_fleet_works_and_a_broker_from_another_ca_is_not_trusted() {
    let dir = scratch();
    let (broker, ca) = Broker::start_tls(&dir);
    let url = format!("mqtts://127.0.0.1:{}", broker.port);
    let state = scratch();
    let key = bulwark(&state, &["fleet", "keys"]).trim().to_string();
    let _serve = Peer(
        Command::new(BIN)
            .args([
                "fleet",
                "serve",
                "--broker",
                &url,
                "--fleet",
                "test",
                "--ca-file",
            ])
            .arg(&ca)
            .arg("--state-dir")
            .arg(&state)
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    bulwark(
        &state,
        &[
            "fleet",
            "verdict",
            "set",
            "read_sensor",
            "--action",
            "allow",
            "--ttl",
            "30",
        ],
    );
    let edge_state = scratch();
    let policy = policy_text("edge", &url, &key, "edge-t", "sync_block", "")
        + &format!("  ca_file: {}\n", ca.display());
    std::fs::write(edge_state.join("edge.yaml"), &policy).unwrap();
    let mut edge = Edge::start_in(edge_state, &url, &key, "edge-t", "sync_block");
    let r = eventually(Duration::from_secs(15), "a verdict over TLS", || {
        let r = edge.evaluate("read_sensor");
        (r["verdict"] == "ALLOW").then_some(r)
    });
    assert_eq!(edge.evaluate("read_sensor")["cache"], "hit", "{r}");
    // A device trusting another CA never connects: its escalations time out (blocked).
    let other = scratch();
    let o = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "o.key",
            "-out",
            "o.pem",
            "-days",
            "2",
            "-subj",
            "/CN=other-ca",
        ])
        .current_dir(&other)
        .output()
        .unwrap();
    assert!(o.status.success());
    let policy = policy_text("edge", &url, &key, "edge-x", "sync_block", "")
        + &format!("  ca_file: {}\n", other.join("o.pem").display());
    std::fs::write(other.join("edge.yaml"), &policy).unwrap();
    let mut stranger = Edge::start_in(other, &url, &key, "edge-x", "sync_block");
    let r = stranger.evaluate("read_sensor");
    assert_eq!(r["reason"], "CLOUD_TIMEOUT", "{r}");
}

fn front_policy(dir: &Path, broker: &Broker, key: &str, device: &str, mode: &str) -> PathBuf {
    let policy = dir.join(format!("{device}.yaml"));
    let text = format!(
        "version: 1\nname: {device}\ntools:\n  echo:\n    capabilities: [fs.read]\n    escalate: true\n  get-sum:\n    capabilities: [fs.read]\n    escalate: true\n  read_sensor:\n    capabilities: [device.sense]\n    escalate: true\n  open_valve:\n    capabilities: [device.actuate]\n    escalate: true\nfleet:\n  broker: {}\n  device_id: {device}\n  name: test\n  public_key: {key}\n  mode: {mode}\n  timeout_ms: 1500\n",
        broker.url()
    );
    std::fs::write(&policy, text).unwrap();
    policy
}

/// `bulwark mcp` over stdio around server-everything, driven line by line.
struct McpEdge {
    _peer: Peer,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<Value>,
    next: u64,
}

impl McpEdge {
    fn start(state: &Path, policy: &Path) -> McpEdge {
        let mut child = Command::new(BIN)
            .arg("mcp")
            .arg("--state-dir")
            .arg(state)
            .arg("--policy")
            .arg(policy)
            .arg("--")
            .arg("node")
            .arg(common::node_server("server-everything"))
            .arg("stdio")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    panic!("the gateway wrote invalid JSON: {line}")
                };
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let mut edge = McpEdge {
            _peer: Peer(child),
            stdin,
            lines,
            next: 0,
        };
        edge.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        edge.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        edge
    }

    fn send(&mut self, msg: Value) {
        self.stdin.write_all(format!("{msg}\n").as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let v = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .expect("no answer from the gateway");
            if v["id"] == id {
                return v;
            }
        }
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }
}

/// The MCP gateway is a fleet device like the daemon: a `sync_block` call waits for the
/// fleet's verdict, an unknown tool is blocked, a cached verdict answers without a trip,
/// and the kill switch stops its calls until `RESUME`.
#[test]
fn the_mcp_gateway_escalates_to_the_fleet_and_obeys_its_kill_switch() {
    let dir = scratch();
    let broker = Broker::start(&dir);
    let fleet = Fleet::start(&broker);
    fleet.verdict("echo", "allow", 30);
    let state = scratch();
    let policy = front_policy(&state, &broker, &fleet.key, "mcp-edge", "sync_block");
    let mut mcp = McpEdge::start(&state, &policy);
    // The first call may race the client's connection to the broker.
    let first = eventually(Duration::from_secs(15), "echo through the fleet", || {
        let r = mcp.call("echo", json!({"message": "hello fleet"}));
        r.get("result").is_some().then_some(r)
    });
    assert_eq!(
        first["result"]["content"][0]["text"], "Echo: hello fleet",
        "{first}"
    );
    // Unknown to the fleet: blocked, with the decision in the error.
    let unknown = mcp.call("get-sum", json!({"a": 1, "b": 2}));
    assert!(
        unknown["error"].to_string().contains("CLOUD_BLOCK"),
        "{unknown}"
    );
    // Cached: another echo costs the fleet service no request.
    let requests = || fleet.devices()["devices"]["mcp-edge"]["requests"].as_u64();
    eventually(Duration::from_secs(5), "the device is tracked", || {
        (requests() >= Some(2)).then_some(())
    });
    std::thread::sleep(Duration::from_millis(700));
    let before = requests();
    let again = mcp.call("echo", json!({"message": "again"}));
    assert!(again.get("result").is_some(), "{again}");
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(requests(), before, "a cached verdict needs no trip");
    kill(&fleet.state, &broker, "BLOCK_ALL", "incident 9");
    let r = eventually(Duration::from_secs(10), "locked down", || {
        let r = mcp.call("echo", json!({"message": "during"}));
        r.get("error").is_some().then_some(r)
    });
    assert!(r["error"].to_string().contains("LOCKDOWN"), "{r}");
    kill(&fleet.state, &broker, "RESUME", "");
    eventually(Duration::from_secs(10), "resumed", || {
        mcp.call("echo", json!({"message": "after"}))
            .get("result")
            .map(|_| ())
    });
}

/// The LLM proxy is a fleet device too: a proposed call to an escalated tool is released
/// on the fleet's allow and withheld on its block, and the kill switch withholds every
/// call, in requests with and without a session.
#[test]
fn the_llm_proxy_escalates_to_the_fleet_and_obeys_its_kill_switch() {
    let dir = scratch();
    let broker = Broker::start(&dir);
    let fleet = Fleet::start(&broker);
    fleet.verdict("read_sensor", "allow", 30);
    let policy = front_policy(&dir, &broker, &fleet.key, "proxy-edge", "sync_block");
    let peers = common::root().join("crates/bulwark-llm/tests/peers");
    let (_model, model_url) = common::model_api(&dir);
    let listen = format!("127.0.0.1:{}", free_port());
    let _proxy = Peer(
        Command::new(BIN)
            .args(["proxy", "--listen", &listen, "--upstream", &model_url])
            .arg("--state-dir")
            .arg(dir.join("state"))
            .arg("--policy")
            .arg(&policy)
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    eventually(Duration::from_secs(30), "the proxy did not start", || {
        std::net::TcpStream::connect(&listen).ok()
    });
    let sdk = |tool: &str, session: Option<&str>| -> Value {
        let mut sc = json!({"api": "chat", "base": format!("http://{listen}"),
            "ask": {"text": "On it.", "calls": [{"name": tool, "args": {"sensor": "t1"}}]}});
        if let Some(s) = session {
            sc["headers"] = json!({"X-Bulwark-Session": s});
        }
        let out = Command::new(common::python())
            .arg(peers.join("sdk_llm.py"))
            .arg(sc.to_string())
            .env("PYTHONWARNINGS", "ignore")
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!(
                "sdk_llm.py: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    };
    let released = eventually(Duration::from_secs(15), "read_sensor released", || {
        let out = sdk("read_sensor", None);
        (out["calls"].as_array().map(Vec::len) == Some(1)).then_some(out)
    });
    assert_eq!(released["calls"][0]["name"], "read_sensor", "{released}");
    // A request without a session is decided in a scratch state, but from the proxy's
    // verdict cache: no second trip.
    let requests = || fleet.devices()["devices"]["proxy-edge"]["requests"].as_u64();
    eventually(Duration::from_secs(5), "the device is tracked", || {
        (requests() >= Some(1)).then_some(())
    });
    std::thread::sleep(Duration::from_millis(700));
    let before = requests();
    let again = sdk("read_sensor", None);
    assert_eq!(again["calls"][0]["name"], "read_sensor", "{again}");
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(requests(), before, "a cached verdict needs no trip");
    let withheld = sdk("open_valve", Some("agent-1"));
    assert_eq!(withheld["calls"], json!([]), "{withheld}");
    assert_eq!(
        withheld["bulwark"]["blocked"][0]["reason_code"], "CLOUD_BLOCK",
        "{withheld}"
    );
    kill(&fleet.state, &broker, "BLOCK_ALL", "incident 10");
    for session in [None, Some("agent-1")] {
        let out = eventually(Duration::from_secs(10), "locked down", || {
            let out = sdk("read_sensor", session);
            (out["calls"] == json!([])).then_some(out)
        });
        assert_eq!(
            out["bulwark"]["blocked"][0]["reason_code"], "LOCKDOWN",
            "{session:?}: {out}"
        );
    }
    kill(&fleet.state, &broker, "RESUME", "");
    eventually(Duration::from_secs(10), "resumed", || {
        let out = sdk("read_sensor", None);
        (out["calls"].as_array().map(Vec::len) == Some(1)).then_some(())
    });
}

/// In `speculative` mode the gateway lets an escalated call through at once; the fleet's
/// later block is cached, and the next call is refused.
#[test]
fn a_speculative_mcp_gateway_passes_at_once_and_takes_the_fleets_block_later() {
    let dir = scratch();
    let broker = Broker::start(&dir);
    let fleet = Fleet::start(&broker);
    let state = scratch();
    let policy = front_policy(&state, &broker, &fleet.key, "mcp-spec", "speculative");
    let mut mcp = McpEdge::start(&state, &policy);
    // get-sum is unknown to the fleet: it passes now, and is blocked once the answer is in.
    let first = mcp.call("get-sum", json!({"a": 1, "b": 2}));
    assert!(first.get("result").is_some(), "{first}");
    let later = eventually(Duration::from_secs(15), "the fleet's block arrives", || {
        let r = mcp.call("get-sum", json!({"a": 2, "b": 3}));
        r.get("error").is_some().then_some(r)
    });
    assert!(
        later["error"].to_string().contains("CLOUD_BLOCK"),
        "{later}"
    );
}

/// Two processes may not be one fleet device: the broker would drop each for the other.
/// The second gateway with the same device id and state refuses to start, naming why.
#[test]
fn a_second_process_with_the_same_device_identity_refuses_to_start() {
    let dir = scratch();
    let broker = Broker::start(&dir);
    let state = scratch();
    let key = "11".repeat(32);
    let policy = front_policy(&state, &broker, &key, "mcp-twin", "sync_block");
    let _first = McpEdge::start(&state, &policy);
    let second = Command::new(BIN)
        .arg("mcp")
        .arg("--state-dir")
        .arg(&state)
        .arg("--policy")
        .arg(&policy)
        .arg("--")
        .arg("node")
        .arg(common::node_server("server-everything"))
        .arg("stdio")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{err}");
    assert!(
        err.contains("another bulwark process is fleet device \"mcp-twin\""),
        "{err}"
    );
}

/// Over Streamable HTTP, in both protocol eras (a legacy session, and a 2026-07-28 client
/// the gateway serves by wrapping its requests), the official SDK's calls are decided by
/// the fleet: `echo` passes on its allow, `get-sum` is refused on its block.
#[test]
fn over_http_the_mcp_gateway_asks_the_fleet_in_both_eras() {
    let dir = scratch();
    let broker = Broker::start(&dir);
    let fleet = Fleet::start(&broker);
    fleet.verdict("echo", "allow", 30);
    let state = scratch();
    let policy = front_policy(&state, &broker, &fleet.key, "mcp-http", "sync_block");
    let (_gw, listen) = common::mcp_listen_everything(&state, &policy);
    for (url, era) in [
        (format!("http://{listen}/mcp"), "2025-11-25"),
        (format!("auto+http://{listen}/mcp"), "2026-07-28"),
    ] {
        let out = eventually(Duration::from_secs(30), "echo through the fleet", || {
            let o = Command::new(common::python())
                .arg(common::peers_dir().join("sdk_client.py"))
                .arg("everything")
                .arg(&url)
                .output()
                .unwrap();
            let v: Value = serde_json::from_slice(&o.stdout).ok()?;
            v["echo"].get("ok").is_some().then_some(v)
        });
        assert_eq!(out["protocol"], era, "{url}");
        assert_eq!(
            out["echo"]["ok"]["content"][0]["text"], "Echo: hello through the gateway",
            "{url}: {out}"
        );
        assert_eq!(
            out["sum"]["error"]["data"]["reason_code"], "CLOUD_BLOCK",
            "{url}: {}",
            out["sum"]
        );
    }
}
