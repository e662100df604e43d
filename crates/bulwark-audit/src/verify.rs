//! Checking a log: with the HMAC key every record, with only the public key every checkpoint
//! and the records it covers. The first bad line is named.

use std::io::BufRead;

use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::{Map, Value};

use crate::keys::{hex, unhex32};
use crate::record::{Chain, canonical, content_of, next_mac, next_sha};

/// One key of a keyring: an HMAC key and, when known, its public signing key.
#[derive(Clone, Debug)]
pub struct RingKey {
    /// The HMAC key.
    pub hmac: [u8; 32],
    /// The public key of the same generation (checks signatures, names the key).
    pub public: Option<VerifyingKey>,
}

/// What the verifier holds.
#[derive(Clone, Debug)]
pub enum VerifyKey {
    /// HMAC keys: the current one and any retired by rotation. The log names which key
    /// each part was written with; a lone key without a public half is used throughout.
    Hmac(Vec<RingKey>),
    /// Only the public key the log was started with; rotation records, signed by the key
    /// they retire, carry the trust on to the next.
    Public(VerifyingKey),
}

impl VerifyKey {
    /// One HMAC key (and its public half when known).
    pub fn hmac(hmac: [u8; 32], public: Option<VerifyingKey>) -> VerifyKey {
        VerifyKey::Hmac(vec![RingKey { hmac, public }])
    }
}

/// The key in force while verifying.
struct Current {
    hmac: Option<[u8; 32]>,
    public: Option<VerifyingKey>,
    id: Option<String>,
}

impl Current {
    fn select(key: &VerifyKey, id: &str) -> Option<Current> {
        match key {
            // The log must have been started with (or rotated to) the given key.
            VerifyKey::Public(p) if crate::keys::key_id(p) != id => None,
            VerifyKey::Public(p) => Some(Current {
                hmac: None,
                public: Some(*p),
                id: Some(crate::keys::key_id(p)),
            }),
            VerifyKey::Hmac(ring) => {
                let named = ring
                    .iter()
                    .find(|k| k.public.is_some_and(|p| crate::keys::key_id(&p) == id));
                let k = match (named, ring.as_slice()) {
                    (Some(k), _) => k,
                    // A lone key that cannot name itself is taken for the one in use.
                    (None, [only]) if only.public.is_none() => only,
                    _ => return None,
                };
                Some(Current {
                    hmac: Some(k.hmac),
                    public: k.public,
                    id: k.public.map(|p| crate::keys::key_id(&p)),
                })
            }
        }
    }
}

fn check_sig(obj: &mut Map<String, Value>, public: &VerifyingKey) -> Result<(), &'static str> {
    let sig = obj
        .remove("sig")
        .and_then(|s| s.as_str().and_then(unhex64))
        .ok_or("no signature")?;
    public
        .verify_strict(canonical(obj).as_bytes(), &Signature::from_bytes(&sig))
        .map_err(|_| "the signature is not valid for the key in force")
}

/// A log that checked out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Records read.
    pub records: u64,
    /// Decision records among them.
    pub decisions: u64,
    /// Checkpoints among them, signatures checked.
    pub checkpoints: u64,
    /// Records after the last checkpoint: chained, but covered by no signature yet.
    pub unsealed: u64,
    /// Whether the log ends with a closing checkpoint (a writer that shut down cleanly).
    pub closed: bool,
    /// The chain after the last record.
    pub chain: Chain,
    /// Whether the last record was a closing checkpoint (for a writer resuming the log).
    pub last_final: bool,
    /// The id of the key in force at the end (after any rotation).
    pub key_id: Option<String>,
    /// The chain after each checkpoint record: (seq, SHA chain, MAC), to compare with a
    /// head recorded elsewhere.
    pub checkpoints_at: Vec<(u64, [u8; 32], [u8; 32])>,
}

/// Where and why a log failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {why}")]
pub struct Failure {
    /// The first bad line (1-based).
    pub line: u64,
    /// What is wrong with it.
    pub why: String,
}

fn fail(line: u64, why: impl Into<String>) -> Failure {
    Failure {
        line,
        why: why.into(),
    }
}

