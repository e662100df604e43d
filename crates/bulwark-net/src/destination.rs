//! Destinations: what a URL, `host[:port]` or address literal points at.
//!
//! A destination is read the way several common parsers would read it, not just one:
//! the WHATWG URL standard (browsers, Node, Rust's `url`), RFC 3986 (Python's `urlsplit`,
//! Go's `net/url`), a reader that ends userinfo at the first `@`, one that ignores `?`/`#`
//! before the first `/`, and one that stops at the first control or space character.
//! Every host these readings produce is kept, so an SSRF check can fail closed when the
//! readings disagree instead of trusting the one reading a later HTTP client may not share.

use std::net::{IpAddr, Ipv6Addr};

use thiserror::Error;
use url::Url;

use crate::class::{HostClass, classify_domain, classify_ip};

/// Inputs longer than this are refused: no real destination needs more.
pub const MAX_DESTINATION_LEN: usize = 4096;

/// A host as the URL parser normalised it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Host {
    /// An IP literal in any spelling, canonicalised.
    Ip(IpAddr),
    /// A domain name, lower-case ASCII (IDNA applied).
    Domain(String),
}

impl Host {
    /// The host's SSRF class.
    pub fn class(&self) -> HostClass {
        match self {
            Host::Ip(ip) => classify_ip(*ip),
            Host::Domain(d) => classify_domain(d),
        }
    }
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Ip(IpAddr::V6(v6)) => write!(f, "[{v6}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
            Host::Domain(d) => f.write_str(d),
        }
    }
}

/// Why a destination could not be read.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ParseError {
    /// The input was empty after trimming.
    #[error("empty destination")]
    Empty,
    /// The input exceeded [`MAX_DESTINATION_LEN`].
    #[error("destination longer than {MAX_DESTINATION_LEN} bytes")]
    TooLong,
    /// The URL standard refuses it; lenient parsers may not, so it is never "clean".
    #[error("unparsable destination {input:?}: {reason}")]
    Invalid {
        /// The text as given (truncated for display).
        input: String,
        /// What the parser objected to.
        reason: String,
    },
}

/// A parsed destination with every host that some common parser would connect to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Destination {
    /// The scheme, lower-case, when the input was a URL (`https`, `file`, …).
    pub scheme: Option<String>,
    /// The host under the WHATWG reading.
    pub host: Host,
    /// The port, when one was given.
    pub port: Option<u16>,
    /// Hosts under other readings that differ from [`Destination::host`]; empty when every
    /// reading agrees.
    pub alternates: Vec<Host>,
}

impl Destination {
    /// Every host a common parser would read, the WHATWG one first.
    pub fn hosts(&self) -> impl Iterator<Item = &Host> {
        std::iter::once(&self.host).chain(self.alternates.iter())
    }

    /// Whether common parsers disagree about the host.
    pub fn is_ambiguous(&self) -> bool {
        !self.alternates.is_empty()
    }
}

/// Schemes whose authority is a network host. Others (`file:`, `mailto:`, `data:`) name no
/// host at all or are opaque to the URL standard.
const HIERARCHICAL: &[&str] = &[
    "http",
    "https",
    "ws",
    "wss",
    "ftp",
    "ftps",
    "gopher",
    "dict",
    "ldap",
    "ldaps",
    "tftp",
    "ssh",
    "sftp",
    "git",
    "smb",
    "redis",
    "mongodb",
    "postgres",
    "postgresql",
    "mysql",
    "telnet",
    "imap",
    "smtp",
    "jar",
    "netdoc",
    "rtsp",
    "s3",
];

