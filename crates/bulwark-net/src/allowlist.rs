//! Destination allowlists: exact hosts, `*.example.com` globs, addresses and CIDR blocks.

use std::net::IpAddr;

use ipnet::IpNet;
use thiserror::Error;

use crate::destination::Host;

/// A malformed allowlist entry.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("bad destination pattern {entry:?}: {reason}")]
pub struct PatternError {
    /// The entry as written.
    pub entry: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// One allowlist entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostPattern {
    /// `api.example.com`: that name only.
    Exact(String),
    /// `*.example.com`: any name below `example.com`, not `example.com` itself.
    Subdomains(String),
    /// An address, in any spelling the URL standard accepts.
    Ip(IpAddr),
    /// A CIDR block such as `10.0.0.0/8` or `2001:db8::/32`.
    Net(IpNet),
}

impl HostPattern {
    /// Parses one entry.
    ///
    /// ```
    /// use bulwark_net::{HostPattern, Host};
    /// let p = HostPattern::parse("*.example.com").unwrap();
    /// assert!(p.matches(&Host::Domain("api.example.com".into())));
    /// assert!(!p.matches(&Host::Domain("example.com".into())));
    /// assert!(!p.matches(&Host::Domain("evilexample.com".into())));
    /// ```
    pub fn parse(entry: &str) -> Result<Self, PatternError> {
        let err = |reason| PatternError {
            entry: entry.to_string(),
            reason,
        };
        let e = entry.trim();
        if e.is_empty() {
            return Err(err("empty"));
        }
        if e.contains('/') {
            return e
                .parse::<IpNet>()
                .map(|n| HostPattern::Net(n.trunc()))
                .map_err(|_| err("expected a CIDR block such as 10.0.0.0/8"));
        }
        let unbracketed = e
            .strip_prefix('[')
            .and_then(|s| s.strip_suffix(']'))
            .unwrap_or(e);
        if let Ok(ip) = unbracketed.parse::<IpAddr>() {
            return Ok(HostPattern::Ip(ip));
        }
        if let Some(rest) = e.strip_prefix("*.") {
            if rest.contains('*') || rest.is_empty() {
                return Err(err("only one leading `*.` is allowed"));
            }
            return normalise_name(rest)
                .map(HostPattern::Subdomains)
                .ok_or_else(|| err("not a valid host name"));
        }
        if e.contains('*') {
            return Err(err("`*` is only allowed as a leading `*.` label"));
        }
        match url::Host::parse(e) {
            Ok(url::Host::Ipv4(v4)) => Ok(HostPattern::Ip(IpAddr::V4(v4))),
            Ok(url::Host::Ipv6(v6)) => Ok(HostPattern::Ip(IpAddr::V6(v6))),
            Ok(url::Host::Domain(d)) => Ok(HostPattern::Exact(d.trim_end_matches('.').to_string())),
            Err(_) => Err(err("not a valid host name, address or CIDR block")),
        }
    }

    /// Whether `host` is covered by this entry.
    pub fn matches(&self, host: &Host) -> bool {
        match (self, host) {
            (HostPattern::Exact(name), Host::Domain(d)) => d.trim_end_matches('.') == name,
            (HostPattern::Subdomains(suffix), Host::Domain(d)) => {
                let d = d.trim_end_matches('.');
                d.len() > suffix.len() + 1
                    && d.ends_with(suffix.as_str())
                    && d.as_bytes()[d.len() - suffix.len() - 1] == b'.'
            }
            (HostPattern::Ip(ip), Host::Ip(h)) => canonical(*ip) == canonical(*h),
            (HostPattern::Net(net), Host::Ip(h)) => net.contains(&canonical(*h)) || net.contains(h),
            _ => false,
        }
    }
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_canonical(),
        v4 => v4,
    }
}

fn normalise_name(s: &str) -> Option<String> {
    match url::Host::parse(s).ok()? {
        url::Host::Domain(d) => Some(d.trim_end_matches('.').to_string()),
        _ => None,
    }
}

/// A list of [`HostPattern`]s; a host is allowed when any entry matches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allowlist {
    patterns: Vec<HostPattern>,
}

impl Allowlist {
    /// Builds an allowlist, refusing the first malformed entry.
    pub fn new<S: AsRef<str>>(entries: &[S]) -> Result<Self, PatternError> {
        let patterns = entries
            .iter()
            .map(|e| HostPattern::parse(e.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(Allowlist { patterns })
    }

    /// Whether no entries are configured.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.patterns.len()
    }

    /// Whether any entry covers `host`.
    pub fn allows(&self, host: &Host) -> bool {
        self.patterns.iter().any(|p| p.matches(host))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Host {
        Host::Domain(s.into())
    }
    fn ip(s: &str) -> Host {
        Host::Ip(s.parse().unwrap())
    }

    #[test]
    fn matches_each_kind() {
        let a = Allowlist::new(&[
            "api.github.com",
            "*.example.com",
            "1.1.1.1",
            "10.0.0.0/8",
            "2001:db8::/32",
            "[::1]",
        ])
        .unwrap();
        assert!(a.allows(&d("api.github.com")));
        assert!(a.allows(&d("api.github.com.")));
        assert!(!a.allows(&d("github.com")));
        assert!(!a.allows(&d("xapi.github.com")));
        assert!(a.allows(&d("a.b.example.com")));
        assert!(!a.allows(&d("example.com")));
        assert!(!a.allows(&d("example.com.evil.net")));
        assert!(a.allows(&ip("1.1.1.1")));
        assert!(a.allows(&ip("::ffff:1.1.1.1")));
        assert!(a.allows(&ip("10.200.0.1")));
        assert!(!a.allows(&ip("11.0.0.1")));
        assert!(a.allows(&ip("2001:db8::5")));
        assert!(a.allows(&ip("::1")));
        assert!(!a.allows(&d("1.1.1.1.evil.net")));
    }

    #[test]
    fn refuses_bad_entries() {
        for e in [
            "",
            "*",
            "a.*.com",
            "*.",
            "10.0.0.0/33",
            "foo/bar",
            "exa mple.com",
            "**.x.com",
        ] {
            assert!(HostPattern::parse(e).is_err(), "{e}");
        }
    }

    #[test]
    fn address_spellings_normalise() {
        assert_eq!(
            HostPattern::parse("0x7f.1").unwrap(),
            HostPattern::Ip("127.0.0.1".parse().unwrap())
        );
        assert_eq!(
            HostPattern::parse("API.GitHub.com").unwrap(),
            HostPattern::Exact("api.github.com".into())
        );
    }
}
