//! In-process links between the HTTP front, the gateway cores, the aggregate and remote
//! upstreams: whole JSON-RPC messages handed over as parsed values.
//!
//! These parts all live in one process. A line pipe between two of them costs a
//! serialisation, a frame read and a parse at every hop, and a task to write each side;
//! handing the parsed [`Value`] over costs none of that, so a message crossing the HTTP
//! front is parsed once where it arrives and serialised once where it leaves (the stdio
//! wrapper and stdio children still speak lines: their peers are other processes).
//!
//! Each direction is bounded twice, like the relay's line queues: in messages, and in bytes
//! (a message's serialised size, estimated without serialising it), so a side that stops
//! taking messages slows its sender down instead of growing memory.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use bulwark_mcp::port;
//! let (mut a, mut b) = port::pair(8);
//! assert!(a.tx.send(serde_json::json!({"jsonrpc": "2.0", "method": "ping", "id": 1})).await);
//! assert_eq!(b.rx.recv().await.unwrap()["method"], "ping");
//! a.tx.close().await;
//! assert!(b.rx.recv().await.is_none());
//! # });
//! ```

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

/// Bytes queued in one direction at most (estimated serialised size).
pub const QUEUE_BYTES: usize = 64 << 20;

enum Item {
    /// A message and its share of the byte budget, given back when it is taken.
    Message(Value, OwnedSemaphorePermit),
    /// The sender is done: what was queued before still arrives, then the end.
    Close,
}

/// One end of a link: what it sends and what it receives.
pub struct Port {
    /// Messages to the other end.
    pub tx: Sender,
    /// Messages from the other end.
    pub rx: Receiver,
}

/// The sending side of one direction (cheap to clone).
#[derive(Clone)]
pub struct Sender {
    tx: mpsc::Sender<Item>,
    budget: Arc<Semaphore>,
}

/// The receiving side of one direction.
pub struct Receiver {
    rx: mpsc::Receiver<Item>,
    closed: bool,
}

/// One direction holding at most `messages` messages and [`QUEUE_BYTES`] bytes.
pub fn channel(messages: usize) -> (Sender, Receiver) {
    let (tx, rx) = mpsc::channel(messages.max(1));
    (
        Sender {
            tx,
            budget: Arc::new(Semaphore::new(QUEUE_BYTES)),
        },
        Receiver { rx, closed: false },
    )
}

/// Two connected ends, each direction holding at most `messages` messages.
pub fn pair(messages: usize) -> (Port, Port) {
    let (a_tx, b_rx) = channel(messages);
    let (b_tx, a_rx) = channel(messages);
    (Port { tx: a_tx, rx: a_rx }, Port { tx: b_tx, rx: b_rx })
}

/// Roughly how many bytes `v` takes serialised (escapes not counted): what the byte budget
/// charges, without the cost of serialising.
pub fn approx_len(v: &Value) -> usize {
    match v {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 8,
        Value::String(s) => s.len() + 2,
        Value::Array(a) => 2 + a.iter().map(|x| approx_len(x) + 1).sum::<usize>(),
        Value::Object(m) => {
            2 + m
                .iter()
                .map(|(k, x)| k.len() + 4 + approx_len(x))
                .sum::<usize>()
        }
    }
}

/// What a message of `len` bytes takes of a [`QUEUE_BYTES`] budget: a single message larger
/// than the budget takes all of it.
pub fn budget_share(len: usize) -> u32 {
    u32::try_from(len.min(QUEUE_BYTES)).unwrap_or(u32::MAX)
}

fn share(v: &Value) -> u32 {
    budget_share(approx_len(v))
}

impl Sender {
    /// Queues `msg`, waiting for room; false once the other end is gone.
    pub async fn send(&self, msg: Value) -> bool {
        let Ok(permit) = Arc::clone(&self.budget)
            .acquire_many_owned(share(&msg))
            .await
        else {
            return false;
        };
        self.tx.send(Item::Message(msg, permit)).await.is_ok()
    }

