//! `bulwark mcp` as one value: [`Front::build`] makes the gate (with the fleet device and
//! the approvals desk) and the gateway for the chosen shape — a stdio wrapper around one
//! server (a command or a remote URL), the policy's `servers:` aggregated on stdio, or the
//! Streamable HTTP listener — and [`Front::run`] serves until the client leaves or
//! SIGTERM/SIGINT.
//!
//! ```no_run
//! # fn demo(parts: bulwark_gate::Parts) -> Result<(), bulwark_mcp::front::FrontError> {
//! use bulwark_mcp::front::{Config, Front};
//! let config = Config {
//!     command: vec!["npx".into(), "@modelcontextprotocol/server-everything".into()],
//!     ..Config::new(parts)
//! };
//! let exit = Front::build(config)?.run()?;
//! # let _ = exit; Ok(()) }
//! ```

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use bulwark_engine::Principal;
use bulwark_gate::{Gate, Parts, WeakGate};
use tokio::signal::unix::{SignalKind, signal};

use crate::gateway::{Config as GatewayConfig, Gateway, MAX_PENDING};
use crate::http::guard::{Guard, LOOPBACK_HOSTS};
use crate::http::{HttpConfig, HttpFront, RemoteConnector, StdioConnector};
use crate::pinfile::PinFile;
use crate::stdio::{self, Ended, ServerCommand};

/// How the gateway is set up, as the binary loaded it.
pub struct Config {
    /// What the gate is made of.
    pub parts: Parts,
    /// The admin listener, when one is asked for.
    pub admin: Option<bulwark_admin::Settings>,
    /// The secret webhook posts are signed with.
    pub webhook_secret: Option<Vec<u8>>,
    /// The server's name for pins and logs (default: the command line, or the upstream URL
    /// without credentials or query; `servers` when the policy's servers are aggregated).
    pub name: Option<String>,
    /// Environment variables passed to the server (NAME or NAME=VALUE), besides the
    /// policy's `mcp.env`.
    pub env: Vec<String>,
    /// Serve Streamable HTTP here instead of stdio.
    pub listen: Option<String>,
    /// Host names clients may use besides the loopback names.
    pub allow_host: Vec<String>,
    /// Origins browsers may call from.
    pub allow_origin: Vec<String>,
    /// Sessions at once on HTTP.
    pub max_sessions: usize,
    /// A remote server instead of a command.
    pub upstream_url: Option<String>,
    /// Allow the remote server on loopback or a private network.
    pub upstream_allow_internal: bool,
    /// The server to run; empty (and no URL): the policy's `servers:` are aggregated.
    pub command: Vec<OsString>,
    /// The policy file given (the slot a first fleet rollback returns to).
    pub fleet_policy_file: Option<PathBuf>,
    /// Export a span per request to this OpenTelemetry collector (the binary reads the
    /// standard `OTEL_EXPORTER_OTLP_*` variables).
    pub otlp: Option<bulwark_audit::otlp::Settings>,
}

impl Config {
    /// A gateway with nothing set but its gate's parts.
    pub fn new(parts: Parts) -> Config {
        Config {
            parts,
            admin: None,
            webhook_secret: None,
            name: None,
            env: Vec::new(),
            listen: None,
            allow_host: Vec::new(),
            allow_origin: Vec::new(),
            max_sessions: 64,
            upstream_url: None,
            upstream_allow_internal: false,
            command: Vec::new(),
            fleet_policy_file: None,
            otlp: None,
        }
    }
}

