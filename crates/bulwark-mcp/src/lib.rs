//! Bulwark's MCP gateway: every message between an MCP client and its servers goes
//! through the engine.
//!
//! ```
//! use bulwark_mcp::jsonrpc::{parse, Kind};
//! let (_, kind) = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
//! assert!(matches!(kind, Kind::Notification { .. }));
//! ```

pub mod aggregate;
pub mod client;
pub mod clock;
pub mod enforce;
pub mod frame;
pub mod gateway;
pub mod hold;
pub mod http;
pub mod jsonrpc;
mod locks;
/// Pins on disk, kept by the gate ([`bulwark_gate::pinfile`]).
pub use bulwark_gate::pinfile;
pub mod port;
pub mod remote;
pub mod stdio;
