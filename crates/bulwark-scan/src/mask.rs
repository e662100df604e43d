//! Masking: replace each finding's span with a placeholder.

use crate::finding::Finding;

/// `text` with every finding's span replaced by `placeholder(finding)`. Overlapping findings
/// are merged into the first one's placeholder; spans that do not fall on character
/// boundaries are widened to the nearest ones, so the output is always valid UTF-8.
pub fn mask(
    text: &str,
    findings: &[Finding],
    mut placeholder: impl FnMut(&Finding) -> String,
) -> String {
    let mut spans: Vec<&Finding> = findings.iter().collect();
    spans.sort_by_key(|f| f.span);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in spans {
        let (mut s, mut e) = f.span;
        if e > text.len() || s >= e {
            continue;
        }
        while !text.is_char_boundary(s) {
            s -= 1;
        }
        while !text.is_char_boundary(e) {
            e += 1;
        }
        if s < at {
            // Overlaps what is already masked: extend the masked region.
            if e > at {
                at = e;
            }
            continue;
        }
        out.push_str(&text[at..s]);
        out.push_str(&placeholder(f));
        at = e;
    }
    out.push_str(&text[at..]);
    out
}
