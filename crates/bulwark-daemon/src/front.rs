//! `bulwark daemon` as one value: [`Front::build`] makes the gate (with the fleet device and
//! the approvals desk), binds the socket and prepares the admin listener; [`Front::run`]
//! serves until SIGTERM or SIGINT, reloading the policy on SIGHUP.
//!
//! ```no_run
//! # fn demo(parts: bulwark_gate::Parts) -> Result<(), bulwark_daemon::front::FrontError> {
//! use bulwark_daemon::front::{Config, Front};
//! let front = Front::build(Config {
//!     socket: "/run/bulwark.sock".into(),
//!     parts,
//!     admin: None,
//!     webhook_secret: None,
//!     threads: 1,
//!     limits: Default::default(),
//!     fleet_policy_file: None,
//! })?;
//! front.run()
//! # }
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use bulwark_gate::{Gate, Parts, WeakGate};
use tokio::signal::unix::{SignalKind, signal};

use crate::server::{self, Limits};
use crate::service::Service;

/// How the daemon is set up, as the binary loaded it.
pub struct Config {
    /// The socket to listen on.
    pub socket: PathBuf,
    /// What the gate is made of.
    pub parts: Parts,
    /// The admin listener, when one is asked for.
    pub admin: Option<bulwark_admin::Settings>,
    /// The secret webhook posts are signed with.
    pub webhook_secret: Option<Vec<u8>>,
    /// Runtime worker threads.
    pub threads: usize,
    /// Connection limits.
    pub limits: Limits,
    /// The policy file given (the slot a first fleet rollback returns to).
    pub fleet_policy_file: Option<PathBuf>,
}

/// Why the daemon could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum FrontError {
    /// The gate's parts.
    #[error(transparent)]
    Gate(#[from] bulwark_gate::PartsError),
    /// The fleet device.
    #[error(transparent)]
    Fleet(#[from] bulwark_fleet::runtime::FleetError),
    /// The admin listener.
    #[error(transparent)]
    Admin(#[from] bulwark_admin::AdminError),
    /// The socket.
    #[error(transparent)]
    Serve(#[from] crate::server::ServeError),
    /// The runtime, or a signal.
    #[error("{0}: {1}")]
    Io(&'static str, std::io::Error),
}

/// The local evaluator, ready to serve.
pub struct Front {
    runtime: tokio::runtime::Runtime,
    gate: Arc<Gate>,
    service: Arc<Service>,
    admin: Option<bulwark_admin::Admin>,
    socket: PathBuf,
    limits: Limits,
    webhook_secret: Option<Vec<u8>>,
    state_dir: PathBuf,
}

impl Front {
    /// Builds the gate (the fleet's device attached to it when the policy has `fleet:`,
    /// putting back what an earlier run left in force), the service and the runtime.
    pub fn build(config: Config) -> Result<Front, FrontError> {
        let Config {
            socket,
            mut parts,
            admin,
            webhook_secret,
            threads,
            limits,
            fleet_policy_file,
        } = config;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .enable_all()
            .build()
            .map_err(|e| FrontError::Io("cannot start the runtime", e))?;
        let state_dir = parts.state_dir.clone();
        parts.count = admin.is_some();
        parts.admin = admin.is_some();
        let gate = Arc::new(Gate::assemble(parts)?);
        // The fleet client runs on the daemon's runtime.
        let device = runtime.block_on(async {
            bulwark_fleet::runtime::start(
                "daemon",
                None,
                &state_dir,
                gate.engine().policy(),
                gate.audit().cloned(),
                Arc::new(WeakGate(Arc::downgrade(&gate))),
                fleet_policy_file.as_deref(),
            )
        })?;
        if let Some(d) = device {
            gate.set_escalator(d);
        }
        let admin = admin.map(|s| {
            bulwark_admin::Admin::new(
                s,
                "daemon",
                gate.metrics()
                    .cloned()
                    .unwrap_or_else(|| Arc::new(bulwark_audit::metrics::Metrics::new())),
                gate.audit().cloned(),
                gate.desk().cloned(),
                gate.engine().policy(),
            )
        });
        let service = Arc::new(Service::on(Arc::clone(&gate)));
        Ok(Front {
            runtime,
            gate,
            service,
            admin,
            socket,
            limits,
            webhook_secret,
            state_dir,
        })
    }

    /// The gate it decides through.
    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }

    /// Serves until SIGTERM or SIGINT; SIGHUP reloads the policy.
    pub fn run(self) -> Result<(), FrontError> {
        let Front {
            runtime,
            gate,
            service,
            admin,
            socket,
            limits,
            webhook_secret,
            state_dir,
        } = self;
        runtime.block_on(async move {
            // Signals are watched before the socket exists: a client that can connect may
            // also stop us, and a SIGTERM then must shut down cleanly, not kill the process.
            let watch = |kind, what| signal(kind).map_err(|e| FrontError::Io(what, e));
            let mut term = watch(SignalKind::terminate(), "cannot watch SIGTERM")?;
            let mut int = watch(SignalKind::interrupt(), "cannot watch SIGINT")?;
            let mut hup = watch(SignalKind::hangup(), "cannot watch SIGHUP")?;
            let uids = gate.engine().policy().identities.unix_uids.clone();
            let listener = server::bind(&socket, &uids)?;
            if let Some(desk) = gate.desk() {
                bulwark_approvals::service::Service::new(
                    Arc::clone(desk),
                    gate.engine().policy(),
                    &state_dir,
                    "daemon",
                    webhook_secret,
                )
                .spawn();
            }
            bulwark_admin::start(admin, "bulwark daemon").await?;
            let reloader = Arc::clone(&service);
            tokio::spawn(async move {
                while hup.recv().await.is_some() {
                    // Loading and compiling a policy takes a while; on a blocking thread,
                    // the runtime's workers go on answering with the old one meanwhile.
                    let r = Arc::clone(&reloader);
                    match tokio::task::spawn_blocking(move || r.reload()).await {
                        Ok(Ok(v)) => eprintln!(
                            "bulwark daemon: reloaded the policy ({})",
                            v["policy_version"]
                        ),
                        Ok(Err(e)) => eprintln!("bulwark daemon: {}", e.message),
                        Err(e) => eprintln!("bulwark daemon: the reload failed: {e}"),
                    }
                }
            });
            eprintln!(
                "bulwark daemon: listening on {} (policy {}, pid {})",
                socket.display(),
                gate.policy_version(),
                std::process::id()
            );
            let shutdown = async move {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            };
            server::serve(
                listener,
                socket.clone(),
                Arc::clone(&service),
                limits,
                shutdown,
            )
            .await;
            if let Err(e) = service.close_audit() {
                eprintln!("bulwark daemon: {e}");
            }
            eprintln!("bulwark daemon: stopped; removed {}", socket.display());
            Ok(())
        })
    }
}
