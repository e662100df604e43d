//! What goes to a webhook and what may come back.
//!
//! A new request is POSTed as JSON (`{"type":"bulwark.approval.request","request":{…},
//! "callback":URL|null}`) with `X-Bulwark-Signature: sha256=HEX`, an HMAC-SHA256 of the
//! body under the webhook secret, so the receiver knows it came from Bulwark. The reply
//! may decide at once (`{"decision":"approve"|"deny","note":"…"}`); any other 2xx reply
//! leaves the request pending for a signed callback to the admin endpoint
//! (`POST /api/approvals/ID/callback`, the same signature header over its body).

use hmac::{Hmac, KeyInit, Mac};
use serde::Deserialize;
use sha2::Sha256;

/// The signature header.
pub const SIGNATURE_HEADER: &str = "x-bulwark-signature";

/// A webhook's or callback's answer.
#[derive(Debug, Deserialize, PartialEq, Eq)]
pub struct Verdict {
    /// `approve` or `deny`.
    pub decision: String,
    /// Why.
    #[serde(default)]
    pub note: Option<String>,
}

impl Verdict {
    /// `Some(true)` to approve, `Some(false)` to deny, `None` when it decides nothing.
    pub fn approves(&self) -> Option<bool> {
        match self.decision.as_str() {
            "approve" | "approved" => Some(true),
            "deny" | "denied" => Some(false),
            _ => None,
        }
    }
}

/// The signature header's value for `body`.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let Ok(mut mac) = <Hmac<Sha256> as KeyInit>::new_from_slice(secret) else {
        return String::new();
    };
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    format!(
        "sha256={}",
        tag.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// Whether `header` is the signature of `body` (full-length tag, constant-time compare).
/// An empty secret verifies nothing.
pub fn verify(secret: &[u8], body: &[u8], header: &str) -> bool {
    if secret.is_empty() {
        return false;
    }
    let Some(hex) = header.trim().strip_prefix("sha256=") else {
        return false;
    };
    let Some(tag) = unhex(hex) else { return false };
    let Ok(mut mac) = <Hmac<Sha256> as KeyInit>::new_from_slice(secret) else {
        return false;
    };
    mac.update(body);
    tag.len() == 32 && mac.verify_slice(&tag).is_ok()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn signatures_verify_and_tampering_does_not() {
        let s = sign(b"secret", b"{\"decision\":\"approve\"}");
        assert!(verify(b"secret", b"{\"decision\":\"approve\"}", &s));
        assert!(!verify(b"secret", b"{\"decision\":\"deny\"}", &s));
        assert!(!verify(b"other", b"{\"decision\":\"approve\"}", &s));
        assert!(!verify(b"", b"x", &sign(b"", b"x")));
        assert!(!verify(b"secret", b"x", "sha256=00"));
        assert!(!verify(b"secret", b"x", &s[..40]));
    }
}
