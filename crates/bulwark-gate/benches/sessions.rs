//! Two sessions on two cores: does the gate let them decide at the same time?
//!
//! A load harness (not criterion: the figure is a throughput ratio between thread counts).
//! Each thread decides calls of its own session as fast as it can for one round; a round
//! with one thread gives one session's throughput, a round with two threads (two
//! sessions, in different shards) the pair's. The same rounds run against the engine's old
//! shape — one `Mutex` around the engine's whole state, held for each decision — as the
//! baseline, alternating with the gate's rounds so machine noise hits both alike. Medians
//! over the rounds; the ratio is two threads' calls per second over one thread's.
//!
//! ```sh
//! cargo bench -p bulwark-gate --bench sessions            # 7 rounds of 1 s per shape
//! ROUNDS=11 ROUND_MS=2000 cargo bench -p bulwark-gate --bench sessions
//! # instructions per call of one shape (0: gate, 1: one lock), set-up subtracted:
//! SHAPE=0 CALLS=4000 valgrind --tool=callgrind target/release/deps/sessions-*
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use bulwark_engine::{Call, Engine, Now, State};
use bulwark_gate::{Gate, MemoryStore, Person};
use serde_json::json;

/// The default policy with the session's rate limit lifted: one session makes every call
/// here, as one busy agent would.
const POLICY: &str = "version: 1\nrate:\n  session: { calls: 0, network: 0, actuate: 0 }\n";

/// The `n`th call of a session: a shell command and a 1 KB SQL query by turns.
fn call(session: &str, n: u64) -> Call {
    if n.is_multiple_of(2) {
        Call::request(
            session,
            "bash",
            json!({"command": format!("git status --porcelain && ls -la src/m{n} | head -20")}),
        )
    } else {
        let ids: Vec<String> = (0..120).map(|i| (n * 1000 + i).to_string()).collect();
        Call::request(
            session,
            "execute_sql",
            json!({"sql": format!(
                "SELECT o.id, o.total, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id IN ({}) ORDER BY o.id",
                ids.join(", ")
            )}),
        )
    }
}

/// One shape under test: decides a call of `session`.
trait Decider: Send + Sync {
    fn decide(&self, call: &Call, now_ms: u64);
}

struct OnGate(Gate);

impl Decider for OnGate {
    fn decide(&self, call: &Call, _now_ms: u64) {
        black_box(self.0.call(call).person(Person::Caller).decide());
    }
}

/// The engine's old shape: one lock around the whole state, held for each decision.
struct OneLock {
    engine: Engine,
    state: Mutex<State>,
}

impl Decider for OneLock {
    fn decide(&self, call: &Call, now_ms: u64) {
        let mut state = self.state.lock().unwrap();
        black_box(self.engine.evaluate(call, &mut state, Now::at(now_ms)));
    }
}

/// Calls per second decided by `threads` threads, one session each, for `round`.
fn round(d: &Arc<dyn Decider>, sessions: &[String], threads: usize, round: Duration) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(threads + 1));
    let epoch = Instant::now();
    let handles: Vec<_> = sessions[..threads]
        .iter()
        .cloned()
        .map(|s| {
            let (d, stop, start) = (Arc::clone(d), Arc::clone(&stop), Arc::clone(&start));
            std::thread::spawn(move || {
                let mut n = 0u64;
                // Built ahead, so only the decision is timed. Sixty-four distinct calls in
                // turn: each comes back after the loop guard's 32-call memory has let it go.
                let calls: Vec<Call> = (0..64).map(|i| call(&s, i)).collect();
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    d.decide(
                        &calls[(n % 64) as usize],
                        epoch.elapsed().as_millis() as u64,
                    );
                    n += 1;
                }
                n
            })
        })
        .collect();
    start.wait();
    let t0 = Instant::now();
    std::thread::sleep(round);
    stop.store(true, Ordering::Relaxed);
    let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    total as f64 / t0.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let rounds = env("ROUNDS", 7) as usize;
    let length = Duration::from_millis(env("ROUND_MS", 1000));
    let policy = || bulwark_policy::load_str("bench.yaml", POLICY).unwrap();

    let gate = Gate::new(policy(), "bench");
    gate.warm_up();
    // Two sessions the in-process store keeps in different shards.
    let store = MemoryStore::new(&policy());
    let first = "session-a".to_string();
    let second = (0..)
        .map(|i| format!("session-b{i}"))
        .find(|s| store.shard_of(s) != store.shard_of(&first))
        .unwrap();
    let gate = gate.with_store(Arc::new(store));
    let sessions = [first, second];
    let shapes: [(&str, Arc<dyn Decider>); 2] = [
        ("gate (sharded store)", Arc::new(OnGate(gate))),
        (
            "one lock (the old Mutex<State>)",
            Arc::new(OneLock {
                engine: Engine::new(policy()),
                state: Mutex::new(State::new(&policy())),
            }),
        ),
    ];
    // `SHAPE=i CALLS=n`: decide n calls of shape i on this thread and stop, for counting
    // instructions per call under callgrind (run twice with different n and subtract: the
    // set-up cancels out), which the machine's other load cannot disturb.
    if let (Ok(shape), Ok(calls)) = (std::env::var("SHAPE"), std::env::var("CALLS")) {
        let (_, d) = &shapes[shape.parse::<usize>().unwrap()];
        let calls: u64 = calls.parse().unwrap();
        let list: Vec<Call> = (0..64).map(|i| call(&sessions[0], i)).collect();
        for n in 0..calls {
            d.decide(&list[(n % 64) as usize], n);
        }
        return;
    }
    let mut results = vec![(Vec::new(), Vec::new()); shapes.len()];
    for _ in 0..rounds {
        for (i, (_, d)) in shapes.iter().enumerate() {
            results[i].0.push(round(d, &sessions, 1, length));
            results[i].1.push(round(d, &sessions, 2, length));
        }
    }
    println!(
        "{rounds} rounds of {} ms per shape and thread count, medians:\n",
        length.as_millis()
    );
    println!("| shape | 1 session, calls/s | 2 sessions on 2 threads, calls/s | ratio |");
    println!("|---|---:|---:|---:|");
    for ((name, _), (one, two)) in shapes.iter().zip(results) {
        let (one, two) = (median(one), median(two));
        println!("| {name} | {one:.0} | {two:.0} | {:.2}× |", two / one);
    }
}
