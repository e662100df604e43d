//! The content stage's seam: a scanner that reads payload strings and reports findings.
//!
//! The engine decides what a finding *does* (per category and direction, from policy);
//! the scanner only says what is there and where. [`BuiltinScanner`] wraps `bulwark-scan`;
//! [`NoScanner`] exists for tests of the other stages.

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
    /// What to call the value in a placeholder (`aws_access_key`); the engine numbers it
    /// per session: `[REDACTED:SECRET:aws_access_key:1]`.
    pub label: String,
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

/// The built-in scanner (`bulwark-scan`), as the content stage's scanner.
#[derive(Debug)]
pub struct BuiltinScanner(pub bulwark_scan::Scanner);

fn category(c: bulwark_scan::Category) -> ContentCategory {
    use bulwark_scan::Category as S;
    match c {
        S::Secret => ContentCategory::Secret,
        S::Pii => ContentCategory::Pii,
        S::Injection => ContentCategory::Injection,
        S::Prefill => ContentCategory::Prefill,
        S::Concealment => ContentCategory::Concealment,
        S::Poisoning => ContentCategory::Poisoning,
        S::HiddenText => ContentCategory::HiddenText,
        S::Exfil => ContentCategory::Exfil,
    }
}

fn severity(s: bulwark_scan::Severity) -> Severity {
    match s {
        bulwark_scan::Severity::Low => Severity::Low,
        bulwark_scan::Severity::Medium => Severity::Medium,
        bulwark_scan::Severity::High => Severity::High,
        bulwark_scan::Severity::Critical => Severity::Critical,
    }
}

impl ContentScanner for BuiltinScanner {
    fn scan(&self, input: &ScanInput<'_>) -> ScanOutput {
        let scope = match input.direction {
            Direction::Response => bulwark_scan::Scope::Response,
            Direction::Definition => bulwark_scan::Scope::Definition,
            Direction::Request | Direction::Proposal => bulwark_scan::Scope::Request,
        };
        let mut out = ScanOutput {
            findings: Vec::new(),
            complete: true,
        };
        for (i, text) in input.strings.iter().enumerate() {
            match self.0.scan(text, scope) {
                Ok(found) => out
                    .findings
                    .extend(found.into_iter().map(|f| ContentFinding {
                        category: category(f.category),
                        rule_id: f.rule_id.to_string(),
                        severity: severity(f.severity),
                        string: i,
                        span: [f.span.0, f.span.1],
                        label: f.label.to_string(),
                    })),
                Err(_) => out.complete = false,
            }
        }
        out
    }
}

/// A scanner that could not be built: every scan reports itself incomplete, so the
/// content stage fails closed (`ANALYSIS_UNAVAILABLE`).
#[derive(Debug)]
pub struct Unavailable;

impl ContentScanner for Unavailable {
    fn scan(&self, _input: &ScanInput<'_>) -> ScanOutput {
        ScanOutput {
            findings: Vec::new(),
            complete: false,
        }
    }
}

/// A scanner that finds nothing, for testing the other stages in isolation. Engines use
/// [`BuiltinScanner`] unless told otherwise.
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
