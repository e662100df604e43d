//! A map with a size limit that evicts the least recently used entry.
//!
//! Every map the engine keeps (sessions, per-principal buckets, pins, the verdict cache,
//! approval grants) is one of these, so nothing an outsider sends can grow memory without
//! bound. Recency is tracked by a logical tick, not the clock, so eviction order does not
//! depend on what time the front passes in.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// An LRU-bounded map.
#[derive(Clone, Debug)]
pub struct BoundedMap<K, V> {
    entries: HashMap<K, (V, u64)>,
    order: BTreeMap<u64, K>,
    tick: u64,
    limit: usize,
    evicted: u64,
}

impl<K: Hash + Eq + Clone, V> BoundedMap<K, V> {
    /// A map holding at most `limit` entries (at least one).
    pub fn new(limit: usize) -> Self {
        BoundedMap {
            entries: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
            limit: limit.max(1),
            evicted: 0,
        }
    }

    /// The entry for `key`, marking it recently used.
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.tick += 1;
        let tick = self.tick;
        let (v, t) = self.entries.get_mut(key)?;
        // The key moves to its new place in the order: no copy of it is made.
        if let Some(k) = self.order.remove(t) {
            self.order.insert(tick, k);
        }
        *t = tick;
        Some(v)
    }

    /// The entry for `key` without touching its recency.
    pub fn peek<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.get(key).map(|(v, _)| v)
    }

    /// The entry for `key`, created with `make` if absent (evicting the least recently used
    /// entry when full).
    pub fn get_or_insert_with(&mut self, key: &K, make: impl FnOnce() -> V) -> &mut V {
        self.tick += 1;
        let tick = self.tick;
        if !self.entries.contains_key(key)
            && self.entries.len() >= self.limit
            && let Some((_, oldest)) = self.order.pop_first()
        {
            self.entries.remove(&oldest);
            self.evicted += 1;
        }
        let order = &mut self.order;
        let slot = self
            .entries
            .entry(key.clone())
            .or_insert_with(|| (make(), tick));
        // A key already held moves to its new place in the order, where a second copy of it
        // used to be made.
        let k = order.remove(&slot.1).unwrap_or_else(|| key.clone());
        slot.1 = tick;
        order.insert(tick, k);
        &mut slot.0
    }

    /// Inserts or replaces, evicting the least recently used entry when full.
    pub fn insert(&mut self, key: K, value: V) {
        self.tick += 1;
        if let Some((_, t)) = self.entries.remove(&key) {
            self.order.remove(&t);
        } else if self.entries.len() >= self.limit
            && let Some((_, oldest)) = self.order.pop_first()
        {
            self.entries.remove(&oldest);
            self.evicted += 1;
        }
        self.order.insert(self.tick, key.clone());
        self.entries.insert(key, (value, self.tick));
    }

    /// Removes and returns the least recently used entry.
    pub fn pop_oldest(&mut self) -> Option<(K, V)> {
        let (_, key) = self.order.pop_first()?;
        let (v, _) = self.entries.remove(&key)?;
        self.evicted += 1;
        Some((key, v))
    }

    /// Removes `key`.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (v, t) = self.entries.remove(key)?;
        self.order.remove(&t);
        Some(v)
    }

    /// Removes every entry for which `keep` returns false.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &V) -> bool) {
        let order = &mut self.order;
        self.entries.retain(|k, (v, t)| {
            let k_ok = keep(k, v);
            if !k_ok {
                order.remove(t);
            }
            k_ok
        });
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.order.clear();
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The size limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// How many entries were evicted because the map was full.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Iterates entries in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, (v, _))| (k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used() {
        let mut m = BoundedMap::new(2);
        m.insert("a", 1);
        m.insert("b", 2);
        assert_eq!(m.get_mut(&"a"), Some(&mut 1));
        m.insert("c", 3);
        assert!(m.peek(&"b").is_none());
        assert!(m.peek(&"a").is_some() && m.peek(&"c").is_some());
        assert_eq!(m.evicted(), 1);
        *m.get_or_insert_with(&"d", || 4) += 1;
        assert_eq!(m.peek(&"d"), Some(&5));
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn retain_keeps_order_consistent() {
        let mut m = BoundedMap::new(3);
        m.insert(1, "x");
        m.insert(2, "y");
        m.insert(3, "z");
        m.retain(|k, _| *k != 2);
        m.insert(4, "w");
        m.insert(5, "v");
        assert_eq!(m.len(), 3);
        assert!(m.peek(&1).is_none());
    }
}
