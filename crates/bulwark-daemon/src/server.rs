//! The Unix-socket front: many concurrent clients, one JSON-RPC request per line, replies
//! in order on each connection.
//!
//! Every wait and buffer is bounded: connections ([`Limits::max_connections`], a share
//! per user id when the policy lets several users in, idle connections closed to make
//! room for new clients and after two seconds when three quarters full —
//! [`bulwark_listen::slots`]), line length
//! ([`Limits::max_line`]), requests per second per connection ([`Limits::per_second`]),
//! idle time ([`Limits::idle`]) and write time ([`Limits::write`]). The socket is created
//! owner-only (or open to others when the policy lists other user ids, which the kernel's
//! peer credentials then check on every connection), and a stale socket file from a dead
//! daemon is replaced while a live one is refused.

use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bulwark_listen::{Slot, Slots};
use thiserror::Error;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use crate::rpc::{self, RpcError};
use crate::service::{Peer, Service};

/// The front's limits.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Connections served at once; more are answered with an error and closed.
    pub max_connections: usize,
    /// Longest request line.
    pub max_line: usize,
    /// Requests per second per connection (a token bucket of this size).
    pub per_second: u32,
    /// A connection idle this long is closed.
    pub idle: Duration,
    /// A reply that cannot be written in this long closes the connection.
    pub write: Duration,
    /// Stop serving after this long with no connection open (a daemon a hook started for
    /// itself, which nobody stops); `None` serves until told to stop.
    pub exit_when_idle: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 256,
            max_line: 1 << 20,
            per_second: 5000,
            idle: Duration::from_secs(300),
            write: Duration::from_secs(10),
            exit_when_idle: None,
        }
    }
}

/// Why the daemon could not start.
#[derive(Debug, Error)]
pub enum ServeError {
    /// Another daemon answers on the socket.
    #[error("{0} is in use by a running daemon")]
    InUse(PathBuf),
    /// The path exists and is not a socket.
    #[error("{0} exists and is not a socket; refusing to replace it")]
    NotASocket(PathBuf),
    /// Binding or setting permissions failed.
    #[error("cannot listen on {0}: {1}")]
    Io(PathBuf, io::Error),
}

/// The longest socket path every Unix takes (`sun_path` is 104 bytes on macOS and the BSDs,
/// 108 on Linux, the terminating NUL included).
pub const MAX_SOCKET_PATH: usize = 103;

/// The socket a daemon and its hooks agree on for `state_dir`: `STATE_DIR/bulwark.sock`,
/// or — when that path is too long to bind — `bulwark-DIGEST.sock` (a digest of the state
/// directory) in a private directory of the user's: `$XDG_RUNTIME_DIR`, else
/// `/tmp/bulwark-UID`, created mode 0700 and refused unless it is the user's own and
/// private, since a socket someone else planted there would answer the hooks.
pub fn default_socket(state_dir: &Path) -> Result<PathBuf, ServeError> {
    use sha2::{Digest, Sha256};
    use std::os::unix::ffi::OsStrExt;
    let plain = state_dir.join("bulwark.sock");
    if plain.as_os_str().len() <= MAX_SOCKET_PATH {
        return Ok(plain);
    }
    let digest = Sha256::digest(state_dir.as_os_str().as_bytes());
    let name: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let uid = own_uid().unwrap_or(0);
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(d) if d.is_absolute() && d.as_os_str().len() + 30 <= MAX_SOCKET_PATH => d,
        _ => PathBuf::from(format!("/tmp/bulwark-{uid}")),
    };
    let short = dir.join(format!("bulwark-{name}.sock"));
    let private = |e: String| ServeError::Io(dir.clone(), io::Error::other(e));
    {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(ServeError::Io(dir.clone(), e)),
        }
        let meta = std::fs::symlink_metadata(&dir).map_err(|e| ServeError::Io(dir.clone(), e))?;
        if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
            return Err(private(format!(
                "the state directory's socket path is longer than {MAX_SOCKET_PATH} bytes, and \
                 the short place for it is not a private directory of user {uid}; pass --socket \
                 or a shorter --state-dir"
            )));
        }
    }
    Ok(short)
}

/// A socket path too long to bind, as an error that says what to do.
pub fn check_length(path: &Path) -> Result<(), ServeError> {
    let n = path.as_os_str().len();
    if n > MAX_SOCKET_PATH {
        return Err(ServeError::Io(
            path.to_path_buf(),
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a Unix socket path may be at most {MAX_SOCKET_PATH} bytes, this one is {n}; \
                     choose a shorter --socket"
                ),
            ),
        ));
    }
    Ok(())
}

