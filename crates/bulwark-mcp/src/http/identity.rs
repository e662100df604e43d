//! Who is calling, from a request's headers: a bearer token (only its SHA-256 is in the
//! policy) and signed identity headers (seed 002's agent, role and user, made unforgeable).
//!
//! Signed headers: `X-Bulwark-Agent`, `X-Bulwark-User-Role`, `X-Bulwark-User-Id` (seed
//! 002's `X-Farad-Agent`, `X-User-Role`, `X-User-ID` are read too), `X-Bulwark-Timestamp`
//! (Unix seconds) and `X-Bulwark-Signature`: the hex HMAC-SHA256, under the key in the
//! policy's `identities.header_signing_key_env`, of
//! `agent "\n" role "\n" user "\n" timestamp`. A signature that is missing, wrong or more
//! than five minutes off leaves the caller unverified, and the claims out of its name —
//! refused (401) when the policy says `require_verified`.
//!
//! ```
//! use bulwark_mcp::http::identity::{Identity, sign};
//! let id = Identity::new(vec![], Some(b"k".to_vec()), false);
//! let sig = sign(b"k", "reviewer", "dev", "u7", 1_700_000_000);
//! let h = [
//!     ("x-bulwark-agent", "reviewer"), ("x-bulwark-user-role", "dev"),
//!     ("x-bulwark-user-id", "u7"), ("x-bulwark-timestamp", "1700000000"),
//!     ("x-bulwark-signature", sig.as_str()),
//! ];
//! let p = id.authenticate(|n| h.iter().find(|(k, _)| *k == n).map(|(_, v)| *v), 1_700_000_010).unwrap();
//! assert!(p.verified);
//! assert_eq!(p.id.as_deref(), Some("agent=reviewer;role=dev;user=u7"));
//! ```

use bulwark_engine::Principal;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// How far a signed timestamp may be from the gateway's clock.
pub const MAX_SKEW_SECS: u64 = 300;

/// The identity rules of a policy, with the signing key read from the environment.
#[derive(Clone, Default)]
pub struct Identity {
    tokens: Vec<(String, [u8; 32])>,
    key: Option<Vec<u8>>,
    require_verified: bool,
}

// The key never goes into a log line.
impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("tokens", &self.tokens.len())
            .field("signing_key", &self.key.is_some())
            .field("require_verified", &self.require_verified)
            .finish()
    }
}

/// Why a request is refused before it reaches a session.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No bearer token, or one the policy does not list.
    #[error("a valid bearer token is required (Authorization: Bearer …)")]
    Token,
    /// The policy requires verified callers and the signed headers do not verify.
    #[error("identity headers are not validly signed: {0}")]
    Signature(&'static str),
}

