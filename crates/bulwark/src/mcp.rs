//! `bulwark mcp` (the MCP gateway, [`bulwark_mcp::front`]) and `bulwark pins`.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use bulwark_mcp::front::{Config, Exit, Front};
use bulwark_mcp::pinfile::{self, PinFile};

use crate::cli::{Common, McpArgs, PinsCommand};
use crate::config;

fn pins_dir(common: &Common) -> Result<std::path::PathBuf> {
    Ok(config::state_dir(common)?.join("pins"))
}

pub fn run(args: &McpArgs) -> Result<ExitCode> {
    let config = Config {
        admin: config::admin(&args.common, args.admin.as_deref())?,
        webhook_secret: config::webhook_secret(),
        name: args.name.clone(),
        env: args.env.clone(),
        listen: args.listen.clone(),
        allow_host: args.allow_host.clone(),
        allow_origin: args.allow_origin.clone(),
        max_sessions: args.max_sessions,
        upstream_url: args.upstream_url.clone(),
        upstream_allow_internal: args.upstream_allow_internal,
        command: args.command.clone(),
        fleet_policy_file: args.common.policy.clone(),
        otlp: config::otlp(),
        ..Config::new(config::parts(&args.common, "mcp", args.audit.as_deref())?)
    };
    Ok(match Front::build(config)?.run()? {
        Exit::Done => ExitCode::SUCCESS,
        Exit::ServerExited(code) => {
            ExitCode::from(code.and_then(|c| u8::try_from(c).ok()).unwrap_or(1))
        }
        Exit::Interrupted => ExitCode::from(130),
    })
}

