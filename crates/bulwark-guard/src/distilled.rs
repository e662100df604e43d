//! The distilled static model: one vector per vocabulary token, computed once from the
//! installed encoder, so that scoring at run time is a table lookup and an average.
//!
//! **Why.** The full encoder costs about 11 GFLOP per 2 KB of text — hundreds of
//! milliseconds on two cores, against a deep-path budget of 20 ms. Following model2vec's
//! static distillation, every token of the vocabulary is run through the encoder once as
//! the one-word sentence `[CLS] token [SEP]`; its sentence embedding (mean of the three
//! last hidden states, L2-normalised, as sentence-transformers computes it) becomes the
//! token's row. A window's embedding is then the mean of its tokens' rows, L2-normalised:
//! about 400 × 384 additions per 2 KB instead of 11 GFLOP. What is lost is context (word
//! order, attention); docs/detection.md measures what that costs.
//!
//! The table is derived data: it is built by `bulwark guard install` from the pinned
//! weights (never downloaded, never taken from the `--from` folder, which could carry a
//! crafted one), and its SHA-256 is recorded in the install manifest (`manifest.rs`).
//! Rows are stored as int8 with one f32 scale each (11.8 MB for 30,522 × 384 instead of
//! 47 MB of f32); the rounding error is below 0.4 % of a row's largest component and
//! averages out over a window.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use ndarray::Array1;

use crate::GuardError;
use crate::model::{Encoder, HIDDEN, normalised};

/// First bytes of a table file, with its format version.
const MAGIC: &[u8; 8] = b"BWGSTAT1";
/// Tokens distilled per batch: large enough that each linear layer is one big product.
const BATCH: usize = 256;

/// One distilled batch: its index, its rows' scales and codes.
type Batch = (usize, Vec<f32>, Vec<i8>);

/// The token → vector table.
pub struct Table {
    /// One scale per row: `row = codes × scale`.
    scales: Vec<f32>,
    /// `rows × HIDDEN` int8 codes, row-major.
    codes: Vec<i8>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table").field("rows", &self.rows()).finish()
    }
}

impl Table {
    /// Runs `encoder` over `[cls] t [sep]` for every token id `t` of its vocabulary, on up
    /// to `threads` threads. Deterministic on one machine (each row depends only on its
    /// token); across CPUs the last bits of a product can differ, so the table's hash is
    /// recorded at install rather than pinned.
    pub fn distil(
        encoder: &Encoder,
        cls: u32,
        sep: u32,
        threads: usize,
    ) -> Result<Self, GuardError> {
        let rows = encoder.vocab_len();
        let chunks = rows.div_ceil(BATCH);
        let next = AtomicUsize::new(0);
        let done: Mutex<Vec<Batch>> = Mutex::new(Vec::new());
        let failed: Mutex<Option<GuardError>> = Mutex::new(None);
        std::thread::scope(|s| {
            for _ in 0..threads.max(1) {
                s.spawn(|| {
                    loop {
                        let c = next.fetch_add(1, Ordering::Relaxed);
                        if c >= chunks {
                            return;
                        }
                        match distil_chunk(encoder, cls, sep, c * BATCH..rows.min((c + 1) * BATCH))
                        {
                            Ok((scales, codes)) => {
                                if let Ok(mut d) = done.lock() {
                                    d.push((c, scales, codes));
                                }
                            }
                            Err(e) => {
                                if let Ok(mut f) = failed.lock() {
                                    *f = Some(e);
                                }
                                return;
                            }
                        }
                    }
                });
            }
        });
        if let Some(e) = failed.into_inner().ok().flatten() {
            return Err(e);
        }
        let mut done = done
            .into_inner()
            .map_err(|_| GuardError::Model("a distillation thread panicked".into()))?;
        if done.len() != chunks {
            return Err(GuardError::Model("distillation lost a batch".into()));
        }
        done.sort_by_key(|(c, _, _)| *c);
        let mut table = Self {
            scales: Vec::with_capacity(rows),
            codes: Vec::with_capacity(rows * HIDDEN),
        };
        for (_, scales, codes) in done {
            table.scales.extend(scales);
            table.codes.extend(codes);
        }
        Ok(table)
    }

    /// Number of rows (the vocabulary size).
    pub fn rows(&self) -> usize {
        self.scales.len()
    }

