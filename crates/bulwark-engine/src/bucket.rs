//! Token buckets, refilled continuously on the monotonic clock.

/// A bucket holding up to `capacity` tokens, refilled at `capacity` per `period_ms`.
///
/// Tokens are kept in thousandths so slow refill rates do not round to zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Bucket {
    milli_tokens: u64,
    last_ms: u64,
}

impl Bucket {
    /// A full bucket.
    pub fn full(capacity: u32, now_ms: u64) -> Bucket {
        Bucket {
            milli_tokens: u64::from(capacity) * 1000,
            last_ms: now_ms,
        }
    }

    fn refill(&mut self, capacity: u32, period_ms: u64, now_ms: u64) {
        let elapsed = now_ms.saturating_sub(self.last_ms);
        let max = u64::from(capacity) * 1000;
        let add = (elapsed as u128 * u128::from(max) / u128::from(period_ms.max(1))) as u64;
        self.milli_tokens = self.milli_tokens.saturating_add(add).min(max);
        self.last_ms = self.last_ms.max(now_ms);
    }

    /// Milliseconds until a token is available, or 0 if one is.
    pub fn wait_ms(&mut self, capacity: u32, period_ms: u64, now_ms: u64) -> u64 {
        self.refill(capacity, period_ms, now_ms);
        if self.milli_tokens >= 1000 {
            return 0;
        }
        let missing = 1000 - self.milli_tokens;
        let per_ms = u64::from(capacity) * 1000;
        (missing * period_ms.max(1)).div_ceil(per_ms.max(1)).max(1)
    }

    /// Takes one token; call only after [`Bucket::wait_ms`] returned 0 at the same instant.
    pub fn take(&mut self) {
        self.milli_tokens = self.milli_tokens.saturating_sub(1000);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixty_per_minute_then_one_per_second() {
        let mut b = Bucket::full(60, 0);
        for _ in 0..60 {
            assert_eq!(b.wait_ms(60, 60_000, 0), 0);
            b.take();
        }
        assert_eq!(b.wait_ms(60, 60_000, 0), 1000);
        assert_eq!(b.wait_ms(60, 60_000, 999), 1);
        assert_eq!(b.wait_ms(60, 60_000, 1000), 0);
        b.take();
        assert_eq!(b.wait_ms(60, 60_000, 1000), 1000);
        // A long idle refills to capacity, not beyond.
        assert_eq!(b.wait_ms(60, 60_000, 10_000_000), 0);
        for _ in 0..60 {
            assert_eq!(b.wait_ms(60, 60_000, 10_000_000), 0);
            b.take();
        }
        assert!(b.wait_ms(60, 60_000, 10_000_000) > 0);
    }

    #[test]
    fn clock_going_backwards_does_not_refill() {
        let mut b = Bucket::full(1, 5000);
        b.take();
        assert!(b.wait_ms(1, 60_000, 0) > 0);
        assert!(b.wait_ms(1, 60_000, 5000) > 0);
    }
}
