//! Bulwark's MCP gateway: every message between an MCP client and its servers is decided
//! through the gate ([`bulwark_gate::Gate`]).
//!
//! [`front`] builds the gateway for a process (`bulwark mcp`): the stdio wrapper around one
//! server, the policy's servers aggregated, or the Streamable HTTP listener. [`gateway`]
//! decides one session's messages — calls, results, definitions, a server's requests — and
//! [`enforce`] renders a refusal; [`stdio`], [`http`], [`remote`], [`client`] and
//! [`aggregate`] move the messages. Upstream connections go through the SSRF-checked
//! connector of `bulwark-net`; pins are kept by the gate ([`pinfile`]).
//!
//! Imports run one way, from the fronts down: the HTTP listener ([`http`]) over the
//! upstream transports ([`remote`], [`stdio`]) over the HTTP client ([`client`]). Rules that
//! two of them need sit below both rather than in either: the `Mcp-Param-*` header rules of
//! MCP 2026-07-28 in [`param_headers`] (used by the HTTP front and by [`remote`]), the
//! revision's versions, error codes and forwarded ids in [`http::revision`] (used by the
//! wrapping path, `http::stateless`, and by the native path that it hands requests to).
//!
//! ```
//! use bulwark_mcp::jsonrpc::{parse, Kind};
//! let (_, kind) = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
//! assert!(matches!(kind, Kind::Notification { .. }));
//! ```

pub mod aggregate;
pub mod client;
pub mod clock;
pub mod elicit;
pub mod enforce;
pub mod frame;
pub mod front;
pub mod gateway;
pub mod hold;
pub mod http;
pub mod jsonrpc;
pub mod listing;
mod locks;
pub mod methods;
pub mod param_headers;
/// Pins on disk, kept by the gate ([`bulwark_gate::pinfile`]).
pub use bulwark_gate::pinfile;
pub mod port;
pub mod remote;
pub mod roots;
pub mod stdio;
pub mod trace;
