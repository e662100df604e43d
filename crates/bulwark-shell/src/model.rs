//! What the analysis reports: every command a line runs (after unwrapping), what each can
//! do, and the line's structural facts.

use crate::argv::Argv;
use crate::sql::SqlAnalysis;

/// What a command can do, in Bulwark's capability vocabulary (names match the policy's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cap {
    /// Reads files.
    FsRead,
    /// Writes, moves or deletes files.
    FsWrite,
    /// Sends data over the network.
    NetEgress,
    /// Sends a message (mail).
    MsgSend,
    /// Runs code the line does not show.
    ExecArbitrary,
    /// Destroys or publishes something that cannot be taken back.
    ExecIrreversible,
    /// Reads a database.
    DbRead,
    /// Writes a database.
    DbWrite,
    /// Changes a database's structure or privileges.
    DbAdmin,
}

impl Cap {
    /// Every capability, in order.
    pub const ALL: [Cap; 9] = [
        Cap::FsRead,
        Cap::FsWrite,
        Cap::NetEgress,
        Cap::MsgSend,
        Cap::ExecArbitrary,
        Cap::ExecIrreversible,
        Cap::DbRead,
        Cap::DbWrite,
        Cap::DbAdmin,
    ];

    /// The policy vocabulary's name.
    pub fn name(self) -> &'static str {
        match self {
            Cap::FsRead => "fs.read",
            Cap::FsWrite => "fs.write",
            Cap::NetEgress => "net.egress",
            Cap::MsgSend => "msg.send",
            Cap::ExecArbitrary => "exec.arbitrary",
            Cap::ExecIrreversible => "exec.irreversible",
            Cap::DbRead => "db.read",
            Cap::DbWrite => "db.write",
            Cap::DbAdmin => "db.admin",
        }
    }
}

/// A set of [`Cap`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Caps(u16);

impl Caps {
    /// Adds one.
    pub fn insert(&mut self, c: Cap) {
        self.0 |= 1 << c as u16;
    }

    /// Whether it holds `c`.
    pub fn contains(self, c: Cap) -> bool {
        self.0 & (1 << c as u16) != 0
    }

    /// Both sets.
    pub fn union(self, other: Caps) -> Caps {
        Caps(self.0 | other.0)
    }

    /// Whether it is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The members, in [`Cap::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Cap> {
        Cap::ALL.into_iter().filter(move |c| self.contains(*c))
    }
}

/// Why a command has a capability, for people and for the decision's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason {
    /// The capability.
    pub cap: Cap,
    /// What the command does, e.g. `rm -r -f on /`.
    pub text: String,
}

/// One command the line runs, after wrappers, `-c` strings, substitutions, here-documents
/// and pipes into shells have been unwrapped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Invocation {
    /// The program: basename, lower case (`/usr/bin/Bash` is `bash`).
    pub name: String,
    /// The command word as written, quotes removed.
    pub written: String,
    /// The words after the program name, quotes removed and known variables replaced.
    pub words: Vec<String>,
    /// Options and operands, parsed with the program's own grammar.
    pub argv: Argv,
    /// The operands with paths normalised ([`crate::paths::normalize`]): what rules match.
    pub args: Vec<String>,
    /// Some word is only known at run time.
    pub dynamic: bool,
    /// How it was reached, outermost first: `sudo`, `bash -c`, `ssh host`, `$(…)`, `pipe`,
    /// `here-doc`, `xargs`, `find -exec`, `eval`, `watch`, `python -c`, …
    pub via: Vec<String>,
    /// The host it runs on, when it runs remotely (`ssh host 'cmd'`).
    pub remote: Option<String>,
    /// Files it reads.
    pub reads: Vec<String>,
    /// Files it writes (redirect targets, copy destinations, `dd of=`, …).
    pub writes: Vec<String>,
    /// URLs and hosts it reaches.
    pub destinations: Vec<String>,
    /// Inline program text it runs (`python -c CODE`, a here-document fed to `node`).
    pub code: Option<String>,
    /// What it can do.
    pub caps: Caps,
    /// Why.
    pub reasons: Vec<Reason>,
    /// Structural facts about this command (see [`PREDICATES`]).
    pub predicates: Vec<&'static str>,
}

