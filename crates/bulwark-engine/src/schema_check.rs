//! Argument validation against a tool's JSON Schema, for the keywords that constrain shape:
//! `type`, `properties`, `required`, `additionalProperties`, `items`, `enum`, `const`,
//! `minLength`/`maxLength`, `minimum`/`maximum`, `minItems`/`maxItems`, `pattern`,
//! `anyOf`/`oneOf`/`allOf`. Other keywords (formats, `$ref`) are not enforced; they never
//! make a valid document invalid, and a tool server validates its own input anyway.
//!
//! The point here is drift: arguments a tool never declared (seed 002's schema check), not
//! a full validator.

use serde_json::{Map, Value};

/// Most nesting the validator follows.
const MAX_DEPTH: usize = 32;

/// The first violation, as `pointer: what was expected`.
pub fn validate(schema: &Value, doc: &Value) -> Result<(), String> {
    check(schema, doc, "", 0)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_ok(want: &str, v: &Value) -> bool {
    let have = type_name(v);
    have == want
        || (want == "number" && have == "integer")
        || (want == "integer" && v.as_f64().is_some_and(|f| f.fract() == 0.0))
}

fn check(schema: &Value, doc: &Value, at: &str, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let Some(s) = schema.as_object() else {
        return match schema {
            Value::Bool(false) => Err(format!("{}: no value is allowed here", display(at))),
            _ => Ok(()),
        };
    };
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(w) => type_ok(w, doc),
            Value::Array(ws) => ws.iter().filter_map(Value::as_str).any(|w| type_ok(w, doc)),
            _ => true,
        };
        if !ok {
            return Err(format!(
                "{}: expected {}, got {}",
                display(at),
                t.as_str().map_or_else(|| t.to_string(), str::to_string),
                type_name(doc)
            ));
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array)
        && !e.contains(doc)
    {
        return Err(format!("{}: not one of the allowed values", display(at)));
    }
    if let Some(c) = s.get("const")
        && c != doc
    {
        return Err(format!("{}: must be {c}", display(at)));
    }
    match doc {
        Value::Object(o) => object(s, o, at, depth)?,
        Value::Array(a) => {
            let n = a.len() as u64;
            if s.get("minItems")
                .and_then(Value::as_u64)
                .is_some_and(|m| n < m)
                || s.get("maxItems")
                    .and_then(Value::as_u64)
                    .is_some_and(|m| n > m)
            {
                return Err(format!("{}: {} items is out of range", display(at), n));
            }
            if let Some(items) = s.get("items") {
                for (i, x) in a.iter().enumerate() {
                    check(items, x, &format!("{at}/{i}"), depth + 1)?;
                }
            }
        }
        Value::String(st) => {
            let n = st.chars().count() as u64;
            if s.get("minLength")
                .and_then(Value::as_u64)
                .is_some_and(|m| n < m)
                || s.get("maxLength")
                    .and_then(Value::as_u64)
                    .is_some_and(|m| n > m)
            {
                return Err(format!("{}: length {n} is out of range", display(at)));
            }
            if let Some(p) = s.get("pattern").and_then(Value::as_str) {
                // A schema's pattern that does not compile cannot be enforced; skip it.
                if let Ok(re) = regex::RegexBuilder::new(p).size_limit(1 << 20).build()
                    && !re.is_match(st)
                {
                    return Err(format!("{}: does not match the pattern {p:?}", display(at)));
                }
            }
        }
        Value::Number(num) => {
            let f = num.as_f64().unwrap_or(0.0);
            if s.get("minimum")
                .and_then(Value::as_f64)
                .is_some_and(|m| f < m)
                || s.get("maximum")
                    .and_then(Value::as_f64)
                    .is_some_and(|m| f > m)
            {
                return Err(format!("{}: {f} is out of range", display(at)));
            }
        }
        _ => {}
    }
    if let Some(all) = s.get("allOf").and_then(Value::as_array) {
        for sub in all {
            check(sub, doc, at, depth + 1)?;
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = s.get(key).and_then(Value::as_array)
            && !alts.is_empty()
            && !alts
                .iter()
                .any(|sub| check(sub, doc, at, depth + 1).is_ok())
        {
            return Err(format!(
                "{}: matches none of the {key} alternatives",
                display(at)
            ));
        }
    }
    Ok(())
}

fn object(
    s: &Map<String, Value>,
    o: &Map<String, Value>,
    at: &str,
    depth: usize,
) -> Result<(), String> {
    if let Some(req) = s.get("required").and_then(Value::as_array) {
        for r in req.iter().filter_map(Value::as_str) {
            if !o.contains_key(r) {
                return Err(format!("{}: missing required argument {r:?}", display(at)));
            }
        }
    }
    let props = s.get("properties").and_then(Value::as_object);
    for (k, v) in o {
        let sub = props.and_then(|p| p.get(k));
        match (sub, s.get("additionalProperties")) {
            (Some(sub), _) => check(sub, v, &format!("{at}/{k}"), depth + 1)?,
            (None, Some(Value::Bool(false))) => {
                return Err(format!(
                    "{}: argument {k:?} is not in the tool's schema",
                    display(at)
                ));
            }
            (None, Some(extra @ Value::Object(_))) => {
                check(extra, v, &format!("{at}/{k}"), depth + 1)?
            }
            _ => {}
        }
    }
    Ok(())
}

fn display(at: &str) -> &str {
    if at.is_empty() { "arguments" } else { at }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shape() {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string", "maxLength": 10}, "n": {"type": "integer", "minimum": 0}}, "required": ["path"], "additionalProperties": false});
        assert!(validate(&schema, &json!({"path": "a"})).is_ok());
        assert!(validate(&schema, &json!({"path": "a", "n": 3})).is_ok());
        assert!(
            validate(&schema, &json!({}))
                .unwrap_err()
                .contains("missing required")
        );
        assert!(
            validate(&schema, &json!({"path": 1}))
                .unwrap_err()
                .contains("expected string")
        );
        assert!(
            validate(&schema, &json!({"path": "a", "x": 1}))
                .unwrap_err()
                .contains("not in the tool's schema")
        );
        assert!(validate(&schema, &json!({"path": "aaaaaaaaaaaa"})).is_err());
        assert!(validate(&schema, &json!({"path": "a", "n": -1})).is_err());
        assert!(
            validate(
                &json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
                &json!(null)
            )
            .is_ok()
        );
    }
}
