//! `bulwark shell`: the command analyser on one line, for people and for scripts.

use std::io::Read;
use std::process::ExitCode;

use anyhow::{Context, Result};
use bulwark_shell::{Analysis, Cap, Invocation, SqlAnalysis};
use serde_json::{Value, json};

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
            println!("{}", serde_json::to_string_pretty(&sql_json(&a))?);
        } else {
            print_sql(&a, "");
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
        println!("{}", serde_json::to_string_pretty(&analysis_json(&a))?);
    } else {
        print_analysis(&a);
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

fn caps(c: bulwark_shell::Caps) -> Vec<&'static str> {
    c.iter().map(Cap::name).collect()
}

fn invocation_json(i: &Invocation) -> Value {
    json!({
        "name": i.name,
        "written": i.written,
        "words": i.words,
        "flags": i.argv.flags(),
        "options": i.argv.opts.iter().filter(|o| o.value.is_some()).map(|o| json!({"name": o.name, "value": o.value})).collect::<Vec<_>>(),
        "operands": i.args,
        "subcommand": i.argv.sub(),
        "via": i.via,
        "remote": i.remote,
        "dynamic": i.dynamic,
        "reads": i.reads,
        "writes": i.writes,
        "destinations": i.destinations,
        "code": i.code,
        "capabilities": caps(i.caps),
        "reasons": i.reasons.iter().map(|r| json!({"capability": r.cap.name(), "text": r.text})).collect::<Vec<_>>(),
        "predicates": i.predicates,
    })
}

fn sql_json(s: &SqlAnalysis) -> Value {
    json!({
        "statements": s.statements.iter().map(|st| json!({"kind": st.kind, "class": st.class.name()})).collect::<Vec<_>>(),
        "capabilities": caps(s.caps),
        "predicates": s.predicates,
        "dialect": s.dialect,
        "error": s.error,
    })
}

fn analysis_json(a: &Analysis) -> Value {
    json!({
        "commands": a.invocations.iter().map(invocation_json).collect::<Vec<_>>(),
        "capabilities": caps(a.caps),
        "destinations": a.destinations,
        "reads": a.reads,
        "writes": a.writes,
        "irreversible": reasons(a, Cap::ExecIrreversible),
        "arbitrary": reasons(a, Cap::ExecArbitrary),
        "predicates": a.predicates,
        "sql": a.sql.iter().map(sql_json).collect::<Vec<_>>(),
        "errors": a.errors,
    })
}

fn reasons(a: &Analysis, cap: Cap) -> Vec<&str> {
    a.reasons
        .iter()
        .filter(|r| r.cap == cap)
        .map(|r| r.text.as_str())
        .collect()
}

fn list(items: &[String]) -> String {
    items.join(" ")
}

fn print_analysis(a: &Analysis) {
    if !a.errors.is_empty() {
        println!("could not be analysed (treated as arbitrary code):");
        for e in &a.errors {
            println!("  {e}");
        }
    }
    if a.invocations.is_empty() && a.errors.is_empty() {
        println!("no commands");
    }
    for (n, i) in a.invocations.iter().enumerate() {
        println!("{}. {}", n + 1, i.display());
        if !i.via.is_empty() {
            println!("     via: {}", i.via.join(" › "));
        }
        if let Some(r) = &i.remote {
            println!("     runs on: {r}");
        }
        let flags = i.argv.flags();
        if !flags.is_empty() {
            println!("     flags: {}", flags.join(" "));
        }
        let sub = i.argv.sub();
        if !sub.is_empty() {
            println!("     subcommand: {sub}");
        }
        for (what, v) in [
            ("operands", &i.args),
            ("reads", &i.reads),
            ("writes", &i.writes),
            ("reaches", &i.destinations),
        ] {
            let only_the_subcommand = what == "operands" && sub == list(v);
            if !v.is_empty() && !only_the_subcommand {
                println!("     {what}: {}", list(v));
            }
        }
        if !i.caps.is_empty() {
            println!("     capabilities: {}", caps(i.caps).join(", "));
        }
        for r in &i.reasons {
            println!("       {}: {}", r.cap.name(), r.text);
        }
        if !i.predicates.is_empty() {
            println!("     facts: {}", i.predicates.join(", "));
        }
    }
    println!();
    let c = caps(a.caps);
    println!(
        "capabilities: {}",
        if c.is_empty() {
            "none".to_string()
        } else {
            c.join(", ")
        }
    );
    if !a.destinations.is_empty() {
        println!("destinations: {}", a.destinations.join(", "));
    }
    let irr = reasons(a, Cap::ExecIrreversible);
    if !irr.is_empty() {
        println!("irreversible:");
        for r in irr {
            println!("  - {r}");
        }
    }
    let arb = reasons(a, Cap::ExecArbitrary);
    if !arb.is_empty() {
        println!("arbitrary code:");
        for r in arb {
            println!("  - {r}");
        }
    }
    if !a.predicates.is_empty() {
        println!("facts: {}", a.predicates.join(", "));
    }
    for s in &a.sql {
        print_sql(s, "sql: ");
    }
}

fn print_sql(s: &SqlAnalysis, prefix: &str) {
    match (&s.dialect, &s.error) {
        (Some(d), _) => println!("{prefix}parsed as {d}"),
        (None, Some(e)) => {
            println!("{prefix}no dialect parses it (treated as able to do anything): {e}")
        }
        (None, None) => {}
    }
    for st in &s.statements {
        println!("{prefix}  {} ({})", st.kind, st.class.name());
    }
    if !s.predicates.is_empty() {
        println!("{prefix}facts: {}", s.predicates.join(", "));
    }
}
