//! SQL statement classes, parsed with `sqlparser` (generic, PostgreSQL, MySQL and SQLite
//! dialects, first that parses wins), never grepped.
//!
//! Each statement is `db.read`, `db.write` or `db.admin`, and its destructive shapes are
//! named: `DROP DATABASE|SCHEMA|TABLE`, `TRUNCATE`, `DELETE`/`UPDATE` without a `WHERE` or
//! with one that is always true, `ALTER … DROP`, `GRANT|REVOKE ALL`, `COPY … PROGRAM` and
//! server-side files, several statements in one string. Text no dialect parses is
//! `sql.unparsable` — not safe: the keyword reading still names what it can, and policy
//! decides (the default asks a human).

mod lexer;

use sqlparser::ast::{
    BinaryOperator, CopyTarget, Expr, ObjectType, Privileges, SetExpr, Statement, UnaryOperator,
    Value,
};
use sqlparser::dialect::{Dialect, GenericDialect, MySqlDialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::parser::Parser;

use crate::model::{Cap, Caps};

/// SQL longer than this is not parsed; it is reported unparsable.
pub const MAX_SQL_BYTES: usize = 256 * 1024;

/// Every SQL predicate, with its meaning.
pub const PREDICATES: &[(&str, &str)] = &[
    ("sql.unparsable", "SQL no dialect could parse (or too long)"),
    (
        "sql.multi_statement",
        "the SQL text holds more than one statement",
    ),
    (
        "sql.drop",
        "a DROP statement (database, schema, table, view, …)",
    ),
    ("sql.drop_database", "DROP DATABASE or DROP SCHEMA"),
    ("sql.truncate", "a TRUNCATE statement"),
    (
        "sql.delete_without_where",
        "DELETE with no WHERE clause, or one that is always true",
    ),
    (
        "sql.update_without_where",
        "UPDATE with no WHERE clause, or one that is always true",
    ),
    (
        "sql.grant_all",
        "GRANT or REVOKE of ALL privileges, or a role made superuser",
    ),
    (
        "sql.grant_global",
        "ALL privileges on every database (ON *.*), or a role made superuser",
    ),
    (
        "sql.alter_drop",
        "ALTER … DROP (column, constraint, partition, …)",
    ),
    (
        "sql.file_access",
        "COPY … PROGRAM or a server file, LOAD DATA INFILE, INTO OUTFILE, pg_read_file",
    ),
];

/// One statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlStatement {
    /// What it is: `SELECT`, `DELETE`, `DROP TABLE`, …
    pub kind: String,
    /// Its class: [`Cap::DbRead`], [`Cap::DbWrite`] or [`Cap::DbAdmin`].
    pub class: Cap,
}

/// The analysis of one SQL text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SqlAnalysis {
    /// The statements, in order (empty when nothing parsed).
    pub statements: Vec<SqlStatement>,
    /// The statements' classes together.
    pub caps: Caps,
    /// Destructive shapes found (see [`PREDICATES`]).
    pub predicates: Vec<&'static str>,
    /// The dialect that parsed it.
    pub dialect: Option<&'static str>,
    /// Why no dialect parsed it.
    pub error: Option<String>,
}

impl SqlAnalysis {
    fn fact(&mut self, p: &'static str) {
        if !self.predicates.contains(&p) {
            self.predicates.push(p);
        }
    }

    /// Whether a predicate holds.
    pub fn has(&self, p: &str) -> bool {
        self.predicates.contains(&p)
    }

    /// Whether it destroys data (drop, truncate, unscoped delete or update).
    pub fn destroys(&self) -> bool {
        [
            "sql.drop",
            "sql.drop_database",
            "sql.truncate",
            "sql.delete_without_where",
            "sql.update_without_where",
            "sql.alter_drop",
        ]
        .iter()
        .any(|p| self.has(p))
    }
}