/// Parses a destination: a URL, `host`, `host:port`, `[v6]:port` or a bare address.
///
/// ```
/// use bulwark_net::{parse, Host};
/// let d = parse("http://0x7f.1:8080/admin").unwrap();
/// assert_eq!(d.host, Host::Ip("127.0.0.1".parse().unwrap()));
/// assert_eq!(d.port, Some(8080));
/// ```
pub fn parse(input: &str) -> Result<Destination, ParseError> {
    if input.len() > MAX_DESTINATION_LEN {
        return Err(ParseError::TooLong);
    }
    // WHATWG trims C0 controls and spaces at both ends.
    let trimmed = input.trim_matches(|c: char| c <= ' ');
    if trimmed.is_empty() {
        return Err(ParseError::Empty);
    }
    let invalid = |reason: &str| ParseError::Invalid {
        input: shorten(input),
        reason: reason.to_string(),
    };

    if let Some(host) = bare_ipv6(trimmed) {
        return Ok(Destination {
            scheme: None,
            host: Host::Ip(IpAddr::V6(host)),
            port: None,
            alternates: Vec::new(),
        });
    }

    let (url_text, had_scheme) = match scheme_of(trimmed) {
        Some(_) => (trimmed.to_string(), true),
        None => (format!("http://{trimmed}"), false),
    };
    let url = Url::parse(&url_text).map_err(|e| invalid(&e.to_string()))?;
    let scheme = url.scheme().to_ascii_lowercase();
    let host = match url.host() {
        Some(url::Host::Ipv4(v4)) => Host::Ip(IpAddr::V4(v4)),
        Some(url::Host::Ipv6(v6)) => Host::Ip(IpAddr::V6(v6)),
        Some(url::Host::Domain(d)) => domain_or_address(d),
        None if HIERARCHICAL.contains(&scheme.as_str()) => return Err(invalid("no host")),
        // `file:///etc/passwd`, `mailto:` and friends: no network host, but never public.
        None => Host::Domain(String::new()),
    };
    let port = url.port();

    let mut alternates = Vec::new();
    let mut push = |alt: Host| {
        if alt != host && !alternates.contains(&alt) {
            alternates.push(alt);
        }
    };
    for text in alternate_host_texts(&url_text) {
        if let Some(alt) = host_from_text(&text) {
            push(alt);
        }
    }
    for text in address_like_segments(&url_text) {
        // An address the standard refuses (`425.510.425.510`) is kept as a name; the
        // classifier refuses numeric names, since some parsers wrap such parts mod 256.
        push(host_from_text(&text).unwrap_or(Host::Domain(text)));
    }
    Ok(Destination {
        scheme: had_scheme.then_some(scheme),
        host,
        port,
        alternates,
    })
}

/// Domains that a lenient resolver would still read as an address (non-special schemes
/// leave `0x7f.1` as a "domain").
fn domain_or_address(d: &str) -> Host {
    match crate::ipv4::parse_lenient(d) {
        Some(v4) => Host::Ip(IpAddr::V4(v4)),
        None => Host::Domain(d.to_ascii_lowercase()),
    }
}

fn bare_ipv6(s: &str) -> Option<Ipv6Addr> {
    if s.matches(':').count() < 2 || s.contains('/') || s.contains('[') {
        return None;
    }
    // A zone id names an interface, never a different host; drop it before classifying.
    let s = s.split('%').next().unwrap_or(s);
    s.parse().ok()
}

/// The scheme when `s` starts with one that is followed by `//`, or is a known
/// non-hierarchical scheme (`file:`, `data:`, …). `host:8080` is not a scheme.
fn scheme_of(s: &str) -> Option<&str> {
    let colon = s.find(':')?;
    let scheme = &s[..colon];
    let valid = !scheme.is_empty()
        && scheme.as_bytes()[0].is_ascii_alphabetic()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.');
    if !valid {
        return None;
    }
    let rest = &s[colon + 1..];
    let lower = scheme.to_ascii_lowercase();
    // WHATWG special schemes take an authority even without slashes (`http:127.0.0.1`).
    let special = ["http", "https", "ws", "wss", "ftp"];
    if special.contains(&lower.as_str()) && !rest.bytes().all(|b| b.is_ascii_digit()) {
        return Some(scheme);
    }
    let opaque = [
        "file",
        "data",
        "mailto",
        "javascript",
        "jar",
        "netdoc",
        "urn",
        "about",
        "blob",
        "view-source",
        "vbscript",
    ];
    if rest.starts_with("//")
        || rest.starts_with("\\\\")
        || rest.starts_with("/\\")
        || rest.starts_with("\\/")
        || opaque.contains(&lower.as_str())
    {
        Some(scheme)
    } else {
        None
    }
}

