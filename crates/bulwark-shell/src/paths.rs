//! Paths as a command names them, reduced to one spelling: `$HOME`, `${HOME}` and `~` are
//! `~`; `${TMPDIR:-/tmp}` is `$TMPDIR`; `.` segments, repeated and trailing slashes go, and
//! `..` is resolved lexically (`/tmp/../etc` is `/etc`). Rules then compare one form.

/// Whether an operand should be read as a path.
pub fn looks_like_path(s: &str) -> bool {
    // `host:/etc` and `user@host:dir/` name another machine's files.
    let remote = s
        .find(':')
        .is_some_and(|c| s.find('/').is_none_or(|slash| c < slash) && !s[..c].contains(['$', '{']));
    !s.is_empty()
        && !s.contains("://")
        && !remote
        && (s.starts_with(['/', '~', '.', '$']) || s.contains('/') || s == "*")
}

/// The normalised form of a path-like operand; other operands come back unchanged.
///
/// ```
/// use bulwark_shell::paths::normalize;
/// assert_eq!(normalize("/tmp/../etc/"), "/etc");
/// assert_eq!(normalize("${HOME}/.ssh//id_rsa"), "~/.ssh/id_rsa");
/// assert_eq!(normalize("./build/"), "build");
/// assert_eq!(normalize("//"), "/");
/// assert_eq!(normalize("origin"), "origin");
/// ```
pub fn normalize(s: &str) -> String {
    if !looks_like_path(s) || s == "*" {
        return s.to_string();
    }
    let mut text = s.to_string();
    for (from, to) in [
        ("${HOME}", "~"),
        ("$HOME", "~"),
        ("${TMPDIR:-/tmp}", "$TMPDIR"),
        ("${TMPDIR}", "$TMPDIR"),
        ("${TMP}", "$TMP"),
    ] {
        if let Some(rest) = text.strip_prefix(from)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            text = format!("{to}{rest}");
        }
    }
    let absolute = text.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in text.split('/') {
        match seg {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." && !(parts.len() == 1 && is_root_like(last)) => {
                    parts.pop();
                }
                // `/..` is `/`; `~/..` is the parent of home, which stays written as is.
                _ if absolute => {}
                _ => parts.push(".."),
            },
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_string()
    } else {
        joined
    }
}

fn is_root_like(seg: &str) -> bool {
    seg == "~" || seg.starts_with('$')
}

/// Whether a normalised path is a credential or secret store: private keys, cloud and
/// tool credentials, password databases, browser profiles, `.env` files.
///
/// ```
/// use bulwark_shell::paths::is_sensitive;
/// assert!(is_sensitive("~/.ssh/id_ed25519"));
/// assert!(is_sensitive("/etc/shadow"));
/// assert!(is_sensitive("app/.env.production"));
/// assert!(!is_sensitive("src/main.rs"));
/// ```
pub fn is_sensitive(path: &str) -> bool {
    let p = path.trim_end_matches('/');
    let base = p.rsplit('/').next().unwrap_or(p);
    const FILES: &[&str] = &[
        ".netrc",
        ".pgpass",
        ".git-credentials",
        ".npmrc",
        ".pypirc",
        ".my.cnf",
        ".boto",
        ".s3cfg",
        "credentials",
        "credentials.json",
        "credentials.db",
        "access_tokens.db",
        "accesstokens.json",
        "msal_token_cache.json",
        "application_default_credentials.json",
        "logins.json",
        "key4.db",
        "key3.db",
        "login data",
        "cookies",
        "cookies.sqlite",
        "keychain-2.db",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "id_ecdsa_sk",
        "id_ed25519_sk",
        ".env",
        "master.key",
        "secrets.yml",
        "secrets.yaml",
        ".vault-token",
        "kubeconfig",
        "terraform.tfstate",
        ".bash_history",
        ".zsh_history",
        ".psql_history",
        ".mysql_history",
    ];
    let lower = base.to_ascii_lowercase();
    if FILES.contains(&lower.as_str()) {
        return true;
    }
    if lower.starts_with(".env.") && !lower.ends_with(".example") && !lower.ends_with(".sample") {
        return true;
    }
    if (lower.starts_with("id_rsa")
        || lower.starts_with("id_ed25519")
        || lower.starts_with("id_ecdsa"))
        && !lower.ends_with(".pub")
    {
        return true;
    }
    if lower.ends_with(".pem") && lower.contains("key")
        || lower.ends_with(".key")
        || lower.ends_with(".p12")
        || lower.ends_with(".pfx")
        || lower.ends_with(".kdbx")
    {
        return true;
    }
    let homed = home_relative(p);
    if homed.starts_with("~/.ssh/") && (lower.ends_with(".pub") || lower.starts_with("known_hosts"))
    {
        return false;
    }
    SENSITIVE_DIRS.iter().any(|d| {
        let d_trim = d.trim_end_matches('/');
        homed.starts_with(d) || homed == d_trim || p.starts_with(d) || p == d_trim
    }) || p.starts_with("/proc/") && (p.ends_with("/mem") || p.ends_with("/environ"))
}

