//! Bulwark's audit record: a log nobody can quietly edit.
//!
//! Every decision becomes one JSON line. Each line carries the HMAC-SHA256 of the previous
//! line's MAC and its own canonical content, so editing, dropping, inserting or reordering a
//! line breaks the chain at that line. Every so many lines, and at shutdown, a checkpoint
//! states the keyless SHA-256 chain so far and is signed with Ed25519: an auditor holding
//! only the public key checks every checkpoint and everything it covers. The format is in
//! docs/audit-format.md, so another tool can verify it.
//!
//! ```
//! use bulwark_audit::{AuditKeys, AuditLog, Entry, Options, verify, VerifyKey};
//! use bulwark_engine::{Call, Engine, Now, State};
//!
//! let dir = std::env::temp_dir().join(format!("bulwark-audit-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("audit.jsonl");
//! let keys = AuditKeys::from_bytes([1; 32], [2; 32]);
//! let log = AuditLog::open(&path, keys.clone(), "check", Options::default()).unwrap();
//!
//! let engine = Engine::new(bulwark_policy::Policy::builtin().unwrap());
//! let call = Call::request("s1", "bash", serde_json::json!({"command": "rm -rf /"}));
//! let d = engine.evaluate(&call, &mut State::new(engine.policy()), Now::at(0));
//! log.record(&Entry { front: "check", session: "s1", principal: None, server: None,
//!     direction: "request", args: &call.args, definition: None, decision: &d,
//!     refused: false }).unwrap();
//! log.close().unwrap();
//!
//! let file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
//! let report = verify(file, &VerifyKey::Public(keys.public())).unwrap();
//! assert!(report.closed);
//! assert_eq!(report.decisions, 1);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

pub mod files;
pub mod keys;
pub mod log;
pub mod metrics;
pub mod otlp;
pub mod record;
pub mod telemetry;
pub mod verify;

pub use keys::{AuditKeys, KeyError};
pub use log::{AuditError, AuditLog, Entry, Options};
pub use verify::{Failure, Report, VerifyKey, verify};