impl Invocation {
    /// Records a capability with its reason.
    pub fn because(&mut self, cap: Cap, text: impl Into<String>) {
        self.caps.insert(cap);
        let text = text.into();
        if !self.reasons.iter().any(|r| r.cap == cap && r.text == text) {
            self.reasons.push(Reason { cap, text });
        }
    }

    /// Records a predicate once.
    pub fn fact(&mut self, p: &'static str) {
        if !self.predicates.contains(&p) {
            self.predicates.push(p);
        }
    }

    /// The command as a person would write it (for messages).
    pub fn display(&self) -> String {
        let mut s = self.name.clone();
        for w in self.words.iter().take(8) {
            s.push(' ');
            s.push_str(w);
        }
        if self.words.len() > 8 {
            s.push_str(" …");
        }
        s
    }
}

/// What a file written by a command holds, as far as the writer showed it: what a later
/// command that runs the file runs (`cat > x.sh <<EOF … EOF; sh x.sh`,
/// `curl -o i.sh URL && sh i.sh`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileContent {
    /// The whole text (a here-document, `printf … >`, `echo … | tee`).
    Text(String),
    /// Text appended to a file whose start the line did not show.
    Appended(String),
    /// A download.
    Fetched,
    /// Decoded or decompressed text of unknown origin.
    Decoded,
    /// Overwritten with something not shown: forget what was known.
    Unknown,
}

/// The analysis of a command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Every command found, in order of appearance (outer commands before what they run).
    pub invocations: Vec<Invocation>,
    /// The union of the commands' capabilities (the worst part wins).
    pub caps: Caps,
    /// Every destination reached.
    pub destinations: Vec<String>,
    /// Every file read.
    pub reads: Vec<String>,
    /// Every file written.
    pub writes: Vec<String>,
    /// Every reason.
    pub reasons: Vec<Reason>,
    /// Structural facts about the line and its commands.
    pub predicates: Vec<&'static str>,
    /// SQL run through database clients (`psql -c`, `mysql -e`, here-documents).
    pub sql: Vec<SqlAnalysis>,
    /// Parse errors, outermost first; any error makes the line `exec.arbitrary`.
    pub errors: Vec<String>,
    /// Files the line wrote, with what they hold as far as the line showed it (normalised
    /// paths, last write wins), for a caller that remembers them across a session's lines
    /// ([`crate::analyse_in`]).
    pub written: Vec<(String, FileContent)>,
}

impl Analysis {
    /// Records a predicate once.
    pub fn fact(&mut self, p: &'static str) {
        if !self.predicates.contains(&p) {
            self.predicates.push(p);
        }
    }

    /// Whether a predicate holds.
    pub fn has(&self, p: &str) -> bool {
        self.predicates.contains(&p)
    }
}

