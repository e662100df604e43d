//! Approval tokens: a person's "yes" to one exact call, carried by the agent's next request.
//!
//! A token names a call digest ([`crate::call_digest`]: tool, canonical arguments, session,
//! principal, policy version) and an expiry, and carries an HMAC-SHA256 over both under a
//! key only the gateway and its operators hold. So a token cannot be forged, cannot be
//! stretched, and cannot be moved to another call: a different call has a different digest.
//! Single use is the front's part (it remembers the tokens it has honoured until they
//! expire); the engine's part is the grant the front makes from a valid token
//! ([`crate::State::grant`]), which one passing call uses up.
//!
//! Like the rest of the engine this module reads no clock and no key file: the front passes
//! both in.
//!
//! ```
//! use bulwark_engine::token::{mint, verify};
//!
//! let key = [7u8; 32];
//! let digest = "a".repeat(64);
//! let t = mint(&key, &digest, 1_000);
//! assert_eq!(verify(&key, &t, 999).unwrap().digest, digest);
//! assert!(verify(&key, &t, 1_001).is_err()); // expired
//! assert!(verify(&[8u8; 32], &t, 999).is_err()); // another key
//! ```

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The prefix that names the token format.
pub const PREFIX: &str = "bwk1";

/// A verified token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Approved {
    /// The call digest it approves.
    pub digest: String,
    /// When it expires, in seconds since the Unix epoch.
    pub expires_s: u64,
}

/// Why a token was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not `bwk1.EXPIRY.DIGEST.MAC`.
    #[error("not an approval token (expected {PREFIX}.EXPIRY.DIGEST.MAC)")]
    Malformed,
    /// The MAC does not match: forged, altered, or from another key.
    #[error("the approval token's signature does not match")]
    BadSignature,
    /// Past its expiry.
    #[error("the approval token expired")]
    Expired,
}

fn tag(key: &[u8], digest: &str, expires_s: u64) -> [u8; 32] {
    // A domain label keeps these MACs apart from anything else the key might sign.
    let Ok(mut mac) = <Hmac<Sha256> as KeyInit>::new_from_slice(key) else {
        return [0; 32];
    };
    mac.update(b"bulwark approval v1\n");
    mac.update(digest.as_bytes());
    mac.update(b"\n");
    mac.update(expires_s.to_string().as_bytes());
    mac.finalize().into_bytes().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A token approving the call with `digest` until `expires_s` (Unix seconds).
pub fn mint(key: &[u8; 32], digest: &str, expires_s: u64) -> String {
    format!(
        "{PREFIX}.{expires_s}.{digest}.{}",
        hex(&tag(key, digest, expires_s))
    )
}

/// Checks a token's form, signature and expiry at `now_s` (Unix seconds).
pub fn verify(key: &[u8; 32], token: &str, now_s: u64) -> Result<Approved, TokenError> {
    let mut parts = token.trim().split('.');
    let (Some(PREFIX), Some(exp), Some(digest), Some(mac), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(TokenError::Malformed);
    };
    // Lower-case hex only: one spelling per token, so a used token cannot come back with
    // its digits in another case.
    let is_hex64 = |s: &str| {
        s.len() == 64
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !is_hex64(digest) || !is_hex64(mac) || exp.is_empty() || exp.len() > 12 {
        return Err(TokenError::Malformed);
    }
    let expires_s: u64 = exp.parse().map_err(|_| TokenError::Malformed)?;
    let digest = digest.to_string();
    let want = tag(key, &digest, expires_s);
    let got: Vec<u8> = (0..32)
        .filter_map(|i| u8::from_str_radix(&mac[2 * i..2 * i + 2], 16).ok())
        .collect();
    // Constant time: the comparison must not tell a forger how many bytes were right.
    let diff = want
        .iter()
        .zip(got.iter())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    if got.len() != 32 || diff != 0 {
        return Err(TokenError::BadSignature);
    }
    if now_s >= expires_s {
        return Err(TokenError::Expired);
    }
    Ok(Approved { digest, expires_s })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [1; 32];

    fn digest() -> String {
        "0123456789abcdef".repeat(4)
    }

    #[test]
    fn a_token_approves_its_digest_until_it_expires() {
        let t = mint(&KEY, &digest(), 100);
        assert_eq!(
            verify(&KEY, &t, 50),
            Ok(Approved {
                digest: digest(),
                expires_s: 100
            })
        );
        assert_eq!(verify(&KEY, &t, 100), Err(TokenError::Expired));
    }

    #[test]
    fn altered_tokens_are_refused() {
        let t = mint(&KEY, &digest(), 100);
        let other = "f".repeat(64);
        let moved = t.replace(&digest(), &other);
        assert_eq!(verify(&KEY, &moved, 50), Err(TokenError::BadSignature));
        let stretched = t.replace(".100.", ".900.");
        assert_eq!(verify(&KEY, &stretched, 50), Err(TokenError::BadSignature));
        for bad in [
            "",
            "bwk1",
            "bwk2.100.x.y",
            "bwk1.100.abc.def",
            &format!("{t}.extra"),
            &format!("bwk1.-1.{}.{}", digest(), digest()),
            &t.to_ascii_uppercase().replacen("BWK1", "bwk1", 1),
        ] {
            assert_eq!(verify(&KEY, bad, 50), Err(TokenError::Malformed), "{bad}");
        }
    }
}
