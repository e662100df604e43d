//! Any bytes as SQL: never a panic, and what no dialect parses is never read as safe.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let a = bulwark_shell::analyse_sql(text);
        if a.has("sql.unparsable") {
            assert!(a.caps.contains(bulwark_shell::Cap::DbAdmin));
        }
        let _ = bulwark_shell::looks_like_sql(text);
    }
});