/// Every predicate the command analysis can report, with its meaning.
pub const PREDICATES: &[(&str, &str)] = &[
    (
        "shell.unparsable",
        "a shell command (or text it runs) could not be parsed or exceeded a limit",
    ),
    (
        "shell.pipe_to_shell",
        "output of a command is piped into a shell or interpreter that runs it",
    ),
    (
        "shell.fetch_to_shell",
        "downloaded text reaches a shell or interpreter (pipe, $(…), <(…), eval)",
    ),
    (
        "shell.decode_to_shell",
        "decoded text (base64, hex, compressed) reaches a shell or interpreter",
    ),
    (
        "shell.interpreter_inline",
        "an interpreter runs inline code (-c, -e, -r, a here-document)",
    ),
    (
        "shell.eval_dynamic",
        "eval or a -c string runs text only known at run time",
    ),
    (
        "shell.eval_dynamic_process",
        "inline code evaluates code known only at run time and can start processes or open sockets (os, subprocess, child_process, net, …)",
    ),
    (
        "shell.variable_command",
        "the command name is a variable or substitution",
    ),
    (
        "shell.unknown_destructive",
        "a program nobody can name (a variable, a substitution, an unknown program) given arguments that destroy the system for a destructive one (-rf /, -R 000 /)",
    ),
    (
        "shell.unknown_recursive",
        "a program nobody can name given a recursive option on a path outside the workspace",
    ),
    (
        "shell.script_file",
        "a shell or interpreter runs a script file the line does not show",
    ),
    (
        "shell.unknown_program",
        "a program outside the known catalogue, or one run by a workspace path",
    ),
    (
        "shell.reverse_shell",
        "a shell bound to a network connection (reverse or bind shell)",
    ),
    (
        "shell.listener",
        "starts a network listener (nc -l, socat TCP-LISTEN, http.server)",
    ),
    (
        "shell.tunnel",
        "exposes the host through a tunnel (ssh -R/-D, ngrok, cloudflared tunnel)",
    ),
    (
        "shell.interactive",
        "a shell or interpreter reads commands from its input or terminal",
    ),
    (
        "shell.runs_project_code",
        "runs the project's own build, test or task scripts (make, npm test, cargo build, …)",
    ),
    (
        "shell.installs_packages",
        "installs packages from a registry (their install scripts run)",
    ),
    (
        "shell.remote_api",
        "a CLI for a cloud, SaaS or cluster API (aws, gcloud, kubectl, gh, vault, …)",
    ),
    (
        "shell.secret_read",
        "reads a secret's plaintext from a secret manager (aws secretsmanager, vault, op, …)",
    ),
    (
        "shell.pipe_to_network",
        "another command's output is piped into something that sends it (ssh, nc, curl -d @-)",
    ),
    (
        "shell.privileged",
        "runs through sudo, doas, su, pkexec or runuser",
    ),
    (
        "shell.remote",
        "runs a command on another host (ssh host 'cmd')",
    ),
    (
        "shell.dev_tcp",
        "opens a connection with a /dev/tcp or /dev/udp redirection",
    ),
    (
        "shell.sensitive_read",
        "reads a credential store (~/.ssh, ~/.aws, .env, /etc/shadow, browser profiles, …)",
    ),
    (
        "shell.env_dump",
        "prints the environment (env, printenv, export -p)",
    ),
    (
        "shell.secret_to_network",
        "a credential or environment read and a network send in one command line",
    ),
    (
        "shell.upload",
        "sends a local file over the network (curl -F @f, -T, scp push, …)",
    ),
    (
        "shell.dynamic_destination",
        "a network destination computed at run time (DNS exfiltration shape)",
    ),
    (
        "shell.history_tamper",
        "turns off or clears shell history (HISTFILE, history -c, set +o history)",
    ),
    (
        "shell.proxy_override",
        "changes or removes proxy settings (HTTP(S)_PROXY, NO_PROXY, ALL_PROXY)",
    ),
    (
        "shell.ld_preload",
        "sets LD_PRELOAD (or LD_AUDIT, DYLD_INSERT_LIBRARIES) for a command",
    ),
    (
        "shell.http_delete",
        "sends an HTTP DELETE (curl -X DELETE, http DELETE, gh api -X DELETE)",
    ),
    (
        "shell.device_write",
        "writes a block device or partition table (dd of=/dev/…, mkfs, wipefs)",
    ),
    (
        "shell.dd_overwrite",
        "dd from an endless source (/dev/zero, /dev/urandom) with no count=, or onto a file outside the workspace",
    ),
    (
        "shell.privilege_change",
        "grants privilege: setuid bits, world-writable modes, recursive chown to root, sudo groups",
    ),
    (
        "shell.fork_bomb",
        "a function calls itself with nothing to stop it (`:(){ :|:& };:`): the host runs out of processes",
    ),
    (
        "shell.permission_wreck",
        "a recursive chown/chmod/chgrp over /, a top-level system directory or (modes) a home directory",
    ),
    (
        "shell.git_command_config",
        "git config keeps a command for later git operations (core.sshCommand, alias.x '!…', filters, an outside hooks directory)",
    ),
];

/// Whether `name` is a command-analysis predicate.
pub fn is_predicate(name: &str) -> bool {
    PREDICATES.iter().any(|(n, _)| *n == name)
        || crate::sql::PREDICATES.iter().any(|(n, _)| *n == name)
}
