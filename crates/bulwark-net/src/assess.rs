//! The SSRF verdict for one destination: every reading, every class, one answer.

use crate::class::HostClass;
use crate::destination::{Destination, Host, ParseError, parse};

/// Schemes a tool may reach by default. Others (`file:`, `gopher:`, `dict:`, `jar:`, …) are
/// classic SSRF carriers and are refused unless policy lists them.
pub const DEFAULT_SCHEMES: &[&str] = &["http", "https", "ws", "wss"];

/// Why a destination is refused before any allowlist is consulted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SsrfFinding {
    /// The text is not a destination the URL standard accepts.
    Unparsable(ParseError),
    /// The scheme is not one the policy allows.
    Scheme(String),
    /// A host (under some reading) is internal.
    Internal {
        /// The host.
        host: Host,
        /// Its class.
        class: HostClass,
    },
    /// Common parsers read different hosts out of the same text.
    Ambiguous {
        /// Every host read.
        hosts: Vec<Host>,
    },
}

impl std::fmt::Display for SsrfFinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SsrfFinding::Unparsable(e) => write!(f, "{e}"),
            SsrfFinding::Scheme(s) => write!(f, "scheme {s:?} is not allowed"),
            SsrfFinding::Internal { host, class } => write!(f, "{host} is a {class} address"),
            SsrfFinding::Ambiguous { hosts } => {
                let list: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
                write!(f, "parsers disagree about the host ({})", list.join(" vs "))
            }
        }
    }
}

/// The outcome of checking one destination text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assessment {
    /// The parsed destination, when it parsed.
    pub destination: Option<Destination>,
    /// The first reason to refuse it, if any.
    pub finding: Option<SsrfFinding>,
}

/// Parses and checks a destination against the SSRF classes.
///
/// `schemes` lists the schemes to accept for URLs (see [`DEFAULT_SCHEMES`]); inputs with no
/// scheme are read as hosts. `internal_ok` lets a caller exempt specific hosts (for example an
/// operator-configured upstream on loopback); it is consulted for each host separately.
///
/// ```
/// use bulwark_net::{assess, DEFAULT_SCHEMES};
/// assert!(assess("http://[::ffff:169.254.169.254]/", DEFAULT_SCHEMES, |_| false).finding.is_some());
/// assert!(assess("https://fcc.gov/", DEFAULT_SCHEMES, |_| false).finding.is_none());
/// ```
pub fn assess(text: &str, schemes: &[&str], internal_ok: impl Fn(&Host) -> bool) -> Assessment {
    let destination = match parse(text) {
        Ok(d) => d,
        Err(e) => {
            return Assessment {
                destination: None,
                finding: Some(SsrfFinding::Unparsable(e)),
            };
        }
    };
    let finding = check(&destination, schemes, internal_ok);
    Assessment {
        destination: Some(destination),
        finding,
    }
}

fn check(
    d: &Destination,
    schemes: &[&str],
    internal_ok: impl Fn(&Host) -> bool,
) -> Option<SsrfFinding> {
    if let Some(scheme) = &d.scheme
        && !schemes.iter().any(|s| s.eq_ignore_ascii_case(scheme))
    {
        return Some(SsrfFinding::Scheme(scheme.clone()));
    }
    for host in d.hosts() {
        let class = host.class();
        if class.is_internal() && !internal_ok(host) {
            return Some(SsrfFinding::Internal {
                host: host.clone(),
                class,
            });
        }
    }
    if d.is_ambiguous() {
        return Some(SsrfFinding::Ambiguous {
            hosts: d.hosts().cloned().collect(),
        });
    }
    None
}
