//! Canonical JSON and digests: one byte form per value, whatever the key order or
//! whitespace it arrived with. Used for loop fingerprints, approval digests and pins.

use std::fmt::Write;
use std::hash::{Hash, Hasher};

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Writes `v` with object keys sorted (by UTF-8 bytes), no whitespace, and numbers and
/// strings as `serde_json` prints them.
///
/// ```
/// let v: serde_json::Value = serde_json::from_str(r#"{ "b": 1, "a": [true, null] }"#).unwrap();
/// assert_eq!(bulwark_engine::canonical::to_string(&v), r#"{"a":[true,null],"b":1}"#);
/// ```
pub fn to_string(v: &Value) -> String {
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn write(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(k, out);
                out.push(':');
                if let Some(v) = map.get(*k) {
                    write(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::String(s) => write_str(s, out),
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

fn write_str(s: &str, out: &mut String) {
    // serde_json's string escaping is already canonical (minimal escapes, \uXXXX for controls).
    out.push_str(&Value::String(s.to_string()).to_string());
}

/// SHA-256 of `bytes` as lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// A fast in-memory fingerprint of `parts` (not for anything that leaves the process).
pub fn fingerprint(parts: &[&str]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for p in parts {
        p.hash(&mut h);
    }
    h.finish()
}
