//! `bulwark shell`: the command analyser on one line, for people and for scripts (the
//! rendering is `bulwark_shell::report`).

use std::io::Read;
use std::process::ExitCode;

use anyhow::{Context, Result};
use bulwark_shell::{Cap, report};

use crate::cli::ShellArgs;

/// Largest input read (the analyser refuses longer lines itself, with a reason).
const MAX_INPUT: usize = 1 << 20;

pub fn run(args: &ShellArgs) -> Result<ExitCode> {
    let text = match args.text.as_deref().filter(|t| *t != "-") {
        Some(t) => t.to_string(),
        None => {
            let mut s = String::new();
            std::io::stdin()
                .take(MAX_INPUT as u64 + 1)
                .read_to_string(&mut s)
                .context("standard input is not UTF-8 text")?;
            anyhow::ensure!(
                s.len() <= MAX_INPUT,
                "input is larger than {MAX_INPUT} bytes"
            );
            s
        }
    };
    if args.sql {
        let a = bulwark_shell::analyse_sql(&text);
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report::sql_json(&a))?);
        } else {
            print!("{}", report::sql_text(&a));
        }
        let risky = a.destroys() || a.has("sql.unparsable") || a.has("sql.file_access");
        return Ok(if risky {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        });
    }
    let a = bulwark_shell::analyse(&text);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report::json(&a))?);
    } else {
        print!("{}", report::text(&a));
    }
    let risky = a.caps.contains(Cap::ExecIrreversible)
        || a.caps.contains(Cap::ExecArbitrary)
        || !a.errors.is_empty();
    Ok(if risky {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
