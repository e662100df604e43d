//! Prints the window embeddings of JSON-lines texts, for training the head
//! (`scripts/train_head.py`): reads `{"text": ...}` lines on stdin, writes
//! `{"windows": [[384 floats], ...]}` lines on stdout. Usage: `embed MODEL_DIR`.

use std::io::{BufRead, Write};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: embed MODEL_DIR")?;
    let guard = bulwark_guard::Guard::load(std::path::Path::new(&dir))?
        .with_limits(bulwark_guard::Limits { max_windows: 16 });
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in std::io::stdin().lock().lines() {
        let v: serde_json::Value = serde_json::from_str(&line?)?;
        let text = v.get("text").and_then(|t| t.as_str()).unwrap_or("");
        // Past the training window limit only the first 16 windows are kept.
        let windows = match guard.embed_windows(text) {
            Ok(w) => w,
            Err(_) => vec![guard.embed(text)?],
        };
        let rounded: Vec<Vec<f32>> = windows
            .into_iter()
            .map(|w| w.into_iter().map(|x| (x * 1e6).round() / 1e6).collect())
            .collect();
        writeln!(out, "{}", serde_json::json!({ "windows": rounded }))?;
    }
    Ok(())
}
