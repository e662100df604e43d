//! The calls the engine benches run: a short shell command, a 1 KB SQL statement, a URL
//! fetch and a 10 KB tool result (as one content item, and as four, which are also read
//! joined), each spread over 1000 sessions so rate limits and the
//! loop guard stay out of the way (as they would for real traffic).
#![allow(clippy::unwrap_used, dead_code)]

use bulwark_engine::Call;
use serde_json::{Value, json};

pub struct Workload {
    pub name: &'static str,
    /// The call as a front receives it (JSON text).
    pub line: String,
    /// The same call in 1000 sessions.
    pub calls: Vec<Call>,
}

fn spread(name: &'static str, make: impl Fn(String) -> Call, doc: Value) -> Workload {
    let calls = (0..1000).map(|i| make(format!("bench-{i}"))).collect();
    Workload {
        name,
        line: doc.to_string(),
        calls,
    }
}

pub fn all() -> Vec<Workload> {
    let shell = json!({"command": "git status --porcelain && ls -la src | head -20"});
    let mut sql_text = String::from(
        "SELECT o.id, o.total, c.name, c.email FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.created_at > '2026-01-01' AND o.status IN (",
    );
    while sql_text.len() < 1000 {
        sql_text.push_str("'shipped', 'paid', 'refunded', ");
    }
    sql_text.push_str("'open') ORDER BY o.created_at DESC LIMIT 100");
    let sql = json!({"sql": sql_text});
    let fetch =
        json!({"url": "https://api.github.com/repos/rust-lang/rust/issues?state=open&per_page=50"});
    let mut text = String::new();
    let mut n = 0;
    while text.len() < 10 * 1024 {
        text.push_str(&format!("Line {n}: the quick brown fox jumps over the lazy dog; build ok in 0.{n}s, see https://example.com/build/{n}.\n"));
        n += 1;
    }
    let result = json!({"content": [{"type": "text", "text": text}]});
    // The same text as four items: read each, and once more joined (issue 22).
    let quarter = text.len() / 4;
    let cut = |i: usize| {
        let mut at = (i * quarter).min(text.len());
        while !text.is_char_boundary(at) {
            at += 1;
        }
        at
    };
    let items: Vec<Value> = (0..4)
        .map(|i| json!({"type": "text", "text": &text[cut(i)..if i == 3 { text.len() } else { cut(i + 1) }]}))
        .collect();
    let result_items = json!({"content": items});
    vec![
        spread(
            "shell_short",
            |s| Call::request(s, "bash", shell.clone()),
            json!({"tool": "bash", "args": shell}),
        ),
        spread(
            "sql_1kb",
            |s| Call::request(s, "execute_sql", sql.clone()),
            json!({"tool": "execute_sql", "args": sql}),
        ),
        spread(
            "url_fetch",
            |s| Call::request(s, "fetch", fetch.clone()),
            json!({"tool": "fetch", "args": fetch}),
        ),
        spread(
            "result_10kb",
            |s| Call::response(s, "fetch", fetch.clone(), result.clone()),
            json!({"tool": "fetch", "result": result}),
        ),
        spread(
            "result_10kb_4_items",
            |s| Call::response(s, "fetch", fetch.clone(), result_items.clone()),
            json!({"tool": "fetch", "result": result_items}),
        ),
    ]
}
