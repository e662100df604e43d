//! One bounded level of decoding: base64 runs, percent-encoding and HTML character
//! references are decoded so the detectors can read what they hide. Decoded text is scanned
//! once more and never decoded again.

use crate::finding::Encoding;

/// Base64 runs shorter than this are not decoded (too many words qualify).
pub const MIN_BASE64_RUN: usize = 24;

/// Decodes standard or URL-safe base64, with or without padding. `None` if it is not
/// base64.
pub fn base64(s: &[u8]) -> Option<Vec<u8>> {
    let s: &[u8] = {
        let mut end = s.len();
        while end > 0 && s[end - 1] == b'=' {
            end -= 1;
        }
        &s[..end]
    };
    if s.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &c in s {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// Whether decoded bytes read as text (so worth scanning), not binary.
pub fn is_texty(b: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(b) else {
        return false;
    };
    let printable = s
        .chars()
        .filter(|c| !c.is_control() || c.is_whitespace())
        .count();
    let total = s.chars().count();
    total >= 8 && printable * 100 >= total * 95
}

/// A run of text that decodes to something else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The encoded run's byte range in the original.
    pub span: (usize, usize),
    /// The decoded text.
    pub text: String,
    /// How it was encoded.
    pub encoding: Encoding,
}

/// The base64 alphabets (standard and URL-safe, with padding), as a lookup table.
const B64: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        t[i] = c.is_ascii_alphanumeric()
            || c == b'+'
            || c == b'/'
            || c == b'-'
            || c == b'_'
            || c == b'=';
        i += 1;
    }
    t
};

fn is_b64(c: u8) -> bool {
    B64[c as usize]
}

/// Maximal base64-alphabet runs of at least `min` bytes: `(start, end)`.
pub fn base64_runs(s: &[u8], min: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if is_b64(s[i]) {
            let start = i;
            while i < s.len() && is_b64(s[i]) {
                i += 1;
            }
            if i - start >= min {
                out.push((start, i));
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Decodes hex digits in pairs.
pub fn hex(s: &[u8]) -> Option<Vec<u8>> {
    s.chunks(2)
        .map(|p| Some(hex_val(p[0])? * 16 + hex_val(*p.get(1)?)?))
        .collect()
}

fn hex_val(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Percent-decodes `s` when it holds at least three `%XX` escapes.
pub fn percent(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if memchr::memchr_iter(b'%', b).take(3).count() < 3 {
        return None;
    }
    let escapes = b
        .windows(3)
        .filter(|w| w[0] == b'%' && hex_val(w[1]).is_some() && hex_val(w[2]).is_some())
        .count();
    if escapes < 3 {
        return None;
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex_val(b[i + 1]), hex_val(b[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Decodes HTML character references (`&#105;`, `&#x69;`, `&lt;`, …) when `s` has at least
/// three.
pub fn html_entities(s: &str) -> Option<String> {
    let count = memchr::memchr_iter(b'&', s.as_bytes()).take(3).count();
    if count < 3 || !s.contains(';') {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let mut decoded = 0;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = tail[..tail.len().min(12)].find(';');
        let rep = end.and_then(|e| {
            let name = &tail[1..e];
            let ch = if let Some(num) = name.strip_prefix("#x").or_else(|| name.strip_prefix("#X"))
            {
                u32::from_str_radix(num, 16).ok().and_then(char::from_u32)
            } else if let Some(num) = name.strip_prefix('#') {
                num.parse::<u32>().ok().and_then(char::from_u32)
            } else {
                match name {
                    "lt" => Some('<'),
                    "gt" => Some('>'),
                    "amp" => Some('&'),
                    "quot" => Some('"'),
                    "apos" => Some('\''),
                    "nbsp" => Some(' '),
                    _ => None,
                }
            };
            ch.map(|c| (c, e + 1))
        });
        match rep {
            Some((c, len)) => {
                out.push(c);
                decoded += 1;
                rest = &tail[len..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    (decoded >= 3).then_some(out)
}

/// Every decodable run in `text`, bounded: at most `budget` decoded bytes in total.
pub fn decodings(text: &str, runs: &[(usize, usize)], budget: usize) -> Vec<Decoded> {
    let mut out = Vec::new();
    let mut used = 0;
    for &(s, e) in runs {
        if used >= budget {
            break;
        }
        let run = &text.as_bytes()[s..e];
        // A run of hex digits is hex (`49676e6f7265…`), not base64 that happens to be.
        let (bytes, encoding) =
            if run.iter().all(u8::is_ascii_hexdigit) && run.len().is_multiple_of(2) {
                (hex(run), Encoding::Hex)
            } else {
                (base64(run), Encoding::Base64)
            };
        if let Some(bytes) = bytes.filter(|b| is_texty(b)) {
            used += bytes.len();
            out.push(Decoded {
                span: (s, e),
                text: String::from_utf8_lossy(&bytes).into_owned(),
                encoding,
            });
        }
    }
    if used < budget
        && let Some(t) = percent(text)
    {
        used += t.len();
        out.push(Decoded {
            span: (0, text.len()),
            text: t,
            encoding: Encoding::Percent,
        });
    }
    if used < budget
        && let Some(t) = html_entities(text)
    {
        out.push(Decoded {
            span: (0, text.len()),
            text: t,
            encoding: Encoding::HtmlEntities,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes() {
        assert_eq!(base64(b"aWdub3JlIHByZXZpb3Vz").unwrap(), b"ignore previous");
        assert_eq!(
            base64(b"aWdub3JlIHByZXZpb3VzIGluc3RydWN0aW9ucw==").unwrap(),
            b"ignore previous instructions"
        );
        assert!(base64(b"not base64!").is_none());
        assert_eq!(percent("%69%67%6e%6f%72%65 all").unwrap(), "ignore all");
        assert_eq!(
            html_entities("&#105;&#103;&#x6e;ore &lt;b&gt;").unwrap(),
            "ignore <b>"
        );
        let t = "data 49676e6f7265207468652066756e6374696f6e end";
        let h = decodings(t, &base64_runs(t.as_bytes(), MIN_BASE64_RUN), 1 << 20);
        assert_eq!(
            (h[0].text.as_str(), h[0].encoding),
            ("Ignore the function", Encoding::Hex)
        );
        let t = "x aWdub3JlIHByZXZpb3VzIGluc3RydWN0aW9ucw== y";
        let d = decodings(t, &base64_runs(t.as_bytes(), MIN_BASE64_RUN), 1 << 20);
        assert_eq!(d[0].text, "ignore previous instructions");
        assert_eq!(d[0].span, (2, 42));
    }
}
