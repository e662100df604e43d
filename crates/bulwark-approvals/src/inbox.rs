//! The inbox file (seed 003): a person appends `approve ID [note]` or `deny ID [note]`
//! lines to `STATE_DIR/approvals/inbox`, and every instance using the directory picks
//! them up. The file lives under the state directory — outside any agent's workspace, and
//! the built-in tamper rules refuse commands that write there — and is ignored unless it
//! belongs to the directory's owner and nobody else may write it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::desk::Desk;
use crate::store::StoreError;

/// The inbox is refused past this size: truncate it once its lines are taken.
pub const MAX_INBOX: u64 = 1 << 20;

/// One parsed line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// `approve` or `deny`.
    pub approve: bool,
    /// The request id.
    pub id: String,
    /// The rest of the line.
    pub note: Option<String>,
}

/// Parses one line; `None` for blank lines and `#` comments.
pub fn parse_line(line: &str) -> Option<Result<Line, String>> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (verb, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim_start();
    let (id, note) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let approve = match verb.to_ascii_lowercase().as_str() {
        "approve" => true,
        "deny" => false,
        _ => {
            return Some(Err(format!(
                "expected `approve ID` or `deny ID`, got {verb:?}"
            )));
        }
    };
    if id.is_empty() {
        return Some(Err(format!("`{verb}` needs a request id")));
    }
    let note = Some(note.trim())
        .filter(|n| !n.is_empty())
        .map(str::to_string);
    Some(Ok(Line {
        approve,
        id: id.to_string(),
        note,
    }))
}

/// An inbox file and how far this instance has read it: (inode, complete lines taken).
pub struct Inbox {
    path: PathBuf,
    done: Mutex<(u64, usize)>,
}

impl Inbox {
    /// The inbox at `path` (it need not exist yet).
    pub fn new(path: &Path) -> Inbox {
        Inbox {
            path: path.to_path_buf(),
            done: Mutex::new((0, 0)),
        }
    }

    /// Where the inbox is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the inbox if it can be trusted: a regular file (not a link), owned by the
    /// state directory's owner, that nobody else may write, within the size limit. The
    /// checks are made again on the open handle, so a file swapped in between is refused.
    fn open_trusted(&self) -> Result<(std::fs::File, u64), String> {
        use std::os::unix::fs::MetadataExt;
        let before = std::fs::symlink_metadata(&self.path).map_err(|e| e.to_string())?;
        if !before.file_type().is_file() {
            return Err("not a regular file".into());
        }
        let f = std::fs::File::open(&self.path).map_err(|e| e.to_string())?;
        let meta = f.metadata().map_err(|e| e.to_string())?;
        if (meta.dev(), meta.ino()) != (before.dev(), before.ino()) {
            return Err("it was replaced while being opened".into());
        }
        let dir = self
            .path
            .parent()
            .map(std::fs::metadata)
            .transpose()
            .map_err(|e| e.to_string())?;
        if !meta.file_type().is_file() {
            return Err("not a regular file".into());
        }
        if meta.mode() & 0o022 != 0 {
            return Err("others may write it (chmod go-w)".into());
        }
        if dir.is_some_and(|d| d.uid() != meta.uid()) {
            return Err("it belongs to another user than the state directory".into());
        }
        if meta.len() > MAX_INBOX {
            return Err(format!(
                "{} bytes, over the {MAX_INBOX}-byte limit; truncate it",
                meta.len()
            ));
        }
        Ok((f, meta.ino()))
    }

    /// Applies the lines added since the last look through `desk`; what went wrong, one
    /// message per line, for the log.
    pub fn take(&self, desk: &Desk, now_s: u64) -> Vec<String> {
        if !self.path.exists() {
            return Vec::new();
        }
        let (f, ino) = match self.open_trusted() {
            Ok(x) => x,
            Err(why) => return vec![format!("inbox {} ignored: {why}", self.path.display())],
        };
        let mut text = String::new();
        let read = f.take(MAX_INBOX).read_to_string(&mut text);
        if let Err(e) = read {
            return vec![format!("inbox {}: {e}", self.path.display())];
        }
        let lines: Vec<&str> = text.lines().collect();
        // A line still being written has no newline yet: taken next time.
        let complete = if text.ends_with('\n') {
            lines.len()
        } else {
            lines.len().saturating_sub(1)
        };
        let mut done = match self.done.lock() {
            Ok(d) => d,
            Err(p) => p.into_inner(),
        };
        if done.0 != ino || complete < done.1 {
            // Another file, or truncated: read it from the top.
            *done = (ino, 0);
        }
        let mut notes = Vec::new();
        for (n, line) in lines.iter().enumerate().take(complete).skip(done.1) {
            match parse_line(line) {
                None => {}
                Some(Err(e)) => notes.push(format!("inbox line {}: {e}", n + 1)),
                // Lines about requests decided already (read again after a restart) cost
                // no lock.
                Some(Ok(l))
                    if desk
                        .store()
                        .get(&l.id)
                        .ok()
                        .flatten()
                        .is_some_and(|r| r.status_at(now_s) != crate::Status::Pending) => {}
                Some(Ok(l)) => {
                    match desk.decide(&l.id, l.approve, "inbox", l.note.as_deref(), now_s) {
                        Ok(_) | Err(StoreError::NotPending(..)) => {}
                        Err(e) => notes.push(format!("inbox line {}: {e}", n + 1)),
                    }
                }
            }
        }
        done.1 = complete;
        notes
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_or_say_what_is_wrong() {
        assert_eq!(
            parse_line("approve 3fa2 looks fine").unwrap().unwrap(),
            Line {
                approve: true,
                id: "3fa2".into(),
                note: Some("looks fine".into())
            }
        );
        assert!(!parse_line("DENY  3fa2").unwrap().unwrap().approve);
        assert!(parse_line("  # a comment").is_none());
        assert!(parse_line("").is_none());
        assert!(parse_line("approve").unwrap().is_err());
        assert!(parse_line("yes 3fa2").unwrap().is_err());
    }
}
