//! `bulwark daemon`: the local evaluator on a Unix socket.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use bulwark_daemon::server::{self, Limits};
use bulwark_daemon::service::{PolicySource, Service};
use bulwark_gate::Gate;
use tokio::signal::unix::{SignalKind, signal};

use crate::cli::{Common, DaemonArgs};
use crate::config;

/// The socket `bulwark daemon` and `bulwark hook` agree on when neither names one.
pub fn default_socket(common: &Common) -> Result<PathBuf> {
    Ok(config::state_dir(common)?.join("bulwark.sock"))
}

pub fn run(args: &DaemonArgs) -> Result<ExitCode> {
    let socket = match &args.socket {
        Some(s) => s.clone(),
        None => default_socket(&args.common)?,
    };
    let source = PolicySource::of(args.common.policy.as_deref());
    let audit = config::open_audit(&args.common, args.audit.as_deref(), "daemon")?;
    let metrics = Arc::new(bulwark_audit::metrics::Metrics::new());
    let gate = Gate::load(source, "daemon").map_err(|e| {
        anyhow::anyhow!("{e}\npolicy refused; fix the errors above (see docs/policy.md)")
    })?;
    let engine = gate.engine();
    let desk = crate::approvals::desk(&args.common, engine.policy(), audit.clone(), "daemon")?;
    let admin = crate::approvals::admin(
        args.admin.as_deref(),
        &args.common,
        engine.policy(),
        "daemon",
        Arc::clone(&metrics),
        audit.clone(),
        Some(Arc::clone(&desk)),
    )?;
    let gate = Arc::new(
        gate.with_audit(audit.clone())
            .with_desk(Some(desk))
            .with_metrics(args.admin.as_ref().map(|_| Arc::clone(&metrics))),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(usize::from(args.threads))
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    // The fleet client runs on the daemon's runtime; the policy the fleet put in force
    // before a restart is put back.
    runtime.block_on(async { crate::fleet::attach("daemon", None, &args.common, &gate) })?;
    let service = Arc::new(Service::on(Arc::clone(&gate)));
    let limits = Limits {
        max_connections: args.max_connections as usize,
        per_second: args.rate,
        ..Limits::default()
    };
    runtime.block_on(async move {
        let uids = gate.engine().policy().identities.unix_uids.clone();
        let listener = server::bind(&socket, &uids)?;
        crate::approvals::spawn_service(&gate, &args.common);
        crate::admin::start(admin, "bulwark daemon").await?;
        let mut term = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
        let mut int = signal(SignalKind::interrupt()).context("cannot watch SIGINT")?;
        let mut hup = signal(SignalKind::hangup()).context("cannot watch SIGHUP")?;
        let reloader = Arc::clone(&service);
        tokio::spawn(async move {
            while hup.recv().await.is_some() {
                match reloader.reload() {
                    Ok(v) => eprintln!(
                        "bulwark daemon: reloaded the policy ({})",
                        v["policy_version"]
                    ),
                    Err(e) => eprintln!("bulwark daemon: {}", e.message),
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
        Ok(ExitCode::SUCCESS)
    })
}
