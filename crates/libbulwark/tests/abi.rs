//! The C functions called from Rust: bad input, sharing between threads, freeing.
#![allow(unsafe_code)] // Calling a C ABI from Rust is unsafe by definition; this is its test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::{CStr, CString, c_char};
use std::ptr;

use bulwark::{bulwark_engine_free, bulwark_engine_new, bulwark_evaluate, bulwark_string_free};
use serde_json::Value;

struct Engine(*mut bulwark::Handle);

// SAFETY: the handle is documented thread-safe; this wrapper only lets tests share it.
unsafe impl Send for Engine {}
unsafe impl Sync for Engine {}

impl Engine {
    fn new(policy: Option<&str>) -> Result<Engine, String> {
        let policy = policy.map(|p| CString::new(p).expect("no NUL"));
        let mut err: *mut c_char = ptr::null_mut();
        let e = unsafe {
            bulwark_engine_new(
                policy.as_ref().map_or(ptr::null(), |p| p.as_ptr()),
                &mut err,
            )
        };
        if e.is_null() {
            assert!(!err.is_null(), "a failed engine_new sets error_out");
            let msg = unsafe { CStr::from_ptr(err) }
                .to_string_lossy()
                .into_owned();
            unsafe { bulwark_string_free(err) };
            Err(msg)
        } else {
            assert!(err.is_null(), "a successful engine_new clears error_out");
            Ok(Engine(e))
        }
    }

    fn eval_bytes(&self, bytes: Option<&[u8]>) -> Value {
        let c = bytes.map(|b| CString::new(b).expect("no NUL"));
        let out =
            unsafe { bulwark_evaluate(self.0, c.as_ref().map_or(ptr::null(), |c| c.as_ptr())) };
        assert!(!out.is_null(), "bulwark_evaluate never returns NULL");
        let text = unsafe { CStr::from_ptr(out) }
            .to_str()
            .expect("UTF-8 out")
            .to_owned();
        unsafe { bulwark_string_free(out) };
        serde_json::from_str(&text).expect("decision JSON")
    }

    fn eval(&self, line: &str) -> Value {
        self.eval_bytes(Some(line.as_bytes()))
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        unsafe { bulwark_engine_free(self.0) };
    }
}

#[test]
fn decides_like_check() {
    let e = Engine::new(None).expect("built-in policy");
    let d = e.eval(r#"{"tool":"shell","args":{"command":"ls"}}"#);
    assert_eq!(d["decision"], "allow");
    let d = e.eval(r#"{"tool":"shell","args":{"command":"rm -rf ~"}}"#);
    assert_eq!(d["decision"], "block");
    assert_eq!(d["rule_id"], "fs.rm_root_or_home");
}

#[test]
fn the_policy_passed_in_is_the_one_applied() {
    let e = Engine::new(None).expect("built-in policy");
    let d = e.eval(r#"{"tool":"frobnicate","args":{"note":"hello"}}"#);
    assert_eq!(
        d["decision"], "allow",
        "the default analyses unknown tools: {d}"
    );
    let strict =
        Engine::new(Some("version: 1\nunknown_tools:\n  action: block\n")).expect("policy");
    let d = strict.eval(r#"{"tool":"frobnicate","args":{"note":"hello"}}"#);
    assert_eq!(d["reason_code"], "UNKNOWN_TOOL", "{d}");
}

#[test]
fn bad_input_is_a_decision() {
    let e = Engine::new(None).expect("built-in policy");
    for (input, what) in [
        (Some(&b"not json"[..]), "not a call"),
        (
            Some(&b"{\"tool\":\"shell\",\"args\":{\"command\":\"\xff\"}}"[..]),
            "not UTF-8",
        ),
        (Some(&b"[1,2]"[..]), "not a call"),
        (Some(&b""[..]), "not a call"),
        (None, "NULL"),
    ] {
        let d = e.eval_bytes(input);
        assert_eq!(d["decision"], "block", "{input:?}");
        assert_eq!(d["reason_code"], "INVALID_INPUT", "{input:?}");
        assert!(
            d["reason"].as_str().is_some_and(|r| r.contains(what)),
            "{input:?}: {d}"
        );
    }
}

#[test]
fn null_engine_and_null_frees_are_harmless() {
    let out = unsafe { bulwark_evaluate(ptr::null_mut(), c"{}".as_ptr()) };
    let d: Value = serde_json::from_str(unsafe { CStr::from_ptr(out) }.to_str().expect("UTF-8"))
        .expect("decision JSON");
    assert_eq!(d["reason_code"], "INVALID_INPUT");
    unsafe {
        bulwark_string_free(out);
        bulwark_string_free(ptr::null_mut());
        bulwark_engine_free(ptr::null_mut());
    }
    // error_out may be NULL.
    let e = unsafe { bulwark_engine_new(c"version: [".as_ptr(), ptr::null_mut()) };
    assert!(e.is_null());
}

#[test]
fn bad_policies_are_refused_with_a_reason() {
    let msg = Engine::new(Some("version: [")).err().expect("refused");
    assert!(msg.contains("<policy_yaml>"), "{msg}");
    let msg = Engine::new(Some("version: 1\nno_such_key: 1\n"))
        .err()
        .expect("refused");
    assert!(msg.contains("no_such_key"), "{msg}");
    let bytes = b"version: 1\nname: \xff\n";
    let c = CString::new(&bytes[..]).expect("no NUL");
    let mut err: *mut c_char = ptr::null_mut();
    let e = unsafe { bulwark_engine_new(c.as_ptr(), &mut err) };
    assert!(e.is_null());
    let msg = unsafe { CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    unsafe { bulwark_string_free(err) };
    assert!(msg.contains("UTF-8"), "{msg}");
}

#[test]
fn one_engine_serves_many_threads_and_keeps_sessions_apart() {
    let e = Engine::new(None).expect("built-in policy");
    std::thread::scope(|s| {
        for t in 0..8 {
            let e = &e;
            s.spawn(move || {
                // Half the threads taint their session first; only they lose egress.
                let session = format!("t{t}");
                if t % 2 == 0 {
                    // Reading a private key is asked first; once the host has run it, the
                    // key coming back taints the session.
                    let d = e.eval(&format!(
                        r#"{{"tool":"read_file","session":"{session}","args":{{"path":"/home/u/.ssh/id_ed25519"}}}}"#
                    ));
                    assert_eq!(d["decision"], "approve", "{d}");
                    let d = e.eval(&format!(
                        r#"{{"tool":"read_file","session":"{session}","direction":"response","args":{{"path":"/home/u/.ssh/id_ed25519"}},"result":"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACBq3XkF8mWcLr0Kq1vJ2pNd7Yt6sUe4hGzA9bTfQcXwPgAAAJgYwJ1kGMCd\n-----END OPENSSH PRIVATE KEY-----"}}"#
                    ));
                    assert_ne!(d["decision"], "allow", "{d}");
                }
                for i in 0..20 {
                    let d = e.eval(&format!(
                        r#"{{"tool":"fetch","session":"{session}","args":{{"url":"https://example.com/{i}"}}}}"#
                    ));
                    let want = if t % 2 == 0 { "block" } else { "allow" };
                    assert_eq!(d["decision"], want, "thread {t} call {i}: {d}");
                }
            });
        }
    });
}
