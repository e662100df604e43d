//! Walking JSON documents within limits: depth, size, and every string leaf with its pointer.

use serde_json::Value;

/// Size and depth of a document, measured without serialising it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Measure {
    /// Approximate serialised size in bytes (strings by length, plus punctuation).
    pub bytes: usize,
    /// Deepest nesting (a scalar is depth 0).
    pub depth: usize,
}

/// Measures `v`, stopping early once `max_depth` is exceeded.
pub fn measure(v: &Value, max_depth: usize) -> Measure {
    let mut m = Measure::default();
    walk_measure(v, 0, max_depth, &mut m);
    m
}

fn walk_measure(v: &Value, depth: usize, max_depth: usize, m: &mut Measure) {
    m.depth = m.depth.max(depth);
    if depth > max_depth {
        return;
    }
    match v {
        Value::Null | Value::Bool(_) => m.bytes += 5,
        Value::Number(_) => m.bytes += 8,
        Value::String(s) => m.bytes += s.len() + 2,
        Value::Array(a) => {
            m.bytes += 2 + a.len();
            for x in a {
                walk_measure(x, depth + 1, max_depth, m);
            }
        }
        Value::Object(o) => {
            m.bytes += 2 + o.len();
            for (k, x) in o {
                m.bytes += k.len() + 3;
                walk_measure(x, depth + 1, max_depth, m);
            }
        }
    }
}

/// Every string leaf (and object key's value) with its RFC 6901 pointer, in document order.
pub fn strings(v: &Value) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    let mut path = String::new();
    walk_strings(v, &mut path, &mut out);
    out
}

fn walk_strings<'a>(v: &'a Value, path: &mut String, out: &mut Vec<(String, &'a str)>) {
    match v {
        Value::String(s) => out.push((path.clone(), s.as_str())),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                walk_strings(x, path, out);
                path.truncate(len);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                let len = path.len();
                path.push('/');
                path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                walk_strings(x, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// The first string value under any of `keys` (case-insensitive) at the top level of an
/// object, or the document itself when it is a string and `keys` allows `""`.
pub fn field<'a>(v: &'a Value, keys: &[&str]) -> Option<(String, &'a str)> {
    let obj = v.as_object()?;
    for want in keys {
        for (k, x) in obj {
            if k.eq_ignore_ascii_case(want) {
                if let Some(s) = x.as_str() {
                    return Some((format!("/{}", k.replace('~', "~0").replace('/', "~1")), s));
                }
            }
        }
    }
    None
}

/// Every string under any of `keys` (case-insensitive), at the top level, including the
/// members of arrays of strings.
pub fn fields<'a>(v: &'a Value, keys: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let Some(obj) = v.as_object() else { return out };
    for (k, x) in obj {
        if keys.iter().any(|w| k.eq_ignore_ascii_case(w)) {
            match x {
                Value::String(s) => out.push(s.as_str()),
                Value::Array(a) => out.extend(a.iter().filter_map(Value::as_str)),
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_have_pointers() {
        let v = json!({"a": ["x", {"b/c": "y"}], "n": 1});
        let s = strings(&v);
        assert_eq!(s, vec![("/a/0".to_string(), "x"), ("/a/1/b~1c".to_string(), "y")]);
    }

    #[test]
    fn measures_depth_and_size() {
        let v = json!({"a": [[["deep"]]]});
        let m = measure(&v, 64);
        assert_eq!(m.depth, 4);
        assert!(m.bytes >= 6);
    }
}
