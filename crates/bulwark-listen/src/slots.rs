//! Connection slots: how many connections a listener holds, how many of them one peer may
//! hold, and which connection gives up its place when a new client needs one.
//!
//! A cap alone lets whoever fills it first lock everyone else out: 500 sockets that never
//! send a byte hold a 512-place listener until their timeouts, and the next client waits
//! in the kernel's backlog meanwhile. So a connection with no request in progress is only
//! borrowing its place:
//!
//! - one peer (an IP address, a user id) holds at most [`Limits::per_peer`] places; its
//!   next connection takes the place of its own longest-idle one, or is refused when all
//!   of its connections are busy;
//! - when the listener is full, a new client takes the place of the longest-idle
//!   connection of the peer holding the most — the flooder's, not the quiet client's;
//! - above [`Limits::pressure_at`] connections, idle ones are closed after
//!   [`Limits::pressure_idle`] instead of the front's usual idle timeout.
//!
//! A connection is busy from the moment its request is read whole until its answer is
//! written whole ([`Slot::busy`]); busy connections are never closed to make room, so a
//! client waiting on a long answer (an approval, a stream) keeps its place.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// The bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections at once.
    pub max: usize,
    /// Connections at once from one peer.
    pub per_peer: usize,
    /// From this many connections on, the listener is under pressure.
    pub pressure_at: usize,
    /// Under pressure, a connection idle this long is closed.
    pub pressure_idle: Duration,
}

impl Limits {
    /// `max` connections, a quarter of them per peer, pressure from three quarters full,
    /// and two seconds' grace for idle connections under pressure.
    pub fn for_max(max: usize) -> Limits {
        let max = max.max(1);
        Limits {
            max,
            per_peer: (max / 4).max(1),
            pressure_at: (max * 3 / 4).max(1),
            pressure_idle: Duration::from_secs(2),
        }
    }
}

/// Why a connection was not admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The peer holds its share, all of it busy.
    #[error("too many connections from this client (limit {0}), all of them busy")]
    Peer(usize),
    /// The listener is full, every connection busy.
    #[error("too many connections (limit {0}), all of them busy")]
    Full(usize),
}

/// The slots of one listener, shared by its connections.
pub struct Slots<K> {
    limits: Limits,
    state: Mutex<State<K>>,
}

struct State<K> {
    next: u64,
    conns: HashMap<u64, Entry<K>>,
    per_peer: HashMap<K, usize>,
}

struct Entry<K> {
    peer: K,
    busy: usize,
    idle_since: Instant,
    close: Arc<Notify>,
}

impl<K: Eq + Hash + Clone> State<K> {
    /// The idle connection to give up among those `pick` allows: the peer holding the most
    /// first, then the longest idle.
    fn victim(&self, pick: impl Fn(&Entry<K>) -> bool) -> Option<u64> {
        self.conns
            .iter()
            .filter(|(_, e)| e.busy == 0 && pick(e))
            .max_by_key(|(_, e)| {
                (
                    self.per_peer.get(&e.peer).copied().unwrap_or(0),
                    std::cmp::Reverse(e.idle_since),
                )
            })
            .map(|(id, _)| *id)
    }

    fn remove(&mut self, id: u64) -> Option<Entry<K>> {
        let e = self.conns.remove(&id)?;
        if let Some(n) = self.per_peer.get_mut(&e.peer) {
            *n -= 1;
            if *n == 0 {
                self.per_peer.remove(&e.peer);
            }
        }
        Some(e)
    }

    /// Takes the connection's place away and tells it to close.
    fn evict(&mut self, id: u64) {
        if let Some(e) = self.remove(id) {
            // A permit is kept when nobody waits yet: the connection sees it when it does.
            e.close.notify_one();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<K: Eq + Hash + Clone + Send + 'static> Slots<K> {
    /// Slots bounded by `limits`.
    pub fn new(limits: Limits) -> Arc<Slots<K>> {
        Arc::new(Slots {
            limits,
            state: Mutex::new(State {
                next: 0,
                conns: HashMap::new(),
                per_peer: HashMap::new(),
            }),
        })
    }

    /// The bounds.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// A place for a new connection from `peer`, made by closing an idle connection when
    /// the peer or the listener is at its limit.
    pub fn admit(self: &Arc<Self>, peer: K) -> Result<Slot<K>, Refused> {
        let mut s = lock(&self.state);
        if s.per_peer.get(&peer).copied().unwrap_or(0) >= self.limits.per_peer {
            match s.victim(|e| e.peer == peer) {
                Some(id) => s.evict(id),
                None => return Err(Refused::Peer(self.limits.per_peer)),
            }
        }
        if s.conns.len() >= self.limits.max {
            match s.victim(|_| true) {
                Some(id) => s.evict(id),
                None => return Err(Refused::Full(self.limits.max)),
            }
        }
        let id = s.next;
        s.next += 1;
        let close = Arc::new(Notify::new());
        s.conns.insert(
            id,
            Entry {
                peer: peer.clone(),
                busy: 0,
                idle_since: Instant::now(),
                close: Arc::clone(&close),
            },
        );
        *s.per_peer.entry(peer).or_insert(0) += 1;
        Ok(Slot {
            id,
            slots: Arc::downgrade(self),
            close,
        })
    }

    /// Connections holding a place.
    pub fn open(&self) -> usize {
        lock(&self.state).conns.len()
    }

    /// Under pressure, closes the connections idle longer than [`Limits::pressure_idle`];
    /// returns how many.
    pub fn reap(&self) -> usize {
        let mut s = lock(&self.state);
        if s.conns.len() < self.limits.pressure_at {
            return 0;
        }
        let now = Instant::now();
        let idle: Vec<u64> = s
            .conns
            .iter()
            .filter(|(_, e)| {
                e.busy == 0 && now.duration_since(e.idle_since) >= self.limits.pressure_idle
            })
            .map(|(id, _)| *id)
            .collect();
        for id in &idle {
            s.evict(*id);
        }
        idle.len()
    }

    /// Reaps every quarter of the pressure grace until the slots are dropped.
    pub fn spawn_reaper(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(self);
        let every = (self.limits.pressure_idle / 4).max(Duration::from_millis(50));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                let Some(slots) = weak.upgrade() else { return };
                slots.reap();
            }
        })
    }
}

