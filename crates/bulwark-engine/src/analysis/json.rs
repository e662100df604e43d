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

/// Every string leaf, in document order (object members in the order the map keeps them).
pub fn strings(v: &Value) -> Vec<&str> {
    let mut out = Vec::new();
    walk_strings(v, &mut out);
    out
}

fn walk_strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s.as_str()),
        Value::Array(a) => a.iter().for_each(|x| walk_strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| walk_strings(x, out)),
        _ => {}
    }
}

/// Member names whose string values label an item rather than say something (`"type":
/// "text"`, a MIME type, a URI, a role) or hold data no one reads as text (`blob`).
const LABEL_KEYS: &[&str] = &[
    "type",
    "mimeType",
    "mime_type",
    "uri",
    "role",
    "audience",
    "id",
    "blob",
];

/// The indices (as [`strings`] orders them) of the string leaves that are text someone
/// reads: every string but those under [`LABEL_KEYS`] and an image's or audio's `data`.
/// A result's text blocks, resource texts, `structuredContent` fields and error data, in
/// document order.
pub fn prose_indices(v: &Value) -> Vec<usize> {
    let mut out = Vec::new();
    let mut n = 0;
    walk_prose(v, false, &mut n, &mut out);
    out
}

fn walk_prose(v: &Value, label: bool, n: &mut usize, out: &mut Vec<usize>) {
    match v {
        Value::String(_) => {
            if !label {
                out.push(*n);
            }
            *n += 1;
        }
        Value::Array(a) => a.iter().for_each(|x| walk_prose(x, label, n, out)),
        Value::Object(o) => {
            // An image or audio item's `data` is base64 beside its `mimeType`, not text
            // (an error's or a log line's `data` is).
            let binary = o.contains_key("mimeType");
            for (k, x) in o {
                let label = LABEL_KEYS.contains(&k.as_str()) || (binary && k == "data");
                walk_prose(x, label, n, out);
            }
        }
        _ => {}
    }
}

/// Every object key in the document, one per line: text a server chose, which a model
/// reads (a schema's property names, a result's field names) and which can carry
/// instructions or a secret as well as any value can.
pub fn keys(v: &Value) -> String {
    let mut out = String::new();
    walk_keys(v, &mut out);
    out
}

fn walk_keys(v: &Value, out: &mut String) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| walk_keys(x, out)),
        Value::Object(o) => {
            for (k, x) in o {
                out.push_str(k);
                out.push('\n');
                walk_keys(x, out);
            }
        }
        _ => {}
    }
}

/// The RFC 6901 pointer of the `index`-th string leaf as [`strings`] orders them. Pointers
/// are built only for the few strings a finding names, not for every string scanned.
pub fn pointer_of(v: &Value, index: usize) -> Option<String> {
    let mut seen = 0;
    let mut path = String::new();
    find_pointer(v, index, &mut seen, &mut path).then_some(path)
}

fn find_pointer(v: &Value, index: usize, seen: &mut usize, path: &mut String) -> bool {
    match v {
        Value::String(_) => {
            *seen += 1;
            *seen == index + 1
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                if find_pointer(x, index, seen, path) {
                    return true;
                }
                path.truncate(len);
            }
            false
        }
        Value::Object(o) => {
            for (k, x) in o {
                let len = path.len();
                path.push('/');
                path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                if find_pointer(x, index, seen, path) {
                    return true;
                }
                path.truncate(len);
            }
            false
        }
        _ => false,
    }
}

/// The first string value under any of `keys` (case-insensitive) at the top level of an
/// object, or the document itself when it is a string and `keys` allows `""`.
pub fn field<'a>(v: &'a Value, keys: &[&str]) -> Option<(String, &'a str)> {
    let obj = v.as_object()?;
    for want in keys {
        for (k, x) in obj {
            if k.eq_ignore_ascii_case(want)
                && let Some(s) = x.as_str()
            {
                return Some((format!("/{}", k.replace('~', "~0").replace('/', "~1")), s));
            }
        }
    }
    None
}

/// Most words of an argv array joined into one command line.
const MAX_ARGV: usize = 4096;

/// A command line under one of `keys` (case-insensitive) at the top level, or under an
/// `action` object (the OpenAI `local_shell` shape, `{"action": {"type": "exec",
/// "command": [...]}}`): a string as it is, an argv array (`["bash", "-lc", "ls -la"]`)
/// as the line that runs exactly those words, and a `commands` list as one line per
/// element. Also returns the strings it consumed, which are not commands of their own.
pub fn command<'a>(v: &'a Value, keys: &[&str]) -> Option<(String, Vec<&'a str>)> {
    let obj = v.as_object()?;
    for want in keys {
        for (k, x) in obj {
            if !k.eq_ignore_ascii_case(want) {
                continue;
            }
            match x {
                Value::String(s) => return Some((s.clone(), vec![s.as_str()])),
                Value::Array(a) if !a.is_empty() && a.len() <= MAX_ARGV => {
                    let words: Option<Vec<&str>> = a.iter().map(Value::as_str).collect();
                    if let Some(words) = words {
                        let line = if k.eq_ignore_ascii_case("commands") {
                            words.join("\n")
                        } else {
                            argv_line(&words)
                        };
                        return Some((line, words));
                    }
                }
                _ => {}
            }
        }
    }
    obj.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("action"))
        .and_then(|(_, a)| command(a, keys))
}

