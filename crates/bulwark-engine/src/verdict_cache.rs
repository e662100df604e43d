//! The verdict cache (seed 000, stage 6): fleet verdicts keyed by tool hash, with TTLs
//! capped locally and expiring on the monotonic clock.

use bulwark_policy::Verdict;

use crate::bounded::BoundedMap;

/// The key a tool's verdict is cached and escalated under: SHA-256 of its name (seed 000).
pub fn tool_hash(name: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(name.as_bytes()).into()
}

/// Longest an `allow` may be cached: 60 minutes.
pub const MAX_ALLOW_MS: u64 = 60 * 60 * 1000;
/// Longest a `block` may be cached: 7 days.
pub const MAX_BLOCK_MS: u64 = 7 * 24 * 60 * 60 * 1000;
/// Longest a `warn` may be cached: 4 hours.
pub const MAX_WARN_MS: u64 = 4 * 60 * 60 * 1000;

/// Cached fleet verdicts.
#[derive(Clone, Debug)]
pub struct VerdictCache {
    map: BoundedMap<[u8; 32], (Verdict, u64)>,
}

/// Why a verdict could not be cached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CacheError {
    /// Only allow, warn and block come from the fleet.
    #[error("the fleet can only answer allow, warn or block")]
    UnsupportedVerdict,
}

impl VerdictCache {
    /// A cache for at most `limit` tools.
    pub fn new(limit: usize) -> Self {
        VerdictCache {
            map: BoundedMap::new(limit),
        }
    }

    /// Stores a fleet verdict for `ttl_minutes`, capped by verdict; a zero TTL removes any
    /// entry for the tool and stores nothing. Returns the effective TTL in milliseconds.
    pub fn insert(
        &mut self,
        tool_hash: [u8; 32],
        verdict: Verdict,
        ttl_minutes: u64,
        now_ms: u64,
    ) -> Result<u64, CacheError> {
        let cap = match verdict {
            Verdict::Allow => MAX_ALLOW_MS,
            Verdict::Warn => MAX_WARN_MS,
            Verdict::Block => MAX_BLOCK_MS,
            _ => return Err(CacheError::UnsupportedVerdict),
        };
        if ttl_minutes == 0 {
            self.map.remove(&tool_hash);
            return Ok(0);
        }
        let ttl = ttl_minutes.saturating_mul(60_000).min(cap);
        self.map
            .insert(tool_hash, (verdict, now_ms.saturating_add(ttl)));
        Ok(ttl)
    }

    /// Drops every cached verdict (a policy update, or the fleet's `FLUSH_CACHE`).
    pub fn clear(&mut self) {
        self.map.clear();
    }

    /// The cached verdict, if present and not expired.
    pub fn get(&mut self, tool_hash: &[u8; 32], now_ms: u64) -> Option<Verdict> {
        let (verdict, expires) = *self.map.peek(tool_hash)?;
        if now_ms >= expires {
            self.map.remove(tool_hash);
            return None;
        }
        Some(verdict)
    }

    /// Number of cached tools.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: [u8; 32] = [7; 32];

    #[test]
    fn ttls_are_capped_per_verdict() {
        let mut c = VerdictCache::new(10);
        assert_eq!(c.insert(H, Verdict::Allow, 24 * 60, 0), Ok(MAX_ALLOW_MS));
        assert_eq!(c.get(&H, MAX_ALLOW_MS - 1), Some(Verdict::Allow));
        assert_eq!(c.get(&H, MAX_ALLOW_MS), None);
        assert_eq!(
            c.insert(H, Verdict::Block, 30 * 24 * 60, 0),
            Ok(MAX_BLOCK_MS)
        );
        assert_eq!(c.get(&H, MAX_BLOCK_MS - 1), Some(Verdict::Block));
        assert_eq!(c.insert(H, Verdict::Warn, 10 * 60, 0), Ok(MAX_WARN_MS));
        assert_eq!(c.insert(H, Verdict::Warn, 5, 0), Ok(5 * 60_000));
        assert_eq!(
            c.insert(H, Verdict::Approve, 5, 0),
            Err(CacheError::UnsupportedVerdict)
        );
    }

    #[test]
    fn zero_ttl_removes() {
        let mut c = VerdictCache::new(10);
        c.insert(H, Verdict::Block, 60, 0).unwrap();
        assert_eq!(c.insert(H, Verdict::Allow, 0, 1), Ok(0));
        assert_eq!(c.get(&H, 2), None);
    }
}
