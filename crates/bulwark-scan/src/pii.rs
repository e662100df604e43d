//! Personal data, validated where a checksum or range exists: card numbers (Luhn and issuer
//! prefixes), IBANs (mod-97 and country lengths), US SSNs (valid area, group and serial),
//! phone numbers (E.164 and North American formats) and e-mail addresses.
//!
//! Numbers are found by one pass over the text that collects runs of digits with the
//! separators people write (`4111 1111 1111 1111`, `078-05-1120`, `+44 20 7946 0958`);
//! each run is then tested against each shape. No regex reads the whole input.

use crate::entropy::luhn;
use crate::finding::{Category, Scope, Severity};
use crate::rules::{BASE, RuleDef};

/// A run of digits and separators.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    start: usize,
    end: usize,
    digits: String,
    /// Separator bytes, in order.
    seps: Vec<u8>,
    /// Lengths of the digit groups.
    groups: Vec<usize>,
    plus: bool,
    paren: bool,
}

fn word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn runs(s: &[u8]) -> Vec<Run> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        // Most bytes are not where a number starts; decide that with one comparison.
        let c = s[i];
        if !(c.is_ascii_digit() || c == b'+' || c == b'(') {
            i += 1;
            continue;
        }
        let starts_plus = s[i] == b'+' && s.get(i + 1).is_some_and(u8::is_ascii_digit);
        let starts_paren = s[i] == b'(' && s.get(i + 1).is_some_and(u8::is_ascii_digit);
        let boundary = i == 0
            || !(word_byte(s[i - 1])
                || s[i - 1] == b'.' && s.get(i.wrapping_sub(2)).is_some_and(u8::is_ascii_digit)
                || s[i - 1] == b'-'
                || s[i - 1] == b'/');
        if !(boundary && (s[i].is_ascii_digit() || starts_plus || starts_paren)) {
            i += 1;
            continue;
        }
        let start = i;
        let mut run = Run {
            start,
            end: start,
            digits: String::new(),
            seps: Vec::new(),
            groups: Vec::new(),
            plus: starts_plus,
            paren: starts_paren,
        };
        if starts_plus || starts_paren {
            i += 1;
        }
        let mut group = 0;
        while i < s.len() {
            let c = s[i];
            if c.is_ascii_digit() {
                run.digits.push(c as char);
                group += 1;
                i += 1;
            } else if matches!(c, b' ' | b'-' | b'.' | b')' | b'(')
                && group > 0
                && s.get(i + 1).is_some_and(|n| {
                    n.is_ascii_digit()
                        || (c == b')' && *n == b' ' && s.get(i + 2).is_some_and(u8::is_ascii_digit))
                })
            {
                run.groups.push(group);
                group = 0;
                run.seps.push(c);
                i += 1;
                if c == b')' && s.get(i) == Some(&b' ') {
                    i += 1;
                }
            } else {
                break;
            }
            if run.digits.len() > 24 {
                break;
            }
        }
        if group > 0 {
            run.groups.push(group);
        }
        // A phone extension: `x123`.
        if (s.get(i) == Some(&b'x') || s.get(i) == Some(&b'X'))
            && s.get(i + 1).is_some_and(u8::is_ascii_digit)
        {
            let mut j = i + 1;
            while j < s.len() && s[j].is_ascii_digit() && j - i <= 6 {
                j += 1;
            }
            i = j;
        }
        run.end = i;
        // A run glued to letters or more digits is an identifier, not a number.
        let glued = s.get(i).is_some_and(|&b| word_byte(b));
        if !glued && run.digits.len() >= 7 {
            out.push(run);
        }
        // Skip the rest of a long digit run.
        while i < s.len() && (s[i].is_ascii_digit() || word_byte(s[i])) {
            i += 1;
        }
        if i == start {
            i += 1;
        }
    }
    out
}

