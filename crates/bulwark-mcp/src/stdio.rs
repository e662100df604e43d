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
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use crate::frame::{self, Frame};
use crate::gateway::{Gateway, Out};
use crate::jsonrpc;
use crate::port;

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
    /// Asked to stop (a signal); the server was terminated.
    Shutdown,
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
/// `group` is the child's pid taken at spawn (its process group id): once the child is
/// reaped its handle no longer knows it, and the group may outlive it.
pub async fn terminate(child: &mut Child, group: Option<u32>) {
    let signal = |sig: &'static str| async move {
        if let Some(pid) = group {
            let _ = Command::new("kill")
                .args([sig, "--", &format!("-{pid}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .await;
        }
    };
    signal("-TERM").await;
    if tokio::time::timeout(Duration::from_secs(2), child.wait())
        .await
        .is_err()
    {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    // The leader is gone; make sure the rest of the group is too.
    signal("-KILL").await;
}

/// Bytes queued towards each side at most: a side that stops reading slows the other down
/// instead of growing memory. The same budget as an in-process port's.
pub use crate::port::QUEUE_BYTES;

/// A serialised message and its share of the queue's byte budget.
type Queued = Option<(Vec<u8>, OwnedSemaphorePermit)>;

/// One direction out of the relay: a bounded queue of lines with a task writing them to a
/// stream, or an in-process [`port`] whose receiver takes the messages as they are.
#[derive(Clone)]
enum Lane {
    Lines {
        tx: mpsc::Sender<Queued>,
        budget: Arc<Semaphore>,
    },
    Port(port::Sender),
}

impl Lane {
    fn lines() -> (Lane, mpsc::Receiver<Queued>) {
        let (tx, rx) = mpsc::channel(256);
        let lane = Lane::Lines {
            tx,
            budget: Arc::new(Semaphore::new(QUEUE_BYTES)),
        };
        (lane, rx)
    }

    async fn send(&self, v: Value) -> bool {
        match self {
            Lane::Lines { tx, budget } => {
                let mut line = jsonrpc::to_bytes(&v);
                line.push(b'\n');
                let want = port::budget_share(line.len());
                let Ok(permit) = Arc::clone(budget).acquire_many_owned(want).await else {
                    return false;
                };
                tx.send(Some((line, permit))).await.is_ok()
            }
            Lane::Port(p) => p.send(v).await,
        }
    }

    /// Asks the far side to finish what is queued and close.
    async fn close(&self) {
        match self {
            // Bounded: a stuck writer with a full queue must not hold the shutdown up.
            Lane::Lines { tx, .. } => {
                let _ = tokio::time::timeout(Duration::from_secs(2), tx.send(None)).await;
            }
            Lane::Port(p) => p.close().await,
        }
    }
}

async fn route(outs: Vec<Out>, client: &Lane, server: &Lane) -> bool {
    for o in outs {
        let ok = match o {
            Out::Client(v) => client.send(v).await,
            Out::Server(v) => server.send(v).await,
        };
        if !ok {
            return false;
        }
    }
    true
}

fn writer<W>(mut out: W, mut queue: mpsc::Receiver<Queued>) -> tokio::task::JoinHandle<()>
where
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        while let Some(Some((line, permit))) = queue.recv().await {
            if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
                break;
            }
            drop(permit);
        }
        let _ = out.shutdown().await;
    })
}

/// One side of the relay as a lane out and a source of messages in: a stream of lines
/// (with the task that writes to it), or an in-process port.
fn side(io: Io) -> (Lane, Source, Option<tokio::task::JoinHandle<()>>) {
    match io {
        Io::Lines { read, write } => {
            let (lane, queue) = Lane::lines();
            let w = writer(write, queue);
            (lane, Source::Lines(BufReader::new(read)), Some(w))
        }
        Io::Port(p) => (Lane::Port(p.tx), Source::Port(p.rx), None),
    }
}

/// Where messages come in from.
enum Source {
    Lines(BufReader<Box<dyn tokio::io::AsyncRead + Unpin + Send>>),
    Port(port::Receiver),
}

/// What one read from a side gave.
enum Got {
    Line(Vec<u8>),
    Message(Value),
    Oversized(Option<Value>),
    End,
}

impl Source {
    async fn next(&mut self) -> Got {
        match self {
            Source::Lines(r) => match frame::read(r, MAX_FRAME).await {
                Ok(Frame::Line(l)) => Got::Line(l),
                Ok(Frame::Oversized(id)) => Got::Oversized(id),
                Ok(Frame::Eof) | Err(_) => Got::End,
            },
            Source::Port(rx) => match rx.recv().await {
                Some(v) => Got::Message(v),
                None => Got::End,
            },
        }
    }
}

/// How the relay talks to one side.
pub enum Io {
    /// Newline-delimited JSON over a byte stream (our stdin/stdout, a child's pipes).
    Lines {
        /// Messages from that side.
        read: Box<dyn tokio::io::AsyncRead + Unpin + Send>,
        /// Messages to that side.
        write: Box<dyn tokio::io::AsyncWrite + Unpin + Send>,
    },
    /// Parsed messages handed over in this process.
    Port(port::Port),
}

