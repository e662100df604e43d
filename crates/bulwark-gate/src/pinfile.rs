//! Pins on disk: one file per upstream server under `STATE_DIR/pins/`, so a rug pull is
//! caught across restarts and an operator's `bulwark pins accept` reaches a running gateway.
//!
//! Every read-modify-write happens under an exclusive lock on a sibling `.lock` file, and a
//! write replaces the file atomically (write, sync, rename): a crash leaves the old pins or
//! the new ones, never half of each.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use bulwark_engine::pins::PinRecord;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Why pins could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    /// The file system refused.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// The file is not a pins file.
    #[error(
        "{0} is not a valid pins file ({1}); inspect it, or remove it with `bulwark pins reset --server NAME`"
    )]
    Corrupt(PathBuf, String),
}

/// What a pins file holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PinDoc {
    /// The server identity the pins belong to.
    pub server: String,
    /// One entry per tool (and `(instructions)` for the server's instructions).
    pub tools: Vec<PinRecord>,
}

/// The pins file of one server.
#[derive(Debug)]
/// Clones share the stamp of what was last seen on disk: one gateway's own save is not
/// taken by another (an HTTP front's sessions) for an operator's change.
#[derive(Clone)]
pub struct PinFile {
    path: PathBuf,
    lock: PathBuf,
    server: String,
    seen: std::sync::Arc<Mutex<Option<(SystemTime, u64)>>>,
}

/// The file name for a server identity: a digest, since identities are command lines.
pub fn file_name(server: &str) -> String {
    let d = Sha256::digest(server.as_bytes());
    let hex: String = d[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.json")
}

impl PinFile {
    /// The pins of `server` under `dir` (created if missing, owner-only).
    pub fn open(dir: &Path, server: &str) -> Result<PinFile, PinError> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| PinError::Io(dir.to_path_buf(), e))?;
        let path = dir.join(file_name(server));
        Ok(PinFile {
            lock: path.with_extension("lock"),
            path,
            server: server.to_string(),
            seen: std::sync::Arc::new(Mutex::new(None)),
        })
    }

    /// Where the pins are.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn stamp(&self) -> Option<(SystemTime, u64)> {
        let m = std::fs::metadata(&self.path).ok()?;
        Some((m.modified().ok()?, m.len()))
    }

    fn mark_seen(&self) {
        let s = self.stamp();
        *lock(&self.seen) = s;
    }

    /// Whether the file changed since this process last read or wrote it (an operator ran
    /// `bulwark pins accept` or `reset`).
    pub fn changed(&self) -> bool {
        let now = self.stamp();
        let seen = *lock(&self.seen);
        now != seen
    }

    /// Holds the lock while `f` runs.
    pub fn locked<R>(&self, f: impl FnOnce(&Self) -> R) -> Result<R, PinError> {
        use std::os::unix::fs::OpenOptionsExt;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&self.lock)
            .map_err(|e| PinError::Io(self.lock.clone(), e))?;
        lock.lock()
            .map_err(|e| PinError::Io(self.lock.clone(), e))?;
        let r = f(self);
        drop(lock);
        Ok(r)
    }

    /// Reads the pins (none when there is no file yet). Call under [`PinFile::locked`].
    pub fn load(&self) -> Result<Vec<PinRecord>, PinError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.mark_seen();
                return Ok(Vec::new());
            }
            Err(e) => return Err(PinError::Io(self.path.clone(), e)),
        };
        let doc: PinDoc = serde_json::from_str(&text)
            .map_err(|e| PinError::Corrupt(self.path.clone(), e.to_string()))?;
        if doc.server != self.server {
            return Err(PinError::Corrupt(
                self.path.clone(),
                format!("it holds the pins of {:?}", doc.server),
            ));
        }
        self.mark_seen();
        Ok(doc.tools)
    }

    /// Replaces the pins. Call under [`PinFile::locked`].
    pub fn save(&self, tools: Vec<PinRecord>) -> Result<(), PinError> {
        let doc = PinDoc {
            server: self.server.clone(),
            tools,
        };
        write_atomic(&self.path, &doc)?;
        self.mark_seen();
        Ok(())
    }
}

/// Writes `doc` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, doc: &PinDoc) -> Result<(), PinError> {
    let io = |e| PinError::Io(path.to_path_buf(), e);
    let text = serde_json::to_string_pretty(doc)
        .map_err(|e| PinError::Corrupt(path.to_path_buf(), e.to_string()))?;
    bulwark_audit::files::write_private(path, format!("{text}\n").as_bytes()).map_err(io)
}

/// A pins file found on disk, read or not.
pub type Found = (PathBuf, Result<PinDoc, PinError>);

/// Every pins file under `dir`, with its contents; unreadable files are reported, not
/// skipped.
pub fn all(dir: &Path) -> Result<Vec<Found>, PinError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(PinError::Io(dir.to_path_buf(), e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| PinError::Io(dir.to_path_buf(), e))?;
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let doc = std::fs::read_to_string(&path)
            .map_err(|e| PinError::Io(path.clone(), e))
            .and_then(|t| {
                serde_json::from_str::<PinDoc>(&t)
                    .map_err(|e| PinError::Corrupt(path.clone(), e.to_string()))
            });
        out.push((path, doc));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_round_trip_and_changes_are_seen() {
        let dir = std::env::temp_dir().join(format!("bulwark-pins-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let f = PinFile::open(&dir, "node server.js").unwrap();
        let r = PinRecord {
            tool: "echo".into(),
            digest: "ab".repeat(32),
            input_schema: serde_json::Value::Null,
            withheld: None,
            reason: None,
            offered: None,
        };
        f.locked(|f| f.save(vec![r.clone()])).unwrap().unwrap();
        assert!(!f.changed());
        assert_eq!(f.locked(|f| f.load()).unwrap().unwrap(), vec![r.clone()]);
        // Another process (an operator's CLI) rewrites it.
        let other = PinFile::open(&dir, "node server.js").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(10));
        other.locked(|f| f.save(Vec::new())).unwrap().unwrap();
        assert!(f.changed());
        // A file of another server is refused, not silently used.
        let wrong = PinFile::open(&dir, "other").unwrap();
        std::fs::copy(f.path(), wrong.path()).unwrap();
        assert!(matches!(wrong.load(), Err(PinError::Corrupt(..))));
        std::fs::write(f.path(), "{").unwrap();
        assert!(matches!(f.load(), Err(PinError::Corrupt(..))));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