/// Issuer ranges: UATP (1), Mastercard 2-series and 51–55, Amex, Diners, JCB (3), Visa (4),
/// Maestro and Dankort (50, 56–69), Discover, UnionPay (6).
fn card_prefix_ok(d: &str) -> bool {
    let p = |n: usize| d.get(..n).and_then(|x| x.parse::<u32>().ok()).unwrap_or(0);
    let len = d.len();
    match d.as_bytes().first() {
        Some(b'1') => len == 15,
        Some(b'2') => (2221..=2720).contains(&p(4)) && len == 16,
        Some(b'3') => {
            (matches!(p(2), 34 | 37) && len == 15)
                || ((300..=305).contains(&p(3)) || matches!(p(2), 36 | 38 | 39))
                    && (14..=19).contains(&len)
                || (3528..=3589).contains(&p(4)) && (16..=19).contains(&len)
        }
        Some(b'4') => matches!(len, 13 | 16 | 19),
        Some(b'5') => {
            ((51..=55).contains(&p(2)) && len == 16)
                || ((p(2) == 50 || (56..=59).contains(&p(2))) && (12..=19).contains(&len))
        }
        Some(b'6') => (12..=19).contains(&len),
        _ => false,
    }
}

fn is_card(r: &Run) -> bool {
    let n = r.digits.len();
    if !(13..=19).contains(&n) || r.plus || r.paren {
        return false;
    }
    // Separators, if any, are all the same space or hyphen, in groups of 4 (or Amex 4-6-5).
    let uniform = r.seps.is_empty()
        || (r.seps.iter().all(|&c| c == r.seps[0]) && matches!(r.seps[0], b' ' | b'-'));
    let grouping = r.seps.is_empty()
        || r.groups.iter().take(r.groups.len() - 1).all(|&g| g == 4)
        || r.groups == [4, 6, 5]
        || r.groups == [4, 6, 4];
    uniform
        && grouping
        && card_prefix_ok(&r.digits)
        && luhn(r.digits.as_bytes())
        && !r.digits.bytes().all(|b| b == r.digits.as_bytes()[0])
}

fn is_ssn(r: &Run) -> bool {
    if r.digits.len() != 9
        || r.plus
        || r.paren
        || r.groups != [3, 2, 4]
        || !(r.seps.iter().all(|&c| c == r.seps[0]) && matches!(r.seps[0], b'-' | b' ' | b'.'))
    {
        return false;
    }
    let area: u32 = r.digits[0..3].parse().unwrap_or(0);
    let group: u32 = r.digits[3..5].parse().unwrap_or(0);
    let serial: u32 = r.digits[5..9].parse().unwrap_or(0);
    // Never issued: area 000, 666, 900–999; group 00; serial 0000; and a few famous
    // numbers printed in advertising and documentation.
    area != 0
        && area != 666
        && area < 900
        && group != 0
        && serial != 0
        && !matches!(r.digits.as_str(), "078051120" | "219099999" | "123456789")
}

fn is_phone(r: &Run) -> bool {
    let n = r.digits.len();
    if r.plus {
        // E.164: up to 15 digits, country code first.
        return (8..=15).contains(&n);
    }
    let g = &r.groups;
    let same_sep = r.seps.iter().all(|&c| c == r.seps[0]);
    // North American: (AAA) EEE-NNNN, AAA-EEE-NNNN, AAA.EEE.NNNN, 1-AAA-EEE-NNNN.
    let nanp = (g.as_slice() == [3, 3, 4] || g.as_slice() == [1, 3, 3, 4])
        && !r.seps.is_empty()
        && (r.paren || same_sep);
    if nanp {
        let area = if g.len() == 4 {
            &r.digits[1..4]
        } else {
            &r.digits[0..3]
        };
        return !area.starts_with('0') && !area.starts_with('1');
    }
    // National formats with a trunk 0 (090-1234-5678, 0 532 123 45 67), written with
    // spaces or hyphens; dots are left to versions and addresses.
    let national = r.digits.starts_with('0')
        && (9..=11).contains(&n)
        && g.len() >= 2
        && same_sep
        && matches!(r.seps.first(), Some(b'-' | b' '));
    // 00 + country code + NANP, and the French 0X XX XX XX XX in spaces or dots.
    let intl = r.digits.starts_with("00")
        && (g.as_slice() == [3, 3, 3, 4] || g.as_slice() == [2, 3, 3, 4])
        && same_sep;
    let french = r.digits.starts_with('0')
        && g.as_slice() == [2, 2, 2, 2, 2]
        && same_sep
        && matches!(r.seps.first(), Some(b' ' | b'.'));
    national || intl || french
}

