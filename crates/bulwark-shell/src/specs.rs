//! How programs parse their own options: which take values, which spellings are aliases,
//! which leading operands are subcommands.
//!
//! This is data, kept to what decides structure: an option whose value would otherwise be
//! mistaken for an operand (`git -C dir push`, `curl -X DELETE url`), a long spelling a rule
//! should not have to repeat (`--recursive` is `-r`), and subcommand depth (`aws s3 rm`).
//! Keys are the program name, or the program and its subcommand words (`"git push"`).
//! `podman` and `nerdctl` read docker's entries, `python3` python's, and so on.

/// One program's (or subcommand's) option grammar.
#[derive(Debug)]
pub struct Spec {
    /// Short options that take a value (attached or as the next word).
    pub short_values: &'static str,
    /// Short options whose value can only be attached (`-psecret`, `-i.bak`).
    pub optional_values: &'static str,
    /// Long options that take the next word as their value when not written with `=`.
    pub long_values: &'static [&'static str],
    /// Spellings mapped to a canonical name (`recursive` → `r`).
    pub aliases: &'static [(&'static str, &'static str)],
    /// How many operands after this level are subcommand words.
    pub subcommands: u8,
    /// Options are whole words after one dash (`find -name`, `terraform -auto-approve`).
    pub single_dash_long: bool,
    /// Options end at the first operand (wrappers, interpreters: the rest belongs to the
    /// command they run).
    pub options_first: bool,
    /// `-4`, `-6` are flags rather than numbers.
    pub digit_flags: bool,
    /// `+x`, `+o name` turn options off (shells, `set`).
    pub plus_options: bool,
}

const D: Spec = Spec {
    short_values: "",
    optional_values: "",
    long_values: &[],
    aliases: &[],
    subcommands: 0,
    single_dash_long: false,
    options_first: false,
    digit_flags: false,
    plus_options: false,
};

/// The entry for `key`, after mapping look-alike programs onto one entry.
pub fn lookup(key: &str) -> Option<&'static Spec> {
    let (prog, rest) = key.split_once(' ').unwrap_or((key, ""));
    let prog = family(prog);
    let idx = if rest.is_empty() {
        TABLE.binary_search_by(|(k, _)| (*k).cmp(prog))
    } else {
        let mut full = String::with_capacity(prog.len() + 1 + rest.len());
        full.push_str(prog);
        full.push(' ');
        full.push_str(rest);
        TABLE.binary_search_by(|(k, _)| (*k).cmp(full.as_str()))
    };
    idx.ok().map(|i| &TABLE[i].1)
}

/// Programs that share another's grammar.
pub fn family(prog: &str) -> &str {
    match prog {
        "podman" | "nerdctl" => "docker",
        "python2" | "python3" | "pypy" | "pypy3" => "python",
        "nodejs" => "node",
        "pip3" => "pip",
        "tofu" | "terragrunt" => "terraform",
        "pnpm" | "yarn" | "bun" => "npm",
        "mariadb" => "mysql",
        "mongo" => "mongosh",
        "netcat" | "nc.traditional" | "nc.openbsd" | "ncat" => "nc",
        "gawk" | "mawk" | "nawk" | "busybox-awk" => "awk",
        "sh" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "fish" | "csh" | "tcsh" => "bash",
        "xh" | "https" => "http",
        "pwsh" => "powershell",
        "doas" => "sudo",
        "kubecolor" | "oc" => "kubectl",
        "luajit" => "lua",
        _ => prog,
    }
}

macro_rules! s {
    ($($k:ident : $v:expr),* $(,)?) => { Spec { $($k: $v,)* ..D } };
}

const DOCKER_EXEC: Spec = s!(short_values: "euw", long_values: &["env", "user", "workdir", "env-file", "detach-keys"], options_first: true);
const DOCKER_RUN: Spec = s!(short_values: "acehlmpuvwPNt", long_values: &["name", "network", "net", "mount", "entrypoint", "env", "env-file", "cap-add", "cap-drop", "pid", "ipc", "uts", "userns", "volume", "publish", "user", "workdir", "hostname", "label", "memory", "cpus", "device", "security-opt", "add-host", "dns", "restart", "platform", "pull", "runtime", "shm-size", "ulimit", "gpus", "log-driver", "log-opt", "stop-signal", "cgroupns", "health-cmd", "tmpfs"], aliases: &[("volume", "v"), ("env", "e"), ("publish", "p"), ("user", "u"), ("workdir", "w"), ("interactive", "i"), ("tty", "t"), ("detach", "d")], options_first: true);

