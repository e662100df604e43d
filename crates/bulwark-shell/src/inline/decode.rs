//! Decoders for the literals inline code hides code in: base64, hex and rot13. A literal
//! that decodes to UTF-8 text becomes known text, analysed like any other; anything else
//! stays unknown with [`Origin::Decoded`], which the policy treats as decoded code run.

use super::{Origin, Value};

/// How a literal is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    Base64,
    Hex,
    Rot13,
}

impl Encoding {
    /// The encoding a codec name (`'base64'`, `'hex'`, `'rot_13'`) stands for.
    pub(crate) fn named(name: &str) -> Option<Encoding> {
        match name.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
            "base64" | "b64" | "base64codec" => Some(Encoding::Base64),
            "hex" | "hexcodec" | "b16" => Some(Encoding::Hex),
            "rot13" => Some(Encoding::Rot13),
            _ => None,
        }
    }
}

/// Decodes a value; what cannot be decoded is unknown, decoded.
pub(crate) fn decode(v: &Value, how: Encoding) -> Value {
    let Some(text) = v.known() else {
        return Value::Unknown(Origin::Decoded);
    };
    let bytes = match how {
        Encoding::Base64 => crate::classify::base64(&text),
        Encoding::Hex => hex(&text),
        Encoding::Rot13 => Some(rot13(&text).into_bytes()),
    };
    match bytes.map(String::from_utf8) {
        Some(Ok(s)) => Value::str(s),
        _ => Value::Unknown(Origin::Decoded),
    }
}

/// Hex digits, whitespace and `\x`/`0x` prefixes ignored.
pub(crate) fn hex(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text
        .replace("\\x", "")
        .replace("0x", "")
        .bytes()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|p| {
            let s = std::str::from_utf8(p).ok()?;
            u8::from_str_radix(s, 16).ok()
        })
        .collect()
}

fn rot13(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'a'..='z' => (((c as u8 - b'a') + 13) % 26 + b'a') as char,
            'A'..='Z' => (((c as u8 - b'A') + 13) % 26 + b'A') as char,
            _ => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_literals() {
        assert_eq!(
            decode(&Value::str("cm0gLXJmIC8="), Encoding::Base64).known(),
            Some("rm -rf /".into())
        );
        assert_eq!(
            decode(&Value::str("726d202d7266202f"), Encoding::Hex).known(),
            Some("rm -rf /".into())
        );
        assert_eq!(
            decode(&Value::str("ez -es /"), Encoding::Rot13).known(),
            Some("rm -rf /".into())
        );
        assert_eq!(
            decode(&Value::str("//79"), Encoding::Base64),
            Value::Unknown(Origin::Decoded)
        );
        assert_eq!(
            decode(&Value::unknown(), Encoding::Hex),
            Value::Unknown(Origin::Decoded)
        );
        assert_eq!(Encoding::named("rot_13"), Some(Encoding::Rot13));
    }
}