/// Checks a whole log.
pub fn verify(reader: impl BufRead, key: &VerifyKey) -> Result<Report, Failure> {
    let mut report = Report::default();
    let mut last_checkpoint_line = 0u64;
    let mut current: Option<Current> = None;
    let mut line_no = 0u64;
    let mut reader = reader;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| fail(line_no + 1, format!("cannot read: {e}")))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if !buf.ends_with(b"\n") {
            return Err(fail(
                line_no,
                "the line is incomplete: the log was cut off (or the writer crashed mid-line)",
            ));
        }
        buf.pop();
        let mut obj: Map<String, Value> = serde_json::from_slice(&buf)
            .map_err(|e| fail(line_no, format!("not a JSON object ({e})")))?;
        let mac = obj
            .remove("mac")
            .and_then(|m| m.as_str().and_then(unhex32))
            .ok_or_else(|| fail(line_no, "no MAC"))?;
        let content = content_of(&buf)
            .ok_or_else(|| fail(line_no, "the MAC is not the line's last member"))?;
        let kind = obj
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if kind == "start" {
            let id = obj.get("key_id").and_then(Value::as_str).unwrap_or("");
            match &current {
                None => {
                    current = Some(Current::select(key, id).ok_or_else(|| {
                        fail(
                            line_no,
                            format!("no key for key id {id:?}, which started this log"),
                        )
                    })?);
                }
                Some(c) if c.id.as_deref().is_some_and(|cid| cid != id) => {
                    return Err(fail(
                        line_no,
                        format!(
                            "a writer with key {id:?} continued the log without a rotation record"
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        let Some(cur) = current.as_ref() else {
            return Err(fail(line_no, "the log does not begin with a start record"));
        };
        let seq = obj.get("seq").and_then(Value::as_u64).unwrap_or(0);
        let expected = report.chain.seq + 1;
        if seq != expected {
            return Err(fail(
                line_no,
                format!(
                    "sequence number {seq} where {expected} was due: a record was dropped, inserted or moved"
                ),
            ));
        }
        if let Some(k) = &cur.hmac
            && next_mac(k, &report.chain.mac, &content) != mac
        {
            return Err(fail(
                line_no,
                "the MAC does not match: this record was changed (or one before it was)",
            ));
        }
        let sha_before = report.chain.sha;
        let mac_before = report.chain.mac;
        report.chain = Chain {
            seq,
            mac,
            sha: next_sha(&sha_before, &content),
        };
        report.records += 1;
        report.last_final = false;
        match kind.as_str() {
            "decision" => report.decisions += 1,
            "rotate" => {
                // Signed by the key it retires: that is what lets the next key be trusted.
                if let Some(p) = cur.public {
                    check_sig(&mut obj, &p)
                        .map_err(|why| fail(line_no, format!("rotation record: {why}")))?;
                }
                let new_id = obj.get("new_key_id").and_then(Value::as_str).unwrap_or("");
                let next = match key {
                    VerifyKey::Public(_) => {
                        let p = obj
                            .get("new_public_key")
                            .and_then(Value::as_str)
                            .and_then(unhex32)
                            .and_then(|b| VerifyingKey::from_bytes(&b).ok())
                            .ok_or_else(|| {
                                fail(line_no, "rotation record without a valid new public key")
                            })?;
                        if crate::keys::key_id(&p) != new_id {
                            return Err(fail(
                                line_no,
                                "rotation record: the new key id does not match the new public key",
                            ));
                        }
                        Current::select(&VerifyKey::Public(p), new_id)
                    }
                    VerifyKey::Hmac(_) => {
                        Current::select(key, new_id).filter(|c| c.id.as_deref() == Some(new_id))
                    }
                };
                current = Some(next.ok_or_else(|| {
                    fail(
                        line_no,
                        format!("the log rotates to key {new_id:?}, which is not in the keyring"),
                    )
                })?);
            }
            "checkpoint" => {
                let public = cur.public;
                if cur.hmac.is_some()
                    && obj.get("tag").and_then(Value::as_str) != Some(hex(&mac_before).as_str())
                {
                    return Err(fail(line_no, "the checkpoint's tag is not the running MAC"));
                }
                if obj.get("sha").and_then(Value::as_str) != Some(hex(&sha_before).as_str()) {
                    return Err(fail(
                        line_no,
                        format!(
                            "the checkpoint does not match the records it covers: one of lines {}..{} was changed",
                            last_checkpoint_line + 1,
                            line_no - 1
                        ),
                    ));
                }
                if let Some(p) = public {
                    check_sig(&mut obj, &p)
                        .map_err(|why| fail(line_no, format!("checkpoint: {why}")))?;
                }
                report.checkpoints += 1;
                report
                    .checkpoints_at
                    .push((seq, report.chain.sha, report.chain.mac));
                last_checkpoint_line = line_no;
                report.last_final = obj.get("final").and_then(Value::as_bool) == Some(true);
            }
            "" => return Err(fail(line_no, "a record without a type")),
            _ => {}
        }
    }
    report.key_id = current.and_then(|c| c.id);
    report.unsealed = line_no - last_checkpoint_line;
    report.closed = report.last_final;
    // With only the public key, what no checkpoint covers cannot be checked at all.
    Ok(report)
}

fn unhex64(text: &str) -> Option<[u8; 64]> {
    if text.len() != 128 {
        return None;
    }
    let (a, b) = text.split_at(64);
    let (a, b) = (unhex32(a)?, unhex32(b)?);
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(&a);
    out[32..].copy_from_slice(&b);
    Some(out)
}
