//! The operator's side of the fleet, as `bulwark fleet …` drives it: the fleet's signing key
//! and sequence counters in one directory (`STATE_DIR/fleet`), signed policy pushes and kill
//! commands, the verdict store, and the fleet service writing the devices it has seen.
//!
//! The device's side is [`crate::runtime`]; this is the other end. What is kept on disk:
//!
//! - `signing.key` — the fleet key's seed, 64 hex digits, mode 0600, made on first use
//!   (unless the caller hands a seed in); `signing.pub` beside it for devices;
//! - `policy.seq`, `kill.seq` — the last sequence number sent on each topic. Devices drop a
//!   number they have seen, so a number must never repeat: each is at least the clock in
//!   milliseconds, and a lost counter file cannot replay old numbers;
//! - `verdicts.json` — the verdicts the service answers with ([`VerdictStore`]);
//! - `devices.json` — what `serve` has seen, rewritten whole (write, then rename).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::auth::FleetSigner;
use crate::runtime::Broker;
use crate::service::{FleetService, StoreError, VerdictStore};
use crate::wire::{Action, Kill, KillCommand, PolicyUpdate, VERSION};

/// What went wrong with the operator's directory or its files: what, and where.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// A file or directory could not be read or written.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// A key is not 64 hex digits.
    #[error("{0} does not hold 64 hex digits")]
    BadKey(String),
    /// No random key could be made.
    #[error("cannot make a fleet key: {0}")]
    Random(String),
    /// The verdict store could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// `bulwark fleet serve` has not written its status yet.
    #[error("{0} is missing: is `bulwark fleet serve` running?")]
    NoStatus(PathBuf),
    /// A fleet name that cannot be a topic segment.
    #[error("--fleet {0:?}: letters, digits, '-', '_' and '.' only")]
    BadFleet(String),
}

type Result<T, E = OperatorError> = std::result::Result<T, E>;

use crate::runtime::{hex, now_ms};

/// The operator's directory (`STATE_DIR/fleet`).
pub struct Operator {
    dir: PathBuf,
}

impl Operator {
    /// The directory `fleet` under `state_dir`, made if missing.
    pub fn open(state_dir: &Path) -> Result<Operator> {
        let dir = state_dir.join("fleet");
        std::fs::create_dir_all(&dir).map_err(|e| OperatorError::Io(dir.clone(), e))?;
        Ok(Operator { dir })
    }

    /// The fleet's signing key: from `seed` (64 hex digits, e.g. an environment variable)
    /// when given, else from `signing.key`, made on first use. Writes the public key to
    /// `signing.pub`.
    pub fn signer(&self, seed: Option<&str>) -> Result<FleetSigner> {
        let seed = match seed {
            Some(v) => bulwark_audit::keys::unhex32(v)
                .ok_or_else(|| OperatorError::BadKey("the given fleet key".into()))?,
            None => {
                let path = self.dir.join("signing.key");
                match std::fs::read_to_string(&path) {
                    Ok(t) => bulwark_audit::keys::unhex32(&t)
                        .ok_or_else(|| OperatorError::BadKey(path.display().to_string()))?,
                    Err(_) => {
                        use std::os::unix::fs::OpenOptionsExt;
                        let key = bulwark_audit::keys::random32()
                            .map_err(|e| OperatorError::Random(e.to_string()))?;
                        let io = |e| OperatorError::Io(path.clone(), e);
                        // create_new: two first uses at once never overwrite each other's key.
                        let mut f = std::fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .mode(0o600)
                            .open(&path)
                            .map_err(io)?;
                        std::io::Write::write_all(&mut f, hex(&key).as_bytes()).map_err(io)?;
                        key
                    }
                }
            }
        };
        let s = FleetSigner::from_seed(&seed);
        let _ = std::fs::write(self.dir.join("signing.pub"), s.public_hex());
        Ok(s)
    }

    /// The next number of the counter in file `name` (sequence numbers must never repeat).
    fn next_seq(&self, name: &str) -> Result<u64> {
        let path = self.dir.join(name);
        let cur = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .unwrap_or(0);
        // Never below the clock, so a lost counter file does not replay old numbers.
        let next = (cur + 1).max(now_ms());
        std::fs::write(&path, next.to_string()).map_err(|e| OperatorError::Io(path, e))?;
        Ok(next)
    }

    /// A policy update for `policy` (the caller has checked it loads) as version
    /// `version`, with the next policy sequence number, signed.
    pub fn policy_update(
        &self,
        signer: &FleetSigner,
        policy: String,
        version: u64,
    ) -> Result<PolicyUpdate> {
        let mut u = PolicyUpdate {
            v: VERSION,
            version,
            seq: self.next_seq("policy.seq")?,
            sha256: hex(&Sha256::digest(policy.as_bytes())),
            policy,
            sig: None,
        };
        u.sig = Some(signer.sign("policy", &u));
        Ok(u)
    }

    /// A kill message with the next kill sequence number, signed.
    pub fn kill(&self, signer: &FleetSigner, command: KillCommand, reason: String) -> Result<Kill> {
        let mut k = Kill {
            v: VERSION,
            seq: self.next_seq("kill.seq")?,
            command,
            reason,
            sig: None,
        };
        k.sig = Some(signer.sign("kill", &k));
        Ok(k)
    }