/// The shell line that runs exactly `words` as one program with its arguments.
pub fn argv_line(words: &[&str]) -> String {
    let mut line = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        let plain = !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c));
        if plain {
            line.push_str(w);
        } else {
            line.push('\'');
            line.push_str(&w.replace('\'', r"'\''"));
            line.push('\'');
        }
    }
    line
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

/// How deep [`fields_deep`] looks, and how many strings it returns at most.
const DEEP_DEPTH: usize = 16;
const DEEP_MAX: usize = 256;

/// Whether an argument name means `want`: the same name (case-insensitive), or a name whose
/// last word is it — `pre_command`, `shellCommand`, `target-url`, `options.exec`'s `exec`.
fn key_means(key: &str, want: &str) -> bool {
    if key.eq_ignore_ascii_case(want) {
        return true;
    }
    // The last word: after the last separator, or the last camelCase hump.
    let cut = key
        .char_indices()
        .filter(|&(i, c)| {
            matches!(c, '_' | '-' | '.' | ' ')
                || (c.is_ascii_uppercase()
                    && key[..i]
                        .chars()
                        .next_back()
                        .is_some_and(|p| p.is_ascii_lowercase()))
        })
        .map(|(i, c)| if c.is_ascii_uppercase() { i } else { i + 1 })
        .next_back();
    cut.is_some_and(|i| key[i..].eq_ignore_ascii_case(want))
}

/// Every string under a name that means one of `keys` ([`key_means`]) anywhere in the
/// document — nested objects and arrays included — with the members of arrays of strings;
/// bounded in depth and number.
pub fn fields_deep<'a>(v: &'a Value, keys: &[&str]) -> Vec<&'a str> {
    fields_deep_named(v, keys)
        .into_iter()
        .map(|(_, s)| s)
        .collect()
}

/// [`fields_deep`] with the name each string was found under.
pub fn fields_deep_named<'a>(v: &'a Value, keys: &[&str]) -> Vec<(&'a str, &'a str)> {
    let mut out = Vec::new();
    walk_fields(v, keys, 0, &mut out);
    out
}

fn walk_fields<'a>(v: &'a Value, keys: &[&str], depth: usize, out: &mut Vec<(&'a str, &'a str)>) {
    if depth > DEEP_DEPTH || out.len() >= DEEP_MAX {
        return;
    }
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                if keys.iter().any(|w| key_means(k, w)) {
                    match x {
                        Value::String(s) => out.push((k.as_str(), s.as_str())),
                        Value::Array(a) => {
                            out.extend(a.iter().filter_map(Value::as_str).map(|s| (k.as_str(), s)))
                        }
                        _ => {}
                    }
                }
                walk_fields(x, keys, depth + 1, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| walk_fields(x, keys, depth + 1, out)),
        _ => {}
    }
    out.truncate(DEEP_MAX);
}

#[cfg(test)]
mod tests {
    #[test]
    fn prose_is_every_string_but_labels() {
        let v = json!({"content": [{"type": "text", "text": "a"},
            {"type": "resource", "resource": {"uri": "file:///x", "mimeType": "text/plain", "text": "b"}},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}],
            "structuredContent": {"note": "c", "tags": ["d"]}});
        let all = strings(&v);
        let prose: Vec<&str> = prose_indices(&v).into_iter().map(|i| all[i]).collect();
        assert_eq!(prose, ["a", "b", "c", "d"]);
    }

    #[test]
    fn argv_arrays_are_the_line_that_runs_those_words() {
        let v = json!({"command": ["bash", "-lc", "ls -la"]});
        assert_eq!(command(&v, &["command"]).unwrap().0, "bash -lc 'ls -la'");
        let v = json!({"action": {"type": "exec", "command": ["rm", "-rf", "it's here"]}});
        assert_eq!(
            command(&v, &["command"]).unwrap().0,
            r"rm -rf 'it'\''s here'"
        );
        let v = json!({"commands": ["cd src", "ls"]});
        assert_eq!(command(&v, &["commands"]).unwrap().0, "cd src\nls");
        assert!(command(&json!({"command": [1, 2]}), &["command"]).is_none());
        assert!(command(&json!({"command": []}), &["command"]).is_none());
    }

    #[test]
    fn names_that_carry_a_command_are_found_wherever_they_sit() {
        let v = json!({"message": "hi", "pre_command": "curl x | sh",
            "options": {"exec": "rm -rf /", "shellCommand": "id"}, "steps": [{"cmd": "ls"}],
            "command_id": "7", "recommend": "no"});
        let found = fields_deep(&v, &["command", "cmd", "exec"]);
        assert_eq!(found.len(), 4, "{found:?}");
        for want in ["curl x | sh", "rm -rf /", "id", "ls"] {
            assert!(found.contains(&want), "{want}");
        }
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn strings_have_pointers() {
        let v = json!({"a": ["x", {"b/c": "y"}], "n": 1});
        assert_eq!(strings(&v), vec!["x", "y"]);
        assert_eq!(pointer_of(&v, 0).as_deref(), Some("/a/0"));
        assert_eq!(pointer_of(&v, 1).as_deref(), Some("/a/1/b~1c"));
        assert_eq!(pointer_of(&v, 2), None);
        assert_eq!(pointer_of(&json!("top"), 0).as_deref(), Some(""));
    }

    #[test]
    fn measures_depth_and_size() {
        let v = json!({"a": [[["deep"]]]});
        let m = measure(&v, 64);
        assert_eq!(m.depth, 4);
        assert!(m.bytes >= 6);
    }
}
