//! `bulwark mcp` (the stdio gateway) and `bulwark pins`.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use bulwark_engine::Principal;
use bulwark_gate::Gate;
use bulwark_mcp::gateway::{Config, Gateway, MAX_PENDING};
use bulwark_mcp::pinfile::{self, PinFile};
use bulwark_mcp::stdio::{self, Ended, ServerCommand};
use tokio::signal::unix::{SignalKind, signal};

use crate::cli::{Common, McpArgs, PinsCommand};
use crate::config;

fn pins_dir(common: &Common) -> Result<std::path::PathBuf> {
    Ok(config::state_dir(common)?.join("pins"))
}

pub fn run(args: &McpArgs) -> Result<ExitCode> {
    let policy = config::load_policy(&args.common)?;
    let pins_dir = pins_dir(&args.common)?;
    let identity = args
        .name
        .clone()
        // Not the whole URL: credentials in it must not reach logs, pins and audit.
        .or_else(|| args.upstream_url.as_deref().map(url_name))
        .unwrap_or_else(|| {
            args.command
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        });
    let mut env = args.env.clone();
    env.extend(policy.mcp.env.iter().cloned());
    let servers = policy.servers.clone();
    if args.command.is_empty() && args.upstream_url.is_none() && servers.is_empty() {
        bail!(
            "no server: give a command after --, an --upstream-url, or a servers: section in the policy (docs/mcp.md)"
        );
    }
    let aggregated = args.command.is_empty() && args.upstream_url.is_none();
    let identity = if aggregated && args.name.is_none() {
        "servers".to_string()
    } else {
        identity
    };
    let callers = identities(&policy)?;
    let pins = PinFile::open(&pins_dir, &identity)?;
    let audit = config::open_audit(&args.common, args.audit.as_deref(), "mcp")?;
    let desk = crate::approvals::desk(&args.common, &policy, audit.clone(), "mcp")?;
    let metrics = Arc::new(bulwark_audit::metrics::Metrics::new());
    let gate = Arc::new(
        Gate::new(policy, "mcp")
            .with_audit(audit.clone())
            .with_desk(Some(Arc::clone(&desk)))
            .with_metrics(args.admin.as_ref().map(|_| Arc::clone(&metrics))),
    );
    gate.warm_up();
    crate::fleet::for_gate("mcp", Some(&identity), &args.common, &gate)?;
    if args.listen.is_some() || aggregated {
        let shared = Shared {
            gate,
            metrics,
            callers,
            pins_dir,
            identity,
            env,
            servers: if aggregated { servers } else { Vec::new() },
        };
        return match &args.listen {
            Some(listen) => run_http(args, listen, shared),
            None => run_stdio_aggregate(args, shared),
        };
    }
    let closer = audit.clone();
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let config = Config {
        server: identity.clone(),
        session: format!("mcp:{}:{started}", std::process::id()),
        principal: Principal {
            id: Some("mcp:stdio".into()),
            verified: false,
        },
        max_pending: MAX_PENDING,
    };
    let log_name = identity.clone();
    let admin = crate::approvals::admin(
        args.admin.as_deref(),
        &args.common,
        gate.engine().policy(),
        "mcp",
        Arc::clone(&metrics),
        audit.clone(),
        Some(Arc::clone(&desk)),
    )?;
    let policy_for_service = Arc::clone(&gate);

    let gateway = Gateway::new(
        gate,
        config,
        Some(pins),
        Box::new(move |line| eprintln!("bulwark mcp [{log_name}]: {line}")),
    )
    .context("cannot load the pins")?;
    let command = ServerCommand {
        argv: args.command.clone(),
        env,
    };
    // One thread: every message hops between the client's and the server's pipes, and on a
    // small machine cross-thread wake-ups cost more than they give (measured: p99 added at
    // 3k calls/s 379 µs here against 458-649 µs with two workers). Pins I/O and log lines
    // block it for moments; the server's stderr is copied asynchronously.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(async move {
        crate::approvals::spawn_service(&policy_for_service, &args.common);
        crate::admin::start(admin, &format!("bulwark mcp [{identity}]")).await?;
        let server = match &args.upstream_url {
            Some(url) => {
                let remote = remote(args, url)?;
                let name = identity.clone();
                stdio::Server::Pipe(remote.connect(
                    Arc::new(move |line: &str| eprintln!("bulwark mcp [{name}]: {line}")),
                    // A stdio client sends no HTTP headers to pass on.
                    None,
                ))
            }
            None => stdio::Server::Child(stdio::spawn(&command)?),
        };
        let shutdown = stop_signal()?;
        let ended = stdio::relay(
            Arc::new(gateway),
            server,
            stdio::Io::lines(tokio::io::stdin(), tokio::io::stdout()),
            shutdown,
        )
        .await;
        if let Some(a) = closer
            && let Err(e) = a.close()
        {
            eprintln!("bulwark mcp [{identity}]: {e}");
        }
        Ok(match ended {
            Ended::ClientClosed => ExitCode::SUCCESS,
            Ended::ServerExited(code) => {
                eprintln!("bulwark mcp [{identity}]: the server exited ({code:?})");
                ExitCode::from(code.and_then(|c| u8::try_from(c).ok()).unwrap_or(1))
            }
            Ended::Shutdown => ExitCode::from(130),
        })
    })
}