/// Host texts that other parsers would pick out of `url_text`.
fn alternate_host_texts(url_text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some(after) = url_text.find("://").map(|i| &url_text[i + 3..]) else {
        return out;
    };
    // Readers that stop at the first control or space (WHATWG deletes tabs and newlines).
    if let Some(cut) = after.find(|c: char| c.is_control() || c == ' ') {
        let head = &after[..cut];
        out.extend(host_after_userinfo(authority(head, "/?#"), Userinfo::Last));
    }
    let clean: String = after
        .chars()
        .filter(|&c| c != '\t' && c != '\n' && c != '\r')
        .collect();
    // RFC 3986 / Python urlsplit / Go: authority ends at / ? #, backslash is ordinary.
    out.extend(host_after_userinfo(
        authority(&clean, "/?#"),
        Userinfo::Last,
    ));
    // First-@ readers.
    out.extend(host_after_userinfo(
        authority(&clean, "/?#\\"),
        Userinfo::First,
    ));
    // Readers that ignore ? and # inside the authority.
    out.extend(host_after_userinfo(
        authority(&clean, "/\\"),
        Userinfo::Last,
    ));
    out
}

/// Address literals anywhere in the authority region (userinfo included): readers that
/// do not know userinfo, or split it elsewhere, connect to these.
fn address_like_segments(url_text: &str) -> Vec<String> {
    let Some(after) = url_text.find("://").map(|i| &url_text[i + 3..]) else {
        return Vec::new();
    };
    let region = authority(after, "/\\");
    let mut out = Vec::new();
    for piece in region.split(['@', '#', '?']) {
        let text = if let Some(rest) = piece.strip_prefix('[') {
            match rest.split_once(']') {
                Some((inner, _)) => format!("[{inner}]"),
                None => continue,
            }
        } else {
            piece.split(':').next().unwrap_or(piece).to_string()
        };
        let address_like = text.starts_with('[')
            || (text.as_bytes().first().is_some_and(u8::is_ascii_digit)
                && text
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() || b == b'.' || b == b'x' || b == b'X'));
        if address_like && !out.contains(&text) {
            out.push(text);
        }
    }
    out
}

fn authority<'a>(s: &'a str, stops: &str) -> &'a str {
    match s.find(|c: char| stops.contains(c)) {
        Some(i) => &s[..i],
        None => s,
    }
}

enum Userinfo {
    First,
    Last,
}

fn host_after_userinfo(auth: &str, which: Userinfo) -> Option<String> {
    let host_port = match which {
        Userinfo::Last => auth.rsplit_once('@').map_or(auth, |(_, h)| h),
        Userinfo::First => {
            let after = auth.split_once('@').map_or(auth, |(_, h)| h);
            after.split('@').next().unwrap_or(after)
        }
    };
    let host = if let Some(rest) = host_port.strip_prefix('[') {
        rest.split(']').next().map(|h| format!("[{h}]"))?
    } else {
        host_port.split(':').next().unwrap_or(host_port).to_string()
    };
    (!host.is_empty()).then_some(host)
}

fn host_from_text(text: &str) -> Option<Host> {
    match url::Host::parse(text).ok()? {
        url::Host::Ipv4(v4) => Some(Host::Ip(IpAddr::V4(v4))),
        url::Host::Ipv6(v6) => Some(Host::Ip(IpAddr::V6(v6))),
        url::Host::Domain(d) => Some(domain_or_address(&d)),
    }
}

