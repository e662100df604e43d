//! Load harness for `bulwark proxy`: the latency it adds per request (JSON) and to the
//! first streamed byte (SSE), against the same upstream reached directly, in one run.
//!
//! The upstream is an in-process HTTP server answering like the real APIs (a Chat
//! Completions answer, and the same as a stream of chunks); the proxy runs in-process on
//! its own runtime, exactly as `bulwark proxy` serves it; one client thread sends requests
//! one at a time, alternating direct and proxied, so both see the same machine noise.
//! Run: `cargo bench -p bulwark-llm --bench proxy_load` (ITER=N to change the count).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::header;
use axum::response::Response;
use bulwark_engine::Policy;
use bulwark_gate::Gate;
use bulwark_llm::{Config, Proxy};
use futures_util::StreamExt;
use serde_json::{Value, json};

fn answer() -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1764500000, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant",
            "content": "Here is a summary of the file: it defines two functions and a test.",
            "refusal": null}, "logprobs": null, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 18, "total_tokens": 138},
    })
}

fn with_call() -> Value {
    let mut a = answer();
    a["choices"][0]["message"]["tool_calls"] = json!([{"id": "call_1", "type": "function",
        "function": {"name": "bash", "arguments": "{\"command\":\"git status --short\"}"}}]);
    a["choices"][0]["finish_reason"] = json!("tool_calls");
    a
}

fn sse() -> String {
    let mut out = String::new();
    for i in 0..20 {
        let chunk = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
            "model": "m", "choices": [{"index": 0, "delta": {"content": format!("word{i} ")},
            "finish_reason": null}]});
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    out
}

async fn upstream(req: axum::extract::Request) -> Response {
    let body = axum::body::to_bytes(req.into_body(), 1 << 24)
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&body).unwrap();
    if v["stream"] == true {
        return Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(Body::from(sse()))
            .unwrap();
    }
    let a = if v["model"] == "call" {
        with_call()
    } else {
        answer()
    };
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(a.to_string()))
        .unwrap()
}

/// A request of about 2 KB: a system prompt, a few turns, and for `tainted` a tool result
/// holding a private key.
fn request(model: &str, stream: bool, tainted: bool, results: usize) -> Vec<u8> {
    let mut messages = vec![
        json!({"role": "system", "content": "You are a careful coding assistant. ".repeat(20)}),
        json!({"role": "user", "content": "Summarise src/lib.rs for me, please."}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "h1", "type": "function",
            "function": {"name": "read_file", "arguments": "{\"path\":\"src/lib.rs\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "h1", "content": "pub fn add(a: i32, b: i32) -> i32 { a + b }\n".repeat(20)}),
    ];
    // A long session: many earlier tool calls, each with a 4 KB result.
    for i in 0..results {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("r{i}"), "type": "function",
            "function": {"name": "read_file", "arguments": format!("{{\"path\":\"src/m{i}.rs\"}}")}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("r{i}"),
            "content": format!("// module {i}\n{}", "fn f(x: u32) -> u32 { x * 2 + 1 }\n".repeat(120))}));
    }
    if tainted {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": "h2", "type": "function",
            "function": {"name": "bash", "arguments": "{\"command\":\"cat ~/.ssh/id_rsa\"}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": "h2", "content": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"}));
    }
    json!({"model": model, "stream": stream, "messages": messages})
        .to_string()
        .into_bytes()
}

fn pct(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 * q) as usize).min(v.len() - 1)]
}

/// Where a long history's time goes, in-process: parsing, pairing, and the cache's keys.
fn breakdown() {
    let raw = request("call", false, false, 50);
    let time = |f: &mut dyn FnMut()| {
        let mut v: Vec<f64> = (0..200)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        pct(&mut v, 0.5)
    };
    let body: Value = serde_json::from_slice(&raw).unwrap();
    let parse = time(&mut || {
        let _: Value = serde_json::from_slice(&raw).unwrap();
    });
    let pair = time(&mut || {
        let _ = bulwark_llm::Api::Chat.results(&body).unwrap();
    });
    let results = bulwark_llm::Api::Chat.results(&body).unwrap();
    let engine = Arc::new(Gate::new(Policy::builtin().unwrap(), "proxy"));
    let cache = Arc::new(bulwark_llm::judge::ResultCache::default());
    let judge = || {
        bulwark_llm::judge::Judge::new(
            Arc::clone(&engine),
            bulwark_llm::judge::Context {
                cache: Some(Arc::clone(&cache)),
                ..bulwark_llm::judge::Context::default()
            },
        )
    };
    judge().absorb(&results);
    let warm = time(&mut || {
        judge().absorb(&results);
    });
    println!(
        "{} KB request, 50 results: parse {parse:.0} µs, pair {pair:.0} µs, absorb (remembered) {warm:.0} µs",
        raw.len() / 1024
    );
}

