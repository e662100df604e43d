//! The requests on disk: one JSON file under the state directory, shared by every instance
//! that uses the directory (a gateway per MCP server, the proxy, the daemon), so a request
//! survives a restart and a decision made through one instance reaches a call waiting in
//! another.
//!
//! Every change is a read-modify-write under an exclusive lock on a sibling `.lock` file,
//! and a write replaces the file atomically (write, sync, rename). Reads that change
//! nothing reuse the last parsed copy while the file's stamp (mtime, size) is unchanged.
//!
//! Replicas on different machines share no directory: with `state.backend: redis` the same
//! document lives in the shared state store instead ([`Store::shared`] over a [`Shared`]
//! backend), with the same rules — one change at a time under a lock whose wait is bounded,
//! a version number standing in for the file's stamp — so a request created on one replica
//! is listed, answered and used through any other.

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
    /// The shared store did not answer (or its lock stayed held past [`LOCK_WAIT`]): the
    /// call reads as unanswerable, never as approved.
    #[error("the shared approvals store: {0}")]
    Shared(String),
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

/// What tells one version of the document from the next. For the file: every write is a
/// new file (renamed over the old), so a new inode, even within one tick of the file
/// system's clock. For a shared backend: its version number, raised by every write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stamp {
    File(u64, SystemTime, u64),
    Shared(u64),
}

/// One change's closure over the stored document: given what is stored (`None`: nothing
/// yet), the document to write, or `None` to leave it as it is.
pub type ChangeFn<'a> = dyn FnMut(Option<&[u8]>) -> Option<Vec<u8>> + 'a;

/// Where the approvals document lives when replicas share no directory (the Redis state
/// store implements it). The document is opaque to the backend: a JSON text this module
/// writes and reads.
pub trait Shared: Send + Sync {
    /// Where it is, for messages (no secrets: a URL without its password).
    fn describe(&self) -> String;
    /// The document's version: changes with every write (0 before the first).
    fn version(&self) -> Result<u64, String>;
    /// The document and its version, read together.
    fn load(&self) -> Result<(u64, Option<Vec<u8>>), String>;
    /// Runs `f` once on the document under the backend's lock, waiting at most `wait` for
    /// the lock, and writes what `f` returns (only while the lock is still this change's);
    /// the new version when something was written.
    fn change(
        &self,
        wait: std::time::Duration,
        f: &mut ChangeFn<'_>,
    ) -> Result<Option<u64>, String>;
}

enum Place {
    File { path: PathBuf, lock: PathBuf },
    Shared(Arc<dyn Shared>),
}

