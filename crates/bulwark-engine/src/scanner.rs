//! The content stage's seam: a scanner that reads payload strings and reports findings.
//!
//! The engine decides what a finding *does* (per category and direction, from policy);
//! the scanner only says what is there and where. `bulwark-scan` provides the real one; an
//! engine built without a scanner reports that it scanned nothing, never that content is
//! clean (see [`NoScanner`]).

use bulwark_policy::{ContentCategory, Severity};

use crate::call::Direction;

/// What a scanner is asked to read.
pub struct ScanInput<'a> {
    /// Which way the payload goes (selects detectors and thresholds).
    pub direction: Direction,
    /// Every string in the payload, JSON escapes already decoded, in document order.
    pub strings: &'a [&'a str],
}

/// One thing a scanner found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContentFinding {
    /// The category, which policy maps to an action.
    pub category: ContentCategory,
    /// The detector (`secret.aws_access_key`, `injection.override`, …).
    pub rule_id: String,
    /// How bad.
    pub severity: Severity,
    /// Which string (index into [`ScanInput::strings`]).
    pub string: usize,
    /// Byte span within that string.
    pub span: [usize; 2],
    /// The placeholder to put in place of the span when masking.
    pub placeholder: Option<String>,
}

/// What a scan produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanOutput {
    /// Findings, in payload order.
    pub findings: Vec<ContentFinding>,
    /// Whether the scanner could read everything it was given. `false` is fail-closed:
    /// the engine treats it as `ANALYSIS_UNAVAILABLE`.
    pub complete: bool,
}

/// A content scanner.
pub trait ContentScanner: Send + Sync + std::fmt::Debug {
    /// Scans the payload.
    fn scan(&self, input: &ScanInput<'_>) -> ScanOutput;
}

/// The scanner of an engine that has none. It reports every input as read with no
/// findings; the engine records `content_scanner: none` in `policy explain` so nobody
/// mistakes this for a clean bill.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoScanner;

impl ContentScanner for NoScanner {
    fn scan(&self, _input: &ScanInput<'_>) -> ScanOutput {
        ScanOutput {
            findings: Vec::new(),
            complete: true,
        }
    }
}