/// Finds card numbers, SSNs and phone numbers in `s`: `(rule id, label, severity, span)`.
pub fn numbers(s: &[u8]) -> Vec<(&'static str, &'static str, Severity, (usize, usize))> {
    let mut out = Vec::new();
    for r in runs(s) {
        let span = (r.start, r.end);
        if is_card(&r) {
            out.push(("pii.card_number", "card_number", Severity::High, span));
        } else if is_ssn(&r) {
            out.push(("pii.us_ssn", "us_ssn", Severity::High, span));
        } else if is_phone(&r) {
            out.push(("pii.phone", "phone", Severity::Low, span));
        }
    }
    out
}

/// IBAN lengths by country (ISO 13616 registry).
const IBAN_LENGTHS: &[(&str, usize)] = &[
    ("AD", 24),
    ("AE", 23),
    ("AL", 28),
    ("AT", 20),
    ("AZ", 28),
    ("BA", 20),
    ("BE", 16),
    ("BG", 22),
    ("BH", 22),
    ("BR", 29),
    ("BY", 28),
    ("CH", 21),
    ("CR", 22),
    ("CY", 28),
    ("CZ", 24),
    ("DE", 22),
    ("DK", 18),
    ("DO", 28),
    ("EE", 20),
    ("EG", 29),
    ("ES", 24),
    ("FI", 18),
    ("FO", 18),
    ("FR", 27),
    ("GB", 22),
    ("GE", 22),
    ("GI", 23),
    ("GL", 18),
    ("GR", 27),
    ("GT", 28),
    ("HR", 21),
    ("HU", 28),
    ("IE", 22),
    ("IL", 23),
    ("IQ", 23),
    ("IS", 26),
    ("IT", 27),
    ("JO", 30),
    ("KW", 30),
    ("KZ", 20),
    ("LB", 28),
    ("LC", 32),
    ("LI", 21),
    ("LT", 20),
    ("LU", 20),
    ("LV", 21),
    ("MC", 27),
    ("MD", 24),
    ("ME", 22),
    ("MK", 19),
    ("MR", 27),
    ("MT", 31),
    ("MU", 30),
    ("NL", 18),
    ("NO", 15),
    ("PK", 24),
    ("PL", 28),
    ("PS", 29),
    ("PT", 25),
    ("QA", 29),
    ("RO", 24),
    ("RS", 22),
    ("SA", 24),
    ("SC", 31),
    ("SE", 24),
    ("SI", 19),
    ("SK", 24),
    ("SM", 27),
    ("ST", 25),
    ("SV", 28),
    ("TL", 23),
    ("TN", 24),
    ("TR", 26),
    ("UA", 29),
    ("VA", 22),
    ("VG", 24),
    ("XK", 20),
];

