//! The C and Python examples link against the built library and decide calls. Both examples
//! check their own decisions and exit non-zero on a wrong one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

/// The directory cargo put `libbulwark.so` and `libbulwark.a` in for this build.
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // Test binaries live in <target>/<profile>/deps; the libraries in deps and its parent.
    let deps = exe.parent().expect("deps dir").to_path_buf();
    for dir in [
        deps.clone(),
        deps.parent().expect("profile dir").to_path_buf(),
    ] {
        if dir.join("libbulwark.so").is_file() && dir.join("libbulwark.a").is_file() {
            return dir;
        }
    }
    panic!(
        "libbulwark.so and libbulwark.a are not next to {}",
        exe.display()
    );
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed ({})\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn compile_c(out: &Path, link: &[&str]) {
    let mut cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cc.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I"])
        .arg(Path::new(MANIFEST).join("include"))
        .arg(Path::new(MANIFEST).join("examples/c/example.c"))
        .arg("-o")
        .arg(out)
        .args(link);
    run(&mut cc);
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bulwark-ffi-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[test]
fn c_example_links_the_shared_library_and_decides() {
    let lib = library_dir();
    let dir = scratch("shared");
    let exe = dir.join("example");
    let l = format!("-L{}", lib.display());
    compile_c(&exe, &[&l, "-lbulwark", "-lpthread"]);
    let out = run(Command::new(&exe).env("LD_LIBRARY_PATH", &lib));
    assert!(out.contains("all decisions as expected"), "{out}");
    assert!(out.contains("ok   broken policy refused"), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn c_example_links_the_static_library_and_decides() {
    let lib = library_dir();
    let dir = scratch("static");
    let exe = dir.join("example");
    let archive = lib.join("libbulwark.a");
    compile_c(
        &exe,
        &[
            archive.to_str().expect("UTF-8 path"),
            "-lpthread",
            "-ldl",
            "-lm",
        ],
    );
    let out = run(&mut Command::new(&exe));
    assert!(out.contains("all decisions as expected"), "{out}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn python_ctypes_example_decides() {
    let lib = library_dir().join("libbulwark.so");
    let out = run(Command::new("python3")
        .arg(Path::new(MANIFEST).join("examples/python/example.py"))
        .arg(&lib));
    assert!(out.contains("all decisions as expected"), "{out}");
    // The read of a private key taints the session, so the next fetch is refused for that.
    assert!(out.contains("block TAINT_REVOKED"), "{out}");
}