impl Io {
    /// A byte stream pair.
    pub fn lines(
        read: impl tokio::io::AsyncRead + Unpin + Send + 'static,
        write: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
    ) -> Io {
        Io::Lines {
            read: Box::new(read),
            write: Box::new(write),
        }
    }
}

/// Joins a stream of newline-delimited messages (our stdin and stdout) to an in-process
/// port, as the stdio front of the `servers:` aggregate does. Returns once the port's side
/// has ended (after the client closed its input, once what it asked is answered), or the
/// output cannot be written.
pub async fn bridge<R, W>(read: R, mut write: W, port: port::Port)
where
    R: tokio::io::AsyncRead + Unpin + Send,
    W: tokio::io::AsyncWrite + Unpin + Send,
{
    let port::Port { tx, mut rx } = port;
    // What cannot be passed on (unparsable, oversized) is answered here, in order with the
    // rest of what goes out.
    let (refusals, mut refused) = mpsc::channel::<Value>(16);
    let upward = async move {
        let mut reader = BufReader::new(read);
        loop {
            let refusal = match frame::read(&mut reader, MAX_FRAME).await {
                Ok(Frame::Line(l)) => match jsonrpc::parse_json(&l) {
                    Ok(v) => {
                        if !tx.send(v).await {
                            break;
                        }
                        continue;
                    }
                    Err(e) => jsonrpc::error(&Value::Null, e.code(), &e.to_string(), None),
                },
                Ok(Frame::Oversized(id)) => jsonrpc::error(
                    &id.unwrap_or(Value::Null),
                    jsonrpc::INVALID_REQUEST,
                    &format!("message larger than {MAX_FRAME} bytes"),
                    None,
                ),
                Ok(Frame::Eof) | Err(_) => break,
            };
            if refusals.send(refusal).await.is_err() {
                break;
            }
        }
        tx.close().await;
        // Should the close marker not get through, the last sender gone says the same.
        drop(tx);
        std::future::pending::<()>().await;
    };
    let downward = async move {
        loop {
            let v = tokio::select! {
                v = rx.recv() => match v {
                    Some(v) => v,
                    None => break,
                },
                Some(v) = refused.recv() => v,
            };
            let mut line = jsonrpc::to_bytes(&v);
            line.push(b'\n');
            if write.write_all(&line).await.is_err() || write.flush().await.is_err() {
                break;
            }
        }
    };
    tokio::select! {
        _ = downward => {}
        _ = upward => {}
    }
}

/// A server reached some other way than as a child: messages both ways over an
/// in-process port (see [`crate::remote`]), and the task behind it.
pub struct Pipe {
    /// The relay's end of the port: messages for the server out, the server's in.
    pub port: port::Port,
    /// The task that talks to the server; aborted when the relay ends.
    pub task: tokio::task::JoinHandle<()>,
}

/// The server a relay talks to.
pub enum Server {
    /// A child process (its own process group).
    Child(Child),
    /// A pipe to a server elsewhere.
    Pipe(Pipe),
}

/// How a server is waited for and ended.
enum Life {
    Child(Child, Option<u32>),
    /// The pipe's task, until it has been seen to finish (a finished handle is not polled
    /// again).
    Pipe(Option<tokio::task::JoinHandle<()>>),
}

impl Life {
    /// Waits up to `d` for the server to end by itself; its exit status when it has one.
    async fn wait(&mut self, d: Duration) -> Option<Option<i32>> {
        match self {
            Life::Child(c, _) => match tokio::time::timeout(d, c.wait()).await {
                Ok(Ok(s)) => Some(s.code()),
                _ => None,
            },
            Life::Pipe(slot) => {
                let t = slot.as_mut()?;
                let done = tokio::time::timeout(d, t).await.is_ok();
                if done {
                    *slot = None;
                }
                done.then_some(None)
            }
        }
    }

    async fn end(&mut self) {
        match self {
            Life::Child(c, group) => terminate(c, *group).await,
            // Given a moment to end its upstream session (it has seen its input close).
            Life::Pipe(slot) => {
                if let Some(mut t) = slot.take()
                    && tokio::time::timeout(Duration::from_secs(2), &mut t)
                        .await
                        .is_err()
                {
                    t.abort();
                }
            }
        }
    }
}

