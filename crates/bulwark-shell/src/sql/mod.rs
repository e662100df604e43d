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
    BinaryOperator, CopyTarget, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, InTarget,
    ObjectType, Privileges, Query, SetExpr, Statement, UnaryOperator, Value,
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
        "COPY … PROGRAM or a server file, LOAD DATA INFILE, INTO OUTFILE, pg_read_file, ATTACH DATABASE, VACUUM INTO",
    ),
    (
        "sql.code_execution",
        "the database runs a program or native code: xp_cmdshell, sp_OACreate, load_extension, an untrusted procedural language, a grant of pg_execute_server_program",
    ),
    (
        "sql.hidden_write",
        "a write inside a statement that reads as something else: a data-modifying CTE, MERGE … DELETE, a DO block or function body, dynamic EXEC, dblink_exec",
    ),
    (
        "sql.integrity_bypass",
        "triggers or constraints switched off: DISABLE TRIGGER, session_replication_role = replica, FOREIGN_KEY_CHECKS = 0",
    ),
    (
        "sql.persistence",
        "code that runs on later writes or on a schedule: CREATE TRIGGER, CREATE RULE, CREATE EVENT",
    ),
    (
        "sql.rename",
        "a table renamed: every query and application using it breaks",
    ),
    (
        "sql.drop_cascade",
        "a DROP … CASCADE inside ALTER: dependent objects go too",
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
            "sql.drop_cascade",
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
    if let Some(done) = special(text) {
        return done;
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
        functions_and_bodies(text, &mut out);
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
            // `WITH d AS (DELETE … RETURNING *) SELECT …` deletes: the CTE is a statement.
            if let Some(with) = &q.with {
                for cte in &with.cte_tables {
                    if let SetExpr::Insert(inner)
                    | SetExpr::Update(inner)
                    | SetExpr::Delete(inner)
                    | SetExpr::Merge(inner) = &*cte.query.body
                    {
                        out.fact("sql.hidden_write");
                        classify(inner, out);
                    }
                }
            }
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
        S::Merge(m) => {
            push(out, "MERGE", Cap::DbWrite);
            // Every matched row deleted (or rewritten) by a statement that reads as an upsert.
            let clauses = m
                .clauses
                .iter()
                .map(|c| c.to_string().to_ascii_uppercase())
                .collect::<Vec<_>>();
            if clauses.iter().any(|c| c.contains("THEN DELETE")) {
                out.fact("sql.hidden_write");
                out.fact("sql.delete_without_where");
            }
        }
        S::Update(u) => {
            push(out, "UPDATE", Cap::DbWrite);
            let table = u.table.relation.to_string();
            if u.selection.as_ref().is_none_or(|e| whole(e, &table)) {
                out.fact("sql.update_without_where");
            }
        }
        S::Delete(d) => {
            push(out, "DELETE", Cap::DbWrite);
            // `LIMIT n` with no WHERE still deletes rows nobody chose.
            let table = d
                .from
                .to_string()
                .split_whitespace()
                .find(|w| !w.eq_ignore_ascii_case("FROM"))
                .unwrap_or("")
                .trim_end_matches(',')
                .to_string();
            if d.selection.as_ref().is_none_or(|e| whole(e, &table)) {
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
            for op in &a.operations {
                let op = op.to_string().to_ascii_uppercase();
                if op.starts_with("DROP") {
                    out.fact("sql.alter_drop");
                    if op.contains("CASCADE") {
                        out.fact("sql.drop_cascade");
                    }
                }
                if op.starts_with("DISABLE TRIGGER") || op.starts_with("DISABLE RULE") {
                    out.fact("sql.integrity_bypass");
                }
                if op.starts_with("RENAME TO") || op.starts_with("RENAME TABLE") {
                    out.fact("sql.rename");
                }
            }
        }
        S::Grant(g) => {
            push(out, "GRANT", Cap::DbAdmin);
            // PostgreSQL's predefined roles that run programs or reach server files.
            let text = st.to_string().to_ascii_lowercase();
            if text.contains("pg_execute_server_program") {
                out.fact("sql.code_execution");
            }
            if text.contains("pg_read_server_files") || text.contains("pg_write_server_files") {
                out.fact("sql.file_access");
            }
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
        S::Execute { .. } => {
            push(out, first_words(st), Cap::DbWrite);
            execute(st, out);
        }
        S::Call(_) | S::Prepare { .. } | S::Deallocate { .. } => {
            push(out, first_words(st), Cap::DbWrite)
        }
        S::Pragma { name, value, .. } => {
            let class = if value.is_some() && !read_only_pragma(&name.to_string()) {
                Cap::DbAdmin
            } else {
                Cap::DbRead
            };
            push(out, "PRAGMA", class);
        }
        // Everything else changes structure, sessions or privileges.
        _ => {
            let kind = first_words(st);
            let text = st.to_string().to_ascii_uppercase();
            let words: Vec<&str> = text.split_whitespace().collect();
            if kind.starts_with("DROP") {
                out.fact("sql.drop");
            }
            if text.contains("PG_EXECUTE_SERVER_PROGRAM") {
                out.fact("sql.code_execution");
            }
            if text.contains("PG_READ_SERVER_FILES") || text.contains("PG_WRITE_SERVER_FILES") {
                out.fact("sql.file_access");
            }
            match kind.as_str() {
                "CREATE TRIGGER" | "CREATE RULE" | "CREATE EVENT" => out.fact("sql.persistence"),
                "CREATE ROLE" | "CREATE USER" if words.contains(&"SUPERUSER") => {
                    out.fact("sql.grant_all");
                    out.fact("sql.grant_global");
                }
                "RENAME" => out.fact("sql.rename"),
                "ATTACH" => out.fact("sql.file_access"),
                "VACUUM" | "ANALYZE" | "OPTIMIZE" | "REINDEX" | "CHECKPOINT" => {
                    // Read-only maintenance, unless it writes a copy somewhere.
                    if words.contains(&"INTO") {
                        out.fact("sql.file_access");
                        return push(out, kind, Cap::DbAdmin);
                    }
                    return push(out, kind, Cap::DbRead);
                }
                "SET" => {
                    let flat = text.replace(' ', "");
                    if flat.contains("SESSION_REPLICATION_ROLE=REPLICA")
                        || flat.contains("SESSION_REPLICATION_ROLE='REPLICA'")
                        || flat.contains("FOREIGN_KEY_CHECKS=0")
                    {
                        out.fact("sql.integrity_bypass");
                    }
                }
                _ => {}
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

/// A constant, after folding.
#[derive(Clone, Debug, PartialEq)]
enum K {
    Bool(bool),
    Num(f64),
    Str(String),
    Null,
}

impl K {
    fn num(&self) -> Option<f64> {
        match self {
            K::Num(n) => Some(*n),
            K::Str(s) => s.trim().parse().ok(),
            K::Bool(b) => Some(f64::from(u8::from(*b))),
            K::Null => None,
        }
    }

    fn truth(&self) -> Option<bool> {
        match self {
            K::Bool(b) => Some(*b),
            K::Num(n) => Some(*n != 0.0),
            K::Str(s) => s.trim().parse::<f64>().ok().map(|n| n != 0.0),
            K::Null => None,
        }
    }
}

/// Folds a constant expression: literals, casts, `NOT`, `AND`/`OR`, comparisons,
/// arithmetic, `IN (…)`, `BETWEEN`, `IS [NOT] NULL`, `COALESCE`/`IFNULL`/`NULLIF`. `None`
/// when it depends on a row (or on anything else folding cannot see).
fn fold(e: &Expr, depth: usize) -> Option<K> {
    if depth > 64 {
        return None;
    }
    let f = |x: &Expr| fold(x, depth + 1);
    match e {
        Expr::Nested(x) => f(x),
        Expr::Cast { expr, .. } => f(expr),
        Expr::Value(v) => match &v.value {
            Value::Boolean(b) => Some(K::Bool(*b)),
            Value::Number(n, _) => n.parse().ok().map(K::Num),
            Value::SingleQuotedString(s)
            | Value::NationalStringLiteral(s)
            | Value::DoubleQuotedString(s) => Some(K::Str(s.clone())),
            Value::Null => Some(K::Null),
            _ => None,
        },
        Expr::UnaryOp { op, expr } => match op {
            UnaryOperator::Not => f(expr)?.truth().map(|b| K::Bool(!b)),
            UnaryOperator::Minus => f(expr)?.num().map(|n| K::Num(-n)),
            UnaryOperator::Plus => f(expr),
            _ => None,
        },
        Expr::IsNull(x) => f(x).map(|k| K::Bool(k == K::Null)),
        Expr::IsNotNull(x) => f(x).map(|k| K::Bool(k != K::Null)),
        Expr::IsTrue(x) => f(x).map(|k| K::Bool(k.truth() == Some(true))),
        Expr::IsFalse(x) => f(x).map(|k| K::Bool(k.truth() == Some(false))),
        Expr::IsNotFalse(x) => f(x).map(|k| K::Bool(k.truth() != Some(false))),
        Expr::BinaryOp { left, op, right } => {
            use BinaryOperator as B;
            match op {
                // One known side decides: `x OR TRUE`, `x AND FALSE`.
                B::Or => match (
                    f(left).and_then(|k| k.truth()),
                    f(right).and_then(|k| k.truth()),
                ) {
                    (Some(true), _) | (_, Some(true)) => Some(K::Bool(true)),
                    (Some(false), Some(false)) => Some(K::Bool(false)),
                    _ => None,
                },
                B::And => match (
                    f(left).and_then(|k| k.truth()),
                    f(right).and_then(|k| k.truth()),
                ) {
                    (Some(false), _) | (_, Some(false)) => Some(K::Bool(false)),
                    (Some(true), Some(true)) => Some(K::Bool(true)),
                    _ => None,
                },
                B::Eq | B::NotEq | B::Lt | B::Gt | B::LtEq | B::GtEq | B::Spaceship => {
                    let (a, b) = (f(left)?, f(right)?);
                    if a == K::Null || b == K::Null {
                        return Some(if *op == B::Spaceship {
                            K::Bool(a == b)
                        } else {
                            K::Null
                        });
                    }
                    let ord = match (&a, &b) {
                        (K::Str(x), K::Str(y)) => x.partial_cmp(y),
                        _ => a.num()?.partial_cmp(&b.num()?),
                    }?;
                    use std::cmp::Ordering as O;
                    Some(K::Bool(match op {
                        B::Eq | B::Spaceship => ord == O::Equal,
                        B::NotEq => ord != O::Equal,
                        B::Lt => ord == O::Less,
                        B::Gt => ord == O::Greater,
                        B::LtEq => ord != O::Greater,
                        _ => ord != O::Less,
                    }))
                }
                B::Plus | B::Minus | B::Multiply => {
                    let (a, b) = (f(left)?.num()?, f(right)?.num()?);
                    Some(K::Num(match op {
                        B::Plus => a + b,
                        B::Minus => a - b,
                        _ => a * b,
                    }))
                }
                B::StringConcat => match (f(left)?, f(right)?) {
                    (K::Str(a), K::Str(b)) => Some(K::Str(a + &b)),
                    _ => None,
                },
                _ => None,
            }
        }
        Expr::In {
            expr,
            target: InTarget::List(list),
            negated,
            ..
        } => {
            let x = f(expr)?;
            let mut found = false;
            for item in list {
                let y = f(item)?;
                found |= y == x || x.num().is_some() && x.num() == y.num();
            }
            Some(K::Bool(found != *negated))
        }
        Expr::Between {
            expr,
            negated,
            low,
            high,
        } => {
            let (x, lo, hi) = (f(expr)?.num()?, f(low)?.num()?, f(high)?.num()?);
            Some(K::Bool((lo <= x && x <= hi) != *negated))
        }
        Expr::Function(func) => {
            let name = func.name.to_string().to_ascii_lowercase();
            let FunctionArguments::List(list) = &func.args else {
                return None;
            };
            let args: Vec<&Expr> = list
                .args
                .iter()
                .filter_map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                    _ => None,
                })
                .collect();
            if args.len() != list.args.len() {
                return None;
            }
            match name.as_str() {
                "coalesce" | "ifnull" | "nvl" | "isnull" => {
                    for a in args {
                        let k = f(a)?;
                        if k != K::Null {
                            return Some(k);
                        }
                    }
                    Some(K::Null)
                }
                "nullif" if args.len() == 2 => {
                    let (a, b) = (f(args[0])?, f(args[1])?);
                    Some(if a == b { K::Null } else { a })
                }
                "abs" if args.len() == 1 => f(args[0])?.num().map(|n| K::Num(n.abs())),
                "lower" | "upper" if args.len() == 1 => match f(args[0])? {
                    K::Str(s) => Some(K::Str(if name == "lower" {
                        s.to_lowercase()
                    } else {
                        s.to_uppercase()
                    })),
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether a condition selects every row of `table`: true after constant folding
/// (`'x'<>'y'`, `1 IN (1)`, `COALESCE(NULL,1)=1`, `NOT (1=0)`, `1=1::int`), `x = x`,
/// `x LIKE '%'`, a column's whole domain (`id IS NOT NULL`, `created_at < '9999-12-31'`), a
/// subquery over the same table with no condition (`id IN (SELECT id FROM t)`), or an
/// `OR` with any of these.
fn whole(e: &Expr, table: &str) -> bool {
    if fold(e, 0).and_then(|k| k.truth()) == Some(true) {
        return true;
    }
    match e {
        Expr::Nested(x) => whole(x, table),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Or,
            right,
        } => whole(left, table) || whole(right, table),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => whole(left, table) && whole(right, table),
        Expr::BinaryOp { left, op, right } => {
            use BinaryOperator as B;
            let same =
                matches!(op, B::Eq | B::GtEq | B::LtEq) && left == right && !has_volatile(left);
            same || column(left) && domain_edge(op, right, false)
                || column(right) && domain_edge(op, left, true)
        }
        Expr::IsNotNull(x) => column(x),
        Expr::Like {
            negated: false,
            pattern,
            ..
        } => {
            matches!(&**pattern, Expr::Value(v) if matches!(&v.value, Value::SingleQuotedString(s) if !s.is_empty() && s.chars().all(|c| c == '%')))
        }
        Expr::In {
            target: InTarget::Subquery(q),
            negated: false,
            ..
        } => unconditional_over(q, table),
        Expr::AnyOp {
            compare_op: BinaryOperator::Eq,
            right,
            ..
        } => match &**right {
            Expr::Subquery(q) => unconditional_over(q, table),
            _ => false,
        },
        _ => false,
    }
}

fn column(e: &Expr) -> bool {
    matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
}

/// `col < '9999-12-31'`, `col > '1900-01-01'`, `col < 1e15`: a bound outside any real value.
/// `flipped` when the literal is on the left.
fn domain_edge(op: &BinaryOperator, lit: &Expr, flipped: bool) -> bool {
    use BinaryOperator as B;
    let (below, above) = match (op, flipped) {
        (B::Lt | B::LtEq, false) | (B::Gt | B::GtEq, true) => (true, false),
        (B::Gt | B::GtEq, false) | (B::Lt | B::LtEq, true) => (false, true),
        _ => return false,
    };
    let Some(k) = fold(lit, 0) else { return false };
    match k {
        K::Str(s) => {
            // A date: its year decides.
            let year: Option<i32> = s
                .get(..4)
                .filter(|y| y.bytes().all(|b| b.is_ascii_digit()) && s.get(4..5) == Some("-"))
                .and_then(|y| y.parse().ok());
            match year {
                Some(y) => below && y >= 9000 || above && y <= 1900,
                None => false,
            }
        }
        K::Num(n) => below && n >= 1e15 || above && n <= -1e15,
        _ => false,
    }
}

/// `SELECT … FROM table` with no condition: every row of the table.
fn unconditional_over(q: &Query, table: &str) -> bool {
    let SetExpr::Select(sel) = &*q.body else {
        return false;
    };
    sel.selection.is_none()
        && q.limit_clause.is_none()
        && sel.from.len() == 1
        && sel.from[0].joins.is_empty()
        && !table.is_empty()
        && sel.from[0]
            .relation
            .to_string()
            .split_whitespace()
            .next()
            .is_some_and(|t| t.eq_ignore_ascii_case(table))
}

/// `random() = random()` is not a tautology.
fn has_volatile(e: &Expr) -> bool {
    matches!(e, Expr::Function(_) | Expr::Subquery(_))
}

/// Statements the parser does not know that have one plain meaning: `DO` blocks (their
/// bodies read as SQL), `PRAGMA name(arg)` reads, `VACUUM`/`ANALYZE` maintenance.
fn special(text: &str) -> Option<SqlAnalysis> {
    let t = text.trim().trim_end_matches(';').trim();
    let first = t.split_whitespace().next()?.to_ascii_uppercase();
    let mut out = SqlAnalysis {
        dialect: Some("keywords"),
        ..SqlAnalysis::default()
    };
    match first.as_str() {
        // SQLite's `VACUUM INTO 'file'` writes a copy of the database to a file.
        "VACUUM" if t.to_ascii_uppercase().contains(" INTO ") => {
            push(&mut out, "VACUUM INTO", Cap::DbAdmin);
            out.fact("sql.file_access");
            Some(out)
        }
        "DO" => {
            let bodies = dollar_bodies(t);
            if bodies.is_empty() {
                return None;
            }
            push(&mut out, "DO", Cap::DbAdmin);
            for b in bodies {
                body(&b, &mut out);
            }
            Some(out)
        }
        "PRAGMA" => {
            let rest = t[6..].trim();
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
                .collect();
            let after = rest[name.len()..].trim();
            if name.is_empty() || t.contains(';') {
                return None;
            }
            let shaped = after.is_empty()
                || after.starts_with('(')
                    && after.ends_with(')')
                    && after[1..after.len() - 1]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_.'\" ".contains(c));
            if !shaped {
                return None;
            }
            let read = after.is_empty() || read_only_pragma(&name);
            push(
                &mut out,
                "PRAGMA",
                if read { Cap::DbRead } else { Cap::DbAdmin },
            );
            Some(out)
        }
        _ => None,
    }
}

/// SQLite pragmas that only report (their argument names a table or a schema).
fn read_only_pragma(name: &str) -> bool {
    let n = name.rsplit('.').next().unwrap_or(name).to_ascii_lowercase();
    matches!(
        n.as_str(),
        "table_info"
            | "table_xinfo"
            | "table_list"
            | "index_list"
            | "index_info"
            | "index_xinfo"
            | "foreign_key_list"
            | "foreign_key_check"
            | "database_list"
            | "integrity_check"
            | "quick_check"
            | "compile_options"
            | "function_list"
            | "pragma_list"
            | "collation_list"
            | "module_list"
    )
}

/// The contents of every `$tag$ … $tag$` string.
fn dollar_bodies(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        let after = &rest[i + 1..];
        let Some(j) = after.find('$') else { break };
        let tag = &after[..j];
        if !tag.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            rest = after;
            continue;
        }
        let delim = format!("${tag}$");
        let body_start = i + 1 + j + 1;
        match rest[body_start..].find(&delim) {
            Some(end) => {
                out.push(rest[body_start..body_start + end].to_string());
                rest = &rest[body_start + end + delim.len()..];
            }
            None => break,
        }
        if out.len() >= 16 {
            break;
        }
    }
    out
}

/// A procedural body (`DO`, a function): its statements count as the outer statement's,
/// and any write in it is hidden in something that reads as a definition.
fn body(text: &str, out: &mut SqlAnalysis) {
    // PL/pgSQL wraps SQL in BEGIN … END and DECLARE sections; the keyword reading sees
    // the statements inside without parsing the procedural language.
    let inner = match lexer::analyse(text) {
        Ok(f) => f,
        Err(_) => return,
    };
    let upper = text.to_ascii_uppercase();
    let writes = inner.caps.contains(Cap::DbWrite) || inner.caps.contains(Cap::DbAdmin);
    if writes || upper.contains("EXECUTE") {
        out.fact("sql.hidden_write");
    }
    out.caps = out.caps.union(inner.caps);
    for p in inner.predicates {
        out.fact(p);
    }
    // `DELETE FROM t;` inside BEGIN … END is a statement on its own line of the body.
    for piece in upper.split(';') {
        let piece = piece.trim().trim_start_matches("BEGIN").trim();
        if piece.starts_with("DELETE")
            || piece.starts_with("UPDATE")
            || piece.starts_with("DROP")
            || piece.starts_with("TRUNCATE")
        {
            let a = analyse_sql(piece);
            for p in a.predicates {
                if p != "sql.unparsable" {
                    out.fact(p);
                }
            }
        }
    }
}

/// Function definitions and calls whose meaning is in their text: bodies of `CREATE
/// FUNCTION/PROCEDURE`, untrusted languages, `load_extension`, `dblink_exec`.
fn functions_and_bodies(text: &str, out: &mut SqlAnalysis) {
    let lower = text.to_ascii_lowercase();
    let defines = out
        .statements
        .iter()
        .any(|s| s.kind.starts_with("CREATE FUNCTION") || s.kind.starts_with("CREATE PROCEDURE"));
    if defines {
        for b in dollar_bodies(text) {
            body(&b, out);
        }
        for lang in [
            "plpython",
            "plperlu",
            "pltclu",
            "plsh",
            "language c",
            "language 'c'",
        ] {
            if lower.contains(lang) {
                out.fact("sql.code_execution");
            }
        }
    }
    if lower.contains("load_extension") {
        out.fact("sql.code_execution");
        out.caps.insert(Cap::DbAdmin);
    }
    if lower.contains("dblink_exec") || lower.contains("dblink(") {
        for lit in literals(text) {
            if lexer::looks_like_sql(&lit) {
                let inner = analyse_sql(&lit);
                if inner.caps.contains(Cap::DbWrite) || inner.caps.contains(Cap::DbAdmin) {
                    out.fact("sql.hidden_write");
                }
                out.caps = out.caps.union(inner.caps);
                for p in inner.predicates {
                    out.fact(p);
                }
            }
        }
    }
}

/// T-SQL `EXEC`: a system procedure that runs programs, or text run as SQL.
fn execute(st: &Statement, out: &mut SqlAnalysis) {
    let text = st.to_string();
    let lower = text.to_ascii_lowercase();
    if [
        "xp_cmdshell",
        "sp_oacreate",
        "sp_oamethod",
        "xp_regwrite",
        "sp_addextendedproc",
    ]
    .iter()
    .any(|p| lower.contains(p))
    {
        out.fact("sql.code_execution");
        out.caps.insert(Cap::DbAdmin);
    }
    // `EXEC('DROP TABLE ' + @t)`, `sp_executesql N'…'`: the literals are SQL text.
    let mut dynamic = false;
    for lit in literals(&text) {
        let inner = lexer::analyse(&lit).unwrap_or_default();
        if inner.statements > 0 && lexer::looks_like_sql(&lit) {
            dynamic = true;
            out.caps = out.caps.union(inner.caps);
            for p in inner.predicates {
                out.fact(p);
            }
        }
    }
    if dynamic || lower.contains("sp_executesql") || text.contains('+') {
        out.fact("sql.hidden_write");
    }
}

/// Single-quoted literals in `text` (`''` unescaped).
fn literals(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\'' {
            continue;
        }
        let mut lit = String::new();
        loop {
            match chars.next() {
                None => return out,
                Some('\'') if chars.peek() == Some(&'\'') => {
                    chars.next();
                    lit.push('\'');
                }
                Some('\'') => break,
                Some(x) => lit.push(x),
            }
        }
        out.push(lit);
        if out.len() >= 64 {
            break;
        }
    }
    out
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
    fn unscoped_after_folding_and_over_the_whole_domain() {
        for w in [
            "'x'<>'y'",
            "1 IN (1)",
            "COALESCE(NULL,1)=1",
            "NOT (1=0)",
            "1=1::int",
            "id IS NOT NULL",
            "created_at < '9999-12-31'",
            "'1900-01-01' < created_at",
            "id = ANY(SELECT id FROM users)",
            "id IN (SELECT id FROM users)",
            "id = 3 OR 2 BETWEEN 1 AND 5",
            "name = name",
        ] {
            let d = format!("DELETE FROM users WHERE {w}");
            assert!(preds(&d).contains(&"sql.delete_without_where"), "{d}");
            let u = format!("UPDATE users SET admin = true WHERE {w}");
            assert!(preds(&u).contains(&"sql.update_without_where"), "{u}");
        }
        assert!(preds("DELETE FROM users LIMIT 10").contains(&"sql.delete_without_where"));
        for w in [
            "id = 7",
            "'x' = 'y' OR id = 7",
            "created_at < '2024-01-01'",
            "id IN (SELECT user_id FROM banned)",
            "id IN (SELECT id FROM users WHERE active = false)",
            "COALESCE(deleted_at, NULL) IS NOT NULL AND id = 3",
        ] {
            let d = format!("DELETE FROM users WHERE {w}");
            assert!(!preds(&d).contains(&"sql.delete_without_where"), "{d}");
        }
    }

    #[test]
    fn writes_hidden_in_other_statements() {
        let has = |s: &str, p: &str| assert!(preds(s).contains(&p), "{s}: {:?}", preds(s));
        has(
            "WITH d AS (DELETE FROM users RETURNING *) SELECT * FROM d",
            "sql.delete_without_where",
        );
        has(
            "WITH d AS (DELETE FROM users RETURNING *) SELECT * FROM d",
            "sql.hidden_write",
        );
        has(
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
            "sql.hidden_write",
        );
        has(
            "DO $$ BEGIN DELETE FROM users; END $$",
            "sql.delete_without_where",
        );
        has(
            "DO $body$ BEGIN EXECUTE 'DROP TABLE ' || t; END $body$",
            "sql.hidden_write",
        );
        has(
            "CREATE FUNCTION f() RETURNS void AS $$ DELETE FROM users $$ LANGUAGE sql",
            "sql.hidden_write",
        );
        has(
            "CREATE FUNCTION f() RETURNS int AS $$ import os $$ LANGUAGE plpython3u",
            "sql.code_execution",
        );
        has("EXEC xp_cmdshell 'whoami'", "sql.code_execution");
        has("EXEC('DROP TABLE ' + @t)", "sql.drop");
        has("EXEC sp_executesql N'DROP TABLE users'", "sql.drop");
        has("ATTACH DATABASE '/tmp/x.db' AS x", "sql.file_access");
        has("SELECT load_extension('/tmp/x.so')", "sql.code_execution");
        has(
            "SELECT dblink_exec('host=x', 'DROP TABLE users')",
            "sql.drop",
        );
        has(
            "GRANT pg_execute_server_program TO bob",
            "sql.code_execution",
        );
        has(
            "ALTER TABLE users DISABLE TRIGGER ALL",
            "sql.integrity_bypass",
        );
        has(
            "SET session_replication_role = replica",
            "sql.integrity_bypass",
        );
        has("RENAME TABLE users TO old_users", "sql.rename");
        has(
            "CREATE TRIGGER t AFTER INSERT ON users FOR EACH ROW EXECUTE FUNCTION f()",
            "sql.persistence",
        );
        has(
            "ALTER TABLE users DROP COLUMN email CASCADE",
            "sql.drop_cascade",
        );
        has("CREATE ROLE x SUPERUSER LOGIN", "sql.grant_global");
        has("VACUUM INTO '/tmp/copy.db'", "sql.file_access");
    }

    #[test]
    fn read_only_maintenance_is_recognised() {
        for s in [
            "PRAGMA table_info(users)",
            "PRAGMA index_list('users')",
            "PRAGMA foreign_keys",
            "VACUUM ANALYZE",
            "VACUUM",
            "ANALYZE users",
            "EXPLAIN ANALYZE SELECT 1",
            "EXPLAIN SELECT * FROM users",
        ] {
            let a = analyse_sql(s);
            assert!(!a.has("sql.unparsable"), "{s}: {a:?}");
            assert_eq!(
                a.caps.iter().map(Cap::name).collect::<Vec<_>>(),
                ["db.read"],
                "{s}"
            );
            assert!(a.predicates.is_empty(), "{s}: {a:?}");
        }
        assert!(
            analyse_sql("PRAGMA writable_schema = 1")
                .caps
                .contains(Cap::DbAdmin)
        );
        assert!(
            analyse_sql("PRAGMA journal_mode(DELETE)")
                .caps
                .contains(Cap::DbAdmin)
        );
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
