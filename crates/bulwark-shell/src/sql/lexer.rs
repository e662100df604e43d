//! The fallback reading of SQL: a lexer that splits statements, drops comments and
//! literals, and names destructive shapes by keyword. Used when no dialect parses the
//! text (the result is still `sql.unparsable`), and for server-side file functions.

use crate::model::{Cap, Caps};

/// What the keywords show.
#[derive(Clone, Debug, Default)]
pub(crate) struct Facts {
    pub caps: Caps,
    pub predicates: Vec<&'static str>,
    pub statements: usize,
}

impl Facts {
    fn add(&mut self, p: &'static str) {
        if !self.predicates.contains(&p) {
            self.predicates.push(p);
        }
    }
}

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

/// Reads SQL by keywords alone: what it can tell when the parser could not.
pub(crate) fn analyse(sql: &str) -> Result<Facts, &'static str> {
    let mut facts = Facts::default();
    let statements = tokenize(sql)?;
    facts.statements = statements.len();
    for st in &statements {
        classify(st, &mut facts);
    }
    Ok(facts)
}

/// Whether the text is one plain read: a single `SELECT`/`SHOW`/`EXPLAIN`/`VALUES`/`WITH`
/// statement with balanced parentheses and no word anywhere (outside literals and comments)
/// that could write, change structure, reach files or run something. Returns its first
/// keyword.
pub(crate) fn plain_read(sql: &str) -> Option<&'static str> {
    const FIRST: &[&str] = &[
        "SELECT", "SHOW", "EXPLAIN", "DESCRIBE", "DESC", "VALUES", "WITH",
    ];
    let statements = tokenize(sql).ok()?;
    let [st] = statements.as_slice() else {
        return None;
    };
    let first = FIRST.iter().find(|k| st.first().is_some_and(|t| t.is(k)))?;
    let mut depth = 0i32;
    for t in st {
        match t {
            Tok::Punct(b'(') => depth += 1,
            Tok::Punct(b')') => depth -= 1,
            Tok::Word(w) if risky(w) => return None,
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    (depth == 0).then_some(*first)
}

/// Words that could write, change structure, reach files or run something.
fn risky(word: &str) -> bool {
    // Upper-cased into a small buffer once, then one `match`: plain reads of a kilobyte
    // hold hundreds of words, and this runs on each.
    let b = word.as_bytes();
    if b.len() > 24 || b.len() < 2 {
        return false;
    }
    let mut buf = [0u8; 24];
    for (d, s) in buf.iter_mut().zip(b) {
        *d = s.to_ascii_uppercase();
    }
    matches!(
        &buf[..b.len()],
        b"INTO"
            | b"DELETE"
            | b"UPDATE"
            | b"INSERT"
            | b"MERGE"
            | b"UPSERT"
            | b"REPLACE"
            | b"DROP"
            | b"TRUNCATE"
            | b"ALTER"
            | b"GRANT"
            | b"REVOKE"
            | b"COPY"
            | b"CREATE"
            | b"CALL"
            | b"EXEC"
            | b"EXECUTE"
            | b"DO"
            | b"LOAD"
            | b"LOCK"
            | b"SET"
            | b"OUTFILE"
            | b"DUMPFILE"
            | b"PROGRAM"
            | b"ATTACH"
            | b"DETACH"
            | b"PRAGMA"
            | b"VACUUM"
            | b"ANALYZE"
            | b"COMMENT"
            | b"RENAME"
            | b"KILL"
            | b"SHUTDOWN"
            | b"HANDLER"
            | b"PREPARE"
            | b"DEALLOCATE"
            | b"PG_READ_FILE"
            | b"PG_READ_BINARY_FILE"
            | b"LO_IMPORT"
            | b"LO_EXPORT"
            | b"LOAD_FILE"
            | b"PG_LS_DIR"
            | b"LOAD_EXTENSION"
            | b"DBLINK"
            | b"DBLINK_EXEC"
            | b"XP_CMDSHELL"
    )
}

/// Whether a statement calls a function that reads or writes the server's files.
pub(crate) fn touches_files(sql: &str) -> bool {
    let Ok(statements) = tokenize(sql) else {
        return false;
    };
    statements.iter().any(|st| {
        FILE_FUNCTIONS.iter().any(|f| has(st, f))
            || has(st, "INTO") && (has(st, "OUTFILE") || has(st, "DUMPFILE"))
    })
}

const FILE_FUNCTIONS: &[&str] = &[
    "PG_READ_FILE",
    "PG_READ_BINARY_FILE",
    "LO_IMPORT",
    "LO_EXPORT",
    "LOAD_FILE",
    "PG_LS_DIR",
];

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
            facts.caps.insert(Cap::DbRead);
            if has(st, "INTO") && (has(st, "OUTFILE") || has(st, "DUMPFILE")) {
                facts.caps.insert(Cap::DbAdmin);
                facts.add("sql.file_access");
            }
            if FILE_FUNCTIONS.iter().any(|f| has(st, f)) {
                facts.add("sql.file_access");
            }
        }
        "INSERT" | "REPLACE" | "MERGE" | "UPSERT" | "CALL" | "EXEC" | "EXECUTE" | "DO" | "LOCK" => {
            facts.caps.insert(Cap::DbWrite)
        }
        "UPDATE" => {
            facts.caps.insert(Cap::DbWrite);
            if where_is_vacuous(st) {
                facts.add("sql.update_without_where");
            }
        }
        "DELETE" => {
            facts.caps.insert(Cap::DbWrite);
            if where_is_vacuous(st) {
                facts.add("sql.delete_without_where");
            }
        }
        "COPY" => {
            facts.caps.insert(Cap::DbWrite);
            if has(st, "PROGRAM")
                || st
                    .windows(2)
                    .any(|w| (w[0].is("TO") || w[0].is("FROM")) && matches!(w[1], Tok::Str(_)))
            {
                facts.caps.insert(Cap::DbAdmin);
                facts.add("sql.file_access");
            }
        }
        "LOAD" => {
            facts.caps.insert(Cap::DbAdmin);
            facts.add("sql.file_access");
        }
        "DROP" => {
            facts.caps.insert(Cap::DbAdmin);
            facts.add("sql.drop");
            if st
                .get(1)
                .is_some_and(|t| t.is("DATABASE") || t.is("SCHEMA"))
            {
                facts.add("sql.drop_database");
            }
        }
        "TRUNCATE" => {
            facts.caps.insert(Cap::DbAdmin);
            facts.add("sql.truncate");
        }
        "ALTER" => {
            facts.caps.insert(Cap::DbAdmin);
            if has(st, "DROP") {
                facts.add("sql.alter_drop");
            }
        }
        "GRANT" | "REVOKE" => {
            facts.caps.insert(Cap::DbAdmin);
            if has(st, "ALL") {
                facts.add("sql.grant_all");
            }
        }
        "" => {}
        _ => facts.caps.insert(Cap::DbAdmin),
    }
}

