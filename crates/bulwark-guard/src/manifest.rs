//! The install manifest: what was verified, so a start does not re-hash 91 MB.
//!
//! `install` checks the SHA-256s, writes the files, and records each one's size, inode,
//! modification and status-change times beside its hash in `manifest.json`. A later load
//! re-hashes a file only when its metadata differs from the record (or the record's hash
//! is not the one this build pins); a mismatch then fails closed. The status-change time
//! (`ctime`) cannot be set back by a user — any write, rename or `touch` moves it — so a
//! file altered after install is always re-hashed. This protects against corruption,
//! partial copies and tampering by anyone who cannot also rewrite the manifest; whoever can
//! write the state directory can equally rewrite the policy, which is the same trust.
//!
//! File times are coarse (a clock tick, up to 2 s on some file systems), so a file changed
//! again within the same tick after it was recorded would keep its stamp. As git does for
//! its index, a stamp younger than [`RACY`] is not recorded: that file is hashed again at
//! the next load, by which time its stamp is old enough to trust.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::GuardError;

/// The manifest's file name in a model folder.
pub const FILE: &str = "manifest.json";

/// How old a file's stamp must be before it is trusted to change whenever the file does.
pub const RACY: std::time::Duration = std::time::Duration::from_secs(2);

/// What a file's content must hash to.
#[derive(Debug, Clone, Copy)]
pub enum Expect<'a> {
    /// A hash this build pins (the weights and vocabulary from the registry package).
    Pinned(&'a str),
    /// The hash recorded when the file was made at install (the distilled table).
    Recorded,
}

/// One file's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    size: u64,
    /// Inode, mtime and ctime in nanoseconds, joined; empty where the platform has none,
    /// which makes every load re-hash.
    stamp: String,
    sha256: String,
}

/// The manifest of one model folder, and whether it needs writing back.
#[derive(Debug)]
pub struct Manifest {
    dir: PathBuf,
    files: BTreeMap<String, Entry>,
    changed: bool,
    hashed: Vec<String>,
    racy: std::time::Duration,
}

impl Manifest {
    /// Reads `dir/manifest.json`; a missing or unreadable one is empty (every file is then
    /// hashed), never trusted in part.
    pub fn open(dir: &Path) -> Self {
        let files = std::fs::read(dir.join(FILE))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        Self {
            dir: dir.to_owned(),
            files,
            changed: false,
            hashed: Vec::new(),
            racy: RACY,
        }
    }

    /// Replaces [`RACY`] (the tests use a short one instead of sleeping two seconds).
    pub fn with_racy(mut self, racy: std::time::Duration) -> Self {
        self.racy = racy;
        self
    }

    /// The names of the files this manifest had to hash (for tests and `install`'s report).
    pub fn hashed(&self) -> &[String] {
        &self.hashed
    }

