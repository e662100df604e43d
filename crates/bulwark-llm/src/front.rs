//! `bulwark proxy` as one value: [`Front::build`] makes the gate (with the used-token ledger
//! on disk, the fleet device and the approvals desk) and the proxy; [`Front::run`] serves
//! until SIGTERM or SIGINT, or [`Front::serve`] on a listener the caller bound.
//!
//! ```no_run
//! # fn demo(parts: bulwark_gate::Parts) -> Result<(), bulwark_llm::front::FrontError> {
//! use bulwark_llm::front::{Config, Front};
//! let front = Front::build(Config {
//!     parts,
//!     listen: "127.0.0.1:4001".into(),
//!     upstream: "https://api.anthropic.com".into(),
//!     max_body: bulwark_llm::proxy::MAX_BODY,
//!     max_connections: bulwark_llm::proxy::MAX_CONNECTIONS,
//!     upstream_key: None,
//!     allow_host: Vec::new(),
//!     provenance: false,
//!     admin: None,
//!     webhook_secret: None,
//!     fleet_policy_file: None,
//!     otlp: None,
//! })?;
//! front.run()
//! # }
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use axum::http::HeaderName;
use bulwark_gate::{Gate, Parts, WeakGate};

use crate::proxy::{Config as ProxyConfig, LOOPBACK_HOSTS, Proxy, ProxyError};

/// How the proxy is set up, as the binary loaded it.
pub struct Config {
    /// What the gate is made of (its ledger is kept on disk).
    pub parts: Parts,
    /// Where to listen (`HOST:PORT`).
    pub listen: String,
    /// The model API's base URL.
    pub upstream: String,
    /// Largest request body.
    pub max_body: usize,
    /// Connections at once ([`crate::proxy::MAX_CONNECTIONS`] by default); a quarter of
    /// them per client address, idle ones giving way to new clients.
    pub max_connections: usize,
    /// The operator's key for the upstream: the header it goes in and the key.
    pub upstream_key: Option<(HeaderName, String)>,
    /// Host names clients may use besides the loopback names (on loopback).
    pub allow_host: Vec<String>,
    /// Argument provenance on ([`crate::provenance`]).
    pub provenance: bool,
    /// The admin listener, when one is asked for.
    pub admin: Option<bulwark_admin::Settings>,
    /// The secret webhook posts are signed with.
    pub webhook_secret: Option<Vec<u8>>,
    /// The policy file given (the slot a first fleet rollback returns to).
    pub fleet_policy_file: Option<PathBuf>,
    /// Export a span per model call to this OpenTelemetry collector (the binary reads the
    /// standard `OTEL_EXPORTER_OTLP_*` variables).
    pub otlp: Option<bulwark_audit::otlp::Settings>,
}

