//! The used-token ledger of the in-process store: the approval tokens already honoured, so
//! each approves one call only — across restarts too.
//!
//! The token itself ([`bulwark_engine::token`]) is bound to one call's digest and an
//! expiry; this ledger adds single use. A used token is written to a file under the state
//! directory before the call it approved is released. Every front that honours tokens goes
//! through the gate's one ledger ([`crate::Store::claim_token`]).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Most tokens remembered as used; past it, expired ones are forgotten, and if none has
/// expired, no new token is honoured (fail closed).
pub const MAX_USED: usize = 100_000;

/// Tokens already honoured, by MAC, with their expiry (Unix seconds).
pub struct Ledger {
    map: Mutex<HashMap<String, u64>>,
    file: Option<PathBuf>,
}

/// Why the used-token file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("cannot keep the used approval tokens at {path}: {source}")]
pub struct UsedError {
    path: String,
    source: std::io::Error,
}

/// The part of a token the ledger keeps: its MAC, which no two tokens share.
pub fn mac_of(token: &str) -> &str {
    token.trim().rsplit('.').next().unwrap_or("")
}

impl Ledger {
    /// An in-memory set (tests; a proxy without a state directory).
    pub fn in_memory() -> Ledger {
        Ledger {
            map: Mutex::new(HashMap::new()),
            file: None,
        }
    }

    /// The set kept in `path`, with entries that expired before `now_s` dropped.
    pub fn open(path: &Path, now_s: u64) -> Result<Ledger, UsedError> {
        let mut map = HashMap::new();
        match std::fs::read_to_string(path) {
            Ok(text) => {
                for line in text.lines() {
                    let mut parts = line.split(' ');
                    if let (Some(exp), Some(mac)) = (parts.next(), parts.next())
                        && let Ok(exp) = exp.parse::<u64>()
                        && exp > now_s
                        && map.len() < MAX_USED
                    {
                        map.insert(mac.to_string(), exp);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(UsedError {
                    path: path.display().to_string(),
                    source,
                });
            }
        }
        Ok(Ledger {
            map: Mutex::new(map),
            file: Some(path.to_path_buf()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        match self.map.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        }
    }

    /// Whether `token` was honoured before (or cannot be remembered: then it reads as used).
    pub fn is_used(&self, token: &str) -> bool {
        let m = self.lock();
        m.contains_key(mac_of(token)) || m.len() >= MAX_USED
    }

    /// Claims `token` for one use until `expires_s`: `false` when it is used already (or
    /// the set is full of unexpired tokens). Claiming and checking are one step, so two
    /// requests racing with the same token cannot both have it.
    pub fn claim(&self, token: &str, expires_s: u64, now_s: u64) -> bool {
        let mac = mac_of(token).to_string();
        let mut m = self.lock();
        if m.len() >= MAX_USED {
            m.retain(|_, exp| *exp > now_s);
        }
        if m.len() >= MAX_USED || m.contains_key(&mac) {
            return false;
        }
        m.insert(mac, expires_s);
        true
    }

    /// Gives back a claim that was not used (the call it approves was not proposed).
    pub fn release(&self, token: &str) {
        self.lock().remove(mac_of(token));
    }

    /// Records a claimed token as used on disk, so a restart does not revive it. On an
    /// error the call it approved must not be released.
    pub fn persist(&self, token: &str, expires_s: u64) -> Result<(), UsedError> {
        let Some(path) = &self.file else {
            return Ok(());
        };
        let line = format!("{expires_s} {}\n", mac_of(token));
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(line.as_bytes()).and_then(|()| f.sync_data()))
            .map_err(|source| UsedError {
                path: path.display().to_string(),
                source,
            })
    }

    /// Forgets tokens that expired before `now_s`.
    pub fn prune(&self, now_s: u64) {
        self.lock().retain(|_, exp| *exp > now_s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulwark_engine::token;

    #[test]
    fn used_tokens_survive_a_restart_until_they_expire() {
        let dir = std::env::temp_dir().join(format!("bwk-used-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("used");
        let _ = std::fs::remove_file(&path);
        let key = [3u8; 32];
        let t = token::mint(&key, &"a".repeat(64), 100);
        let u = Ledger::open(&path, 10).unwrap();
        assert!(!u.is_used(&t));
        assert!(u.claim(&t, 100, 10));
        assert!(!u.claim(&t, 100, 10), "a token is claimed once");
        assert!(u.persist(&t, 100).is_ok());
        assert!(u.is_used(&t));
        let again = Ledger::open(&path, 50).unwrap();
        assert!(again.is_used(&t));
        assert!(!again.claim(&t, 100, 50), "used before the restart");
        assert!(!Ledger::open(&path, 200).unwrap().is_used(&t));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
