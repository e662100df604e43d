//! An analysis as people and scripts read it: the text `bulwark shell` prints and the JSON
//! of `bulwark shell --json`, kept beside the model they render so that a new field is
//! rendered where it is defined.
//!
//! ```
//! let a = bulwark_shell::analyse("sudo rm -rf /tmp/x");
//! assert!(bulwark_shell::report::text(&a).contains("exec.irreversible"));
//! assert_eq!(bulwark_shell::report::json(&a)["commands"][0]["name"], "rm");
//! ```

use std::fmt::{self, Write};

use serde_json::{Value, json};

use crate::{Analysis, Cap, Caps, Invocation, SqlAnalysis};

/// A command line's analysis as text: each command, then the line's capabilities,
/// destinations, reasons and facts.
pub fn text(a: &Analysis) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_text(&mut out, a);
    out
}

/// A SQL string's analysis as text.
pub fn sql_text(s: &SqlAnalysis) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_sql(&mut out, s, "");
    out
}

fn caps(c: Caps) -> Vec<&'static str> {
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

/// A SQL string's analysis as JSON: its statements and their classes, capabilities,
/// facts, the dialect that parsed it, or why none did.
pub fn sql_json(s: &SqlAnalysis) -> Value {
    json!({
        "statements": s.statements.iter().map(|st| json!({"kind": st.kind, "class": st.class.name()})).collect::<Vec<_>>(),
        "capabilities": caps(s.caps),
        "predicates": s.predicates,
        "dialect": s.dialect,
        "error": s.error,
    })
}

/// A command line's analysis as JSON: each command (with its flags, options, operands,
/// wrappers, files, destinations, capabilities and reasons), then the line's totals.
pub fn json(a: &Analysis) -> Value {
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

fn write_text(out: &mut String, a: &Analysis) -> fmt::Result {
    if !a.errors.is_empty() {
        writeln!(out, "could not be analysed (treated as arbitrary code):")?;
        for e in &a.errors {
            writeln!(out, "  {e}")?;
        }
    }
    if a.invocations.is_empty() && a.errors.is_empty() {
        writeln!(out, "no commands")?;
    }
    for (n, i) in a.invocations.iter().enumerate() {
        writeln!(out, "{}. {}", n + 1, i.display())?;
        if !i.via.is_empty() {
            writeln!(out, "     via: {}", i.via.join(" › "))?;
        }
        if let Some(r) = &i.remote {
            writeln!(out, "     runs on: {r}")?;
        }
        let flags = i.argv.flags();
        if !flags.is_empty() {
            writeln!(out, "     flags: {}", flags.join(" "))?;
        }
        let sub = i.argv.sub();
        if !sub.is_empty() {
            writeln!(out, "     subcommand: {sub}")?;
        }
        for (what, v) in [
            ("operands", &i.args),
            ("reads", &i.reads),
            ("writes", &i.writes),
            ("reaches", &i.destinations),
        ] {
            let only_the_subcommand = what == "operands" && sub == list(v);
            if !v.is_empty() && !only_the_subcommand {
                writeln!(out, "     {what}: {}", list(v))?;
            }
        }
        if !i.caps.is_empty() {
            writeln!(out, "     capabilities: {}", caps(i.caps).join(", "))?;
        }
        for r in &i.reasons {
            writeln!(out, "       {}: {}", r.cap.name(), r.text)?;
        }
        if !i.predicates.is_empty() {
            writeln!(out, "     facts: {}", i.predicates.join(", "))?;
        }
    }
    writeln!(out)?;
    let c = caps(a.caps);
    writeln!(
        out,
        "capabilities: {}",
        if c.is_empty() {
            "none".to_string()
        } else {
            c.join(", ")
        }
    )?;
    if !a.destinations.is_empty() {
        writeln!(out, "destinations: {}", a.destinations.join(", "))?;
    }
    let irr = reasons(a, Cap::ExecIrreversible);
    if !irr.is_empty() {
        writeln!(out, "irreversible:")?;
        for r in irr {
            writeln!(out, "  - {r}")?;
        }
    }
    let arb = reasons(a, Cap::ExecArbitrary);
    if !arb.is_empty() {
        writeln!(out, "arbitrary code:")?;
        for r in arb {
            writeln!(out, "  - {r}")?;
        }
    }
    if !a.predicates.is_empty() {
        writeln!(out, "facts: {}", a.predicates.join(", "))?;
    }
    for s in &a.sql {
        write_sql(out, s, "sql: ")?;
    }
    Ok(())
}

fn write_sql(out: &mut String, s: &SqlAnalysis, prefix: &str) -> fmt::Result {
    match (&s.dialect, &s.error) {
        (Some(d), _) => writeln!(out, "{prefix}parsed as {d}")?,
        (None, Some(e)) => writeln!(
            out,
            "{prefix}no dialect parses it (treated as able to do anything): {e}"
        )?,
        (None, None) => {}
    }
    for st in &s.statements {
        writeln!(out, "{prefix}  {} ({})", st.kind, st.class.name())?;
    }
    if !s.predicates.is_empty() {
        writeln!(out, "{prefix}facts: {}", s.predicates.join(", "))?;
    }
    Ok(())
}
