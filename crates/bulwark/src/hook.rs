//! `bulwark hook claude-code`: one Claude Code hook invocation.
//!
//! Exit status is part of Claude Code's protocol: 0 with a JSON answer on standard output
//! when Bulwark decided (allow, ask, deny or block), 2 with the reason on standard error
//! when it could not — which Claude Code treats as a block, so a failure never lets a call
//! through.

use std::io::{Read, Write};
use std::process::ExitCode;

use bulwark_daemon::hook::{self, Event, HookError, SessionFiles};
use bulwark_engine::Decision;

use crate::cli::HookArgs;
use crate::{config, daemon};

pub fn claude_code(args: &HookArgs) -> ExitCode {
    let mut input = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(hook::MAX_INPUT as u64 + 1)
        .read_to_end(&mut input);
    let guess = guess_event(&input);
    let outcome = match read {
        Err(e) => Err(format!("cannot read the hook input: {e}")),
        Ok(n) if n > hook::MAX_INPUT => Err(format!(
            "the hook input is larger than {} bytes",
            hook::MAX_INPUT
        )),
        // A panic would exit 101, which Claude Code reads as "hook failed, carry on": catch
        // it and refuse instead.
        Ok(_) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decide(args, &input)))
            .unwrap_or_else(|_| Err("internal error (a panic; please report it)".into())),
    };
    let mut out = std::io::stdout().lock();
    match outcome {
        Ok(Some((event, d, before))) => {
            let _ = writeln!(out, "{}", hook::output(event, &d, before));
            ExitCode::SUCCESS
        }
        Ok(None) => {
            let _ = writeln!(out, "{{}}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            // Exit status 2 blocks in Claude Code, which then shows standard error to the
            // model; the JSON is for runtimes that read only standard output.
            let _ = writeln!(out, "{}", hook::failure(guess, &why));
            eprintln!("Bulwark could not check this call ({why}); it is refused until it can.");
            ExitCode::from(2)
        }
    }
}

/// The event named in input that could not be read whole, so a failure answers in its shape.
fn guess_event(input: &[u8]) -> Option<Event> {
    let head = &input[..input.len().min(64 * 1024)];
    let has = |needle: &[u8]| head.windows(needle.len()).any(|w| w == needle);
    if has(b"\"PostToolUse\"") {
        Some(Event::PostToolUse)
    } else if has(b"\"PreToolUse\"") {
        Some(Event::PreToolUse)
    } else {
        None
    }
}

type Decided = (Event, Decision, bulwark_engine::TaintSet);

fn decide(args: &HookArgs, input: &[u8]) -> Result<Option<Decided>, String> {
    let text =
        std::str::from_utf8(input).map_err(|e| format!("the hook input is not UTF-8: {e}"))?;
    let (event, call) = match hook::parse(text) {
        Ok(parsed) => parsed,
        Err(HookError::Event(name)) => {
            // Not a tool call (a Stop or a prompt hook wired to Bulwark by mistake): nothing
            // to decide, and blocking would change what that event means.
            eprintln!(
                "bulwark hook: ignoring hook event {name:?}; only PreToolUse and PostToolUse are decided"
            );
            return Ok(None);
        }
        Err(e) => return Err(e.to_string()),
    };
    let state = config::state_dir(&args.common).map_err(|e| format!("{e:#}"))?;
    let files = SessionFiles::new(&state);
    if !args.no_daemon {
        let socket = match &args.socket {
            Some(s) => s.clone(),
            None => daemon::default_socket(&args.common).map_err(|e| format!("{e:#}"))?,
        };
        match files.decide_via_daemon(&socket, &call, 0) {
            Ok((d, before)) => return Ok(Some((event, d, before))),
            Err(HookError::NoDaemon(..)) => {
                // This call is decided here, in full; the daemon is for the next one.
                if !args.no_start {
                    start_daemon(args, &state, &socket);
                }
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let policy = config::load_policy(&args.common).map_err(|e| format!("{e:#}"))?;
    let gate = bulwark_gate::Gate::new(policy, "hook");
    let (d, before) = files.decide(&gate, &call).map_err(|e| e.to_string())?;
    Ok(Some((event, d, before)))
}

/// How long a daemon a hook started waits for a client before it stops.
const AUTOSTARTED_IDLE_SECS: u64 = 30 * 60;

/// Starts `bulwark daemon` on `socket` with this hook's policy and state directory, logging
/// to STATE_DIR/daemon.log. A failure only costs speed, so it is reported, not fatal.
fn start_daemon(args: &HookArgs, state: &std::path::Path, socket: &std::path::Path) {
    let started = std::env::current_exe().and_then(|exe| {
        let mut argv: Vec<std::ffi::OsString> = vec![
            "daemon".into(),
            // Nobody else knows it is running, so it ends when no agent has used it for a
            // while; the next hook starts another.
            "--exit-when-idle".into(),
            AUTOSTARTED_IDLE_SECS.to_string().into(),
            "--socket".into(),
        ];
        argv.push(socket.into());
        argv.push("--state-dir".into());
        argv.push(state.into());
        if let Some(p) = &args.common.policy {
            argv.push("--policy".into());
            // The daemon outlives this directory's meaning for a relative path.
            argv.push(std::path::absolute(p).unwrap_or_else(|_| p.clone()).into());
        }
        std::fs::create_dir_all(state)?;
        hook::start_daemon(&exe, &argv, &state.join("daemon.log"))
    });
    if let Err(e) = started {
        eprintln!("bulwark hook: could not start a daemon ({e}); deciding in this process");
    }
}