/// Why the gateway could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum FrontError {
    /// What was asked for cannot be served (no server, a bad address, a missing key).
    #[error("{0}")]
    Setup(String),
    /// The gate's parts.
    #[error(transparent)]
    Gate(#[from] bulwark_gate::PartsError),
    /// The pins.
    #[error("cannot load the pins: {0}")]
    Pins(#[from] crate::pinfile::PinError),
    /// The fleet device.
    #[error(transparent)]
    Fleet(#[from] bulwark_fleet::runtime::FleetError),
    /// The admin listener.
    #[error(transparent)]
    Admin(#[from] bulwark_admin::AdminError),
    /// The remote upstream.
    #[error(transparent)]
    Remote(#[from] crate::remote::RemoteError),
    /// The wrapped server could not be started.
    #[error(transparent)]
    Server(#[from] crate::stdio::StdioError),
    /// The runtime, the listener, the server's process or a signal.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> FrontError {
    let what = what.into();
    move |e| FrontError::Io(what, e)
}

/// How a gateway run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// The client closed its side (or the HTTP listener was told to stop).
    Done,
    /// The wrapped server exited with this status.
    ServerExited(Option<i32>),
    /// SIGTERM or SIGINT.
    Interrupted,
}

enum Shape {
    /// One server on stdio: a command or a remote URL.
    Wrapper(Box<Gateway>),
    /// The policy's servers on stdio.
    Aggregate(crate::aggregate::AggregateConnector),
    /// Streamable HTTP.
    Http(Arc<HttpFront>, std::net::SocketAddr),
}

/// The gateway, ready to serve.
pub struct Front {
    gate: Arc<Gate>,
    shape: Shape,
    identity: String,
    admin: Option<bulwark_admin::Admin>,
    webhook_secret: Option<Vec<u8>>,
    state_dir: PathBuf,
    /// The wrapped server: its command (with the environment it gets), or its URL.
    server: ServerCommand,
    upstream: Option<(String, bool)>,
}

/// A remote server's default name: scheme, host, port and path — no user, password,
/// query or fragment.
fn url_name(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => format!(
            "{}://{}{}{}",
            u.scheme(),
            u.host_str().unwrap_or(""),
            u.port().map(|p| format!(":{p}")).unwrap_or_default(),
            u.path()
        ),
        Err(_) => "remote".to_string(),
    }
}

/// The policy's identity rules for the HTTP front, with the header signing key read from
/// the environment variable the policy names.
fn identities(
    policy: &bulwark_policy::Policy,
) -> Result<crate::http::identity::Identity, FrontError> {
    let i = &policy.identities;
    let key = match &i.header_signing_key_env {
        Some(var) => match std::env::var(var) {
            Ok(k) if !k.is_empty() => Some(k.into_bytes()),
            _ => {
                return Err(FrontError::Setup(format!(
                    "the policy's identities.header_signing_key_env names {var}, which is not set; \
                     set it to the shared key, or remove the setting"
                )));
            }
        },
        None => None,
    };
    Ok(crate::http::identity::Identity::new(
        i.bearer_tokens.clone(),
        key,
        i.require_verified,
    ))
}

/// The remote upstream, checked. Idle reads may last as long as a tool call; the gateway's
/// own request timeout (`mcp.request_timeout_secs`) ends a call that takes too long.
fn remote(url: &str, allow_internal: bool) -> Result<crate::remote::Remote, FrontError> {
    Ok(crate::remote::Remote::new(
        url,
        allow_internal,
        std::time::Duration::from_secs(3600),
    )?)
}

type MakeGateway =
    Arc<dyn Fn(&str, &Principal, &str) -> Result<Arc<Gateway>, String> + Send + Sync>;

/// Makes a gateway core for (client session, caller, server name), with one pin file per
/// server shared by every session: a listing saved by one is not taken by the others for an
/// operator's change (which would clear their withheld tools).
fn gateway_maker(
    gate: &Arc<Gate>,
    pins_dir: &std::path::Path,
    names: &[String],
    remote: &[String],
    front: &'static str,
) -> Result<MakeGateway, FrontError> {
    let remote: std::collections::HashSet<String> = remote.iter().cloned().collect();
    let mut pins = std::collections::HashMap::new();
    for n in names {
        pins.insert(n.clone(), PinFile::open(pins_dir, n)?);
    }
    let gate = Arc::clone(gate);
    Ok(Arc::new(
        move |session: &str, caller: &Principal, server: &str| {
            let pins = pins
                .get(server)
                .cloned()
                .ok_or_else(|| format!("no pins for server {server:?}"))?;
            let digest = crate::http::id_digest(session);
            // Stateless (2026-07-28) callers: one session per caller identity (all anonymous
            // callers share one), whatever upstream session or core serves them now, so
            // nothing they were tainted with is forgotten; the front names each anonymous
            // caller's connection in its requests, and loop, rate and sequence state is that
            // connection's (docs/mcp.md "Stateless callers").
            let stateless = session.starts_with("stateless-");
            let session = if stateless {
                let who = format!("{}|{}", caller.verified, caller.id.as_deref().unwrap_or(""));
                format!("mcp:{front}:stateless:{}", crate::http::id_digest(&who))
            } else {
                // Not the session id itself: that is a credential, and audit records are
                // read by more people than hold it. Every server of one client session
                // shares it, so taint from one server's result counts against calls to
                // another.
                format!("mcp:{front}:{digest}")
            };
            let config = GatewayConfig {
                remote: remote.contains(server),
                server: server.to_string(),
                session,
                per_caller: stateless,
                principal: Principal {
                    id: Some(caller.id.clone().unwrap_or_else(|| format!("mcp:{front}"))),
                    verified: caller.verified,
                },
                max_pending: MAX_PENDING,
            };
            let log_name = format!("{server} {digest}");
            let g = Gateway::new(
                Arc::clone(&gate),
                config,
                Some(pins),
                Box::new(move |line| eprintln!("bulwark mcp [{log_name}]: {line}")),
            )
            .map_err(|e| format!("cannot load the pins: {e}"))?;
            Ok(Arc::new(g))
        },
    ))
}

/// The policy's servers, ready to open per client session.
fn aggregate_connector(
    servers: &[bulwark_policy::ServerSpec],
    env: &[String],
    make: MakeGateway,
) -> Result<crate::aggregate::AggregateConnector, FrontError> {
    use crate::aggregate::{AggregateConnector, Upstream};
    use bulwark_policy::ServerUpstream;
    let mut members = Vec::new();
    for s in servers {
        let upstream = match &s.upstream {
            ServerUpstream::Command { argv, env: own } => {
                let mut all = env.to_vec();
                all.extend(own.iter().cloned());
                Upstream::Command(ServerCommand {
                    argv: argv.iter().map(OsString::from).collect(),
                    env: all,
                })
            }
            ServerUpstream::Url {
                url,
                allow_internal,
            } => Upstream::Remote(
                remote(url, *allow_internal)
                    .map_err(|e| FrontError::Setup(format!("server {}: {e}", s.name)))?,
            ),
        };
        members.push((s.name.clone(), upstream));
    }
    Ok(AggregateConnector {
        servers: members,
        gateway: Box::new(move |s, p, n| make(s, p, n)),
        log: Arc::new(|line: &str| eprintln!("bulwark mcp [servers]: {line}")),
    })
}

impl Front {
    /// Builds the gate, attaches the fleet's device, and makes the gateway for the shape
    /// the config asks for.
    pub fn build(config: Config) -> Result<Front, FrontError> {
        let Config {
            mut parts,
            admin,
            webhook_secret,
            name,
            mut env,
            listen,
            allow_host,
            allow_origin,
            max_sessions,
            upstream_url,
            upstream_allow_internal,
            command,
            fleet_policy_file,
            otlp,
        } = config;
        let policy = &parts.policy;
        env.extend(policy.mcp.env.iter().cloned());
        let servers = policy.servers.clone();
        if command.is_empty() && upstream_url.is_none() && servers.is_empty() {
            return Err(FrontError::Setup(
                "no server: give a command after --, an --upstream-url, or a servers: section in the policy (docs/mcp.md)"
                    .into(),
            ));
        }
        let aggregated = command.is_empty() && upstream_url.is_none();
        let identity = match (&name, aggregated) {
            (Some(n), _) => n.clone(),
            (None, true) => "servers".to_string(),
            // Not the whole URL: credentials in it must not reach logs, pins and audit.
            (None, false) => upstream_url.as_deref().map(url_name).unwrap_or_else(|| {
                command
                    .iter()
                    .map(|a| a.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(" ")
            }),
        };
        let callers = identities(policy)?;
        let state_dir = parts.state_dir.clone();
        let pins_dir = state_dir.join("pins");
        let pins = PinFile::open(&pins_dir, &identity)?;
        parts.count = admin.is_some();
        parts.admin = admin.is_some();
        let tracer = bulwark_audit::otlp::Exporter::start_if(otlp)
            .map_err(|e| FrontError::Setup(e.to_string()))?;
        let gate = Arc::new(Gate::assemble(parts)?.with_tracer(tracer));
        let device = bulwark_fleet::runtime::start_on_own_thread(
            "mcp",
            Some(&identity),
            &state_dir,
            gate.engine().policy(),
            gate.audit().cloned(),
            Arc::new(WeakGate(Arc::downgrade(&gate))),
            fleet_policy_file.as_deref(),
        )?;
        if let Some(d) = device {
            gate.set_escalator(d);
        }
        let admin = admin.map(|s| {
            bulwark_admin::Admin::new(
                s,
                "mcp",
                gate.metrics()
                    .cloned()
                    .unwrap_or_else(|| Arc::new(bulwark_audit::metrics::Metrics::new())),
                gate.audit().cloned(),
                gate.desk().cloned(),
                gate.engine().policy(),
            )
        });
        let server = ServerCommand { argv: command, env };
        // Servers reached over the network: what a call carries to them leaves the machine.
        let remote_names: Vec<String> = servers
            .iter()
            .filter(|s| matches!(s.upstream, bulwark_policy::ServerUpstream::Url { .. }))
            .map(|s| s.name.clone())
            .collect();
        let shape = if let Some(listen) = listen {
            let connector: Box<dyn crate::http::Connector> = if aggregated {
                let names: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
                let make = gateway_maker(&gate, &pins_dir, &names, &remote_names, "http")?;
                Box::new(aggregate_connector(&servers, &server.env, make)?)
            } else {
                let over_network: &[String] = if upstream_url.is_some() {
                    std::slice::from_ref(&identity)
                } else {
                    &[]
                };
                let make = gateway_maker(
                    &gate,
                    &pins_dir,
                    std::slice::from_ref(&identity),
                    over_network,
                    "http",
                )?;
                let name = identity.clone();
                let gateway: crate::http::MakeGateway = Box::new(move |s, p| make(s, p, &name));
                match &upstream_url {
                    Some(url) => {
                        let name = identity.clone();
                        Box::new(RemoteConnector {
                            remote: remote(url, upstream_allow_internal)?,
                            gateway,
                            log: Arc::new(move |line: &str| {
                                eprintln!("bulwark mcp [{name}]: {line}")
                            }),
                        })
                    }
                    None => Box::new(StdioConnector {
                        command: server.clone(),
                        gateway,
                    }),
                }
            };
            let addr: std::net::SocketAddr = listen.parse().map_err(|_| {
                FrontError::Setup(format!(
                    "--listen {listen:?} is not an address like 127.0.0.1:8848"
                ))
            })?;
            let mut guard = Guard {
                hosts: allow_host,
                origins: allow_origin,
            };
            if addr.ip().is_loopback() {
                guard
                    .hosts
                    .extend(LOOPBACK_HOSTS.iter().map(|h| h.to_string()));
            } else if guard.hosts.is_empty() {
                return Err(FrontError::Setup(format!(
                    "--listen {addr} is not loopback: name the Host clients will use with --allow-host (any Host \
                     would otherwise be accepted, which leaves browsers open to DNS rebinding)"
                )));
            } else {
                eprintln!(
                    "bulwark mcp [{identity}]: WARNING: serving on {addr}, which is not loopback; anyone who can reach it can use the server"
                );
            }
            let log_name = identity.clone();
            let front = HttpFront::new(
                connector,
                HttpConfig {
                    guard,
                    identity: callers,
                    max_sessions: max_sessions.max(1),
                    traced: gate.tracer().is_some(),
                    ..HttpConfig::default()
                },
                Box::new(move |line| eprintln!("bulwark mcp [{log_name}]: {line}")),
            )
            .map_err(|e| FrontError::Setup(format!("cannot draw session-id keys: {e}")))?;
            if gate.store().shared() {
                // Replicas on one store serve each other's sessions (docs/scale-out.md).
                front.share_sessions(Arc::clone(&gate) as Arc<dyn crate::http::handoff::Registry>);
            }
            Shape::Http(front, addr)
        } else if aggregated {
            let names: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
            let make = gateway_maker(&gate, &pins_dir, &names, &remote_names, "stdio")?;
            Shape::Aggregate(aggregate_connector(&servers, &server.env, make)?)
        } else {
            let started = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0);
            let log_name = identity.clone();
            let gateway = Gateway::new(
                Arc::clone(&gate),
                GatewayConfig {
                    remote: upstream_url.is_some(),
                    server: identity.clone(),
                    session: format!("mcp:{}:{started}", std::process::id()),
                    principal: Principal {
                        id: Some("mcp:stdio".into()),
                        verified: false,
                    },
                    max_pending: MAX_PENDING,
                    per_caller: false,
                },
                Some(pins),
                Box::new(move |line| eprintln!("bulwark mcp [{log_name}]: {line}")),
            )?;
            Shape::Wrapper(Box::new(gateway))
        };
        Ok(Front {
            gate,
            shape,
            identity,
            admin,
            webhook_secret,
            state_dir,
            server,
            upstream: upstream_url.map(|u| (u, upstream_allow_internal)),
        })
    }

    /// The gate it decides through.
    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }

    /// Serves until the client leaves, the server ends, or SIGTERM/SIGINT.
    pub fn run(self) -> Result<Exit, FrontError> {
        // One thread for stdio: every message hops between the client's and the server's
        // pipes, and on a small machine cross-thread wake-ups cost more than they give
        // (measured: p99 added at 3k calls/s 379 µs here against 458-649 µs with two
        // workers). The HTTP front takes BULWARK_HTTP_THREADS workers (default 1).
        let runtime = match (&self.shape, http_threads()) {
            (Shape::Http(..), Some(n)) => {
                let mut b = tokio::runtime::Builder::new_multi_thread();
                b.worker_threads(n);
                b
            }
            _ => tokio::runtime::Builder::new_current_thread(),
        }
        .enable_all()
        .build()
        .map_err(io("cannot start the runtime"))?;
        runtime.block_on(self.serve())
    }

    async fn serve(self) -> Result<Exit, FrontError> {
        let Front {
            gate,
            shape,
            identity,
            admin,
            webhook_secret,
            state_dir,
            server,
            upstream,
        } = self;
        if let Some(desk) = gate.desk() {
            bulwark_approvals::service::Service::new(
                Arc::clone(desk),
                gate.engine().policy(),
                &state_dir,
                "mcp",
                webhook_secret,
            )
            .spawn();
        }
        bulwark_admin::start(admin, &format!("bulwark mcp [{identity}]")).await?;
        let stop = stop_signal()?;
        reload_on_hangup(Arc::clone(&gate), format!("bulwark mcp [{identity}]"))?;
        let exit = match shape {
            Shape::Wrapper(gateway) => {
                let server = match &upstream {
                    Some((url, allow_internal)) => {
                        let remote = remote(url, *allow_internal)?;
                        let name = identity.clone();
                        stdio::Server::Pipe(remote.connect(
                            Arc::new(move |line: &str| eprintln!("bulwark mcp [{name}]: {line}")),
                            // A stdio client sends no HTTP headers to pass on.
                            None,
                        ))
                    }
                    None => stdio::Server::Child(stdio::spawn(&server)?),
                };
                let ended = stdio::relay(
                    Arc::new(*gateway),
                    server,
                    stdio::Io::lines(tokio::io::stdin(), tokio::io::stdout()),
                    stop,
                )
                .await;
                match ended {
                    Ended::ClientClosed => Exit::Done,
                    Ended::ServerExited(code) => {
                        eprintln!("bulwark mcp [{identity}]: the server exited ({code:?})");
                        Exit::ServerExited(code)
                    }
                    Ended::Shutdown => Exit::Interrupted,
                }
            }
            Shape::Aggregate(connector) => {
                let started = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis())
                    .unwrap_or(0);
                let session = format!("{}:{started}", std::process::id());
                let caller = Principal {
                    id: Some("mcp:stdio".into()),
                    verified: false,
                };
                let link = connector
                    .open_all(&session, &caller)
                    .map_err(FrontError::Setup)?;
                // The client's messages go up until it closes stdin; the answers come down
                // until the aggregate has answered what was asked (it waits a while for
                // that, then ends).
                let exit = tokio::select! {
                    _ = stdio::bridge(tokio::io::stdin(), tokio::io::stdout(), link.port) => Exit::Done,
                    _ = stop => Exit::Interrupted,
                };
                let _ = link.stop.send(());
                // Each server's process group gets its SIGTERM grace (2 s).
                tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
                exit
            }
            Shape::Http(front, addr) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(io(format!("cannot listen on {addr}")))?;
                let local = listener
                    .local_addr()
                    .map_err(io("cannot read the listener's address"))?;
                // The line tests and scripts wait for: the address actually bound.
                eprintln!("bulwark mcp [{identity}]: listening on http://{local}/mcp");
                let had = crate::http::serve(listener, Arc::clone(&front), stop)
                    .await
                    .map_err(io("the HTTP front stopped"))?;
                // The servers' process groups get their SIGTERM grace (2 s) before the
                // process goes.
                if had > 0 {
                    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
                }
                Exit::Done
            }
        };
        if let Some(a) = gate.audit()
            && let Err(e) = a.close()
        {
            eprintln!("bulwark mcp [{identity}]: {e}");
        }
        Ok(exit)
    }
}

