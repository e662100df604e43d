//! A whole document scanned as the gateways scan what passes them: a JSON object or array
//! string by string, each string found again by its JSON Pointer; anything else as one
//! text. Findings are placed by pointer, line and column, and masked with numbered
//! placeholders that give the same value the same number within one document.
//!
//! ```
//! use bulwark_scan::{Scanner, Scope};
//! use bulwark_scan::document::{Document, Placeholders};
//! let doc = Document::parse(r#"{"a": ["key=AKIAZ7KDPQXL4MWN3BVC", "AKIAZ7KDPQXL4MWN3BVC"]}"#);
//! let found = doc.scan(&Scanner::new().unwrap(), Scope::Response).unwrap();
//! assert_eq!(doc.strings()[found[0].0].0, "/a/0");
//! let masked = doc.masked(&found, &mut Placeholders::default());
//! // One value, one number: both strings carry the same placeholder.
//! assert!(!masked.contains("AKIAZ7KDPQXL4MWN3BVC"));
//! assert_eq!(masked.matches(":1]").count(), 2);
//! ```

use std::collections::HashMap;

use serde_json::Value;

use crate::{Finding, ScanError, Scanner, Scope};

/// A document to scan: its strings, with the JSON they came from when it was JSON.
pub struct Document {
    /// The JSON object or array, when the text is one.
    json: Option<Value>,
    /// Each string with its JSON Pointer (the empty pointer for a text that is not JSON).
    strings: Vec<(String, String)>,
}

impl Document {
    /// Reads `text`: JSON string by string when it is an object or an array, else the
    /// whole text as one string.
    pub fn parse(text: &str) -> Document {
        let json: Option<Value> = serde_json::from_str(text)
            .ok()
            .filter(|v: &Value| v.is_object() || v.is_array());
        let mut strings = Vec::new();
        match &json {
            Some(v) => collect(v, &mut String::new(), &mut strings),
            None => strings.push((String::new(), text.to_string())),
        }
        Document { json, strings }
    }

    /// Whether the document is JSON (its findings are placed by pointer).
    pub fn is_json(&self) -> bool {
        self.json.is_some()
    }

    /// Each string with its JSON Pointer, in document order.
    pub fn strings(&self) -> &[(String, String)] {
        &self.strings
    }

    /// Every finding, with the index of the string it is in.
    pub fn scan(
        &self,
        scanner: &Scanner,
        scope: Scope,
    ) -> Result<Vec<(usize, Finding)>, ScanError> {
        let mut all = Vec::new();
        for (i, (_, s)) in self.strings.iter().enumerate() {
            all.extend(scanner.scan(s, scope)?.into_iter().map(|f| (i, f)));
        }
        Ok(all)
    }

    /// The document with every finding masked: JSON pretty-printed with each string
    /// masked in place, or the masked text.
    pub fn masked(&self, found: &[(usize, Finding)], numbers: &mut Placeholders) -> String {
        let masked: Vec<String> = self
            .strings
            .iter()
            .enumerate()
            .map(|(i, (_, s))| {
                let fs: Vec<Finding> = found
                    .iter()
                    .filter(|(j, _)| *j == i)
                    .map(|(_, f)| f.clone())
                    .collect();
                crate::mask(s, &fs, |f| numbers.placeholder(f, &s[f.span.0..f.span.1]))
            })
            .collect();
        match &self.json {
            Some(v) => {
                let mut v = v.clone();
                for ((pointer, _), m) in self.strings.iter().zip(masked) {
                    if let Some(slot) = v.pointer_mut(pointer) {
                        *slot = Value::String(m);
                    }
                }
                // A Value always serialises.
                serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
            }
            None => masked.concat(),
        }
    }
}

/// Numbered placeholders: the same value gets the same number within one run, so a reader
/// of masked output can still tell that two masked values were one.
#[derive(Default)]
pub struct Placeholders {
    seen: HashMap<(String, String), u32>,
    next: HashMap<String, u32>,
}

impl Placeholders {
    /// `[REDACTED:CATEGORY:label:n]` for finding `f`, whose text is `value`.
    pub fn placeholder(&mut self, f: &Finding, value: &str) -> String {
        let label = f.label.to_string();
        let n = match self.seen.get(&(label.clone(), value.to_string())) {
            Some(n) => *n,
            None => {
                let c = self.next.entry(label.clone()).or_insert(0);
                *c += 1;
                self.seen.insert((label.clone(), value.to_string()), *c);
                *c
            }
        };
        format!(
            "[REDACTED:{}:{label}:{n}]",
            f.category.as_str().to_uppercase()
        )
    }
}

/// The line and column (both from 1, columns in characters) of byte `at` of `s`.
pub fn line_col(s: &str, at: usize) -> (usize, usize) {
    let before = s.get(..at.min(s.len())).unwrap_or(s);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

fn collect(v: &Value, path: &mut String, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) => out.push((path.clone(), s.clone())),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                collect(x, path, out);
                path.truncate(len);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                let len = path.len();
                path.push('/');
                // JSON Pointer escapes (RFC 6901): `~` first, so `/` is not escaped twice.
                path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                collect(x, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_escape_and_find_their_strings_again() {
        let doc = Document::parse(r#"{"a/b": {"c~d": ["x", 1, "y"]}}"#);
        let pointers: Vec<&str> = doc.strings().iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(pointers, ["/a~1b/c~0d/0", "/a~1b/c~0d/2"]);
        assert!(doc.is_json());
        let text = Document::parse("\"just a string\"");
        assert!(!text.is_json(), "a JSON scalar is scanned as text");
        assert_eq!(text.strings()[0].0, "");
    }

    #[test]
    fn lines_and_columns_count_characters_from_one() {
        assert_eq!(line_col("ab\ncdé\nf", 7), (2, 4));
        assert_eq!(line_col("ab\ncdé\nf", 8), (3, 1));
        assert_eq!(line_col("abc", 0), (1, 1));
        assert_eq!(line_col("abc", 99), (1, 4));
    }
}