/// The hex HMAC-SHA256 a client puts in `X-Bulwark-Signature`.
pub fn sign(key: &[u8], agent: &str, role: &str, user: &str, timestamp: u64) -> String {
    let mut mac = match <Hmac<Sha256> as KeyInit>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => return String::new(),
    };
    mac.update(format!("{agent}\n{role}\n{user}\n{timestamp}").as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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

impl Identity {
    /// Rules from a policy's identities: `(principal, token SHA-256)` pairs, the header
    /// signing key (already read from its environment variable), and `require_verified`.
    pub fn new(
        tokens: Vec<(String, [u8; 32])>,
        key: Option<Vec<u8>>,
        require_verified: bool,
    ) -> Identity {
        Identity {
            tokens,
            key: key.filter(|k| !k.is_empty()),
            require_verified,
        }
    }

    /// Whether any bearer token is configured (then every request needs one).
    pub fn needs_token(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The principal of a request whose headers `header` gives (lower-case names), at
    /// `now_secs` Unix time.
    pub fn authenticate<'a>(
        &self,
        header: impl Fn(&str) -> Option<&'a str>,
        now_secs: u64,
    ) -> Result<Principal, AuthError> {
        let mut parts = Vec::new();
        let mut verified = false;
        if self.needs_token() {
            let token = header("authorization")
                .and_then(|a| {
                    a.split_once(' ')
                        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                })
                .map(|(_, t)| t.trim())
                .ok_or(AuthError::Token)?;
            let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
            // Every entry is compared, in constant time each, so timing says nothing of
            // which (or whether one) matched.
            let mut found = None;
            for (name, want) in &self.tokens {
                let mut diff = 0u8;
                for (a, b) in want.iter().zip(digest.iter()) {
                    diff |= a ^ b;
                }
                if diff == 0 && found.is_none() {
                    found = Some(name.clone());
                }
            }
            parts.push(format!("token={}", found.ok_or(AuthError::Token)?));
            verified = true;
        }
        let pick = |names: &[&str]| names.iter().find_map(|n| header(n)).map(str::trim);
        let agent = pick(&["x-bulwark-agent", "x-farad-agent"]);
        let role = pick(&["x-bulwark-user-role", "x-user-role"]);
        let user = pick(&["x-bulwark-user-id", "x-user-id"]);
        if agent.is_some() || role.is_some() || user.is_some() {
            let (a, r, u) = (agent.unwrap_or(""), role.unwrap_or(""), user.unwrap_or(""));
            let signed = self.check_signature(&header, a, r, u, now_secs);
            match signed {
                Ok(()) => {}
                Err(why) if self.require_verified => return Err(AuthError::Signature(why)),
                Err(_) => verified = false,
            }
            if signed.is_ok() {
                if !self.needs_token() {
                    verified = true;
                }
                // Only signed claims name the caller: unsigned ones could be varied at will
                // to dodge per-caller limits.
                parts.push(format!("agent={a};role={r};user={u}"));
            }
        }
        if self.require_verified && !verified {
            return Err(AuthError::Signature(
                "the policy requires a verified caller: a bearer token or signed identity headers",
            ));
        }
        Ok(Principal {
            id: (!parts.is_empty()).then(|| parts.join(";")),
            verified,
        })
    }

    fn check_signature<'a>(
        &self,
        header: &impl Fn(&str) -> Option<&'a str>,
        agent: &str,
        role: &str,
        user: &str,
        now_secs: u64,
    ) -> Result<(), &'static str> {
        let key = self.key.as_deref().ok_or("no signing key is configured")?;
        let ts: u64 = header("x-bulwark-timestamp")
            .and_then(|t| t.trim().parse().ok())
            .ok_or("X-Bulwark-Timestamp is missing or not a number")?;
        if ts.abs_diff(now_secs) > MAX_SKEW_SECS {
            return Err("the timestamp is more than five minutes off");
        }
        let sig = header("x-bulwark-signature")
            .and_then(|s| unhex(s.trim()))
            .ok_or("X-Bulwark-Signature is missing or not hex")?;
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).map_err(|_| "bad key")?;
        mac.update(format!("{agent}\n{role}\n{user}\n{ts}").as_bytes());
        mac.verify_slice(&sig)
            .map_err(|_| "the signature does not match")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(id: &Identity, h: &[(&str, &str)], now: u64) -> Result<Principal, AuthError> {
        id.authenticate(|n| h.iter().find(|(k, _)| *k == n).map(|(_, v)| *v), now)
    }

    #[test]
    fn tokens_by_hash_only() {
        let digest: [u8; 32] = Sha256::digest(b"s3cret").into();
        let id = Identity::new(vec![("ci".into(), digest)], None, false);
        assert_eq!(auth(&id, &[], 0), Err(AuthError::Token));
        assert_eq!(
            auth(&id, &[("authorization", "Bearer nope")], 0),
            Err(AuthError::Token)
        );
        assert_eq!(
            auth(&id, &[("authorization", "Basic s3cret")], 0),
            Err(AuthError::Token)
        );
        let p = auth(&id, &[("authorization", "bearer s3cret")], 0).unwrap();
        assert_eq!((p.id.as_deref(), p.verified), (Some("token=ci"), true));
    }

    #[test]
    fn signed_headers_verify_and_forgeries_do_not() {
        let id = Identity::new(vec![], Some(b"key".to_vec()), false);
        let now = 1_800_000_000;
        let good = sign(b"key", "a", "admin", "u", now);
        let h = |sig: &str, ts: &str| {
            vec![
                ("x-farad-agent", "a".to_string()),
                ("x-user-role", "admin".to_string()),
                ("x-user-id", "u".to_string()),
                ("x-bulwark-timestamp", ts.to_string()),
                ("x-bulwark-signature", sig.to_string()),
            ]
        };
        let run = |v: Vec<(&str, String)>, id: &Identity| {
            id.authenticate(
                |n| v.iter().find(|(k, _)| *k == n).map(|(_, v)| v.as_str()),
                now,
            )
        };
        assert!(run(h(&good, &now.to_string()), &id).unwrap().verified);
        // Another role with the same signature, a stale timestamp, a wrong key.
        let mut forged = h(&good, &now.to_string());
        forged[1].1 = "root".into();
        assert!(!run(forged.clone(), &id).unwrap().verified);
        assert!(
            !run(h(&good, &(now - 301).to_string()), &id)
                .unwrap()
                .verified
        );
        assert!(
            !run(
                h(&sign(b"other", "a", "admin", "u", now), &now.to_string()),
                &id
            )
            .unwrap()
            .verified
        );
        // Required: refused instead.
        let strict = Identity::new(vec![], Some(b"key".to_vec()), true);
        assert!(matches!(run(forged, &strict), Err(AuthError::Signature(_))));
        // No key configured: headers are only claims.
        let keyless = Identity::new(vec![], None, false);
        assert!(!run(h(&good, &now.to_string()), &keyless).unwrap().verified);
    }
}
