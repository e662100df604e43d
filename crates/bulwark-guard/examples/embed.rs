//! Prints the window embeddings of JSON-lines texts, for training the head
//! (`scripts/train_head.py`): reads `{"text": ...}` lines on stdin, writes
//! `{"windows": [[384 floats], ...]}` lines on stdout: every window, then (static model)
//! every sentence segment, as `Guard::score_windows` scores them.
//! Usage: `embed MODEL_DIR [static|encoder]` (default: the distilled static table).

use std::io::{BufRead, Write};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: embed MODEL_DIR [static|encoder]")?;
    let kind = match std::env::args().nth(2).as_deref() {
        None | Some("static") => bulwark_guard::Kind::Static,
        Some("encoder") => bulwark_guard::Kind::Encoder,
        Some(other) => return Err(format!("unknown kind {other}").into()),
    };
    let guard = bulwark_guard::Guard::load_kind(std::path::Path::new(&dir), kind)?
        .with_limits(bulwark_guard::Limits { max_windows: 16 });
    // BULWARK_GUARD_WINDOW=TOKENS,OVERLAP overrides the windowing, for choosing it on dev.
    let guard = match std::env::var("BULWARK_GUARD_WINDOW") {
        Ok(v) => {
            let (t, o) = v
                .split_once(',')
                .ok_or("BULWARK_GUARD_WINDOW=TOKENS,OVERLAP")?;
            guard.with_windowing(bulwark_guard::Windowing {
                tokens: t.parse()?,
                overlap: o.parse()?,
            })
        }
        Err(_) => guard,
    };
    // BULWARK_GUARD_SEGMENTS=0|1 turns sentence segments off or on (default: the model's).
    let guard = match std::env::var("BULWARK_GUARD_SEGMENTS").as_deref() {
        Ok("0") => guard.with_segments(false),
        Ok("1") => guard.with_segments(true),
        _ => guard,
    };
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
