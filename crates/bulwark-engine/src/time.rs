//! Time, as the front passes it in. The engine never reads a clock.

/// A monotonic instant in milliseconds since an arbitrary origin the front chooses.
///
/// Windows, buckets and cache TTLs are measured on this clock only, so a wall-clock jump
/// (NTP, a tampered RTC) cannot extend a cached verdict or refill a bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Now {
    /// Milliseconds on the monotonic clock.
    pub mono_ms: u64,
}

impl Now {
    /// An instant at `mono_ms`.
    pub fn at(mono_ms: u64) -> Now {
        Now { mono_ms }
    }

    /// Milliseconds since `earlier`, zero if the clock went backwards.
    pub fn since(self, earlier: u64) -> u64 {
        self.mono_ms.saturating_sub(earlier)
    }
}
