//! A server's `elicitation/create` that asks the user for a secret.
//!
//! A form elicitation puts the server's question in front of the user and sends whatever
//! they type back to the server in clear. The protocol asks servers to send users to a URL
//! for anything sensitive (URL mode, 2025-11-25); a server that asks in a form for a
//! password, a key, a token or a one-time code is phishing, whatever its reason. The class
//! is recognised by what the form asks for — the question and each field's name, title and
//! description — not by any one phrasing.

use serde_json::Value;

/// Words that name a secret on their own.
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "pin",
    "token",
    "secret",
    "credential",
    "credentials",
    "apikey",
    "otp",
    "totp",
    "2fa",
    "mfa",
    "cvv",
    "cvc",
    "mnemonic",
];

/// Two words that name a secret together (the second may be plural).
const SECRET_PAIRS: &[(&str, &str)] = &[
    ("api", "key"),
    ("access", "key"),
    ("private", "key"),
    ("secret", "key"),
    ("ssh", "key"),
    ("signing", "key"),
    ("seed", "phrase"),
    ("recovery", "phrase"),
    ("recovery", "code"),
    ("backup", "code"),
    ("verification", "code"),
    ("security", "code"),
    ("auth", "code"),
    ("authentication", "code"),
    ("login", "code"),
    ("time", "code"),
    ("card", "number"),
];

/// The words of `text`: look-alikes, width and case folded ([`bulwark_scan::normalize`]),
/// split at anything not a letter or digit and at camelCase humps.
fn words(text: &str) -> Vec<String> {
    let mut split = String::with_capacity(text.len() + 8);
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_uppercase() && prev_lower {
            split.push(' ');
        }
        prev_lower = c.is_lowercase();
        split.push(c);
    }
    bulwark_scan::normalize(&split)
        .text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The secret a text asks for, if it names one.
fn names_secret(text: &str) -> Option<String> {
    let w = words(text);
    for (i, word) in w.iter().enumerate() {
        if SECRET_WORDS.contains(&word.as_str()) {
            return Some(word.clone());
        }
        if let Some(next) = w.get(i + 1) {
            let next = next.strip_suffix('s').unwrap_or(next);
            if SECRET_PAIRS.iter().any(|(a, b)| a == word && b == &next) {
                return Some(format!("{word} {next}"));
            }
        }
    }
    None
}

/// What secret a form elicitation's `params` ask the user to type, if any (`a password`,
/// `an api key`). A URL elicitation asks for nothing in the client and is not one.
pub fn asks_for_secret(params: &Value) -> Option<String> {
    if params.get("mode").and_then(Value::as_str) == Some("url") {
        return None;
    }
    let mut texts: Vec<&str> = Vec::new();
    if let Some(m) = params.get("message").and_then(Value::as_str) {
        texts.push(m);
    }
    let properties = params
        .pointer("/requestedSchema/properties")
        .and_then(Value::as_object);
    for (name, field) in properties.into_iter().flatten() {
        texts.push(name);
        for k in ["title", "description"] {
            if let Some(t) = field.get(k).and_then(Value::as_str) {
                texts.push(t);
            }
        }
        // A field the schema itself marks as a password.
        if field.get("format").and_then(Value::as_str) == Some("password") {
            return Some("a password".into());
        }
    }
    texts.iter().find_map(|t| names_secret(t)).map(|s| {
        let article = if s.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        format!("{article} {s}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(message: &str, props: Value) -> Value {
        json!({"message": message, "requestedSchema": {"type": "object", "properties": props}})
    }

    #[test]
    fn forms_asking_for_secrets_are_recognised_by_what_they_ask() {
        let asking = [
            form(
                "Please confirm your GitHub password.",
                json!({"value": {"type": "string"}}),
            ),
            form("Sign in", json!({"apiKey": {"type": "string"}})),
            form(
                "Sign in",
                json!({"user": {"type": "string"}, "x": {"type": "string", "title": "One-time code"}}),
            ),
            form(
                "Continue",
                json!({"field": {"type": "string", "description": "Your SSH private key"}}),
            ),
            form("Enter the verification codes we sent", json!({})),
            form("Enter your раsswоrd", json!({})),
            form(
                "Account",
                json!({"p": {"type": "string", "format": "password"}}),
            ),
            form("Enter your 2FA code", json!({})),
            form("Restore", json!({"seed_phrase": {"type": "string"}})),
        ];
        for p in &asking {
            assert!(asks_for_secret(p).is_some(), "{p}");
        }
        let benign = [
            form(
                "Which city should the forecast be for?",
                json!({"city": {"type": "string"}}),
            ),
            form(
                "Pick a colour",
                json!({"colour": {"type": "string", "enum": ["red", "blue"]}}),
            ),
            form(
                "How many tokenizer threads?",
                json!({"threads": {"type": "integer"}}),
            ),
            form("Name the spinning top", json!({"name": {"type": "string"}})),
        ];
        for p in &benign {
            assert_eq!(asks_for_secret(p), None, "{p}");
        }
        // A URL elicitation sends the user to the service itself: the recommended way.
        let url = json!({"mode": "url", "message": "Sign in with your password", "url": "https://example.com/login"});
        assert_eq!(asks_for_secret(&url), None);
    }
}
