//! Bulwark's local evaluator: the engine for an agent runtime on the same machine.
//!
//! Three ways in, one gate ([`bulwark_gate::Gate`]) behind them:
//!
//! - **`bulwark daemon`** ([`server`]): DefenseClaw's `evaluate` JSON-RPC 2.0 over a Unix
//!   socket, one request per line, many concurrent clients, the peer's kernel credentials
//!   checked ([`evaluate`] maps seed 000's parameters and verdicts; [`rpc`] frames;
//!   [`service`] answers one line);
//! - **`libbulwark`**: the same decisions in-process behind a C ABI (the `libbulwark`
//!   crate wraps [`bulwark_gate::Gate::decide_line`]);
//! - **agent hooks** ([`hook`]): Claude Code's `PreToolUse` / `PostToolUse` protocol, with
//!   session state kept by a running daemon or in a locked file per session.
//!
//! ```
//! use bulwark_daemon::service::{Peer, PolicySource, Service};
//!
//! let service = Service::new(PolicySource::Builtin, None).unwrap();
//! let line = br#"{"jsonrpc":"2.0","id":1,"method":"evaluate","params":{
//!     "tool_name":"call_api",
//!     "tool_hash":"515c7731d6367104f1431af261488829f178f87e0930fb7ca77785ba3ef19129",
//!     "capabilities":8,"destination":"1.1.1.1","session_id":1,"direction":0,
//!     "content":"Authorization: Bearer sk-proj-abc123..."}}"#;
//! let reply: serde_json::Value =
//!     serde_json::from_str(&service.handle(line, &Peer::default()).unwrap()).unwrap();
//! assert_eq!(reply["result"]["verdict"], "BLOCK");
//! ```

pub mod evaluate;
pub mod front;
pub mod hook;
pub mod rpc;
pub mod server;
pub mod service;
