//! `bulwark daemon`: the local evaluator on a Unix socket ([`bulwark_daemon::front`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use bulwark_daemon::front::{Config, Front};
use bulwark_daemon::server::Limits;

use crate::cli::{Common, DaemonArgs};
use crate::config;

/// The socket `bulwark daemon` and `bulwark hook` agree on when neither names one.
pub fn default_socket(common: &Common) -> Result<PathBuf> {
    Ok(bulwark_daemon::server::default_socket(&config::state_dir(
        common,
    )?)?)
}

pub fn run(args: &DaemonArgs) -> Result<ExitCode> {
    let socket = match &args.socket {
        Some(s) => s.clone(),
        None => default_socket(&args.common)?,
    };
    Front::build(Config {
        socket,
        parts: config::parts(&args.common, "daemon", args.audit.as_deref())?,
        admin: config::admin(&args.common, args.admin.as_deref())?,
        webhook_secret: config::webhook_secret(),
        threads: usize::from(args.threads),
        limits: Limits {
            max_connections: args.max_connections as usize,
            per_second: args.rate,
            exit_when_idle: args.exit_when_idle.map(std::time::Duration::from_secs),
            ..Limits::default()
        },
        fleet_policy_file: args.common.policy.clone(),
    })?
    .run()?;
    Ok(ExitCode::SUCCESS)
}
