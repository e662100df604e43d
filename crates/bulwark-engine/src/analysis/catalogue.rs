//! Built-in knowledge of common tool names (Claude Code, Cursor, MCP reference servers,
//! LangChain tools, …), matched case-insensitively. The policy's reviewed mapping comes
//! first; this catalogue answers for the names nobody mapped.

use bulwark_policy::{CapSet, Capability as C, Taint, TaintSet};

/// What kind of argument analysis a tool gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Runs shell commands.
    Shell,
    /// Runs code in an interpreter.
    Code,
    /// Fetches URLs.
    Fetch,
    /// Searches the web through its own provider (no destination argument).
    Search,
    /// Reads files.
    Read,
    /// Writes files.
    Write,
    /// Deletes files.
    Delete,
    /// Runs SQL.
    Sql,
    /// Sends messages.
    Message,
    /// Reads messages (email, chat) written by others.
    Inbox,
    /// Actuates devices.
    Actuate,
    /// Reads sensors.
    Sense,
    /// The agent's own bookkeeping: to-do lists, plans, subagents, questions to the user.
    /// No capability of its own (a subagent's calls are checked as they are made).
    Agent,
}

/// A catalogue entry.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The tool's kind.
    pub kind: Kind,
}

impl Entry {
    /// Capabilities a tool of this kind has before its arguments are read.
    pub fn capabilities(self) -> CapSet {
        let caps: &[C] = match self.kind {
            Kind::Shell => &[C::ExecShell],
            Kind::Code => &[C::ExecArbitrary],
            Kind::Fetch | Kind::Search => &[C::NetEgress],
            Kind::Read => &[C::FsRead],
            Kind::Write => &[C::FsWrite],
            Kind::Delete => &[C::FsWrite, C::ExecIrreversible],
            Kind::Sql => &[],
            Kind::Message => &[C::MsgSend],
            Kind::Inbox => &[],
            Kind::Actuate => &[C::DeviceActuate],
            Kind::Sense => &[C::DeviceSense],
            Kind::Agent => &[],
        };
        caps.iter().copied().collect()
    }

    /// Taint the tool's results carry regardless of capability.
    pub fn taint(self) -> TaintSet {
        match self.kind {
            Kind::Inbox => [Taint::UntrustedInput, Taint::PrivateData]
                .into_iter()
                .collect(),
            Kind::Search | Kind::Fetch => [Taint::UntrustedInput].into_iter().collect(),
            _ => TaintSet::NONE,
        }
    }
}

