//! The stdio wrapper: MCP on our own stdin/stdout, the server as a child process.
//!
//! `bulwark mcp -- npx -y @modelcontextprotocol/server-filesystem ~/work` is the one-line
//! change in a client's configuration. The child runs in its own process group with only
//! an allowlisted environment; its stderr goes to ours, line by line, prefixed. When the
//! client closes stdin the child's stdin is closed, and the group is terminated if it does
//! not exit; when the child exits, every request still waiting gets an error, and the
//! gateway exits with the child's status.

use std::ffi::OsString;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::frame::{self, Frame};
use crate::gateway::{Gateway, Out};
use crate::jsonrpc;

/// Variables a stdio server gets from our environment without being named.
pub const BASE_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR",
    "TZ",
];

/// Largest frame read from either side.
pub const MAX_FRAME: usize = 16 << 20;

/// How to run the server.
#[derive(Debug, Clone)]
pub struct ServerCommand {
    /// Program and arguments.
    pub argv: Vec<OsString>,
    /// Variables passed besides [`BASE_ENV`]: `NAME` (from our environment) or
    /// `NAME=VALUE`.
    pub env: Vec<String>,
}

/// Why the wrapper stopped.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    /// No command to run.
    #[error("no server command given (bulwark mcp -- COMMAND ARGS…)")]
    NoCommand,
    /// The child could not be started.
    #[error("cannot start {0:?}: {1}")]
    Spawn(OsString, std::io::Error),
}

/// How the session ended.
#[derive(Debug)]
pub enum Ended {
    /// The client closed its side.
    ClientClosed,
    /// The server exited (with its status code, if it had one).
    ServerExited(Option<i32>),
}

fn environment(env: &[String]) -> Vec<(String, OsString)> {
    let mut out: Vec<(String, OsString)> = Vec::new();
    for name in BASE_ENV {
        if let Some(v) = std::env::var_os(name) {
            out.push(((*name).to_string(), v));
        }
    }
    for e in env {
        match e.split_once('=') {
            Some((k, v)) => out.push((k.to_string(), v.into())),
            None => {
                if let Some(v) = std::env::var_os(e) {
                    out.push((e.clone(), v));
                }
            }
        }
    }
    out
}

/// Starts the server as a child in its own process group.
pub fn spawn(cmd: &ServerCommand) -> Result<Child, StdioError> {
    let (program, args) = cmd.argv.split_first().ok_or(StdioError::NoCommand)?;
    Command::new(program)
        .args(args)
        .env_clear()
        .envs(environment(&cmd.env))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| StdioError::Spawn(program.clone(), e))
}

/// Terminates the child's whole process group: `npx` and shell wrappers start grandchildren
/// that would otherwise outlive the gateway.
pub async fn terminate(child: &mut Child) {
    let Some(pid) = child.id() else { return };
    let group = format!("-{pid}");
    let signal = |sig: &str| {
        let _ = std::process::Command::new("kill")
            .args([sig, "--", &group])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    };
    signal("-TERM");
    if tokio::time::timeout(Duration::from_secs(2), child.wait())
        .await
        .is_err()
    {
        signal("-KILL");
        let _ = child.start_kill();
        let _ = child.wait().await;
    } else {
        // The leader is gone; make sure the rest of the group is too.
        signal("-KILL");
    }
}