/// Credential and secret stores named by where they are: everything under each (or the
/// file itself).
const SENSITIVE_DIRS: &[&str] = &[
    "~/.ssh/",
    "~/.aws/",
    "~/.gnupg/",
    "~/.kube/",
    "~/.azure/",
    "~/.config/gcloud/",
    "~/.docker/config.json",
    "~/.config/gh/hosts.yml",
    "~/.mozilla/",
    "~/.config/google-chrome/",
    "~/.config/chromium/",
    "~/Library/Keychains/",
    "~/.password-store/",
    "~/.oci/",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/master.passwd",
    "/etc/security/opasswd",
    "/etc/sudoers",
    "/etc/ssh/ssh_host_",
    "/root/.ssh/",
    "/var/run/secrets/",
    "/run/secrets/",
];

/// Whether a directory holds a credential or secret store: it is one or lies inside one
/// ([`is_sensitive`]), or one lies inside it — a home directory (its owner's `~/.ssh`),
/// a parent of home directories (`/home`, `/`), `/etc` (`/etc/shadow`), `~/.config`
/// (`~/.config/gcloud`), `/proc`. For a folder offered to be worked in (an MCP client's
/// roots): offering one of these offers its keys. Compared without regard to case, as the
/// file systems of macOS and Windows compare names.
///
/// ```
/// use bulwark_shell::paths::holds_sensitive;
/// assert!(holds_sensitive("/root/.ssh"));
/// assert!(holds_sensitive("/home/bob"));
/// assert!(holds_sensitive("/etc"));
/// assert!(!holds_sensitive("/home/bob/projects/app"));
/// ```
pub fn holds_sensitive(dir: &str) -> bool {
    let d = normalize(dir);
    if is_sensitive(&d) {
        return true;
    }
    let mut forms = vec![
        d.to_ascii_lowercase(),
        home_relative(&d).to_ascii_lowercase(),
    ];
    forms.push(home_relative(&forms[0]));
    // `a` is `p` or one of its parents.
    let holds = |a: &str, p: &str| {
        a == "/" || a == p || p.strip_prefix(a).is_some_and(|rest| rest.starts_with('/'))
    };
    let homes = ["/home", "/users", "/root", "~", "/proc"];
    let own = own_home().map(str::to_ascii_lowercase);
    forms.iter().any(|f| {
        SENSITIVE_DIRS.iter().any(|s| {
            let s = s.trim_end_matches('/').to_ascii_lowercase();
            holds(f, &s) || holds(&s, f)
        }) || homes.iter().any(|h| holds(f, h))
            || own.as_deref().is_some_and(|h| holds(f, h))
    })
}

/// `/home/alice/.ssh/x` and `/root/.ssh/x` read as `~/.ssh/x`, and so does a path under the
/// actual home directory (`$HOME`), wherever it is (`/var/lib/jenkins`, `/srv/me`).
pub fn home_relative(p: &str) -> String {
    home_relative_to(p, own_home())
}

/// The home directory of the user the analyser runs for: `$HOME` when it is an absolute
/// path other than `/`, read once. An agent's `~` is this directory, so its paths are
/// judged under their `~/…` names too.
pub fn own_home() -> Option<&'static str> {
    static HOME: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let h = std::env::var("HOME").ok()?;
        let h = normalize(&h);
        (h.starts_with('/') && h != "/").then_some(h)
    })
    .as_deref()
}

