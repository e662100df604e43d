//! The audit log is the truth: decisions the telemetry store never got (the process died
//! with rows still queued) are rebuilt from the log when a front opens it again.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};

use bulwark_audit::telemetry::{self, Filter, Retention};
use bulwark_audit::{AuditKeys, AuditLog, Entry, Options};
use bulwark_engine::{Call, Engine, Now, State};

fn keys() -> AuditKeys {
    AuditKeys::from_bytes([3; 32], [4; 32])
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bulwark-tele-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Records `n` decisions in the log at `path`; with `store`, through telemetry too.
fn record(path: &Path, n: u64, store: Option<&Path>) {
    let log = AuditLog::open(path, keys(), "check", Options::default()).unwrap();
    if let Some(db) = store {
        let (sink, thread) =
            telemetry::start_for(db, Retention::default(), 64, Some(log.telemetry_source()))
                .unwrap();
        log.attach_telemetry(sink, thread);
    }
    let engine = Engine::new(bulwark_policy::Policy::builtin().unwrap());
    let mut state = State::new(engine.policy());
    for i in 0..n {
        let cmd = if i % 3 == 0 { "rm -rf /" } else { "ls" };
        let call = Call::request("s1", "bash", serde_json::json!({"command": cmd}));
        let d = engine.evaluate(&call, &mut state, Now::at(i));
        log.record(&Entry::for_call("check", &call, &d)).unwrap();
    }
    log.close().unwrap();
}

fn stats(db: &Path) -> telemetry::Stats {
    telemetry::stats(&telemetry::open_db(db).unwrap(), &Filter::default()).unwrap()
}

#[test]
fn decisions_the_store_never_got_are_rebuilt_from_the_log_once() {
    let dir = scratch("rebuild");
    let (path, db) = (dir.join("audit.jsonl"), dir.join("telemetry.db"));
    // 30 decisions reach the log but not the store (as when a process is killed with its
    // telemetry queue full).
    record(&path, 30, None);
    // The next front to open the log rebuilds them, and adds its own 5.
    record(&path, 5, Some(db.as_path()));
    let s = stats(&db);
    assert_eq!(s.total, 35, "{s:?}");
    assert_eq!(s.recovered, 30, "{s:?}");
    // Rebuilt as recorded: the verdicts are the log's.
    let logged_blocks = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter(|l| {
            l.contains("\"type\":\"decision\"")
                && l.contains("\"decision\":{\"decision\":\"block\"")
        })
        .count() as u64;
    let blocks = s
        .by_decision
        .iter()
        .find(|(d, _)| d == "block")
        .map(|(_, n)| *n);
    assert!(logged_blocks > 0);
    assert_eq!(blocks, Some(logged_blocks), "{s:?}");
    // Reopening finds nothing missing: no row twice.
    record(&path, 0, Some(db.as_path()));
    let s = stats(&db);
    assert_eq!((s.total, s.recovered), (35, 30), "{s:?}");
}