/// Whether `text` reads as SQL (for tools whose `query` argument might be a search query).
pub fn looks_like_sql(text: &str) -> bool {
    // Only the first word decides (once the whole text tokenizes). Most texts asked about
    // are prose whose first word says no, which is known without tokenizing the rest.
    let t = text.trim_start_matches(|c: char| c.is_ascii_whitespace());
    if t.bytes().next().is_some_and(starts_word) {
        let end = t.bytes().position(|x| !in_word(x)).unwrap_or(t.len());
        if !is_statement_keyword(&t[..end]) {
            return false;
        }
    }
    first_token_is_statement_keyword(text)
}

/// Whether the first statement has the structure its verb requires (`DELETE … FROM`,
/// `UPDATE … SET`, `DROP <object type>`, `GRANT … ON`, `INSERT INTO`, …), so text that
/// no dialect parses can be told from a sentence that opens with the same verb: "Update the
/// README" has no `SET`, "Grant access to the new hire" no `ON`, "delete" no `FROM`.
pub(crate) fn statement_shaped(text: &str) -> bool {
    const OBJECTS: &[&str] = &[
        "TABLE",
        "DATABASE",
        "SCHEMA",
        "VIEW",
        "INDEX",
        "FUNCTION",
        "PROCEDURE",
        "TRIGGER",
        "ROLE",
        "USER",
        "SEQUENCE",
        "TYPE",
        "EXTENSION",
        "MATERIALIZED",
        "TEMP",
        "TEMPORARY",
        "UNIQUE",
        "OR",
        "IF",
        "EVENT",
        "POLICY",
        "DOMAIN",
        "SERVER",
        "PUBLICATION",
        "SUBSCRIPTION",
        "LOGIN",
        "TABLESPACE",
        "OWNED",
        "RULE",
        "AGGREGATE",
        "OPERATOR",
        "COLUMN",
        "CONSTRAINT",
        "KEYSPACE",
        "GLOBAL",
        "LOCAL",
        "UNLOGGED",
        "VIRTUAL",
        "DEFINER",
        "ALGORITHM",
        "SQL",
        "CLUSTERED",
        "NONCLUSTERED",
        "FULLTEXT",
        "SPATIAL",
    ];
    let Ok(statements) = tokenize(text) else {
        return false;
    };
    let Some(st) = statements.first() else {
        return false;
    };
    let Some(verb) = st.first() else { return false };
    let next = |k: usize| st.get(k);
    let next_is = |k: usize, words: &[&str]| next(k).is_some_and(|t| words.iter().any(|w| t.is(w)));
    let punct = st
        .iter()
        .any(|t| matches!(t, Tok::Punct(b'*' | b'(' | b'=')));
    let verbs: [(&str, &dyn Fn() -> bool); 21] = [
        ("SELECT", &|| has(st, "FROM") || punct || st.len() <= 3),
        ("INSERT", &|| next_is(1, &["INTO", "IGNORE", "OVERWRITE"])),
        ("REPLACE", &|| next_is(1, &["INTO"])),
        ("MERGE", &|| next_is(1, &["INTO"])),
        // The table comes right after the verb (and its modifiers): `SET` and `FROM` further
        // on belong to a sentence ("delete old newsletters from bob").
        ("UPDATE", &|| st.iter().take(5).any(|t| t.is("SET"))),
        ("DELETE", &|| {
            st.iter()
                .skip(1)
                .find(|t| !(t.is("LOW_PRIORITY") || t.is("QUICK") || t.is("IGNORE")))
                .is_some_and(|t| t.is("FROM"))
        }),
        ("DROP", &|| next_is(1, OBJECTS)),
        ("CREATE", &|| next_is(1, OBJECTS)),
        ("ALTER", &|| next_is(1, OBJECTS)),
        ("TRUNCATE", &|| next_is(1, &["TABLE"]) || st.len() <= 3),
        ("GRANT", &|| has(st, "ON") || has(st, "TO") && st.len() <= 4),
        ("REVOKE", &|| {
            has(st, "ON") || has(st, "FROM") && st.len() <= 4
        }),
        ("WITH", &|| has(st, "AS") && punct),
        ("COPY", &|| {
            (has(st, "FROM") || has(st, "TO"))
                && st.iter().any(|t| {
                    t.is("STDIN") || t.is("STDOUT") || t.is("PROGRAM") || matches!(t, Tok::Str(_))
                })
        }),
        ("SHOW", &|| st.len() <= 3),
        ("EXPLAIN", &|| {
            next(1).is_some_and(|t| matches!(t, Tok::Word(w) if is_statement_keyword(w) || t.is("ANALYZE") || t.is("QUERY")))
        }),
        ("DESCRIBE", &|| st.len() <= 2),
        ("PRAGMA", &|| {
            st.len() <= 2 || matches!(next(2), Some(Tok::Punct(b'(' | b'=')))
        }),
        ("VACUUM", &|| st.len() <= 3),
        ("CALL", &|| matches!(next(2), Some(Tok::Punct(b'(')))),
        ("LOAD", &|| next_is(1, &["DATA", "EXTENSION"])),
    ];
    verbs
        .iter()
        .find(|(v, _)| verb.is(v))
        .is_some_and(|(_, shaped)| shaped())
}

