//! Who may talk to the HTTP front at all: the `Host` and `Origin` checks that keep a web
//! page the user happens to visit from driving a local gateway (DNS rebinding).

/// Which hosts and origins are accepted.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// Accepted `Host` names (without port). Empty: any host.
    pub hosts: Vec<String>,
    /// Accepted `Origin`s, exactly (`scheme://host[:port]`), besides those whose host is in
    /// `hosts`.
    pub origins: Vec<String>,
}

/// The names a loopback listener answers to.
pub const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "[::1]", "::1"];

/// Why a request was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The `Host` header names a host this gateway does not answer to.
    #[error("Host {0:?} is not accepted by this gateway")]
    Host(String),
    /// The `Origin` header names an origin that is not allowed.
    #[error("Origin {0:?} is not allowed")]
    Origin(String),
}

impl Guard {
    /// A guard for a listener on loopback: only loopback names, in `Host` and `Origin`.
    pub fn loopback() -> Guard {
        Guard {
            hosts: LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect(),
            origins: Vec::new(),
        }
    }

    /// Checks a request's `Host` and `Origin` headers.
    ///
    /// ```
    /// use bulwark_mcp::http::guard::Guard;
    /// let g = Guard::loopback();
    /// assert!(g.check(Some("127.0.0.1:8848"), Some("http://localhost:3000")).is_ok());
    /// assert!(g.check(Some("evil.example.com"), None).is_err());
    /// assert!(g.check(Some("127.0.0.1:8848"), Some("http://evil.example.com")).is_err());
    /// ```
    pub fn check(&self, host: Option<&str>, origin: Option<&str>) -> Result<(), Refused> {
        if !self.hosts.is_empty() {
            let h = host.unwrap_or("");
            if !self.host_ok(strip_port(h)) {
                return Err(Refused::Host(h.to_string()));
            }
        }
        if let Some(o) = origin {
            let allowed = self.origins.iter().any(|a| a.eq_ignore_ascii_case(o))
                || origin_host(o).is_some_and(|h| !self.hosts.is_empty() && self.host_ok(h));
            if !allowed {
                return Err(Refused::Origin(o.to_string()));
            }
        }
        Ok(())
    }

    fn host_ok(&self, h: &str) -> bool {
        self.hosts.iter().any(|a| a.eq_ignore_ascii_case(h))
    }
}

/// `host[:port]` without the port; `[v6]:port` keeps its brackets.
fn strip_port(h: &str) -> &str {
    if h.starts_with('[') {
        // `[v6]` or `[v6]:port`; anything else after the bracket keeps it whole (no match).
        return match h.find(']') {
            Some(end) => match &h[end + 1..] {
                "" => &h[..=end],
                rest if rest.len() > 1
                    && rest.starts_with(':')
                    && rest[1..].bytes().all(|b| b.is_ascii_digit()) =>
                {
                    &h[..=end]
                }
                _ => h,
            },
            None => h,
        };
    }
    match h.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => h,
    }
}

/// The host of an origin `scheme://host[:port]`; `None` for `null` and anything odd.
fn origin_host(o: &str) -> Option<&str> {
    let (scheme, rest) = o.split_once("://")?;
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") || rest.contains('/') {
        return None;
    }
    if rest.contains('@') {
        return None;
    }
    Some(strip_port(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_only() {
        let g = Guard::loopback();
        for ok in [
            "localhost",
            "localhost:1",
            "127.0.0.1:8848",
            "[::1]:80",
            "[::1]",
        ] {
            assert!(g.check(Some(ok), None).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "evil.example.com",
            "127.0.0.1.nip.io:80",
            "localhost.evil:80",
            "[::1]evil",
            "[::1]:",
        ] {
            assert!(g.check(Some(bad), None).is_err(), "{bad}");
        }
        assert!(g.check(None, None).is_err(), "no Host at all");
        for bad in [
            "null",
            "http://evil.example.com",
            "http://localhost@evil.example.com",
            "file://localhost",
            "http://localhost/x",
        ] {
            assert!(g.check(Some("localhost"), Some(bad)).is_err(), "{bad}");
        }
        assert!(g.check(Some("localhost"), Some("https://[::1]:9")).is_ok());
    }

    #[test]
    fn listed_origins_and_open_hosts() {
        let g = Guard {
            hosts: Vec::new(),
            origins: vec!["https://app.example.com".into()],
        };
        assert!(g.check(Some("anything"), None).is_ok());
        assert!(
            g.check(Some("anything"), Some("https://app.example.com"))
                .is_ok()
        );
        // With no host list, an origin must be listed by name.
        assert!(g.check(Some("anything"), Some("http://localhost")).is_err());
    }
}
