//! A first reading of SQL: statements split, comments and literals removed, each statement
//! classed (`db.read`, `db.write`, `db.admin`) and its destructive shapes named.
//!
//! It lexes rather than greps, so comments, odd casing, string literals and several
//! statements in one string do not hide or fake a keyword. Text it cannot lex (an
//! unterminated literal or comment) is reported as `sql.unparsable`.

use bulwark_policy::Capability;

use super::Facts;

/// SQL longer than this is reported unparsable rather than read.
pub const MAX_SQL_BYTES: usize = 256 * 1024;

/// One token, borrowed from the text: words and quoted identifiers compare
/// case-insensitively, literals keep their text so `'a' = 'a'` can be told from `'a' = 'b'`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok<'a> {
    Word(&'a str),
    Str(&'a str),
    Num(&'a str),
    Punct(u8),
}

impl Tok<'_> {
    fn is(&self, kw: &str) -> bool {
        matches!(self, Tok::Word(w) if w.eq_ignore_ascii_case(kw))
    }

    fn same(&self, other: &Tok<'_>) -> bool {
        match (self, other) {
            (Tok::Word(a), Tok::Word(b)) => a.eq_ignore_ascii_case(b),
            (a, b) => a == b,
        }
    }
}

type Statement<'a> = Vec<Tok<'a>>;

/// Splits SQL into statements of tokens, dropping comments.
fn tokenize(sql: &str) -> Result<Vec<Statement<'_>>, &'static str> {
    let b = sql.as_bytes();
    let mut statements = Vec::new();
    let mut cur: Statement<'_> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if (c == b'-' && b.get(i + 1) == Some(&b'-')) || c == b'#' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut j = i + 2;
            let mut depth = 1;
            while depth > 0 {
                match (b.get(j), b.get(j + 1)) {
                    (None, _) => return Err("unterminated comment"),
                    (Some(b'*'), Some(b'/')) => {
                        depth -= 1;
                        j += 2;
                    }
                    (Some(b'/'), Some(b'*')) => {
                        depth += 1;
                        j += 2;
                    }
                    _ => j += 1,
                }
            }
            i = j;
            continue;
        }
        if c == b'\'' || c == b'"' || c == b'`' {
            let mut j = i + 1;
            loop {
                match b.get(j) {
                    None => return Err("unterminated literal"),
                    Some(b'\\') if c == b'\'' => j += 2,
                    Some(&x) if x == c => {
                        if b.get(j + 1) == Some(&c) {
                            j += 2;
                        } else {
                            break;
                        }
                    }
                    _ => j += 1,
                }
            }
            let inner = sql.get(i + 1..j).unwrap_or("");
            cur.push(if c == b'\'' {
                Tok::Str(inner)
            } else {
                Tok::Word(inner)
            });
            i = j + 1;
            continue;
        }
        if c == b'$' {
            // Dollar quoting: $tag$ … $tag$.
            if let Some(t) = b[i + 1..].iter().position(|&x| x == b'$') {
                let tag = &sql[i..i + t + 2];
                if tag[1..tag.len() - 1]
                    .bytes()
                    .all(|x| x.is_ascii_alphanumeric() || x == b'_')
                {
                    let body = i + t + 2;
                    let end = sql[body..]
                        .find(tag)
                        .ok_or("unterminated dollar-quoted string")?;
                    cur.push(Tok::Str(&sql[body..body + end]));
                    i = body + end + tag.len();
                    continue;
                }
            }
        }
        if c == b';' {
            if !cur.is_empty() {
                statements.push(std::mem::take(&mut cur));
            }
            i += 1;
            continue;
        }
        if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            let start = i;
            while i < b.len()
                && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.' || b[i] >= 0x80)
            {
                i += 1;
            }
            let w = &sql[start..i];
            cur.push(if w.bytes().all(|x| x.is_ascii_digit() || x == b'.') {
                Tok::Num(w)
            } else {
                Tok::Word(w)
            });
            continue;
        }
        if !c.is_ascii_whitespace() {
            cur.push(Tok::Punct(c));
        }
        i += 1;
    }
    if !cur.is_empty() {
        statements.push(cur);
    }
    Ok(statements)
}

