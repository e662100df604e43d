//! The gateway's one monotonic clock.
//!
//! Every relay, session and stateless exchange of a process decides with the same
//! [`SharedEngine`](bulwark_engine::SharedEngine), whose global rate buckets, cached fleet
//! verdicts and approval grants are stamped with the caller's milliseconds. Those stamps
//! only compare if every caller counts from the same instant, so they all read this clock
//! rather than one of their own.

use std::sync::OnceLock;
use std::time::Instant;

static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Milliseconds since this process first read the clock.
pub fn now_ms() -> u64 {
    let epoch = EPOCH.get_or_init(Instant::now);
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    /// Readings from different threads are on one scale: a later reading is never
    /// smaller, whichever thread made it.
    #[test]
    fn one_scale_across_threads() {
        let before = super::now_ms();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let other = std::thread::spawn(super::now_ms).join().unwrap_or(0);
        assert!(other >= before + 20, "{before} then {other}");
        assert!(super::now_ms() >= other);
    }
}