fn starts_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

fn in_word(c: u8) -> bool {
    starts_word(c) || c == b'.'
}

fn first_token_is_statement_keyword(text: &str) -> bool {
    let Ok(st) = tokenize(text) else { return false };
    st.first().and_then(|s| s.first()).is_some_and(|w| {
        let Tok::Word(w) = w else { return false };
        is_statement_keyword(w)
    })
}

fn is_statement_keyword(w: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "SELECT", "INSERT", "UPDATE", "DELETE", "DROP", "CREATE", "ALTER", "TRUNCATE", "GRANT",
        "REVOKE", "WITH", "MERGE", "REPLACE", "COPY", "SHOW", "EXPLAIN", "DESCRIBE", "PRAGMA",
        "VACUUM", "CALL", "LOAD",
    ];
    KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_word_shortcut_answers_as_tokenizing_does() {
        let texts = [
            "",
            "   ",
            "SELECT 1",
            "  select * from t",
            "\n\tWITH x AS (SELECT 1) SELECT * FROM x",
            "with their authors, summarise the pull requests",
            "Summarise the open pull requests, with their authors",
            "DROP TABLE users; -- gone",
            "drop 'unterminated",
            "SELECTION of fruit",
            "select.x from t",
            "_select 1",
            "123 SELECT",
            "-- note\nSELECT 1",
            "/* c */ DELETE FROM t",
            "\"SELECT\" 1",
            "; SELECT 1",
            "(SELECT 1)",
            "ÉSELECT 1",
            "show tables",
            "Show me the money",
            "explain why",
            "copy the file to /tmp",
            "update: it's broken",
            "load it 'now",
        ];
        for t in texts {
            assert_eq!(
                looks_like_sql(t),
                first_token_is_statement_keyword(t),
                "{t:?}"
            );
        }
        assert!(
            !looks_like_sql("update: it's broken"),
            "unterminated literal"
        );
        assert!(looks_like_sql("Show me the money"));
        assert!(!looks_like_sql(
            "Summarise the open pull requests, with their authors"
        ));
    }

    #[test]
    fn statements_have_their_verbs_structure_and_sentences_do_not() {
        for sql in [
            "DELETE FROM users WHERE",
            "UPDATE users SET x = ",
            "DROP TABLE users garbage (",
            "drop database prod with (force) junk (",
            "GRANT ALL ON db TO",
            "INSERT INTO t VALUES (",
            "TRUNCATE TABLE t junk junk",
            "SELECT * FROM t WHERE (",
            "PRAGMA table_info(users)",
        ] {
            assert!(statement_shaped(sql), "{sql}");
        }
        for prose in [
            "Update the README",
            "Update changes",
            "delete",
            "delete old newsletters from bob",
            "Update the docs and then set the version",
            "Grant access to the new hire",
            "Drop the old branch after merging",
            "Create a new issue for the login bug",
            "Alter the tone of this paragraph",
            "Show me the latest invoices from last month",
            "Explain why the build failed",
            "Copy the file to the shared drive",
            "With love, from Oslo",
            "Call mom tomorrow",
            "Insert a picture here",
            "Replace the logo",
        ] {
            assert!(!statement_shaped(prose), "{prose}");
        }
    }
}
