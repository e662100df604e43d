//! The MiniLM-L6-H384 encoder (all-MiniLM-L6-v2): a 6-layer BERT forward pass on
//! `ndarray`, mean pooling and L2 normalisation, as sentence-transformers computes it.
//!
//! Weights are read from the model's `model.safetensors` (a little-endian length, a JSON
//! header, then raw tensors): every F32 tensor the encoder needs is checked for its shape
//! when loading, so a wrong or truncated file fails at install/load time, not mid-call.
//! Linear weights are stored transposed once at load (`[in, out]`) so every product is a
//! plain row-major `x · W`, which is the layout matrixmultiply packs fastest.

use std::collections::HashMap;

use ndarray::{Array1, Array2, ArrayView1, Axis, Slice};

use crate::GuardError;

/// Width of the hidden state.
pub const HIDDEN: usize = 384;
const HEADS: usize = 12;
const HEAD_DIM: usize = HIDDEN / HEADS;
const FFN: usize = 1536;
const LAYERS: usize = 6;
/// Positions the model has embeddings for (including `[CLS]` and `[SEP]`).
pub const MAX_POSITIONS: usize = 512;
const LN_EPS: f32 = 1e-12;

struct Linear {
    /// `[in, out]`.
    w: Array2<f32>,
    b: Array1<f32>,
}

struct LayerNorm {
    g: Array1<f32>,
    b: Array1<f32>,
}

struct Layer {
    qkv: Linear,
    attn_out: Linear,
    ln1: LayerNorm,
    up: Linear,
    down: Linear,
    ln2: LayerNorm,
}

/// The encoder's weights.
pub struct Encoder {
    word: Array2<f32>,
    position: Array2<f32>,
    token_type0: Array1<f32>,
    ln: LayerNorm,
    layers: Vec<Layer>,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("vocab", &self.word.nrows())
            .finish()
    }
}

struct Tensors<'a> {
    header: HashMap<String, serde_json::Value>,
    data: &'a [u8],
}

impl<'a> Tensors<'a> {
    fn parse(bytes: &'a [u8]) -> Result<Self, GuardError> {
        let bad = |m: &str| GuardError::Model(format!("model.safetensors: {m}"));
        let len_bytes: [u8; 8] = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| bad("shorter than its header length"))?;
        let len =
            usize::try_from(u64::from_le_bytes(len_bytes)).map_err(|_| bad("header length"))?;
        let end = 8usize
            .checked_add(len)
            .ok_or_else(|| bad("header length"))?;
        let head = bytes.get(8..end).ok_or_else(|| bad("truncated header"))?;
        let header: HashMap<String, serde_json::Value> =
            serde_json::from_slice(head).map_err(|e| bad(&format!("header is not JSON: {e}")))?;
        Ok(Self {
            header,
            data: &bytes[end..],
        })
    }

    fn f32(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, GuardError> {
        let bad = |m: String| GuardError::Model(format!("model.safetensors: {name}: {m}"));
        let meta = self.header.get(name).ok_or_else(|| bad("missing".into()))?;
        if meta.get("dtype").and_then(|d| d.as_str()) != Some("F32") {
            return Err(bad("not F32".into()));
        }
        let got: Vec<usize> = meta
            .get("shape")
            .and_then(|s| s.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_u64())
                    .filter_map(|v| usize::try_from(v).ok())
                    .collect()
            })
            .unwrap_or_default();
        if got != shape {
            return Err(bad(format!("shape {got:?}, expected {shape:?}")));
        }
        let offsets: Vec<usize> = meta
            .get("data_offsets")
            .and_then(|s| s.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_u64())
                    .filter_map(|v| usize::try_from(v).ok())
                    .collect()
            })
            .unwrap_or_default();
        let [start, end] = offsets[..] else {
            return Err(bad("no data_offsets".into()));
        };
        let raw = self
            .data
            .get(start..end)
            .ok_or_else(|| bad("data outside the file".into()))?;
        if raw.len() != shape.iter().product::<usize>() * 4 {
            return Err(bad("data length does not match the shape".into()));
        }
        Ok(raw
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Array2<f32>, GuardError> {
        Array2::from_shape_vec((rows, cols), self.f32(name, &[rows, cols])?)
            .map_err(|e| GuardError::Model(format!("{name}: {e}")))
    }

    fn vector(&self, name: &str, len: usize) -> Result<Array1<f32>, GuardError> {
        Ok(Array1::from_vec(self.f32(name, &[len])?))
    }

    /// A PyTorch `Linear` (`weight` is `[out, in]`), stored transposed.
    fn linear(&self, prefix: &str, input: usize, output: usize) -> Result<Linear, GuardError> {
        let w = self.matrix(&format!("{prefix}.weight"), output, input)?;
        Ok(Linear {
            w: w.t().as_standard_layout().into_owned(),
            b: self.vector(&format!("{prefix}.bias"), output)?,
        })
    }

    fn layer_norm(&self, prefix: &str) -> Result<LayerNorm, GuardError> {
        Ok(LayerNorm {
            g: self.vector(&format!("{prefix}.weight"), HIDDEN)?,
            b: self.vector(&format!("{prefix}.bias"), HIDDEN)?,
        })
    }
}

