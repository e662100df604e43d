//! Approval requests on the shared server: the approvals desk's document
//! ([`bulwark_approvals::Shared`]) kept under `P:appr:doc`, with `P:appr:ver` raised by every
//! write (the desk rereads the document only when it moved) and `P:appr:lock` held by one
//! change at a time.
//!
//! **Why one locked document and not a key per request:** the desk's rules — one pending
//! request per call digest, at most `approvals.max_pending` of them, expiry written down
//! and audited exactly once, decided ones trimmed to the newest thousand — are checks over
//! all requests, and the desk already states them once, over one document, for the file
//! store. A lock (not WATCH/MULTI with retries) because a change writes its audit entry
//! before it takes effect: a retried closure would record twice. The document is bounded
//! by those same limits, changes are rare (a person's pace), and reads are one `GET` of the
//! version while nothing moved.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bulwark_approvals::{ChangeFn, Shared};
use bulwark_gate::StoreError;

use crate::{LOCK_MS, RedisStore, int};

fn text(e: StoreError) -> String {
    e.to_string()
}

impl RedisStore {
    fn approval_keys(&self) -> [String; 3] {
        ["doc", "ver", "lock"].map(|k| self.key(&["appr", k]))
    }

    /// Lets go of the lock when a change wrote nothing (or failed after taking it).
    fn approvals_unlock(&self, lock: &str, owner: &str) {
        let _ = self.with(|c| self.scripts.unlock.key(lock).arg(owner).invoke::<i64>(c));
    }
}

/// The backend the gate gives the approvals desk on a shared store.
pub(crate) struct Approvals(pub(crate) Arc<RedisStore>);

impl Shared for Approvals {
    fn describe(&self) -> String {
        // Not the URL: it may carry a password.
        format!("redis state store, key {}", self.0.key(&["appr", "doc"]))
    }

    fn version(&self) -> Result<u64, String> {
        let [_, ver, _] = self.0.approval_keys();
        let v: Option<u64> = self
            .0
            .with(|c| redis::cmd("GET").arg(&ver).query(c))
            .map_err(text)?;
        Ok(v.unwrap_or(0))
    }

    fn load(&self) -> Result<(u64, Option<Vec<u8>>), String> {
        let [doc, ver, _] = self.0.approval_keys();
        let (v, d): (Option<u64>, Option<Vec<u8>>) = self
            .0
            .with(|c| redis::pipe().atomic().get(&ver).get(&doc).query(c))
            .map_err(text)?;
        Ok((v.unwrap_or(0), d))
    }

    fn change(&self, wait: Duration, f: &mut ChangeFn<'_>) -> Result<Option<u64>, String> {
        let s = &self.0;
        let [doc, ver, lock] = s.approval_keys();
        let owner = format!(
            "{:x}-appr-{}",
            s.nonce,
            s.owners.fetch_add(1, Ordering::Relaxed)
        );
        // Bounded: a replica that died holding the lock holds it at most LOCK_MS, and a
        // change waits at most `wait` (the file store's bound) before the call reads as
        // unanswerable.
        let give_up = Instant::now() + wait;
        let mut pause = 2u64;
        loop {
            let took: Option<String> = s
                .with(|c| {
                    redis::cmd("SET")
                        .arg(&lock)
                        .arg(&owner)
                        .arg("NX")
                        .arg("PX")
                        .arg(LOCK_MS)
                        .query(c)
                })
                .map_err(text)?;
            if took.is_some() {
                break;
            }
            if Instant::now() >= give_up {
                return Err(format!(
                    "another replica has held the approvals lock for over {} ms",
                    wait.as_millis()
                ));
            }
            std::thread::sleep(Duration::from_millis(pause));
            pause = (pause * 2).min(20);
        }
        let current: Option<Vec<u8>> = match s.with(|c| redis::cmd("GET").arg(&doc).query(c)) {
            Ok(d) => d,
            Err(e) => {
                s.approvals_unlock(&lock, &owner);
                return Err(text(e));
            }
        };
        let Some(next) = f(current.as_deref()) else {
            s.approvals_unlock(&lock, &owner);
            return Ok(None);
        };
        let written = s.with(|c| {
            s.scripts
                .approvals_write
                .key(&doc)
                .key(&ver)
                .key(&lock)
                .arg(&owner)
                .arg(next)
                .invoke::<redis::Value>(c)
        });
        match written.as_ref().map(int) {
            Ok(Some(v)) if v >= 0 => Ok(Some(v.unsigned_abs())),
            Ok(_) => Err(
                "the approvals lock expired before the change was written; nothing changed".into(),
            ),
            Err(_) => {
                s.approvals_unlock(&lock, &owner);
                Err(written.err().map(text).unwrap_or_default())
            }
        }
    }
}