fn main() {
    if std::env::var_os("BREAKDOWN").is_some() {
        return breakdown();
    }
    let iters: usize = std::env::var("ITER")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let servers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (up, px) = servers.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let up = l.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(l, axum::Router::new().fallback(upstream))
                .await
                .unwrap();
        });
        let engine = Arc::new(Gate::new(Policy::builtin().unwrap(), "proxy"));
        engine.warm_up();
        let proxy = Proxy::new(
            engine,
            Config {
                upstream: format!("http://{up}").parse().unwrap(),
                max_body: 1 << 24,
                upstream_key: None,
                approval_key: Some([1; 32]),
                allowed_hosts: None,
                provenance: false,
            },
        )
        .unwrap();
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let px = l.local_addr().unwrap();
        tokio::spawn(async move {
            Arc::new(proxy)
                .serve(l, std::future::pending())
                .await
                .unwrap();
        });
        (up, px)
    });
    let client_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    client_rt.block_on(async move {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        // (name, model, stream, tainted, earlier results)
        let cases = [
            ("json, untainted", "plain", false, false, 0),
            ("json, untainted, a tool call judged", "call", false, false, 0),
            ("json, tainted (hint added, call judged)", "call", false, true, 0),
            ("stream, untainted: first byte", "plain", true, false, 0),
            ("json, untainted, 50 earlier results of 4 KB (remembered)", "call", false, false, 50),
        ];
        println!("| case | direct p50 | direct p99 | proxy p50 | proxy p99 | added p50 | added p99 |");
        println!("|---|---|---|---|---|---|---|");
        for (name, model, stream, tainted, results) in cases {
            let body = request(model, stream, tainted, results);
            let mut direct = Vec::with_capacity(iters);
            let mut proxied = Vec::with_capacity(iters);
            for i in 0..iters + 200 {
                for (addr, out) in [(up, &mut direct), (px, &mut proxied)] {
                    let t = Instant::now();
                    let resp = client
                        .post(format!("http://{addr}/v1/chat/completions"))
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                        .await
                        .unwrap();
                    assert!(resp.status().is_success());
                    let mut s = resp.bytes_stream();
                    // Time to the first byte of the body (a stream) or to the whole body.
                    let first = s.next().await.unwrap().unwrap();
                    let elapsed = t.elapsed();
                    assert!(!first.is_empty());
                    while let Some(c) = s.next().await {
                        c.unwrap();
                    }
                    if i >= 200 {
                        out.push(elapsed.as_secs_f64() * 1e6);
                    }
                }
            }
            let (d50, d99) = (pct(&mut direct, 0.5), pct(&mut direct, 0.99));
            let (p50, p99) = (pct(&mut proxied, 0.5), pct(&mut proxied, 0.99));
            println!(
                "| {name} | {d50:.0} µs | {d99:.0} µs | {p50:.0} µs | {p99:.0} µs | {:.0} µs | {:.0} µs |",
                p50 - d50,
                p99 - d99
            );
        }
    });
    drop(servers);
    // The first read of a long history, before the proxy remembers its results: the
    // engine's pass over each of 50 results of 4 KB, no HTTP.
    let body: Value = serde_json::from_slice(&request("call", false, false, 50)).unwrap();
    let results = bulwark_llm::Api::Chat.results(&body).unwrap();
    let engine = Arc::new(Gate::new(Policy::builtin().unwrap(), "proxy"));
    let mut cold = Vec::new();
    for _ in 0..60 {
        let mut j = bulwark_llm::judge::Judge::new(
            Arc::clone(&engine),
            bulwark_llm::judge::Context {
                ..bulwark_llm::judge::Context::default()
            },
        );
        let t = Instant::now();
        j.absorb(&results);
        cold.push(t.elapsed().as_secs_f64() * 1e6);
    }
    println!(
        "\nfirst read of 50 results of 4 KB (no cache): p50 {:.0} µs, p99 {:.0} µs",
        pct(&mut cold, 0.5),
        pct(&mut cold, 0.99)
    );
    let _ = Duration::from_secs(0);
}