/// Binds the socket, replacing a stale one, with permissions for `uids`.
pub fn bind(path: &Path, uids: &[u32]) -> Result<UnixListener, ServeError> {
    check_length(path)?;
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(ServeError::NotASocket(path.to_path_buf()));
        }
        match std::os::unix::net::UnixStream::connect(path) {
            Ok(_) => return Err(ServeError::InUse(path.to_path_buf())),
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                // Nobody listens: a daemon died without cleaning up.
                std::fs::remove_file(path).map_err(|e| ServeError::Io(path.to_path_buf(), e))?;
            }
            // Not ours to judge (no permission, for one): a live daemon of another user
            // must not lose its socket.
            Err(e) => return Err(ServeError::Io(path.to_path_buf(), e)),
        }
    }
    let own = own_uid();
    let others = uids.iter().any(|u| Some(*u) != own);
    let mode = if others { 0o666 } else { 0o600 };
    // Bound under a name of its own, given its mode, then renamed into place: a client
    // never finds the socket with the mode the umask gave it (a race the e2e test saw).
    // A path with no room for the longer name is bound in place, as before.
    let mut staged = path.as_os_str().to_owned();
    staged.push(format!(".{}", std::process::id()));
    let staged = PathBuf::from(staged);
    let at = if staged.as_os_str().len() <= MAX_SOCKET_PATH {
        let _ = std::fs::remove_file(&staged);
        staged.as_path()
    } else {
        path
    };
    let listener = UnixListener::bind(at).map_err(|e| ServeError::Io(path.to_path_buf(), e))?;
    let placed =
        std::fs::set_permissions(at, std::fs::Permissions::from_mode(mode)).and_then(|()| {
            if at == path {
                Ok(())
            } else {
                std::fs::rename(at, path)
            }
        });
    if let Err(e) = placed {
        let _ = std::fs::remove_file(at);
        return Err(ServeError::Io(path.to_path_buf(), e));
    }
    Ok(listener)
}

/// The daemon's own user id (the owner of the process's `/proc/self`).
fn own_uid() -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").ok().map(|m| m.uid())
}

/// Whether `uid` may connect: one the policy lists, or — when it lists none — the daemon's
/// own user and root.
pub fn allowed(uid: Option<u32>, listed: &[u32]) -> bool {
    match uid {
        None => false,
        Some(u) if listed.is_empty() => u == 0 || Some(u) == own_uid(),
        Some(u) => listed.contains(&u),
    }
}

/// Serves `listener` until `shutdown` completes, then removes the socket file.
pub async fn serve(
    listener: UnixListener,
    path: PathBuf,
    service: Arc<Service>,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()>,
) {
    // One user holds every place when the socket is only its own (and root's); several
    // users listed in the policy get a quarter each.
    let shared = !service
        .gate()
        .engine()
        .policy()
        .identities
        .unix_uids
        .is_empty();
    let mut bounds = bulwark_listen::Limits::for_max(limits.max_connections);
    if !shared {
        bounds.per_peer = bounds.max;
    }
    let slots: Arc<Slots<u32>> = Slots::new(bounds);
    let reaper = slots.spawn_reaper();
    tokio::pin!(shutdown);
    let mut idle_since = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            _ = tick.tick(), if limits.exit_when_idle.is_some() => {
                if service.stats.open_connections.load(Ordering::Relaxed) > 0 {
                    idle_since = Instant::now();
                } else if limits.exit_when_idle.is_some_and(|d| idle_since.elapsed() >= d) {
                    eprintln!("bulwark daemon: no client for {} s; stopping", idle_since.elapsed().as_secs());
                    break;
                }
            }
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of descriptors, typically: retrying at once would spin.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                service.stats.connections.fetch_add(1, Ordering::Relaxed);
                // Counted against its user: an unreadable credential is a user of its own,
                // refused later by `allowed`.
                let uid = stream.peer_cred().ok().map_or(u32::MAX, |c| c.uid());
                let slot = match slots.admit(uid) {
                    Ok(slot) => slot,
                    Err(why) => {
                        service.stats.refused.fetch_add(1, Ordering::Relaxed);
                        tokio::spawn(refuse(stream, RpcError::new(rpc::RATE_LIMITED, why.to_string()), limits.write));
                        continue;
                    }
                };
                let service = Arc::clone(&service);
                let limits = limits.clone();
                tokio::spawn(async move {
                    service.stats.open_connections.fetch_add(1, Ordering::Relaxed);
                    connection(stream, &service, &limits, &slot).await;
                    service.stats.open_connections.fetch_sub(1, Ordering::Relaxed);
                    drop(slot);
                });
            }
        }
    }
    reaper.abort();
    let _ = std::fs::remove_file(&path);
}

