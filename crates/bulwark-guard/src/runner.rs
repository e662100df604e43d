//! Scoring off the caller's thread, bounded in queue length and in time.
//!
//! A deep-path stage must not let one large result stall every other call, nor let a
//! burst of results queue without bound. The runner owns one worker thread per
//! configured worker and a fixed-size queue; a call that finds the queue full, or whose
//! deadline passes before its score is ready, gets an error at once, which the gate turns
//! into a block or a warning per `guard.on_error`. A job whose deadline has already passed
//! when a worker picks it up is dropped unscored, so a backlog drains instead of compounding.

use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::GuardError;

/// Something that scores a text: the in-process model or an Ollama endpoint.
pub trait Scorer: Send + Sync {
    /// The probability that `text` carries an injection (the maximum over its windows).
    fn score(&self, text: &str) -> Result<f32, GuardError>;
}

impl Scorer for crate::Guard {
    fn score(&self, text: &str) -> Result<f32, GuardError> {
        crate::Guard::score(self, text)
    }
}

/// Why the runner returned no score.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The queue was full.
    #[error("guard queue is full ({0} waiting)")]
    Busy(usize),
    /// The deadline passed first.
    #[error("guard did not answer within {0} ms")]
    Timeout(u128),
    /// The scorer failed.
    #[error(transparent)]
    Guard(#[from] GuardError),
    /// The worker is gone.
    #[error("guard worker stopped")]
    Stopped,
}

struct Job {
    text: String,
    deadline: Instant,
    reply: SyncSender<Result<f32, GuardError>>,
}

/// A bounded pool of scoring threads.
pub struct Runner {
    queue: SyncSender<Job>,
    capacity: usize,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl Runner {
    /// Starts `workers` threads (at least one) sharing a queue of `capacity` jobs.
    pub fn start(scorer: Arc<dyn Scorer>, workers: usize, capacity: usize) -> Self {
        let (queue, jobs) = sync_channel::<Job>(capacity.max(1));
        let jobs = Arc::new(Mutex::new(jobs));
        for i in 0..workers.max(1) {
            let jobs = Arc::clone(&jobs);
            let scorer = Arc::clone(&scorer);
            // A thread that cannot be spawned leaves fewer workers; with none, every call
            // times out, which fails closed.
            let _ = std::thread::Builder::new()
                .name(format!("bulwark-guard-{i}"))
                .spawn(move || work(&jobs, scorer.as_ref()));
        }
        Self {
            queue,
            capacity: capacity.max(1),
        }
    }

    /// Scores `text`, waiting at most `timeout`.
    pub fn score(&self, text: &str, timeout: Duration) -> Result<f32, RunnerError> {
        let deadline = Instant::now() + timeout;
        let (reply, answer) = sync_channel(1);
        let job = Job {
            text: text.to_owned(),
            deadline,
            reply,
        };
        match self.queue.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(RunnerError::Busy(self.capacity)),
            Err(TrySendError::Disconnected(_)) => return Err(RunnerError::Stopped),
        }
        match answer.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(result) => Ok(result?),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                Err(RunnerError::Timeout(timeout.as_millis()))
            }
            // The worker dropped the job: it was past its deadline when picked up.
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                Err(RunnerError::Timeout(timeout.as_millis()))
            }
        }
    }
}

fn work(jobs: &Mutex<Receiver<Job>>, scorer: &dyn Scorer) {
    loop {
        let job = {
            let Ok(rx) = jobs.lock() else { return };
            match rx.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        };
        if Instant::now() >= job.deadline {
            continue;
        }
        let _ = job.reply.send(scorer.score(&job.text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Slow(Duration, f32);
    impl Scorer for Slow {
        fn score(&self, _: &str) -> Result<f32, GuardError> {
            std::thread::sleep(self.0);
            Ok(self.1)
        }
    }

    #[test]
    fn answers_within_the_deadline() {
        let r = Runner::start(Arc::new(Slow(Duration::ZERO, 0.9)), 1, 4);
        assert_eq!(r.score("x", Duration::from_secs(5)).unwrap(), 0.9);
    }

    #[test]
    fn slow_scorer_times_out() {
        let r = Runner::start(Arc::new(Slow(Duration::from_millis(500), 0.1)), 1, 4);
        assert!(matches!(
            r.score("x", Duration::from_millis(20)),
            Err(RunnerError::Timeout(20))
        ));
    }

    #[test]
    fn full_queue_is_refused_at_once() {
        let r = Arc::new(Runner::start(
            Arc::new(Slow(Duration::from_millis(300), 0.1)),
            1,
            1,
        ));
        // One job runs, one waits in the queue; the third finds it full.
        let mut held = Vec::new();
        for _ in 0..2 {
            let r = Arc::clone(&r);
            held.push(std::thread::spawn(move || {
                r.score("x", Duration::from_secs(5))
            }));
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(matches!(
            r.score("x", Duration::from_secs(5)),
            Err(RunnerError::Busy(1))
        ));
        for h in held {
            assert!(h.join().unwrap().is_ok());
        }
    }
}