impl Encoder {
    /// Loads the encoder from the bytes of `model.safetensors`.
    pub fn from_safetensors(bytes: &[u8], vocab_len: usize) -> Result<Self, GuardError> {
        let t = Tensors::parse(bytes)?;
        let mut layers = Vec::with_capacity(LAYERS);
        for i in 0..LAYERS {
            let p = format!("encoder.layer.{i}");
            let mut q = t.linear(&format!("{p}.attention.self.query"), HIDDEN, HIDDEN)?;
            // Attention's 1/√d folded into Q once, instead of scaling n² scores per head.
            let scale = 1.0 / (HEAD_DIM as f32).sqrt();
            q.w *= scale;
            q.b *= scale;
            let k = t.linear(&format!("{p}.attention.self.key"), HIDDEN, HIDDEN)?;
            let v = t.linear(&format!("{p}.attention.self.value"), HIDDEN, HIDDEN)?;
            // Q, K and V side by side: one product of width 3×384 instead of three.
            let w = ndarray::concatenate(Axis(1), &[q.w.view(), k.w.view(), v.w.view()])
                .map_err(|e| GuardError::Model(format!("{p}: {e}")))?;
            let b = ndarray::concatenate(Axis(0), &[q.b.view(), k.b.view(), v.b.view()])
                .map_err(|e| GuardError::Model(format!("{p}: {e}")))?;
            layers.push(Layer {
                qkv: Linear { w, b },
                attn_out: t.linear(&format!("{p}.attention.output.dense"), HIDDEN, HIDDEN)?,
                ln1: t.layer_norm(&format!("{p}.attention.output.LayerNorm"))?,
                up: t.linear(&format!("{p}.intermediate.dense"), HIDDEN, FFN)?,
                down: t.linear(&format!("{p}.output.dense"), FFN, HIDDEN)?,
                ln2: t.layer_norm(&format!("{p}.output.LayerNorm"))?,
            });
        }
        let token_type = t.matrix("embeddings.token_type_embeddings.weight", 2, HIDDEN)?;
        Ok(Self {
            word: t.matrix("embeddings.word_embeddings.weight", vocab_len, HIDDEN)?,
            position: t.matrix(
                "embeddings.position_embeddings.weight",
                MAX_POSITIONS,
                HIDDEN,
            )?,
            token_type0: token_type.row(0).to_owned(),
            ln: t.layer_norm("embeddings.LayerNorm")?,
            layers,
        })
    }

    /// The last hidden states of one window of token ids (`[CLS] … [SEP]` included), one
    /// row per token. Ids must be below the vocabulary size and the window at most
    /// [`MAX_POSITIONS`] long.
    pub fn hidden(&self, ids: &[u32]) -> Result<Array2<f32>, GuardError> {
        self.hidden_batch(ids, ids.len())
    }

