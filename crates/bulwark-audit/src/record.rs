//! The record format (docs/audit-format.md): one JSON object per line, chained.
//!
//! Every record carries `v` (1), `seq` (1, 2, 3, … with no gap) and, last, `mac`: the
//! HMAC-SHA256 of the previous record's MAC followed by this record's *content* — the record
//! without `mac`, as canonical JSON (keys sorted by their UTF-8 bytes, no whitespace). A
//! keyless SHA-256 chain runs beside it over the same contents; a checkpoint record states
//! the chain's value so far and is signed with Ed25519, so a holder of the public key alone
//! can check everything up to the last checkpoint.

use ed25519_dalek::{Signer, SigningKey};
use hmac::{KeyInit, Mac};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::keys::hex;

/// The format version.
pub const VERSION: u64 = 1;

type HmacSha256 = hmac::Hmac<Sha256>;

/// Where a chain stands after its last record (all zeros before the first).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chain {
    /// The last record's sequence number (0 before the first).
    pub seq: u64,
    /// The last record's MAC (zeros before the first).
    pub mac: [u8; 32],
    /// The keyless chain over contents (zeros before the first).
    pub sha: [u8; 32],
}

/// HMAC-SHA256(key, previous ‖ content).
pub fn next_mac(key: &[u8; 32], previous: &[u8; 32], content: &[u8]) -> [u8; 32] {
    // A 32-byte key is always accepted; the fallback cannot run.
    let mut m = <HmacSha256 as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| <HmacSha256 as KeyInit>::new(&Default::default()));
    m.update(previous);
    m.update(content);
    m.finalize().into_bytes().into()
}

/// SHA-256(previous ‖ content).
pub fn next_sha(previous: &[u8; 32], content: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(previous);
    h.update(content);
    h.finalize().into()
}

/// Canonical JSON of an object. `serde_json`'s map is ordered by key bytes, and it writes
/// no whitespace: its output is the canonical form.
pub fn canonical(v: &Map<String, Value>) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Seals `body` as the next record: numbers it, signs it when `signer` is given (the `sig`
/// covers the content without `sig`), chains it, and returns the line (without newline).
pub fn seal(
    chain: &mut Chain,
    hmac_key: &[u8; 32],
    mut body: Map<String, Value>,
    signer: Option<&SigningKey>,
) -> String {
    chain.seq += 1;
    body.insert("v".into(), json!(VERSION));
    body.insert("seq".into(), json!(chain.seq));
    if let Some(key) = signer {
        let sig = key.sign(canonical(&body).as_bytes());
        body.insert("sig".into(), json!(hex(&sig.to_bytes())));
    }
    let content = canonical(&body);
    chain.mac = next_mac(hmac_key, &chain.mac, content.as_bytes());
    chain.sha = next_sha(&chain.sha, content.as_bytes());
    // `mac` goes last, outside the sorted content: a reader removes it and re-reads the rest.
    let mut line = content;
    line.pop();
    if !body.is_empty() {
        line.push(',');
    }
    line.push_str("\"mac\":\"");
    line.push_str(&hex(&chain.mac));
    line.push_str("\"}");
    line
}

/// A checkpoint body: the keyless chain so far, signed by the caller through [`seal`].
pub fn checkpoint(ts_ms: u64, chain: &Chain, key_id: &str, last: bool) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), json!("checkpoint"));
    m.insert("ts".into(), json!(ts_ms));
    m.insert("covers".into(), json!(chain.seq));
    m.insert("sha".into(), json!(hex(&chain.sha)));
    m.insert("key_id".into(), json!(key_id));
    m.insert("final".into(), json!(last));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_line_reads_back_to_its_content() {
        let mut chain = Chain::default();
        let mut body = Map::new();
        body.insert("type".into(), json!("decision"));
        body.insert("b".into(), json!("x\ny\u{1}"));
        let line = seal(&mut chain, &[7; 32], body, None);
        let mut v: Map<String, Value> = serde_json::from_str(&line).unwrap();
        let mac = v.remove("mac").unwrap();
        assert_eq!(mac, json!(hex(&chain.mac)));
        let content = canonical(&v);
        assert_eq!(next_mac(&[7; 32], &[0; 32], content.as_bytes()), chain.mac);
        assert!(line.ends_with("\"}"));
        assert_eq!(v["seq"], 1);
    }
}
