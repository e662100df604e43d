//! The walker's side of parsed inline code ([`crate::inline`]): its effects become the
//! facts a shell line gives. Processes it starts are walked as commands (an argv list as
//! those words, a command line parsed as shell), library deletions as the command doing
//! the same, and files, destinations, listeners, reverse shells and evaluated code are
//! recorded on the interpreter's own invocation.

use super::{Ctx, MAX_NESTING, Output, Stdin, W, Walker};
use crate::classify::Io;
use crate::code;
use crate::inline::{self, Effect, Facts, Lang, Origin, UNKNOWN, Value};
use crate::model::{Cap, Invocation};
use crate::paths;

/// What the program text of a run-time value printed, for the walker's origin rules.
fn output_of(o: Origin) -> Output {
    match o {
        Origin::Plain => Output::Other,
        Origin::Decoded => Output::Decode,
        Origin::Fetched => Output::Fetch,
        Origin::Net => Output::Net,
    }
}

/// A value as a command word.
fn word(v: &Value) -> W {
    match v.text() {
        Some((text, known)) => W {
            text,
            dynamic: !known,
            from: Output::Nothing,
        },
        None => W {
            text: UNKNOWN.to_string(),
            dynamic: true,
            from: output_of(v.origin()),
        },
    }
}

/// Deletions of data stores that the language readers do not model (`dropDatabase`,
/// `FLUSHALL`, `deleteMany({})`): kept from the pattern reader.
fn store_deletions(text: &str) -> Vec<String> {
    code::deletes(text)
        .into_iter()
        .filter(|d| {
            [
                "Index",
                "clearObjects",
                "dropDatabase",
                ".drop",
                "deleteMany",
                ".remove",
                "FLUSH",
                "flush",
            ]
            .iter()
            .any(|k| d.contains(k))
        })
        .collect()
}

impl Walker {
    /// Inline code in a language [`crate::inline`] reads.
    pub(super) fn inline(
        &mut self,
        mut inv: Invocation,
        text: &str,
        lang: Lang,
        ctx: &Ctx,
        stdin: Stdin,
        io: Io,
    ) -> Output {
        let facts = inline::analyse(text, lang);
        let name = inv.name.clone();
        inv.code = Some(text.chars().take(4096).collect());
        for e in &facts.errors {
            self.error(ctx, format!("{name} code: {e}"));
        }
        record(&mut inv, &facts, &name);
        for d in store_deletions(text) {
            inv.because(Cap::ExecIrreversible, format!("{name} code calls {d}"));
            inv.caps.insert(Cap::FsWrite);
        }
        let label = format!("{name} code");
        let out = self.finish(inv, &stdin, &io, ctx);
        let mut inner = ctx.with(label);
        inner.nesting += 1;
        if inner.nesting > MAX_NESTING {
            self.error(
                ctx,
                format!("commands nested deeper than {MAX_NESTING} levels"),
            );
            return out;
        }
        for e in &facts.effects {
            match e {
                Effect::Exec(argv) => {
                    let words: Vec<W> = argv.iter().map(word).collect();
                    self.invoke(words, inner.clone(), Stdin::Tty, Io::default(), &[]);
                }
                Effect::Shell(cmd) => match cmd.text() {
                    Some((t, true)) => {
                        self.nested(&t, &inner, Stdin::Tty);
                    }
                    // Partly known: the known parts still say what it does to what
                    // (`rm -rf $UNKNOWN`); a guess at the rest is not an error.
                    Some((t, false)) => {
                        let mut lenient = inner.clone();
                        lenient.lenient = true;
                        self.nested(&t, &lenient, Stdin::Tty);
                    }
                    // Unknown: as `sh -c "$X"`, with where the text comes from.
                    None => {
                        let words = vec![
                            W {
                                text: "sh".into(),
                                dynamic: false,
                                from: Output::Nothing,
                            },
                            W {
                                text: "-c".into(),
                                dynamic: false,
                                from: Output::Nothing,
                            },
                            word(cmd),
                        ];
                        self.invoke(words, inner.clone(), Stdin::Tty, Io::default(), &[]);
                    }
                },
                _ => {}
            }
        }
        out
    }
}

/// Files, destinations and structural facts, on the interpreter's invocation.
fn record(inv: &mut Invocation, f: &Facts, name: &str) {
    for e in &f.effects {
        match e {
            Effect::Write(p) => match p.known() {
                Some(p) => {
                    let p = paths::normalize(&p);
                    inv.because(Cap::FsWrite, format!("{name} code writes {p}"));
                    if !inv.writes.contains(&p) {
                        inv.writes.push(p);
                    }
                }
                None => inv.because(
                    Cap::FsWrite,
                    format!("{name} code writes a file named at run time"),
                ),
            },
            Effect::Read(p) => {
                // A descriptor number (`readFileSync(0)`) is no file.
                if let (false, Some(p)) = (matches!(p, Value::Num(_)), p.known()) {
                    let p = paths::normalize(&p);
                    if !inv.reads.contains(&p) {
                        inv.reads.push(p);
                    }
                }
            }
            Effect::Connect(host, port) => {
                let dest = match (host.known(), port.known()) {
                    (Some(h), Some(p)) => Some(format!("{h}:{p}")),
                    (Some(h), None) => Some(h),
                    _ => None,
                };
                match dest {
                    Some(d) => {
                        inv.because(Cap::NetEgress, format!("{name} code connects to {d}"));
                        if !inv.destinations.contains(&d) {
                            inv.destinations.push(d);
                        }
                    }
                    None => inv.because(
                        Cap::NetEgress,
                        format!("{name} code connects to a host known only at run time"),
                    ),
                }
            }
            Effect::Request(url) => {
                inv.because(Cap::NetEgress, format!("{name} code uses the network"));
                if let Some(u) = url.known()
                    && !inv.destinations.contains(&u)
                {
                    inv.destinations.push(u);
                }
            }
            Effect::Listen => {
                inv.fact("shell.listener");
                inv.because(Cap::NetEgress, format!("{name} code listens on a socket"));
            }
            Effect::Exec(_) | Effect::Shell(_) => {}
        }
    }
    // Code that reads files and talks to the network can send what it read.
    let reads = f.effects.iter().any(|e| matches!(e, Effect::Read(_)));
    let sends = f
        .effects
        .iter()
        .any(|e| matches!(e, Effect::Request(_) | Effect::Connect(..)));
    if reads && sends {
        inv.fact("shell.upload");
    }
    if f.reverse_shell() {
        inv.fact("shell.reverse_shell");
        inv.because(
            Cap::ExecArbitrary,
            format!("{name} code binds a process to a network connection"),
        );
    }
    if f.decode_exec {
        inv.fact("shell.decode_to_shell");
        inv.because(Cap::ExecArbitrary, format!("{name} code runs decoded code"));
    }
    if f.fetch_exec {
        inv.fact("shell.fetch_to_shell");
        inv.because(
            Cap::ExecArbitrary,
            format!("{name} code runs downloaded code"),
        );
    }
    if f.eval_unknown {
        inv.fact("shell.eval_dynamic");
        inv.because(
            Cap::ExecArbitrary,
            format!("{name} code evaluates code known only at run time"),
        );
        if f.process_module {
            inv.fact("shell.eval_dynamic_process");
        }
    }
}