fn has(tokens: &[Tok<'_>], word: &str) -> bool {
    tokens.iter().any(|t| t.is(word))
}

/// Whether a WHERE clause is missing or always true (`1=1`, `TRUE`, `'a'='a'`, `… OR 1=1`).
fn where_is_vacuous(tokens: &[Tok<'_>]) -> bool {
    let Some(w) = tokens.iter().position(|t| t.is("WHERE")) else {
        return true;
    };
    let cond: Vec<Tok<'_>> = tokens[w + 1..]
        .iter()
        .copied()
        .take_while(|t| !t.is("RETURNING") && !t.is("LIMIT") && !t.is("ORDER"))
        .collect();
    if cond.is_empty() {
        return true;
    }
    let tautology = |c: &[Tok<'_>]| match c {
        [t] => {
            t.is("TRUE") || matches!(t, Tok::Num(n) if n.bytes().any(|d| d != b'0' && d != b'.'))
        }
        [n, f] => n.is("NOT") && f.is("FALSE"),
        [a, Tok::Punct(b'='), b] => a.same(b),
        _ => false,
    };
    // `… OR <tautology>` makes the whole condition true.
    cond.split(|t| t.is("OR"))
        .any(|part| part.is_empty() || tautology(part))
}

/// Analyses SQL text.
///
/// ```
/// use bulwark_engine::analysis::sql::analyse;
/// let f = analyse("/* tidy */ drop   DATABASE prod");
/// assert!(f.predicates.contains(&"sql.drop_database"));
/// ```
pub fn analyse(sql: &str) -> Facts {
    let mut facts = Facts::default();
    if sql.len() > MAX_SQL_BYTES {
        facts.add("sql.unparsable");
        return facts;
    }
    let statements = match tokenize(sql) {
        Ok(s) => s,
        Err(_) => {
            facts.add("sql.unparsable");
            return facts;
        }
    };
    if statements.len() > 1 {
        facts.add("sql.multi_statement");
    }
    for st in &statements {
        classify(st, &mut facts);
    }
    facts
}

fn classify(st: &[Tok<'_>], facts: &mut Facts) {
    // Skip a leading WITH … AS ( … ) block to the statement proper.
    let mut start = 0;
    if st.first().is_some_and(|t| t.is("WITH")) {
        let mut depth = 0i32;
        for (i, t) in st.iter().enumerate() {
            match t {
                Tok::Punct(b'(') => depth += 1,
                Tok::Punct(b')') => depth -= 1,
                t if depth == 0
                    && i > 0
                    && ["SELECT", "INSERT", "UPDATE", "DELETE", "MERGE"]
                        .iter()
                        .any(|k| t.is(k)) =>
                {
                    start = i;
                    break;
                }
                _ => {}
            }
        }
    }
    let st = &st[start..];
    let first = match st.first() {
        Some(Tok::Word(w)) if w.len() <= 16 => w.to_ascii_uppercase(),
        _ => String::new(),
    };
    match first.as_str() {
        "SELECT" | "SHOW" | "EXPLAIN" | "DESCRIBE" | "DESC" | "VALUES" | "TABLE" | "PRAGMA"
        | "USE" | "BEGIN" | "COMMIT" | "ROLLBACK" | "START" | "SAVEPOINT" | "RELEASE" | "WITH" => {
            facts.capabilities.insert(Capability::DbRead);
            if has(st, "INTO") && (has(st, "OUTFILE") || has(st, "DUMPFILE")) {
                facts.capabilities.insert(Capability::DbAdmin);
                facts.add("sql.file_access");
            }
            if [
                "PG_READ_FILE",
                "PG_READ_BINARY_FILE",
                "LO_IMPORT",
                "LO_EXPORT",
                "LOAD_FILE",
                "PG_LS_DIR",
            ]
            .iter()
            .any(|f| has(st, f))
            {
                facts.add("sql.file_access");
            }
        }
        "INSERT" | "REPLACE" | "MERGE" | "UPSERT" | "CALL" | "EXEC" | "EXECUTE" | "DO" | "LOCK" => {
            facts.capabilities.insert(Capability::DbWrite)
        }
        "UPDATE" => {
            facts.capabilities.insert(Capability::DbWrite);
            if where_is_vacuous(st) {
                facts.add("sql.update_without_where");
            }
        }
        "DELETE" => {
            facts.capabilities.insert(Capability::DbWrite);
            if where_is_vacuous(st) {
                facts.add("sql.delete_without_where");
            }
        }
        "COPY" => {
            facts.capabilities.insert(Capability::DbWrite);
            if has(st, "PROGRAM")
                || st
                    .windows(2)
                    .any(|w| (w[0].is("TO") || w[0].is("FROM")) && matches!(w[1], Tok::Str(_)))
            {
                facts.capabilities.insert(Capability::DbAdmin);
                facts.add("sql.file_access");
            }
        }
        "LOAD" => {
            facts.capabilities.insert(Capability::DbAdmin);
            facts.add("sql.file_access");
        }
        "DROP" => {
            facts.capabilities.insert(Capability::DbAdmin);
            facts.add("sql.drop");
            if st
                .get(1)
                .is_some_and(|t| t.is("DATABASE") || t.is("SCHEMA"))
            {
                facts.add("sql.drop_database");
            }
        }
        "TRUNCATE" => {
            facts.capabilities.insert(Capability::DbAdmin);
            facts.add("sql.truncate");
        }
        "ALTER" => {
            facts.capabilities.insert(Capability::DbAdmin);
            if has(st, "DROP") {
                facts.add("sql.alter_drop");
            }
        }
        "GRANT" | "REVOKE" => {
            facts.capabilities.insert(Capability::DbAdmin);
            if has(st, "ALL") {
                facts.add("sql.grant_all");
            }
        }
        "" => {}
        _ => facts.capabilities.insert(Capability::DbAdmin),
    }
}

/// Whether `text` reads as SQL (for tools whose `query` argument might be a search query).
pub fn looks_like_sql(text: &str) -> bool {
    let Ok(st) = tokenize(text) else { return false };
    st.first().and_then(|s| s.first()).is_some_and(|w| {
        let Tok::Word(w) = w else { return false };
        matches!(
            w.to_ascii_uppercase().as_str(),
            "SELECT"
                | "INSERT"
                | "UPDATE"
                | "DELETE"
                | "DROP"
                | "CREATE"
                | "ALTER"
                | "TRUNCATE"
                | "GRANT"
                | "REVOKE"
                | "WITH"
                | "MERGE"
                | "REPLACE"
                | "COPY"
                | "SHOW"
                | "EXPLAIN"
                | "DESCRIBE"
                | "PRAGMA"
                | "VACUUM"
                | "CALL"
                | "LOAD"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preds(s: &str) -> Vec<&'static str> {
        analyse(s).predicates
    }

    #[test]
    fn destructive_shapes() {
        assert!(preds("DROP DATABASE prod").contains(&"sql.drop_database"));
        assert!(preds("drop schema public cascade").contains(&"sql.drop_database"));
        assert!(preds("DROP TABLE users").contains(&"sql.drop"));
        assert!(!preds("DROP TABLE users").contains(&"sql.drop_database"));
        assert!(preds("truncate table t").contains(&"sql.truncate"));
        assert!(preds("DELETE FROM users").contains(&"sql.delete_without_where"));
        assert!(preds("DELETE FROM users WHERE 1=1").contains(&"sql.delete_without_where"));
        assert!(
            preds("DELETE FROM users WHERE id = 7 OR 1 = 1").contains(&"sql.delete_without_where")
        );
        assert!(preds("delete from users where true").contains(&"sql.delete_without_where"));
        assert!(!preds("DELETE FROM users WHERE id = 7").contains(&"sql.delete_without_where"));
        assert!(preds("UPDATE users SET admin = true").contains(&"sql.update_without_where"));
        assert!(
            !preds("UPDATE users SET admin = true WHERE id = 7")
                .contains(&"sql.update_without_where")
        );
        assert!(preds("GRANT ALL ON db.* TO 'x'").contains(&"sql.grant_all"));
        assert!(preds("ALTER TABLE t DROP COLUMN c").contains(&"sql.alter_drop"));
        assert!(preds("COPY t TO PROGRAM 'curl x'").contains(&"sql.file_access"));
        assert!(preds("LOAD DATA INFILE '/etc/passwd' INTO TABLE t").contains(&"sql.file_access"));
        assert!(preds("SELECT * FROM t INTO OUTFILE '/tmp/x'").contains(&"sql.file_access"));
    }

    #[test]
    fn comments_and_literals_do_not_fake_or_hide() {
        assert!(preds("SELECT 'DROP DATABASE x'").is_empty());
        assert!(preds("SELECT 1 -- ; DROP DATABASE x").is_empty());
        assert!(preds("/* x */ DROP/**/DATABASE x").contains(&"sql.drop_database"));
        let f = analyse("SELECT 1; DROP TABLE t");
        assert!(
            f.predicates.contains(&"sql.multi_statement") && f.predicates.contains(&"sql.drop")
        );
        assert!(preds("SELECT 'unterminated").contains(&"sql.unparsable"));
        assert!(preds("SELECT $$ ; DROP TABLE t $$").is_empty());
    }

    #[test]
    fn classes() {
        assert_eq!(analyse("select 1").capabilities.names(), vec!["db.read"]);
        assert_eq!(
            analyse("INSERT INTO t VALUES (1)").capabilities.names(),
            vec!["db.write"]
        );
        assert_eq!(
            analyse("CREATE TABLE t (x int)").capabilities.names(),
            vec!["db.admin"]
        );
        assert_eq!(
            analyse("WITH d AS (SELECT 1) DELETE FROM t").predicates,
            vec!["sql.delete_without_where"]
        );
        assert!(looks_like_sql("  select * from x"));
        assert!(!looks_like_sql("best pizza in town"));
    }
}
