//! Prints what the guard's head reads for JSON-lines texts, for training it
//! (`scripts/train_head.py`): reads `{"text": ...}` lines on stdin, writes
//! `{"windows": [{"spans": [[384 floats], ...], "context": [384 floats]}, ...]}` lines on
//! stdout — every window, every span of it (what `Guard::score_windows` scores). Usage:
//! `embed MODEL_DIR`.

use std::io::{BufRead, Write};

fn round(v: Vec<f32>) -> Vec<f32> {
    v.into_iter().map(|x| (x * 1e5).round() / 1e5).collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: embed MODEL_DIR")?;
    // Embeddings do not depend on the head: a zero head, so training never needs one.
    let head = bulwark_guard::Head {
        trained_on: String::new(),
        weights: vec![0.0; 2 * bulwark_guard::model::HIDDEN],
        bias: 0.0,
    };
    let guard = bulwark_guard::Guard::load_with_head(std::path::Path::new(&dir), head)?
        .with_limits(bulwark_guard::Limits { max_windows: 64 });
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in std::io::stdin().lock().lines() {
        let v: serde_json::Value = serde_json::from_str(&line?)?;
        let text = v.get("text").and_then(|t| t.as_str()).unwrap_or("");
        let windows: Vec<serde_json::Value> = guard
            .embed_spans(text)?
            .into_iter()
            .map(|w| {
                let spans: Vec<Vec<f32>> = w.spans.into_iter().map(round).collect();
                serde_json::json!({ "spans": spans, "context": round(w.context) })
            })
            .collect();
        writeln!(out, "{}", serde_json::json!({ "windows": windows }))?;
    }
    Ok(())
}
