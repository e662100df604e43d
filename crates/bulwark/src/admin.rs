//! A front's admin listener: `GET /metrics` in the Prometheus text format, on loopback by
//! default. Deliberately tiny — one route, HTTP/1.1 without keep-alive — and bounded: a
//! request head larger than 8 KiB, one slower than 5 s, or more than 16 connections at once
//! are cut off.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result};
use bulwark_audit::AuditLog;
use bulwark_audit::metrics::Metrics;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

const MAX_HEAD: usize = 8 * 1024;

/// Binds the listener (warning when it is not loopback) and serves it in the background.
pub async fn serve(
    addr: &str,
    front: &'static str,
    metrics: Arc<Metrics>,
    audit: Option<Arc<AuditLog>>,
) -> Result<SocketAddr> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} for the admin endpoint"))?;
    let local = listener.local_addr()?;
    if !local.ip().is_loopback() {
        eprintln!(
            "bulwark {front}: warning: the admin endpoint listens on {local}, not loopback; anyone who can reach it can read the metrics"
        );
    }
    let slots = Arc::new(Semaphore::new(16));
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
                continue;
            };
            let metrics = Arc::clone(&metrics);
            let audit = audit.clone();
            tokio::spawn(async move {
                let _ = tokio::time::timeout(
                    Duration::from_secs(5),
                    answer(stream, &metrics, audit.as_deref()),
                )
                .await;
                drop(permit);
            });
        }
    });
    Ok(local)
}

async fn answer(mut stream: TcpStream, metrics: &Metrics, audit: Option<&AuditLog>) -> Result<()> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await?;
        if n == 0 || head.len() + n > MAX_HEAD {
            return Ok(());
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let line = head.split(|b| *b == b'\r').next().unwrap_or_default();
    let mut parts = line.split(|b| *b == b' ');
    let (method, path) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let (status, body, ctype) = match (method, path) {
        (b"GET", b"/metrics") => {
            if let Some(a) = audit {
                let (depth, dropped) = a.telemetry_queue();
                metrics.queue_depth.store(depth, Ordering::Relaxed);
                metrics.queue_dropped.store(dropped, Ordering::Relaxed);
            }
            (
                "200 OK",
                metrics.render(),
                "text/plain; version=0.0.4; charset=utf-8",
            )
        }
        (b"GET", _) => (
            "404 Not Found",
            "only /metrics is here\n".into(),
            "text/plain",
        ),
        _ => (
            "405 Method Not Allowed",
            "only GET /metrics is here\n".into(),
            "text/plain",
        ),
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(reply.as_bytes()).await?;
    stream.shutdown().await?;
    Ok(())
}