pub fn pins(cmd: &PinsCommand) -> Result<ExitCode> {
    match cmd {
        PinsCommand::List { common, json } => {
            let found = pinfile::all(&pins_dir(common)?)?;
            if *json {
                let docs: Vec<serde_json::Value> = found
                    .iter()
                    .map(|(path, doc)| match doc {
                        Ok(d) => {
                            serde_json::json!({"file": path, "server": d.server, "tools": d.tools})
                        }
                        Err(e) => serde_json::json!({"file": path, "error": e.to_string()}),
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&docs)?);
                return Ok(ExitCode::SUCCESS);
            }
            if found.is_empty() {
                println!("no pins yet");
            }
            let mut bad = false;
            for (path, doc) in &found {
                match doc {
                    Ok(d) => {
                        println!("{}  ({})", d.server, path.display());
                        for t in &d.tools {
                            let status = match &t.withheld {
                                Some(code) => format!(
                                    "WITHHELD {}: {}",
                                    code.as_str(),
                                    t.reason.as_deref().unwrap_or("")
                                ),
                                None => "pinned".into(),
                            };
                            println!(
                                "  {:32} {}  {}",
                                t.tool,
                                t.digest.get(..12).unwrap_or(&t.digest),
                                status
                            );
                        }
                    }
                    Err(e) => {
                        bad = true;
                        eprintln!("bulwark pins: {e}");
                    }
                }
            }
            Ok(if bad {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        PinsCommand::Accept {
            common,
            tool,
            server,
        } => {
            let dir = pins_dir(common)?;
            let candidates: Vec<String> = pinfile::all(&dir)?
                .into_iter()
                .filter_map(|(path, doc)| {
                    let d = doc.ok()?;
                    let matches_server = server.as_deref().is_none_or(|s| {
                        s == d.server || path.file_stem().and_then(|f| f.to_str()) == Some(s)
                    });
                    let withheld = d
                        .tools
                        .iter()
                        .any(|t| t.tool.eq_ignore_ascii_case(tool) && t.withheld.is_some());
                    (matches_server && withheld).then_some(d.server)
                })
                .collect();
            let server = match candidates.as_slice() {
                [] => bail!(
                    "no withheld tool {tool:?}{}; `bulwark pins list` shows what is pinned",
                    server
                        .as_deref()
                        .map(|s| format!(" on server {s:?}"))
                        .unwrap_or_default()
                ),
                [one] => one.clone(),
                many => bail!(
                    "{tool:?} is withheld on several servers; name one with --server: {}",
                    many.join(", ")
                ),
            };
            let file = PinFile::open(&dir, &server)?;
            let accepted = file.locked(|f| -> Result<Vec<bulwark_engine::pins::PinRecord>> {
                let mut records = f.load()?;
                if let Some(code) = records
                    .iter()
                    .filter(|r| r.tool.eq_ignore_ascii_case(tool))
                    .find_map(|r| r.withheld)
                    .filter(|c| *c != bulwark_engine::ReasonCode::RugPull)
                {
                    bail!(
                        "{tool:?} is withheld for what its definition says ({}), not because it changed; \
                         accepting would be undone at the next listing. Review the definition; if it is a \
                         false positive, change the policy's content.definition action for that category",
                        code.as_str()
                    );
                }
                for r in records
                    .iter_mut()
                    .filter(|r| r.tool.eq_ignore_ascii_case(tool))
                {
                    if let Some(offered) = r.offered.take() {
                        r.digest = offered;
                        // The accepted definition's schema is learned from its next listing.
                        r.input_schema = serde_json::Value::Null;
                    }
                    r.withheld = None;
                    r.reason = None;
                }
                let accepted = records
                    .iter()
                    .filter(|r| r.tool.eq_ignore_ascii_case(tool))
                    .cloned()
                    .collect();
                f.save(records)?;
                Ok(accepted)
            })??;
            // Replicas on a shared store merge their files into it and never lift a
            // quarantine from one, so the accept is made in the store too.
            let policy = config::load_policy(common)?;
            if let Some(store) = config::shared_store(&policy)? {
                store
                    .accept_pins(Some(&server), &accepted)
                    .context("accepting in the shared state store (state:)")?;
            }
            println!("accepted {tool:?} on {server:?}; it is shown again from the next tools/list");
            Ok(ExitCode::SUCCESS)
        }
        PinsCommand::Reset {
            common,
            tool,
            server,
            all,
        } => {
            let dir = pins_dir(common)?;
            if server.is_none() && !all {
                bail!(
                    "name a server with --server (see `bulwark pins list`), or pass --all to forget every server's pins"
                );
            }
            let mut touched = 0;
            for (path, doc) in pinfile::all(&dir)? {
                let name = doc.as_ref().map(|d| d.server.clone()).ok();
                let stem = path
                    .file_stem()
                    .and_then(|f| f.to_str())
                    .map(str::to_string);
                let selected = *all
                    || server
                        .as_deref()
                        .is_some_and(|s| Some(s) == name.as_deref() || Some(s) == stem.as_deref());
                if !selected {
                    continue;
                }
                match (tool, name) {
                    (Some(tool), Some(name)) => {
                        let file = PinFile::open(&dir, &name)?;
                        file.locked(|f| -> Result<()> {
                            let mut records = f.load()?;
                            let before = records.len();
                            records.retain(|r| !r.tool.eq_ignore_ascii_case(tool));
                            if records.len() != before {
                                touched += 1;
                            }
                            f.save(records)?;
                            Ok(())
                        })??;
                    }
                    // A whole server: emptied under its lock, so a gateway in the middle of a
                    // listing cannot write the old pins back afterwards.
                    (None, Some(name)) => {
                        PinFile::open(&dir, &name)?.locked(|f| f.save(Vec::new()))??;
                        touched += 1;
                    }
                    // A file too damaged to read: removed.
                    (_, None) => {
                        std::fs::remove_file(&path)
                            .with_context(|| format!("cannot remove {}", path.display()))?;
                        touched += 1;
                    }
                }
            }
            if touched == 0 {
                bail!("nothing matched; `bulwark pins list` shows what is pinned");
            }
            println!("forgot the pins of {touched} server(s); the next tools/list pins afresh");
            Ok(ExitCode::SUCCESS)
        }
    }
}
