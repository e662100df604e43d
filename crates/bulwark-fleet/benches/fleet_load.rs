//! Load harness for the fleet: DEVICES devices (default 1000), each with its own MQTT
//! connection, in one process, against one fleet service, through a Mosquitto started on
//! a free loopback port. Every device asks ROUNDS verdicts (default 10) one after
//! another, all devices at once; the harness reports the verdict round trip (request
//! published → signed reply verified) p50/p99 and the messages per second the broker
//! carried (requests and replies).
//! Run: `cargo bench -p bulwark-fleet --bench fleet_load` (DEVICES=N ROUNDS=N).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use bulwark_fleet::auth::{FleetSigner, Trust};
use bulwark_fleet::client::{ClientConfig, FleetClient};
use bulwark_fleet::device::{Device, Escalation};
use bulwark_fleet::service::{FleetService, StoredVerdict, VerdictStore};
use bulwark_fleet::wire::Action;
use sha2::{Digest, Sha256};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let devices = env("DEVICES", 1000);
    let rounds = env("ROUNDS", 10);
    let dir = std::env::temp_dir().join(format!("bwk-fleet-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let conf = dir.join("mosquitto.conf");
    std::fs::write(
        &conf,
        format!("listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\nmax_queued_messages 10000\n"),
    )
    .unwrap();
    let mosquitto = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("mosquitto is not installed (scripts/setup-peers)");
    let mut broker = std::process::Command::new(mosquitto)
        .arg("-c")
        .arg(&conf)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let signer = FleetSigner::from_seed(&[7; 32]);
    let public = signer.public_hex();
    let store = VerdictStore::open(&dir.join("verdicts.json")).unwrap();
    let hash: String = Sha256::digest(b"read_sensor")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    store
        .set(
            &hash,
            Some(StoredVerdict {
                action: Action::Allow,
                ttl_min: 1,
                tool: None,
                note: String::new(),
            }),
        )
        .unwrap();
    let service = Arc::new(FleetService::new("load", signer, store));
    let (samples, elapsed, failed) = rt.block_on(async move {
        let s = Arc::clone(&service);
        tokio::spawn(async move {
            s.serve("127.0.0.1", port, None, std::future::pending(), |_| {})
                .await
        });
        let mut clients = Vec::new();
        for i in 0..devices {
            let id = format!("dev-{i:05}");
            let device = Device::new(&id, Trust::fleet_hex(&public).unwrap(), 1);
            let mut seed = [0u8; 32];
            seed[..8].copy_from_slice(&(i as u64).to_le_bytes());
            let (c, _events) = FleetClient::start(
                ClientConfig {
                    host: "127.0.0.1".into(),
                    port,
                    fleet: "load".into(),
                    device: id,
                    tls: None,
                },
                device,
                seed,
            );
            clients.push((c, _events));
        }
        // Everyone connected and subscribed: wait until a probe round trip works for each.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let started = Instant::now();
        let mut tasks = Vec::new();
        for (c, _) in &clients {
            let c = Arc::clone(c);
            tasks.push(tokio::spawn(async move {
                let mut out = Vec::new();
                let mut failed = 0;
                for _ in 0..rounds {
                    let e = Escalation {
                        tool: "read_sensor",
                        content: "42",
                        ..Escalation::default()
                    };
                    let t0 = Instant::now();
                    match c.escalate(&e, Some(Duration::from_secs(10))).await {
                        Some(_) => out.push(t0.elapsed()),
                        None => failed += 1,
                    }
                }
                (out, failed)
            }));
        }
        let mut all = Vec::new();
        let mut failed = 0;
        for t in tasks {
            let (s, f) = t.await.unwrap();
            all.extend(s);
            failed += f;
        }
        (all, started.elapsed(), failed)
    });
    let _ = broker.kill();
    let _ = broker.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let mut s = samples;
    s.sort();
    let pct = |p: f64| s[((s.len() as f64 - 1.0) * p).round() as usize];
    let n = s.len();
    println!(
        "fleet load: {devices} devices x {rounds} rounds, {n} verdicts, {failed} without an answer"
    );
    println!(
        "verdict round trip: p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        s[n - 1].as_secs_f64() * 1e3
    );
    println!(
        "throughput: {:.0} verdicts/s, {:.0} messages/s through the broker (request + reply), over {:.2} s",
        n as f64 / elapsed.as_secs_f64(),
        2.0 * n as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64()
    );
}
