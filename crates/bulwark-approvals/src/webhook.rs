//! What goes to a webhook and what may come back.
//!
//! A new request is POSTed as JSON (`{"type":"bulwark.approval.request","request":{…},
//! "callback":URL|null}`) with `X-Bulwark-Timestamp: UNIX_SECONDS` and
//! `X-Bulwark-Signature: sha256=HEX`, an HMAC-SHA256 under the webhook secret of
//! `v1:TIMESTAMP:REQUEST_ID:` followed by the body, so the receiver knows it came from
//! Bulwark and when. The reply may decide at once (`{"decision":"approve"|"deny",
//! "note":"…"}`); any other 2xx reply leaves the request pending for a signed callback to
//! the admin endpoint (`POST /api/approvals/ID/callback`, signed the same way). Binding
//! the id and a timestamp into the MAC means a callback seen once approves nothing else,
//! and not much later.

use hmac::{Hmac, KeyInit, Mac};
use serde::Deserialize;
use sha2::Sha256;

/// The signature header.
pub const SIGNATURE_HEADER: &str = "x-bulwark-signature";
/// The timestamp header (Unix seconds) the signature covers.
pub const TIMESTAMP_HEADER: &str = "x-bulwark-timestamp";
/// How far a callback's timestamp may be from the clock, in seconds.
pub const MAX_SKEW_S: u64 = 300;

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

fn mac_of(secret: &[u8], timestamp: u64, id: &str, body: &[u8]) -> Option<Hmac<Sha256>> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).ok()?;
    mac.update(format!("v1:{timestamp}:{id}:").as_bytes());
    mac.update(body);
    Some(mac)
}

/// The signature header's value for `body` about request `id` at `timestamp`.
pub fn sign(secret: &[u8], timestamp: u64, id: &str, body: &[u8]) -> String {
    let Some(mac) = mac_of(secret, timestamp, id, body) else {
        return String::new();
    };
    let tag = mac.finalize().into_bytes();
    format!(
        "sha256={}",
        tag.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// Whether `header` is the signature of `body` about request `id` at `timestamp`, and
/// the timestamp is within [`MAX_SKEW_S`] of `now_s` (full-length tag, constant-time
/// compare). An empty secret verifies nothing.
pub fn verify(
    secret: &[u8],
    timestamp: &str,
    id: &str,
    body: &[u8],
    header: &str,
    now_s: u64,
) -> bool {
    if secret.is_empty() {
        return false;
    }
    let Ok(ts) = timestamp.trim().parse::<u64>() else {
        return false;
    };
    if ts.abs_diff(now_s) > MAX_SKEW_S {
        return false;
    }
    let Some(hex) = header.trim().strip_prefix("sha256=") else {
        return false;
    };
    let Some(tag) = bulwark_audit::keys::unhex32(hex) else {
        return false;
    };
    let Some(mac) = mac_of(secret, ts, id, body) else {
        return false;
    };
    mac.verify_slice(&tag).is_ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn signatures_verify_and_tampering_does_not() {
        let body = b"{\"decision\":\"approve\"}";
        let s = sign(b"secret", 1000, "abc", body);
        assert!(verify(b"secret", "1000", "abc", body, &s, 1100));
        assert!(!verify(
            b"secret",
            "1000",
            "abc",
            b"{\"decision\":\"deny\"}",
            &s,
            1100
        ));
        assert!(!verify(b"other", "1000", "abc", body, &s, 1100));
        // Another request, another time, or too late: refused.
        assert!(!verify(b"secret", "1000", "abd", body, &s, 1100));
        assert!(!verify(b"secret", "1001", "abc", body, &s, 1100));
        assert!(!verify(
            b"secret",
            "1000",
            "abc",
            body,
            &s,
            1000 + MAX_SKEW_S + 1
        ));
        assert!(!verify(
            b"",
            "1000",
            "abc",
            b"x",
            &sign(b"", 1000, "abc", b"x"),
            1000
        ));
        assert!(!verify(b"secret", "1000", "abc", body, "sha256=00", 1000));
        assert!(!verify(b"secret", "1000", "abc", body, &s[..40], 1000));
    }
}
