//! `bulwark audit verify|keys`.

use std::io::BufReader;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use bulwark_audit::keys::{read_public, read_secret};
use bulwark_audit::{AuditKeys, VerifyKey, verify};

use crate::cli::AuditCommand;
use crate::config;

pub fn run(cmd: &AuditCommand) -> Result<ExitCode> {
    match cmd {
        AuditCommand::Verify {
            common,
            file,
            pubkey,
            open,
        } => {
            let key = match pubkey {
                Some(p) => VerifyKey::Public(read_public(p)?),
                None => {
                    let dir = config::state_dir(common)?.join("audit");
                    let hmac = match std::env::var("BULWARK_AUDIT_HMAC_KEY") {
                        Ok(v) => bulwark_audit::keys::unhex32(&v)
                            .context("BULWARK_AUDIT_HMAC_KEY: expected 64 hexadecimal digits")?,
                        Err(_) if dir.join("hmac.key").exists() => {
                            read_secret(&dir.join("hmac.key"))?
                        }
                        Err(_) => bail!(
                            "no HMAC key in {} (nor BULWARK_AUDIT_HMAC_KEY); pass --state-dir, or --pubkey to check the signatures",
                            dir.display()
                        ),
                    };
                    let public = read_public(&dir.join("signing.pub")).ok();
                    VerifyKey::Hmac(hmac, public)
                }
            };
            let f = std::fs::File::open(file)
                .with_context(|| format!("cannot open {}", file.display()))?;
            match verify(BufReader::new(f), &key) {
                Err(failure) => {
                    println!("{}: FAILED at {failure}", file.display());
                    Ok(ExitCode::from(1))
                }
                Ok(r) => {
                    let what = match key {
                        VerifyKey::Public(_) => "checkpoint signatures and the records they cover",
                        VerifyKey::Hmac(..) => "every record's MAC",
                    };
                    println!(
                        "{}: {} records ({} decisions, {} checkpoints); {what} check out",
                        file.display(),
                        r.records,
                        r.decisions,
                        r.checkpoints
                    );
                    if r.closed {
                        return Ok(ExitCode::SUCCESS);
                    }
                    println!(
                        "not closed: the last {} records are covered by no checkpoint signature (the writer is running, crashed, or the end was cut off)",
                        r.unsealed
                    );
                    Ok(if *open {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(1)
                    })
                }
            }
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