async fn refuse(mut stream: UnixStream, e: RpcError, write: Duration) {
    let line = rpc::error(None, &e) + "\n";
    let _ = tokio::time::timeout(write, stream.write_all(line.as_bytes())).await;
}

async fn connection(stream: UnixStream, service: &Service, limits: &Limits, slot: &Slot<u32>) {
    let cred = stream.peer_cred().ok();
    let peer = Peer {
        uid: cred.map(|c| c.uid()),
        pid: cred.and_then(|c| c.pid()),
    };
    let listed = service
        .gate()
        .engine()
        .policy()
        .identities
        .unix_uids
        .clone();
    if !allowed(peer.uid, &listed) {
        service.stats.refused.fetch_add(1, Ordering::Relaxed);
        let msg = match peer.uid {
            Some(u) => format!("user {u} may not use this socket (policy identities.unix_uids)"),
            None => "the peer's credentials could not be read".into(),
        };
        refuse(stream, RpcError::new(rpc::PEER_REFUSED, msg), limits.write).await;
        return;
    }
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut buf = Vec::with_capacity(1024);
    let mut bucket = Bucket::new(limits.per_second);
    loop {
        buf.clear();
        let mut limited = (&mut reader).take(limits.max_line as u64 + 1);
        let read = limited.read_until(b'\n', &mut buf);
        let n = tokio::select! {
            r = tokio::time::timeout(limits.idle, read) => match r {
                Ok(Ok(0)) | Err(_) | Ok(Err(_)) => return,
                Ok(Ok(n)) => n,
            },
            // Idle, and its place is needed by a new client.
            _ = slot.closed() => return,
        };
        // A line is in: busy until its answer is written.
        let _busy = slot.busy();
        let reply = if n > limits.max_line && !buf.ends_with(b"\n") {
            // Drop the rest of the oversized line, bounded by the idle timeout.
            let mut sink = Vec::new();
            let drain = async {
                loop {
                    sink.clear();
                    let mut chunk = (&mut reader).take(64 * 1024);
                    match chunk.read_until(b'\n', &mut sink).await {
                        Ok(0) | Err(_) => return false,
                        Ok(_) if sink.ends_with(b"\n") => return true,
                        Ok(_) => {}
                    }
                }
            };
            let more = matches!(tokio::time::timeout(limits.idle, drain).await, Ok(true));
            // One huge line must not pin a megabyte per connection for its lifetime.
            buf = Vec::with_capacity(1024);
            let e = RpcError::new(
                rpc::INVALID_REQUEST,
                format!("request longer than {} bytes", limits.max_line),
            );
            service.stats.errors.fetch_add(1, Ordering::Relaxed);
            if !more {
                let _ = tokio::time::timeout(
                    limits.write,
                    write.write_all((rpc::error(None, &e) + "\n").as_bytes()),
                )
                .await;
                return;
            }
            Some(rpc::error(None, &e))
        } else {
            let line = trim_newline(&buf);
            // Blank lines cost a token too, or a client could keep a slot forever for free.
            let allowed = bucket.take();
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if !allowed {
                service.stats.errors.fetch_add(1, Ordering::Relaxed);
                match rpc::parse(line) {
                    // A notification is never answered, limited or not.
                    Ok(r) if r.id.is_none() => None,
                    parsed => Some(rpc::error(
                        parsed.ok().and_then(|r| r.id).as_ref(),
                        &RpcError::new(
                            rpc::RATE_LIMITED,
                            format!(
                                "rate_limited: more than {} requests per second on this connection",
                                limits.per_second
                            ),
                        ),
                    )),
                }
            } else {
                service.handle(line, &peer)
            }
        };
        if let Some(mut r) = reply {
            r.push('\n');
            match tokio::time::timeout(limits.write, write.write_all(r.as_bytes())).await {
                Ok(Ok(())) => {}
                _ => return,
            }
        }
    }
}

fn trim_newline(b: &[u8]) -> &[u8] {
    let b = b.strip_suffix(b"\n").unwrap_or(b);
    b.strip_suffix(b"\r").unwrap_or(b)
}

/// A per-connection token bucket, refilled continuously.
struct Bucket {
    capacity: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn new(per_second: u32) -> Bucket {
        Bucket {
            capacity: f64::from(per_second.max(1)),
            tokens: f64::from(per_second.max(1)),
            last: Instant::now(),
        }
    }

    fn take(&mut self) -> bool {
        let now = Instant::now();
        let elapsed = now.duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.capacity).min(self.capacity);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}
