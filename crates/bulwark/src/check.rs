//! `bulwark check`: JSON Lines of calls in, one decision JSON per line out.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use bulwark_engine::{Decision, Engine, Now, State};

use bulwark_engine::line;

use crate::cli::CheckArgs;
use crate::config;

/// Lines longer than this are refused (`INVALID_INPUT`) without being parsed.
const MAX_LINE_BYTES: usize = 8 << 20;

pub fn run(args: &CheckArgs) -> Result<ExitCode> {
    let policy = config::load_policy(&args.common)?;
    config::state_dir(&args.common)?;
    let audit = config::open_audit(
        &args.common,
        args.audit.as_deref(),
        "check",
        &policy.telemetry,
    )?;
    let engine = Engine::new(policy);
    let mut state = State::new(engine.policy());
    let mut runner = Runner {
        engine,
        state: &mut state,
        start: Instant::now(),
        n: 0,
        passed: 0,
        failed: 0,
        expected: false,
        malformed: false,
        out: std::io::stdout().lock(),
        call: None,
    };
    let stdin = [std::path::PathBuf::from("-")];
    let files = if args.files.is_empty() {
        &stdin[..]
    } else {
        &args.files[..]
    };
    for f in files {
        let reader: Box<dyn BufRead> = if f.as_os_str() == "-" {
            Box::new(BufReader::new(std::io::stdin().lock()))
        } else {
            Box::new(BufReader::new(
                File::open(f).with_context(|| format!("cannot open {}", f.display()))?,
            ))
        };
        runner.read(reader, audit.as_deref())?;
    }
    if let Some(a) = &audit {
        a.close()?;
    }
    if runner.expected {
        writeln!(
            runner.out,
            "{} passed, {} failed",
            runner.passed, runner.failed
        )?;
    }
    runner.out.flush()?;
    Ok(if runner.failed > 0 || runner.malformed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

struct Runner<'a, W: Write> {
    engine: Engine,
    state: &'a mut State,
    start: Instant,
    n: usize,
    passed: usize,
    failed: usize,
    expected: bool,
    malformed: bool,
    out: W,
    /// The call behind the decision being written, for the audit record.
    call: Option<bulwark_engine::Call>,
}

impl<W: Write> Runner<'_, W> {
    fn read(
        &mut self,
        mut reader: Box<dyn BufRead>,
        audit: Option<&bulwark_audit::AuditLog>,
    ) -> Result<()> {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            // Read at most MAX_LINE_BYTES + 1 so one huge line cannot take all memory.
            let read = (&mut reader)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut buf)?;
            if read == 0 {
                break;
            }
            self.n += 1;
            let too_long = buf.len() > MAX_LINE_BYTES && !buf.ends_with(b"\n");
            if too_long {
                // Skip the rest of the line.
                let mut sink = Vec::new();
                reader.read_until(b'\n', &mut sink)?;
            }
            self.call = None;
            let decision = if too_long {
                self.invalid(format!(
                    "line {}: longer than {MAX_LINE_BYTES} bytes",
                    self.n
                ))
            } else {
                match std::str::from_utf8(&buf) {
                    Ok(text) if text.trim().is_empty() => {
                        self.n -= 1;
                        continue;
                    }
                    Ok(text) => self.decide(text),
                    Err(_) => self.invalid(format!("line {}: not UTF-8", self.n)),
                }
            };
            if let Some(a) = audit {
                // Recorded before it is shown: nothing is reported that the log lacks.
                let entry = match &self.call {
                    Some(c) => bulwark_audit::Entry::for_call("check", c, &decision),
                    None => bulwark_audit::Entry::bare("check", "", &decision),
                };
                a.record(&entry)?;
            }
            writeln!(self.out, "{}", decision.to_json())?;
        }
        Ok(())
    }

    fn decide(&mut self, text: &str) -> Decision {
        let parsed = match line::parse(text, &format!("line-{}", self.n)) {
            Ok(l) => l,
            Err(e) => return self.invalid(format!("line {}: {e}", self.n)),
        };
        let now = Now::at(
            parsed
                .time_ms
                .unwrap_or_else(|| self.start.elapsed().as_millis() as u64),
        );
        if !parsed.session_taint.is_empty() {
            let taint = parsed.session_taint.iter().copied().collect();
            self.state
                .add_taint(&parsed.call.session, taint, now.mono_ms);
        }
        let t0 = Instant::now();
        let mut d = self.engine.evaluate(&parsed.call, self.state, now);
        d.eval_us = t0.elapsed().as_micros() as u64;
        self.call = Some(parsed.call.clone());
        if let Some(want) = parsed.expect {
            self.expected = true;
            if d.decision == want {
                self.passed += 1;
            } else {
                self.failed += 1;
                eprintln!(
                    "line {}: expected {want}, got {} ({}{})",
                    self.n,
                    d.decision,
                    d.reason_code.map_or("-", |c| c.as_str()),
                    d.rule_id
                        .as_deref()
                        .map(|r| format!(" {r}"))
                        .unwrap_or_default()
                );
            }
        }
        d
    }

    fn invalid(&mut self, reason: String) -> Decision {
        self.malformed = true;
        eprintln!("{reason}");
        Decision::invalid_input(reason, &self.engine.policy().version)
    }
}