    /// The last hidden states of `ids.len() / n` independent sequences of `n` tokens each,
    /// stacked: every linear layer runs once over all of them (one large product instead
    /// of many small ones, which is what makes distilling the whole vocabulary cheap), and
    /// attention stays within each sequence.
    pub fn hidden_batch(&self, ids: &[u32], n: usize) -> Result<Array2<f32>, GuardError> {
        if n == 0 || n > MAX_POSITIONS || ids.is_empty() || !ids.len().is_multiple_of(n) {
            return Err(GuardError::Input(format!(
                "{} tokens in sequences of {n}",
                ids.len()
            )));
        }
        let rows = ids.len();
        let mut x = Array2::<f32>::zeros((rows, HIDDEN));
        for (i, &id) in ids.iter().enumerate() {
            let id = usize::try_from(id).unwrap_or(usize::MAX);
            if id >= self.word.nrows() {
                return Err(GuardError::Input(format!(
                    "token id {id} outside the vocabulary"
                )));
            }
            let mut row = x.row_mut(i);
            row.assign(&self.word.row(id));
            row += &self.position.row(i % n);
            row += &self.token_type0;
        }
        layer_norm(&mut x, &self.ln);
        // Buffers reused by every head of every layer.
        let mut ctx = Array2::<f32>::zeros((rows, HIDDEN));
        let mut scores = Array2::<f32>::zeros((n, n));
        let mut sums = Vec::with_capacity(n);
        for layer in &self.layers {
            // Q's columns come pre-scaled by 1/√d (see `from_safetensors`).
            let qkv = affine(&x, &layer.qkv);
            for seq in 0..rows / n {
                let seq_rows = Slice::from(seq * n..(seq + 1) * n);
                let qkv = qkv.slice_axis(Axis(0), seq_rows);
                let mut ctx = ctx.slice_axis_mut(Axis(0), seq_rows);
                for h in 0..HEADS {
                    // `s![]` expands to unsafe code, which the workspace forbids: slice by axis.
                    let cols =
                        |from: usize| Slice::from(from + h * HEAD_DIM..from + (h + 1) * HEAD_DIM);
                    let q = qkv.slice_axis(Axis(1), cols(0));
                    let k = qkv.slice_axis(Axis(1), cols(HIDDEN));
                    let v = qkv.slice_axis(Axis(1), cols(2 * HIDDEN));
                    ndarray::linalg::general_mat_mul(1.0, &q, &k.t(), 0.0, &mut scores);
                    sums.clear();
                    for mut row in scores.rows_mut() {
                        let max = row.fold(f32::NEG_INFINITY, |m, &v| m.max(v));
                        let mut sum = 0.0;
                        for v in row.iter_mut() {
                            *v = exp(*v - max);
                            sum += *v;
                        }
                        sums.push(sum);
                    }
                    let mut out = ctx.slice_axis_mut(Axis(1), cols(0));
                    ndarray::linalg::general_mat_mul(1.0, &scores, &v, 0.0, &mut out);
                    // Normalise the n×32 context instead of the n×n probabilities.
                    for (mut row, &sum) in out.rows_mut().into_iter().zip(&sums) {
                        row /= sum;
                    }
                }
            }
            let mut attn = affine(&ctx, &layer.attn_out);
            attn += &x;
            layer_norm(&mut attn, &layer.ln1);
            let mut up = affine(&attn, &layer.up);
            up.mapv_inplace(gelu);
            let mut out = affine(&up, &layer.down);
            out += &attn;
            layer_norm(&mut out, &layer.ln2);
            x = out;
        }
        Ok(x)
    }

    /// The sentence embedding of one window of token ids (`[CLS] … [SEP]` included):
    /// mean of the last hidden states, L2-normalised, as sentence-transformers computes it.
    pub fn embed(&self, ids: &[u32]) -> Result<Array1<f32>, GuardError> {
        let x = self.hidden(ids)?;
        let mean = x
            .mean_axis(Axis(0))
            .unwrap_or_else(|| Array1::zeros(HIDDEN));
        Ok(normalised(mean))
    }

    /// Number of token ids in the vocabulary the weights were loaded for.
    pub fn vocab_len(&self) -> usize {
        self.word.nrows()
    }
}

/// `v / ‖v‖` (a zero vector stays zero).
pub(crate) fn normalised(mut v: Array1<f32>) -> Array1<f32> {
    let norm = v.dot(&v).sqrt().max(1e-12);
    v /= norm;
    v
}

fn affine(x: &Array2<f32>, l: &Linear) -> Array2<f32> {
    let mut y = x.dot(&l.w);
    y += &l.b;
    y
}

fn layer_norm(x: &mut Array2<f32>, ln: &LayerNorm) {
    for mut row in x.rows_mut() {
        let n = row.len() as f32;
        let mean = row.sum() / n;
        let var = row.fold(0.0, |a, &v| a + (v - mean) * (v - mean)) / n;
        let inv = 1.0 / (var + LN_EPS).sqrt();
        row.mapv_inplace(|v| (v - mean) * inv);
        row *= &ln.g;
        row += &ln.b;
    }
}

/// BERT's exact GELU, `x·Φ(x)`, with `erf` from Abramowitz–Stegun 7.1.26 (absolute error
/// below 1.5e-7) in f32 on [`exp`], so the loop over the 256×1536 activations of a layer
/// vectorises instead of calling libm's f64 `exp` a few hundred thousand times.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let y = 1.0
        - (((((1.061_405_4 * t - 1.453_152) * t) + 1.421_413_8) * t - 0.284_496_74) * t
            + 0.254_829_6)
            * t
            * exp(-a * a);
    y.copysign(x)
}

/// `eˣ` in f32 without libm, written so LLVM vectorises the loops that call it: `x = n·ln2
/// + r` with `|r| ≤ ln2/2`, a degree-6 Taylor polynomial for `eʳ` (relative error below
/// 2e-7, under f32's own rounding of the activations), and `2ⁿ` built in the exponent bits.
/// Inputs below −87 give 0 (softmax and GELU only need `exp` of non-positive numbers there).
pub(crate) fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    // Adding and subtracting 1.5·2²³ rounds to the nearest integer with plain SSE2 adds.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * LOG2E + ROUND) - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // `n` is an integer in [-126, 127] after the clamp, so the exponent field is in range.
    let bits = ((n as i32 + 127) as u32) << 23;
    p * f32::from_bits(bits)
}

/// Dot product of a head's weights with an embedding.
pub(crate) fn dot(a: ArrayView1<'_, f32>, b: ArrayView1<'_, f32>) -> f32 {
    a.dot(&b)
}
