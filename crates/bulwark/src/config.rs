//! Loading the policy and the state directory; `init` and `policy check`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use bulwark_policy::{Policy, Summary};

use crate::cli::{Common, InitArgs};

/// The `--audit` log: HMAC-chained and checkpoint-signed with the keys in
/// `STATE_DIR/audit/` (made on first use, or taken from the environment), with a thread
/// doing its group commits and timed checkpoints.
pub fn open_audit(
    common: &Common,
    path: Option<&Path>,
    front: &str,
    telemetry: &bulwark_policy::TelemetryPolicy,
) -> Result<Option<std::sync::Arc<bulwark_audit::AuditLog>>> {
    let Some(path) = path else { return Ok(None) };
    let dir = state_dir(common)?.join("audit");
    let keys = bulwark_audit::AuditKeys::load_or_create(&dir)
        .with_context(|| "the audit log needs its keys; refusing to write an unsigned one")?;
    let retired = bulwark_audit::keys::load_retired(&dir)?;
    let opts = bulwark_audit::Options {
        head: Some(bulwark_audit::log::head_path(&dir, path)),
        ..bulwark_audit::Options::default()
    };
    let log = bulwark_audit::AuditLog::open_with_retired(path, keys, &retired, front, opts)?;
    let db = state_dir(common)?.join("telemetry.db");
    // The log is the truth: what the store lacks of it (rows still queued when a process
    // was killed) is rebuilt before new rows go in.
    let (sink, thread) = bulwark_audit::telemetry::start_for(
        &db,
        bulwark_audit::telemetry::Retention::default(),
        bulwark_audit::telemetry::QUEUE,
        Some(log.telemetry_source()),
    )?;
    log.attach_telemetry(sink, thread);
    if let Some(cfg) =
        bulwark_telemetry_pg::Config::of_policy(telemetry, &bulwark_telemetry_pg::instance_id())
    {
        // Connects on its own thread: a database out of reach now is one lost later
        // (rows dropped and counted, decisions unaffected).
        let (sink, thread) =
            bulwark_telemetry_pg::start(cfg).context("the shared telemetry store (telemetry:)")?;
        log.attach_shared(Box::new(sink), thread);
    }
    let log = std::sync::Arc::new(log);
    log.spawn_ticker();
    Ok(Some(log))
}

/// What a front's gate is made of: the policy (`--policy` or the built-in one), the state
/// directory, the `--audit` log and the approval key.
pub fn parts(
    common: &Common,
    front: &'static str,
    audit: Option<&Path>,
) -> Result<bulwark_gate::Parts> {
    let policy = load_policy(common)?;
    let store = shared_store(&policy)?;
    let audit = open_audit(common, audit, front, &policy.telemetry)?;
    Ok(bulwark_gate::Parts {
        front,
        policy,
        source: bulwark_gate::PolicySource::of(common.policy.as_deref()),
        state_dir: state_dir(common)?,
        audit,
        approval_key: approval_key(common)?,
        count: false,
        ledger: false,
        store,
        admin: false,
    })
}

/// The shared state store the policy's `state:` section names, if any (`None`: the gate
/// keeps state in this process). Opening does not connect: a store out of reach at start is
/// handled as one lost later (refused, or decided locally and marked degraded).
pub fn shared_store(policy: &Policy) -> Result<Option<std::sync::Arc<dyn bulwark_gate::Store>>> {
    match policy.state.backend {
        bulwark_policy::StateBackend::Memory => Ok(None),
        bulwark_policy::StateBackend::Redis => {
            let store = bulwark_store_redis::RedisStore::for_policy(policy)
                .context("opening the shared state store (state:)")?;
            Ok(Some(std::sync::Arc::new(store)))
        }
    }
}

/// The admin listener's settings when `--admin ADDR` asks for one: the token from the state
/// directory (or `BULWARK_ADMIN_TOKEN`), the address written to STATE_DIR/admin.addr for
/// the CLI.
pub fn admin(common: &Common, addr: Option<&str>) -> Result<Option<bulwark_admin::Settings>> {
    let Some(addr) = addr else { return Ok(None) };
    Ok(Some(bulwark_admin::Settings {
        addr: addr.to_string(),
        token: admin_token(common)?,
        webhook_secret: webhook_secret(),
        addr_file: Some(state_dir(common)?.join("admin.addr")),
    }))
}

