//! Quote removal and escapes: bare words, double-quoted text and ANSI-C `$'…'` strings.

/// A bare (unquoted) word: a backslash escapes the next character; a backslash-newline
/// disappears.
pub fn unescape_bare(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(n) => out.push(n),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Double-quoted content: backslash escapes only `$`, `` ` ``, `"`, `\` and newline.
pub fn unescape_double(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `$'…'` content: C escapes, hex, octal and Unicode. `$'\x72\x6d'` is `rm`.
pub fn ansi_c(s: &str) -> String {
    let b: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let digits = |b: &[char], i: usize, radix: u32, max: usize| -> (u32, usize) {
        let mut v = 0u32;
        let mut n = 0;
        while n < max {
            match b.get(i + n).and_then(|c| c.to_digit(radix)) {
                Some(d) => {
                    v = v.saturating_mul(radix).saturating_add(d);
                    n += 1;
                }
                None => break,
            }
        }
        (v, n)
    };
    while i < b.len() {
        if b[i] != '\\' || i + 1 >= b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let e = b[i + 1];
        i += 2;
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'e' | 'E' => out.push('\u{1b}'),
            'f' => out.push('\u{c}'),
            'v' => out.push('\u{b}'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'x' => {
                let (v, n) = digits(&b, i, 16, 2);
                i += n;
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
            }
            'u' | 'U' => {
                let (v, n) = digits(&b, i, 16, if e == 'u' { 4 } else { 8 });
                i += n;
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
            }
            '0'..='7' => {
                let (v, n) = digits(&b, i - 1, 8, 3);
                i += n - 1;
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
            }
            'c' => {
                if let Some(&c) = b.get(i) {
                    out.push(char::from_u32((c as u32) & 0x1f).unwrap_or('\u{fffd}'));
                    i += 1;
                }
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(unescape_bare(r"\r\m"), "rm");
        assert_eq!(unescape_bare("a\\\nb"), "ab");
        assert_eq!(unescape_double(r#"a\"b\$c\n"#), "a\"b$c\\n");
        assert_eq!(ansi_c(r"\x72\x6d"), "rm");
        assert_eq!(ansi_c(r"\162\155"), "rm");
        assert_eq!(ansi_c(r"\u0072m"), "rm");
        assert_eq!(ansi_c(r"a\nb\tc"), "a\nb\tc");
    }
}
