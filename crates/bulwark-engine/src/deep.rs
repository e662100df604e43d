//! The deep path's seam: a learned classifier the engine may ask about content the fast
//! path left undecided (DESIGN §2 principle 7).
//!
//! The engine stays sans-I/O: it calls [`DeepGuard::score`] and gets a number or a reason
//! it has none. Where the model runs — in-process on a worker thread with a deadline
//! (`bulwark-guard`'s runner), or behind an Ollama endpoint — is the gate's business, as
//! is loading it once per process.

/// A learned injection classifier.
pub trait DeepGuard: Send + Sync + std::fmt::Debug {
    /// The probability that `text` carries instructions aimed at the model, or why there
    /// is none (timeout, full queue, model not loaded); the engine fails closed on that per
    /// `guard.on_error`.
    fn score(&self, text: &str) -> Result<f32, String>;
}

/// The guard of an engine whose policy enables one that could not be made: every scoring
/// fails with the reason, so `guard.on_error` decides.
#[derive(Debug)]
pub struct Unavailable(pub String);

impl DeepGuard for Unavailable {
    fn score(&self, _: &str) -> Result<f32, String> {
        Err(self.0.clone())
    }
}
