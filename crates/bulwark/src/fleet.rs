//! `bulwark fleet …`: the operator's side of the fleet — its signing key, verdicts, signed
//! policy pushes and kill commands, and `serve`, the fleet service. (The device side inside
//! a front is `bulwark_fleet::runtime`; the operator's files and signed messages are
//! `bulwark_fleet::operator`.)

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bulwark_fleet::auth::FleetSigner;
use bulwark_fleet::operator::{self, Operator};
use bulwark_fleet::runtime::{Broker, broker as parse_broker};
use bulwark_fleet::service::{StoredVerdict, VerdictStore};
use serde_json::json;

use crate::cli::{Common, FleetCommand, VerdictCommand};
use crate::config;

fn broker(url: &str, ca: Option<&Path>) -> Result<Broker> {
    Ok(parse_broker(url, ca)?)
}

fn operator(common: &Common) -> Result<Operator> {
    Ok(Operator::open(&config::state_dir(common)?)?)
}

/// The fleet's signing key: `BULWARK_FLEET_SIGNING_KEY` when set, else the operator's key
/// file (made on first use).
fn signer(op: &Operator) -> Result<FleetSigner> {
    match std::env::var("BULWARK_FLEET_SIGNING_KEY") {
        Ok(v) => op
            .signer(Some(&v))
            .context("BULWARK_FLEET_SIGNING_KEY must be 64 hex digits"),
        Err(_) => Ok(op.signer(None)?),
    }
}

/// `bulwark fleet …`.
pub fn command(cmd: &FleetCommand) -> Result<ExitCode> {
    match cmd {
        FleetCommand::Keys { common } => {
            println!("{}", signer(&operator(common)?)?.public_hex());
            Ok(ExitCode::SUCCESS)
        }
        FleetCommand::Verdict(v) => verdict(v),
        FleetCommand::Status { common } => {
            println!("{}", operator(common)?.status()?);
            Ok(ExitCode::SUCCESS)
        }
        FleetCommand::Serve { common, to } => serve(
            common,
            &broker(&to.broker, to.ca_file.as_deref())?,
            &to.fleet,
        ),
        FleetCommand::PublishPolicy {
            common,
            file,
            version,
            to,
        } => {
            let (b, fleet) = (broker(&to.broker, to.ca_file.as_deref())?, &to.fleet);
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            if let Err(e) = bulwark_policy::load_str(&file.display().to_string(), &text) {
                eprintln!("{e}");
                bail!("the policy is not valid; nothing was published");
            }
            let op = operator(common)?;
            let u = op.policy_update(&signer(&op)?, text, *version)?;
            let seq = u.seq;
            publish(
                &b,
                &bulwark_fleet::topics::policy(fleet),
                &serde_json::to_vec(&u)?,
            )?;
            println!("published policy version {version} (seq {seq}) to {fleet}");
            Ok(ExitCode::SUCCESS)
        }
        FleetCommand::Kill {
            common,
            command,
            reason,
            to,
        } => {
            let (b, fleet) = (broker(&to.broker, to.ca_file.as_deref())?, &to.fleet);
            let Some(command) = operator::parse_kill(command) else {
                let other = command.to_ascii_uppercase().replace('-', "_");
                bail!("{other:?}: expected BLOCK_ALL, LOCKDOWN, FLUSH_CACHE or RESUME");
            };
            let op = operator(common)?;
            let k = op.kill(&signer(&op)?, command, reason.clone().unwrap_or_default())?;
            let seq = k.seq;
            publish(
                &b,
                &bulwark_fleet::topics::kill(fleet),
                &serde_json::to_vec(&k)?,
            )?;
            println!("sent {command:?} (seq {seq}) to {fleet}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn publish(b: &Broker, topic: &str, body: &[u8]) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(bulwark_fleet::service::publish_retained(
        &b.host,
        b.port,
        b.tls.clone(),
        topic,
        body.to_vec(),
        Duration::from_secs(10),
    ))
    .map_err(anyhow::Error::msg)
}

fn verdict(cmd: &VerdictCommand) -> Result<ExitCode> {
    let store = |common: &Common| -> Result<VerdictStore> { Ok(operator(common)?.verdicts()?) };
    match cmd {
        VerdictCommand::Set {
            common,
            tool,
            action,
            ttl,
            note,
        } => {
            let Some(action) = operator::parse_action(action) else {
                let other = action.to_ascii_lowercase();
                bail!("{other:?}: expected allow, warn or block");
            };
            let hash = operator::tool_hash(tool);
            let named = (hash != tool.to_ascii_lowercase()).then(|| tool.clone());
            store(common)?.set(
                &hash,
                Some(StoredVerdict {
                    action,
                    ttl_min: *ttl,
                    tool: named,
                    note: note.clone().unwrap_or_default(),
                }),
            )?;
            println!("{hash} {action:?} for {ttl} min");
        }
        VerdictCommand::Get { common, tool } => {
            let hash = operator::tool_hash(tool);
            match store(common)?.get(&hash)? {
                Some(v) => println!(
                    "{}",
                    serde_json::to_string_pretty(&json!({"tool_hash": hash, "verdict": v}))?
                ),
                None => {
                    println!("{hash}: no verdict (devices get BLOCK)");
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
        VerdictCommand::List { common } => {
            for (hash, v) in store(common)?.list()? {
                println!(
                    "{hash}  {:<5}  {:>6} min  {}",
                    format!("{:?}", v.action).to_uppercase(),
                    v.ttl_min,
                    v.tool.unwrap_or_default()
                );
            }
        }
        VerdictCommand::Rm { common, tool } => {
            if !store(common)?.set(&operator::tool_hash(tool), None)? {
                eprintln!("no verdict for {tool}");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn serve(common: &Common, b: &Broker, fleet: &str) -> Result<ExitCode> {
    let op = operator(common)?;
    let signer = signer(&op)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    eprintln!("bulwark fleet: serving {fleet} on {}:{}", b.host, b.port);
    rt.block_on(async {
        let stop = async {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
            }
        };
        op.serve(fleet, b, signer, stop).await
    })?;
    Ok(ExitCode::SUCCESS)
}
