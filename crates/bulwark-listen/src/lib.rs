//! Bounded listeners for Bulwark's network fronts.
//!
//! Each front holds connections from clients it does not control. A cap on connections
//! keeps descriptors and memory bounded, but alone it hands the listener to whoever fills
//! it first: a few hundred idle sockets lock every other client out until they time out.
//! This crate is the one place that decides who keeps a connection:
//!
//! - [`slots`]: places per listener and per peer, idle connections giving way to new
//!   clients, shorter idle time under pressure — for any front (the daemon's Unix socket
//!   counts peers by user id);
//! - [`http`]: the HTTP/1 accept loop of the MCP listener and the LLM proxy on top of
//!   it, with head and write deadlines.
//!
//! A key design decision: a busy connection (a request read, its answer not yet written)
//! is never closed to make room — only idle ones are, the peer holding the most first. The
//! alternative, refusing new clients once full, is what let a slowloris lock clients out.
#![deny(missing_docs)]

pub mod http;
pub mod slots;

pub use slots::{Busy, Limits, Refused, Slot, Slots};
