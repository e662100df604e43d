//! What one command can do: the capabilities, destinations, files read and written,
//! irreversible effects and structural facts of an [`Invocation`], from its program and its
//! parsed options (never from substrings of the line).

// One arm per program reads better than guards folded into patterns.
#![allow(clippy::collapsible_match)]

use crate::model::{Analysis, Cap, Invocation};
use crate::paths::{self, looks_like_path, normalize};
use crate::programs::{self as p};
use crate::specs::family;
use crate::walk::{Output, Stdin};

/// Redirections of one command.
#[derive(Clone, Debug, Default)]
pub(crate) struct Io {
    pub reads: Vec<String>,
    pub writes: Vec<String>,
    pub destinations: Vec<String>,
    /// A `/dev/tcp` or `/dev/udp` redirection.
    pub dev_tcp: bool,
    /// A descriptor duplication (`>&2`, `0<&3`).
    pub fd_dup: bool,
}

impl Io {
    pub fn is_empty(&self) -> bool {
        self.reads.is_empty() && self.writes.is_empty() && self.destinations.is_empty()
    }
}

/// Adds a command's redirections to it.
pub(crate) fn apply_io(inv: &mut Invocation, io: &Io) {
    for r in &io.reads {
        push(&mut inv.reads, r);
    }
    for w in &io.writes {
        push(&mut inv.writes, w);
    }
    for d in &io.destinations {
        push(&mut inv.destinations, d);
    }
    if io.dev_tcp {
        inv.because(
            Cap::NetEgress,
            "connects through a /dev/tcp or /dev/udp redirection",
        );
        inv.fact("shell.dev_tcp");
    }
}

fn push(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_string());
    }
}

/// `LD_PRELOAD` and friends load code into whatever runs next. (`LD_LIBRARY_PATH` only
/// chooses where libraries come from, as builds and tests do.)
pub(crate) fn is_loader_variable(name: &str) -> bool {
    matches!(name, "LD_PRELOAD" | "LD_AUDIT" | "DYLD_INSERT_LIBRARIES")
}

/// A variable assigned (or, with `unset`, removed) on the line.
pub(crate) fn assignment(a: &mut Analysis, name: &str, value: &str) {
    let v = value.trim();
    match name {
        "HISTFILE" if v.is_empty() || v == "/dev/null" => a.fact("shell.history_tamper"),
        "HISTSIZE" | "HISTFILESIZE" | "SAVEHIST" if v.is_empty() || v == "0" => {
            a.fact("shell.history_tamper")
        }
        "HISTIGNORE" if v.contains('*') => a.fact("shell.history_tamper"),
        "HISTCONTROL" if v.contains("ignorespace") || v.contains("ignoreboth") => {
            a.fact("shell.history_tamper")
        }
        _ if name.eq_ignore_ascii_case("http_proxy")
            || name.eq_ignore_ascii_case("https_proxy")
            || name.eq_ignore_ascii_case("all_proxy")
            || name.eq_ignore_ascii_case("no_proxy") =>
        {
            a.fact("shell.proxy_override")
        }
        _ if is_loader_variable(name) => a.fact("shell.ld_preload"),
        _ => {}
    }
}

/// Database clients whose arguments or input are SQL.
pub(crate) fn is_sql_client(name: &str) -> bool {
    matches!(
        name,
        "psql"
            | "mysql"
            | "mariadb"
            | "sqlite3"
            | "sqlite"
            | "duckdb"
            | "cockroach"
            | "clickhouse-client"
            | "clickhouse"
            | "cqlsh"
            | "snowsql"
            | "bq"
            | "usql"
            | "sqlcmd"
            | "pgcli"
            | "mycli"
            | "litecli"
    )
}

/// Values following any of `flags` in the raw words (`-c SQL`, `--command=SQL`).
fn raw_values(words: &[String], flags: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if flags.contains(&w.as_str()) {
            if let Some(v) = words.get(i + 1) {
                out.push(v.clone());
            }
            i += 2;
            continue;
        }
        for f in flags {
            if f.starts_with("--")
                && let Some(v) = w.strip_prefix(f).and_then(|r| r.strip_prefix('='))
            {
                out.push(v.to_string());
            }
        }
        i += 1;
    }
    out
}