pub fn pins(cmd: &PinsCommand) -> Result<ExitCode> {
    match cmd {
        PinsCommand::List { common, json } => {
            let found = pinfile::all(&pins_dir(common)?)?;
            if *json {
                let docs: Vec<serde_json::Value> = found
                    .iter()
                    .map(|(path, doc)| match doc {
                        Ok(d) => {
                            serde_json::json!({"file": path, "server": d.server, "tools": d.tools})
                        }
                        Err(e) => serde_json::json!({"file": path, "error": e.to_string()}),
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&docs)?);
                return Ok(ExitCode::SUCCESS);
            }
            if found.is_empty() {
                println!("no pins yet");
            }
            let mut bad = false;
            for (path, doc) in &found {
                match doc {
                    Ok(d) => {
                        println!("{}  ({})", d.server, path.display());
                        for t in &d.tools {
                            let status = match &t.withheld {
                                Some(code) => format!(
                                    "WITHHELD {}: {}",
                                    code.as_str(),
                                    t.reason.as_deref().unwrap_or("")
                                ),
                                None => "pinned".into(),
                            };
                            println!(
                                "  {:32} {}  {}",
                                t.tool,
                                t.digest.get(..12).unwrap_or(&t.digest),
                                status
                            );
                        }
                    }
                    Err(e) => {
                        bad = true;
                        eprintln!("bulwark pins: {e}");
                    }
                }
            }
            Ok(if bad {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        PinsCommand::Accept {
            common,
            tool,
            server,
        } => {
            let dir = pins_dir(common)?;
            let candidates: Vec<String> = pinfile::all(&dir)?
                .into_iter()
                .filter_map(|(path, doc)| {
                    let d = doc.ok()?;
                    let matches_server = server.as_deref().is_none_or(|s| {
                        s == d.server || path.file_stem().and_then(|f| f.to_str()) == Some(s)
                    });
                    let withheld = d
                        .tools
                        .iter()
                        .any(|t| t.tool.eq_ignore_ascii_case(tool) && t.withheld.is_some());
                    (matches_server && withheld).then_some(d.server)
                })
                .collect();
            let server = match candidates.as_slice() {
                [] => bail!(
                    "no withheld tool {tool:?}{}; `bulwark pins list` shows what is pinned",
                    server
                        .as_deref()
                        .map(|s| format!(" on server {s:?}"))
                        .unwrap_or_default()
                ),
                [one] => one.clone(),
                many => bail!(
                    "{tool:?} is withheld on several servers; name one with --server: {}",
                    many.join(", ")
                ),
            };
            let file = PinFile::open(&dir, &server)?;
            file.locked(|f| -> Result<()> {
                let mut records = f.load()?;
                if let Some(code) = records
                    .iter()
                    .filter(|r| r.tool.eq_ignore_ascii_case(tool))
                    .find_map(|r| r.withheld)
                    .filter(|c| *c != bulwark_engine::ReasonCode::RugPull)
                {
                    bail!(
                        "{tool:?} is withheld for what its definition says ({}), not because it changed; \
                         accepting would be undone at the next listing. Review the definition; if it is a \
                         false positive, change the policy's content.definition action for that category",
                        code.as_str()
                    );
                }
                for r in records
                    .iter_mut()
                    .filter(|r| r.tool.eq_ignore_ascii_case(tool))
                {
                    if let Some(offered) = r.offered.take() {
                        r.digest = offered;
                        // The accepted definition's schema is learned from its next listing.
                        r.input_schema = serde_json::Value::Null;
                    }
                    r.withheld = None;
                    r.reason = None;
                }
                f.save(records)?;
                Ok(())
            })??;
            println!("accepted {tool:?} on {server:?}; it is shown again from the next tools/list");
            Ok(ExitCode::SUCCESS)
        }
        PinsCommand::Reset {
            common,
            tool,
            server,
            all,
        } => {
            let dir = pins_dir(common)?;
            if server.is_none() && !all {
                bail!(
                    "name a server with --server (see `bulwark pins list`), or pass --all to forget every server's pins"
                );
            }
            let mut touched = 0;
            for (path, doc) in pinfile::all(&dir)? {
                let name = doc.as_ref().map(|d| d.server.clone()).ok();
                let stem = path
                    .file_stem()
                    .and_then(|f| f.to_str())
                    .map(str::to_string);
                let selected = *all
                    || server
                        .as_deref()
                        .is_some_and(|s| Some(s) == name.as_deref() || Some(s) == stem.as_deref());
                if !selected {
                    continue;
                }
                match (tool, name) {
                    (Some(tool), Some(name)) => {
                        let file = PinFile::open(&dir, &name)?;
                        file.locked(|f| -> Result<()> {
                            let mut records = f.load()?;
                            let before = records.len();
                            records.retain(|r| !r.tool.eq_ignore_ascii_case(tool));
                            if records.len() != before {
                                touched += 1;
                            }
                            f.save(records)?;
                            Ok(())
                        })??;
                    }
                    // A whole server: emptied under its lock, so a gateway in the middle of a
                    // listing cannot write the old pins back afterwards.
                    (None, Some(name)) => {
                        PinFile::open(&dir, &name)?.locked(|f| f.save(Vec::new()))??;
                        touched += 1;
                    }
                    // A file too damaged to read: removed.
                    (_, None) => {
                        std::fs::remove_file(&path)
                            .with_context(|| format!("cannot remove {}", path.display()))?;
                        touched += 1;
                    }
                }
            }
            if touched == 0 {
                bail!("nothing matched; `bulwark pins list` shows what is pinned");
            }
            println!("forgot the pins of {touched} server(s); the next tools/list pins afresh");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// What the fronts are built from.
struct Shared {
    gate: Arc<Gate>,
    metrics: Arc<bulwark_audit::metrics::Metrics>,
    callers: bulwark_mcp::http::identity::Identity,
    pins_dir: std::path::PathBuf,
    identity: String,
    env: Vec<String>,
    /// The policy's servers, when they are aggregated.
    servers: Vec<bulwark_policy::ServerSpec>,
}

impl Shared {
    /// The admin listener's settings when `--admin` asks for one.
    fn admin(&self, args: &McpArgs) -> Result<Option<crate::admin::Admin>> {
        crate::approvals::admin(
            args.admin.as_deref(),
            &args.common,
            self.gate.engine().policy(),
            "mcp",
            Arc::clone(&self.metrics),
            self.gate.audit().cloned(),
            self.gate.desk().cloned(),
        )
    }
}

type MakeGateway =
    Arc<dyn Fn(&str, &Principal, &str) -> std::result::Result<Arc<Gateway>, String> + Send + Sync>;

/// Makes a gateway core for (client session, caller, server name), with one pin file per
/// server shared by every session: a listing saved by one is not taken by the others for an
/// operator's change (which would clear their withheld tools).
fn gateway_maker(shared: &Shared, names: &[String], front: &'static str) -> Result<MakeGateway> {
    let mut pins = std::collections::HashMap::new();
    for n in names {
        pins.insert(n.clone(), PinFile::open(&shared.pins_dir, n)?);
    }
    let gate = Arc::clone(&shared.gate);
    Ok(Arc::new(
        move |session: &str, caller: &Principal, server: &str| {
            let pins = pins
                .get(server)
                .cloned()
                .ok_or_else(|| format!("no pins for server {server:?}"))?;
            let digest = bulwark_mcp::http::id_digest(session);
            let config = Config {
                server: server.to_string(),
                // Not the session id itself: that is a credential, and audit records are read
                // by more people than hold it. Every server of one client session shares it,
                // so taint from one server's result counts against calls to another.
                session: format!("mcp:{front}:{digest}"),
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
    shared: &Shared,
    make: MakeGateway,
) -> Result<bulwark_mcp::aggregate::AggregateConnector> {
    use bulwark_mcp::aggregate::{AggregateConnector, Upstream};
    use bulwark_policy::ServerUpstream;
    let mut servers = Vec::new();
    for s in &shared.servers {
        let upstream = match &s.upstream {
            ServerUpstream::Command { argv, env } => {
                let mut all = shared.env.clone();
                all.extend(env.iter().cloned());
                Upstream::Command(ServerCommand {
                    argv: argv.iter().map(std::ffi::OsString::from).collect(),
                    env: all,
                })
            }
            ServerUpstream::Url {
                url,
                allow_internal,
            } => Upstream::Remote(
                bulwark_mcp::remote::Remote::new(
                    url,
                    *allow_internal,
                    std::time::Duration::from_secs(3600),
                )
                .with_context(|| format!("server {}", s.name))?,
            ),
        };
        servers.push((s.name.clone(), upstream));
    }
    Ok(AggregateConnector {
        servers,
        gateway: Box::new(move |s, p, n| make(s, p, n)),
        log: Arc::new(|line: &str| eprintln!("bulwark mcp [servers]: {line}")),
    })
}

/// `bulwark mcp` with the policy's `servers:` on stdio: one client, every server.
fn run_stdio_aggregate(args: &McpArgs, shared: Shared) -> Result<ExitCode> {
    let names: Vec<String> = shared.servers.iter().map(|s| s.name.clone()).collect();
    let make = gateway_maker(&shared, &names, "stdio")?;
    let connector = aggregate_connector(&shared, make)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let closer = shared.gate.audit().cloned();
    let admin = shared.admin(args)?;
    let gate = Arc::clone(&shared.gate);
    runtime.block_on(async move {
        crate::approvals::spawn_service(&gate, &args.common);
        crate::admin::start(admin, "bulwark mcp [servers]").await?;
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
            .map_err(|e| anyhow::anyhow!(e))?;
        let stop = stop_signal()?;
        // The client's messages go up until it closes stdin; the answers come down until
        // the aggregate has answered what was asked (it waits a while for that, then ends).
        let code = tokio::select! {
            _ = stdio::bridge(tokio::io::stdin(), tokio::io::stdout(), link.port) => ExitCode::SUCCESS,
            _ = stop => ExitCode::from(130),
        };
        let _ = link.stop.send(());
        // Each server's process group gets its SIGTERM grace (2 s).
        tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
        if let Some(a) = closer
            && let Err(e) = a.close()
        {
            eprintln!("bulwark mcp [servers]: {e}");
        }
        Ok(code)
    })
}

/// `bulwark mcp --listen ADDR …`: the Streamable HTTP front, a server (or the policy's
/// servers) per client session.
fn run_http(args: &McpArgs, listen: &str, shared: Shared) -> Result<ExitCode> {
    use bulwark_mcp::http::guard::{Guard, LOOPBACK_HOSTS};
    use bulwark_mcp::http::{HttpConfig, HttpFront, RemoteConnector, StdioConnector};

    let connector: Box<dyn bulwark_mcp::http::Connector> = if !shared.servers.is_empty() {
        let names: Vec<String> = shared.servers.iter().map(|s| s.name.clone()).collect();
        let make = gateway_maker(&shared, &names, "http")?;
        Box::new(aggregate_connector(&shared, make)?)
    } else {
        let make = gateway_maker(&shared, std::slice::from_ref(&shared.identity), "http")?;
        let name = shared.identity.clone();
        let gateway: bulwark_mcp::http::MakeGateway = Box::new(move |s, p| make(s, p, &name));
        match &args.upstream_url {
            Some(url) => {
                let name = shared.identity.clone();
                Box::new(RemoteConnector {
                    remote: remote(args, url)?,
                    gateway,
                    log: Arc::new(move |line: &str| eprintln!("bulwark mcp [{name}]: {line}")),
                })
            }
            None => Box::new(StdioConnector {
                command: ServerCommand {
                    argv: args.command.clone(),
                    env: shared.env.clone(),
                },
                gateway,
            }),
        }
    };
    let admin = shared.admin(args)?;
    let Shared {
        callers,
        identity,
        gate,
        ..
    } = shared;
    let audit = gate.audit().cloned();
    let addr: std::net::SocketAddr = listen
        .parse()
        .with_context(|| format!("--listen {listen:?} is not an address like 127.0.0.1:8848"))?;
    let mut guard = Guard {
        hosts: args.allow_host.clone(),
        origins: args.allow_origin.clone(),
    };
    if addr.ip().is_loopback() {
        guard
            .hosts
            .extend(LOOPBACK_HOSTS.iter().map(|h| h.to_string()));
    } else if guard.hosts.is_empty() {
        bail!(
            "--listen {addr} is not loopback: name the Host clients will use with --allow-host (any Host \
             would otherwise be accepted, which leaves browsers open to DNS rebinding)"
        );
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
            max_sessions: args.max_sessions.max(1),
            ..HttpConfig::default()
        },
        Box::new(move |line| eprintln!("bulwark mcp [{log_name}]: {line}")),
    )
    .context("cannot draw session-id keys")?;
    let runtime = runtime_for_http()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let closer = audit.clone();
    runtime.block_on(async move {
        crate::approvals::spawn_service(&gate, &args.common);
        crate::admin::start(admin, &format!("bulwark mcp [{identity}]")).await?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let local = listener.local_addr()?;
        // The line tests and scripts wait for: the address actually bound (port 0 works).
        eprintln!("bulwark mcp [{identity}]: listening on http://{local}/mcp");
        let shutdown = stop_signal()?;
        let had = bulwark_mcp::http::serve(listener, Arc::clone(&front), shutdown).await?;
        // The servers' process groups get their SIGTERM grace (2 s) before the process goes.
        if had > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
        }
        if let Some(a) = closer
            && let Err(e) = a.close()
        {
            eprintln!("bulwark mcp [{identity}]: {e}");
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// The policy's identity rules for the HTTP front, with the header signing key read from
/// the environment variable the policy names.
fn identities(policy: &bulwark_policy::Policy) -> Result<bulwark_mcp::http::identity::Identity> {
    let i = &policy.identities;
    let key = match &i.header_signing_key_env {
        Some(var) => match std::env::var(var) {
            Ok(k) if !k.is_empty() => Some(k.into_bytes()),
            _ => bail!(
                "the policy's identities.header_signing_key_env names {var}, which is not set; \
                 set it to the shared key, or remove the setting"
            ),
        },
        None => None,
    };
    Ok(bulwark_mcp::http::identity::Identity::new(
        i.bearer_tokens.clone(),
        key,
        i.require_verified,
    ))
}

/// The remote upstream of `--upstream-url`, checked.
fn remote(args: &McpArgs, url: &str) -> Result<bulwark_mcp::remote::Remote> {
    // Idle reads may last as long as a tool call; the gateway's own request timeout
    // (mcp.request_timeout_secs) ends a call that takes too long.
    Ok(bulwark_mcp::remote::Remote::new(
        url,
        args.upstream_allow_internal,
        std::time::Duration::from_secs(3600),
    )?)
}

/// The HTTP front's runtime: `BULWARK_HTTP_THREADS` workers (default 1, measured in
/// docs/benchmarks.md).
fn runtime_for_http() -> tokio::runtime::Builder {
    match std::env::var("BULWARK_HTTP_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 1)
    {
        Some(n) => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            b
        }
        None => tokio::runtime::Builder::new_current_thread(),
    }
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

/// Completes at SIGTERM or SIGINT (call inside the runtime).
fn stop_signal() -> Result<impl std::future::Future<Output = ()>> {
    let mut term = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot watch SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
