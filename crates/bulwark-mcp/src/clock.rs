//! The relays' monotonic clock: the deadlines of requests waiting for a server and of
//! calls held for a person.
//!
//! Every relay, session and stateless exchange of a process stamps its deadlines with
//! these milliseconds, and the ticker that expires them reads the same clock, so the
//! stamps compare whichever task made them. (Decisions read the gate's own clock,
//! [`bulwark_gate::Clock`].)

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
