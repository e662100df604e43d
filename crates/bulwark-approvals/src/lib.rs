//! Human approval bound to the exact call, for every Bulwark front.
//!
//! When the engine decides `approve`, the front asks the [`Desk`]: a request is created
//! with a short id, the call's digest (tool, canonical arguments, session, principal,
//! policy version), the decision's reason and an expiry, and kept in the [`Store`] under
//! the state directory, so a restart loses nothing and a decision made through one
//! instance reaches a call waiting in another. A channel — the admin API and console
//! (`bulwark approvals approve ID`), a webhook, the [`inbox`] file, the MCP client's own
//! user — decides (the `service` module runs the inbox and webhook channels in a front, with the
//! `service` feature); approving mints a token (a MAC over the digest and an expiry) that lets
//! that one call through once. Nobody answering in time is a no. Every change of state is
//! an audit entry, written before the change takes effect.
//!
//! ```
//! use bulwark_approvals::{Ask, Desk, Outcome, Store};
//!
//! let dir = std::env::temp_dir().join(format!("bwk-doc-{}", std::process::id()));
//! let desk = Desk::new(Store::open(&dir, 100).unwrap(), [9; 32], "mcp");
//! let ask = Ask {
//!     digest: "d".repeat(64), front: "mcp".into(), tool: "db.drop".into(), server: None,
//!     session: "s1".into(), principal: None, policy_version: "v1".into(),
//!     args: serde_json::json!({"table": "users"}), reason: "destructive".into(),
//!     rule_id: None, severity: None, timeout_s: 300,
//! };
//! let Outcome::Pending(r) = desk.ask(&ask, 1_000) else { panic!() };
//! desk.decide(&r.id, true, "cli", None, 1_010).unwrap();
//! assert!(matches!(desk.ask(&ask, 1_020), Outcome::Granted(_)));
//! // Used once: the same call asks afresh.
//! assert!(matches!(desk.ask(&ask, 1_030), Outcome::Pending(_)));
//! # std::fs::remove_dir_all(&dir).ok();
//! ```

pub mod desk;
pub mod inbox;
pub mod request;
#[cfg(feature = "service")]
pub mod service;
pub mod store;
pub mod webhook;

pub use desk::{Desk, Outcome};
pub use request::{Ask, Request, Status};
pub use store::{ChangeFn, Shared, Store, StoreError};
