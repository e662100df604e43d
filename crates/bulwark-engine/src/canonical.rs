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

/// JSON string escaping as `serde_json` does it: `"` `\\` and the short escapes, `\u00XX`
/// for other controls, everything else as UTF-8.
fn write_str(s: &str, out: &mut String) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            0..=0x1f => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match esc {
            Some(e) => out.push_str(e),
            None => {
                let _ = write!(out, "\\u{b:04x}");
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
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

/// An in-memory fingerprint of a tool name and a JSON value, equal for values that are
/// equal as canonical JSON (key order does not matter). Not for anything that leaves the
/// process: use [`sha256_hex`] of [`to_string`] for that.
pub fn fingerprint(tool: &str, v: &Value) -> u64 {
    let mut h = Fnv::default();
    tool.hash(&mut h);
    hash_value(v, &mut h);
    h.finish()
}

/// A word-at-a-time multiplicative hash (the "Fx" construction): several times faster than
/// SipHash on long arguments. Not collision-resistant against an adversary, which is fine
/// here: a collision can only make two different calls look alike inside one session's
/// loop window, and an attacker gains nothing by causing their own calls to be refused.
#[derive(Default)]
struct Fnv(u64);

impl Fnv {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
        self.add(bytes.len() as u64);
    }
}

/// Feeds `v` to any hasher so that values equal as canonical JSON hash alike (kinds are
/// tagged, object keys taken in order). [`fingerprint`] uses it with a fast unkeyed hash;
/// a caller facing adversaries gives it a keyed one.
pub fn hash_value(v: &Value, h: &mut impl Hasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, *b).hash(h),
        Value::Number(n) => {
            2u8.hash(h);
            // Numbers hash by their JSON text, as canonical JSON compares them.
            n.to_string().hash(h);
        }
        Value::String(s) => (3u8, s.as_str()).hash(h),
        Value::Array(a) => {
            (4u8, a.len()).hash(h);
            for x in a {
                hash_value(x, h);
            }
        }
        Value::Object(o) => {
            (5u8, o.len()).hash(h);
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort_unstable();
            for k in keys {
                k.hash(h);
                if let Some(x) = o.get(k) {
                    hash_value(x, h);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_like_serde_json() {
        for s in [
            "plain",
            "quote \" and \\ back",
            "ctl \u{1}\u{1f}\n\t\r\u{8}\u{c}",
            "ünï😀",
            "</script>",
        ] {
            assert_eq!(
                to_string(&Value::String(s.into())),
                serde_json::to_string(s).unwrap(),
                "{s:?}"
            );
        }
    }

    #[test]
    fn fingerprints_ignore_key_order_but_not_values() {
        let a = json!({"a": 1, "b": [1, 2, {"x": "y"}]});
        let b: Value = serde_json::from_str(r#"{"b":[1,2,{"x":"y"}],"a":1}"#).unwrap();
        assert_eq!(fingerprint("t", &a), fingerprint("t", &b));
        assert_ne!(fingerprint("t", &a), fingerprint("u", &a));
        assert_ne!(
            fingerprint("t", &json!({"a": 1})),
            fingerprint("t", &json!({"a": "1"}))
        );
        assert_ne!(
            fingerprint("t", &json!(["ab", "c"])),
            fingerprint("t", &json!(["a", "bc"]))
        );
    }
}