    /// Reads `name` from the folder and checks it: hashed unless its metadata matches the
    /// record and the record's hash is the expected one.
    pub fn read(&mut self, name: &str, expect: Expect<'_>) -> Result<Vec<u8>, GuardError> {
        let path = self.dir.join(name);
        let io = |source| GuardError::Io {
            path: path.clone(),
            source,
        };
        // Metadata from the open handle: the bytes read are the file the stamp describes.
        let mut file = std::fs::File::open(&path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        file.read_to_end(&mut bytes).map_err(io)?;
        let stamp = stamp(&meta, self.racy);
        let recorded = self.files.get(name);
        let want = match (expect, recorded) {
            (Expect::Pinned(h), _) => h.to_owned(),
            (Expect::Recorded, Some(e)) => e.sha256.clone(),
            (Expect::Recorded, None) => {
                return Err(GuardError::Model(format!(
                    "{}: no hash recorded for it in {FILE}; reinstall with `bulwark guard install`",
                    path.display()
                )));
            }
        };
        let unchanged = recorded.is_some_and(|e| {
            !stamp.is_empty()
                && e.stamp == stamp
                && e.size == bytes.len() as u64
                && e.size == meta.len()
                && e.sha256 == want
        });
        if unchanged {
            return Ok(bytes);
        }
        self.hashed.push(name.to_owned());
        let got = crate::sha256_hex(&bytes);
        if got != want {
            return Err(GuardError::Model(format!(
                "{}: SHA-256 {got}, expected {want}; reinstall with `bulwark guard install`",
                path.display()
            )));
        }
        self.files.insert(
            name.to_owned(),
            Entry {
                size: bytes.len() as u64,
                stamp,
                sha256: got,
            },
        );
        self.changed = true;
        Ok(bytes)
    }

    /// Writes `bytes` to `name` (beside, then renamed: a crash never leaves a half file
    /// that loads) and records it.
    pub fn write(&mut self, name: &str, bytes: &[u8]) -> Result<(), GuardError> {
        let path = self.dir.join(name);
        let tmp = self.dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let io = |p: &Path| {
            let p = p.to_owned();
            move |source| GuardError::Io { path: p, source }
        };
        std::fs::write(&tmp, bytes).map_err(io(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io(&path))?;
        let meta = std::fs::metadata(&path).map_err(io(&path))?;
        self.files.insert(
            name.to_owned(),
            Entry {
                size: meta.len(),
                stamp: stamp(&meta, self.racy),
                sha256: crate::sha256_hex(bytes),
            },
        );
        self.changed = true;
        Ok(())
    }

    /// Writes the manifest back if anything was (re)verified or written. A folder that
    /// cannot be written (read-only install) only costs the next start a re-hash.
    pub fn save(&mut self) -> Result<(), GuardError> {
        if !self.changed {
            return Ok(());
        }
        let json = serde_json::to_vec_pretty(&self.files)
            .map_err(|e| GuardError::Model(format!("{FILE}: {e}")))?;
        let tmp = self.dir.join(format!(".{FILE}.{}.tmp", std::process::id()));
        let path = self.dir.join(FILE);
        std::fs::write(&tmp, json)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|source| GuardError::Io { path, source })?;
        self.changed = false;
        Ok(())
    }
}

/// The file's identity and times, or empty when they cannot be trusted yet (younger than
/// `racy`) or at all (no such metadata on this platform).
#[cfg(unix)]
fn stamp(meta: &std::fs::Metadata, racy: std::time::Duration) -> String {
    use std::os::unix::fs::MetadataExt;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let at = |s: i64, ns: i64| s as f64 + ns as f64 * 1e-9;
    let newest = at(meta.mtime(), meta.mtime_nsec()).max(at(meta.ctime(), meta.ctime_nsec()));
    if now - newest < racy.as_secs_f64() {
        return String::new();
    }
    format!(
        "{}:{}:{}.{:09}:{}.{:09}",
        meta.dev(),
        meta.ino(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec()
    )
}

#[cfg(not(unix))]
fn stamp(_: &std::fs::Metadata, _: std::time::Duration) -> String {
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Long enough that a write preempted on a loaded machine is still "just written" when
    // its stamp is taken.
    const SHORT: std::time::Duration = std::time::Duration::from_millis(400);

    /// Writes a file and waits until its stamp is older than [`SHORT`].
    fn settle(path: &Path, bytes: &[u8]) {
        std::fs::write(path, bytes).unwrap();
        std::thread::sleep(SHORT * 2);
    }

    fn open(dir: &Path) -> Manifest {
        Manifest::open(dir).with_racy(SHORT)
    }

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "bulwark-guard-manifest-{tag}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn verified_once_then_trusted_until_the_file_changes() {
        let dir = scratch("once");
        settle(&dir.join("w.bin"), b"weights");
        let pinned = crate::sha256_hex(b"weights");
        let mut m = open(&dir);
        m.read("w.bin", Expect::Pinned(&pinned)).unwrap();
        assert_eq!(m.hashed(), ["w.bin"]);
        m.save().unwrap();

        // A second start: metadata unchanged, nothing hashed.
        let mut m = open(&dir);
        assert_eq!(
            m.read("w.bin", Expect::Pinned(&pinned)).unwrap(),
            b"weights"
        );
        assert!(m.hashed().is_empty());

        // Same size, new content: the ctime moved, so it is hashed and refused.
        settle(&dir.join("w.bin"), b"WEIGHTS");
        let mut m = open(&dir);
        let err = m.read("w.bin", Expect::Pinned(&pinned)).unwrap_err();
        assert!(err.to_string().contains("SHA-256"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_record_for_another_hash_is_not_trusted() {
        let dir = scratch("pin");
        settle(&dir.join("w.bin"), b"weights");
        let mut m = open(&dir);
        m.read("w.bin", Expect::Pinned(&crate::sha256_hex(b"weights")))
            .unwrap();
        m.save().unwrap();
        // A build pinning other weights re-hashes and refuses, though the stamp matches.
        let mut m = open(&dir);
        let other = crate::sha256_hex(b"other");
        assert!(m.read("w.bin", Expect::Pinned(&other)).is_err());
        assert_eq!(m.hashed(), ["w.bin"]);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn derived_file_needs_a_record_and_is_checked_against_it() {
        let dir = scratch("derived");
        settle(&dir.join("t.bin"), b"table");
        let mut m = open(&dir);
        assert!(m.read("t.bin", Expect::Recorded).is_err(), "no record");
        m.write("t.bin", b"table").unwrap();
        m.save().unwrap();
        // Just written: too young to trust, so the next load hashes it once more.
        let mut m = open(&dir);
        assert_eq!(m.read("t.bin", Expect::Recorded).unwrap(), b"table");
        assert_eq!(m.hashed(), ["t.bin"]);
        m.save().unwrap();
        std::thread::sleep(SHORT * 2);
        let mut m = open(&dir);
        m.read("t.bin", Expect::Recorded).unwrap();
        m.save().unwrap();
        let mut m = open(&dir);
        assert_eq!(m.read("t.bin", Expect::Recorded).unwrap(), b"table");
        assert!(m.hashed().is_empty());
        settle(&dir.join("t.bin"), b"TABLE");
        let mut m = open(&dir);
        assert!(m.read("t.bin", Expect::Recorded).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn corrupt_manifest_means_hash_everything() {
        let dir = scratch("corrupt");
        settle(&dir.join("w.bin"), b"weights");
        std::fs::write(dir.join(FILE), b"{not json").unwrap();
        let mut m = open(&dir);
        m.read("w.bin", Expect::Pinned(&crate::sha256_hex(b"weights")))
            .unwrap();
        assert_eq!(m.hashed(), ["w.bin"]);
        std::fs::remove_dir_all(&dir).ok();
    }
}