    /// The table as a file: magic, row count (u32 LE), the scales (f32 LE), the codes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12 + self.scales.len() * 4 + self.codes.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&u32::try_from(self.rows()).unwrap_or(u32::MAX).to_le_bytes());
        for s in &self.scales {
            out.extend_from_slice(&s.to_le_bytes());
        }
        out.extend(self.codes.iter().map(|&c| c.to_le_bytes()[0]));
        out
    }

    /// Reads a table written by [`Table::to_bytes`], which must have `rows` rows.
    pub fn from_bytes(bytes: &[u8], rows: usize) -> Result<Self, GuardError> {
        let bad = |m: &str| GuardError::Model(format!("static table: {m}"));
        if bytes.get(..8) != Some(&MAGIC[..]) {
            return Err(bad("not a Bulwark static table (bad magic)"));
        }
        let n = bytes
            .get(8..12)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| bad("truncated header"))?;
        if n != rows {
            return Err(bad(&format!("{n} rows, the vocabulary has {rows}")));
        }
        let scales_end = 12 + rows * 4;
        if bytes.len() != scales_end + rows * HIDDEN {
            return Err(bad("length does not match its row count"));
        }
        let scales: Vec<f32> = bytes[12..scales_end]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if scales.iter().any(|s| !s.is_finite()) {
            return Err(bad("a scale is not finite"));
        }
        let codes = bytes[scales_end..]
            .iter()
            .map(|&b| i8::from_le_bytes([b]))
            .collect();
        Ok(Self { scales, codes })
    }

    /// The embedding of a window of token ids: the mean of their rows, L2-normalised (zero
    /// for no tokens). Ids outside the table are an error, never a silent skip.
    pub fn pool(&self, ids: &[u32]) -> Result<Array1<f32>, GuardError> {
        let mut acc = [0.0f32; HIDDEN];
        for &id in ids {
            let i = usize::try_from(id)
                .ok()
                .filter(|&i| i < self.rows())
                .ok_or_else(|| {
                    GuardError::Input(format!("token id {id} outside the static table"))
                })?;
            let scale = self.scales[i];
            let row = &self.codes[i * HIDDEN..(i + 1) * HIDDEN];
            for (a, &c) in acc.iter_mut().zip(row) {
                *a += f32::from(c) * scale;
            }
        }
        // The mean's 1/n does not change the direction; normalising is enough.
        Ok(normalised(Array1::from_vec(acc.to_vec())))
    }
}

/// Distils the token ids in `range`: one batched forward pass over `[cls] t [sep]` each.
fn distil_chunk(
    encoder: &Encoder,
    cls: u32,
    sep: u32,
    range: std::ops::Range<usize>,
) -> Result<(Vec<f32>, Vec<i8>), GuardError> {
    let mut ids = Vec::with_capacity(range.len() * 3);
    for t in range.clone() {
        let t = u32::try_from(t).map_err(|_| GuardError::Model("vocabulary too large".into()))?;
        ids.extend_from_slice(&[cls, t, sep]);
    }
    let hidden = encoder.hidden_batch(&ids, 3)?;
    let mut scales = Vec::with_capacity(range.len());
    let mut codes = Vec::with_capacity(range.len() * HIDDEN);
    for seq in 0..range.len() {
        let rows = hidden.slice_axis(ndarray::Axis(0), ndarray::Slice::from(seq * 3..seq * 3 + 3));
        let mean = rows
            .mean_axis(ndarray::Axis(0))
            .unwrap_or_else(|| Array1::zeros(HIDDEN));
        let v = normalised(mean);
        let (scale, row) = quantise(v.as_slice().unwrap_or(&[]));
        scales.push(scale);
        codes.extend(row);
    }
    Ok((scales, codes))
}

/// Symmetric int8 quantisation of one row: `scale = max|v| / 127`.
fn quantise(v: &[f32]) -> (f32, Vec<i8>) {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return (0.0, vec![0; v.len()]);
    }
    let scale = max / 127.0;
    // |x / scale| ≤ 127 by construction, so the cast cannot saturate.
    let codes = v
        .iter()
        .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (scale, codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantised_rows_round_trip_within_half_a_step() {
        let v: Vec<f32> = (0..HIDDEN)
            .map(|i| ((i as f32) * 0.37).sin() * 0.2)
            .collect();
        let (scale, codes) = quantise(&v);
        for (x, c) in v.iter().zip(&codes) {
            assert!((x - f32::from(*c) * scale).abs() <= scale / 2.0 + 1e-7);
        }
    }

    fn two_rows() -> Table {
        let mut codes = vec![0i8; 2 * HIDDEN];
        codes[0] = 127;
        codes[HIDDEN + 1] = -127;
        Table {
            scales: vec![1.0 / 127.0, 1.0 / 127.0],
            codes,
        }
    }

    #[test]
    fn file_round_trips_and_wrong_files_are_refused() {
        let t = two_rows();
        let bytes = t.to_bytes();
        let back = Table::from_bytes(&bytes, 2).unwrap();
        assert_eq!(back.scales, t.scales);
        assert_eq!(back.codes, t.codes);
        assert!(Table::from_bytes(&bytes, 3).is_err(), "wrong row count");
        assert!(
            Table::from_bytes(&bytes[..bytes.len() - 1], 2).is_err(),
            "truncated"
        );
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert!(Table::from_bytes(&bad, 2).is_err(), "bad magic");
    }

    #[test]
    fn pool_is_the_normalised_mean_and_rejects_unknown_ids() {
        let t = two_rows();
        let e = t.pool(&[0, 1]).unwrap();
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert!((e[0] - h).abs() < 1e-6 && (e[1] + h).abs() < 1e-6);
        assert!(t.pool(&[2]).is_err());
        assert_eq!(t.pool(&[]).unwrap().sum(), 0.0);
    }
}