/// Analyses SQL text.
///
/// ```
/// use bulwark_shell::sql::analyse_sql;
/// let a = analyse_sql("/* tidy */ drop   DATABASE prod");
/// assert!(a.has("sql.drop_database"));
/// let a = analyse_sql("DELETE FROM users WHERE id = 7");
/// assert!(!a.has("sql.delete_without_where"));
/// assert!(analyse_sql("DELETE FROM users WHERE 1=1").has("sql.delete_without_where"));
/// ```
pub fn analyse_sql(text: &str) -> SqlAnalysis {
    let mut out = SqlAnalysis::default();
    if text.len() > MAX_SQL_BYTES {
        out.fact("sql.unparsable");
        out.error = Some(format!("SQL longer than {MAX_SQL_BYTES} bytes"));
        fail_closed(&mut out);
        return out;
    }
    // Backslashes, `#`, `$` and backticks mean different things in different dialects
    // (`'a\'` ends a string in PostgreSQL and not in MySQL; `#` is a comment in MySQL and an
    // operator in PostgreSQL; `$$` quotes in one and names in another), and MySQL runs the
    // code in `/*! … */` comments. Such text is read in every dialect, the findings of
    // all of them together.
    let ambiguous = text
        .bytes()
        .any(|b| matches!(b, b'\\' | b'#' | b'$' | b'`'))
        || text.contains("/*!");
    // Most SQL an agent sends is one plain read. sqlparser costs tens of microseconds per
    // kilobyte and would class it the same, so the keyword reading answers for those; every
    // statement that could write, drop, grant or reach files is parsed.
    if !ambiguous && let Some(kind) = lexer::plain_read(text) {
        out.dialect = Some("plain read");
        push(&mut out, kind, Cap::DbRead);
        return out;
    }
    let dialects: [(&'static str, &dyn Dialect); 4] = [
        ("generic", &GenericDialect {}),
        ("postgresql", &PostgreSqlDialect {}),
        ("mysql", &MySqlDialect {}),
        ("sqlite", &SQLiteDialect {}),
    ];
    let mut variants = vec![std::borrow::Cow::Borrowed(text)];
    if text.contains("/*!") {
        variants.push(std::borrow::Cow::Owned(unversion(text)));
    }
    let mut first_error = None;
    let mut parsed = false;
    'variants: for variant in &variants {
        for (name, dialect) in dialects {
            match Parser::parse_sql(dialect, variant) {
                Ok(statements) => {
                    let mut one = SqlAnalysis::default();
                    if statements.len() > 1 {
                        one.fact("sql.multi_statement");
                    }
                    for st in &statements {
                        classify(st, &mut one);
                    }
                    if parsed {
                        // Another reading: its findings count, its statements are not
                        // listed twice.
                        out.caps = out.caps.union(one.caps);
                        for p in one.predicates {
                            out.fact(p);
                        }
                    } else {
                        out.dialect = Some(name);
                        out.statements = one.statements;
                        out.caps = one.caps;
                        out.predicates = one.predicates;
                        parsed = true;
                    }
                    if !ambiguous {
                        break 'variants;
                    }
                }
                Err(e) => {
                    first_error.get_or_insert_with(|| e.to_string());
                }
            }
        }
    }
    if parsed {
        if lexer::touches_files(text) {
            out.fact("sql.file_access");
            out.caps.insert(Cap::DbAdmin);
        }
        return out;
    }
    out.error = first_error;
    out.fact("sql.unparsable");
    if let Ok(facts) = lexer::analyse(text) {
        out.caps = facts.caps;
        for p in facts.predicates {
            out.fact(p);
        }
        if facts.statements > 1 {
            out.fact("sql.multi_statement");
        }
    }
    fail_closed(&mut out);
    out
}

