//! Small checks secret and PII detectors share: entropy, placeholders, checksums.

/// Shannon entropy in bits per byte.
pub fn shannon(bytes: &[u8]) -> f64 {
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[b as usize] += 1;
    }
    let n = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Values that are documentation, templates or obvious stand-ins, not credentials.
pub fn is_placeholder(value: &[u8]) -> bool {
    let v = String::from_utf8_lossy(value).to_ascii_lowercase();
    const MARKERS: &[&str] = &[
        "example",
        "sample",
        "dummy",
        "placeholder",
        "your_",
        "your-",
        "yourkey",
        "your key",
        "changeme",
        "change_me",
        "changeit",
        "redacted",
        "xxxxxx",
        "******",
        "fake",
        "notreal",
        "not_real",
        "insert_",
        "replace_",
        "replaceme",
        "todo",
        "secret_here",
        "token_here",
        "key_here",
        "password_here",
        "process.env",
        "os.environ",
        "getenv",
        "...",
        "…",
        "####",
    ];
    if MARKERS.iter().any(|m| v.contains(m)) {
        return true;
    }
    // Whole-value templates and variables: ${X}, {{ x }}, <x>, $X, %X%, @X@, %s.
    let t = v.trim_matches(|c| c == '"' || c == '\'' || c == '`');
    let template = (t.starts_with("${") && t.ends_with('}'))
        || (t.starts_with("{{") && t.ends_with("}}"))
        || (t.starts_with('<') && t.ends_with('>'))
        || (t.starts_with('%') && t.ends_with('%') && t.len() > 2)
        || (t.starts_with('@') && t.ends_with('@') && t.len() > 2)
        || (t.starts_with('$')
            && t[1..]
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_'))
        || matches!(
            t,
            "%s" | "%d"
                | "%v"
                | "{}"
                | "{0}"
                | "true"
                | "false"
                | "null"
                | "none"
                | "undefined"
                | "nil"
        );
    if template {
        return true;
    }
    let b = v.as_bytes();
    // One repeated character, or a run like 0123456789 / abcdef.
    if b.iter().all(|&c| c == b[0]) {
        return true;
    }
    let ascending = b
        .windows(2)
        .filter(|w| w[1] == w[0].wrapping_add(1))
        .count();
    b.len() >= 8 && ascending * 10 >= b.len() * 8
}

/// Luhn checksum over the digits of `s` (other bytes ignored).
pub fn luhn(s: &[u8]) -> bool {
    let digits: Vec<u32> = s
        .iter()
        .filter(|b| b.is_ascii_digit())
        .map(|b| u32::from(b - b'0'))
        .collect();
    if digits.len() < 2 {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// CRC-32 (IEEE), for GitHub's token checksums.
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (!(crc & 1)).wrapping_add(1);
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// `n` in base 62 (0-9A-Za-z), left-padded with '0' to `width`.
pub fn base62(mut n: u32, width: usize) -> String {
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 62) as usize]);
        n /= 62;
    }
    while out.len() < width {
        out.push(b'0');
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks() {
        assert!(luhn(b"4111 1111 1111 1111"));
        assert!(!luhn(b"4111 1111 1111 1112"));
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(base62(61, 3), "00z");
        assert!(is_placeholder(b"AKIAIOSFODNN7EXAMPLE"));
        assert!(is_placeholder(b"xxxxxxxxxxxxxxxx"));
        assert!(is_placeholder(b"${API_KEY}"));
        assert!(is_placeholder(b"{{ secrets.token }}"));
        assert!(is_placeholder(b"$NPM_TOKEN"));
        assert!(is_placeholder(b"<your-api-key>"));
        assert!(!is_placeholder(b"m{{h}o)p${e]nob(ody[finds>-_$#thisone}}"));
        assert!(is_placeholder(b"abcdefghijklmnop"));
        assert!(!is_placeholder(b"9f3kQ2mZx81LpA0w"));
        assert!(shannon(b"aaaa") < 0.1);
        assert!(shannon(b"9f3kQ2mZx81LpA0w") > 3.5);
    }
}