    /// The verdict store the service answers from.
    pub fn verdicts(&self) -> Result<VerdictStore> {
        Ok(VerdictStore::open(&self.dir.join("verdicts.json"))?)
    }

    /// What `serve` last wrote about the devices it has seen (JSON).
    pub fn status(&self) -> Result<String> {
        let path = self.dir.join("devices.json");
        std::fs::read_to_string(&path).map_err(|_| OperatorError::NoStatus(path))
    }

    /// Serves fleet `fleet` on `broker` until `stop` completes: answers escalations from
    /// the verdict store, signed with `signer`, and keeps `devices.json` up to date.
    pub async fn serve(
        &self,
        fleet: &str,
        broker: &Broker,
        signer: FleetSigner,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<()> {
        if !crate::topics::valid_id(fleet) {
            return Err(OperatorError::BadFleet(fleet.to_string()));
        }
        let service = Arc::new(FleetService::new(fleet, signer, self.verdicts()?));
        let status = self.dir.join("devices.json");
        service
            .serve(
                &broker.host,
                broker.port,
                broker.tls.clone(),
                stop,
                move |s| {
                    let doc = json!({
                        "devices": s.devices(),
                        "answered": s.answered.load(Ordering::Relaxed),
                        "dropped": s.dropped.load(Ordering::Relaxed),
                    });
                    let tmp = status.with_extension("tmp");
                    if std::fs::write(&tmp, doc.to_string()).is_ok() {
                        let _ = std::fs::rename(&tmp, &status);
                    }
                },
            )
            .await;
        Ok(())
    }
}

/// The tool hash a verdict is filed under: `tool` itself when it is one (64 hex digits,
/// lower-cased), else the SHA-256 of the name.
pub fn tool_hash(tool: &str) -> String {
    if tool.len() == 64 && tool.bytes().all(|b| b.is_ascii_hexdigit()) {
        tool.to_ascii_lowercase()
    } else {
        hex(&Sha256::digest(tool.as_bytes()))
    }
}

/// A verdict action as an operator types it: `allow`, `warn` or `block`, in any case.
pub fn parse_action(text: &str) -> Option<Action> {
    match text.to_ascii_lowercase().as_str() {
        "allow" => Some(Action::Allow),
        "warn" => Some(Action::Warn),
        "block" => Some(Action::Block),
        _ => None,
    }
}

/// A kill command as an operator types it: `BLOCK_ALL`, `LOCKDOWN`, `FLUSH_CACHE` or
/// `RESUME`, in any case, `-` for `_`.
pub fn parse_kill(text: &str) -> Option<KillCommand> {
    match text.to_ascii_uppercase().replace('-', "_").as_str() {
        "BLOCK_ALL" => Some(KillCommand::BlockAll),
        "LOCKDOWN" => Some(KillCommand::Lockdown),
        "FLUSH_CACHE" => Some(KillCommand::FlushCache),
        "RESUME" => Some(KillCommand::Resume),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_never_repeat_and_never_fall_below_the_clock() {
        let dir = std::env::temp_dir().join(format!("bulwark-operator-{}", std::process::id()));
        let op = Operator::open(&dir).unwrap();
        let s = op.signer(Some(&"07".repeat(32))).unwrap();
        let a = op.kill(&s, KillCommand::Resume, String::new()).unwrap();
        let b = op.kill(&s, KillCommand::Resume, String::new()).unwrap();
        assert!(b.seq > a.seq);
        assert!(a.seq >= now_ms() - 60_000);
        // A counter far ahead of the clock keeps counting from where it is.
        std::fs::write(dir.join("fleet/policy.seq"), (u64::MAX / 2).to_string()).unwrap();
        let u = op.policy_update(&s, "rules: []\n".into(), 3).unwrap();
        assert_eq!(u.seq, u64::MAX / 2 + 1);
        assert_eq!(u.sha256, hex(&Sha256::digest(b"rules: []\n")));
        assert!(u.sig.is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_made_key_is_kept_and_a_bad_one_is_refused() {
        let dir = std::env::temp_dir().join(format!("bulwark-operator-key-{}", std::process::id()));
        let op = Operator::open(&dir).unwrap();
        let first = op.signer(None).unwrap().public_hex();
        assert_eq!(op.signer(None).unwrap().public_hex(), first);
        assert_eq!(
            std::fs::read_to_string(dir.join("fleet/signing.pub")).unwrap(),
            first
        );
        assert!(matches!(
            op.signer(Some("not hex")),
            Err(OperatorError::BadKey(_))
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn tool_hashes_and_typed_words() {
        let h = "AB".repeat(32);
        assert_eq!(tool_hash(&h), "ab".repeat(32));
        assert_eq!(tool_hash("send_email").len(), 64);
        assert_eq!(parse_action("BLOCK"), Some(Action::Block));
        assert_eq!(parse_action("deny"), None);
        assert_eq!(parse_kill("block-all"), Some(KillCommand::BlockAll));
        assert_eq!(parse_kill("stop"), None);
    }
}
