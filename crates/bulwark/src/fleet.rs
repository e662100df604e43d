//! `bulwark fleet …`: the operator's side of the fleet — its signing key, verdicts, signed
//! policy pushes and kill commands, and `serve`, the fleet service. (The device side inside
//! a front is `bulwark_fleet::runtime`.)

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bulwark_fleet::auth::FleetSigner;
use bulwark_fleet::runtime::{Broker, broker as parse_broker};
use bulwark_fleet::service::{FleetService, StoredVerdict, VerdictStore};
use bulwark_fleet::wire::{Action, Kill, KillCommand, PolicyUpdate, VERSION};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::cli::{Common, FleetCommand, VerdictCommand};
use crate::config;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn broker(url: &str, ca: Option<&Path>) -> Result<Broker> {
    Ok(parse_broker(url, ca)?)
}

fn fleet_dir(common: &Common) -> Result<PathBuf> {
    let d = config::state_dir(common)?.join("fleet");
    std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
    Ok(d)
}

/// The fleet's signing key: STATE_DIR/fleet/signing.key, made on first use, with the public
/// key beside it.
fn signer(common: &Common) -> Result<FleetSigner> {
    let dir = fleet_dir(common)?;
    let seed = match std::env::var("BULWARK_FLEET_SIGNING_KEY") {
        Ok(v) => bulwark_audit::keys::unhex32(&v)
            .context("BULWARK_FLEET_SIGNING_KEY must be 64 hex digits")?,
        Err(_) => {
            let path = dir.join("signing.key");
            match std::fs::read_to_string(&path) {
                Ok(t) => bulwark_audit::keys::unhex32(&t)
                    .with_context(|| format!("{} does not hold 64 hex digits", path.display()))?,
                Err(_) => {
                    use std::os::unix::fs::OpenOptionsExt;
                    let key = bulwark_audit::keys::random32()?;
                    let mut f = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(0o600)
                        .open(&path)
                        .with_context(|| format!("cannot create {}", path.display()))?;
                    std::io::Write::write_all(&mut f, hex(&key).as_bytes())?;
                    key
                }
            }
        }
    };
    let s = FleetSigner::from_seed(&seed);
    let _ = std::fs::write(dir.join("signing.pub"), s.public_hex());
    Ok(s)
}

/// The next number of a counter kept in `path` (sequence numbers must never repeat).
fn next_seq(path: &Path) -> Result<u64> {
    let cur = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(0);
    // Never below the clock, so a lost counter file does not replay old numbers.
    let next = (cur + 1).max(now_ms());
    std::fs::write(path, next.to_string())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(next)
}

fn tool_hash(arg: &str) -> String {
    if arg.len() == 64 && arg.bytes().all(|b| b.is_ascii_hexdigit()) {
        arg.to_ascii_lowercase()
    } else {
        hex(&Sha256::digest(arg.as_bytes()))
    }
}

/// `bulwark fleet …`.
pub fn command(cmd: &FleetCommand) -> Result<ExitCode> {
    match cmd {
        FleetCommand::Keys { common } => {
            let s = signer(common)?;
            println!("{}", s.public_hex());
            Ok(ExitCode::SUCCESS)
        }
        FleetCommand::Verdict(v) => verdict(v),
        FleetCommand::Status { common } => {
            let path = fleet_dir(common)?.join("devices.json");
            let text = std::fs::read_to_string(&path).with_context(|| {
                format!(
                    "{} is missing: is `bulwark fleet serve` running?",
                    path.display()
                )
            })?;
            println!("{text}");
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
            let s = signer(common)?;
            let seq = next_seq(&fleet_dir(common)?.join("policy.seq"))?;
            let mut u = PolicyUpdate {
                v: VERSION,
                version: *version,
                seq,
                sha256: hex(&Sha256::digest(text.as_bytes())),
                policy: text,
                sig: None,
            };
            u.sig = Some(s.sign("policy", &u));
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
            let command = match command.to_ascii_uppercase().replace('-', "_").as_str() {
                "BLOCK_ALL" => KillCommand::BlockAll,
                "LOCKDOWN" => KillCommand::Lockdown,
                "FLUSH_CACHE" => KillCommand::FlushCache,
                "RESUME" => KillCommand::Resume,
                other => bail!("{other:?}: expected BLOCK_ALL, LOCKDOWN, FLUSH_CACHE or RESUME"),
            };
            let s = signer(common)?;
            let seq = next_seq(&fleet_dir(common)?.join("kill.seq"))?;
            let mut k = Kill {
                v: VERSION,
                seq,
                command,
                reason: reason.clone().unwrap_or_default(),
                sig: None,
            };
            k.sig = Some(s.sign("kill", &k));
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
    let store = |common: &Common| -> Result<VerdictStore> {
        Ok(VerdictStore::open(
            &fleet_dir(common)?.join("verdicts.json"),
        )?)
    };
    match cmd {
        VerdictCommand::Set {
            common,
            tool,
            action,
            ttl,
            note,
        } => {
            let action = match action.to_ascii_lowercase().as_str() {
                "allow" => Action::Allow,
                "warn" => Action::Warn,
                "block" => Action::Block,
                other => bail!("{other:?}: expected allow, warn or block"),
            };
            let hash = tool_hash(tool);
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
            let hash = tool_hash(tool);
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
            if !store(common)?.set(&tool_hash(tool), None)? {
                eprintln!("no verdict for {tool}");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn serve(common: &Common, b: &Broker, fleet: &str) -> Result<ExitCode> {
    if !bulwark_fleet::topics::valid_id(fleet) {
        bail!("--fleet {fleet:?}: letters, digits, '-', '_' and '.' only");
    }
    let (host, port, tls) = (b.host.clone(), b.port, b.tls.clone());
    let dir = fleet_dir(common)?;
    let store = VerdictStore::open(&dir.join("verdicts.json"))?;
    let service = Arc::new(FleetService::new(fleet, signer(common)?, store));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let status = dir.join("devices.json");
    eprintln!("bulwark fleet: serving {fleet} on {host}:{port}");
    rt.block_on(async move {
        let stop = async {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
            }
        };
        service
            .serve(&host, port, tls, stop, move |s| {
                let doc = json!({
                    "devices": s.devices(),
                    "answered": s.answered.load(std::sync::atomic::Ordering::Relaxed),
                    "dropped": s.dropped.load(std::sync::atomic::Ordering::Relaxed),
                });
                let tmp = status.with_extension("tmp");
                if std::fs::write(&tmp, doc.to_string()).is_ok() {
                    let _ = std::fs::rename(&tmp, &status);
                }
            })
            .await;
    });
    Ok(ExitCode::SUCCESS)
}