/// `BULWARK_HTTP_THREADS` workers for the HTTP front, when more than one
/// (docs/benchmarks.md measures why one is the default).
fn http_threads() -> Option<usize> {
    std::env::var("BULWARK_HTTP_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 1)
}

/// Reloads the policy at every SIGHUP, as the daemon does, instead of dying of it (call
/// inside the runtime). The reload runs on a blocking thread: with one worker (the stdio
/// and default HTTP shapes), a reload on it would hold every call for the compile.
fn reload_on_hangup(gate: Arc<Gate>, who: String) -> Result<(), FrontError> {
    let mut hup = signal(SignalKind::hangup()).map_err(io("cannot watch SIGHUP"))?;
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            let g = Arc::clone(&gate);
            match tokio::task::spawn_blocking(move || g.reload()).await {
                Ok(Ok(v)) => eprintln!("{who}: reloaded the policy ({v})"),
                Ok(Err(e)) => eprintln!("{who}: {e}"),
                Err(e) => eprintln!("{who}: the reload failed: {e}"),
            }
        }
    });
    Ok(())
}

/// Completes at SIGTERM or SIGINT (call inside the runtime).
fn stop_signal() -> Result<impl std::future::Future<Output = ()>, FrontError> {
    let mut term = signal(SignalKind::terminate()).map_err(io("cannot watch SIGTERM"))?;
    let mut int = signal(SignalKind::interrupt()).map_err(io("cannot watch SIGINT"))?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
