//! Taking a lock whose holder panicked: every critical section here leaves its data
//! consistent at each step (maps and queues updated in one call), so a poisoned lock is
//! used as it is rather than spreading the panic to every other session.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, poisoned or not.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}