/// MySQL's versioned comments (`/*!50000 DROP … */`) as the code they hold.
fn unversion(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("/*!") {
        out.push_str(&rest[..i]);
        let after = rest[i + 3..].trim_start_matches(|c: char| c.is_ascii_digit());
        match after.find("*/") {
            Some(end) => {
                out.push(' ');
                out.push_str(&after[..end]);
                out.push(' ');
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(after);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// What nobody could read might do anything a database can.
fn fail_closed(out: &mut SqlAnalysis) {
    out.caps.insert(Cap::DbWrite);
    out.caps.insert(Cap::DbAdmin);
}

/// Whether `text` reads as SQL (for tools whose `query` argument may be a search query).
pub fn looks_like_sql(text: &str) -> bool {
    lexer::looks_like_sql(text)
}

/// What says a string is SQL: decides whether text that no dialect parses is SQL that
/// failed (and fails closed) or prose that opens with an SQL verb (and is left alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlContext {
    /// The tool's mapping, or an argument whose name means SQL (`sql`, `statement`): all
    /// of its text is SQL, and what does not parse is `sql.unparsable`.
    Declared,
    /// An argument whose name may mean SQL or a search (`query`, `q`), or any other
    /// string: SQL when a dialect parses it, or when it has the structure its verb needs
    /// (`DELETE … FROM`, `UPDATE … SET`, `DROP TABLE`) and no dialect parses it.
    Found,
}

/// The analysis of `text` when, in `context`, it is SQL; `None` for prose.
///
/// ```
/// use bulwark_shell::sql::{SqlContext, sql_in};
/// assert!(sql_in("Update the README", SqlContext::Found).is_none());
/// assert!(sql_in("Grant access to the new hire", SqlContext::Found).is_none());
/// let a = sql_in("DELETE FROM users", SqlContext::Found).unwrap();
/// assert!(a.has("sql.delete_without_where"));
/// let a = sql_in("DELETE FROM users WHERE (", SqlContext::Found).unwrap();
/// assert!(a.has("sql.unparsable"));
/// let a = sql_in("Update the README", SqlContext::Declared).unwrap();
/// assert!(a.has("sql.unparsable"));
/// ```
pub fn sql_in(text: &str, context: SqlContext) -> Option<SqlAnalysis> {
    if text.trim().is_empty() {
        return None;
    }
    match context {
        SqlContext::Declared => Some(analyse_sql(text)),
        SqlContext::Found => {
            if !looks_like_sql(text) {
                return None;
            }
            let a = analyse_sql(text);
            (!a.has("sql.unparsable") || lexer::statement_shaped(text)).then_some(a)
        }
    }
}

fn push(out: &mut SqlAnalysis, kind: impl Into<String>, class: Cap) {
    out.caps.insert(class);
    out.statements.push(SqlStatement {
        kind: kind.into(),
        class,
    });
}

fn classify(st: &Statement, out: &mut SqlAnalysis) {
    use Statement as S;
    match st {
        S::Query(q) => {
            // `WITH … DELETE/UPDATE/INSERT` carries the real statement in the body.
            if let SetExpr::Insert(inner)
            | SetExpr::Update(inner)
            | SetExpr::Delete(inner)
            | SetExpr::Merge(inner) = &*q.body
            {
                return classify(inner, out);
            }
            let text = q.to_string();
            let upper = text.to_ascii_uppercase();
            if upper.contains(" INTO ") && upper.starts_with("SELECT") {
                push(out, "SELECT INTO", Cap::DbWrite);
            } else {
                push(out, "SELECT", Cap::DbRead);
            }
        }
        S::Insert(_) => push(out, "INSERT", Cap::DbWrite),
        S::Merge(_) => push(out, "MERGE", Cap::DbWrite),
        S::Update(u) => {
            push(out, "UPDATE", Cap::DbWrite);
            if u.selection.as_ref().is_none_or(always_true) {
                out.fact("sql.update_without_where");
            }
        }
        S::Delete(d) => {
            push(out, "DELETE", Cap::DbWrite);
            if d.selection.as_ref().is_none_or(always_true) && d.limit.is_none() {
                out.fact("sql.delete_without_where");
            }
        }
        S::Truncate(_) => {
            push(out, "TRUNCATE", Cap::DbAdmin);
            out.fact("sql.truncate");
        }
        S::Drop { object_type, .. } => {
            push(out, format!("DROP {object_type}"), Cap::DbAdmin);
            out.fact("sql.drop");
            if matches!(object_type, ObjectType::Database | ObjectType::Schema) {
                out.fact("sql.drop_database");
            }
        }
        S::AlterTable(a) => {
            push(out, "ALTER TABLE", Cap::DbAdmin);
            if a.operations
                .iter()
                .any(|op| op.to_string().to_ascii_uppercase().starts_with("DROP"))
            {
                out.fact("sql.alter_drop");
            }
        }
        S::Grant(g) => {
            push(out, "GRANT", Cap::DbAdmin);
            if matches!(g.privileges, Privileges::All { .. }) {
                out.fact("sql.grant_all");
                let on = g
                    .objects
                    .as_ref()
                    .map(|o| o.to_string())
                    .unwrap_or_default();
                if on.contains("*.*") {
                    out.fact("sql.grant_global");
                }
            }
        }
        S::Revoke(r) => {
            push(out, "REVOKE", Cap::DbAdmin);
            if matches!(r.privileges, Privileges::All { .. }) {
                out.fact("sql.grant_all");
            }
        }
        S::AlterRole { .. } => {
            push(out, "ALTER ROLE", Cap::DbAdmin);
            let text = st.to_string().to_ascii_uppercase();
            if text.contains("SUPERUSER") && !text.contains("NOSUPERUSER") {
                out.fact("sql.grant_all");
                out.fact("sql.grant_global");
            }
        }
        S::Copy { to, target, .. } => {
            // `/dev/stdout` and `/dev/stdin` are the client's own streams, not server files.
            let server_side = match target {
                CopyTarget::Program { .. } => true,
                CopyTarget::File { filename } => !matches!(
                    filename.as_str(),
                    "/dev/stdout" | "/dev/stdin" | "/dev/stderr"
                ),
                _ => false,
            };
            push(
                out,
                if *to { "COPY TO" } else { "COPY FROM" },
                if server_side {
                    Cap::DbAdmin
                } else if *to {
                    Cap::DbRead
                } else {
                    Cap::DbWrite
                },
            );
            if server_side {
                out.fact("sql.file_access");
            }
        }
        S::LoadData { .. } => {
            push(out, "LOAD DATA", Cap::DbAdmin);
            out.fact("sql.file_access");
        }
        S::Explain { .. }
        | S::ExplainTable { .. }
        | S::ShowFunctions { .. }
        | S::ShowVariable { .. }
        | S::ShowStatus { .. }
        | S::ShowVariables { .. }
        | S::ShowCreate { .. }
        | S::ShowColumns { .. }
        | S::ShowDatabases { .. }
        | S::ShowSchemas { .. }
        | S::ShowTables { .. }
        | S::ShowViews { .. }
        | S::ShowCollation { .. }
        | S::ShowProcessList { .. }
        | S::Use(_)
        | S::StartTransaction { .. }
        | S::Commit { .. }
        | S::Rollback { .. }
        | S::Savepoint { .. }
        | S::ReleaseSavepoint { .. } => push(out, first_words(st), Cap::DbRead),
        S::Call(_) | S::Execute { .. } | S::Prepare { .. } | S::Deallocate { .. } => {
            push(out, first_words(st), Cap::DbWrite)
        }
        // Everything else changes structure, sessions or privileges.
        _ => {
            let kind = first_words(st);
            if kind.starts_with("DROP") {
                out.fact("sql.drop");
            }
            push(out, kind, Cap::DbAdmin)
        }
    }
}

/// `CREATE TABLE`, `SET`, … from the statement's own rendering.
fn first_words(st: &Statement) -> String {
    let text = st.to_string();
    let mut words = text.split_whitespace();
    let a = words.next().unwrap_or("").to_ascii_uppercase();
    match a.as_str() {
        "CREATE" | "ALTER" | "DROP" | "SHOW" => {
            let b = words.next().unwrap_or("").to_ascii_uppercase();
            format!("{a} {b}")
        }
        _ => a,
    }
}

/// Whether a condition holds for every row: `1=1`, `TRUE`, `'a'='a'`, `x = x`,
/// `NOT FALSE`, `… OR <any of these>`, `2 > 1`, `x LIKE '%'`.
fn always_true(e: &Expr) -> bool {
    match e {
        Expr::Nested(x) => always_true(x),
        Expr::Value(v) => match &v.value {
            Value::Boolean(b) => *b,
            Value::Number(n, _) => n.chars().any(|c| c.is_ascii_digit() && c != '0'),
            Value::SingleQuotedString(s) => s.parse::<f64>().is_ok_and(|n| n != 0.0),
            _ => false,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => always_false(expr),
        Expr::BinaryOp { left, op, right } => match op {
            BinaryOperator::Or => always_true(left) || always_true(right),
            BinaryOperator::And => always_true(left) && always_true(right),
            BinaryOperator::Eq | BinaryOperator::GtEq | BinaryOperator::LtEq => {
                left == right && !has_volatile(left)
            }
            BinaryOperator::NotEq | BinaryOperator::Gt | BinaryOperator::Lt => {
                match (number(left), number(right)) {
                    (Some(a), Some(b)) => match op {
                        BinaryOperator::NotEq => a != b,
                        BinaryOperator::Gt => a > b,
                        _ => a < b,
                    },
                    _ => false,
                }
            }
            _ => false,
        },
        Expr::IsNotNull(x) => matches!(**x, Expr::Value(_)) && !always_false(x),
        Expr::IsTrue(x) => always_true(x),
        Expr::Like {
            negated: false,
            pattern,
            ..
        } => {
            matches!(&**pattern, Expr::Value(v) if matches!(&v.value, Value::SingleQuotedString(s) if s.chars().all(|c| c == '%')))
        }
        _ => false,
    }
}

fn always_false(e: &Expr) -> bool {
    match e {
        Expr::Nested(x) => always_false(x),
        Expr::Value(v) => match &v.value {
            Value::Boolean(b) => !*b,
            Value::Number(n, _) => n.chars().all(|c| c == '0' || c == '.'),
            _ => false,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => always_true(expr),
        _ => false,
    }
}

fn number(e: &Expr) -> Option<f64> {
    match e {
        Expr::Nested(x) => number(x),
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// `random() = random()` is not a tautology.
fn has_volatile(e: &Expr) -> bool {
    matches!(e, Expr::Function(_) | Expr::Subquery(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preds(s: &str) -> Vec<&'static str> {
        analyse_sql(s).predicates
    }

    #[test]
    fn destructive_shapes() {
        assert!(preds("DROP DATABASE prod").contains(&"sql.drop_database"));
        assert!(preds("drop schema public cascade").contains(&"sql.drop_database"));
        assert!(preds("DROP TABLE IF EXISTS users").contains(&"sql.drop"));
        assert!(!preds("DROP TABLE users").contains(&"sql.drop_database"));
        assert!(preds("truncate table t").contains(&"sql.truncate"));
        assert!(preds("TRUNCATE t").contains(&"sql.truncate"));
        assert!(preds("DELETE FROM users").contains(&"sql.delete_without_where"));
        assert!(preds("DELETE FROM \"Public\".\"Users\"").contains(&"sql.delete_without_where"));
        assert!(preds("DELETE FROM `users`").contains(&"sql.delete_without_where"));
        assert!(preds("DELETE FROM users WHERE 1=1").contains(&"sql.delete_without_where"));
        assert!(
            preds("DELETE FROM users WHERE id = 7 OR 1 = 1").contains(&"sql.delete_without_where")
        );
        assert!(preds("delete from users where true").contains(&"sql.delete_without_where"));
        assert!(preds("delete from users where 'a' = 'a'").contains(&"sql.delete_without_where"));
        assert!(preds("delete from users where NOT false").contains(&"sql.delete_without_where"));
        assert!(preds("delete from users where 2 > 1").contains(&"sql.delete_without_where"));
        assert!(!preds("DELETE FROM users WHERE id = 7").contains(&"sql.delete_without_where"));
        assert!(
            !preds("DELETE FROM users WHERE active = false").contains(&"sql.delete_without_where")
        );
        assert!(preds("UPDATE users SET admin = true").contains(&"sql.update_without_where"));
        assert!(
            !preds("UPDATE users SET admin = true WHERE id = 7")
                .contains(&"sql.update_without_where")
        );
        assert!(preds("GRANT ALL PRIVILEGES ON *.* TO 'admin'@'%'").contains(&"sql.grant_global"));
        assert!(!preds("GRANT ALL ON db.* TO 'x'@'%'").contains(&"sql.grant_global"));
        assert!(!preds("GRANT SELECT ON db.t TO bob").contains(&"sql.grant_all"));
        assert!(preds("REVOKE ALL ON t FROM public").contains(&"sql.grant_all"));
        assert!(preds("ALTER TABLE t DROP COLUMN c").contains(&"sql.alter_drop"));
        assert!(!preds("ALTER TABLE t ADD COLUMN c int").contains(&"sql.alter_drop"));
        assert!(preds("COPY t TO PROGRAM 'curl x'").contains(&"sql.file_access"));
        assert!(preds("COPY t FROM '/etc/passwd'").contains(&"sql.file_access"));
        assert!(!preds("COPY t FROM STDIN").contains(&"sql.file_access"));
        assert!(!preds("COPY t TO '/dev/stdout'").contains(&"sql.file_access"));
        assert!(preds("LOAD DATA INFILE '/etc/passwd' INTO TABLE t").contains(&"sql.file_access"));
        assert!(preds("SELECT * FROM t INTO OUTFILE '/tmp/x'").contains(&"sql.file_access"));
        assert!(preds("SELECT pg_read_file('/etc/passwd')").contains(&"sql.file_access"));
    }

    #[test]
    fn comments_literals_and_casing() {
        assert!(preds("SELECT 'DROP DATABASE x'").is_empty());
        assert!(preds("SELECT 1 -- ; DROP DATABASE x").is_empty());
        assert!(preds("/* x */ DrOp/**/DATABASE x").contains(&"sql.drop_database"));
        let a = analyse_sql("SELECT 1; DROP TABLE t");
        assert!(a.has("sql.multi_statement") && a.has("sql.drop"));
        assert!(preds("SELECT 'unterminated").contains(&"sql.unparsable"));
        assert!(preds("SELECT $$ ; DROP TABLE t $$").is_empty());
    }

    #[test]
    fn dialect_differences_count_against_the_text() {
        for text in [
            "SELECT 'a\\'; DROP DATABASE prod; --'",
            "SELECT 1 # 2; DROP DATABASE prod",
            "SELECT 1; /*!50000 DROP DATABASE prod*/",
        ] {
            assert!(preds(text).contains(&"sql.drop_database"), "{text}");
        }
    }

    #[test]
    fn unparsable_is_not_safe() {
        let a = analyse_sql("DROP DATABASE prod WITH (FORCE) garbage garbage (");
        assert!(a.has("sql.unparsable"));
        assert!(a.has("sql.drop_database"), "{a:?}");
        assert!(a.caps.contains(Cap::DbAdmin) && a.caps.contains(Cap::DbWrite));
        assert!(analyse_sql(&"SELECT 1 ".repeat(40_000)).has("sql.unparsable"));
    }

    #[test]
    fn classes() {
        let class = |s: &str| {
            analyse_sql(s)
                .caps
                .iter()
                .map(Cap::name)
                .collect::<Vec<_>>()
        };
        assert_eq!(class("select 1"), ["db.read"]);
        assert_eq!(class("INSERT INTO t VALUES (1)"), ["db.write"]);
        assert_eq!(class("CREATE TABLE t (x int)"), ["db.admin"]);
        assert_eq!(class("EXPLAIN SELECT * FROM users"), ["db.read"]);
        assert!(analyse_sql("WITH d AS (SELECT 1) DELETE FROM t").has("sql.delete_without_where"));
        assert_eq!(
            analyse_sql("SELECT a FROM t WHERE b = 'DELETE'").dialect,
            Some("plain read")
        );
        for not_plain in [
            "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x",
            "SELECT * INTO backup FROM t",
            "SELECT pg_read_file('/etc/passwd')",
            "SELECT 1; SELECT 2",
            "SELECT (1",
        ] {
            assert_ne!(
                analyse_sql(not_plain).dialect,
                Some("plain read"),
                "{not_plain}"
            );
        }
        assert!(looks_like_sql("  select * from x"));
        assert!(!looks_like_sql("best pizza in town"));
    }
}
