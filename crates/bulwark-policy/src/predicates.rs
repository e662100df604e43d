//! Named predicates: structural facts the analysers derive from a call, which rules can
//! require by name (`match: {predicates: [...]}`).
//!
//! A rule naming a predicate that nothing provides could never match, which would be a
//! silent hole in a policy, so names are checked against this registry when the policy is
//! compiled. Each analyser that adds facts adds its names here.

/// Every known predicate and what it means.
pub const KNOWN: &[(&str, &str)] = &[
    ("dest.any", "the call reaches at least one destination"),
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
        "tool.unknown",
        "neither the policy nor the built-in catalogue knows the tool",
    ),
    ("shell.unparsable", "a shell command could not be analysed"),
    (
        "shell.pipe_to_shell",
        "output of one command is piped into a shell or interpreter",
    ),
    (
        "shell.interpreter_inline",
        "an interpreter runs inline code (-c, -e, eval)",
    ),
    ("sql.unparsable", "SQL could not be analysed"),
    (
        "sql.multi_statement",
        "the SQL text holds more than one statement",
    ),
    ("sql.drop", "a DROP statement (database, schema, table, …)"),
    ("sql.drop_database", "DROP DATABASE or DROP SCHEMA"),
    ("sql.truncate", "a TRUNCATE statement"),
    (
        "sql.delete_without_where",
        "DELETE with no WHERE clause, or a tautological one",
    ),
    (
        "sql.update_without_where",
        "UPDATE with no WHERE clause, or a tautological one",
    ),
    ("sql.grant_all", "GRANT or REVOKE of ALL privileges"),
    ("sql.alter_drop", "ALTER … DROP (column, constraint, …)"),
    (
        "sql.file_access",
        "COPY … PROGRAM/TO/FROM a file, LOAD DATA INFILE, INTO OUTFILE",
    ),
];

/// Whether `name` is a known predicate.
pub fn is_known(name: &str) -> bool {
    KNOWN.iter().any(|(n, _)| *n == name)
}