/// [`home_relative`] with `home` as the actual home directory.
///
/// ```
/// use bulwark_shell::paths::home_relative_to;
/// assert_eq!(home_relative_to("/srv/me/.aws/credentials", Some("/srv/me")), "~/.aws/credentials");
/// assert_eq!(home_relative_to("/srv/meta/x", Some("/srv/me")), "/srv/meta/x");
/// assert_eq!(home_relative_to("/root/.ssh/id_rsa", None), "~/.ssh/id_rsa");
/// ```
pub fn home_relative_to(p: &str, home: Option<&str>) -> String {
    if let Some(h) = home
        && let Some(rest) = p.strip_prefix(h)
        && (rest.is_empty() || rest.starts_with('/'))
    {
        return format!("~{rest}");
    }
    if let Some(rest) = p.strip_prefix("/home/") {
        if let Some((_, tail)) = rest.split_once('/') {
            return format!("~/{tail}");
        }
        return "~".into();
    }
    if let Some(rest) = p.strip_prefix("/root")
        && (rest.is_empty() || rest.starts_with('/'))
    {
        return format!("~{rest}");
    }
    if let Some(rest) = p.strip_prefix("/Users/") {
        if let Some((_, tail)) = rest.split_once('/') {
            return format!("~/{tail}");
        }
        return "~".into();
    }
    p.to_string()
}

/// Whether a normalised path names something inside the working directory: relative,
/// not climbing out (`..`), not from home (`~`) and not built from a variable (`$X`).
///
/// ```
/// use bulwark_shell::paths::{is_workspace_relative, normalize};
/// assert!(is_workspace_relative(&normalize("./disk.img")));
/// assert!(!is_workspace_relative(&normalize("../other/x")));
/// assert!(!is_workspace_relative(&normalize("~/notes")));
/// assert!(!is_workspace_relative(&normalize("/etc/passwd")));
/// ```
pub fn is_workspace_relative(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with(['/', '~', '$', '`'])
        && p != ".."
        && !p.starts_with("../")
        && !p.contains("/../")
}

/// Device nodes that are not storage: writing to them destroys nothing.
pub fn is_harmless_device(p: &str) -> bool {
    matches!(
        p,
        "/dev/null"
            | "/dev/zero"
            | "/dev/full"
            | "/dev/stdout"
            | "/dev/stderr"
            | "/dev/stdin"
            | "/dev/tty"
            | "/dev/random"
            | "/dev/urandom"
    ) || p.starts_with("/dev/fd/")
        || p.starts_with("/dev/pts/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation() {
        for (a, b) in [
            ("/", "/"),
            ("/*", "/*"),
            ("~", "~"),
            ("~/", "~"),
            ("$HOME", "~"),
            ("$HOME/", "~"),
            ("${TMPDIR:-/tmp}/build", "$TMPDIR/build"),
            ("/tmp/../etc", "/etc"),
            ("/../../etc", "/etc"),
            ("../..", "../.."),
            ("a/../../b", "../b"),
            ("~/../root", "~/../root"),
            ("/var/log/", "/var/log"),
            ("https://x//y", "https://x//y"),
            ("+main", "+main"),
        ] {
            assert_eq!(normalize(a), b, "{a}");
        }
    }

    #[test]
    fn folders_that_hold_credential_stores() {
        for p in [
            "/",
            "/root/.ssh",
            "~/.ssh",
            "~/.aws/",
            "/home/bob",
            "/home/bob/.SSH",
            "/home",
            "/Users",
            "/Users/Bob/.aws",
            "/etc",
            "/etc/ssh",
            "/var",
            "/run",
            "~/.config",
            "~/Library",
            "/proc",
            "/home/bob/work/../.gnupg",
        ] {
            assert!(holds_sensitive(p), "{p}");
        }
        for p in [
            "/work/app",
            "/home/bob/projects/app",
            "~/src/bulwark",
            "/tmp/scratch",
            "/srv/www",
            "/etc-backup",
        ] {
            assert!(!holds_sensitive(p), "{p}");
        }
    }

    #[test]
    fn sensitive() {
        for p in [
            "~/.ssh/id_rsa",
            "/home/bob/.aws/credentials",
            "/root/.ssh/authorized_keys",
            ".env",
            "/etc/shadow",
            "~/.kube/config",
            "/proc/1234/mem",
        ] {
            assert!(is_sensitive(p), "{p}");
        }
        for p in [
            "keys/id_rsa.pub",
            "README.md",
            "/etc/passwd",
            ".env.example",
            "~/.bashrc",
        ] {
            assert!(!is_sensitive(p), "{p}");
        }
    }
}
