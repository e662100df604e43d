//! Windows command lines (`cmd.exe`): `dir C:\`, `del /s /q C:\build`, `type src\main.rs`.
//!
//! Read as bash, such a line is nonsense — `\` escapes the next letter, `C:\` ends in a
//! line continuation — and would be refused as unparsable, or worse, read as other words.
//! A line that shows it is Windows (a drive path, a `%VARIABLE%`, or a cmd switch after a
//! cmd verb) is rewritten into the POSIX commands it means and analysed as those: `dir` is
//! `ls`, `type` is `cat`, `del /s /q` is `rm -r -f`, `rd /s` is `rm -r`, `copy`/`xcopy` are
//! `cp`, `robocopy /mir` is `rsync --delete`, `format C:` writes a disk. Drive roots become
//! `/` (`C:\Windows` is `/Windows`), `%USERPROFILE%` is `~`, `%TEMP%` is `/tmp`. A verb
//! with no POSIX twin keeps its name and is judged as a program Bulwark does not know.

/// Segments per line and tokens per segment that are rewritten; more is left to bash
/// (which fails closed on what it cannot read).
const MAX_SEGMENTS: usize = 64;
const MAX_TOKENS: usize = 256;

/// The POSIX form of a Windows command line, or `None` when the line is not one.
pub(crate) fn translate(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() || text.len() > crate::parse::MAX_BYTES || text.contains('\n') {
        return None;
    }
    let segments = split(text)?;
    if !is_windows(&segments) {
        return None;
    }
    let mut out = String::new();
    for (seg, op) in segments {
        out.push_str(&command(&seg)?);
        if let Some(op) = op {
            out.push(' ');
            out.push_str(match op {
                "&" => ";",
                other => other,
            });
            out.push(' ');
        }
    }
    Some(out)
}

/// Whether a line shows it is cmd.exe's: a drive path, a `%VARIABLE%`, a backslash path,
/// or a switch after a verb only cmd has.
fn is_windows(segments: &[(Vec<String>, Option<&'static str>)]) -> bool {
    let Some(first) = segments.first().and_then(|(t, _)| t.first()) else {
        return false;
    };
    let verb = verb(first);
    if !VERBS.iter().any(|(v, _)| *v == verb) {
        return false;
    }
    let tokens = || segments.iter().flat_map(|(t, _)| t.iter());
    let drive = tokens().any(|t| drive_path(t).is_some());
    let percent = tokens().any(|t| {
        let parts: Vec<&str> = t.split('%').collect();
        parts.len() >= 3
            && parts[1..parts.len() - 1]
                .iter()
                .any(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    });
    let backslash_path = tokens().skip(1).any(|t| t.contains('\\'));
    let cmd_only = CMD_ONLY.contains(&verb.as_str());
    let switch = tokens().skip(1).any(|t| is_switch(t));
    drive || percent || cmd_only && (switch || backslash_path) || verb == "cmd" && switch
}

/// Verbs with their POSIX twin ("" = keep the name).
const VERBS: &[(&str, &str)] = &[
    ("dir", "ls"),
    ("type", "cat"),
    ("more", "more"),
    ("del", "rm"),
    ("erase", "rm"),
    ("rd", "rmdir"),
    ("rmdir", "rmdir"),
    ("copy", "cp"),
    ("xcopy", "cp"),
    ("robocopy", "rsync"),
    ("move", "mv"),
    ("ren", "mv"),
    ("rename", "mv"),
    ("md", "mkdir"),
    ("mkdir", "mkdir"),
    ("cd", "cd"),
    ("chdir", "cd"),
    ("echo", "echo"),
    ("findstr", "grep"),
    ("where", "which"),
    ("cls", "clear"),
    ("ver", "uname"),
    ("set", "env"),
    ("tree", "tree"),
    ("sort", "sort"),
    ("fc", "diff"),
    ("comp", "cmp"),
    ("ipconfig", "ip"),
    ("tasklist", "ps"),
    ("taskkill", "kill"),
    ("systeminfo", "uname"),
    ("whoami", "whoami"),
    ("hostname", "hostname"),
    ("shutdown", "shutdown"),
    ("format", "mkfs"),
    ("cmd", "cmd"),
    ("attrib", ""),
    ("icacls", ""),
    ("takeown", ""),
    ("reg", ""),
    ("sc", ""),
    ("schtasks", ""),
    ("net", ""),
    ("netsh", ""),
    ("wmic", ""),
    ("bcdedit", ""),
    ("vssadmin", ""),
    ("cipher", ""),
    ("certutil", ""),
    ("bitsadmin", ""),
    ("start", ""),
];

/// Verbs only cmd.exe has (a switch or a backslash path after one marks a Windows line).
const CMD_ONLY: &[&str] = &[
    "dir",
    "del",
    "erase",
    "rd",
    "copy",
    "xcopy",
    "robocopy",
    "move",
    "ren",
    "md",
    "type",
    "findstr",
    "cls",
    "ver",
    "ipconfig",
    "tasklist",
    "taskkill",
    "systeminfo",
    "format",
    "attrib",
    "icacls",
    "takeown",
    "reg",
    "sc",
    "schtasks",
    "netsh",
    "wmic",
    "bcdedit",
    "vssadmin",
    "cipher",
    "certutil",
    "bitsadmin",
    "cmd",
    "where",
    "fc",
    "rename",
];

fn verb(token: &str) -> String {
    let t = token.rsplit(['\\', '/']).next().unwrap_or(token);
    let t = t.to_ascii_lowercase();
    t.strip_suffix(".exe").map(str::to_string).unwrap_or(t)
}

/// `/s`, `/Q`, `/A:H`, `/mir`, `/?`.
fn is_switch(t: &str) -> bool {
    let Some(rest) = t.strip_prefix('/') else {
        return false;
    };
    !rest.is_empty()
        && rest.len() <= 8
        && rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '?')
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '-' | '+' | '?'))
        && !rest.contains('/')
}

