//! The audit keys: an HMAC-SHA256 key that chains every record, and an Ed25519 key pair
//! that signs checkpoints, so that someone with only the public key can check the log.
//!
//! Created on first use under `STATE_DIR/audit/` (the secret files owner-only), or supplied
//! by the environment (`BULWARK_AUDIT_HMAC_KEY`, `BULWARK_AUDIT_SIGNING_KEY`: 64 hex digits
//! each). A key that exists but cannot be read is an error that says how to fix it, never a
//! reason to write an unsigned log.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// Why keys could not be had.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// A key file exists and cannot be used.
    #[error(
        "audit key {0}: {1}. Fix or restore the file; to start a new log with new keys, move the old keys and the old log aside"
    )]
    Bad(PathBuf, String),
    /// An environment variable holds something that is not a key.
    #[error("{0}: expected 64 hexadecimal digits")]
    BadEnv(&'static str),
    /// The file system refused.
    #[error("audit keys in {0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// No randomness.
    #[error("cannot read /dev/urandom for new keys: {0}")]
    Random(std::io::Error),
}

/// The keys a writer needs.
#[derive(Clone)]
pub struct AuditKeys {
    pub(crate) hmac: [u8; 32],
    pub(crate) signing: SigningKey,
}

impl std::fmt::Debug for AuditKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AuditKeys({})", self.key_id())
    }
}

/// Hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