/// Relays between `client_in`/`client_out` and the server child until one side ends.
pub async fn relay<I, O>(
    gateway: Arc<Gateway>,
    mut child: Child,
    client_in: I,
    mut client_out: O,
) -> Ended
where
    I: tokio::io::AsyncRead + Unpin + Send + 'static,
    O: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let start = Instant::now();
    let now = move || start.elapsed().as_millis() as u64;
    let (Some(mut server_in), Some(server_out), Some(server_err)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Ended::ServerExited(None);
    };

    // Bounded queues: a side that stops reading slows the other down, never grows memory.
    let (to_client, mut client_q) = mpsc::channel::<Value>(256);
    let (to_server, mut server_q) = mpsc::channel::<Value>(256);

    let client_writer = tokio::spawn(async move {
        while let Some(v) = client_q.recv().await {
            let mut line = v.to_string();
            line.push('\n');
            if client_out.write_all(line.as_bytes()).await.is_err()
                || client_out.flush().await.is_err()
            {
                break;
            }
        }
    });
    let server_writer = tokio::spawn(async move {
        while let Some(v) = server_q.recv().await {
            let mut line = v.to_string();
            line.push('\n');
            if server_in.write_all(line.as_bytes()).await.is_err()
                || server_in.flush().await.is_err()
            {
                break;
            }
        }
        // Dropping stdin tells the server the client is gone.
    });
    tokio::spawn(async move {
        let mut lines = BufReader::new(server_err);
        loop {
            match frame::read(&mut lines, 64 * 1024).await {
                Ok(Frame::Line(l)) => eprintln!("[server] {}", String::from_utf8_lossy(&l)),
                Ok(Frame::Oversized(p)) => {
                    eprintln!("[server] {}… (line cut)", String::from_utf8_lossy(&p))
                }
                Ok(Frame::Eof) | Err(_) => break,
            }
        }
    });

    let route = |outs: Vec<Out>, to_client: mpsc::Sender<Value>, to_server: mpsc::Sender<Value>| async move {
        for o in outs {
            let ok = match o {
                Out::Client(v) => to_client.send(v).await.is_ok(),
                Out::Server(v) => to_server.send(v).await.is_ok(),
            };
            if !ok {
                return false;
            }
        }
        true
    };

    // Server → client.
    let server_side = {
        let gateway = Arc::clone(&gateway);
        let to_client = to_client.clone();
        let to_server = to_server.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(server_out);
            loop {
                let outs = match frame::read(&mut reader, MAX_FRAME).await {
                    Ok(Frame::Line(l)) => gateway.from_server(&l, now()),
                    Ok(Frame::Oversized(prefix)) => {
                        gateway.oversized_from_server(&prefix, MAX_FRAME)
                    }
                    Ok(Frame::Eof) | Err(_) => break,
                };
                if !route(outs, to_client.clone(), to_server.clone()).await {
                    break;
                }
            }
        })
    };

    // Client → server.
    let client_side = {
        let gateway = Arc::clone(&gateway);
        let to_client = to_client.clone();
        let to_server = to_server.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(client_in);
            loop {
                let outs = match frame::read(&mut reader, MAX_FRAME).await {
                    Ok(Frame::Line(l)) => gateway.from_client(&l, now()),
                    Ok(Frame::Oversized(prefix)) => vec![Out::Client(jsonrpc::error(
                        &jsonrpc::sniff_id(&prefix).unwrap_or(Value::Null),
                        jsonrpc::INVALID_REQUEST,
                        &format!("message larger than {MAX_FRAME} bytes"),
                        None,
                    ))],
                    Ok(Frame::Eof) | Err(_) => break,
                };
                if !route(outs, to_client.clone(), to_server.clone()).await {
                    break;
                }
            }
        })
    };

    // Requests the server sits on are failed when their time is up.
    let ticker = {
        let gateway = Arc::clone(&gateway);
        let to_client = to_client.clone();
        let to_server = to_server.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            loop {
                tick.tick().await;
                let outs = gateway.expire(now());
                if !route(outs, to_client.clone(), to_server.clone()).await {
                    break;
                }
            }
        })
    };
    drop(to_server);

    tokio::pin!(server_side, client_side);
    let ended = tokio::select! {
        _ = &mut client_side => {
            // Close the server's stdin (dropping its writer closes the pipe), give it a
            // moment to exit by itself, then end it.
            ticker.abort();
            server_writer.abort();
            let exited = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
            if exited.is_err() {
                terminate(&mut child).await;
            }
            Ended::ClientClosed
        }
        _ = &mut server_side => {
            let status = child.wait().await.ok().and_then(|s| s.code());
            let why = match status {
                Some(c) => format!("it exited with status {c}"),
                None => "it was killed or closed its output".to_string(),
            };
            for o in gateway.server_gone(&why) {
                if let Out::Client(v) = o {
                    let _ = to_client.send(v).await;
                }
            }
            ticker.abort();
            client_side.abort();
            terminate(&mut child).await;
            Ended::ServerExited(status)
        }
    };
    drop(to_client);
    server_writer.abort();
    // Let what is queued for the client go out.
    let _ = tokio::time::timeout(Duration::from_secs(2), client_writer).await;
    ended
}
