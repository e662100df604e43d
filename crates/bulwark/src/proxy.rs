//! `bulwark proxy` (the LLM API proxy) and `bulwark approvals token`.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use bulwark_gate::Gate;
use bulwark_llm::{Config, Proxy};

use crate::cli::ProxyArgs;
use crate::config;

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub fn run(args: &ProxyArgs) -> Result<ExitCode> {
    let policy = config::load_policy(&args.common)?;
    let upstream = url::Url::parse(&args.upstream)
        .with_context(|| format!("--upstream {:?} is not a URL", args.upstream))?;
    let addr: std::net::SocketAddr = args.listen.parse().with_context(|| {
        format!(
            "--listen {:?} is not an address like 127.0.0.1:4001",
            args.listen
        )
    })?;
    let upstream_key = match &args.upstream_key_env {
        Some(var) => {
            let key = std::env::var(var)
                .with_context(|| format!("--upstream-key-env {var}: the variable is not set"))?;
            let header = axum_header(&args.upstream_key_header)?;
            Some((header, key))
        }
        None => None,
    };
    let state = config::state_dir(&args.common)?;
    let key = config::approval_key(&args.common)?;
    let ledger = bulwark_gate::ledger::Ledger::open(&state.join("approvals-used"), unix_now())?;
    let audit = config::open_audit(&args.common, args.audit.as_deref(), "proxy")?;
    let desk = crate::approvals::desk(&args.common, &policy, audit.clone(), "proxy")?;
    let metrics = Arc::new(bulwark_audit::metrics::Metrics::new());
    let admin = crate::approvals::admin(
        args.admin.as_deref(),
        &args.common,
        &policy,
        "proxy",
        Arc::clone(&metrics),
        audit.clone(),
        Some(Arc::clone(&desk)),
    )?;
    let store = bulwark_gate::MemoryStore::new(&policy).with_ledger(ledger);
    let gate = Arc::new(
        Gate::new(policy, "proxy")
            .with_store(Arc::new(store))
            .with_audit(audit.clone())
            .with_desk(Some(desk))
            .with_metrics(args.admin.as_ref().map(|_| Arc::clone(&metrics))),
    );
    gate.warm_up();
    crate::fleet::for_gate("proxy", None, &args.common, &gate)?;
    let proxy = Proxy::new(
        Arc::clone(&gate),
        Config {
            upstream: upstream.clone(),
            max_body: args.max_body,
            upstream_key,
            approval_key: Some(key),
            allowed_hosts: addr.ip().is_loopback().then(|| {
                bulwark_llm::proxy::LOOPBACK_HOSTS
                    .iter()
                    .map(|h| h.to_string())
                    .chain(args.allow_host.iter().cloned())
                    .collect()
            }),
        },
    )?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "bulwark proxy: WARNING: serving on {addr}, which is not loopback; anyone who can reach it can use the upstream through it"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(async move {
        crate::approvals::spawn_service(&gate, &args.common);
        crate::admin::start(admin, "bulwark proxy").await?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let at = listener.local_addr()?;
        eprintln!("bulwark proxy: listening on http://{at}, forwarding to {upstream}");
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        let term = async {
            if let Ok(mut t) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            {
                t.recv().await;
            }
        };
        Arc::new(proxy)
            .serve(listener, async {
                tokio::select! {
                    _ = shutdown => {}
                    _ = term => {}
                }
            })
            .await
            .context("the proxy stopped")?;
        if let Some(a) = audit
            && let Err(e) = a.close()
        {
            eprintln!("bulwark proxy: {e}");
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn axum_header(name: &str) -> Result<axum::http::HeaderName> {
    let lower = name.to_ascii_lowercase();
    if lower != "authorization" && lower != "x-api-key" && lower != "api-key" {
        bail!("--upstream-key-header must be authorization, x-api-key or api-key, not {name:?}");
    }
    axum::http::HeaderName::from_bytes(lower.as_bytes()).context("bad header name")
}
