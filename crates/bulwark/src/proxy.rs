//! `bulwark proxy`: the LLM API proxy ([`bulwark_llm::front`]).

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use bulwark_llm::front::{Config, Front};

use crate::cli::ProxyArgs;
use crate::config;

pub fn run(args: &ProxyArgs) -> Result<ExitCode> {
    let upstream_key = match &args.upstream_key_env {
        Some(var) => {
            let key = std::env::var(var)
                .with_context(|| format!("--upstream-key-env {var}: the variable is not set"))?;
            Some((axum_header(&args.upstream_key_header)?, key))
        }
        None => None,
    };
    Front::build(Config {
        parts: config::parts(&args.common, "proxy", args.audit.as_deref())?,
        listen: args.listen.clone(),
        upstream: args.upstream.clone(),
        max_body: args.max_body,
        max_connections: args.max_connections,
        upstream_key,
        allow_host: args.allow_host.clone(),
        provenance: args.provenance,
        admin: config::admin(&args.common, args.admin.as_deref())?,
        webhook_secret: config::webhook_secret(),
        fleet_policy_file: args.common.policy.clone(),
        otlp: config::otlp(),
    })?
    .run()?;
    Ok(ExitCode::SUCCESS)
}

fn axum_header(name: &str) -> Result<axum::http::HeaderName> {
    let lower = name.to_ascii_lowercase();
    if lower != "authorization" && lower != "x-api-key" && lower != "api-key" {
        bail!("--upstream-key-header must be authorization, x-api-key or api-key, not {name:?}");
    }
    axum::http::HeaderName::from_bytes(lower.as_bytes()).context("bad header name")
}
