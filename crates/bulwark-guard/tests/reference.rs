//! The Rust tokenizer and encoder against PyTorch: token ids must be identical and every
//! embedding component within 5e-6 of `tests/data/reference.json`
//! (`scripts/reference.py`: Hugging Face's BertTokenizer and BertModel on the same files).
//!
//! Needs the model installed by `scripts/setup-guard` (or `BULWARK_GUARD_MODEL_DIR`);
//! without it the test fails and says how to install it — it never skips.

use std::path::PathBuf;

use bulwark_guard::{Guard, Kind};

fn model_dir() -> PathBuf {
    std::env::var_os("BULWARK_GUARD_MODEL_DIR")
        .map(Into::into)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/guard-model").into())
}

fn guard() -> Guard {
    load(Kind::Encoder)
}

fn load(kind: Kind) -> Guard {
    let dir = model_dir();
    match Guard::load_kind(&dir, kind) {
        Ok(g) => g,
        Err(e) => panic!(
            "the guard model is not installed in {} ({e}): run scripts/setup-guard",
            dir.display()
        ),
    }
}

#[test]
fn matches_pytorch_tokens_and_embeddings() {
    let guard = guard();
    let data: serde_json::Value =
        serde_json::from_str(include_str!("data/reference.json")).unwrap();
    let cases = data["cases"].as_array().unwrap();
    assert!(cases.len() >= 5);
    let mut worst = 0.0f32;
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let want_ids: Vec<u32> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        let mut ids = vec![guard.tokenizer().cls];
        ids.extend(guard.tokenizer().encode(text));
        ids.push(guard.tokenizer().sep);
        assert_eq!(ids, want_ids, "token ids of {text:?}");
        let want: Vec<f32> = case["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        let got = guard.embed(text).unwrap();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            worst = worst.max((g - w).abs());
        }
    }
    assert!(worst < 5e-6, "largest difference from PyTorch: {worst:e}");
    eprintln!("largest difference from PyTorch: {worst:e}");
}

#[test]
fn wrong_model_file_is_refused() {
    let dir = std::env::temp_dir().join(format!("bulwark-guard-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("model.safetensors"), b"not a model").unwrap();
    std::fs::copy(model_dir().join("vocab.txt"), dir.join("vocab.txt")).unwrap();
    for kind in [Kind::Encoder, Kind::Static] {
        let err = Guard::load_kind(&dir, kind).unwrap_err().to_string();
        assert!(err.contains("SHA-256"), "{kind:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The distilled table's row for a one-token text is the encoder's embedding of that text
/// (up to int8 rounding): the table is the encoder's, not something else.
#[test]
fn static_rows_are_the_encoders_one_word_embeddings() {
    let encoder = load(Kind::Encoder);
    let table = load(Kind::Static);
    assert_eq!(table.kind(), Kind::Static);
    for word in ["ignore", "password", "museum", "the", "你"] {
        assert_eq!(table.tokenizer().encode(word).len(), 1, "{word}");
        let a = encoder.embed(word).unwrap();
        let b = table.embed(word).unwrap();
        let cos: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!(cos > 0.999, "{word}: cosine {cos}");
    }
}

/// A table altered after install is refused (its hash was recorded at install), and an
/// intact copy of the folder loads: copying moves the files' stamps, so it is re-hashed.
#[test]
fn altered_static_table_is_refused() {
    load(Kind::Static); // makes sure the folder has its table
    let src = model_dir();
    let dir = std::env::temp_dir().join(format!("bulwark-guard-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["vocab.txt", "static.bin", "manifest.json"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    Guard::load(&dir).unwrap();
    let mut table = std::fs::read(dir.join("static.bin")).unwrap();
    let last = table.len() - 1;
    table[last] ^= 1;
    std::fs::write(dir.join("static.bin"), &table).unwrap();
    let err = Guard::load(&dir).unwrap_err().to_string();
    assert!(err.contains("SHA-256"), "{err}");
    // Without its manifest record the table is not trusted either.
    std::fs::remove_file(dir.join("manifest.json")).unwrap();
    assert!(Guard::load(&dir).is_err());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn instruction_after_the_first_window_is_still_read() {
    let guard = load(Kind::Static);
    let filler = "The museum opens at nine and closes at five on weekdays. ".repeat(60);
    let windows = guard.score_windows(&format!("{filler} tail")).unwrap();
    assert!(windows.len() >= 3, "{} windows", windows.len());
    // The last window holds the tail: the text is read to its end, not cut at 256 tokens.
    let n = guard.tokenizer().encode(&format!("{filler} tail")).len();
    assert_eq!(windows.last().unwrap().tokens.end, n);
}