/// Where OpenTelemetry traces go, from the standard variables
/// (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`,
/// `OTEL_SERVICE_NAME`); `None`: no traces.
pub fn otlp() -> Option<bulwark_audit::otlp::Settings> {
    bulwark_audit::otlp::Settings::from_env(|k| std::env::var(k).ok())
}

/// The secret webhook posts and callbacks are signed with (`BULWARK_WEBHOOK_SECRET`).
pub fn webhook_secret() -> Option<Vec<u8>> {
    std::env::var("BULWARK_WEBHOOK_SECRET")
        .ok()
        .filter(|s| !s.is_empty())
        .map(String::into_bytes)
}

/// The policy named by `--policy`, or the built-in default.
pub fn load_policy(common: &Common) -> Result<Policy> {
    match &common.policy {
        Some(path) => bulwark_policy::load_file(path).map_err(|e| {
            anyhow::anyhow!("{e}\npolicy refused; fix the errors above (see docs/policy.md)")
        }),
        None => Policy::builtin().map_err(|e| anyhow::anyhow!("built-in policy is broken: {e}")),
    }
}

/// `--state-dir`, else `$XDG_STATE_HOME/bulwark`, else `~/.local/state/bulwark`; created
/// with owner-only permissions.
pub fn state_dir(common: &Common) -> Result<PathBuf> {
    let dir = match &common.state_dir {
        Some(d) => d.clone(),
        None => match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
            Some(x) => PathBuf::from(x).join("bulwark"),
            None => {
                let home = std::env::var_os("HOME")
                    .context("neither --state-dir, XDG_STATE_HOME nor HOME is set")?;
                PathBuf::from(home).join(".local/state/bulwark")
            }
        },
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create state directory {}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
    }
    Ok(dir)
}

/// `bulwark init`.
pub fn init(args: &InitArgs) -> Result<ExitCode> {
    if args.path.exists() && !args.force {
        bail!(
            "{} already exists; pass --force to overwrite it",
            args.path.display()
        );
    }
    if args.from_server {
        return crate::tools::init_from_server(args);
    }
    std::fs::write(&args.path, bulwark_policy::DEFAULT_POLICY)
        .with_context(|| format!("cannot write {}", args.path.display()))?;
    println!(
        "wrote {}; check it with `bulwark policy check {}`",
        args.path.display(),
        args.path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `bulwark policy check FILE`.
pub fn policy_check(file: &Path) -> Result<ExitCode> {
    match bulwark_policy::load_file(file) {
        Ok(policy) => {
            println!("{}", Summary(&policy));
            println!("ok");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("{e}");
            eprintln!(
                "{} error{} in {}",
                e.issues.len(),
                if e.issues.len() == 1 { "" } else { "s" },
                file.display()
            );
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The key approval tokens are signed with: STATE_DIR/approval.key (64 hex digits, owner
/// only), made on first use. The proxy and `bulwark approvals token` share it.
pub fn approval_key(common: &Common) -> Result<[u8; 32]> {
    key_file(&state_dir(common)?.join("approval.key"))
}

/// The admin endpoint's bearer token: STATE_DIR/admin.token (64 hex digits, owner only),
/// made on first use, or `BULWARK_ADMIN_TOKEN`. The CLI reads it from the same place.
pub fn admin_token(common: &Common) -> Result<String> {
    if let Ok(t) = std::env::var("BULWARK_ADMIN_TOKEN")
        && !t.trim().is_empty()
    {
        return Ok(t.trim().to_string());
    }
    let key = key_file(&state_dir(common)?.join("admin.token"))?;
    Ok(key.iter().map(|b| format!("{b:02x}")).collect())
}

/// A 32-byte secret kept as hex in `path`, made (owner-only) if missing.
fn key_file(path: &Path) -> Result<[u8; 32]> {
    let path = path.to_path_buf();
    match std::fs::read_to_string(&path) {
        Ok(text) => bulwark_audit::keys::unhex32(&text)
            .with_context(|| format!("{} does not hold 64 hex digits", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let key = bulwark_audit::keys::random32()?;
            let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
            let made = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path);
            match made {
                Ok(mut f) => {
                    f.write_all(hex.as_bytes())
                        .and_then(|()| f.sync_all())
                        .with_context(|| format!("cannot write {}", path.display()))?;
                    Ok(key)
                }
                // Another process made it first: use theirs.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => key_file(&path),
                Err(e) => Err(e).with_context(|| format!("cannot create {}", path.display())),
            }
        }
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}
