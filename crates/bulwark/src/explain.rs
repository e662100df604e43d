//! `bulwark policy explain`: one call, stage by stage, with each stage's verdict and time.

use std::io::Read;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use bulwark_engine::{Engine, Now, Observer, Outcome, Stage, State};

use crate::cli::Common;
use crate::config;
use bulwark_engine::line;

struct Trace {
    started: Option<Instant>,
}

impl Observer for Trace {
    fn before(&mut self, _stage: Stage) {
        self.started = Some(Instant::now());
    }

    fn after(&mut self, stage: Stage, outcome: &Outcome, note: &str) {
        let us = self
            .started
            .map_or(0.0, |t| t.elapsed().as_secs_f64() * 1e6);
        let code = outcome.code.map_or(String::new(), |c| format!(" {c}"));
        let rule = outcome
            .rule_id
            .as_deref()
            .map_or(String::new(), |r| format!(" {r}"));
        println!(
            "  {:14} {:>8.1} µs  {}{code}{rule}{}",
            stage.name(),
            us,
            outcome.verdict,
            if note.is_empty() {
                String::new()
            } else {
                format!("  — {note}")
            }
        );
    }
}

pub fn run(common: &Common, text: Option<String>) -> Result<ExitCode> {
    let text = match text {
        Some(t) => t,
        None => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("cannot read the call from standard input")?;
            s
        }
    };
    let parsed = line::parse(text.trim(), "line-1")
        .context("the call is not a valid `bulwark check` line")?;
    let engine = Engine::new(config::load_policy(common)?);
    let mut state = State::new(engine.policy());
    let now = Now::at(parsed.time_ms.unwrap_or(0));
    let taint = parsed.session_taint.iter().copied().collect();
    state.add_taint(&parsed.call.session, taint, now.mono_ms);
    println!("policy {}", engine.policy().version);
    println!(
        "call {} ({})",
        parsed.call.tool.name,
        parsed.call.direction.as_str()
    );
    let t0 = Instant::now();
    let mut d =
        engine.evaluate_observed(&parsed.call, &mut state, now, &mut Trace { started: None });
    d.eval_us = t0.elapsed().as_micros() as u64;
    println!("decision: {}", d.to_json());
    Ok(ExitCode::SUCCESS)
}
