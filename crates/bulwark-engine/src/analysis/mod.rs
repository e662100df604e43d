//! Argument analysis for the classify stage: what the arguments say the call will do.
//!
//! `json` walks documents within limits and `catalogue` knows common tool names; commands
//! and SQL are read by `bulwark-shell`, whose analyses become [`Facts`] here. None of them
//! decides anything.

pub mod catalogue;
pub mod json;

use bulwark_policy::{CapSet, Capability};
use bulwark_shell::{Analysis, SqlAnalysis};

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

fn caps_of(caps: bulwark_shell::Caps) -> CapSet {
    let mut out = CapSet::EMPTY;
    for c in caps.iter() {
        if let Some(cap) = Capability::from_name(c.name()) {
            out.insert(cap);
        }
    }
    out
}

impl From<&Analysis> for Facts {
    fn from(a: &Analysis) -> Facts {
        let mut f = Facts {
            capabilities: caps_of(a.caps),
            destinations: a.destinations.clone(),
            paths: a.reads.iter().chain(&a.writes).cloned().collect(),
            predicates: a.predicates.clone(),
        };
        f.capabilities.insert(Capability::ExecShell);
        f
    }
}

impl From<&SqlAnalysis> for Facts {
    fn from(s: &SqlAnalysis) -> Facts {
        Facts {
            capabilities: caps_of(s.caps),
            predicates: s.predicates.clone(),
            ..Facts::default()
        }
    }
}
