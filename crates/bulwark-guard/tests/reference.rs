//! The Rust tokenizer and encoder against PyTorch: token ids must be identical and every
//! embedding component within 5e-6 of `tests/data/reference.json`
//! (`scripts/reference.py`: Hugging Face's BertTokenizer and BertModel on the same files).
//!
//! Needs the model installed by `scripts/setup-guard` (or `BULWARK_GUARD_MODEL_DIR`);
//! without it the test fails and says how to install it — it never skips.

use std::path::PathBuf;

use bulwark_guard::Guard;

fn model_dir() -> PathBuf {
    std::env::var_os("BULWARK_GUARD_MODEL_DIR")
        .map(Into::into)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/guard-model").into())
}

fn guard() -> Guard {
    let dir = model_dir();
    match Guard::load(&dir) {
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
    let err = Guard::load(&dir).unwrap_err().to_string();
    assert!(err.contains("SHA-256"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn instruction_after_the_first_window_is_still_read() {
    let guard = guard();
    let filler = "The museum opens at nine and closes at five on weekdays. ".repeat(60);
    let windows = guard.score_windows(&format!("{filler} tail")).unwrap();
    assert!(windows.len() >= 3, "{} windows", windows.len());
    // The last window holds the tail: the text is read to its end, not cut at 256 tokens.
    let n = guard.tokenizer().encode(&format!("{filler} tail")).len();
    assert_eq!(windows.last().unwrap().tokens.end, n);
}
