//! Lenient IPv4 literals, as `inet_aton` and the WHATWG host parser read them.
//!
//! `std`'s parser accepts only `a.b.c.d` in decimal. The C library and browsers also accept
//! one to four parts, each decimal, octal (`0177`) or hex (`0x7f`), where the last part fills
//! the remaining bytes (`127.1`, `2130706433`, `0x7f.1`). A gateway that checks with the
//! strict parser and connects with the lenient one is an SSRF bypass, so every host string
//! that is not a valid domain to the strict reader is tried here too.

use std::net::Ipv4Addr;

/// Parses `s` the way `inet_aton(3)` does (plus one trailing dot, as WHATWG allows).
///
/// Returns `None` when the text is not an IPv4 literal in any of those spellings.
pub fn parse_lenient(s: &str) -> Option<Ipv4Addr> {
    let s = s.strip_suffix('.').unwrap_or(s);
    if s.is_empty() {
        return None;
    }
    let mut parts: [u64; 4] = [0; 4];
    let mut count = 0;
    for part in s.split('.') {
        if count == 4 {
            return None;
        }
        parts[count] = parse_part(part)?;
        count += 1;
    }
    let (last, rest) = (parts[count - 1], &parts[..count - 1]);
    if rest.iter().any(|&p| p > 255) {
        return None;
    }
    let last_bits = 8 * (4 - rest.len() as u32);
    if last_bits < 64 && last >= (1u64 << last_bits) {
        return None;
    }
    let mut value: u32 = 0;
    for (i, &p) in rest.iter().enumerate() {
        value |= (p as u32) << (24 - 8 * i as u32);
    }
    value |= last as u32;
    Some(Ipv4Addr::from(value))
}

fn parse_part(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let (digits, radix) =
        if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            // WHATWG reads a bare "0x" as zero.
            if hex.is_empty() {
                return Some(0);
            }
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    // Long runs of leading zeros are legal; cap the significant length to stay in u64.
    let significant = digits.trim_start_matches('0');
    if significant.len() > 16 {
        return None;
    }
    if significant.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(significant, radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_spelling_of_loopback() {
        for s in [
            "127.0.0.1",
            "127.1",
            "127.0.1",
            "2130706433",
            "0x7f000001",
            "0x7f.1",
            "0177.0.0.1",
            "0177.1",
            "00000177.0.0.01",
            "0x7f.0x0.0x0.0x1",
            "127.0.0.1.",
            "0X7F.1",
        ] {
            assert_eq!(parse_lenient(s), Some(Ipv4Addr::new(127, 0, 0, 1)), "{s}");
        }
    }

    #[test]
    fn reads_metadata_in_octal_and_mixed_forms() {
        for s in [
            "0251.0376.0251.0376",
            "0xa9.0xfe.0xa9.0xfe",
            "2852039166",
            "0xa9fea9fe",
            "0xa9.0376.43518",
            "0xa9.16689662",
        ] {
            assert_eq!(
                parse_lenient(s),
                Some(Ipv4Addr::new(169, 254, 169, 254)),
                "{s}"
            );
        }
    }

    #[test]
    fn refuses_what_is_not_an_address() {
        for s in [
            "",
            ".",
            "256.0.0.1",
            "4294967296",
            "1.2.3.4.5",
            "08.0.0.1",
            "a.b.c.d",
            "1..1",
            "example.com",
            "1.2.3.0x100",
        ] {
            assert_eq!(parse_lenient(s), None, "{s}");
        }
    }
}
