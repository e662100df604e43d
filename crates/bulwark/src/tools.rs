//! `bulwark tools` and `bulwark init --from-server`: where the definitions come from, then
//! [`bulwark_engine::toolset`] says what each tool is taken to do and
//! [`bulwark_mcp::listing`] asks a server for its tools.

use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bulwark_engine::toolset::{self, Reviewed};
use bulwark_engine::{Definition, Policy};
use bulwark_mcp::stdio::ServerCommand;
use bulwark_policy::ServerUpstream;
use serde_json::{Value, json};

use crate::cli::{InitArgs, ToolsArgs};
use crate::config;

/// One place definitions came from, named as the operator gave it.
struct Listed {
    source: String,
    tools: Vec<(String, Definition)>,
}

fn command_line(argv: &[OsString]) -> String {
    argv.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

fn from_server(argv: &[OsString], env: &[String], policy: &Policy, timeout: u64) -> Result<Listed> {
    let mut env = env.to_vec();
    env.extend(policy.mcp.env.iter().cloned());
    let cmd = ServerCommand {
        argv: argv.to_vec(),
        env,
    };
    let source = command_line(argv);
    let raw = bulwark_mcp::listing::tools_blocking(&cmd, Duration::from_secs(timeout))
        .with_context(|| format!("listing the tools of `{source}`"))?;
    let tools = toolset::read(&Value::Array(raw))?;
    Ok(Listed { source, tools })
}

fn from_file(path: &Path) -> Result<Listed> {
    let text = if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading standard input")?;
        s
    } else {
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?
    };
    let doc: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let tools = toolset::read(&doc).with_context(|| path.display().to_string())?;
    Ok(Listed {
        source: path.display().to_string(),
        tools,
    })
}

fn as_json(source: &str, reviewed: &[Reviewed]) -> Value {
    let tools: Vec<Value> = reviewed
        .iter()
        .map(|t| {
            let taint = |s: bulwark_engine::TaintSet| -> Vec<&str> {
                s.iter().map(|t| t.as_str()).collect()
            };
            json!({
                "name": t.name,
                "source": t.source.as_str(),
                "capabilities": t.capabilities.names(),
                "taint": taint(t.taint),
                "inferred": {
                    "capabilities": t.inference.capabilities.names(),
                    "taint": taint(t.inference.taint),
                    "because": t.inference.because,
                },
            })
        })
        .collect();
    json!({"source": source, "tools": tools})
}

/// `bulwark tools`.
pub fn run(args: &ToolsArgs) -> Result<ExitCode> {
    let policy = config::load_policy(&args.common)?;
    let mut listed = Vec::new();
    if let Some(path) = &args.from {
        listed.push(from_file(path)?);
    } else if !args.command.is_empty() {
        listed.push(from_server(
            &args.command,
            &args.env,
            &policy,
            args.timeout,
        )?);
    } else {
        // The policy's own servers, each as the gateway would start it.
        for s in &policy.servers {
            match &s.upstream {
                ServerUpstream::Command { argv, env } => {
                    let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
                    let mut env = env.clone();
                    env.extend(args.env.iter().cloned());
                    let mut l = from_server(&argv, &env, &policy, args.timeout)?;
                    l.source = format!("server {} ({})", s.name, l.source);
                    listed.push(l);
                }
                ServerUpstream::Url { url, .. } => {
                    eprintln!(
                        "server {}: {url} is remote; list it with --from and a saved tools/list result",
                        s.name
                    );
                }
            }
        }
        if listed.is_empty() {
            bail!(
                "nothing to list: give a server after `--` (bulwark tools -- npx -y server), \
                 a tools JSON with --from FILE, or a policy with `servers:`"
            );
        }
    }
    let mut docs = Vec::new();
    for (i, l) in listed.iter().enumerate() {
        let reviewed = toolset::review(&policy, &l.tools);
        if args.json {
            docs.push(as_json(&l.source, &reviewed));
        } else {
            if i > 0 {
                println!();
            }
            print!("{}", toolset::render(&l.source, &reviewed));
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&Value::Array(docs))?);
    }
    Ok(ExitCode::SUCCESS)
}

/// `bulwark init --from-server PATH -- COMMAND`: the server's tools as a reviewed mapping
/// to confirm. Inference runs against the built-in policy, so what is written is what the
/// words say, not what some other policy already maps.
pub fn init_from_server(args: &InitArgs) -> Result<ExitCode> {
    let policy = Policy::builtin().map_err(|e| anyhow::anyhow!("built-in policy: {e}"))?;
    let l = from_server(&args.command, &args.env, &policy, args.timeout)?;
    let reviewed = toolset::review(&policy, &l.tools);
    let yaml = toolset::mapping_yaml(&l.source, &reviewed);
    // Never hand a person a file the loader would refuse.
    bulwark_policy::load_str(&args.path.display().to_string(), &yaml)
        .map_err(|e| anyhow::anyhow!("the written mapping does not load (a bug): {e}"))?;
    std::fs::write(&args.path, yaml)
        .with_context(|| format!("cannot write {}", args.path.display()))?;
    println!(
        "wrote a mapping for {} tools of `{}` to {}; review every entry, then check it with \
         `bulwark policy check {}`",
        reviewed.len(),
        l.source,
        args.path.display(),
        args.path.display()
    );
    Ok(ExitCode::SUCCESS)
}
