//! Owner-only state files replaced atomically: written to a temporary sibling, synced,
//! then renamed over the old one, so a crash leaves the old file or the new one, never half
//! of each. Shared by every piece of state Bulwark keeps on disk (chain heads, pins, hook
//! sessions).

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Replaces `path` with `bytes` (mode 0600), atomically.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("bulwark-files-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let p = dir.join("state.json");
/// bulwark_audit::files::write_private(&p, b"{}").unwrap();
/// assert_eq!(std::fs::read(&p).unwrap(), b"{}");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // The process id keeps two writers of one file from sharing a temporary.
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}