/// `C:`, `C:\`, `c:\Users\me` as `/`, `/`, `/Users/me`.
fn drive_path(t: &str) -> Option<String> {
    let b = t.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        let rest = &t[2..];
        if rest.is_empty() || rest.starts_with(['\\', '/']) {
            let p = rest.replace('\\', "/");
            return Some(if p.is_empty() { "/".to_string() } else { p });
        }
    }
    None
}

/// A token's POSIX spelling: paths with `/`, `%VAR%` as `$VAR`, `nul` as `/dev/null`.
fn path(t: &str) -> String {
    if let Some(p) = drive_path(t) {
        return p;
    }
    let mut t = t.to_string();
    for (from, to) in [
        ("%USERPROFILE%", "~"),
        ("%HOMEPATH%", "~"),
        ("%HOMEDRIVE%%HOMEPATH%", "~"),
        ("%TEMP%", "/tmp"),
        ("%TMP%", "/tmp"),
        ("%SYSTEMROOT%", "/Windows"),
        ("%WINDIR%", "/Windows"),
        ("%SYSTEMDRIVE%", ""),
    ] {
        let upper = t.to_ascii_uppercase();
        if let Some(at) = upper.find(from) {
            t.replace_range(at..at + from.len(), to);
        }
    }
    // Any other `%NAME%` is an environment variable.
    let parts: Vec<&str> = t.split('%').collect();
    if parts.len() >= 3 {
        let mut s = String::new();
        for (i, p) in parts.iter().enumerate() {
            if i % 2 == 1 && i + 1 < parts.len() {
                s.push_str("${");
                s.push_str(p);
                s.push('}');
            } else {
                s.push_str(p);
            }
        }
        t = s;
    }
    if t.eq_ignore_ascii_case("nul") {
        return "/dev/null".to_string();
    }
    if let Some(p) = drive_path(&t) {
        return p;
    }
    t.replace('\\', "/")
}

/// Single-quotes a word for bash unless it is plain.
fn quote(w: &str) -> String {
    if !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,~".contains(c))
    {
        return w.to_string();
    }
    if w.starts_with("${") || w.starts_with('~') || w.starts_with('$') {
        // Keep variables and home expandable; quote the rest of the word.
        return format!("\"{}\"", w.replace(['"', '`'], ""));
    }
    format!("'{}'", w.replace('\'', r"'\''"))
}

