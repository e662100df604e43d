//! Approval tokens at the proxy: read from the request's headers.
//!
//! The token itself ([`bulwark_engine::token`]) is bound to one call's digest and an
//! expiry; the gate's ledger makes it single-use ([`bulwark_gate::Store::claim_token`]).
//! Here a request's header values are read and checked, and each refused one is named, so
//! the agent learns why its token did nothing.

use bulwark_engine::token::{self, Approved, TokenError};
use bulwark_gate::Store;

/// Most tokens read from one request.
pub const MAX_PER_REQUEST: usize = 16;

/// The valid, unused tokens among header values (comma-separated, at most
/// [`MAX_PER_REQUEST`]), and a note per refused one.
pub fn from_headers<'a>(
    key: &[u8; 32],
    values: impl Iterator<Item = &'a str>,
    now_s: u64,
    used: &dyn Store,
) -> (Vec<(String, Approved)>, Vec<String>) {
    let mut ok = Vec::new();
    let mut refused = Vec::new();
    for t in values
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .take(MAX_PER_REQUEST)
    {
        match token::verify(key, t, now_s) {
            Ok(_) if used.token_used(t) => refused.push("already used".to_string()),
            Ok(a) => ok.push((t.to_string(), a)),
            Err(TokenError::Malformed) => refused.push("malformed".to_string()),
            Err(TokenError::BadSignature) => refused.push("bad signature".to_string()),
            Err(TokenError::Expired) => refused.push("expired".to_string()),
        }
    }
    (ok, refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulwark_gate::{MemoryStore, Store};

    #[test]
    fn used_forged_and_expired_tokens_are_named() {
        let key = [3u8; 32];
        let store =
            MemoryStore::new(&bulwark_engine::Policy::builtin().unwrap_or_else(|e| panic!("{e}")));
        let good = token::mint(&key, &"a".repeat(64), 100);
        let used = token::mint(&key, &"b".repeat(64), 100);
        assert!(store.claim_token(&used, 100, 10).unwrap_or(false));
        let forged = token::mint(&[4; 32], &"c".repeat(64), 100);
        let old = token::mint(&key, &"d".repeat(64), 20);
        let header = format!("{good}, {used},{forged}, {old}, nonsense");
        let (ok, refused) = from_headers(&key, [header.as_str()].into_iter(), 50, &store);
        assert_eq!(ok.len(), 1);
        assert_eq!(ok[0].0, good);
        assert_eq!(
            refused,
            vec!["already used", "bad signature", "expired", "malformed"]
        );
    }
}