const TABLE: &[(&str, Kind)] = &[
    // shells
    ("bash", Kind::Shell),
    ("sh", Kind::Shell),
    ("zsh", Kind::Shell),
    ("shell", Kind::Shell),
    ("terminal", Kind::Shell),
    ("run_terminal_cmd", Kind::Shell),
    ("run_terminal_command", Kind::Shell),
    ("run_command", Kind::Shell),
    ("execute_command", Kind::Shell),
    ("exec_command", Kind::Shell),
    ("run_shell_command", Kind::Shell),
    ("shell_exec", Kind::Shell),
    ("execute_shell", Kind::Shell),
    ("execute_bash", Kind::Shell),
    ("run_bash", Kind::Shell),
    ("local_shell", Kind::Shell),
    ("container.exec", Kind::Shell),
    ("exec", Kind::Shell),
    ("cmd", Kind::Shell),
    ("powershell", Kind::Shell),
    // interpreters
    ("python", Kind::Code),
    ("run_python", Kind::Code),
    ("execute_python", Kind::Code),
    ("python_repl", Kind::Code),
    ("code_interpreter", Kind::Code),
    ("run_code", Kind::Code),
    ("execute_code", Kind::Code),
    ("eval", Kind::Code),
    ("run_javascript", Kind::Code),
    ("javascript", Kind::Code),
    // fetchers
    ("fetch", Kind::Fetch),
    ("web_fetch", Kind::Fetch),
    ("webfetch", Kind::Fetch),
    ("fetch_url", Kind::Fetch),
    ("url_fetch", Kind::Fetch),
    ("http_request", Kind::Fetch),
    ("http_get", Kind::Fetch),
    ("http_post", Kind::Fetch),
    ("requests_get", Kind::Fetch),
    ("requests_post", Kind::Fetch),
    ("curl", Kind::Fetch),
    ("browse", Kind::Fetch),
    ("browser_navigate", Kind::Fetch),
    ("navigate", Kind::Fetch),
    ("open_url", Kind::Fetch),
    ("read_url", Kind::Fetch),
    ("get_url", Kind::Fetch),
    ("scrape", Kind::Fetch),
    ("scrape_url", Kind::Fetch),
    ("firecrawl_scrape", Kind::Fetch),
    ("call_api", Kind::Fetch),
    // search
    ("web_search", Kind::Search),
    ("websearch", Kind::Search),
    ("search_web", Kind::Search),
    ("brave_web_search", Kind::Search),
    ("tavily_search", Kind::Search),
    ("google_search", Kind::Search),
    ("duckduckgo_search", Kind::Search),
    // files
    ("read_file", Kind::Read),
    ("read", Kind::Read),
    ("view", Kind::Read),
    ("cat", Kind::Read),
    ("read_text_file", Kind::Read),
    ("read_media_file", Kind::Read),
    ("read_multiple_files", Kind::Read),
    ("get_file_contents", Kind::Read),
    ("open_file", Kind::Read),
    ("list_directory", Kind::Read),
    ("list_dir", Kind::Read),
    ("ls", Kind::Read),
    ("glob", Kind::Read),
    ("grep", Kind::Read),
    ("search_files", Kind::Read),
    ("directory_tree", Kind::Read),
    ("get_file_info", Kind::Read),
    ("notebookread", Kind::Read),
    ("write_file", Kind::Write),
    ("write", Kind::Write),
    ("edit", Kind::Write),
    ("edit_file", Kind::Write),
    ("multiedit", Kind::Write),
    ("create_file", Kind::Write),
    ("str_replace_editor", Kind::Write),
    ("str_replace_based_edit_tool", Kind::Write),
    ("apply_patch", Kind::Write),
    ("notebookedit", Kind::Write),
    ("move_file", Kind::Write),
    ("create_directory", Kind::Write),
    ("delete_file", Kind::Delete),
    ("remove_file", Kind::Delete),
    ("delete_directory", Kind::Delete),
    // databases
    ("execute_sql", Kind::Sql),
    ("run_sql", Kind::Sql),
    ("sql", Kind::Sql),
    ("sql_query", Kind::Sql),
    ("query", Kind::Sql),
    ("execute_query", Kind::Sql),
    ("run_query", Kind::Sql),
    ("read_query", Kind::Sql),
    ("write_query", Kind::Sql),
    ("postgres_query", Kind::Sql),
    ("mysql_query", Kind::Sql),
    ("sqlite_query", Kind::Sql),
    ("db_query", Kind::Sql),
    // messages
    ("send_email", Kind::Message),
    ("send_mail", Kind::Message),
    ("email_send", Kind::Message),
    ("gmail_send", Kind::Message),
    ("gmail_send_email", Kind::Message),
    ("send_message", Kind::Message),
    ("post_message", Kind::Message),
    ("slack_post_message", Kind::Message),
    ("slack_send_message", Kind::Message),
    ("send_slack_message", Kind::Message),
    ("send_sms", Kind::Message),
    ("send_text", Kind::Message),
    ("post_tweet", Kind::Message),
    ("create_post", Kind::Message),
    ("send_notification", Kind::Message),
    ("read_email", Kind::Inbox),
    ("get_email", Kind::Inbox),
    ("read_emails", Kind::Inbox),
    ("search_emails", Kind::Inbox),
    ("list_emails", Kind::Inbox),
    ("gmail_read", Kind::Inbox),
    ("slack_get_messages", Kind::Inbox),
    ("read_messages", Kind::Inbox),
    // devices
    ("actuate", Kind::Actuate),
    ("control_device", Kind::Actuate),
    ("set_device_state", Kind::Actuate),
    ("unlock_door", Kind::Actuate),
    ("set_thermostat", Kind::Actuate),
    ("read_sensor", Kind::Sense),
    ("get_sensor_data", Kind::Sense),
    // the agent's own bookkeeping (Claude Code and others); exact names only, see `lookup`
    ("todowrite", Kind::Agent),
    ("todoread", Kind::Agent),
    ("exitplanmode", Kind::Agent),
    ("task", Kind::Agent),
    ("agent", Kind::Agent),
    ("askuserquestion", Kind::Agent),
];