/// Sorted by key (a test checks): binary search keeps lookups cheap.
static TABLE: &[(&str, Spec)] = &[
    (
        "awk",
        s!(short_values: "fvF", long_values: &["file", "assign", "field-separator", "source", "include", "load"], aliases: &[("source", "e")], options_first: true),
    ),
    (
        "aws",
        s!(subcommands: 2, long_values: &["region", "profile", "output", "endpoint-url", "query", "color", "ca-bundle", "cli-read-timeout", "cli-connect-timeout", "cli-binary-format"]),
    ),
    (
        "az",
        s!(subcommands: 2, short_values: "ogn", long_values: &["subscription", "output", "query", "resource-group", "name"], aliases: &[("resource-group", "g"), ("name", "n"), ("output", "o")]),
    ),
    (
        "azcopy",
        s!(subcommands: 1, long_values: &["delete-destination", "include-pattern", "exclude-pattern", "log-level", "cap-mbps", "from-to"]),
    ),
    (
        "bash",
        s!(short_values: "oO", long_values: &["rcfile", "init-file"], options_first: true, plus_options: true),
    ),
    ("borg", s!(subcommands: 1)),
    ("bundle", s!(subcommands: 1)),
    ("busybox", s!(options_first: true)),
    (
        "cargo",
        s!(subcommands: 1, short_values: "CpjFZ", long_values: &["manifest-path", "registry", "index", "package", "target", "jobs", "features", "config", "color", "bin", "example", "message-format", "target-dir", "profile", "token", "test", "bench"], aliases: &[("package", "p"), ("dry-run", "n")]),
    ),
    (
        "chgrp",
        s!(aliases: &[("recursive", "R")], long_values: &["reference"]),
    ),
    (
        "chmod",
        s!(aliases: &[("recursive", "R")], long_values: &["reference"]),
    ),
    (
        "chown",
        s!(aliases: &[("recursive", "R")], long_values: &["reference", "from"]),
    ),
    (
        "chroot",
        s!(long_values: &["userspec", "groups"], options_first: true),
    ),
    ("chrt", s!(options_first: true)),
    ("command", s!(options_first: true)),
    (
        "composer",
        s!(subcommands: 1, short_values: "d", long_values: &["working-dir"]),
    ),
    (
        "cp",
        s!(short_values: "tS", long_values: &["target-directory", "suffix"], aliases: &[("recursive", "r"), ("R", "r"), ("force", "f"), ("archive", "a")]),
    ),
    ("crontab", s!(short_values: "u")),
    (
        "curl",
        s!(short_values: "AbcCdDeEFHKmoPQrtTuUwxXyYz", long_values: &["request", "header", "data", "data-raw", "data-binary", "data-urlencode", "data-ascii", "form", "form-string", "user", "user-agent", "referer", "upload-file", "proxy", "max-time", "output", "write-out", "cookie", "cookie-jar", "url", "connect-timeout", "retry", "resolve", "cacert", "cert", "key", "config", "json", "output-dir", "range", "interface", "dns-servers", "proxy-user", "oauth2-bearer", "connect-to", "retry-delay", "retry-max-time", "limit-rate", "max-filesize", "continue-at", "dump-header", "trace", "trace-ascii", "stderr", "unix-socket", "abstract-unix-socket", "aws-sigv4", "variable", "expand-url", "proto", "proto-redir", "capath", "ciphers", "mail-from", "mail-rcpt", "quote", "preproxy", "socks5", "socks5-hostname", "socks4", "socks4a"], aliases: &[("request", "X"), ("header", "H"), ("data", "d"), ("data-raw", "d"), ("data-binary", "d"), ("data-urlencode", "d"), ("data-ascii", "d"), ("json", "d"), ("form", "F"), ("form-string", "F"), ("user", "u"), ("output", "o"), ("upload-file", "T"), ("proxy", "x"), ("user-agent", "A"), ("remote-name", "O"), ("location", "L"), ("insecure", "k"), ("silent", "s"), ("fail", "f"), ("show-error", "S"), ("include", "i"), ("head", "I"), ("verbose", "v"), ("get", "G")]),
    ),
    ("dd", s!()),
    ("deno", s!(subcommands: 1)),
    (
        "docker",
        s!(subcommands: 1, short_values: "cHl", long_values: &["context", "host", "log-level", "config", "tlscacert", "tlscert", "tlskey"]),
    ),
    ("docker buildx", s!(subcommands: 1)),
    (
        "docker compose",
        s!(subcommands: 1, short_values: "fp", long_values: &["file", "project-name", "profile", "env-file", "project-directory"], aliases: &[("file", "f")]),
    ),
    (
        "docker compose down",
        s!(aliases: &[("volumes", "v")], long_values: &["rmi", "timeout"], short_values: "t"),
    ),
    ("docker container", s!(subcommands: 1)),
    ("docker container exec", DOCKER_EXEC),
    ("docker container run", DOCKER_RUN),
    ("docker exec", DOCKER_EXEC),
    ("docker image", s!(subcommands: 1)),
    ("docker network", s!(subcommands: 1)),
    (
        "docker rm",
        s!(aliases: &[("force", "f"), ("volumes", "v")]),
    ),
    ("docker rmi", s!(aliases: &[("force", "f")])),
    ("docker run", DOCKER_RUN),
    ("docker system", s!(subcommands: 1)),
    (
        "docker system prune",
        s!(aliases: &[("all", "a"), ("force", "f")], long_values: &["filter"]),
    ),
    ("docker volume", s!(subcommands: 1)),
    ("dotnet", s!(subcommands: 2)),
    (
        "env",
        s!(short_values: "uCS", long_values: &["unset", "chdir", "split-string"], aliases: &[("ignore-environment", "i"), ("split-string", "S"), ("unset", "u"), ("chdir", "C")], options_first: true),
    ),
    ("exec", s!(short_values: "a", options_first: true)),
    (
        "fdisk",
        s!(aliases: &[("list", "l")], short_values: "bcCHSuLot"),
    ),
    (
        "find",
        s!(single_dash_long: true, long_values: &["name", "iname", "path", "ipath", "type", "xtype", "maxdepth", "mindepth", "newer", "perm", "user", "group", "uid", "gid", "size", "mtime", "mmin", "atime", "amin", "ctime", "cmin", "regex", "iregex", "regextype", "fprint", "fprint0", "fprintf", "fls", "printf", "wholename", "iwholename", "samefile", "links", "inum", "fstype", "context", "used", "lname", "ilname", "newerXY", "files0-from", "D", "O"]),
    ),
    (
        "flock",
        s!(short_values: "wEc", long_values: &["timeout", "conflict-exit-code", "command"], aliases: &[("command", "c")], options_first: true),
    ),
    (
        "gcloud",
        s!(subcommands: 3, long_values: &["project", "account", "configuration", "format", "verbosity", "region", "zone", "impersonate-service-account", "billing-project", "flags-file", "filter", "location"]),
    ),
    (
        "gem",
        s!(subcommands: 1, long_values: &["source", "version", "host", "key"], short_values: "v"),
    ),
    (
        "gh",
        s!(subcommands: 2, short_values: "R", long_values: &["repo", "hostname"]),
    ),
    (
        "gh api",
        s!(short_values: "XfFHpqt", long_values: &["method", "field", "raw-field", "header", "preview", "jq", "template", "input", "hostname", "cache"], aliases: &[("method", "X")]),
    ),
    (
        "git",
        s!(subcommands: 1, short_values: "Cc", long_values: &["git-dir", "work-tree", "namespace", "config-env", "exec-path", "super-prefix", "list-cmds"]),
    ),
    (
        "git branch",
        s!(aliases: &[("delete", "d"), ("force", "f"), ("move", "m"), ("copy", "c")], short_values: "u", long_values: &["set-upstream-to", "contains", "no-contains", "merged", "no-merged", "points-at", "sort", "format", "color"]),
    ),
    (
        "git checkout",
        s!(short_values: "bB", long_values: &["orphan", "conflict", "pathspec-from-file"], aliases: &[("force", "f")]),
    ),
    (
        "git clean",
        s!(short_values: "e", long_values: &["exclude"], aliases: &[("force", "f"), ("dry-run", "n"), ("quiet", "q"), ("interactive", "i")]),
    ),
    (
        "git clone",
        s!(short_values: "obcju", long_values: &["origin", "branch", "config", "depth", "reference", "separate-git-dir", "template", "upload-pack", "jobs", "filter", "shallow-since", "shallow-exclude", "server-option", "bundle-uri"]),
    ),
    (
        "git commit",
        s!(short_values: "mFcCt", long_values: &["message", "file", "reuse-message", "reedit-message", "fixup", "squash", "author", "date", "template", "cleanup", "trailer", "pathspec-from-file"], aliases: &[("message", "m"), ("no-verify", "n"), ("all", "a")]),
    ),
    (
        "git push",
        s!(short_values: "o", long_values: &["repo", "receive-pack", "exec", "push-option", "signed"], aliases: &[("force", "f"), ("delete", "d"), ("set-upstream", "u"), ("dry-run", "n"), ("verbose", "v"), ("quiet", "q"), ("no-verify", "no-verify")]),
    ),
    ("git reset", s!(long_values: &["pathspec-from-file"])),
    (
        "git restore",
        s!(short_values: "s", long_values: &["source", "pathspec-from-file"], aliases: &[("staged", "S"), ("worktree", "W"), ("source", "s")]),
    ),
    (
        "git stash",
        s!(subcommands: 1, short_values: "m", long_values: &["message"]),
    ),
    (
        "git switch",
        s!(short_values: "cC", long_values: &["create", "force-create", "orphan"], aliases: &[("discard-changes", "discard-changes"), ("force", "f")]),
    ),
    (
        "git tag",
        s!(short_values: "mFu", long_values: &["message", "file", "local-user", "sort", "format", "contains", "points-at", "cleanup"], aliases: &[("delete", "d"), ("force", "f")]),
    ),
    (
        "glab",
        s!(subcommands: 2, short_values: "R", long_values: &["repo"]),
    ),
    (
        "glab api",
        s!(short_values: "XfFH", long_values: &["method", "field", "raw-field", "header"], aliases: &[("method", "X")]),
    ),
    ("go", s!(subcommands: 1)),
    (
        "gsutil",
        s!(subcommands: 1, short_values: "houpi", digit_flags: false),
    ),
    ("gsutil rm", s!(aliases: &[("recursive", "r"), ("R", "r")])),
    (
        "helm",
        s!(subcommands: 1, short_values: "n", long_values: &["namespace", "kube-context", "kubeconfig", "registry-config", "repository-cache", "repository-config"], aliases: &[("namespace", "n")]),
    ),
    (
        "http",
        s!(short_values: "aAov", long_values: &["auth", "auth-type", "output", "session", "session-read-only", "verify", "cert", "cert-key", "proxy", "timeout", "print", "pretty", "style", "format-options"], aliases: &[("auth", "a"), ("output", "o")]),
    ),
    (
        "install",
        s!(short_values: "mogtSTD", long_values: &["mode", "owner", "group", "target-directory", "suffix"], aliases: &[("target-directory", "t"), ("mode", "m")]),
    ),
    (
        "ionice",
        s!(short_values: "cnpPu", long_values: &["class", "classdata", "pid", "pgid", "uid"], options_first: true),
    ),
    (
        "iptables",
        s!(short_values: "tAIDRNXPLZjsdiopmgw", long_values: &["table", "append", "insert", "delete", "replace", "new-chain", "policy", "jump", "source", "destination", "in-interface", "out-interface", "protocol", "match", "goto", "dport", "sport", "to-destination", "to-source", "comment", "wait"], aliases: &[("flush", "F"), ("table", "t"), ("policy", "P"), ("delete-chain", "X")]),
    ),
    (
        "java",
        s!(single_dash_long: true, long_values: &["jar", "cp", "classpath", "p", "module-path", "m", "module"], options_first: true),
    ),
    ("kill", s!(short_values: "sn", long_values: &["signal"])),
    (
        "killall",
        s!(short_values: "sunoy", long_values: &["signal", "user", "older-than", "younger-than", "context"]),
    ),
    (
        "kubectl",
        s!(subcommands: 1, short_values: "nlfcoLs", long_values: &["namespace", "selector", "filename", "container", "output", "context", "kubeconfig", "cluster", "user", "server", "token", "as", "as-group", "grace-period", "timeout", "field-selector", "replicas", "type", "image", "port", "sort-by", "template", "dry-run", "cascade", "wait", "for", "since", "tail", "request-timeout", "certificate-authority", "client-certificate", "client-key", "overrides", "from-literal", "from-file", "restart", "serviceaccount", "role", "clusterrole", "verb", "resource"], aliases: &[("namespace", "n"), ("all-namespaces", "A"), ("filename", "f"), ("recursive", "R"), ("selector", "l"), ("container", "c"), ("output", "o")]),
    ),
    ("kubectl config", s!(subcommands: 1)),
    (
        "kubectl exec",
        s!(short_values: "c", long_values: &["container", "pod-running-timeout"], aliases: &[("stdin", "i"), ("tty", "t")]),
    ),
    ("kubectl rollout", s!(subcommands: 1)),
    ("lua", s!(short_values: "el", options_first: true)),
    ("mc", s!(subcommands: 1)),
    (
        "mongosh",
        s!(short_values: "upf", long_values: &["eval", "host", "port", "username", "password", "authenticationDatabase", "file", "authenticationMechanism", "tlsCAFile"], aliases: &[("file", "f")]),
    ),
    (
        "mv",
        s!(short_values: "tS", long_values: &["target-directory", "suffix"], aliases: &[("force", "f")]),
    ),
    (
        "mysql",
        s!(short_values: "euhDPSh", optional_values: "p", long_values: &["execute", "user", "host", "database", "port", "socket", "defaults-file", "default-character-set", "init-command", "login-path"], aliases: &[("execute", "e"), ("database", "D"), ("host", "h"), ("user", "u")]),
    ),
    (
        "nc",
        s!(short_values: "epcswiqIOTxXPbgGmMlo", long_values: &["exec", "sh-exec", "lua-exec", "proxy", "proxy-type", "proxy-auth", "source", "wait", "idle-timeout", "output", "hex-dump", "max-conns", "allow", "allowfile", "deny", "denyfile", "ssl-cert", "ssl-key", "ssl-trustfile", "ssl-ciphers", "ssl-servername", "ssl-alpn", "append-output", "send-only", "recv-only"], aliases: &[("exec", "e"), ("sh-exec", "c"), ("listen", "l")], digit_flags: true),
    ),
    ("nginx", s!(short_values: "scegp")),
    (
        "nice",
        s!(short_values: "n", long_values: &["adjustment"], options_first: true),
    ),
    (
        "node",
        s!(short_values: "erp", long_values: &["eval", "print", "require", "import", "input-type", "loader", "experimental-loader", "env-file", "conditions", "title"], aliases: &[("eval", "e"), ("print", "p"), ("require", "r")], options_first: true),
    ),
    ("nohup", s!(options_first: true)),
    (
        "npm",
        s!(subcommands: 1, short_values: "wC", long_values: &["prefix", "registry", "workspace", "userconfig", "cache", "tag", "otp", "access", "filter", "dir"]),
    ),
    (
        "nsenter",
        s!(short_values: "tSGwr", long_values: &["target", "setuid", "setgid", "wd", "root"], options_first: true),
    ),
    ("openssl", s!(subcommands: 1)),
    (
        "openssl enc",
        s!(single_dash_long: true, long_values: &["in", "out", "pass", "k", "K", "iv", "md", "S", "kfile", "engine", "bufsize"]),
    ),
    (
        "openssl s_client",
        s!(single_dash_long: true, long_values: &["connect", "host", "port", "servername", "CAfile", "CApath", "cert", "key", "proxy", "starttls", "verify", "cipher", "alpn", "sess_out", "sess_in", "keylogfile", "msgfile", "pass", "name", "xmpphost"]),
    ),
    ("osascript", s!(short_values: "els", options_first: true)),
    ("parted", s!(aliases: &[("list", "l"), ("script", "s")])),
    ("pdm", s!(subcommands: 1)),
    (
        "perl",
        s!(short_values: "eEIMmCdDx", optional_values: "il0", options_first: true),
    ),
    ("php", s!(short_values: "rcdfBRFEzt", options_first: true)),
    (
        "pip",
        s!(subcommands: 1, short_values: "rcfitev", long_values: &["index-url", "extra-index-url", "target", "prefix", "root", "requirement", "constraint", "trusted-host", "find-links", "src", "editable", "platform", "python-version", "implementation", "abi", "progress-bar", "log", "proxy", "retries", "timeout", "exists-action", "cert", "client-cert", "cache-dir", "python"], aliases: &[("index-url", "i"), ("requirement", "r"), ("find-links", "f"), ("target", "t"), ("editable", "e"), ("constraint", "c")]),
    ),
    ("pkexec", s!(long_values: &["user"], options_first: true)),
    (
        "pkill",
        s!(short_values: "sguUPtcGF", long_values: &["signal", "group", "euid", "uid", "parent", "terminal", "session", "pgroup", "pidfile", "ns", "nslist"], aliases: &[("full", "f")]),
    ),
    (
        "poetry",
        s!(subcommands: 1, short_values: "rC", long_values: &["repository", "directory", "username", "password", "cert", "client-cert", "build"]),
    ),
    (
        "powershell",
        s!(single_dash_long: true, long_values: &["Command", "command", "c", "File", "file", "f", "EncodedCommand", "encodedcommand", "e", "ec", "ExecutionPolicy", "executionpolicy", "ep", "WindowStyle", "windowstyle", "w", "WorkingDirectory", "wd"], options_first: true),
    ),
    (
        "psql",
        s!(short_values: "cdfhpUvoLTFRP", long_values: &["command", "dbname", "file", "host", "port", "username", "variable", "set", "output", "log-file", "field-separator", "record-separator", "pset"], aliases: &[("command", "c"), ("file", "f"), ("host", "h"), ("dbname", "d")]),
    ),
    (
        "python",
        s!(short_values: "cmWXQ", long_values: &["check-hash-based-pycs"], options_first: true),
    ),
    (
        "rclone",
        s!(subcommands: 1, long_values: &["config", "filter", "include", "exclude", "transfers", "checkers", "log-file", "log-level", "bwlimit", "max-age", "min-age", "backup-dir"], aliases: &[("dry-run", "n")]),
    ),
    (
        "redis-cli",
        s!(subcommands: 1, short_values: "hpansuri", long_values: &["user", "pass", "pattern", "eval", "cacert", "cert", "key", "sni", "tls-ciphers", "count", "quoted-pattern", "bigkeys-count"]),
    ),
    (
        "rm",
        s!(aliases: &[("recursive", "r"), ("R", "r"), ("force", "f"), ("dir", "d"), ("interactive", "i"), ("verbose", "v")]),
    ),
    ("rscript", s!(short_values: "e", options_first: true)),
    (
        "rsync",
        s!(short_values: "eBfTM", long_values: &["rsh", "exclude", "include", "filter", "files-from", "rsync-path", "password-file", "log-file", "backup-dir", "suffix", "chmod", "chown", "temp-dir", "compare-dest", "link-dest", "copy-dest", "port", "bwlimit", "timeout", "exclude-from", "include-from", "out-format", "info", "debug", "max-size", "min-size", "max-delete", "partial-dir", "usermap", "groupmap", "iconv", "log-file-format", "sockopts", "contimeout", "address"], aliases: &[("dry-run", "n"), ("recursive", "r"), ("archive", "a"), ("rsh", "e")], digit_flags: true),
    ),
    ("ruby", s!(short_values: "eIrCFE", options_first: true)),
    (
        "runuser",
        s!(short_values: "ugGc", long_values: &["user", "group", "supp-group", "command", "shell", "session-command", "whitelist-environment"], aliases: &[("command", "c")], options_first: true),
    ),
    ("s3cmd", s!(subcommands: 1)),
    ("scp", s!(short_values: "cFiJloPSDX", digit_flags: true)),
    (
        "sed",
        s!(short_values: "efl", optional_values: "i", long_values: &["expression", "file", "line-length"], aliases: &[("in-place", "i"), ("expression", "e"), ("file", "f")]),
    ),
    ("setsid", s!(options_first: true)),
    ("sftp", s!(short_values: "BbcDFiJloPRS", digit_flags: true)),
    (
        "shred",
        s!(short_values: "ns", long_values: &["iterations", "size", "random-source"], aliases: &[("remove", "u"), ("zero", "z"), ("force", "f"), ("iterations", "n"), ("size", "s")]),
    ),
    ("socat", s!(short_values: "Tdl")),
    (
        "sqlite3",
        s!(single_dash_long: true, long_values: &["cmd", "init", "separator", "newline", "nullvalue", "mmap", "pagecache", "lookaside", "heap", "vfs", "maxsize"]),
    ),
    (
        "ssh",
        s!(short_values: "BbcDEeFIiJLlmOoPpQRSWw", options_first: true, digit_flags: true),
    ),
    (
        "ssh-keygen",
        s!(short_values: "bCfFINOPRrstwZzTEaGjJKMSuVY"),
    ),
    ("sshpass", s!(short_values: "pfde", options_first: true)),
    (
        "stdbuf",
        s!(short_values: "ioe", long_values: &["input", "output", "error"], options_first: true),
    ),
    (
        "strace",
        s!(short_values: "oepsuEIbXPSa", options_first: true),
    ),
    (
        "su",
        s!(short_values: "cgGsw", long_values: &["command", "group", "supp-group", "shell", "session-command", "whitelist-environment"], aliases: &[("command", "c"), ("login", "l")], options_first: true),
    ),
    (
        "sudo",
        s!(short_values: "ugCDprtTURh", long_values: &["user", "group", "close-from", "chdir", "prompt", "role", "type", "other-user", "host", "chroot", "command-timeout"], aliases: &[("user", "u"), ("edit", "e"), ("shell", "s"), ("login", "i"), ("preserve-env", "E"), ("non-interactive", "n")], options_first: true),
    ),
    (
        "systemctl",
        s!(subcommands: 1, short_values: "tspHMnoq", long_values: &["type", "signal", "property", "host", "machine", "lines", "output", "state", "root", "kill-whom", "kill-value", "job-mode", "boot-loader-entry", "reboot-argument", "what", "when", "message", "timestamp", "image", "preset-mode", "drop-in"]),
    ),
    (
        "systemd-run",
        s!(short_values: "upEM", long_values: &["unit", "property", "description", "slice", "setenv", "uid", "gid", "working-directory", "on-active", "on-boot", "on-startup", "on-unit-active", "on-unit-inactive", "on-calendar", "on-clock-change", "on-timezone-change", "timer-property", "path-property", "socket-property", "nice", "machine", "host", "service-type"], options_first: true),
    ),
    (
        "tar",
        s!(short_values: "fCTXbKNgVLH", long_values: &["file", "directory", "files-from", "exclude-from", "exclude", "blocking-factor", "newer", "after-date", "label", "to-command", "use-compress-program", "owner", "group", "mode", "transform", "xform", "format", "checkpoint-action", "index-file", "info-script", "new-volume-script", "rsh-command"], aliases: &[("file", "f"), ("extract", "x"), ("get", "x"), ("create", "c"), ("directory", "C"), ("gzip", "z"), ("bzip2", "j"), ("xz", "J"), ("list", "t"), ("append", "r"), ("update", "u"), ("verbose", "v"), ("to-command", "to-command")]),
    ),
    ("taskset", s!(options_first: true)),
    ("tee", s!(aliases: &[("append", "a")])),
    (
        "terraform",
        s!(subcommands: 1, single_dash_long: true, long_values: &["var", "var-file", "state", "state-out", "backup", "lock-timeout", "parallelism", "out", "chdir", "replace", "target"]),
    ),
    ("terraform state", s!(subcommands: 1)),
    ("terraform workspace", s!(subcommands: 1)),
    (
        "time",
        s!(short_values: "fo", long_values: &["format", "output"], options_first: true),
    ),
    (
        "timeout",
        s!(short_values: "sk", long_values: &["signal", "kill-after"], options_first: true),
    ),
    (
        "truncate",
        s!(short_values: "sr", long_values: &["size", "reference", "io-blocks"], aliases: &[("size", "s"), ("reference", "r"), ("no-create", "c")]),
    ),
    (
        "twine",
        s!(subcommands: 1, short_values: "rup", long_values: &["repository", "repository-url", "username", "password", "config-file", "sign-with", "identity", "comment"]),
    ),
    (
        "unshare",
        s!(short_values: "SGRw", long_values: &["setuid", "setgid", "root", "wd", "map-user", "map-group", "propagation", "setgroups", "kill-child"], options_first: true),
    ),
    (
        "useradd",
        s!(short_values: "bcdefgGkKpsuUZ", long_values: &["base-dir", "comment", "home-dir", "expiredate", "inactive", "gid", "groups", "skel", "key", "password", "shell", "uid", "selinux-user", "root", "prefix"], aliases: &[("non-unique", "o"), ("groups", "G"), ("uid", "u"), ("gid", "g"), ("password", "p"), ("append", "a")]),
    ),
    (
        "userdel",
        s!(short_values: "RPZ", aliases: &[("remove", "r"), ("force", "f")]),
    ),
    (
        "usermod",
        s!(short_values: "cdefgGlLpsuvwRPZ", long_values: &["comment", "home", "expiredate", "inactive", "gid", "groups", "login", "password", "shell", "uid", "add-subuids", "del-subuids", "root", "prefix"], aliases: &[("non-unique", "o"), ("groups", "G"), ("uid", "u"), ("gid", "g"), ("password", "p"), ("append", "a")]),
    ),
    (
        "uv",
        s!(subcommands: 1, long_values: &["index-url", "extra-index-url", "index", "python", "directory", "project", "with"]),
    ),
    (
        "watch",
        s!(short_values: "nq", long_values: &["interval", "differences", "equexit", "errexit", "beep", "chgexit", "color", "precise", "no-title", "exec"], aliases: &[("exec", "x"), ("interval", "n")], options_first: true),
    ),
    (
        "wget",
        s!(short_values: "OoaPiUeTtwQlDARBXIe", long_values: &["output-document", "output-file", "append-output", "directory-prefix", "input-file", "user-agent", "execute", "timeout", "tries", "wait", "quota", "level", "domains", "accept", "reject", "base", "exclude-directories", "include-directories", "post-data", "post-file", "header", "method", "body-data", "body-file", "user", "password", "http-user", "http-password", "load-cookies", "save-cookies", "referer", "ca-certificate", "certificate", "private-key", "bind-address", "limit-rate", "dns-timeout", "connect-timeout", "read-timeout", "waitretry", "restrict-file-names", "proxy-user", "proxy-password", "ftp-user", "ftp-password", "config", "rejected-log", "report-speed", "secure-protocol"], aliases: &[("output-document", "O"), ("quiet", "q"), ("input-file", "i"), ("directory-prefix", "P")]),
    ),
    (
        "wipefs",
        s!(short_values: "otp", long_values: &["offset", "types", "backup"], aliases: &[("all", "a"), ("no-act", "n"), ("force", "f")]),
    ),
    (
        "xargs",
        s!(short_values: "IdEaLnPs", optional_values: "ie", long_values: &["delimiter", "eof", "arg-file", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"], aliases: &[("null", "0"), ("no-run-if-empty", "r"), ("verbose", "t"), ("interactive", "p"), ("arg-file", "a"), ("replace", "I")], options_first: true),
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique() {
        for pair in TABLE.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{} !< {}", pair[0].0, pair[1].0);
        }
    }

    #[test]
    fn families_share_entries() {
        assert!(lookup("podman rm").is_some());
        assert!(lookup("python3").is_some());
        assert!(lookup("zsh").is_some());
        assert!(lookup("nonexistent").is_none());
    }
}