/// Why the proxy could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum FrontError {
    /// What was asked for cannot be served (a bad address or URL).
    #[error("{0}")]
    Setup(String),
    /// The gate's parts.
    #[error(transparent)]
    Gate(#[from] bulwark_gate::PartsError),
    /// The proxy's client.
    #[error(transparent)]
    Proxy(#[from] ProxyError),
    /// The fleet device.
    #[error(transparent)]
    Fleet(#[from] bulwark_fleet::runtime::FleetError),
    /// The admin listener.
    #[error(transparent)]
    Admin(#[from] bulwark_admin::AdminError),
    /// The runtime or the listener.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

/// The proxy, ready to serve.
pub struct Front {
    gate: Arc<Gate>,
    proxy: Arc<Proxy>,
    addr: std::net::SocketAddr,
    upstream: url::Url,
    admin: Option<bulwark_admin::Admin>,
    webhook_secret: Option<Vec<u8>>,
    state_dir: PathBuf,
}

impl Front {
    /// Builds the gate, attaches the fleet's device, and makes the proxy.
    pub fn build(config: Config) -> Result<Front, FrontError> {
        let Config {
            mut parts,
            listen,
            upstream,
            max_body,
            max_connections,
            upstream_key,
            allow_host,
            provenance,
            admin,
            webhook_secret,
            fleet_policy_file,
            otlp,
        } = config;
        let upstream = url::Url::parse(&upstream)
            .map_err(|_| FrontError::Setup(format!("--upstream {upstream:?} is not a URL")))?;
        let addr: std::net::SocketAddr = listen.parse().map_err(|_| {
            FrontError::Setup(format!(
                "--listen {listen:?} is not an address like 127.0.0.1:4001"
            ))
        })?;
        let state_dir = parts.state_dir.clone();
        let approval_key = parts.approval_key;
        parts.count = admin.is_some();
        parts.admin = admin.is_some();
        parts.ledger = true;
        let tracer = bulwark_audit::otlp::Exporter::start_if(otlp)
            .map_err(|e| FrontError::Setup(e.to_string()))?;
        let gate = Arc::new(Gate::assemble(parts)?.with_tracer(tracer));
        let device = bulwark_fleet::runtime::start_on_own_thread(
            "proxy",
            None,
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
                "proxy",
                gate.metrics()
                    .cloned()
                    .unwrap_or_else(|| Arc::new(bulwark_audit::metrics::Metrics::new())),
                gate.audit().cloned(),
                gate.desk().cloned(),
                gate.engine().policy(),
            )
        });
        let proxy = Proxy::new(
            Arc::clone(&gate),
            ProxyConfig {
                upstream: upstream.clone(),
                max_body,
                upstream_key,
                approval_key: Some(approval_key),
                provenance,
                allowed_hosts: addr.ip().is_loopback().then(|| {
                    LOOPBACK_HOSTS
                        .iter()
                        .map(|h| h.to_string())
                        .chain(allow_host)
                        .collect()
                }),
            },
        )?
        .with_listen_limits(bulwark_listen::http::HttpLimits::for_max(max_connections));
        if !addr.ip().is_loopback() {
            eprintln!(
                "bulwark proxy: WARNING: serving on {addr}, which is not loopback; anyone who can reach it can use the upstream through it"
            );
        }
        Ok(Front {
            gate,
            proxy: Arc::new(proxy),
            addr,
            upstream,
            admin,
            webhook_secret,
            state_dir,
        })
    }

    /// The gate it decides through.
    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }

    /// Serves on its own runtime (two workers) until SIGTERM or SIGINT.
    pub fn run(self) -> Result<(), FrontError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| FrontError::Io("cannot start the runtime".into(), e))?;
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind(self.addr)
                .await
                .map_err(|e| FrontError::Io(format!("cannot listen on {}", self.addr), e))?;
            reload_on_hangup(Arc::clone(&self.gate))?;
            let stop = async {
                let term = async {
                    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    {
                        Ok(mut t) => {
                            t.recv().await;
                        }
                        Err(_) => std::future::pending::<()>().await,
                    }
                };
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term => {}
                }
            };
            self.serve(listener, stop).await
        })
    }

    /// Serves on `listener` until `shutdown` completes, with the approvals service and the
    /// admin listener beside it; closes the audit log at the end. Call inside a runtime.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), FrontError> {
        if let Some(desk) = self.gate.desk() {
            bulwark_approvals::service::Service::new(
                Arc::clone(desk),
                self.gate.engine().policy(),
                &self.state_dir,
                "proxy",
                self.webhook_secret,
            )
            .spawn();
        }
        bulwark_admin::start(self.admin, "bulwark proxy").await?;
        let at = listener
            .local_addr()
            .map_err(|e| FrontError::Io("cannot read the listener's address".into(), e))?;
        eprintln!(
            "bulwark proxy: listening on http://{at}, forwarding to {}",
            self.upstream
        );
        self.proxy
            .serve(listener, shutdown)
            .await
            .map_err(|e| FrontError::Io("the proxy stopped".into(), e))?;
        if let Some(a) = self.gate.audit()
            && let Err(e) = a.close()
        {
            eprintln!("bulwark proxy: {e}");
        }
        Ok(())
    }
}

/// Reloads the policy at every SIGHUP, as the daemon does, instead of dying of it (call
/// inside the runtime). The reload runs on a blocking thread so that the two workers go on
/// answering with the old policy meanwhile.
fn reload_on_hangup(gate: Arc<Gate>) -> Result<(), FrontError> {
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .map_err(|e| FrontError::Io("cannot watch SIGHUP".into(), e))?;
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            let g = Arc::clone(&gate);
            match tokio::task::spawn_blocking(move || g.reload()).await {
                Ok(Ok(v)) => eprintln!("bulwark proxy: reloaded the policy ({v})"),
                Ok(Err(e)) => eprintln!("bulwark proxy: {e}"),
                Err(e) => eprintln!("bulwark proxy: the reload failed: {e}"),
            }
        }
    });
    Ok(())
}
