//! The record format (docs/audit-format.md): one JSON object per line, chained.
//!
//! Every record carries `v` (1), `seq` (1, 2, 3, … with no gap) and, last, `mac`: the
//! HMAC-SHA256 of the previous record's MAC followed by this record's *content* — the
//! line's own bytes with its final `,"mac":"…"` member removed. The MAC covers bytes as
//! written, so a verifier needs no JSON canonicalisation to check it (and no two JSON
//! libraries can disagree about it). A keyless SHA-256 chain runs beside it over the same
//! contents; a checkpoint record states the chain's value so far and is signed with
//! Ed25519 over its canonical JSON, so a holder of the public key alone can check everything
//! up to the last checkpoint.

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

/// An HMAC key with its padded blocks already hashed, so each record costs only its own
/// bytes.
#[derive(Clone)]
pub struct MacKey(HmacSha256);

impl MacKey {
    /// Prepares `key`.
    pub fn new(key: &[u8; 32]) -> MacKey {
        // A 32-byte key is always accepted; the fallback cannot run.
        MacKey(
            <HmacSha256 as KeyInit>::new_from_slice(key)
                .unwrap_or_else(|_| <HmacSha256 as KeyInit>::new(&Default::default())),
        )
    }

    /// HMAC-SHA256(key, previous ‖ content).
    pub fn next(&self, previous: &[u8; 32], content: &[u8]) -> [u8; 32] {
        let mut m = self.0.clone();
        m.update(previous);
        m.update(content);
        m.finalize().into_bytes().into()
    }
}

/// HMAC-SHA256(key, previous ‖ content).
pub fn next_mac(key: &[u8; 32], previous: &[u8; 32], content: &[u8]) -> [u8; 32] {
    MacKey::new(key).next(previous, content)
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

/// Bytes a line ends with after its content: `,"mac":"` + 64 hex digits + `"}`.
pub const MAC_SUFFIX_LEN: usize = 8 + 64 + 2;

/// The content of a line (its bytes without the `mac` member), if it is shaped as a record.
pub fn content_of(line: &[u8]) -> Option<Vec<u8>> {
    let at = line.len().checked_sub(MAC_SUFFIX_LEN)?;
    let suffix = &line[at..];
    if !suffix.starts_with(b",\"mac\":\"") || !suffix.ends_with(b"\"}") {
        return None;
    }
    let mut content = line[..at].to_vec();
    content.push(b'}');
    Some(content)
}

/// Numbers `body` as the next record (`v`, `seq`) and seals it; a checkpoint is signed
/// first when `signer` is given (the `sig` covers the canonical JSON without `sig`).
pub fn seal(
    chain: &mut Chain,
    hmac_key: &[u8; 32],
    mut body: Map<String, Value>,
    signer: Option<&SigningKey>,
) -> String {
    body.insert("v".into(), json!(VERSION));
    body.insert("seq".into(), json!(chain.seq + 1));
    if let Some(key) = signer {
        let sig = key.sign(canonical(&body).as_bytes());
        body.insert("sig".into(), json!(hex(&sig.to_bytes())));
    }
    seal_content(chain, hmac_key, canonical(&body))
}

/// Seals a record whose content is already written: a JSON object on one line, whose `seq`
/// is the chain's next. Returns the line (without newline).
pub fn seal_content(chain: &mut Chain, hmac_key: &[u8; 32], content: String) -> String {
    seal_content_with(chain, &MacKey::new(hmac_key), content)
}

/// [`seal_content`] with a prepared key.
pub fn seal_content_with(chain: &mut Chain, key: &MacKey, content: String) -> String {
    chain.seq += 1;
    chain.mac = key.next(&chain.mac, content.as_bytes());
    chain.sha = next_sha(&chain.sha, content.as_bytes());
    let mut line = content;
    line.pop();
    line.push_str(",\"mac\":\"");
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
    // The running HMAC tag, signed: the signature covers the tag and the count.
    m.insert("tag".into(), json!(hex(&chain.mac)));
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
        let v: Map<String, Value> = serde_json::from_str(&line).unwrap();
        assert_eq!(v["mac"], json!(hex(&chain.mac)));
        let content = content_of(line.as_bytes()).unwrap();
        assert_eq!(next_mac(&[7; 32], &[0; 32], &content), chain.mac);
        let mut without = v.clone();
        without.remove("mac");
        assert_eq!(content, canonical(&without).into_bytes());
        assert_eq!(v["seq"], 1);
    }
}
