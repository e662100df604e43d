//! Any bytes as a command line: the analyser never panics, stays bounded, and anything it
//! cannot read is reported as arbitrary code rather than as harmless.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let a = bulwark_shell::analyse(text);
        assert!(a.invocations.len() <= bulwark_shell::MAX_INVOCATIONS);
        if !a.errors.is_empty() {
            assert!(a.caps.contains(bulwark_shell::Cap::ExecArbitrary));
            assert!(a.has("shell.unparsable"));
        }
        let _ = bulwark_shell::looks_like_command(text);
    }
});