/// The approvals of one state directory, or of a deployment's shared store.
pub struct Store {
    place: Place,
    path: PathBuf,
    max_pending: usize,
    cache: Mutex<(Option<Stamp>, Arc<Vec<Request>>)>,
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
            place: Place::File {
                lock: path.with_extension("lock"),
                path: path.clone(),
            },
            path,
            max_pending: max_pending.max(1),
            cache: Mutex::new((None, Arc::new(Vec::new()))),
        };
        s.view()?;
        Ok(s)
    }

    /// The store kept in `backend`, shared by every replica that uses it. Opening does not
    /// reach the backend: one out of reach is an error at the first use, as one lost later.
    pub fn shared(backend: Arc<dyn Shared>, max_pending: usize) -> Store {
        Store {
            path: PathBuf::from(backend.describe()),
            place: Place::Shared(backend),
            max_pending: max_pending.max(1),
            cache: Mutex::new((None, Arc::new(Vec::new()))),
        }
    }

    /// Where the requests are (for a shared store, its description).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the requests live in a store other machines share.
    pub fn is_shared(&self) -> bool {
        matches!(self.place, Place::Shared(_))
    }

    fn stamp(&self) -> Result<Option<Stamp>, StoreError> {
        use std::os::unix::fs::MetadataExt;
        match &self.place {
            Place::File { path, .. } => Ok(std::fs::metadata(path)
                .ok()
                .and_then(|m| Some(Stamp::File(m.ino(), m.modified().ok()?, m.len())))),
            Place::Shared(b) => Ok(Some(Stamp::Shared(
                b.version().map_err(StoreError::Shared)?,
            ))),
        }
    }

    fn parse(&self, text: &[u8]) -> Result<Vec<Request>, StoreError> {
        if text.len() as u64 > MAX_FILE {
            return Err(StoreError::Corrupt(
                self.path.clone(),
                format!("{} bytes, over the {MAX_FILE}-byte limit", text.len()),
            ));
        }
        let doc: Doc = serde_json::from_slice(text)
            .map_err(|e| StoreError::Corrupt(self.path.clone(), e.to_string()))?;
        Ok(doc.requests)
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
        self.parse(text.as_bytes())
    }

    /// Every request, oldest first, as last written by anyone.
    pub fn view(&self) -> Result<Arc<Vec<Request>>, StoreError> {
        let stamp = self.stamp()?;
        {
            let c = guard(&self.cache);
            if stamp.is_some() && c.0 == stamp {
                return Ok(Arc::clone(&c.1));
            }
        }
        let (stamp, requests) = match &self.place {
            Place::File { .. } => (stamp, self.read()?),
            Place::Shared(b) => {
                let (version, doc) = b.load().map_err(StoreError::Shared)?;
                let requests = match doc {
                    Some(d) => self.parse(&d)?,
                    None => Vec::new(),
                };
                (Some(Stamp::Shared(version)), requests)
            }
        };
        let requests = Arc::new(requests);
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
        match &self.place {
            Place::File { path, lock } => self.change_file(path, lock, now_s, f),
            Place::Shared(b) => self.change_shared(b.as_ref(), now_s, f),
        }
    }

    fn change_shared<R>(
        &self,
        backend: &dyn Shared,
        now_s: u64,
        f: impl FnOnce(&mut Vec<Request>) -> Result<R, StoreError>,
    ) -> Result<(R, Vec<Request>), StoreError> {
        let mut f = Some(f);
        let mut out = None;
        let written = backend
            .change(LOCK_WAIT, &mut |doc| {
                let f = f.take()?;
                let requests = match doc.map(|d| self.parse(d)).transpose() {
                    Ok(r) => r.unwrap_or_default(),
                    Err(e) => {
                        out = Some(Err(e));
                        return None;
                    }
                };
                match self.apply(requests, now_s, f) {
                    Ok((r, expired, requests, changed)) => {
                        let text = changed.then(|| self.encode(&requests));
                        match text {
                            Some(Err(e)) => {
                                out = Some(Err(e));
                                None
                            }
                            Some(Ok(t)) => {
                                out = Some(Ok((r, expired, requests)));
                                Some(t)
                            }
                            None => {
                                out = Some(Ok((r, expired, requests)));
                                None
                            }
                        }
                    }
                    Err(e) => {
                        out = Some(Err(e));
                        None
                    }
                }
            })
            .map_err(StoreError::Shared)?;
        let Some(out) = out else {
            return Err(StoreError::Shared("the change did not run".into()));
        };
        let (r, expired, requests) = out?;
        let mut c = guard(&self.cache);
        match written {
            Some(v) => *c = (Some(Stamp::Shared(v)), Arc::new(requests)),
            // Unchanged: the cached copy may be older than what was read; read it afresh
            // next time.
            None => c.0 = None,
        }
        Ok((r, expired))
    }

    /// Expiry, `f`, trimming: the requests after one change, and whether anything changed.
    #[allow(clippy::type_complexity)]
    fn apply<R>(
        &self,
        mut requests: Vec<Request>,
        now_s: u64,
        f: impl FnOnce(&mut Vec<Request>) -> Result<R, StoreError>,
    ) -> Result<(R, Vec<Request>, Vec<Request>, bool), StoreError> {
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
        let changed = serde_json::to_vec(&requests).unwrap_or_default() != before;
        Ok((out, expired, requests, changed))
    }

    fn change_file<R>(
        &self,
        path: &Path,
        lock_path: &Path,
        now_s: u64,
        f: impl FnOnce(&mut Vec<Request>) -> Result<R, StoreError>,
    ) -> Result<(R, Vec<Request>), StoreError> {
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(lock_path)
            .map_err(|e| StoreError::Io(lock_path.to_path_buf(), e))?;
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
                        lock_path.to_path_buf(),
                        std::io::Error::other(format!(
                            "another process has held the approvals lock for over {} s",
                            LOCK_WAIT.as_secs()
                        )),
                    ));
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(StoreError::Io(lock_path.to_path_buf(), e));
                }
            }
        }
        let (out, expired, requests, changed) = self.apply(self.read()?, now_s, f)?;
        if changed {
            self.write(path, &requests)?;
        }
        let stamp = self.stamp()?;
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

    fn encode(&self, requests: &[Request]) -> Result<Vec<u8>, StoreError> {
        let doc = Doc {
            version: 1,
            requests: requests.to_vec(),
        };
        serde_json::to_vec_pretty(&doc)
            .map_err(|e| StoreError::Corrupt(self.path.clone(), e.to_string()))
    }

    fn write(&self, path: &Path, requests: &[Request]) -> Result<(), StoreError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let text = self.encode(requests)?;
        let tmp = path.with_extension("tmp");
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
        std::fs::rename(&tmp, path).map_err(|e| StoreError::Io(path.to_path_buf(), e))
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
