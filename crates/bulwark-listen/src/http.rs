//! The HTTP/1 listener of the MCP and LLM fronts: one accept loop, every wait bounded.
//!
//! - places: [`crate::slots`] (per peer IP, idle connections give way, shorter idle time
//!   under pressure); a client refused a place gets `503` and the connection is closed;
//! - the request head: [`HttpLimits::header`] — first or between requests, so an idle
//!   keep-alive socket does not hold its place for long either;
//! - writes: an answer that makes no progress for [`HttpLimits::write`] closes the
//!   connection ([`Deadline`]), so answers nobody reads are not held;
//! - bodies: the fronts read them with their own timeouts, where they know the limit.
//!
//! A connection is busy from the request's head to the end of its answer's body, streams
//! included.

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use crate::slots::{Busy, Limits, Slot, Slots};

/// The listener's bounds.
#[derive(Clone, Debug)]
pub struct HttpLimits {
    /// Places.
    pub slots: Limits,
    /// A request head must arrive whole within this long.
    pub header: Duration,
    /// A write that makes no progress this long closes the connection.
    pub write: Duration,
    /// How long open connections get to finish after shutdown begins.
    pub drain: Duration,
}

impl HttpLimits {
    /// `max` connections ([`Limits::for_max`]), 30 s for a head, 30 s for a stalled write,
    /// 3 s to drain.
    pub fn for_max(max: usize) -> HttpLimits {
        HttpLimits {
            slots: Limits::for_max(max),
            header: Duration::from_secs(30),
            write: Duration::from_secs(30),
            drain: Duration::from_secs(3),
        }
    }
}

/// Serves `app` on `listener` until `shutdown` completes; `stopping` runs then (a front
/// ends its sessions there), and open connections get [`HttpLimits::drain`] to finish.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: HttpLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    stopping: impl FnOnce() + Send,
) {
    let slots: Arc<Slots<IpAddr>> = Slots::new(limits.slots.clone());
    let reaper = slots.spawn_reaper();
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        while connections.try_join_next().is_some() {}
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, addr) = match accepted {
                    Ok(a) => a,
                    Err(_) => {
                        // Out of descriptors and the like: wait a moment rather than spin.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                match slots.admit(peer_of(addr)) {
                    Ok(slot) => {
                        connections.spawn(connection(stream, slot, app.clone(), limits.clone(), stop_rx.clone()));
                    }
                    Err(why) => {
                        connections.spawn(refuse(stream, why.to_string(), limits.write));
                    }
                }
            }
            _ = &mut shutdown => break,
        }
    }
    stopping();
    let _ = stop.send(true);
    // A client that stops reading, or drips a body, does not hold the shutdown up.
    let _ = tokio::time::timeout(limits.drain, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    connections.abort_all();
    reaper.abort();
}

/// The peer a place is counted against: its address, with IPv4-mapped IPv6 as IPv4.
fn peer_of(addr: SocketAddr) -> IpAddr {
    match addr.ip() {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

async fn refuse(mut stream: TcpStream, why: String, write: Duration) {
    let body = format!("{{\"error\":{{\"message\":{why:?}}}}}");
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(write, stream.write_all(answer.as_bytes())).await;
}

async fn connection(
    stream: TcpStream,
    slot: Slot<IpAddr>,
    app: axum::Router,
    limits: HttpLimits,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let slot = Arc::new(slot);
    let tower = hyper_util::service::TowerToHyperService::new(app);
    let tracker = Arc::clone(&slot);
    let service = hyper::service::service_fn(move |req| {
        let busy = tracker.busy();
        let answer = hyper::service::Service::call(&tower, req);
        async move {
            let resp = answer.await?;
            Ok::<_, std::convert::Infallible>(resp.map(|inner| Tracked { inner, _busy: busy }))
        }
    });
    let io = Deadline::new(stream, limits.write);
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header)
        .serve_connection(hyper_util::rt::TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        // Its place is needed by a new client: it was idle, so there is nothing to finish.
        _ = slot.closed() => {}
        _ = stop.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// An answer's body, keeping its connection busy until it is written whole or dropped.
pub struct Tracked<B> {
    inner: B,
    _busy: Busy<IpAddr>,
}

impl<B: Body + Unpin> Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A stream whose writes fail when they make no progress for a while: a peer that stops
/// reading cannot keep an answer (and its memory) forever.
pub struct Deadline<S> {
    inner: S,
    write: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> Deadline<S> {
    /// `inner`, with writes stalled longer than `write` failing.
    pub fn new(inner: S, write: Duration) -> Deadline<S> {
        Deadline {
            inner,
            write,
            stalled: None,
        }
    }

    /// After a write came back pending: fails once the stall is older than the deadline.
    fn check(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Error> {
        let write = self.write;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(write)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the peer has not read for too long",
            )),
            Poll::Pending => Poll::Pending,
        }
    }
}

use std::future::Future;

impl<S: AsyncRead + Unpin> AsyncRead for Deadline<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Deadline<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, buf) {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => self.check(cx).map(Err),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match Pin::new(&mut self.inner).poll_flush(cx) {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => self.check(cx).map(Err),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write_vectored(cx, bufs) {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => self.check(cx).map(Err),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_write_nobody_reads_fails_after_the_deadline() {
        let (a, _b) = tokio::io::duplex(1024);
        let mut d = Deadline::new(a, Duration::from_millis(100));
        let t = std::time::Instant::now();
        let big = vec![0u8; 64 * 1024];
        let r = tokio::time::timeout(Duration::from_secs(5), d.write_all(&big))
            .await
            .unwrap();
        assert_eq!(r.unwrap_err().kind(), std::io::ErrorKind::TimedOut);
        assert!(t.elapsed() < Duration::from_secs(2));
    }

    #[tokio::test]
    async fn a_slow_reader_that_keeps_reading_is_not_cut_off() {
        let (a, mut b) = tokio::io::duplex(1024);
        let mut d = Deadline::new(a, Duration::from_millis(200));
        let reader = tokio::spawn(async move {
            let mut total = 0;
            let mut buf = [0u8; 512];
            while total < 16 * 1024 {
                tokio::time::sleep(Duration::from_millis(10)).await;
                total += b.read(&mut buf).await.unwrap();
            }
        });
        d.write_all(&vec![1u8; 16 * 1024]).await.unwrap();
        reader.await.unwrap();
    }

    #[test]
    fn mapped_addresses_count_as_their_ipv4_peer() {
        let v6: SocketAddr = "[::ffff:10.0.0.1]:5".parse().unwrap();
        assert_eq!(peer_of(v6), "10.0.0.1".parse::<IpAddr>().unwrap());
    }
}