/// The entry for exactly `name` (case-insensitive), not for its last namespaced part.
pub fn lookup_exact(name: &str) -> Option<Entry> {
    TABLE
        .iter()
        .find(|(t, _)| t.eq_ignore_ascii_case(name))
        .map(|(_, kind)| Entry { kind: *kind })
}

/// Looks a tool up by name, ignoring case. MCP-style prefixes (`server__tool`,
/// `mcp__server__tool`, `server.tool`) are stripped before the lookup — except for the
/// agent's own bookkeeping tools, which grant no capabilities: a server's `evil__task` is
/// not Claude Code's `Task`.
///
/// ```
/// use bulwark_engine::analysis::catalogue::{lookup, Kind};
/// assert_eq!(lookup("Bash").unwrap().kind, Kind::Shell);
/// assert_eq!(lookup("mcp__postgres__query").unwrap().kind, Kind::Sql);
/// assert_eq!(lookup("Task").unwrap().kind, Kind::Agent);
/// assert!(lookup("mcp__evil__task").is_none());
/// assert!(lookup("frobnicate").is_none());
/// ```
pub fn lookup(name: &str) -> Option<Entry> {
    let find = |n: &str| {
        TABLE
            .iter()
            .find(|(t, _)| t.eq_ignore_ascii_case(n))
            .map(|(_, kind)| Entry { kind: *kind })
    };
    find(name).or_else(|| {
        let base = name.rsplit("__").next().unwrap_or(name);
        let base = base.rsplit('.').next().unwrap_or(base);
        (base != name)
            .then(|| find(base))
            .flatten()
            .filter(|e| e.kind != Kind::Agent)
    })
}

/// Argument names that hold each kind of thing, in order of preference.
pub const COMMAND_KEYS: &[&str] = &["command", "cmd", "script", "commands", "shell_command"];
/// Argument names that carry a command wherever they sit in the arguments (matched by
/// their last word: `pre_command`, `options.exec`, `shellCmd`), besides the one analysed.
pub const NESTED_COMMAND_KEYS: &[&str] = &["command", "cmd", "commands", "exec"];
/// Argument names that hold code for an interpreter.
pub const CODE_KEYS: &[&str] = &["code", "source", "script", "program"];
/// Argument names that hold SQL.
pub const SQL_KEYS: &[&str] = &["sql", "query", "statement", "sql_query", "q"];
/// Argument names that hold a URL or host.
pub const URL_KEYS: &[&str] = &[
    "url",
    "uri",
    "href",
    "link",
    "endpoint",
    "target_url",
    "webhook_url",
    "webhook",
    "destination",
    "host",
    "hostname",
    "address",
    "server_url",
    "base_url",
    "urls",
];
/// Argument names that can only hold a host.
pub const HOST_KEYS: &[&str] = &["host", "hostname", "server", "ip", "ip_address"];
/// Argument names that hold a path.
pub const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filepath",
    "file",
    "filename",
    "paths",
    "target_file",
    "notebook_path",
    "source",
    "destination",
    "directory",
    "dir",
];
