//! The command line: every command and option, with the help text `bulwark --help` prints.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Bulwark decides AI-agent tool calls: allow, warn, mask, ask a human, or block.
#[derive(Debug, Parser)]
#[command(name = "bulwark", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Options every evaluating command shares.
#[derive(Debug, Args)]
pub struct Common {
    /// Policy file (YAML). Without one, the built-in `default` policy is used.
    #[arg(long, short = 'p', value_name = "FILE", env = "BULWARK_POLICY")]
    pub policy: Option<PathBuf>,
    /// Where Bulwark keeps state (pins, keys, approvals). Default: $XDG_STATE_HOME/bulwark.
    #[arg(long, value_name = "DIR", env = "BULWARK_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
}

/// Commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Decide tool calls given as JSON Lines; print one decision per line.
    ///
    /// Each input line is an object: `tool` (required), `args`, `result`, `description` and
    /// `input_schema`, `direction` (request | response | definition | proposal), `session`,
    /// `principal`, `server`, `tool_hash`, `destination`, `capabilities`, `expect`,
    /// `session_taint`, `time_ms`. Lines with the same `session` share state; a line with no
    /// `session` gets a fresh one. When any line has `expect`, the run ends with
    /// `N passed, N failed` and exits 1 on a mismatch. See docs/check.md.
    Check(CheckArgs),
    /// Scan text or JSON for secrets, PII, injection, poisoning and hidden text.
    ///
    /// JSON input is scanned string by string (as the gateways do) and stays valid JSON when
    /// masked. Exit status: 0 when nothing of medium severity or above was found, 1 when
    /// something was, 2 on error.
    Scan(ScanArgs),
    /// Analyse a shell command line (or SQL with --sql) the way the engine does.
    ///
    /// Prints every command the line runs after unwrapping (sudo, env, timeout, xargs,
    /// find -exec, bash -c, eval, ssh, docker exec, here-documents, pipes into a shell),
    /// with its normalised flags, what it reads, writes and reaches, its capabilities and
    /// the reasons for them, the line's structural facts and any parse error. Exit status:
    /// 0 when the line is neither irreversible nor arbitrary code, 1 when it is (or could
    /// not be read), 2 on error.
    Shell(ShellArgs),
    /// Write a commented starter policy (the built-in default, spelled out).
    Init(InitArgs),
    /// Validate, summarise and explain policies.
    #[command(subcommand)]
    Policy(PolicyCommand),
}

/// `bulwark check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: Common,
    /// Append one decision JSON line per decision to this file.
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// JSON Lines files to read; standard input when none (or `-`).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// `bulwark scan`.
#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Print findings as JSON.
    #[arg(long, conflicts_with = "mask")]
    pub json: bool,
    /// Print the input with findings replaced by placeholders instead.
    #[arg(long)]
    pub mask: bool,
    /// Which way the text travels: request (tool arguments), response (tool results) or
    /// definition (tool descriptions). Selects detectors.
    #[arg(long = "as", value_name = "DIRECTION", default_value = "response", value_parser = ["request", "response", "definition"])]
    pub direction: String,
    /// The file to scan; standard input when absent or `-`.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// `bulwark shell`.
#[derive(Debug, Args)]
pub struct ShellArgs {
    /// Print the analysis as JSON.
    #[arg(long)]
    pub json: bool,
    /// Read the text as SQL instead of a shell command line.
    #[arg(long)]
    pub sql: bool,
    /// The command line; standard input when absent or `-`.
    #[arg(value_name = "TEXT")]
    pub text: Option<String>,
}

/// `bulwark init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where to write it.
    #[arg(value_name = "PATH", default_value = "bulwark.yaml")]
    pub path: PathBuf,
    /// Overwrite an existing file.
    #[arg(long)]
    pub force: bool,
}

/// `bulwark policy …`.
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Validate a policy file: print a summary, or every error as FILE:LINE:COLUMN; exit 1 on error.
    Check {
        /// The policy file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Show how one call (a `bulwark check` line) is decided, stage by stage, with timings.
    Explain {
        /// Shared options.
        #[command(flatten)]
        common: Common,
        /// The call as one JSON line; read from standard input when absent.
        #[arg(value_name = "JSON")]
        line: Option<String>,
    },
    /// List the named predicates rules can use.
    Predicates,
    /// Print the built-in default policy.
    Default,
}
