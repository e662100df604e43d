//! Checking a log: with the HMAC key every record, with only the public key every checkpoint
//! and the records it covers. The first bad line is named.

use std::io::BufRead;

use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::{Map, Value};

use crate::keys::{hex, unhex32};
use crate::record::{Chain, canonical, content_of, next_mac, next_sha};

/// What the verifier holds.
#[derive(Clone, Debug)]
pub enum VerifyKey {
    /// The HMAC key (and the public key, when known, to check signatures too).
    Hmac([u8; 32], Option<VerifyingKey>),
    /// Only the public key.
    Public(VerifyingKey),
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
        if let VerifyKey::Hmac(k, _) = key
            && next_mac(k, &report.chain.mac, &content) != mac
        {
            return Err(fail(
                line_no,
                "the MAC does not match: this record was changed (or one before it was)",
            ));
        }
        let sha_before = report.chain.sha;
        report.chain = Chain {
            seq,
            mac,
            sha: next_sha(&sha_before, &content),
        };
        report.records += 1;
        report.last_final = false;
        match obj.get("type").and_then(Value::as_str) {
            Some("decision") => report.decisions += 1,
            Some("checkpoint") => {
                let public = match key {
                    VerifyKey::Public(p) | VerifyKey::Hmac(_, Some(p)) => Some(p),
                    VerifyKey::Hmac(_, None) => None,
                };
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
                    let sig = obj
                        .remove("sig")
                        .and_then(|s| s.as_str().and_then(unhex64))
                        .ok_or_else(|| fail(line_no, "a checkpoint without a signature"))?;
                    let signed = canonical(&obj);
                    p.verify_strict(signed.as_bytes(), &Signature::from_bytes(&sig))
                        .map_err(|_| {
                            fail(
                                line_no,
                                "the checkpoint's signature is not valid for this key",
                            )
                        })?;
                }
                report.checkpoints += 1;
                last_checkpoint_line = line_no;
                report.last_final = obj.get("final").and_then(Value::as_bool) == Some(true);
            }
            Some(_) => {}
            None => return Err(fail(line_no, "a record without a type")),
        }
    }
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
