//! Approval tokens at the proxy: reading them from headers, and remembering the ones
//! already honoured so each approves one call only — across restarts too.
//!
//! The token itself ([`bulwark_engine::token`]) is bound to one call's digest and an
//! expiry; this module adds single use. A used token is written to a file under the state
//! directory before the call it approved is released.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use bulwark_engine::token::{self, Approved, TokenError};

/// Most tokens remembered as used; past it, expired ones are forgotten, and if none has
/// expired, no new token is honoured (fail closed).
pub const MAX_USED: usize = 100_000;
/// Most tokens read from one request.
pub const MAX_PER_REQUEST: usize = 16;

/// Tokens already honoured, by MAC, with their expiry (Unix seconds).
pub struct UsedTokens {
    map: Mutex<HashMap<String, u64>>,
    file: Option<PathBuf>,
}

/// Why the used-token file could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the used approval tokens at {path}: {source}")]
pub struct UsedError {
    path: String,
    source: std::io::Error,
}

fn mac_of(token: &str) -> &str {
    token.trim().rsplit('.').next().unwrap_or("")
}

impl UsedTokens {
    /// An in-memory set (tests; a proxy without a state directory).
    pub fn in_memory() -> UsedTokens {
        UsedTokens {
            map: Mutex::new(HashMap::new()),
            file: None,
        }
    }

    /// The set kept in `path`, with entries that expired before `now_s` dropped.
    pub fn open(path: &Path, now_s: u64) -> Result<UsedTokens, UsedError> {
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
        Ok(UsedTokens {
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

    /// Records a claimed token as used on disk, so a restart does not revive it; `false`
    /// when that failed (the call it approved must then not be released).
    pub fn persist(&self, token: &str, expires_s: u64) -> bool {
        let Some(path) = &self.file else { return true };
        let line = format!("{expires_s} {}\n", mac_of(token));
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(line.as_bytes()).and_then(|()| f.sync_data()));
        match written {
            Ok(()) => true,
            Err(e) => {
                eprintln!(
                    "bulwark proxy: cannot record a used approval token in {}: {e}",
                    path.display()
                );
                false
            }
        }
    }

    /// Forgets tokens that expired before `now_s`.
    pub fn prune(&self, now_s: u64) {
        self.lock().retain(|_, exp| *exp > now_s);
    }
}

/// The valid tokens among header values (comma-separated, at most [`MAX_PER_REQUEST`]),
/// and a note per refused one.
pub fn from_headers<'a>(
    key: &[u8; 32],
    values: impl Iterator<Item = &'a str>,
    now_s: u64,
    used: &UsedTokens,
) -> (Vec<(String, Approved)>, Vec<String>) {
    let mut ok = Vec::new();
    let mut refused = Vec::new();
    for t in values
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .take(MAX_PER_REQUEST)
    {
        match token::verify(key, t, now_s) {
            Ok(_) if used.is_used(t) => refused.push("already used".to_string()),
            Ok(a) => ok.push((t.to_string(), a)),
            Err(TokenError::Malformed) => refused.push("malformed".to_string()),
            Err(TokenError::BadSignature) => refused.push("bad signature".to_string()),
            Err(TokenError::Expired) => refused.push("expired".to_string()),
        }
    }
    (ok, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn used_tokens_survive_a_restart_until_they_expire() {
        let dir = std::env::temp_dir().join(format!("bwk-used-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("used");
        let _ = std::fs::remove_file(&path);
        let key = [3u8; 32];
        let t = token::mint(&key, &"a".repeat(64), 100);
        let u = UsedTokens::open(&path, 10).unwrap();
        assert!(!u.is_used(&t));
        assert!(u.claim(&t, 100, 10));
        assert!(!u.claim(&t, 100, 10), "a token is claimed once");
        assert!(u.persist(&t, 100));
        assert!(u.is_used(&t));
        let again = UsedTokens::open(&path, 50).unwrap();
        assert!(again.is_used(&t));
        let (ok, refused) = from_headers(&key, [t.as_str()].into_iter(), 50, &again);
        assert!(ok.is_empty());
        assert_eq!(refused, vec!["already used"]);
        assert!(!UsedTokens::open(&path, 200).unwrap().is_used(&t));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
