//! Destinations for Bulwark: what a tool call would connect to, and whether it may.
//!
//! Agents hand tools URLs, `host:port` pairs and bare addresses. An SSRF filter is only as
//! good as its agreement with the client that later connects, and clients disagree: the C
//! library reads `0x7f.1` and `2130706433` as 127.0.0.1, the URL standard maps full-width
//! digits and strips tabs, RFC 3986 and WHATWG split `http://a\@b/` at different places.
//!
//! **Key design decision:** a destination is read by several readers at once (see
//! [`destination`]), and every host any of them produces is classified; when they disagree
//! the destination is refused. The alternative, picking the one "right" parser, loses to
//! whichever client the tool happens to use.
//!
//! This crate is a leaf: it knows nothing of policies or tool calls. With the `connect`
//! feature it also connects ([`connect`]): resolve here, check every address, connect to a
//! checked one — the connector every front reaches an upstream through.
//!
//! ```
//! use bulwark_net::{assess, Allowlist, HostClass, SsrfFinding, DEFAULT_SCHEMES};
//!
//! // Octal metadata address: refused whatever the allowlist says.
//! let a = assess("http://0251.0376.0251.0376/latest/meta-data/", DEFAULT_SCHEMES, |_| false);
//! assert!(matches!(a.finding, Some(SsrfFinding::Internal { class: HostClass::Metadata, .. })));
//!
//! // A public host passes SSRF; the allowlist is the next check.
//! let a = assess("https://api.github.com/repos", DEFAULT_SCHEMES, |_| false);
//! assert!(a.finding.is_none());
//! let allow = Allowlist::new(&["*.github.com"]).unwrap();
//! assert!(a.destination.unwrap().hosts().all(|h| allow.allows(h)));
//! ```

pub mod allowlist;
pub mod assess;
pub mod class;
pub mod connect;
pub mod destination;
pub mod ipv4;

pub use allowlist::{Allowlist, HostPattern, PatternError};
pub use assess::{Assessment, DEFAULT_SCHEMES, SsrfFinding, assess};
pub use class::{HostClass, classify_domain, classify_ip};
pub use destination::{Destination, Host, MAX_DESTINATION_LEN, ParseError, parse};
