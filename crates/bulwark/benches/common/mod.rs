//! What the MCP load harnesses share: the upstream's one tool, `echo`, the gateway's
//! state directory and policy, and how a run is measured (percentiles, a process's resident
//! memory), and the schedule an open-loop run keeps.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Sleeps until call `i` of a schedule of `rate` calls per second from `start` is due, and
/// returns when that was, for a harness that counts latency from the schedule (so that a
/// send delayed by a busy path counts against that path).
pub fn wait_due(start: Instant, i: u64, rate: u64) -> Instant {
    let due = start + Duration::from_secs_f64(i as f64 / rate as f64);
    let now = Instant::now();
    if due > now {
        std::thread::sleep(due - now);
    }
    due
}

/// The result an echo MCP server gives for request `msg`.
pub fn echo_result(msg: &Value) -> Value {
    match msg["method"].as_str() {
        Some("initialize") => json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo", "version": "1"},
        }),
        Some("tools/list") => json!({"tools": [{
            "name": "echo",
            "description": "Echo the message back.",
            "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
        }]}),
        Some("tools/call") => json!({"content": [{
            "type": "text",
            "text": msg.pointer("/params/arguments/message").and_then(Value::as_str).unwrap_or(""),
        }]}),
        _ => json!({}),
    }
}

/// A scratch state directory, and in it the default policy with its per-session rate limit
/// lifted: one session makes every call of a load run, thousands a second, where the
/// default allows 60 a minute.
pub fn state_and_policy(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let state = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&state).unwrap();
    let limited = "  session: { calls: 60, network: 30, actuate: 10, per_secs: 60 }";
    assert!(bulwark_policy::DEFAULT_POLICY.contains(limited));
    let policy = state.join("policy.yaml");
    std::fs::write(
        &policy,
        bulwark_policy::DEFAULT_POLICY.replace(
            limited,
            "  session: { calls: 1000000, network: 1000000, actuate: 10, per_secs: 1 }",
        ),
    )
    .unwrap();
    (state, policy)
}

/// The `q` quantile of `v` (sorted in place).
pub fn pct(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 * q) as usize).min(v.len() - 1)]
}

/// Resident memory of process `pid`, in MB.
pub fn rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}
