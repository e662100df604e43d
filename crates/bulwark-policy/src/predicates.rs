//! Named predicates: structural facts the analysers derive from a call, which rules can
//! require by name (`match: {predicates: [...]}`).
//!
//! A rule naming a predicate that nothing provides could never match, which would be a
//! silent hole in a policy, so names are checked against this registry when the policy is
//! compiled. Each analyser that adds facts adds its names here.

/// The engine's own predicates (destinations, paths, tools) and what they mean.
pub const KNOWN: &[(&str, &str)] = &[
    ("dest.any", "the call reaches at least one destination"),
    (
        "dest.internal",
        "a shell command reaches a loopback, private or intranet host",
    ),
    (
        "dest.hostname",
        "a destination is given as a name, not an address",
    ),
    (
        "dest.unapproved",
        "a destination is not an approved endpoint",
    ),
    (
        "path.sensitive",
        "a path the call reads or writes matches taint.sensitive_paths",
    ),
    (
        "path.sensitive_read",
        "a file tool (not a shell) reads a path that matches taint.sensitive_paths or is a credential store",
    ),
    (
        "path.bulwark_control",
        "a path the call reads or writes is one of Bulwark's own control files (approvals, admin token, keys)",
    ),
    (
        "tool.unknown",
        "neither the policy nor the built-in catalogue knows the tool",
    ),
];

/// Whether `name` is a known predicate.
pub fn is_known(name: &str) -> bool {
    all().any(|(n, _)| n == name)
}

/// Every predicate, the engine's and the command and SQL analysers', with its meaning.
pub fn all() -> impl Iterator<Item = (&'static str, &'static str)> {
    KNOWN
        .iter()
        .chain(bulwark_shell::PREDICATES)
        .chain(bulwark_shell::sql::PREDICATES)
        .copied()
}
