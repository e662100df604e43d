//! The analyser stays linear on hostile input: eight times the text never costs anywhere
//! near sixty-four times the time (what a quadratic path would take). Timing on a shared
//! machine is noisy, so each size takes the best of several runs and the bound is loose.
//! Both sizes are above the fast path's 4 KiB, so both go through tree-sitter.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

fn best(text: &str) -> Duration {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(bulwark_shell::analyse(text));
            t.elapsed()
        })
        .min()
        .unwrap()
}

/// A hostile shape: its name and how to make `n` bytes of it.
type Shape = (&'static str, fn(usize) -> String);

#[test]
fn eight_times_the_input_is_not_sixty_four_times_the_time() {
    let shapes: &[Shape] = &[
        ("quotes", |n| {
            format!("echo {}", "'a'\"b\"$'c' ".repeat(n / 12))
        }),
        ("pipeline", |n| vec!["cat f"; n / 8].join(" | ")),
        ("list", |n| vec!["a -x"; n / 8].join(" && ")),
        ("substitutions", |n| {
            format!("echo {}", "$(a) `b` ${c:-d} ".repeat(n / 20))
        }),
        ("unbalanced", |n| "$(".repeat(n / 2)),
        ("parens", |n| "(".repeat(n)),
        ("heredoc", |n| {
            format!("cat <<EOF\n{}EOF\n", "line $x `y`\n".repeat(n / 12))
        }),
        ("long_word", |n| format!("echo {}", "a".repeat(n))),
        ("assignments", |n| "A=1 ".repeat(n / 4) + "true"),
        ("brackets", |n| {
            format!("[[ {} ]]", "a == b && ".repeat(n / 10) + "c")
        }),
        // Inline code: one parse of the program, however long.
        ("python", |n| {
            format!(
                "python3 - <<'EOF'\n{}EOF\n",
                "x = os.path.join('a', 'b')\nprint(x, d)\n".repeat(n / 40)
            )
        }),
        // Calls to the program's own function: followed up to the call limit, the rest
        // read once with unknown arguments, never once per call.
        ("python calls", |n| {
            format!(
                "python3 - <<'EOF'\nimport os\ndef f(c):\n    os.system(c)\n{}EOF\n",
                "f('echo hi')\n".repeat(n / 13)
            )
        }),
        ("js calls", |n| {
            format!(
                "node <<'EOF'\nconst f = (c) => require('child_process').execSync(c);\n{}EOF\n",
                "f('echo hi');\n".repeat(n / 14)
            )
        }),
    ];
    for (name, make) in shapes {
        let small = make(6_000);
        let large = make(48_000);
        assert!(large.len() <= bulwark_shell::parse::MAX_BYTES, "{name}");
        // Warm up (parser construction, caches).
        bulwark_shell::analyse(&small);
        let (s, l) = (best(&small), best(&large));
        let ratio = l.as_secs_f64() / s.as_secs_f64().max(1e-6);
        println!("{name}: {s:?} → {l:?} ({ratio:.1}×)");
        assert!(
            ratio < 24.0 || l < Duration::from_millis(5),
            "{name}: 8× input took {ratio:.1}× ({s:?} → {l:?})"
        );
    }
}
