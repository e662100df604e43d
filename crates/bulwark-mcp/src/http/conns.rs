//! The listener of the HTTP front: a bounded number of connections at once (a client that
//! opens more waits for one to close), each with its permit for as long as it lives.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Connections at once, by default.
pub const MAX_CONNECTIONS: usize = 512;

/// A TCP listener that accepts at most `max` connections at once.
pub struct Bounded {
    inner: TcpListener,
    permits: Arc<Semaphore>,
}

impl Bounded {
    /// Bounds `inner` to `max` connections at once.
    pub fn new(inner: TcpListener, max: usize) -> Bounded {
        Bounded {
            inner,
            permits: Arc::new(Semaphore::new(max.max(1))),
        }
    }
}

/// An accepted connection, holding its place until dropped.
pub struct Conn {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
}

impl axum::serve::Listener for Bounded {
    type Io = Conn;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Conn, std::net::SocketAddr) {
        loop {
            // Waiting for a place, not accepting: further clients queue in the kernel's
            // backlog (and are refused there when it is full).
            let Ok(permit) = Arc::clone(&self.permits).acquire_owned().await else {
                std::future::pending::<()>().await;
                continue;
            };
            match self.inner.accept().await {
                Ok((stream, addr)) => {
                    let _ = stream.set_nodelay(true);
                    return (
                        Conn {
                            stream,
                            _permit: permit,
                        },
                        addr,
                    );
                }
                // Out of descriptors and the like: wait a moment rather than spin.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.inner.local_addr()
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::serve::Listener;
    use std::time::Duration;

    #[tokio::test]
    async fn a_second_connection_waits_for_the_first_to_close() {
        let inner = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = inner.local_addr().unwrap();
        let mut l = Bounded::new(inner, 1);
        let _a = TcpStream::connect(addr).await.unwrap();
        let _b = TcpStream::connect(addr).await.unwrap();
        let (first, _) = l.accept().await;
        assert!(
            tokio::time::timeout(Duration::from_millis(200), l.accept())
                .await
                .is_err(),
            "the second is not taken while the first is open"
        );
        drop(first);
        assert!(
            tokio::time::timeout(Duration::from_secs(2), l.accept())
                .await
                .is_ok()
        );
    }
}
