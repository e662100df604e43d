//! Policy errors: every one names the file, line and column, and what was expected.

use std::fmt;

/// One problem in a policy file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// 1-based line; 0 when the problem has no single place (e.g. an empty file).
    pub line: u64,
    /// 1-based column.
    pub column: u64,
    /// What was wrong and what was expected.
    pub message: String,
}

/// A policy that was refused, with every problem found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct PolicyError {
    /// The file (or pack) name as given.
    pub file: String,
    /// The problems, in file order.
    pub issues: Vec<Issue>,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, issue) in self.issues.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, issue.line, issue.column, issue.message
            )?;
        }
        Ok(())
    }
}

/// Collects issues while compiling, so one run reports every problem, not just the first.
#[derive(Debug, Default)]
pub(crate) struct Issues {
    pub(crate) list: Vec<Issue>,
}

impl Issues {
    pub(crate) fn at(&mut self, loc: serde_saphyr::Location, message: impl Into<String>) {
        self.list.push(Issue {
            line: loc.line(),
            column: loc.column(),
            message: message.into(),
        });
    }

    pub(crate) fn into_result<T>(mut self, file: &str, value: T) -> Result<T, PolicyError> {
        if self.list.is_empty() {
            Ok(value)
        } else {
            self.list.sort_by_key(|i| (i.line, i.column));
            Err(PolicyError {
                file: file.to_string(),
                issues: self.list,
            })
        }
    }
}