fn iban_ok(compact: &str) -> bool {
    let Some(&(_, len)) = IBAN_LENGTHS.iter().find(|(c, _)| compact.starts_with(c)) else {
        return false;
    };
    if compact.len() != len {
        return false;
    }
    let rearranged = compact[4..].chars().chain(compact[..4].chars());
    let mut rem: u32 = 0;
    for c in rearranged {
        let v = match c.to_digit(36) {
            Some(v) => v,
            None => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

#[cfg(test)]
fn iban(v: &[u8]) -> bool {
    let compact: String = v
        .iter()
        .filter(|b| !b.is_ascii_whitespace())
        .map(|&b| (b as char).to_ascii_uppercase())
        .collect();
    iban_ok(&compact)
}

fn email(v: &[u8]) -> bool {
    // `git@github.com`-style SSH users and package scopes are not people.
    let local = v.split(|&b| b == b'@').next().unwrap_or_default();
    !matches!(local, b"git" | b"hg" | b"ubuntu" | b"ec2-user")
        && !v.ends_with(b".png")
        && !v.ends_with(b".jpg")
}

/// IBANs in `s`: two letters and two digits at a word boundary, then the country's length
/// in letters and digits (optionally in groups of four), passing mod-97.
pub fn ibans(s: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 4 <= s.len() {
        if !s[i].is_ascii_uppercase() {
            i += 1;
            continue;
        }
        let head = &s[i..i + 4];
        let candidate = head[0].is_ascii_uppercase()
            && head[1].is_ascii_uppercase()
            && head[2].is_ascii_digit()
            && head[3].is_ascii_digit()
            && (i == 0 || !s[i - 1].is_ascii_alphanumeric());
        if !candidate {
            i += 1;
            continue;
        }
        let country = std::str::from_utf8(&head[..2]).unwrap_or("");
        let Some(&(_, len)) = IBAN_LENGTHS.iter().find(|(c, _)| *c == country) else {
            i += 1;
            continue;
        };
        let mut compact = String::with_capacity(len);
        let mut j = i;
        while j < s.len() && compact.len() < len {
            let c = s[j];
            if c.is_ascii_uppercase() || c.is_ascii_digit() {
                compact.push(c as char);
                j += 1;
            } else if c == b' '
                && compact.len().is_multiple_of(4)
                && s.get(j + 1).is_some_and(u8::is_ascii_alphanumeric)
            {
                j += 1;
            } else {
                break;
            }
        }
        let boundary = s.get(j).is_none_or(|b| !b.is_ascii_alphanumeric());
        if compact.len() == len && boundary && iban_ok(&compact) {
            out.push((i, j));
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// Keyword-prefiltered PII rules (e-mail).
pub const RULES: &[RuleDef] = &[RuleDef {
    id: "pii.email",
    category: Category::Pii,
    severity: Severity::Low,
    label: "email",
    keywords: &["@"],
    regex: r"(?:^|[^A-Za-z0-9._%+\-])([A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62}\.)+[A-Za-z]{2,24})(?:[^A-Za-z0-9\-]|$)",
    group: 1,
    before: 70,
    after: 260,
    scopes: &[Scope::Request, Scope::Response],
    check: Some(email),
    ..BASE
}];

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<&'static str> {
        numbers(s.as_bytes())
            .into_iter()
            .map(|(id, ..)| id)
            .collect()
    }

    #[test]
    fn cards() {
        assert_eq!(
            kinds("card 4111 1111 1111 1111 ok"),
            vec!["pii.card_number"]
        );
        assert_eq!(kinds("4111-1111-1111-1111"), vec!["pii.card_number"]);
        assert_eq!(kinds("4111111111111111"), vec!["pii.card_number"]);
        assert_eq!(kinds("amex 3782 822463 10005"), vec!["pii.card_number"]);
        assert!(kinds("4111 1111 1111 1112").is_empty(), "bad Luhn");
        assert!(kinds("order 1234567812345678").is_empty());
        assert!(kinds("id=4111111111111111x").is_empty());
    }

    #[test]
    fn ssns() {
        assert_eq!(kinds("ssn 536-90-4399"), vec!["pii.us_ssn"]);
        for bad in [
            "000-12-3456",
            "666-12-3456",
            "912-12-3456",
            "536-00-4399",
            "536-90-0000",
            "078-05-1120",
            "536-90 4399",
        ] {
            assert!(!kinds(bad).contains(&"pii.us_ssn"), "{bad}");
        }
    }

    #[test]
    fn phones() {
        for p in [
            "(212) 555-0199",
            "212-555-0199",
            "212.555.0199",
            "+44 20 7946 0958",
            "+1 415 555 2671",
            "1-800-555-0199",
            "+14155552671",
        ] {
            assert_eq!(kinds(p), vec!["pii.phone"], "{p}");
        }
        for not in [
            "2026-11-30",
            "10.0.0.1",
            "v1.2.3",
            "192.168.1.254",
            "3.14159265",
            "1234567",
            "012-555-0199",
            "0.0.0.0",
        ] {
            assert!(kinds(not).is_empty(), "{not}: {:?}", kinds(not));
        }
    }

    #[test]
    fn iban_checks() {
        assert!(iban(b"GB82 WEST 1234 5698 7654 32"));
        assert!(iban(b"DE89370400440532013000"));
        assert!(!iban(b"GB82 WEST 1234 5698 7654 33"));
        assert!(!iban(b"XX82 WEST 1234 5698 7654 32"));
        assert_eq!(ibans(b"pay GB82 WEST 1234 5698 7654 32 now"), vec![(4, 31)]);
        assert_eq!(ibans(b"DE89370400440532013000"), vec![(0, 22)]);
        assert!(ibans(b"XDE89370400440532013000").is_empty());
    }
}
