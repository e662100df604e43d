//! The gate's one clock.
//!
//! Rate buckets, cached fleet verdicts, session idle times and held approvals are stamped
//! with milliseconds on a monotonic clock; those stamps only compare if every caller counts
//! from the same instant. So the gate reads one clock for every front of a process — the
//! relays of an MCP gateway, the proxy's requests, the fleet's cache writes — and a fixed
//! one in tests.

use std::sync::Arc;
use std::time::Instant;

/// Milliseconds on a monotonic clock, and seconds of Unix time (what approvals expire by).
#[derive(Clone)]
pub struct Clock {
    mono: Arc<dyn Fn() -> u64 + Send + Sync>,
    unix: Arc<dyn Fn() -> u64 + Send + Sync>,
}

impl Clock {
    /// The system's clocks, the monotonic one counting from `epoch`.
    pub fn system(epoch: Instant) -> Clock {
        Clock {
            mono: Arc::new(move || u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)),
            unix: Arc::new(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0)
            }),
        }
    }

    /// Milliseconds since the Unix epoch as the "monotonic" clock: the one clock several
    /// replicas sharing a store agree on (rate buckets, loop-guard windows and idle times of
    /// a session that hops between replicas compare stamps made by different processes).
    /// Hosts must keep their clocks in step (NTP); a clock stepping back does not refill a
    /// bucket, it only delays the refill.
    pub fn wall() -> Clock {
        Clock {
            mono: Arc::new(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                    .unwrap_or(0)
            }),
            unix: Arc::new(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0)
            }),
        }
    }

    /// A clock that reads what `mono` and `unix` say (tests, benches).
    pub fn from_fn(
        mono: impl Fn() -> u64 + Send + Sync + 'static,
        unix: impl Fn() -> u64 + Send + Sync + 'static,
    ) -> Clock {
        Clock {
            mono: Arc::new(mono),
            unix: Arc::new(unix),
        }
    }

    /// A clock standing still at `mono_ms` and `unix_s`.
    pub fn fixed(mono_ms: u64, unix_s: u64) -> Clock {
        Clock::from_fn(move || mono_ms, move || unix_s)
    }

    /// Milliseconds on the monotonic clock.
    pub fn now_ms(&self) -> u64 {
        (self.mono)()
    }

    /// Seconds since the Unix epoch.
    pub fn unix_s(&self) -> u64 {
        (self.unix)()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::system(Instant::now())
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clock")
            .field("now_ms", &self.now_ms())
            .finish()
    }
}
