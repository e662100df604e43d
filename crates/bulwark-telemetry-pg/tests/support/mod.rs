//! A PostgreSQL server of the test's own on an ephemeral port, stopped when the guard drops.
//!
//! The binaries are found as `BULWARK_PG_BIN` (a directory), then on `PATH`, then in
//! Debian's `/usr/lib/postgresql/*/bin` (where the `postgresql` package puts them, off
//! `PATH`); `scripts/setup-peers` installs the package. No PostgreSQL is a failure, not a
//! skip. PostgreSQL refuses to run as root, so as root the server runs as the `postgres`
//! user (or `nobody`) through `setpriv`, which execs: the child is the server itself.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running PostgreSQL, stopped (and its directory removed) on drop.
pub struct Postgres {
    pub port: u16,
    dir: PathBuf,
    bin: PathBuf,
    user: Option<(u32, u32)>,
    child: Option<Child>,
}

fn bin_dir() -> PathBuf {
    if let Ok(d) = std::env::var("BULWARK_PG_BIN") {
        return PathBuf::from(d);
    }
    if let Ok(path) = std::env::var("PATH") {
        for d in std::env::split_paths(&path) {
            if d.join("initdb").is_file() && d.join("postgres").is_file() {
                // A link on PATH (as /usr/local/bin/initdb here) leads to the directory that
                // also holds createdb.
                return std::fs::canonicalize(d.join("initdb"))
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf))
                    .unwrap_or(d);
            }
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|r| {
            r.filter_map(|e| e.ok().map(|e| e.path().join("bin")))
                .filter(|b| b.join("initdb").is_file())
                .collect()
        })
        .unwrap_or_default();
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found.pop().expect(
        "PostgreSQL (initdb, postgres) must be installed: scripts/setup-peers installs Debian's postgresql",
    )
}

/// (uid, gid) to run the server as, when this process is root.
fn unprivileged() -> Option<(u32, u32)> {
    let me = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&me.stdout).trim() != "0" {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    for name in ["postgres", "nobody"] {
        for line in passwd.lines() {
            let f: Vec<&str> = line.split(':').collect();
            if f.len() > 3
                && f[0] == name
                && let (Ok(u), Ok(g)) = (f[2].parse(), f[3].parse())
            {
                return Some((u, g));
            }
        }
    }
    Some((65534, 65534))
}

fn command(bin: &Path, prog: &str, user: Option<(u32, u32)>) -> Command {
    match user {
        None => Command::new(bin.join(prog)),
        Some((u, g)) => {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={u}"))
                .arg(format!("--regid={g}"))
                .arg("--clear-groups")
                .arg("--")
                .arg(bin.join(prog));
            c
        }
    }
}

impl Postgres {
    /// Initialises a cluster (trust authentication on loopback, user `bulwark`, database
    /// `bulwark`) and starts it on a free loopback port.
    pub fn start() -> Postgres {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let dir = std::env::temp_dir().join(format!("bwk-pg-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a directory for postgres");
        let user = unprivileged();
        if let Some((u, g)) = user {
            std::os::unix::fs::chown(&dir, Some(u), Some(g)).expect("chown the data directory");
        }
        let bin = bin_dir();
        let data = dir.join("data");
        let out = command(&bin, "initdb", user)
            .arg("-D")
            .arg(&data)
            .args(["-U", "bulwark", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .stdout(Stdio::null())
            .output()
            .expect("initdb runs");
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut p = Postgres {
            port,
            dir,
            bin,
            user,
            child: None,
        };
        p.restart();
        // The database the URL names.
        p.create_database();
        p
    }

    fn create_database(&self) {
        let out = command(&self.bin, "createdb", self.user)
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "bulwark",
            ])
            .arg("bulwark")
            .output()
            .expect("createdb runs");
        assert!(
            out.status.success(),
            "createdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `postgres://bulwark@127.0.0.1:PORT/bulwark`.
    pub fn url(&self) -> String {
        format!("postgres://bulwark@127.0.0.1:{}/bulwark", self.port)
    }

    /// Starts the server again on the same port and data.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = command(&self.bin, "postgres", self.user)
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-p", &self.port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            .arg("-c")
            .arg(format!("unix_socket_directories={}", self.dir.display()))
            .args(["-c", "fsync=off", "-c", "full_page_writes=off"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("postgres runs");
        self.child = Some(child);
        let until = Instant::now() + Duration::from_secs(30);
        let pid_file = self.dir.join("data/postmaster.pid");
        loop {
            // postmaster.pid's status line says "ready" once connections are accepted.
            let ready = std::fs::read_to_string(&pid_file)
                .map(|t| t.lines().any(|l| l.trim() == "ready"))
                .unwrap_or(false);
            if ready && TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(st)) = c.try_wait()
            {
                panic!("postgres exited at start: {st}");
            }
            assert!(Instant::now() < until, "postgres did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the server (fast shutdown: SIGINT).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-INT", &c.id().to_string()])
                .status();
            let until = Instant::now() + Duration::from_secs(20);
            while Instant::now() < until {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
