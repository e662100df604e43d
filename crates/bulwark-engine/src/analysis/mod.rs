//! Argument analysis for the classify stage: what the arguments say the call will do.
//!
//! `json` walks documents within limits, `shell` reads commands, `sql` reads SQL, and
//! `catalogue` knows common tool names. Each analyser returns facts (capabilities,
//! destinations, paths, named predicates); none of them decides anything.

pub mod catalogue;
pub mod json;
pub mod shell;
pub mod sql;

use bulwark_policy::CapSet;

/// What an analyser found in one argument.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// Capabilities the text shows.
    pub capabilities: CapSet,
    /// Destinations it reaches (URLs, hosts), as written.
    pub destinations: Vec<String>,
    /// Paths it reads or writes.
    pub paths: Vec<String>,
    /// Named predicates that hold (see `bulwark_policy::predicates`).
    pub predicates: Vec<&'static str>,
}

impl Facts {
    /// Adds everything from `other`.
    pub fn merge(&mut self, other: Facts) {
        self.capabilities = self.capabilities.union(other.capabilities);
        for d in other.destinations {
            if !self.destinations.contains(&d) {
                self.destinations.push(d);
            }
        }
        for p in other.paths {
            if !self.paths.contains(&p) {
                self.paths.push(p);
            }
        }
        for p in other.predicates {
            self.add(p);
        }
    }

    /// Adds a predicate once.
    pub fn add(&mut self, predicate: &'static str) {
        if !self.predicates.contains(&predicate) {
            self.predicates.push(predicate);
        }
    }
}
