//! The SSRF-checked connector: resolve a name here, classify every address, connect only to
//! one that passed — so a second resolution (DNS rebinding) cannot swap the address between
//! the check and the connection.
//!
//! Internal addresses (loopback, private, link-local, …) are refused unless the operator
//! allowed them for this upstream; cloud metadata addresses never are. Every wait is
//! bounded: the whole connection by the time given, shared among the addresses so that one
//! dropping packets (a broken IPv6 route) leaves time for the next.
//!
//! [`allowed`] is always here; the rest needs the `connect` feature (tokio).
//!
//! ```
//! use bulwark_net::connect::allowed;
//! use bulwark_net::HostClass;
//!
//! assert!(allowed("93.184.216.34".parse().unwrap(), false).is_ok());
//! assert_eq!(allowed("10.0.0.1".parse().unwrap(), false), Err(HostClass::Private));
//! assert!(allowed("10.0.0.1".parse().unwrap(), true).is_ok());
//! // Metadata, never.
//! assert_eq!(allowed("169.254.169.254".parse().unwrap(), true), Err(HostClass::Metadata));
//! ```

use std::net::IpAddr;

use crate::class::{HostClass, classify_ip};

/// Whether an address may be connected to: not internal, or internal with
/// `allow_internal` and not a cloud metadata address.
pub fn allowed(ip: IpAddr, allow_internal: bool) -> Result<(), HostClass> {
    let class = classify_ip(ip.to_canonical());
    if !class.is_internal() || (allow_internal && class != HostClass::Metadata) {
        Ok(())
    } else {
        Err(class)
    }
}

#[cfg(feature = "connect")]
pub use tcp::{ConnectError, connect, resolve};

#[cfg(feature = "connect")]
mod tcp {
    use std::net::SocketAddr;
    use std::time::Duration;

    use tokio::net::TcpStream;

    use super::allowed;

    /// Why no connection was made.
    #[derive(Debug, thiserror::Error)]
    pub enum ConnectError {
        /// The name did not resolve.
        #[error("cannot resolve {host}: {source}")]
        Resolve {
            /// The name.
            host: String,
            /// The resolver's error.
            source: std::io::Error,
        },
        /// Every address the name resolves to is one that may not be connected to.
        #[error("{0} resolves only to addresses the gateway may not connect to")]
        Refused(String),
        /// No address accepted a connection.
        #[error("cannot connect to {host}: {source}")]
        Connect {
            /// The host.
            host: String,
            /// The last address's error.
            source: std::io::Error,
        },
        /// Resolving and connecting took longer than allowed.
        #[error("connecting to {0} timed out")]
        Timeout(String),
    }

    /// The addresses `host` may be reached at: resolved here, those [`allowed`] refuses
    /// dropped; an error when none is left.
    pub async fn resolve(
        host: &str,
        port: u16,
        allow_internal: bool,
    ) -> Result<Vec<SocketAddr>, ConnectError> {
        let found: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|source| ConnectError::Resolve {
                host: host.to_string(),
                source,
            })?
            .collect();
        let ok: Vec<SocketAddr> = found
            .into_iter()
            .filter(|a| allowed(a.ip(), allow_internal).is_ok())
            .collect();
        if ok.is_empty() {
            return Err(ConnectError::Refused(host.to_string()));
        }
        Ok(ok)
    }

    /// A TCP connection to an address of `host` that passed the check, within `within`
    /// (resolving included; each address gets its share of what is left).
    pub async fn connect(
        host: &str,
        port: u16,
        allow_internal: bool,
        within: Duration,
    ) -> Result<TcpStream, ConnectError> {
        let timed_out = || ConnectError::Timeout(host.to_string());
        let started = tokio::time::Instant::now();
        let addrs = tokio::time::timeout(within, resolve(host, port, allow_internal))
            .await
            .map_err(|_| timed_out())??;
        let left = within.saturating_sub(started.elapsed());
        let share = left / u32::try_from(addrs.len()).unwrap_or(u32::MAX).max(1);
        let mut last = None;
        for a in addrs {
            match tokio::time::timeout(share, TcpStream::connect(a)).await {
                Ok(Ok(s)) => return Ok(s),
                Ok(Err(e)) => last = Some(e),
                Err(_) => last = Some(std::io::ErrorKind::TimedOut.into()),
            }
        }
        Err(ConnectError::Connect {
            host: host.to_string(),
            source: last.unwrap_or_else(|| std::io::ErrorKind::NotFound.into()),
        })
    }

    #[cfg(test)]
    #[allow(clippy::unwrap_used)]
    mod tests {
        use super::*;

        #[tokio::test]
        async fn loopback_is_refused_unless_allowed_and_an_allowed_one_connects() {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = l.local_addr().unwrap().port();
            let refused = connect("127.0.0.1", port, false, Duration::from_secs(2)).await;
            assert!(
                matches!(refused, Err(ConnectError::Refused(_))),
                "{refused:?}"
            );
            let s = connect("localhost", port, true, Duration::from_secs(2)).await;
            assert!(s.is_ok(), "{s:?}");
        }

        #[tokio::test]
        async fn a_closed_port_is_an_error_not_a_wait() {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = l.local_addr().unwrap().port();
            drop(l);
            let e = connect("127.0.0.1", port, true, Duration::from_secs(2)).await;
            assert!(matches!(e, Err(ConnectError::Connect { .. })), "{e:?}");
        }
    }
}