/// The SQL a database client runs.
pub(crate) fn sql_texts(inv: &Invocation, stdin: &Stdin) -> Vec<String> {
    let w = &inv.words;
    let mut out = match family(&inv.name) {
        "psql" | "usql" | "pgcli" => raw_values(w, &["-c", "--command"]),
        "mysql" | "mycli" => raw_values(w, &["-e", "--execute"]),
        "sqlite3" | "sqlite" | "litecli" => {
            let mut v = raw_values(w, &["-cmd", "--cmd"]);
            let ops: Vec<&String> = w.iter().filter(|x| !x.starts_with('-')).collect();
            if ops.len() > 1 {
                v.push(
                    ops[1..]
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                );
            }
            v
        }
        "duckdb" => raw_values(w, &["-c"]),
        "cockroach" | "cqlsh" => raw_values(w, &["-e", "--execute"]),
        "clickhouse-client" | "clickhouse" | "snowsql" => raw_values(w, &["-q", "--query"]),
        "sqlcmd" => raw_values(w, &["-Q", "-q"]),
        "bq" if w.first().is_some_and(|s| s == "query") => w
            .iter()
            .skip(1)
            .filter(|x| !x.starts_with('-'))
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    // Attached and clustered forms (`-c'DROP …'`, `-Xc '…'`) through the parsed options.
    let parsed: &[&str] = match family(&inv.name) {
        "psql" => &["c"],
        "mysql" => &["e"],
        "sqlite3" => &["cmd"],
        _ => &[],
    };
    for key in parsed {
        for v in inv.argv.values(key) {
            if !out.iter().any(|o| o == v) {
                out.push(v.to_string());
            }
        }
    }
    if out.is_empty()
        && let Stdin::Text(t) | Stdin::Pipe(Output::Literal(t)) = stdin
    {
        out.push(t.clone());
    }
    out
}

/// Whether a database client runs a script the line does not show (`-f file`, `< file`).
pub(crate) fn sql_script(inv: &Invocation, stdin: &Stdin) -> bool {
    matches!(
        stdin,
        Stdin::File(_) | Stdin::Pipe(Output::Other | Output::Fetch | Output::Decode)
    ) || !raw_values(&inv.words, &["-f", "--file", "-i", "--init", "-init"]).is_empty()
}

/// What a command prints, for a pipe into a shell.
pub(crate) fn output(inv: &Invocation, stdin: &Stdin, from: Output) -> Output {
    let name = inv.name.as_str();
    let a = &inv.argv;
    let piped = |stdin: &Stdin| match stdin {
        Stdin::Pipe(o) => Some(o.clone()),
        Stdin::Text(t) => Some(Output::Literal(t.clone())),
        _ => None,
    };
    if p::FETCHERS.contains(&name) {
        let to_file = match name {
            "curl" => {
                a.flag("O") || a.value("o").is_some_and(|o| o != "-") || a.flag("remote-name-all")
            }
            "wget" => a.value("O") != Some("-"),
            "aria2c" | "axel" => true,
            _ => a.value("o").is_some_and(|o| o != "-") || a.flag("download") || a.flag("d"),
        };
        return if to_file {
            Output::Nothing
        } else {
            Output::Fetch
        };
    }
    if p::NET_CLIENTS.contains(&name) || name == "openssl" && a.sub() == "s_client" {
        return Output::Net;
    }
    if p::is_decoder(name, &a.flags(), &a.sub()) {
        let input = if a.operands.iter().any(|o| o != "-") && !matches!(name, "tr" | "openssl") {
            None
        } else {
            piped(stdin)
        };
        return match input {
            Some(Output::Literal(t)) => match decode_literal(name, &a.flags(), &t) {
                Some(d) => Output::Literal(d),
                None => Output::Decode,
            },
            Some(Output::Fetch) => Output::Fetch,
            Some(Output::Net) => Output::Net,
            _ => Output::Decode,
        };
    }
    match name {
        "echo" | "printf" => {
            if inv.dynamic {
                return match from {
                    Output::Fetch | Output::Decode | Output::Net => from,
                    _ => Output::Other,
                };
            }
            let mut args: Vec<&str> = inv.words.iter().map(String::as_str).collect();
            let mut escapes = name == "printf";
            while let Some(f) = args.first() {
                if name == "echo" && matches!(*f, "-n" | "-e" | "-E" | "-ne" | "-en") {
                    escapes |= f.contains('e');
                    args.remove(0);
                } else {
                    break;
                }
            }
            if name == "printf" {
                if args.first() == Some(&"-v") {
                    // `printf -v var …` prints nothing.
                    return Output::Nothing;
                }
                if args.first() == Some(&"--") {
                    args.remove(0);
                }
                return Output::Literal(printf(&args));
            }
            let text = args.join(" ");
            Output::Literal(if escapes { c_escapes(&text) } else { text })
        }
        "cat" | "tee" | "pv" | "stdbuf" | "buffer" | "mbuffer" => {
            let files: Vec<&String> = a.operands.iter().filter(|o| *o != "-").collect();
            if name == "cat" && !files.is_empty() {
                return Output::Other;
            }
            piped(stdin).unwrap_or(Output::Other)
        }
        _ if p::FILTERS.contains(&name) => match piped(stdin) {
            Some(o @ (Output::Fetch | Output::Decode | Output::Net)) => o,
            _ => Output::Other,
        },
        _ => Output::Other,
    }
}

/// Decodes known text the way the decoder would, when it can.
fn decode_literal(name: &str, _flags: &[String], text: &str) -> Option<String> {
    match name {
        "base64" | "b64decode" | "openssl" => base64(text).and_then(|b| String::from_utf8(b).ok()),
        "xxd" => {
            let hex: String = text.chars().filter(|c| c.is_ascii_hexdigit()).collect();
            if !hex.len().is_multiple_of(2) {
                return None;
            }
            let bytes: Option<Vec<u8>> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
                .collect();
            bytes.and_then(|b| String::from_utf8(b).ok())
        }
        "rev" => Some(
            text.lines()
                .map(|l| l.chars().rev().collect::<String>())
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

/// Standard or URL-safe base64, whitespace ignored, padding optional.
pub(crate) fn base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// PowerShell's `-EncodedCommand`: base64 of UTF-16LE.
pub(crate) fn decode_utf16_base64(text: &str) -> Option<String> {
    let bytes = base64(text)?;
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    String::from_utf16(&units).ok()
}

fn c_escapes(s: &str) -> String {
    crate::words::ansi_c(s)
}

/// What `printf FORMAT ARGS…` prints: the format is reused until the arguments run out;
/// `%s`, `%b`, `%q`, `%d`, `%i`, `%u`, `%x`, `%c` take one argument each (flags and widths
/// are read and ignored), `%%` is a percent sign.
fn printf(args: &[&str]) -> String {
    let Some((format, mut rest)) = args.split_first() else {
        return String::new();
    };
    let format = c_escapes(format);
    let mut out = String::new();
    // Each pass consumes arguments; a format with no conversions prints once.
    for _ in 0..4096 {
        let mut used = false;
        let mut chars = format.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            while chars
                .peek()
                .is_some_and(|c| "-+ #0123456789.*".contains(*c))
            {
                chars.next();
            }
            match chars.next() {
                Some('%') => out.push('%'),
                Some(conv) => {
                    let arg = rest.first().copied().unwrap_or("");
                    if !rest.is_empty() {
                        rest = &rest[1..];
                        used = true;
                    }
                    match conv {
                        'b' => out.push_str(&c_escapes(arg)),
                        'c' => out.extend(arg.chars().next()),
                        _ => out.push_str(arg),
                    }
                }
                None => out.push('%'),
            }
        }
        if !used || rest.is_empty() || out.len() > 64 * 1024 {
            break;
        }
    }
    out
}

/// Programs that list directories or describe files without reading their contents.
const LISTERS: &[&str] = &[
    "ls", "dir", "vdir", "tree", "du", "stat", "exa", "eza", "lsd", "lsattr", "getfacl",
];

const READERS: &[&str] = &[
    "cat",
    "tac",
    "less",
    "more",
    "head",
    "tail",
    "nl",
    "wc",
    "sort",
    "uniq",
    "cut",
    "paste",
    "join",
    "comm",
    "diff",
    "diff3",
    "cmp",
    "file",
    "strings",
    "xxd",
    "od",
    "hexdump",
    "base64",
    "base32",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "jq",
    "yq",
    "bat",
    "view",
    "iconv",
    "fold",
    "fmt",
    "column",
    "pr",
    "zcat",
    "bzcat",
    "xzcat",
    "zless",
    "gpg",
    "gpg2",
    "unshadow",
    "ed",
    "source",
    ".",
    "stat",
    "ls",
    "du",
    "tree",
    "vim",
    "vi",
    "nano",
    "emacs",
    "nvim",
    "code",
    "open",
    "xdg-open",
    "lsattr",
    "getfacl",
    "readlink",
    "realpath",
    "sqlite3",
    "zip",
    "7z",
    "tar",
    "split",
    "csplit",
    "shuf",
    "tr",
    "expand",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "ack",
    "sed",
    "awk",
    "look",
    "uuencode",
    "openssl",
    "ssh-keygen",
    "ssh-add",
    "install",
    "cp",
    "scp",
    "rsync",
    "mv",
    "ln",
];

const WRITE_ALL: &[&str] = &[
    "rm", "rmdir", "unlink", "shred", "srm", "wipe", "touch", "mkdir", "mkfifo", "mknod",
    "truncate", "chmod", "chown", "chgrp", "chattr", "setfacl", "tee", "vi", "vim", "nvim", "nano",
    "emacs", "ed", "ex",
];

/// Top-level directories whose loss breaks the system or the user's files.
const SYSTEM_DIRS: &[&str] = &[
    "bin",
    "boot",
    "dev",
    "etc",
    "home",
    "lib",
    "lib32",
    "lib64",
    "media",
    "mnt",
    "opt",
    "proc",
    "root",
    "run",
    "sbin",
    "srv",
    "sys",
    "usr",
    "var",
    "Users",
    "System",
    "Library",
    "Applications",
    "private",
    "snap",
];

/// The second level the system itself lives in (as `fs.rm_root_or_home` reads it): any
/// directory right under `/usr`, `/lib*`, `/boot` or `/System`, and `/var`'s state.
/// `top` is the path without its leading `/`.
fn is_second_level_system_root(top: &str) -> bool {
    let Some((first, second)) = top.split_once('/') else {
        return false;
    };
    if second.is_empty() || second.contains('/') {
        return false;
    }
    match first {
        "usr" | "lib" | "lib32" | "lib64" | "boot" | "System" => true,
        "var" => matches!(second, "lib" | "log" | "spool" | "mail" | "db" | "backups"),
        _ => false,
    }
}

/// The unknown-command rule: a program nobody can name (a variable, a substitution, a
/// program outside the catalogue) is *any program with these arguments*. Arguments that
/// would be destructive for a destructive program — a recursive, forcing or mode-wiping
/// option on `/`, a home or a top-level system directory, or `--no-preserve-root` — are
/// `shell.unknown_destructive`; a recursive option on another path outside the workspace
/// and the temporary directories is `shell.unknown_recursive`.
fn unknown_program_arguments(inv: &mut Invocation) {
    let mut recursive = false;
    let mut force = false;
    let mut wipe_mode = false;
    let mut no_root_guard = false;
    let mut targets: Vec<String> = Vec::new();
    for w in &inv.words {
        if let Some(long) = w.strip_prefix("--") {
            match long.split('=').next().unwrap_or("") {
                "recursive" => recursive = true,
                "force" => force = true,
                "no-preserve-root" => no_root_guard = true,
                _ => {}
            }
        } else if let Some(short) = w.strip_prefix('-') {
            // Short clusters only: `-O2`, `-j4`, `-x` carry no recursion.
            if short.chars().all(|c| c.is_ascii_alphabetic()) {
                recursive |= short.contains(['r', 'R']);
                force |= short.contains('f');
            }
        } else if (3..=4).contains(&w.len())
            && w.bytes().all(|b| (b'0'..=b'7').contains(&b))
            && (w.ends_with("000") || w.ends_with("777"))
        {
            wipe_mode = true;
        } else {
            targets.push(normalize(w));
        }
    }
    let system = |t: &str| {
        let t = t.trim_end_matches("/*").trim_end_matches('/');
        t.is_empty()
            || t == "~"
            || t == "/*"
            || t.strip_prefix('/').is_some_and(|top| {
                SYSTEM_DIRS.contains(&top)
                    || ["home/", "Users/"].iter().any(|h| {
                        top.strip_prefix(h)
                            .is_some_and(|u| !u.is_empty() && !u.contains('/'))
                    })
                    || is_second_level_system_root(top)
            })
    };
    let outside = |t: &str| {
        (t.starts_with('/') || t.starts_with('~'))
            && !["/tmp", "/var/tmp", "/dev/shm", "/private/tmp"]
                .iter()
                .any(|d| t == *d || t.starts_with(&format!("{d}/")))
    };
    let destructive_option = recursive || force || wipe_mode;
    let who = if inv.predicates.contains(&"shell.variable_command") {
        format!("the command {} (unknown until run time)", inv.name)
    } else {
        format!("{}, a program Bulwark does not know,", inv.name)
    };
    if no_root_guard || destructive_option && targets.iter().any(|t| system(t)) {
        inv.fact("shell.unknown_destructive");
        inv.because(
            Cap::ExecIrreversible,
            format!(
                "{who} is given arguments that destroy the system for a destructive program: {}",
                inv.words.join(" ")
            ),
        );
    } else if recursive && targets.iter().any(|t| outside(t)) {
        inv.fact("shell.unknown_recursive");
        inv.because(
            Cap::ExecIrreversible,
            format!(
                "{who} is given a recursive option on a path outside the workspace: {}",
                inv.words.join(" ")
            ),
        );
    }
}

/// Classifies one command in place.
pub(crate) fn classify(inv: &mut Invocation, stdin: &Stdin) {
    let name = inv.name.clone();
    let fam = family(&name).to_string();
    let a = inv.argv.clone();
    let flags = a.flags();
    let has = |f: &str| flags.iter().any(|x| x == f);
    let ops: Vec<String> = a.operands.iter().map(|o| normalize(o)).collect();
    let sub = a.sub().to_ascii_lowercase();
    let args: Vec<String> = a.args().iter().map(|o| normalize(o)).collect();

    if inv.via.iter().any(|v| {
        let w = v.split_whitespace().next().unwrap_or("");
        matches!(
            w,
            "sudo" | "doas" | "pkexec" | "su" | "runuser" | "gosu" | "su-exec"
        )
    }) {
        inv.fact("shell.privileged");
    }
    if inv.remote.is_some() {
        inv.fact("shell.remote");
    }
    if inv.predicates.contains(&"shell.variable_command") || !p::is_known(&name) {
        unknown_program_arguments(inv);
    }
    if !inv.predicates.contains(&"shell.variable_command") {
        if p::is_local_path(&inv.written) && !name.is_empty() {
            inv.fact("shell.unknown_program");
            inv.because(
                Cap::ExecArbitrary,
                format!("runs {} from a local path", inv.written),
            );
        } else if !p::is_known(&name) && !name.is_empty() && name != ":" {
            inv.fact("shell.unknown_program");
            inv.because(
                Cap::ExecArbitrary,
                format!("{name} is not a program Bulwark knows"),
            );
        }
    }

    // Files read and written.
    if WRITE_ALL.contains(&name.as_str()) {
        let targets: Vec<String> = match name.as_str() {
            "chmod" | "chown" | "chgrp" | "setfacl" => ops.iter().skip(1).cloned().collect(),
            "chattr" => inv
                .words
                .iter()
                .filter(|w| !w.starts_with(['-', '+', '=']))
                .map(|w| normalize(w))
                .collect(),
            _ => ops.clone(),
        };
        for t in targets {
            push(&mut inv.writes, &t);
        }
    } else if matches!(name.as_str(), "cp" | "mv" | "install" | "ln") {
        let target = a.value("t").map(normalize);
        let (srcs, dest): (Vec<String>, Option<String>) = match target {
            Some(t) => (ops.clone(), Some(t)),
            None if ops.len() >= 2 => (ops[..ops.len() - 1].to_vec(), ops.last().cloned()),
            None => (ops.clone(), None),
        };
        for s in &srcs {
            push(&mut inv.reads, s);
            if name == "mv" {
                push(&mut inv.writes, s);
            }
        }
        if let Some(d) = dest {
            push(&mut inv.writes, &d);
        }
    } else if matches!(
        fam.as_str(),
        "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" | "sed" | "awk" | "jq" | "yq" | "look"
    ) {
        // The first operand is a pattern or program unless given by option.
        let by_option =
            a.value("e").is_some() || a.value("f").is_some() || a.value("expression").is_some();
        let files = if by_option {
            &ops[..]
        } else {
            ops.get(1..).unwrap_or(&[])
        };
        for f in files {
            push(&mut inv.reads, f);
            if fam == "sed" && a.opts.iter().any(|o| o.name == "i") {
                push(&mut inv.writes, f);
            }
        }
    } else if LISTERS.contains(&name.as_str()) {
        // Names, sizes and modes, not contents: `ls -la ~/.ssh` reads no key.
    } else if p::SHELLS.contains(&name.as_str())
        || matches!(
            name.as_str(),
            "set"
                | "export"
                | "declare"
                | "local"
                | "typeset"
                | "readonly"
                | "alias"
                | "unset"
                | "eval"
        )
    {
        // Their words are values, positional parameters or a command (analysed where it
        // runs); a shell's script is read where the shell is unwrapped.
    } else if READERS.contains(&name.as_str()) {
        for o in &ops {
            push(&mut inv.reads, o);
        }
    } else if name != "echo" && name != "printf" && !p::FETCHERS.contains(&name.as_str()) {
        for o in ops.iter().filter(|o| looks_like_path(o)) {
            push(&mut inv.reads, o);
        }
    }
    if fam == "perl" && a.opts.iter().any(|o| o.name == "i") {
        for o in ops.iter().skip(1) {
            push(&mut inv.writes, o);
        }
    }
    if name == "tar" {
        let first = inv.words.first().cloned().unwrap_or_default();
        let old_style = !first.starts_with('-') && first.chars().all(|c| c.is_ascii_alphabetic());
        let extract = has("x") || old_style && first.contains('x');
        if extract {
            push(
                &mut inv.writes,
                &a.value("C").map(normalize).unwrap_or_else(|| ".".into()),
            );
        }
        if let Some(f) = a.value("f")
            && (has("c") || old_style && first.contains('c'))
        {
            push(&mut inv.writes, &normalize(f));
        }
    }

    // Per-program effects.
    match fam.as_str() {
        "rm" => {
            let recursive = has("r");
            let force = has("f");
            if recursive || force {
                let what = match (recursive, force) {
                    (true, true) => "rm -r -f",
                    (true, false) => "rm -r",
                    _ => "rm -f",
                };
                inv.because(Cap::ExecIrreversible, format!("{what} on {}", list(&ops)));
            }
            if has("no-preserve-root") {
                inv.because(Cap::ExecIrreversible, "rm --no-preserve-root");
            }
        }
        "shred" | "srm" | "wipe" => inv.because(
            Cap::ExecIrreversible,
            format!("{name} destroys {}", list(&ops)),
        ),
        "truncate" => inv.because(
            Cap::ExecIrreversible,
            format!("truncate cuts {}", list(&ops)),
        ),
        "dd" => {
            let mut of = None;
            let mut from = None;
            for o in &a.operands {
                if let Some(v) = o.strip_prefix("of=") {
                    of = Some(normalize(v));
                } else if let Some(v) = o.strip_prefix("if=") {
                    from = Some(normalize(v));
                }
            }
            if let Some(f) = &from {
                push(&mut inv.reads, f);
            }
            if let Some(o) = of
                && !paths::is_harmless_device(&o)
            {
                push(&mut inv.writes, &o);
                // An endless source (`/dev/zero`) with no `count=` fills the disk; onto a
                // file outside the workspace it overwrites what someone else keeps. A
                // bounded image written inside the workspace (`of=./disk.img count=16`)
                // is making a file, like `truncate -s` or `> file`.
                let endless = from
                    .as_deref()
                    .is_some_and(|f| matches!(f, "/dev/zero" | "/dev/urandom" | "/dev/random"));
                let bounded = a.operands.iter().any(|o| o.starts_with("count="));
                if endless && (!bounded || !paths::is_workspace_relative(&o)) {
                    inv.fact("shell.dd_overwrite");
                    inv.because(Cap::ExecIrreversible, format!("dd overwrites {o}"));
                } else if endless {
                    inv.because(Cap::FsWrite, format!("dd writes the image {o}"));
                } else {
                    inv.because(Cap::ExecIrreversible, format!("dd overwrites {o}"));
                }
            }
        }
        "find" => {
            if inv.words.iter().any(|w| w == "-delete") {
                inv.because(
                    Cap::ExecIrreversible,
                    format!("find -delete under {}", list(&a.operands)),
                );
                for r in &a.operands {
                    push(&mut inv.writes, r);
                }
            }
            for (i, w) in inv.words.iter().enumerate() {
                if matches!(w.as_str(), "-fprint" | "-fprint0" | "-fprintf" | "-fls")
                    && let Some(f) = inv.words.get(i + 1)
                {
                    let f = normalize(f);
                    push(&mut inv.writes, &f);
                }
            }
        }
        "git" => git(inv, &sub, &a, &args),
        "rsync" => {
            let deleting = [
                "delete",
                "del",
                "delete-before",
                "delete-during",
                "delete-after",
                "delete-delay",
                "delete-excluded",
                "remove-source-files",
            ]
            .iter()
            .any(|f| has(f));
            if deleting && !has("n") && !has("list-only") {
                inv.because(
                    Cap::ExecIrreversible,
                    "rsync deletes files at the destination",
                );
            }
            remote_copy(inv, &ops);
        }
        "scp" | "sftp" | "lftp" | "ftp" | "tftp" | "smbclient" | "ncftp" => remote_copy(inv, &ops),
        "ssh" => {
            if let Some(h) = a.operands.first() {
                let host = h.rsplit('@').next().unwrap_or(h).to_string();
                push(&mut inv.destinations, &host);
            }
            inv.because(Cap::NetEgress, "ssh connects to another host");
            if a.value("R").is_some() || a.value("D").is_some() || a.value("w").is_some() {
                inv.fact("shell.tunnel");
            }
        }
        "nc" | "telnet" | "cryptcat" | "pwncat" => {
            let listen = has("l");
            if listen {
                inv.fact("shell.listener");
            } else {
                let hp: Vec<&String> = a.operands.iter().collect();
                if let Some(h) = hp.first() {
                    let dest = match hp.get(1) {
                        Some(port) => format!("{h}:{port}"),
                        None => (*h).clone(),
                    };
                    push(&mut inv.destinations, &dest);
                }
            }
            inv.because(Cap::NetEgress, format!("{name} opens a network connection"));
            if a.value("e").is_some() || a.value("c").is_some() || a.value("lua-exec").is_some() {
                inv.fact("shell.reverse_shell");
                inv.because(
                    Cap::ExecArbitrary,
                    format!("{name} binds a program to the connection"),
                );
            }
        }
        "socat" => {
            let addrs: Vec<String> = a.operands.iter().map(|o| o.to_ascii_lowercase()).collect();
            let exec = addrs
                .iter()
                .any(|o| o.starts_with("exec:") || o.starts_with("system:"));
            let net = addrs.iter().any(|o| {
                ["tcp", "udp", "openssl", "ssl", "sctp"]
                    .iter()
                    .any(|p| o.starts_with(p))
            });
            if addrs
                .iter()
                .any(|o| o.contains("-listen") || o.contains("-l:"))
            {
                inv.fact("shell.listener");
            }
            for o in &a.operands {
                let lower = o.to_ascii_lowercase();
                if let Some(rest) = [
                    "tcp:",
                    "tcp4:",
                    "tcp6:",
                    "tcp-connect:",
                    "udp:",
                    "openssl:",
                    "ssl:",
                ]
                .iter()
                .find_map(|p| lower.strip_prefix(p).map(|_| &o[p.len()..]))
                {
                    let dest = rest.split(',').next().unwrap_or(rest);
                    push(&mut inv.destinations, dest);
                }
            }
            if net {
                inv.because(Cap::NetEgress, "socat opens a network connection");
            }
            if exec && net {
                inv.fact("shell.reverse_shell");
                inv.because(
                    Cap::ExecArbitrary,
                    "socat binds a program to a network connection",
                );
            }
        }
        "openssl" => {
            if sub == "s_client" {
                if let Some(c) = a.value("connect") {
                    push(&mut inv.destinations, c);
                }
                inv.because(Cap::NetEgress, "openssl s_client opens a connection");
            }
        }
        "docker" => docker(inv, &sub, &a),
        "kubectl" => {
            inv.because(Cap::NetEgress, format!("{name} talks to the cluster API"));
            if sub == "delete" {
                let dry = a
                    .value("dry-run")
                    .is_some_and(|v| v != "none" && v != "false");
                if !dry {
                    inv.because(
                        Cap::ExecIrreversible,
                        format!("kubectl delete {}", list(&args)),
                    );
                }
            }
        }
        "helm" => {
            inv.because(Cap::NetEgress, "helm talks to the cluster API");
            if matches!(sub.as_str(), "uninstall" | "delete" | "del" | "un") && !has("dry-run") {
                inv.because(
                    Cap::ExecIrreversible,
                    format!("helm uninstall {}", list(&args)),
                );
            }
        }
        "terraform" => {
            inv.because(
                Cap::NetEgress,
                format!("{name} talks to the providers' APIs"),
            );
            let destroy = sub == "destroy"
                || sub == "apply" && has("destroy")
                || sub == "state rm"
                || sub == "workspace delete"
                || sub == "run-all" && args.first().is_some_and(|x| x == "destroy");
            if destroy {
                inv.because(
                    Cap::ExecIrreversible,
                    format!("{name} {sub} destroys infrastructure"),
                );
            }
        }
        "npm" | "cargo" | "pip" | "gem" | "go" | "uv" | "poetry" | "pdm" | "composer" | "twine"
        | "dotnet" | "bundle" | "mvn" | "gradle" | "gradlew" | "mvnw" => {
            packages(inv, &fam, &sub, &a)
        }
        "curl" | "wget" | "http" | "aria2c" | "lynx" | "w3m" | "links" | "elinks" | "fetch"
        | "axel" | "httpie" | "curlie" | "hurl" => fetcher(inv, &fam, &a),
        "redis-cli" => {
            if matches!(sub.as_str(), "flushall" | "flushdb") {
                inv.because(
                    Cap::ExecIrreversible,
                    format!("redis-cli {} deletes every key", sub.to_uppercase()),
                );
            }
            if let Some(h) = a.value("h") {
                push(&mut inv.destinations, h);
            }
        }
        "mongosh" => {
            let from_input = match stdin {
                Stdin::Text(t) | Stdin::Pipe(Output::Literal(t)) => Some(t.as_str()),
                _ => None,
            };
            if let Some(code) = a.value("eval").or(from_input) {
                inv.code = Some(code.to_string());
                let f = crate::code::analyse(code, crate::code::Lang::Node);
                for d in f.deletes {
                    inv.because(Cap::ExecIrreversible, format!("{name} --eval calls {d}"));
                }
            }
        }
        "dropdb" | "dropuser" => {
            inv.because(Cap::ExecIrreversible, format!("{name} {}", list(&ops)))
        }
        "mysqladmin" => {
            if a.operands.iter().any(|o| o.eq_ignore_ascii_case("drop")) {
                inv.because(Cap::ExecIrreversible, "mysqladmin drop deletes a database");
            }
        }
        "userdel" | "deluser" | "groupdel" | "delgroup" => inv.because(
            Cap::ExecIrreversible,
            format!("{name} removes {}", list(&ops)),
        ),
        "crontab" => {
            if has("r") {
                inv.because(Cap::ExecIrreversible, "crontab -r deletes every cron job");
            }
        }
        "chmod" => {
            let mode = a.operands.first().cloned().unwrap_or_default();
            let mode = if mode.is_empty() {
                inv.words
                    .iter()
                    .find(|w| {
                        w.starts_with('-')
                            && w[1..].chars().all(|c| "rwxXst".contains(c))
                            && w.len() > 1
                    })
                    .cloned()
                    .unwrap_or_default()
            } else {
                mode
            };
            if setuid_mode(&mode) {
                inv.fact("shell.privilege_change");
                inv.because(
                    Cap::FsWrite,
                    format!("chmod {mode} sets the setuid/setgid bit"),
                );
            }
            if world_writable(&mode) {
                inv.fact("shell.privilege_change");
                inv.because(
                    Cap::FsWrite,
                    format!("chmod {mode} makes files world-writable"),
                );
            }
            permission_wreck(inv, &name, has("R"), ops.get(1..).unwrap_or(&[]), true);
        }
        "chown" | "chgrp" => {
            let owner = a.operands.first().cloned().unwrap_or_default();
            let root = owner == "root"
                || owner.starts_with("root:")
                || owner.starts_with("root.")
                || owner == "0"
                || owner.starts_with("0:")
                || owner == ":root"
                || name == "chgrp" && (owner == "root" || owner == "wheel");
            if root && has("R") {
                inv.fact("shell.privilege_change");
                inv.because(
                    Cap::FsWrite,
                    format!("{name} -R {owner} hands a tree to root"),
                );
            }
            permission_wreck(inv, &name, has("R"), ops.get(1..).unwrap_or(&[]), false);
        }
        "install" => {
            // `install -m 4755 ./sh /usr/local/bin/sh` is a copy and a chmod in one.
            if let Some(mode) = a.value("m") {
                if setuid_mode(mode) {
                    inv.fact("shell.privilege_change");
                    inv.because(
                        Cap::FsWrite,
                        format!("install -m {mode} sets the setuid/setgid bit"),
                    );
                }
                if world_writable(mode) {
                    inv.fact("shell.privilege_change");
                    inv.because(
                        Cap::FsWrite,
                        format!("install -m {mode} makes files world-writable"),
                    );
                }
            }
        }
        "setcap" => {
            inv.fact("shell.privilege_change");
            inv.because(Cap::FsWrite, "setcap grants file capabilities");
        }
        "usermod" | "useradd" | "gpasswd" | "adduser" | "visudo" => {
            let groups: Vec<&str> = a
                .values("G")
                .flat_map(|g| g.split(','))
                .chain(a.values("a"))
                .chain(a.operands.iter().skip(1).map(String::as_str))
                .collect();
            let admin = groups.iter().any(|g| {
                matches!(
                    *g,
                    "sudo" | "wheel" | "admin" | "root" | "docker" | "adm" | "lxd" | "disk"
                )
            });
            if admin || name == "visudo" || has("o") || a.value("u") == Some("0") {
                inv.fact("shell.privilege_change");
                inv.because(Cap::FsWrite, format!("{name} grants administrative access"));
            }
        }
        "history" => {
            if has("c") || has("w") && a.operands.iter().any(|o| o == "/dev/null") || has("d") {
                inv.fact("shell.history_tamper");
            }
        }
        "set" => {
            if inv
                .words
                .windows(2)
                .any(|w| w[0] == "+o" && w[1] == "history")
            {
                inv.fact("shell.history_tamper");
            }
            if inv.words.is_empty() {
                inv.fact("shell.env_dump");
            }
        }
        "unset" => {
            let mut tmp = Analysis::default();
            for v in &a.operands {
                assignment(&mut tmp, v, "");
            }
            for p in tmp.predicates {
                inv.fact(p);
            }
        }
        "printenv" => {
            if a.operands.is_empty() {
                inv.fact("shell.env_dump");
            }
        }
        "export" | "declare" | "typeset" => {
            if has("p")
                || name != "export" && has("x") && a.operands.is_empty()
                || inv.words.is_empty()
            {
                inv.fact("shell.env_dump");
            }
        }
        "mkfs" | "mke2fs" | "mkswap" | "mkntfs" | "mkdosfs" | "blkdiscard" => {
            device(inv, &name, &ops)
        }
        "wipefs" => {
            if has("a") && !has("n") {
                device(inv, &name, &ops);
            }
        }
        "sgdisk" | "gdisk" => {
            if has("Z") || has("o") || has("z") || has("zap-all") || has("clear") {
                device(inv, &name, &ops);
            }
        }
        "sfdisk" => {
            if !(has("l")
                || has("d")
                || has("list")
                || has("dump")
                || has("V")
                || has("verify")
                || has("s")
                || has("show-size"))
            {
                device(inv, &name, &ops);
            }
        }
        "fdisk" | "cfdisk" => {
            if !has("l") && ops.iter().any(|o| o.starts_with("/dev/")) {
                device(inv, &name, &ops);
            }
        }
        "parted" => {
            let mutating = a.operands.iter().any(|o| {
                matches!(
                    o.as_str(),
                    "mklabel"
                        | "mktable"
                        | "mkpart"
                        | "rm"
                        | "resizepart"
                        | "mkfs"
                        | "mkpartfs"
                        | "rescue"
                )
            });
            if mutating && !has("l") {
                device(inv, &name, &ops);
            }
        }
        "mail" | "mailx" | "sendmail" | "mutt" | "msmtp" | "swaks" | "s-nail" | "neomutt"
        | "ssmtp" | "sendemail" => {
            inv.because(Cap::MsgSend, format!("{name} sends mail"));
            inv.because(Cap::NetEgress, format!("{name} sends mail"));
        }
        _ => {}
    }
    if name.starts_with("mkfs") && name != "mkfs" {
        device(inv, &name, &ops);
    }
    if p::DNS_AND_PROBES.contains(&name.as_str()) {
        inv.because(Cap::NetEgress, format!("{name} queries the network"));
        const TYPES: &[&str] = &[
            "a", "aaaa", "mx", "txt", "any", "axfr", "ixfr", "ns", "soa", "cname", "ptr", "srv",
            "caa", "ds", "dnskey", "in", "ch",
        ];
        for o in &a.operands {
            let o = o.trim_start_matches('@');
            if o.is_empty()
                || o.starts_with('+')
                || TYPES.contains(&o.to_ascii_lowercase().as_str())
                || o.bytes().all(|b| b.is_ascii_digit())
            {
                continue;
            }
            push(&mut inv.destinations, o);
        }
    }
    if p::CLOUD_CLIS.contains(&name.as_str()) {
        inv.fact("shell.remote_api");
        inv.because(Cap::NetEgress, format!("{name} calls its provider's API"));
        cloud(inv, &name, &a);
    }
    if p::PACKAGE_RUNNERS.contains(&name.as_str()) {
        inv.because(
            Cap::ExecArbitrary,
            format!("{name} downloads and runs a package"),
        );
        inv.because(Cap::NetEgress, format!("{name} downloads a package"));
        if let Some(r) = p::registry_of(&name) {
            push(&mut inv.destinations, r);
        }
    }
    if p::TASK_RUNNERS.contains(&name.as_str()) {
        inv.fact("shell.runs_project_code");
    }
    if matches!(
        name.as_str(),
        "ngrok"
            | "cloudflared"
            | "devtunnel"
            | "bore"
            | "lt"
            | "localtunnel"
            | "frpc"
            | "chisel"
            | "sish"
            | "tmate"
    ) || name == "code" && sub == "tunnel"
    {
        inv.fact("shell.tunnel");
        inv.because(
            Cap::NetEgress,
            format!("{name} exposes the host through a tunnel"),
        );
    }
    if name == "php" && a.value("S").is_some()
        || name == "http-server"
        || name == "busybox" && a.operands.first().is_some_and(|x| x == "httpd")
    {
        inv.fact("shell.listener");
    }
    if name == "xterm" && a.value("display").is_some() {
        inv.fact("shell.reverse_shell");
    }

    // Writes that grant privilege or hit devices, wherever they come from.
    let writes = inv.writes.clone();
    for w in &writes {
        let w = paths::home_relative(w);
        if w.starts_with("/etc/sudoers")
            || w.starts_with("/etc/pam.d")
            || w == "/etc/ld.so.preload"
            || w.ends_with("/.ssh/authorized_keys")
            || w == "~/.ssh/authorized_keys"
        {
            inv.fact("shell.privilege_change");
            inv.because(Cap::FsWrite, format!("writes {w}"));
        }
        if is_block_device(&w) {
            inv.fact("shell.device_write");
            inv.because(Cap::ExecIrreversible, format!("writes the device {w}"));
        }
        if w.ends_with("_history") && w.contains("/.") {
            inv.fact("shell.history_tamper");
        }
    }
    if !inv.writes.is_empty() {
        inv.caps.insert(Cap::FsWrite);
    }
    if !inv.reads.is_empty() {
        inv.caps.insert(Cap::FsRead);
    }
    let reads = inv.reads.clone();
    for r in reads {
        if paths::is_sensitive(&r) {
            inv.fact("shell.sensitive_read");
            inv.because(Cap::FsRead, format!("reads the credential store {r}"));
        }
    }
    if !inv.destinations.is_empty() {
        inv.caps.insert(Cap::NetEgress);
        if inv
            .destinations
            .iter()
            .any(|d| d.contains('$') || d.contains("(…)"))
        {
            inv.fact("shell.dynamic_destination");
        }
    }
    // Data piped into something that sends it: `tar c … | ssh host 'cat > x'`, `… | nc h p`.
    if let Stdin::Pipe(o) = stdin
        && !matches!(o, Output::Nothing)
    {
        let stdin_sender = p::NET_CLIENTS.contains(&name.as_str())
            || name == "ssh"
            || name == "openssl" && sub == "s_client"
            || p::FETCHERS.contains(&name.as_str())
                && inv.words.iter().any(|w| {
                    w == "@-"
                        || w.ends_with("=@-")
                        || w == "-T" && inv.words.iter().any(|x| x == "-")
                })
            || p::MAILERS.contains(&name.as_str());
        if stdin_sender {
            inv.fact("shell.pipe_to_network");
        }
    }
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "(nothing named)".to_string()
    } else {
        v.iter().take(6).cloned().collect::<Vec<_>>().join(" ")
    }
}

fn is_block_device(p: &str) -> bool {
    let Some(dev) = p.strip_prefix("/dev/") else {
        return false;
    };
    [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk", "md", "dm-", "loop", "mapper/",
        "nbd", "sr", "mtd", "root", "mem", "kmem", "port",
    ]
    .iter()
    .any(|p| dev.starts_with(p))
}

fn device(inv: &mut Invocation, name: &str, ops: &[String]) {
    if !ops
        .iter()
        .any(|o| o.starts_with("/dev/") || o.starts_with('$'))
    {
        // `mkfs.erofs image.erofs dir/`, `mkswap swapfile`: a file, not a device.
        for o in ops {
            push(&mut inv.writes, o);
        }
        return;
    }
    inv.fact("shell.device_write");
    inv.because(
        Cap::ExecIrreversible,
        format!("{name} rewrites {}", list(ops)),
    );
    for o in ops.iter().filter(|o| o.starts_with("/dev/")) {
        push(&mut inv.writes, o);
    }
}

/// A recursive change of owner or mode over `/`, a top-level system directory or (for
/// modes) a home directory: every file's previous owner or mode is lost, and the system
/// or the user's account stops working (`chmod -R 000 /`, `chown -R $(whoami) /`).
fn permission_wreck(
    inv: &mut Invocation,
    name: &str,
    recursive: bool,
    targets: &[String],
    home_too: bool,
) {
    if !recursive {
        return;
    }
    const SYSTEM: &[&str] = &[
        "bin",
        "boot",
        "dev",
        "etc",
        "lib",
        "lib32",
        "lib64",
        "proc",
        "root",
        "sbin",
        "sys",
        "usr",
        "var",
        "home",
        "Users",
        "System",
        "Library",
        "Applications",
        "private",
    ];
    let wrecked: Vec<&String> = targets
        .iter()
        .filter(|t| {
            let t = t.trim_end_matches("/*").trim_end_matches('/');
            t.is_empty()
                || t.strip_prefix('/').is_some_and(|d| SYSTEM.contains(&d))
                || home_too
                    && (t == "~"
                        || t.strip_prefix("/home/")
                            .or_else(|| t.strip_prefix("/Users/"))
                            .is_some_and(|u| !u.is_empty() && !u.contains('/')))
        })
        .collect();
    if let Some(t) = wrecked.first() {
        inv.fact("shell.permission_wreck");
        inv.because(
            Cap::ExecIrreversible,
            format!("{name} -R over {t} loses every file's owner or mode"),
        );
    }
}

fn setuid_mode(mode: &str) -> bool {
    if mode.bytes().all(|b| b.is_ascii_digit()) && mode.len() == 4 {
        return matches!(mode.as_bytes()[0], b'2' | b'4' | b'6' | b'7');
    }
    mode.split(',').any(|part| {
        part.contains(['+', '='])
            && part
                .split(['+', '='])
                .nth(1)
                .is_some_and(|p| p.contains('s'))
    })
}

fn world_writable(mode: &str) -> bool {
    if !mode.is_empty() && mode.bytes().all(|b| b.is_ascii_digit()) && mode.len() >= 3 {
        return matches!(mode.as_bytes()[mode.len() - 1], b'2' | b'3' | b'6' | b'7');
    }
    mode.split(',').any(|part| {
        let (who, rest) = part.split_at(part.find(['+', '=']).unwrap_or(part.len()));
        (who.contains('o') || who.contains('a'))
            && rest.starts_with(['+', '='])
            && rest.contains('w')
    })
}

/// `user@host:path` and `host:path` are remote; a `:` after a `/` is part of a local path.
fn remote_host(op: &str) -> Option<String> {
    if let Some(rest) = op
        .strip_prefix("rsync://")
        .or_else(|| op.strip_prefix("sftp://"))
        .or_else(|| op.strip_prefix("ftp://"))
        .or_else(|| op.strip_prefix("scp://"))
    {
        let host = rest.split(['/', ':']).next().unwrap_or(rest);
        return Some(host.rsplit('@').next().unwrap_or(host).to_string());
    }
    let colon = op.find(':')?;
    let before = &op[..colon];
    if before.is_empty() || before.contains('/') {
        return None;
    }
    Some(before.rsplit('@').next().unwrap_or(before).to_string())
}

/// A git remote written as a URL, or as `[user@]host:path` (scp syntax), as something the
/// destination checks can read: the URL, or the host.
fn git_remote(r: &str) -> Option<String> {
    if r.contains("://") {
        return Some(r.to_string());
    }
    if r.contains('@') || r.contains(':') {
        return remote_host(r);
    }
    None
}

fn remote_copy(inv: &mut Invocation, ops: &[String]) {
    let remote: Vec<(usize, String)> = ops
        .iter()
        .enumerate()
        .filter_map(|(i, o)| remote_host(o).map(|h| (i, h)))
        .collect();
    if inv.name == "sftp"
        || inv.name == "ftp"
        || inv.name == "lftp"
        || inv.name == "tftp"
        || inv.name == "smbclient"
        || inv.name == "ncftp"
    {
        if let Some(h) = ops.first() {
            let host =
                remote_host(h).unwrap_or_else(|| h.rsplit('@').next().unwrap_or(h).to_string());
            push(&mut inv.destinations, &host);
        }
        inv.because(Cap::NetEgress, format!("{} transfers files", inv.name));
        return;
    }
    if remote.is_empty() {
        return;
    }
    for (_, h) in &remote {
        push(&mut inv.destinations, h);
    }
    inv.because(
        Cap::NetEgress,
        format!("{} copies files to or from another host", inv.name),
    );
    let last_remote = remote.iter().any(|(i, _)| *i == ops.len() - 1);
    if last_remote {
        inv.fact("shell.upload");
        for s in &ops[..ops.len() - 1] {
            if remote_host(s).is_none() {
                push(&mut inv.reads, s);
            }
        }
    } else {
        inv.reads.retain(|r| remote_host(r).is_none());
        if let Some(d) = ops.last() {
            push(&mut inv.writes, d);
        }
    }
    inv.reads.retain(|r| remote_host(r).is_none());
}

fn fetcher(inv: &mut Invocation, fam: &str, a: &crate::argv::Argv) {
    inv.because(
        Cap::NetEgress,
        format!("{} fetches from the network", inv.name),
    );
    let mut urls: Vec<String> = Vec::new();
    match fam {
        "http" | "httpie" | "curlie" => {
            const METHODS: &[&str] = &["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];
            let mut ops = a.operands.iter();
            let mut first = ops.next();
            if let Some(m) = first
                && METHODS.contains(&m.to_ascii_uppercase().as_str())
            {
                if m.eq_ignore_ascii_case("DELETE") {
                    inv.fact("shell.http_delete");
                }
                first = ops.next();
            }
            if let Some(u) = first {
                urls.push(if u.starts_with(':') {
                    format!("localhost{u}")
                } else {
                    u.clone()
                });
            }
            for item in ops {
                if let Some(path) = item
                    .split_once('@')
                    .map(|(_, f)| f)
                    .filter(|_| item.contains("=@") || item.starts_with('@'))
                {
                    inv.fact("shell.upload");
                    push(&mut inv.reads, &normalize(path));
                }
            }
        }
        _ => {
            urls.extend(a.operands.iter().cloned());
            urls.extend(a.values("url").map(str::to_string));
        }
    }
    if fam == "curl" {
        if let Some(x) = a.value("x") {
            urls.push(x.to_string());
        }
        let method = a.value("X").unwrap_or("");
        if method.eq_ignore_ascii_case("DELETE") {
            inv.fact("shell.http_delete");
        }
        for v in a.values("d").chain(a.values("F")).chain(a.values("T")) {
            let file = v
                .strip_prefix('@')
                .or_else(|| v.split_once("=@").map(|(_, f)| f))
                .or_else(|| v.split_once("=<").map(|(_, f)| f));
            let file = match (file, a.values("T").any(|t| t == v)) {
                (Some(f), _) => Some(f),
                (None, true) => Some(v),
                _ => None,
            };
            if let Some(f) = file {
                inv.fact("shell.upload");
                let f = f.split(';').next().unwrap_or(f);
                if f != "-" {
                    push(&mut inv.reads, &normalize(f));
                }
            }
        }
        if a.flag("noproxy")
            || a.value("noproxy").is_some()
            || a.value("x").is_some_and(|v| v.is_empty())
        {
            inv.fact("shell.proxy_override");
        }
        if let Some(o) = a.value("o")
            && o != "-"
        {
            push(&mut inv.writes, &normalize(o));
        }
    }
    if fam == "wget" {
        if a.value("method")
            .is_some_and(|m| m.eq_ignore_ascii_case("DELETE"))
        {
            inv.fact("shell.http_delete");
        }
        for f in a.values("post-file").chain(a.values("body-file")) {
            inv.fact("shell.upload");
            push(&mut inv.reads, &normalize(f));
        }
        match a.value("O") {
            Some("-") => {}
            Some(o) => push(&mut inv.writes, &normalize(o)),
            None => push(
                &mut inv.writes,
                &a.value("P").map(normalize).unwrap_or_else(|| ".".into()),
            ),
        }
    }
    if inv.predicates.contains(&"shell.http_delete") {
        inv.because(
            Cap::ExecIrreversible,
            format!("{} sends an HTTP DELETE to {}", inv.name, list(&urls)),
        );
    }
    inv.reads.retain(|r| !r.contains("://"));
    for u in urls {
        if !u.is_empty() {
            push(&mut inv.destinations, &u);
        }
    }
}

fn git(inv: &mut Invocation, sub: &str, a: &crate::argv::Argv, args: &[String]) {
    let has = |f: &str| a.flag(f);
    let top = sub.split(' ').next().unwrap_or("");
    match top {
        "push" => {
            inv.because(Cap::NetEgress, "git push sends commits to a remote");
            let refspecs = args.get(1..).unwrap_or(&[]);
            let force = has("f")
                || has("force-with-lease")
                || has("force-if-includes")
                || refspecs.iter().any(|r| r.starts_with('+'));
            if force {
                inv.because(
                    Cap::ExecIrreversible,
                    format!("git push --force {}", list(args)),
                );
            }
            if has("mirror") {
                inv.because(
                    Cap::ExecIrreversible,
                    "git push --mirror overwrites every remote ref",
                );
            }
            if has("d") || refspecs.iter().any(|r| r.starts_with(':')) {
                inv.because(
                    Cap::ExecIrreversible,
                    format!("git push --delete {}", list(args)),
                );
            }
            if has("prune") {
                inv.because(
                    Cap::ExecIrreversible,
                    "git push --prune deletes remote branches",
                );
            }
            if let Some(d) = args.first().and_then(|r| git_remote(r)) {
                push(&mut inv.destinations, &d);
            }
        }
        "clone" | "fetch" | "pull" | "ls-remote" | "remote" | "submodule" | "archive" => {
            inv.because(Cap::NetEgress, format!("git {top} talks to a remote"));
            for d in args.iter().filter_map(|r| git_remote(r)) {
                push(&mut inv.destinations, &d);
            }
            if top == "clone" {
                push(
                    &mut inv.writes,
                    args.get(1).map(String::as_str).unwrap_or("."),
                );
            }
        }
        "reset" => {
            if has("hard") {
                inv.because(
                    Cap::ExecIrreversible,
                    "git reset --hard discards uncommitted changes",
                );
            }
        }
        "clean" => {
            if has("f") && !has("n") {
                inv.because(
                    Cap::ExecIrreversible,
                    "git clean -f deletes untracked files",
                );
            }
        }
        "checkout" => {
            // `git checkout -- FILE` reverts the files it names, like an edit would; `-f`,
            // `.`, a glob or the top of the tree discards every local change.
            let dashdash = inv.words.iter().position(|w| w == "--");
            let paths: Vec<&String> = match dashdash {
                Some(at) => inv.words[at + 1..].iter().collect(),
                None => Vec::new(),
            };
            let broad = |x: &str| {
                matches!(x, "." | "./" | ".." | "*" | ":/" | ":" | "/")
                    || x.contains(['*', '?'])
                    || x.starts_with(":(")
            };
            let discards_all = dashdash.is_some() && paths.is_empty();
            if has("f")
                || discards_all
                || args.iter().any(|x| broad(x))
                || paths.iter().any(|x| broad(x))
            {
                inv.because(
                    Cap::ExecIrreversible,
                    "git checkout discards uncommitted changes",
                );
            }
        }
        "restore" => {
            if !has("S") || has("W") {
                inv.because(
                    Cap::ExecIrreversible,
                    "git restore discards uncommitted changes",
                );
            }
        }
        "switch" => {
            if has("discard-changes") || has("f") {
                inv.because(
                    Cap::ExecIrreversible,
                    "git switch --discard-changes discards uncommitted changes",
                );
            }
        }
        "stash" => {
            if matches!(sub, "stash drop" | "stash clear") {
                inv.because(
                    Cap::ExecIrreversible,
                    format!("git {sub} deletes stashed changes"),
                );
            }
        }
        "branch" => {
            if has("D") || has("d") && has("f") {
                inv.because(
                    Cap::ExecIrreversible,
                    "git branch -D deletes an unmerged branch",
                );
            }
        }
        "filter-branch" | "filter-repo" | "replace" => {
            inv.because(Cap::ExecIrreversible, format!("git {top} rewrites history"));
        }
        "reflog" => {
            if args.first().is_some_and(|x| x == "expire" || x == "delete") {
                inv.because(
                    Cap::ExecIrreversible,
                    "git reflog expire drops recovery points",
                );
            }
        }
        "gc" => {
            if a.value("prune").is_some_and(|v| v == "now")
                || inv.words.iter().any(|w| w == "--prune=now")
            {
                inv.because(
                    Cap::ExecIrreversible,
                    "git gc --prune=now drops unreachable commits",
                );
            }
        }
        "update-ref" => {
            if has("d") {
                inv.because(Cap::ExecIrreversible, "git update-ref -d deletes a ref");
            }
        }
        _ => {}
    }
    const READ_ONLY: &[&str] = &[
        "status",
        "log",
        "diff",
        "show",
        "blame",
        "grep",
        "ls-files",
        "describe",
        "rev-parse",
        "shortlog",
        "help",
        "version",
        "ls-tree",
        "cat-file",
        "rev-list",
        "whatchanged",
        "reflog",
        "ls-remote",
        "config",
        "remote",
        "branch",
        "tag",
        "stash",
        "fetch",
        "bisect",
        "notes",
    ];
    if READ_ONLY.contains(&top) {
        inv.caps.insert(Cap::FsRead);
    } else if !top.is_empty() {
        inv.caps.insert(Cap::FsWrite);
    }
}

fn docker(inv: &mut Invocation, sub: &str, a: &crate::argv::Argv) {
    let name = inv.name.clone();
    let has = |f: &str| a.flag(f);
    match sub {
        "rm" | "container rm" | "rmi" | "image rm" | "volume rm" | "container prune"
        | "image prune" | "volume prune" | "network prune" | "system prune" | "builder prune"
        | "buildx prune" => {
            inv.because(
                Cap::ExecIrreversible,
                format!("{name} {sub} deletes containers, images or volumes"),
            );
        }
        "compose down" if has("v") || a.value("rmi").is_some() => {
            inv.because(
                Cap::ExecIrreversible,
                format!("{name} compose down removes volumes or images"),
            );
        }
        "compose rm" => inv.because(
            Cap::ExecIrreversible,
            format!("{name} compose rm deletes containers"),
        ),
        "push" | "image push" => {
            inv.because(
                Cap::ExecIrreversible,
                format!("{name} push publishes an image"),
            );
            inv.because(Cap::NetEgress, format!("{name} push uploads an image"));
        }
        "pull" | "login" | "search" | "build" | "buildx build" | "image pull" | "compose pull"
        | "compose build" => {
            inv.because(Cap::NetEgress, format!("{name} {sub} reaches a registry"));
        }
        "run" | "container run" | "create" | "compose up" | "compose run" => {
            inv.because(
                Cap::ExecArbitrary,
                format!("{name} {sub} runs a container image"),
            );
            let vols: Vec<&str> = a
                .values("v")
                .chain(a.values("volume"))
                .chain(a.values("mount"))
                .collect();
            let host_root = vols.iter().any(|v| {
                v.starts_with("/:")
                    || v.contains("source=/,")
                    || v.starts_with("/var/run/docker.sock")
                    || v.starts_with("/run/docker.sock")
            });
            if has("privileged")
                || host_root
                || a.value("pid") == Some("host")
                || a.values("cap-add")
                    .any(|c| c.eq_ignore_ascii_case("SYS_ADMIN") || c.eq_ignore_ascii_case("ALL"))
            {
                inv.fact("shell.privilege_change");
                inv.because(
                    Cap::ExecArbitrary,
                    format!("{name} {sub} gives the container the host"),
                );
            }
        }
        _ => {}
    }
}

fn packages(inv: &mut Invocation, fam: &str, sub: &str, a: &crate::argv::Argv) {
    let name = inv.name.clone();
    let dry = a.flag("dry-run") || a.flag("n") && fam == "cargo";
    let install = matches!(
        (fam, sub),
        (
            "npm",
            "install"
                | "i"
                | "ci"
                | "add"
                | "update"
                | "up"
                | "upgrade"
                | "rebuild"
                | "exec"
                | "x"
                | "dlx"
                | "create"
                | "init"
                | "install-test"
                | "it"
        ) | ("pip", "install" | "download" | "wheel")
            | ("cargo", "install" | "add" | "fetch" | "update")
            | ("gem", "install" | "update")
            | ("go", "get" | "install" | "mod download")
            | ("uv", "add" | "sync" | "lock" | "pip" | "tool")
            | (
                "poetry" | "pdm",
                "add" | "install" | "update" | "lock" | "sync"
            )
            | ("composer", "install" | "require" | "update")
            | ("bundle", "install" | "update")
            | ("dotnet", "add" | "restore")
    );
    let runs = matches!(
        (fam, sub),
        (
            "npm",
            "run" | "run-script" | "test" | "t" | "start" | "stop" | "restart" | "tst"
        ) | (
            "cargo",
            "build"
                | "b"
                | "run"
                | "r"
                | "test"
                | "t"
                | "bench"
                | "check"
                | "c"
                | "clippy"
                | "doc"
                | "install"
        ) | ("go", "run" | "test" | "build" | "generate")
            | ("uv" | "poetry" | "pdm" | "bundle", "run" | "exec")
            | ("dotnet", "run" | "test" | "build")
            | ("mvn" | "mvnw" | "gradle" | "gradlew", _)
    );
    let publish =
        !dry && matches!(
            (fam, sub),
            ("npm", "publish" | "unpublish" | "deprecate")
                | ("cargo", "publish" | "yank")
                | ("gem", "push" | "yank")
                | ("twine", "upload")
                | ("poetry" | "pdm" | "uv", "publish")
                | ("dotnet", "nuget push")
        ) || matches!(fam, "mvn" | "mvnw")
            && a.operands
                .iter()
                .any(|o| o == "deploy" || o == "release:perform")
            || matches!(fam, "gradle" | "gradlew")
                && a.operands.iter().any(|o| o.starts_with("publish"));
    if install {
        inv.because(Cap::NetEgress, format!("{name} {sub} downloads packages"));
        inv.fact("shell.installs_packages");
        if let Some(r) = p::registry_of(&name) {
            push(&mut inv.destinations, r);
        }
        for key in [
            "registry",
            "i",
            "extra-index-url",
            "index",
            "source",
            "find-links",
            "f",
        ] {
            for v in a.values(key) {
                if v.contains("://") || v.contains('.') {
                    push(&mut inv.destinations, v);
                }
            }
        }
        for o in a.args() {
            if o.contains("://") || o.starts_with("git+") {
                push(&mut inv.destinations, o.trim_start_matches("git+"));
            }
        }
    }
    if runs {
        inv.fact("shell.runs_project_code");
    }
    if publish {
        inv.because(
            Cap::ExecIrreversible,
            format!("{name} {sub} publishes a package"),
        );
        inv.because(Cap::NetEgress, format!("{name} {sub} uploads a package"));
    }
}

/// Verbs that delete or destroy something on a remote service's side.
fn destructive_verb(w: &str) -> bool {
    matches!(
        w,
        "delete"
            | "destroy"
            | "purge"
            | "remove"
            | "rm"
            | "rb"
            | "del"
            | "undeploy"
            | "uninstall"
            | "wipe"
            | "terminate"
            | "deletefile"
            | "cleanup"
            | "dedupe"
            | "forget"
            | "prune"
            | "compact"
            | "recreate"
            | "break-lock"
            | "unpublish"
            | "archive"
            | "kill"
            | "roll"
            | "revoke"
            | "unregister"
            | "rollback"
            | "clear"
            | "untag"
            | "unsubscribe"
            | "remove-secret"
            | "delete_vhost"
            | "forget_cluster_node"
            | "reset"
            | "force_reset"
            | "drop"
    ) || w.starts_with("delete-")
        || w.starts_with("batch-delete")
        || w.starts_with("terminate-")
        || w.starts_with("purge-")
        || w.starts_with("deregister-")
        || w.starts_with("remove-")
        || w.starts_with("delete_")
        || w.ends_with(":delete")
        || w.ends_with(":destroy")
}

fn cloud(inv: &mut Invocation, name: &str, a: &crate::argv::Argv) {
    let ops: Vec<String> = a.operands.iter().map(|o| o.to_ascii_lowercase()).collect();
    let dry = a.flag("dryrun")
        || a.flag("dry-run")
        || a.flag("what-if")
        || name == "rclone" && a.flag("n")
        || a.flag("generate-cli-skeleton")
        || a.value("generate-cli-skeleton").is_some();
    if ops.iter().any(|o| o == "help") || dry {
        return;
    }
    for v in a.values("endpoint-url") {
        push(&mut inv.destinations, v);
    }
    let words: Vec<&str> = ops.iter().take(4).map(String::as_str).collect();
    let first = words.first().copied().unwrap_or("");
    let second = words.get(1).copied().unwrap_or("");
    let hit = match name {
        "aws" => {
            destructive_verb(second)
                || first == "s3"
                    && (matches!(second, "rm" | "rb" | "mv")
                        || second == "sync" && a.flag("delete"))
                || first == "secretsmanager"
                    && matches!(second, "update-secret" | "put-secret-value")
                || first == "route53"
                    && second == "change-resource-record-sets"
                    && inv.words.iter().any(|w| {
                        let w: String = w.chars().filter(|c| !c.is_whitespace()).collect();
                        w.contains("\"Action\":\"DELETE\"")
                    })
        }
        "gsutil" => matches!(first, "rm" | "rb") || first == "rsync" && a.flag("d"),
        "azcopy" => {
            matches!(first, "remove" | "rm")
                || first == "sync"
                    && (a
                        .value("delete-destination")
                        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
                        || ops.iter().any(|o| o == "true") && a.flag("delete-destination"))
        }
        "rclone" => matches!(
            first,
            "delete" | "deletefile" | "purge" | "cleanup" | "dedupe" | "move" | "moveto" | "sync"
        ),
        "mc" => {
            matches!(first, "rb" | "rm")
                || first == "mirror" && a.flag("remove")
                || first == "admin"
                    && words
                        .iter()
                        .any(|w| destructive_verb(w) || *w == "disable" || *w == "unset")
        }
        "s3cmd" => matches!(first, "del" | "rm" | "rb") || a.flag("delete-removed"),
        "gh" | "glab" | "hub" => {
            if a.value("X")
                .is_some_and(|m| m.eq_ignore_ascii_case("DELETE"))
            {
                inv.fact("shell.http_delete");
                true
            } else {
                destructive_verb(second)
            }
        }
        "vault" => {
            words.iter().any(|w| destructive_verb(w) || *w == "disable")
                || matches!(first, "kv") && matches!(second, "destroy" | "metadata")
        }
        "deck" => {
            matches!(first, "reset" | "sync")
                || first == "gateway" && matches!(second, "reset" | "sync")
        }
        "fastly" => words
            .iter()
            .any(|w| destructive_verb(w) || *w == "activate"),
        "wrangler" => words.iter().any(|w| destructive_verb(w)),
        "gitlab-runner" => first == "unregister",
        "rabbitmqctl" => matches!(
            first,
            "delete_vhost"
                | "forget_cluster_node"
                | "reset"
                | "force_reset"
                | "delete_user"
                | "clear_permissions"
                | "purge_queue"
                | "delete_queue"
        ),
        "kafka-topics" | "kafka-consumer-groups" | "kafka-configs" | "kafka-acls" => {
            a.flag("delete")
                || a.flag("reset-offsets")
                || a.flag("remove")
                || a.value("delete-config").is_some()
                || a.flag("delete-config")
        }
        "kafka-delete-records" => true,
        "splunk" => matches!(first, "remove" | "clean" | "delete"),
        "restic" => {
            matches!(first, "forget" | "prune")
                || first == "key" && second == "remove"
                || a.flag("remove-all")
                || a.flag("cleanup")
        }
        "kubectl" | "helm" | "terraform" | "tofu" | "terragrunt" => false,
        _ => words.iter().any(|w| destructive_verb(w)),
    };
    if hit {
        inv.because(
            Cap::ExecIrreversible,
            format!(
                "{name} {} deletes remote resources or data",
                words.join(" ")
            ),
        );
    }
    if matches!(name, "gh" | "glab") && first == "release" && second == "create" {
        inv.because(
            Cap::ExecIrreversible,
            format!("{name} release create publishes a release"),
        );
    }
    if matches!(name, "pulumi" | "cdk" | "serverless" | "sls")
        && matches!(first, "destroy" | "remove")
    {
        inv.because(
            Cap::ExecIrreversible,
            format!("{name} {first} destroys infrastructure"),
        );
    }
    // Plaintext secret reads: the session then holds private data.
    let secret_read = match name {
        "aws" => matches!(
            (first, second),
            ("secretsmanager", "get-secret-value")
                | (
                    "ssm",
                    "get-parameter" | "get-parameters" | "get-parameters-by-path"
                )
        ),
        "gcloud" => first == "secrets" && second == "versions" && words.get(2) == Some(&"access"),
        "az" => {
            first == "keyvault"
                && second == "secret"
                && matches!(words.get(2).copied(), Some("show" | "download"))
                || first == "storage" && second == "account" && words.get(2) == Some(&"keys")
        }
        "vault" => first == "read" || first == "kv" && second == "get",
        "op" => first == "read" || matches!((first, second), ("item" | "document", "get")),
        "doppler" => first == "secrets" && matches!(second, "get" | "download"),
        _ => false,
    };
    if secret_read {
        inv.fact("shell.secret_read");
        inv.because(
            Cap::FsRead,
            format!("{name} {} reads a secret's plaintext", words.join(" ")),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert!(
            setuid_mode("4755") && setuid_mode("u+s") && setuid_mode("g=s") && !setuid_mode("755")
        );
        assert!(
            world_writable("777")
                && world_writable("o+w")
                && world_writable("a+rw")
                && !world_writable("755")
                && !world_writable("u+w")
        );
    }

    #[test]
    fn base64_decoding() {
        assert_eq!(base64("cm0gLXJmIC8=").as_deref(), Some(&b"rm -rf /"[..]));
        assert_eq!(base64("not base64!"), None);
    }

    #[test]
    fn remote_operands() {
        assert_eq!(remote_host("user@host:/etc/").as_deref(), Some("host"));
        assert_eq!(remote_host("host:file").as_deref(), Some("host"));
        assert_eq!(remote_host("./a:b"), None);
        assert_eq!(remote_host("/tmp/x"), None);
    }
}
