//! The requests on disk: one JSON file under the state directory, shared by every instance
//! that uses the directory (a gateway per MCP server, the proxy, the daemon), so a request
//! survives a restart and a decision made through one instance reaches a call waiting in
//! another.
//!
//! Every change is a read-modify-write under an exclusive lock on a sibling `.lock` file,
//! and a write replaces the file atomically (write, sync, rename). Reads that change
//! nothing reuse the last parsed copy while the file's stamp (mtime, size) is unchanged.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::request::{Request, Status};

/// Decided requests kept for `list` and the console besides the pending ones; the oldest
/// go first.
pub const KEPT_DECIDED: usize = 1000;
/// The store file is refused past this size: it is ours, and bounded by the limits above.
pub const MAX_FILE: u64 = 64 << 20;
/// How long an approval stays usable after a person gave it: the agent is expected to be
/// waiting, or to retry soon. Past it an unused approval reads as expired.
pub const GRANT_TTL_S: u64 = 600;
/// How long a change waits for another process's lock on the store before giving up (the
/// call then reads as unanswerable, never as approved).
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file system refused.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// The file is not an approvals file.
    #[error("{0} is not a valid approvals file ({1}); move it aside to start afresh")]
    Corrupt(PathBuf, String),
    /// Too many requests wait already.
    #[error("{0} approval requests are pending already (approvals.max_pending); decide some first")]
    Full(usize),
    /// No request has that id.
    #[error("no approval request {0:?}")]
    Unknown(String),
    /// The request was decided already, or expired.
    #[error("approval request {0} is {1}, not pending")]
    NotPending(String, &'static str),
}

#[derive(Default, Serialize, Deserialize)]
struct Doc {
    version: u32,
    requests: Vec<Request>,
}

/// What tells one version of the file from the next: every write is a new file (renamed
/// over the old), so a new inode, even within one tick of the file system's clock.
type Stamp = Option<(u64, SystemTime, u64)>;

/// The approvals file of one state directory.
pub struct Store {
    path: PathBuf,
    lock: PathBuf,
    max_pending: usize,
    cache: Mutex<(Stamp, Arc<Vec<Request>>)>,
}

fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl Store {
    /// The store in `dir` (created owner-only if missing), holding at most `max_pending`
    /// pending requests. A corrupt file is an error, never an empty store.
    pub fn open(dir: &Path, max_pending: usize) -> Result<Store, StoreError> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| StoreError::Io(dir.to_path_buf(), e))?;
        let path = dir.join("requests.json");
        let s = Store {
            lock: path.with_extension("lock"),
            path,
            max_pending: max_pending.max(1),
            cache: Mutex::new((None, Arc::new(Vec::new()))),
        };
        s.view()?;
        Ok(s)
    }

    /// Where the requests are.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn stamp(&self) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(&self.path).ok()?;
        Some((m.ino(), m.modified().ok()?, m.len()))
    }

    fn read(&self) -> Result<Vec<Request>, StoreError> {
        let text = match std::fs::metadata(&self.path) {
            Ok(m) if m.len() > MAX_FILE => {
                return Err(StoreError::Corrupt(
                    self.path.clone(),
                    format!("{} bytes, over the {MAX_FILE}-byte limit", m.len()),
                ));
            }
            Ok(_) => std::fs::read_to_string(&self.path)
                .map_err(|e| StoreError::Io(self.path.clone(), e))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::Io(self.path.clone(), e)),
        };
        let doc: Doc = serde_json::from_str(&text)
            .map_err(|e| StoreError::Corrupt(self.path.clone(), e.to_string()))?;
        Ok(doc.requests)
    }

    /// Every request, oldest first, as last written by anyone.
    pub fn view(&self) -> Result<Arc<Vec<Request>>, StoreError> {
        let stamp = self.stamp();
        {
            let c = guard(&self.cache);
            if stamp.is_some() && c.0 == stamp {
                return Ok(Arc::clone(&c.1));
            }
        }
        let requests = Arc::new(self.read()?);
        *guard(&self.cache) = (stamp, Arc::clone(&requests));
        Ok(requests)
    }

    /// One request by id.
    pub fn get(&self, id: &str) -> Result<Option<Request>, StoreError> {
        Ok(self.view()?.iter().find(|r| r.id == id).cloned())
    }

    /// Runs `f` on the requests under the lock, after writing down the expiry of pending
    /// requests past their time (returned with `f`'s answer, for the audit log), and
    /// writes the result when anything changed.
    pub fn change<R>(
        &self,
        now_s: u64,
        f: impl FnOnce(&mut Vec<Request>) -> Result<R, StoreError>,
    ) -> Result<(R, Vec<Request>), StoreError> {
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.lock)
            .map_err(|e| StoreError::Io(self.lock.clone(), e))?;
        // Bounded: a process that holds the lock and hangs (or is stopped) must not freeze
        // every front sharing the directory.
        let started = std::time::Instant::now();
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < LOCK_WAIT => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(StoreError::Io(
                        self.lock.clone(),
                        std::io::Error::other(format!(
                            "another process has held the approvals lock for over {} s",
                            LOCK_WAIT.as_secs()
                        )),
                    ));
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(StoreError::Io(self.lock.clone(), e));
                }
            }
        }
        let mut requests = self.read()?;
        let before = serde_json::to_vec(&requests).unwrap_or_default();
        let mut expired = Vec::new();
        for r in requests.iter_mut() {
            if r.status == Status::Pending && now_s >= r.expires_s {
                r.status = Status::Expired;
                r.decided_by = Some("timeout".into());
                r.decided_s = Some(r.expires_s);
                expired.push(r.clone());
            } else if r.status == Status::Approved
                && now_s >= r.decided_s.unwrap_or(0).saturating_add(GRANT_TTL_S)
            {
                // Approved but never used in time: its token has expired too.
                r.status = Status::Expired;
                r.token = None;
                expired.push(r.clone());
            }
        }
        let out = f(&mut requests)?;
        self.trim(&mut requests);
        if serde_json::to_vec(&requests).unwrap_or_default() != before {
            self.write(&requests)?;
        }
        let stamp = self.stamp();
        *guard(&self.cache) = (stamp, Arc::new(requests));
        drop(lock);
        Ok((out, expired))
    }

    /// Keeps every pending and approved request and the newest decided ones.
    fn trim(&self, requests: &mut Vec<Request>) {
        let decided = requests
            .iter()
            .filter(|r| !matches!(r.status, Status::Pending | Status::Approved))
            .count();
        let mut drop_n = decided.saturating_sub(KEPT_DECIDED);
        requests.retain(|r| {
            if drop_n > 0 && !matches!(r.status, Status::Pending | Status::Approved) {
                drop_n -= 1;
                return false;
            }
            true
        });
    }

    fn write(&self, requests: &[Request]) -> Result<(), StoreError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let doc = Doc {
            version: 1,
            requests: requests.to_vec(),
        };
        let text = serde_json::to_vec_pretty(&doc)
            .map_err(|e| StoreError::Corrupt(self.path.clone(), e.to_string()))?;
        let tmp = self.path.with_extension("tmp");
        let io = |e| StoreError::Io(tmp.clone(), e);
        let mut f = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(io)?;
        f.write_all(&text).map_err(io)?;
        f.sync_all().map_err(io)?;
        std::fs::rename(&tmp, &self.path).map_err(|e| StoreError::Io(self.path.clone(), e))
    }

    /// How many requests may be pending at once.
    pub fn max_pending(&self) -> usize {
        self.max_pending
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn request(id: &str, digest: &str, expires_s: u64) -> Request {
        Request {
            id: id.into(),
            digest: digest.into(),
            front: "mcp".into(),
            tool: "db.query".into(),
            server: None,
            session: "s".into(),
            principal: None,
            policy_version: "v".into(),
            args: json!({}),
            reason: "r".into(),
            rule_id: None,
            severity: None,
            created_s: 0,
            expires_s,
            status: Status::Pending,
            decided_by: None,
            decided_s: None,
            note: None,
            token: None,
            reported: false,
            owner: String::new(),
        }
    }

    #[test]
    fn changes_persist_and_expiry_is_written_down() {
        let dir = std::env::temp_dir().join(format!("bwk-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = Store::open(&dir, 10).unwrap();
        s.change(0, |rs| {
            rs.push(request("a", "d1", 100));
            rs.push(request("b", "d2", 10));
            Ok(())
        })
        .unwrap();
        // Another handle (another process) sees both, and the second expire once its
        // time is up.
        let other = Store::open(&dir, 10).unwrap();
        assert_eq!(other.view().unwrap().len(), 2);
        let ((), expired) = other.change(50, |_| Ok(())).unwrap();
        assert_eq!(expired.len(), 1);
        assert_eq!(expired[0].id, "b");
        assert_eq!(s.get("b").unwrap().unwrap().status, Status::Expired);
        assert_eq!(s.get("a").unwrap().unwrap().status, Status::Pending);
        // A corrupt file is an error, not an empty store.
        std::fs::write(s.path(), b"{not json").unwrap();
        assert!(matches!(
            Store::open(&dir, 10),
            Err(StoreError::Corrupt(..))
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn old_decided_requests_are_trimmed_and_pending_ones_kept() {
        let dir = std::env::temp_dir().join(format!("bwk-trim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = Store::open(&dir, 10).unwrap();
        s.change(0, |rs| {
            rs.push(request("p", "dp", 1_000_000));
            for i in 0..KEPT_DECIDED + 5 {
                let mut r = request(&format!("d{i}"), "x", 1_000_000);
                r.status = Status::Denied;
                rs.push(r);
            }
            Ok(())
        })
        .unwrap();
        let v = s.view().unwrap();
        assert_eq!(v.len(), KEPT_DECIDED + 1);
        assert!(v.iter().any(|r| r.id == "p"));
        assert!(!v.iter().any(|r| r.id == "d0"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
