//! Canary rollback: for a window after a policy update, the device compares its block
//! rate minute by minute with the rate it had before; a sustained spike restores the
//! previous policy.

use std::collections::VecDeque;

/// The defaults: a 10-minute window, a spike is over 5× the baseline, for 3 consecutive
/// minutes.
#[derive(Clone, Copy, Debug)]
pub struct CanaryConfig {
    /// How long after an update the device watches, in milliseconds.
    pub window_ms: u64,
    /// A minute spikes when its block rate is over this many times the baseline.
    pub factor: f64,
    /// Consecutive spiking minutes that trigger a rollback.
    pub minutes: u32,
    /// The baseline never counts as lower than this (a clean device blocking nothing
    /// would otherwise roll back on its first block).
    pub floor: f64,
    /// Minutes with fewer decisions than this say nothing.
    pub min_decisions: u64,
    /// Length of a "minute", in milliseconds (tests shorten it).
    pub minute_ms: u64,
}

impl Default for CanaryConfig {
    fn default() -> Self {
        CanaryConfig {
            window_ms: 10 * 60_000,
            factor: 5.0,
            minutes: 3,
            floor: 0.02,
            min_decisions: 5,
            minute_ms: 60_000,
        }
    }
}

/// Blocks and decisions per minute, the newest [`Rates::KEPT`] minutes.
#[derive(Clone, Debug, Default)]
pub struct Rates {
    minutes: VecDeque<(u64, u64, u64)>,
}

impl Rates {
    /// Minutes kept.
    pub const KEPT: usize = 15;

    /// Counts one decision at `now_ms`.
    pub fn observe(&mut self, blocked: bool, now_ms: u64, minute_ms: u64) {
        let m = now_ms / minute_ms.max(1);
        match self.minutes.back_mut() {
            Some((mm, b, n)) if *mm == m => {
                *b += u64::from(blocked);
                *n += 1;
            }
            _ => {
                if self.minutes.len() >= Self::KEPT {
                    self.minutes.pop_front();
                }
                self.minutes.push_back((m, u64::from(blocked), 1));
            }
        }
    }

    /// The block rate over the minutes kept, excluding the current one.
    pub fn baseline(&self, now_ms: u64, minute_ms: u64) -> f64 {
        let current = now_ms / minute_ms.max(1);
        let (b, n) = self
            .minutes
            .iter()
            .filter(|(m, _, _)| *m < current)
            .fold((0, 0), |(b, n), (_, bb, nn)| (b + bb, n + nn));
        if n == 0 { 0.0 } else { b as f64 / n as f64 }
    }

    /// The block rate of the last complete minute before `now_ms`, with its decisions.
    pub fn last_minute(&self, now_ms: u64, minute_ms: u64) -> Option<(f64, u64)> {
        let previous = (now_ms / minute_ms.max(1)).checked_sub(1)?;
        self.minutes
            .iter()
            .find(|(m, _, _)| *m == previous)
            .map(|(_, b, n)| (*b as f64 / (*n).max(1) as f64, *n))
    }
}

/// A canary window after an update.
#[derive(Clone, Debug)]
pub struct Canary {
    cfg: CanaryConfig,
    baseline: f64,
    started_ms: u64,
    rates: Rates,
    spiking: u32,
    judged_minute: Option<u64>,
}

impl Canary {
    /// A window starting at `now_ms`, against the block rate `baseline` the device had.
    pub fn start(cfg: CanaryConfig, baseline: f64, now_ms: u64) -> Canary {
        Canary {
            cfg,
            baseline,
            started_ms: now_ms,
            rates: Rates::default(),
            spiking: 0,
            judged_minute: None,
        }
    }

    /// Whether the window is still open.
    pub fn open(&self, now_ms: u64) -> bool {
        now_ms < self.started_ms.saturating_add(self.cfg.window_ms)
    }

    /// Counts one decision; `Some(why)` when the previous policy must come back.
    pub fn observe(&mut self, blocked: bool, now_ms: u64) -> Option<String> {
        self.rates.observe(blocked, now_ms, self.cfg.minute_ms);
        self.judge(now_ms)
    }

    /// Looks at the minute that just ended (also called by a timer, so a quiet device
    /// still closes its minutes).
    pub fn judge(&mut self, now_ms: u64) -> Option<String> {
        let minute = now_ms / self.cfg.minute_ms.max(1);
        if self.judged_minute == Some(minute) {
            return None;
        }
        self.judged_minute = Some(minute);
        // Capped below 1: a device that blocked a fifth of its calls before could otherwise
        // never spike at all.
        let limit = (self.cfg.factor * self.baseline.max(self.cfg.floor)).min(0.9);
        match self.rates.last_minute(now_ms, self.cfg.minute_ms) {
            Some((rate, n)) if n >= self.cfg.min_decisions && rate > limit => {
                self.spiking += 1;
                if self.spiking >= self.cfg.minutes {
                    return Some(format!(
                        "block rate {:.0}% for {} consecutive minutes, over {}× the {:.1}% before the update",
                        rate * 100.0,
                        self.spiking,
                        self.cfg.factor,
                        self.baseline * 100.0
                    ));
                }
            }
            // A clean minute, or one too quiet to say anything, breaks the run: the minutes
            // must be consecutive.
            _ => self.spiking = 0,
        }
        None
    }
}