fn shorten(s: &str) -> String {
    if s.len() <= 200 {
        return s.to_string();
    }
    let mut end = 200;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(s: &str) -> Host {
        parse(s).unwrap().host
    }

    fn ip(s: &str) -> Host {
        Host::Ip(s.parse().unwrap())
    }

    #[test]
    fn reads_forms_of_an_address() {
        let lo = ip("127.0.0.1");
        for s in [
            "127.0.0.1",
            "127.0.0.1:80",
            "http://127.0.0.1/",
            "http://127.1/",
            "http://0x7f.1/",
            "http://2130706433/",
            "http://0177.0.0.1/",
            "http://%31%32%37.0.0.1/",
            "http://１２７.０.０.１/",
            "http://①②⑦.0.0.1/",
            "http://127.0.0.1./",
            "HTTP://127.0.0.1",
            "  http://127.0.0.1  ",
            "http://user:pass@127.0.0.1/",
            "foo://0x7f.1/",
            "0x7f.1:22",
        ] {
            assert_eq!(host(s), lo, "{s}");
        }
        assert_eq!(host("[::1]:8080"), ip("::1"));
        assert_eq!(host("::1"), ip("::1"));
        assert_eq!(host("fe80::1%eth0"), ip("fe80::1"));
        assert_eq!(host("http://[0:0:0:0:0:ffff:7f00:1]/"), ip("::ffff:7f00:1"));
    }

    #[test]
    fn names_are_lowercased_and_idna_mapped() {
        assert_eq!(
            host("https://EXAMPLE.com/x"),
            Host::Domain("example.com".into())
        );
        assert_eq!(
            host("https://bücher.de/"),
            Host::Domain("xn--bcher-kva.de".into())
        );
        assert_eq!(
            host("api.github.com:443"),
            Host::Domain("api.github.com".into())
        );
    }

    #[test]
    fn ordinary_urls_are_not_ambiguous() {
        for s in [
            "https://example.com/",
            "https://user@example.com/path?q=1#frag",
            "https://medium.com/@someone/post",
            "https://example.com/a@b",
            "https://bücher.de/",
            "http://[2606:4700::1111]:443/",
            "api.github.com",
        ] {
            assert!(!parse(s).unwrap().is_ambiguous(), "{s}: {:?}", parse(s));
        }
    }

    #[test]
    fn parser_differentials_keep_every_reading() {
        let d = parse("http://evil.com\\@127.0.0.1/").unwrap();
        assert_eq!(d.host, Host::Domain("evil.com".into()));
        assert!(d.hosts().any(|h| *h == ip("127.0.0.1")));

        let d = parse("http://a@0xa9fea9fe:80@www.example.com/").unwrap();
        assert_eq!(d.host, Host::Domain("www.example.com".into()));
        assert!(d.hosts().any(|h| *h == ip("169.254.169.254")));

        let d = parse("http://www.example.com+&@www.example.com#+@0xa9fea9fe:80/").unwrap();
        assert!(d.hosts().any(|h| *h == ip("169.254.169.254")));

        let d = parse("http://127.0.0.1\n.example.com/").unwrap();
        assert!(d.hosts().any(|h| *h == ip("127.0.0.1")), "{d:?}");
    }

    #[test]
    fn refuses_what_the_standard_refuses() {
        for s in [
            "",
            "   ",
            "http://256.0.0.1/",
            "http://4294967296/",
            "http://[::1/",
            "http://127.0.0.1:99999/",
            "http://[fe80::1%25eth0]/",
            "http://",
        ] {
            assert!(parse(s).is_err(), "{s}");
        }
        assert_eq!(
            parse(&"a".repeat(MAX_DESTINATION_LEN + 1)),
            Err(ParseError::TooLong)
        );
    }

    #[test]
    fn schemes() {
        assert_eq!(
            parse("file:///etc/passwd").unwrap().scheme.as_deref(),
            Some("file")
        );
        assert_eq!(
            parse("gopher://127.0.0.1:70/_x").unwrap().scheme.as_deref(),
            Some("gopher")
        );
        assert_eq!(parse("localhost:8080").unwrap().scheme, None);
        assert_eq!(parse("localhost:8080").unwrap().port, Some(8080));
    }
}