/// Bytes of 64 hex digits.
pub fn unhex32(text: &str) -> Option<[u8; 32]> {
    let t = text.trim();
    if t.len() != 64 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&t[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// A short name for a public key: the first 8 bytes of its SHA-256, in hex.
pub fn key_id(public: &VerifyingKey) -> String {
    hex(&Sha256::digest(public.to_bytes())[..8])
}

/// 32 bytes from the kernel's random source (keys, and ids that must not be guessed).
pub fn random32() -> Result<[u8; 32], KeyError> {
    let mut b = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(KeyError::Random)?;
    Ok(b)
}

impl AuditKeys {
    /// Keys from raw bytes (tests, and keys supplied by an operator).
    pub fn from_bytes(hmac: [u8; 32], signing_seed: [u8; 32]) -> AuditKeys {
        AuditKeys {
            hmac,
            signing: SigningKey::from_bytes(&signing_seed),
        }
    }

    /// The public half, which verifies checkpoints.
    pub fn public(&self) -> VerifyingKey {
        self.signing.verifying_key()
    }

    /// The public key's short name.
    pub fn key_id(&self) -> String {
        key_id(&self.public())
    }

    /// The HMAC key, for a verifier that holds it.
    pub fn hmac_key(&self) -> [u8; 32] {
        self.hmac
    }

    /// Keys from the environment when set there, else from `dir` (created there on first
    /// use).
    pub fn load_or_create(dir: &Path) -> Result<AuditKeys, KeyError> {
        let env = |name: &'static str| -> Result<Option<[u8; 32]>, KeyError> {
            match std::env::var(name) {
                Ok(v) => unhex32(&v).map(Some).ok_or(KeyError::BadEnv(name)),
                Err(_) => Ok(None),
            }
        };
        let hmac_env = env("BULWARK_AUDIT_HMAC_KEY")?;
        let sign_env = env("BULWARK_AUDIT_SIGNING_KEY")?;
        let hmac = match hmac_env {
            Some(k) => k,
            None => load_or_make(&dir.join("hmac.key"), 0o600)?,
        };
        let seed = match sign_env {
            Some(k) => k,
            None => load_or_make(&dir.join("signing.key"), 0o600)?,
        };
        let keys = AuditKeys::from_bytes(hmac, seed);
        // The public key beside them, for verifiers that get nothing else.
        let public = dir.join("signing.pub");
        if !public.exists() {
            write_new(&public, &hex(&keys.public().to_bytes()), 0o644)?;
        }
        Ok(keys)
    }
}

/// The keys under `dir/retired/<key id>/`, which rotation moved there: a verifier and a
/// writer need them to read the part of a log written before the rotation.
pub fn load_retired(dir: &Path) -> Result<Vec<AuditKeys>, KeyError> {
    let retired = dir.join("retired");
    let entries = match std::fs::read_dir(&retired) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(KeyError::Io(retired, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| KeyError::Io(retired.clone(), e))?.path();
        if path.is_dir() {
            out.push(AuditKeys::from_bytes(
                read_secret(&path.join("hmac.key"))?,
                read_secret(&path.join("signing.key"))?,
            ));
        }
    }
    Ok(out)
}

/// Retires the current keys (to `dir/retired/<key id>/`) and makes new ones; returns
/// (old, new). The next writer to open a log written with the old keys records the
/// rotation in it, signed by the old key.
pub fn rotate(dir: &Path) -> Result<(AuditKeys, AuditKeys), KeyError> {
    let old = AuditKeys::from_bytes(
        read_secret(&dir.join("hmac.key"))?,
        read_secret(&dir.join("signing.key"))?,
    );
    let into = dir.join("retired").join(old.key_id());
    write_new(&into.join("hmac.key"), &hex(&old.hmac), 0o600)?;
    write_new(
        &into.join("signing.key"),
        &hex(&old.signing.to_bytes()),
        0o600,
    )?;
    write_new(
        &into.join("signing.pub"),
        &hex(&old.public().to_bytes()),
        0o644,
    )?;
    for f in ["hmac.key", "signing.key", "signing.pub"] {
        std::fs::remove_file(dir.join(f)).map_err(|e| KeyError::Io(dir.join(f), e))?;
    }
    let new = AuditKeys::load_or_create(dir)?;
    Ok((old, new))
}

/// Reads a public key file (64 hex digits).
pub fn read_public(path: &Path) -> Result<VerifyingKey, KeyError> {
    let text = std::fs::read_to_string(path).map_err(|e| KeyError::Io(path.to_path_buf(), e))?;
    let bytes = unhex32(&text)
        .ok_or_else(|| KeyError::Bad(path.to_path_buf(), "not 64 hex digits".into()))?;
    VerifyingKey::from_bytes(&bytes).map_err(|e| {
        KeyError::Bad(
            path.to_path_buf(),
            format!("not an Ed25519 public key ({e})"),
        )
    })
}

/// Reads a secret key file (64 hex digits).
pub fn read_secret(path: &Path) -> Result<[u8; 32], KeyError> {
    let text = std::fs::read_to_string(path).map_err(|e| KeyError::Io(path.to_path_buf(), e))?;
    unhex32(&text).ok_or_else(|| KeyError::Bad(path.to_path_buf(), "not 64 hex digits".into()))
}

fn load_or_make(path: &Path, mode: u32) -> Result<[u8; 32], KeyError> {
    // Another process may be creating the same key this very moment: it wins, and we read
    // what it wrote (retrying while its file is still empty).
    for attempt in 0..50 {
        match std::fs::read_to_string(path) {
            Ok(text) => match unhex32(&text) {
                Some(k) => return Ok(k),
                None if text.is_empty() && attempt < 49 => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                None => {
                    return Err(KeyError::Bad(
                        path.to_path_buf(),
                        "not 64 hex digits".into(),
                    ));
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let k = random32()?;
                if write_new(path, &hex(&k), mode)? {
                    return Ok(k);
                }
            }
            Err(e) => return Err(KeyError::Bad(path.to_path_buf(), e.to_string())),
        }
    }
    Err(KeyError::Bad(path.to_path_buf(), "stays empty".into()))
}

/// Writes a new file; `false` when it already exists.
fn write_new(path: &Path, text: &str, mode: u32) -> Result<bool, KeyError> {
    use std::os::unix::fs::DirBuilderExt;
    let io = |e| KeyError::Io(path.to_path_buf(), e);
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io)?;
    }
    // create_new: two processes starting at once must not each write a different key.
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
    {
        Ok(mut f) => {
            f.write_all(format!("{text}\n").as_bytes()).map_err(io)?;
            f.sync_all().map_err(io)?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_made_once_and_read_back() {
        let dir = std::env::temp_dir().join(format!("bulwark-audit-keys-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let a = AuditKeys::load_or_create(&dir).unwrap();
        let b = AuditKeys::load_or_create(&dir).unwrap();
        assert_eq!(a.hmac, b.hmac);
        assert_eq!(a.key_id(), b.key_id());
        assert_eq!(read_public(&dir.join("signing.pub")).unwrap(), a.public());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("hmac.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(dir.join("hmac.key"), "garbage").unwrap();
        assert!(matches!(
            AuditKeys::load_or_create(&dir),
            Err(KeyError::Bad(..))
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