    /// Queues `msg` if there is room now; false when there is none or the other end is
    /// gone.
    pub fn try_send(&self, msg: Value) -> bool {
        let Ok(permit) = Arc::clone(&self.budget).try_acquire_many_owned(share(&msg)) else {
            return false;
        };
        self.tx.try_send(Item::Message(msg, permit)).is_ok()
    }

    /// [`Sender::send`], giving up after `wait`.
    pub async fn send_within(&self, msg: Value, wait: Duration) -> bool {
        matches!(tokio::time::timeout(wait, self.send(msg)).await, Ok(true))
    }

    /// Tells the other end that nothing more comes from this side (every clone's), once it
    /// has what was queued before.
    pub async fn close(&self) {
        // Bounded: a stuck receiver with a full queue must not hold a shutdown up.
        let _ = tokio::time::timeout(Duration::from_secs(2), self.tx.send(Item::Close)).await;
    }
}

impl Receiver {
    /// The next message; `None` once the sender closed its side or every sender is gone.
    pub async fn recv(&mut self) -> Option<Value> {
        if self.closed {
            return None;
        }
        match self.rx.recv().await {
            Some(Item::Message(v, _permit)) => Some(v),
            Some(Item::Close) | None => {
                self.closed = true;
                self.rx.close();
                // What was sent after the close is not delivered: its byte shares go back
                // now, so no sender waits on budget a closed receiver will never free.
                while self.rx.try_recv().is_ok() {}
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_estimate_is_close_to_the_serialised_size() {
        let v = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "hello there", "n": [1, 2, true, null]}}});
        let real = v.to_string().len();
        let est = approx_len(&v);
        assert!(
            est * 10 >= real * 8 && est * 10 <= real * 14,
            "{est} vs {real}"
        );
    }

    #[tokio::test]
    async fn a_full_direction_refuses_without_waiting_and_frees_what_is_taken() {
        let (tx, mut rx) = channel(2);
        assert!(tx.try_send(json!(1)));
        assert!(tx.try_send(json!(2)));
        assert!(!tx.try_send(json!(3)), "two messages at most");
        assert!(
            !tx.send_within(json!(3), Duration::from_millis(20)).await,
            "a send that finds no room gives up when told"
        );
        assert_eq!(rx.recv().await, Some(json!(1)));
        assert!(tx.try_send(json!(3)));
    }

    #[tokio::test]
    async fn the_byte_budget_holds_back_a_sender_until_the_receiver_takes() {
        let (tx, mut rx) = channel(16);
        let big = Value::String("x".repeat(QUEUE_BYTES - 100));
        assert!(tx.try_send(big));
        assert!(
            !tx.try_send(Value::String("y".repeat(200))),
            "over the byte budget"
        );
        assert!(rx.recv().await.is_some());
        assert!(tx.try_send(Value::String("y".repeat(200))));
    }

    #[tokio::test]
    async fn a_sender_waiting_on_budget_is_let_go_once_the_receiver_has_closed() {
        let (tx, mut rx) = channel(16);
        tx.close().await;
        assert!(tx.try_send(Value::String("x".repeat(QUEUE_BYTES - 100))));
        let waiting = tokio::spawn({
            let tx = tx.clone();
            async move { tx.send(Value::String("y".repeat(200))).await }
        });
        tokio::task::yield_now().await;
        assert_eq!(rx.recv().await, None);
        let sent = tokio::time::timeout(Duration::from_secs(2), waiting).await;
        assert!(matches!(sent, Ok(Ok(false))), "{sent:?}");
    }

    #[tokio::test]
    async fn close_delivers_what_was_queued_first_and_then_ends_for_good() {
        let (tx, mut rx) = channel(4);
        let other = tx.clone();
        assert!(tx.send(json!("a")).await);
        tx.close().await;
        assert_eq!(rx.recv().await, Some(json!("a")));
        assert_eq!(rx.recv().await, None);
        assert!(!other.send(json!("late")).await, "the receiver is closed");
        assert_eq!(rx.recv().await, None);
    }
}