/// A connection's place, given back when dropped.
pub struct Slot<K: Eq + Hash + Clone> {
    id: u64,
    slots: Weak<Slots<K>>,
    close: Arc<Notify>,
}

impl<K: Eq + Hash + Clone> Slot<K> {
    /// Marks a request in progress until the guard is dropped; meanwhile the connection is
    /// not closed to make room.
    pub fn busy(&self) -> Busy<K> {
        if let Some(slots) = self.slots.upgrade()
            && let Some(e) = lock(&slots.state).conns.get_mut(&self.id)
        {
            e.busy += 1;
        }
        Busy {
            id: self.id,
            slots: Weak::clone(&self.slots),
        }
    }

    /// Completes when the connection must close to make room.
    pub async fn closed(&self) {
        self.close.notified().await;
    }
}

impl<K: Eq + Hash + Clone> Drop for Slot<K> {
    fn drop(&mut self) {
        if let Some(slots) = self.slots.upgrade() {
            lock(&slots.state).remove(self.id);
        }
    }
}

/// A request in progress on a connection ([`Slot::busy`]).
pub struct Busy<K: Eq + Hash + Clone> {
    id: u64,
    slots: Weak<Slots<K>>,
}

impl<K: Eq + Hash + Clone> Drop for Busy<K> {
    fn drop(&mut self) {
        if let Some(slots) = self.slots.upgrade()
            && let Some(e) = lock(&slots.state).conns.get_mut(&self.id)
        {
            e.busy = e.busy.saturating_sub(1);
            e.idle_since = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize, per_peer: usize) -> Limits {
        Limits {
            max,
            per_peer,
            pressure_at: max,
            pressure_idle: Duration::from_millis(100),
        }
    }

    #[tokio::test]
    async fn a_peer_at_its_share_gives_up_its_own_idle_place() {
        let slots = Slots::new(limits(10, 2));
        let a = slots.admit("a").unwrap();
        let _b = slots.admit("a").unwrap();
        let other = slots.admit("b").unwrap();
        let _c = slots.admit("a").unwrap();
        // The oldest idle connection of `a` is told to close; `b`'s is untouched.
        tokio::time::timeout(Duration::from_secs(1), a.closed())
            .await
            .unwrap();
        assert!(
            tokio::time::timeout(Duration::from_millis(50), other.closed())
                .await
                .is_err()
        );
        assert_eq!(slots.open(), 3);
    }

    #[tokio::test]
    async fn busy_places_are_kept_and_then_the_new_client_is_refused() {
        let slots = Slots::new(limits(2, 2));
        let a = slots.admit(1).unwrap();
        let b = slots.admit(2).unwrap();
        let (_ba, _bb) = (a.busy(), b.busy());
        assert_eq!(slots.admit(3).err(), Some(Refused::Full(2)));
        drop(_ba);
        // Idle again: it gives way.
        let _c = slots.admit(3).unwrap();
        tokio::time::timeout(Duration::from_secs(1), a.closed())
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_full_listener_takes_the_place_of_the_biggest_holder() {
        let slots = Slots::new(limits(4, 4));
        let quiet = slots.admit("quiet").unwrap();
        let flood: Vec<_> = (0..3).map(|_| slots.admit("flood").unwrap()).collect();
        let _new = slots.admit("new").unwrap();
        tokio::time::timeout(Duration::from_secs(1), flood[0].closed())
            .await
            .unwrap();
        assert!(
            tokio::time::timeout(Duration::from_millis(50), quiet.closed())
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn under_pressure_idle_connections_are_reaped() {
        let slots = Slots::new(Limits {
            max: 4,
            per_peer: 4,
            pressure_at: 2,
            pressure_idle: Duration::from_millis(20),
        });
        let a = slots.admit(1).unwrap();
        let b = slots.admit(1).unwrap();
        let _busy = b.busy();
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(slots.reap(), 1);
        tokio::time::timeout(Duration::from_secs(1), a.closed())
            .await
            .unwrap();
        // Below the pressure mark nothing is reaped.
        drop(a);
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(slots.open(), 1);
        assert_eq!(slots.reap(), 0);
    }
}