/// One cmd command as POSIX words.
fn command(tokens: &[String]) -> Option<String> {
    let first = tokens.first()?;
    let v = verb(first);
    let twin = VERBS
        .iter()
        .find(|(w, _)| *w == v)
        .map(|(_, t)| *t)
        .unwrap_or("");
    let name = if twin.is_empty() {
        v.clone()
    } else {
        twin.to_string()
    };
    let switches: Vec<String> = tokens[1..]
        .iter()
        .filter(|t| is_switch(t))
        .map(|t| t[1..].to_ascii_lowercase())
        .collect();
    let has = |s: &str| {
        switches
            .iter()
            .any(|x| x == s || x.starts_with(&format!("{s}:")))
    };
    let operands: Vec<&String> = tokens[1..].iter().filter(|t| !is_switch(t)).collect();
    if v == "cmd" {
        // `cmd /c LINE`, `cmd /k LINE`: the rest is a line of its own.
        let at = tokens
            .iter()
            .position(|t| matches!(t.to_ascii_lowercase().as_str(), "/c" | "/k" | "/r"))?;
        let rest: Vec<String> = tokens[at + 1..].to_vec();
        let inner = rest.join(" ");
        let inner = inner.trim_matches('"');
        return Some(match translate(inner) {
            Some(t) => format!("bash -c {}", quote(&t)),
            None => format!("bash -c {}", quote(inner)),
        });
    }
    let mut words: Vec<String> = vec![name.clone()];
    match v.as_str() {
        "dir" | "tree" if has("s") => words.push("-R".into()),
        "del" | "erase" => {
            if has("s") {
                words.push("-r".into());
            }
            if has("q") || has("f") {
                words.push("-f".into());
            }
        }
        "rd" | "rmdir" if has("s") => {
            words[0] = "rm".into();
            words.push("-r".into());
            if has("q") {
                words.push("-f".into());
            }
        }
        "xcopy" | "robocopy" if has("s") || has("e") || has("mir") => {
            words.push("-r".into());
        }
        "md" | "mkdir" => words.push("-p".into()),
        "format" => {
            // `format D: /q` writes a volume's file system.
            let target = operands
                .first()
                .and_then(|t| t.chars().next())
                .map(|c| format!("/dev/disk{}", c.to_ascii_lowercase()))
                .unwrap_or_else(|| "/dev/disk".into());
            return Some(format!("mkfs {target}"));
        }
        _ => {}
    }
    if v == "robocopy" && (has("mir") || has("purge")) {
        words[0] = "rsync".into();
        words.push("-a".into());
        words.push("--delete".into());
    }
    if v == "set" && !operands.is_empty() {
        // `set NAME=value` is an assignment; `set` alone lists the environment.
        return Some(
            operands
                .iter()
                .map(|o| quote(&path(o)))
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
    for o in operands.iter().take(MAX_TOKENS) {
        if let Some(rest) = o.strip_prefix(">>").or_else(|| o.strip_prefix('>')) {
            let op = if o.starts_with(">>") { ">>" } else { ">" };
            words.push(op.into());
            if !rest.is_empty() {
                words.push(quote(&path(rest)));
            }
            continue;
        }
        if matches!(o.as_str(), "2>" | "2>>" | "<" | "2>&1" | "1>") {
            words.push(o.to_string());
            continue;
        }
        words.push(quote(&path(o)));
    }
    Some(words.join(" "))
}

/// Splits a line on `&&`, `||`, `&` and `|` outside double quotes (cmd has no single
/// quotes), and each part into words; `^` escapes the next character.
#[allow(clippy::type_complexity)]
fn split(text: &str) -> Option<Vec<(Vec<String>, Option<&'static str>)>> {
    let mut out: Vec<(Vec<String>, Option<&'static str>)> = Vec::new();
    let mut tokens: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    let flush = |cur: &mut String, tokens: &mut Vec<String>| {
        if !cur.is_empty() {
            tokens.push(std::mem::take(cur));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '^' if !quoted => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            ' ' | '\t' if !quoted => flush(&mut cur, &mut tokens),
            '&' | '|' if !quoted => {
                flush(&mut cur, &mut tokens);
                let op = match (c, chars.peek()) {
                    ('&', Some('&')) => {
                        chars.next();
                        "&&"
                    }
                    ('|', Some('|')) => {
                        chars.next();
                        "||"
                    }
                    ('&', _) => "&",
                    _ => "|",
                };
                if tokens.is_empty() {
                    return None;
                }
                out.push((std::mem::take(&mut tokens), Some(op)));
                if out.len() > MAX_SEGMENTS {
                    return None;
                }
            }
            c => cur.push(c),
        }
        if tokens.len() > MAX_TOKENS {
            return None;
        }
    }
    flush(&mut cur, &mut tokens);
    if quoted {
        return None;
    }
    if tokens.is_empty() {
        // A trailing operator (`dir &`) runs nothing after it.
        if let Some(last) = out.last_mut() {
            last.1 = None;
        }
    } else {
        out.push((tokens, None));
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn windows_lines_become_the_commands_they_name() {
        for (cmd, want) in [
            (r"dir C:\", Some("ls /")),
            (
                r"dir /s C:\Users\me\project",
                Some("ls -R /Users/me/project"),
            ),
            (r"type src\main.rs", Some("cat src/main.rs")),
            (r"del /s /q C:\", Some("rm -r -f /")),
            (r"rd /s /q %USERPROFILE%", Some("rm -r -f ~")),
            (r"dir C:\ & del /q x.txt", Some("ls / ; rm -f x.txt")),
            (r"echo %PATH%", Some("echo \"${PATH}\"")),
            (r"format D: /q", Some("mkfs /dev/diskd")),
            (r#"cmd /c "del /s /q C:\""#, Some("bash -c 'rm -r -f /'")),
            ("ls -la", None),
            ("type ls", None),
            ("dir", None),
            ("echo hello", None),
            (r#"printf '%s\n' a"#, None),
        ] {
            assert_eq!(translate(cmd).as_deref(), want, "{cmd}");
        }
    }
}
