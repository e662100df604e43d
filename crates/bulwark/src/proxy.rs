//! `bulwark proxy` (the LLM API proxy) and `bulwark approvals token`.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use bulwark_engine::SharedEngine;
use bulwark_llm::approval::UsedTokens;
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
    let used = UsedTokens::open(&state.join("approvals-used"), unix_now())?;
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
    let engine = Arc::new(SharedEngine::new(policy));
    engine.warm_up();
    let service_engine = Arc::clone(&engine);
    let epoch = std::time::Instant::now();
    let escalator = crate::fleet::for_engine(
        "proxy",
        None,
        &args.common,
        &engine,
        Arc::new(move || u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)),
        audit.clone(),
    )?;
    let proxy = Proxy::new(
        engine,
        Config {
            upstream: upstream.clone(),
            max_body: args.max_body,
            upstream_key,
            approval_key: Some(key),
            used: Arc::new(used),
            audit: audit.clone(),
            desk: Some(Arc::clone(&desk)),
            metrics: args.admin.as_ref().map(|_| Arc::clone(&metrics)),
            allowed_hosts: addr.ip().is_loopback().then(|| {
                bulwark_llm::proxy::LOOPBACK_HOSTS
                    .iter()
                    .map(|h| h.to_string())
                    .chain(args.allow_host.iter().cloned())
                    .collect()
            }),
            escalator,
            epoch: Some(epoch),
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
        crate::approvals::spawn_service(
            desk,
            service_engine.engine().policy(),
            &args.common,
            "proxy",
        );
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
