//! Bulwark's C ABI: the engine in-process for agents written in C, Go, Python (`ctypes`) or
//! Node (`ffi`), built as `libbulwark.so` and `libbulwark.a` with the header
//! `include/bulwark.h`.
//!
//! Four functions, all thread-safe:
//!
//! ```c
//! bulwark_engine *e = bulwark_engine_new(NULL, &err);          /* NULL = built-in policy */
//! char *d = bulwark_evaluate(e, "{\"tool\":\"shell\",\"args\":{\"command\":\"rm -rf /\"}}");
//! /* d is the decision JSON `bulwark check` prints: {"decision":"block",...} */
//! bulwark_string_free(d);
//! bulwark_engine_free(e);
//! ```
//!
//! The same from Rust, which is how the tests and benches drive it:
//!
//! ```
//! use std::ffi::{CStr, CString};
//! let engine = unsafe { bulwark::bulwark_engine_new(std::ptr::null(), std::ptr::null_mut()) };
//! let call = CString::new(r#"{"tool":"shell","args":{"command":"rm -rf /"}}"#).unwrap();
//! let out = unsafe { bulwark::bulwark_evaluate(engine, call.as_ptr()) };
//! let json = unsafe { CStr::from_ptr(out) }.to_str().unwrap().to_owned();
//! assert!(json.contains(r#""decision":"block""#));
//! unsafe {
//!     bulwark::bulwark_string_free(out);
//!     bulwark::bulwark_engine_free(engine);
//! }
//! ```
//!
//! Whatever arrives — a NULL, bytes that are not UTF-8, JSON that is not a call — the answer is
//! a decision (`INVALID_INPUT`, a block), never a crash; a panic inside the engine is caught at
//! the boundary and answered the same way. Calls are decided exactly as `bulwark check`
//! decides them, with the same policy language.

mod abi;

pub use abi::{bulwark_engine_free, bulwark_engine_new, bulwark_evaluate, bulwark_string_free};

/// The opaque engine handle C sees as `bulwark_engine`.
pub struct Handle {
    gate: bulwark_gate::Gate,
}

impl Handle {
    /// An engine for a policy given as YAML text, or the built-in default.
    pub fn new(policy_yaml: Option<&str>) -> Result<Handle, String> {
        let policy = match policy_yaml {
            None => bulwark_policy::Policy::builtin(),
            Some(text) => bulwark_policy::load_str("<policy_yaml>", text),
        }
        .map_err(|e| e.to_string())?;
        let gate = bulwark_gate::Gate::new(policy, "libbulwark");
        gate.warm_up();
        Ok(Handle { gate })
    }

    /// The gate behind the handle, for Rust callers and benches.
    pub fn gate(&self) -> &bulwark_gate::Gate {
        &self.gate
    }

    /// Decides one `bulwark check` line, returning the decision JSON.
    pub fn evaluate(&self, bytes: &[u8]) -> String {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.gate.decide_line(text).to_json(),
            Err(e) => self.invalid(&format!("call_json is not UTF-8: {e}")),
        }
    }

    fn invalid(&self, why: &str) -> String {
        invalid(why, &self.gate.policy_version())
    }
}

/// An `INVALID_INPUT` block for input that never reached the engine.
fn invalid(why: &str, policy_version: &str) -> String {
    bulwark_engine::Decision::invalid_input(why, policy_version).to_json()
}

/// The answer when evaluation itself failed: a block, so a failure never reads as clean.
fn internal(policy_version: &str) -> String {
    let mut d = bulwark_engine::Decision::invalid_input(
        "the engine failed on this call (an internal error); it is blocked",
        policy_version,
    );
    d.findings = vec![bulwark_engine::Finding::new("internal.panic", "internal")];
    d.safer_alternative = Some("Report this call to the Bulwark maintainers.".into());
    d.to_json()
}
