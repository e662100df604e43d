//! `bulwark audit verify|keys`.

use std::io::BufReader;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use bulwark_audit::keys::{read_public, read_secret};
use bulwark_audit::{AuditKeys, VerifyKey, verify};

use crate::cli::{AuditCommand, Common};
use crate::config;
use bulwark_audit::telemetry::{self, Filter};

/// Milliseconds in an age like `90s`, `30m`, `1h`, `7d`.
fn parse_age(text: &str) -> Result<u64> {
    let t = text.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = num
        .parse()
        .with_context(|| format!("--since {text:?}: expected a number and s, m, h or d"))?;
    let mult = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => bail!("--since {text:?}: expected a number and s, m, h or d"),
    };
    Ok(n.saturating_mul(mult))
}

fn since_ms(since: &Option<String>) -> Result<Option<u64>> {
    let Some(s) = since else { return Ok(None) };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    Ok(Some(now.saturating_sub(parse_age(s)?)))
}

fn store(common: &Common) -> Result<telemetry::Connection> {
    let db = config::state_dir(common)?.join("telemetry.db");
    if !db.exists() {
        bail!(
            "no telemetry store at {} yet: it is written by fronts run with --audit",
            db.display()
        );
    }
    Ok(telemetry::open_db(&db)?)
}
pub fn run(cmd: &AuditCommand) -> Result<ExitCode> {
    match cmd {
        AuditCommand::Verify {
            common,
            files,
            pubkey,
            open,
        } => {
            let key = match pubkey {
                Some(p) => VerifyKey::Public(read_public(p)?),
                None => hmac_ring(common)?,
            };
            let logs = expand(files)?;
            let mut failed = 0usize;
            for file in &logs {
                if !verify_one(common, &key, file, pubkey.is_some(), *open)? {
                    failed += 1;
                }
            }
            if logs.len() > 1 {
                println!(
                    "{} logs: {} check out, {} failed",
                    logs.len(),
                    logs.len() - failed,
                    failed
                );
            }
            Ok(if failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        AuditCommand::Query {
            common,
            since,
            decision,
            rule,
            tool,
            limit,
            json,
        } => {
            let conn = store(common)?;
            let f = Filter {
                since_ms: since_ms(since)?,
                decision: decision.clone(),
                rule_id: rule.clone(),
                tool: tool.clone(),
                limit: *limit,
            };
            let rows = telemetry::query(&conn, &f)?;
            for r in &rows {
                if *json {
                    println!(
                        "{}",
                        serde_json::json!({
                            "ts": r.ts, "front": r.front, "session": r.session,
                            "principal": r.principal, "server": r.server, "tool": r.tool,
                            "direction": r.direction, "decision": r.decision,
                            "reason_code": r.reason_code, "rule_id": r.rule_id,
                            "severity": r.severity, "eval_us": r.eval_us,
                        })
                    );
                } else {
                    println!(
                        "{}  {:7} {:8} {:24} {:18} {} {}",
                        r.ts,
                        r.front,
                        r.decision,
                        r.tool,
                        r.reason_code.as_deref().unwrap_or("-"),
                        r.rule_id.as_deref().unwrap_or("-"),
                        r.session
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        AuditCommand::Stats {
            common,
            local,
            since,
            json,
        } => {
            let since = since_ms(since)?;
            if !*local {
                let policy = config::load_policy(common)?;
                if policy.telemetry.backend == bulwark_policy::TelemetryBackend::Postgres {
                    return deployment_stats(&policy.telemetry, since, *json);
                }
            }
            let conn = store(common)?;
            let f = Filter {
                since_ms: since,
                limit: 1,
                ..Filter::default()
            };
            let s = telemetry::stats(&conn, &f)?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&s)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "{} decisions ({} telemetry rows dropped, {} rebuilt from audit logs)",
                s.total, s.dropped, s.recovered
            );
            print_stats(&s);
            Ok(ExitCode::SUCCESS)
        }
        AuditCommand::RotateKeys { common, audit } => {
            let dir = config::state_dir(common)?.join("audit");
            AuditKeys::load_or_create(&dir)?;
            let (old, new) = bulwark_audit::keys::rotate(&dir)?;
            println!(
                "retired key {} (kept in {}); new key {}",
                old.key_id(),
                dir.join("retired").join(old.key_id()).display(),
                new.key_id()
            );
            if let Some(path) = audit {
                let retired = bulwark_audit::keys::load_retired(&dir)?;
                let log = bulwark_audit::AuditLog::open_with_retired(
                    path,
                    new,
                    &retired,
                    "rotate-keys",
                    bulwark_audit::Options {
                        head: Some(bulwark_audit::log::head_path(&dir, path)),
                        ..bulwark_audit::Options::default()
                    },
                )?;
                log.close()?;
                println!(
                    "{}: the rotation is recorded, signed by the retired key",
                    path.display()
                );
            } else {
                println!("each log records the rotation the next time a front opens it");
            }
            Ok(ExitCode::SUCCESS)
        }
        AuditCommand::Keys { common } => {
            let dir = config::state_dir(common)?.join("audit");
            let keys = AuditKeys::load_or_create(&dir)?;
            println!("key id:      {}", keys.key_id());
            println!(
                "public key:  {}",
                bulwark_audit::keys::hex(&keys.public().to_bytes())
            );
            println!("public file: {}", dir.join("signing.pub").display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print_stats(s: &telemetry::Stats) {
    let show = |title: &str, v: &[(String, u64)]| {
        println!("{title}:");
        for (k, n) in v.iter().take(20) {
            println!("  {n:>8}  {k}");
        }
    };
    show("by decision", &s.by_decision);
    show("by rule", &s.by_rule);
    show("by tool", &s.by_tool);
    show("by front", &s.by_front);
    println!(
        "evaluation time µs: p50 {}  p90 {}  p99 {}  max {}",
        s.eval_us[0], s.eval_us[1], s.eval_us[2], s.eval_us[3]
    );
}

/// `audit stats` over the shared PostgreSQL store: every instance, and the total.
fn deployment_stats(
    t: &bulwark_policy::TelemetryPolicy,
    since: Option<u64>,
    json: bool,
) -> Result<ExitCode> {
    let url = t.url.clone().context("telemetry.url")?;
    let timeout = std::time::Duration::from_millis(t.timeout_ms);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let d = rt
        .block_on(async {
            let client = bulwark_telemetry_pg::connect(&url, timeout).await?;
            bulwark_telemetry_pg::stats(&client, since).await
        })
        .context("reading the shared telemetry store (telemetry: postgres)")?;
    if json {
        println!("{}", serde_json::to_string_pretty(&d)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "deployment: {} decisions from {} instances ({} rows the instances could not deliver)",
        d.total.total,
        d.instances.len(),
        d.total.dropped
    );
    println!("by instance:");
    for i in &d.instances {
        let by: Vec<String> = i
            .by_decision
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        println!(
            "  {:>8}  {}  ({}; p50 {} µs, p99 {} µs; {} dropped)",
            i.total,
            i.instance,
            by.join(", "),
            i.eval_us[0],
            i.eval_us[2],
            i.dropped
        );
    }
    print_stats(&d.total);
    Ok(ExitCode::SUCCESS)
}

/// The HMAC keyring of the state directory (or `BULWARK_AUDIT_HMAC_KEY`), with the retired
/// keys.
fn hmac_ring(common: &Common) -> Result<VerifyKey> {
    let dir = config::state_dir(common)?.join("audit");
    let hmac = match std::env::var("BULWARK_AUDIT_HMAC_KEY") {
        Ok(v) => bulwark_audit::keys::unhex32(&v)
            .context("BULWARK_AUDIT_HMAC_KEY: expected 64 hexadecimal digits")?,
        Err(_) if dir.join("hmac.key").exists() => read_secret(&dir.join("hmac.key"))?,
        Err(_) => bail!(
            "no HMAC key in {} (nor BULWARK_AUDIT_HMAC_KEY); pass --state-dir, or --pubkey to check the signatures",
            dir.display()
        ),
    };
    let public = read_public(&dir.join("signing.pub")).ok();
    let mut ring = vec![bulwark_audit::verify::RingKey { hmac, public }];
    for k in bulwark_audit::keys::load_retired(&dir)? {
        ring.push(bulwark_audit::verify::RingKey {
            hmac: k.hmac_key(),
            public: Some(k.public()),
        });
    }
    Ok(VerifyKey::Hmac(ring))
}

/// The logs named: files as given, directories as their `*.jsonl` files (sorted, not
/// recursive). A directory with no log is an error, not a silent pass.
fn expand(paths: &[std::path::PathBuf]) -> Result<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut logs: Vec<_> = std::fs::read_dir(p)
                .with_context(|| format!("cannot read {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && f.extension().is_some_and(|x| x == "jsonl"))
                .collect();
            if logs.is_empty() {
                bail!("{}: no audit logs (*.jsonl) in this directory", p.display());
            }
            logs.sort();
            out.extend(logs);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Verifies one log and prints its summary; false when it fails (or is open without
/// `--open`).
fn verify_one(
    common: &Common,
    key: &VerifyKey,
    file: &std::path::Path,
    by_pubkey: bool,
    open: bool,
) -> Result<bool> {
    // The head is read before the log: a live writer can only make the log longer.
    let key_dir = config::state_dir(common)?.join("audit");
    let head = bulwark_audit::log::head_path(&key_dir, file);
    let head_text = bulwark_audit::log::read_head(&head);
    let f = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) => {
            println!("{}: FAILED: cannot open ({e})", file.display());
            return Ok(false);
        }
    };
    let report = match verify(BufReader::new(f), key) {
        Err(failure) => {
            println!("{}: FAILED at {failure}", file.display());
            return Ok(false);
        }
        Ok(r) => r,
    };
    let what = match key {
        VerifyKey::Public(_) => "checkpoint signatures and the records they cover",
        VerifyKey::Hmac(..) => "every record's MAC",
    };
    println!(
        "{}: {} records ({} decisions, {} checkpoints); {what} check out",
        file.display(),
        report.records,
        report.decisions,
        report.checkpoints
    );
    println!(
        "ends at record {}, keyless chain {}, key {}",
        report.chain.seq,
        bulwark_audit::keys::hex(&report.chain.sha),
        report.key_id.as_deref().unwrap_or("?")
    );
    if !by_pubkey {
        // With the state directory: the log must reach its recorded head, and end on the
        // current key (a log that ends on a retired one was continued by it).
        let dir = key_dir;
        if let (Ok(hmac), Ok(public)) = (
            read_secret(&dir.join("hmac.key")),
            read_secret(&dir.join("signing.key")),
        ) {
            let keys = AuditKeys::from_bytes(hmac, public);
            let retired = bulwark_audit::keys::load_retired(&dir)?;
            let checked = match head_text {
                Some(text) => bulwark_audit::log::check_head(&head, text, &keys, &retired, &report),
                None => Ok(()),
            };
            if let Err(failure) = checked {
                println!("{}: FAILED: {}", file.display(), failure.why);
                return Ok(false);
            }
            if report.key_id.as_deref().is_some_and(|k| k != keys.key_id()) {
                // Normal right after `rotate-keys` (the rotation is recorded when a writer
                // next opens the log); worth a look otherwise.
                println!(
                    "note: the log ends on retired key {}, not the current {}",
                    report.key_id.as_deref().unwrap_or("?"),
                    keys.key_id()
                );
            }
        }
    }
    if report.closed {
        return Ok(true);
    }
    println!(
        "{}: not closed: the last {} records are covered by no checkpoint signature (the writer is running, crashed, or the end was cut off)",
        file.display(),
        report.unsealed
    );
    Ok(open)
}
