//! Evaluates one call in a loop, for profilers (a development aid):
//! `cargo run --release -p bulwark-engine --example profile -- bash 'git status'`.
#![allow(clippy::unwrap_used, missing_docs)]
use bulwark_engine::{Call, Engine, Now, State};
fn main() {
    let mut args = std::env::args().skip(1);
    let tool = args.next().unwrap_or_else(|| "bash".into());
    let text = args
        .next()
        .unwrap_or_else(|| "git status --porcelain && ls -la src | head -20".into());
    let key = if tool == "execute_sql" {
        "sql"
    } else {
        "command"
    };
    let engine = Engine::new(bulwark_policy::Policy::builtin().unwrap());
    let mut state = State::new(engine.policy());
    let calls: Vec<Call> = (0..1000)
        .map(|i| Call::request(format!("s{i}"), &tool, serde_json::json!({ key: text })))
        .collect();
    let n = 200_000;
    let t = std::time::Instant::now();
    for i in 0..n {
        std::hint::black_box(engine.evaluate(
            &calls[i % 1000],
            &mut state,
            Now::at(i as u64 * 100),
        ));
    }
    println!("{:?} per call", t.elapsed() / n as u32);
}