/// Relays between the client and the server until one side ends or `shutdown` completes.
pub async fn relay(
    gateway: Arc<Gateway>,
    server: Server,
    client: Io,
    shutdown: impl std::future::Future<Output = ()>,
) -> Ended {
    let now = crate::clock::now_ms;
    let (server_io, server_err, mut life) = match server {
        Server::Child(mut child) => {
            let group = child.id();
            let (Some(i), Some(o), Some(e)) =
                (child.stdin.take(), child.stdout.take(), child.stderr.take())
            else {
                terminate(&mut child, group).await;
                return Ended::ServerExited(None);
            };
            (Io::lines(o, i), Some(e), Life::Child(child, group))
        }
        Server::Pipe(p) => (Io::Port(p.port), None, Life::Pipe(Some(p.task))),
    };

    let (to_client, mut client_source, client_writer) = side(client);
    let (to_server, mut server_source, server_writer) = side(server_io);
    // A port has no writer task: what is queued is the receiver's once it is sent.
    let mut server_writer = server_writer.unwrap_or_else(|| tokio::spawn(async {}));

    // The server's stderr, line by line, into ours — written asynchronously, so a slow
    // reader of our stderr does not stall the relay.
    if let Some(server_err) = server_err {
        tokio::spawn(async move {
            let mut lines = BufReader::new(server_err);
            let mut err = tokio::io::stderr();
            loop {
                let line = match frame::read(&mut lines, 64 * 1024).await {
                    Ok(Frame::Line(l)) => l,
                    Ok(Frame::Oversized(_)) => b"(a line over 64 KiB, not shown)".to_vec(),
                    Ok(Frame::Eof) | Err(_) => break,
                };
                let mut out = b"[server] ".to_vec();
                out.extend_from_slice(&line);
                out.push(b'\n');
                if err.write_all(&out).await.is_err() {
                    break;
                }
            }
        });
    }

    // Server → client.
    let server_side = {
        let gateway = Arc::clone(&gateway);
        let (to_client, to_server) = (to_client.clone(), to_server.clone());
        tokio::spawn(async move {
            loop {
                let outs = match server_source.next().await {
                    Got::Line(l) => gateway.from_server(&l, now()),
                    Got::Message(v) => gateway.from_server_message(v, now()),
                    Got::Oversized(id) => gateway.oversized_from_server(id, MAX_FRAME),
                    Got::End => break,
                };
                if !route(outs, &to_client, &to_server).await {
                    break;
                }
            }
        })
    };

    // Client → server. At the client's end of input, what it sent is still delivered
    // before the server's stdin is closed.
    let client_side = {
        let gateway = Arc::clone(&gateway);
        let (to_client, to_server) = (to_client.clone(), to_server.clone());
        tokio::spawn(async move {
            loop {
                let outs = match client_source.next().await {
                    Got::Line(l) => gateway.from_client(&l, now()),
                    Got::Message(v) => gateway.from_client_message(v, now()),
                    Got::Oversized(id) => vec![Out::Client(jsonrpc::error(
                        &id.unwrap_or(Value::Null),
                        jsonrpc::INVALID_REQUEST,
                        &format!("message larger than {MAX_FRAME} bytes"),
                        None,
                    ))],
                    Got::End => break,
                };
                if !route(outs, &to_client, &to_server).await {
                    break;
                }
            }
            to_server.close().await;
        })
    };

    // Requests the server sits on are failed when their time is up.
    let ticker = {
        let gateway = Arc::clone(&gateway);
        let (to_client, to_server) = (to_client.clone(), to_server.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            loop {
                tick.tick().await;
                if !route(gateway.expire(now()), &to_client, &to_server).await {
                    break;
                }
            }
        })
    };

    tokio::pin!(server_side, client_side, shutdown);
    let ended = tokio::select! {
        _ = &mut client_side => {
            ticker.abort();
            // The server's stdin closes once its queue is written; give it a moment to exit
            // by itself, then end its group.
            let _ = tokio::time::timeout(Duration::from_secs(2), &mut server_writer).await;
            if life.wait(Duration::from_secs(2)).await.is_none() {
                life.end().await;
            }
            // Answers the server wrote before it went are still routed to the client; what
            // it never answered gets an error, as when the server goes first.
            let _ = tokio::time::timeout(Duration::from_secs(2), &mut server_side).await;
            for o in gateway.server_gone("it ended before answering") {
                if let Out::Client(v) = o
                    && !to_client.send(v).await
                {
                    break;
                }
            }
            Ended::ClientClosed
        }
        _ = &mut server_side => {
            ticker.abort();
            client_side.abort();
            // The server closed its output: it is gone or going. Tell every waiting
            // request first, then make sure of it.
            let status = life.wait(Duration::from_secs(2)).await.flatten();
            let why = match status {
                Some(c) => format!("it exited with status {c}"),
                None => "it closed its output".to_string(),
            };
            for o in gateway.server_gone(&why) {
                if let Out::Client(v) = o
                    && !to_client.send(v).await
                {
                    break;
                }
            }
            life.end().await;
            Ended::ServerExited(status)
        }
        _ = &mut shutdown => {
            ticker.abort();
            client_side.abort();
            server_side.abort();
            // A pipe's task ends its upstream session once its input closes: close it.
            if matches!(life, Life::Pipe(_)) {
                to_server.close().await;
                let _ = tokio::time::timeout(Duration::from_secs(2), &mut server_writer).await;
            }
            life.end().await;
            Ended::Shutdown
        }
    };
    server_writer.abort();
    to_client.close().await;
    drop(to_client);
    drop(to_server);
    // Let what is queued for the client go out.
    if let Some(w) = client_writer {
        let _ = tokio::time::timeout(Duration::from_secs(2), w).await;
    }
    ended
}
