//! Signatures: the fleet's Ed25519 key signs replies, policies and kill commands; a device
//! may also hold its own HMAC-SHA256 key for replies. Tags are full length, compared in
//! constant time, and an all-zero key verifies nothing.

use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier as _, VerifyingKey};
use hmac::{Hmac, KeyInit, Mac};
use serde::Serialize;
use sha2::Sha256;

use crate::wire::{Sig, signed_bytes};

/// `ed25519`.
pub const ED25519: &str = "ed25519";
/// `hmac-sha256`.
pub const HMAC_SHA256: &str = "hmac-sha256";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The fleet's signing key (the fleet service holds it).
pub struct FleetSigner(SigningKey);

impl FleetSigner {
    /// From the 32-byte seed.
    pub fn from_seed(seed: &[u8; 32]) -> FleetSigner {
        FleetSigner(SigningKey::from_bytes(seed))
    }

    /// The public key devices verify with, hex.
    pub fn public_hex(&self) -> String {
        hex(&self.0.verifying_key().to_bytes())
    }

    /// Signs `msg` as a message of `kind`.
    pub fn sign<T: Serialize>(&self, kind: &str, msg: &T) -> Sig {
        Sig {
            alg: ED25519.into(),
            value: hex(&self.0.sign(&signed_bytes(kind, msg)).to_bytes()),
        }
    }
}

/// A device key's HMAC-SHA256 tag over `msg` as `kind`.
pub fn hmac_sign<T: Serialize>(key: &[u8; 32], kind: &str, msg: &T) -> Sig {
    let tag = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .map(|mut m| {
            m.update(&signed_bytes(kind, msg));
            m.finalize().into_bytes().to_vec()
        })
        .unwrap_or_default();
    Sig {
        alg: HMAC_SHA256.into(),
        value: hex(&tag),
    }
}

/// What a device trusts.
#[derive(Clone, Debug, Default)]
pub struct Trust {
    /// The fleet's public key.
    pub fleet: Option<VerifyingKey>,
    /// This device's own HMAC key (replies only).
    pub device: Option<[u8; 32]>,
}

/// Why a key could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(pub String);

impl Trust {
    /// Trust in the fleet key given as 64 hex digits.
    pub fn fleet_hex(hex_key: &str) -> Result<Trust, KeyError> {
        let bytes: [u8; 32] = unhex(hex_key.trim())
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| KeyError("the fleet public key must be 64 hex digits".into()))?;
        let key = VerifyingKey::from_bytes(&bytes)
            .map_err(|e| KeyError(format!("not an Ed25519 public key: {e}")))?;
        Ok(Trust {
            fleet: Some(key),
            device: None,
        })
    }

    /// Whether `sig` is a valid signature of `msg` as `kind` by the fleet key, or — for
    /// replies, when `device_ok` — by this device's own key.
    pub fn verify<T: Serialize>(&self, kind: &str, msg: &T, sig: &Sig, device_ok: bool) -> bool {
        let Some(raw) = unhex(&sig.value) else {
            return false;
        };
        let bytes = signed_bytes(kind, msg);
        match sig.alg.as_str() {
            ED25519 => {
                let (Some(key), Ok(s)) = (&self.fleet, <[u8; 64]>::try_from(raw.as_slice())) else {
                    return false;
                };
                key.verify(&bytes, &Signature::from_bytes(&s)).is_ok()
            }
            HMAC_SHA256 if device_ok => {
                let Some(key) = self.device.filter(|k| k.iter().any(|b| *b != 0)) else {
                    return false;
                };
                let Ok(mut m) = <Hmac<Sha256> as KeyInit>::new_from_slice(&key) else {
                    return false;
                };
                m.update(&bytes);
                raw.len() == 32 && m.verify_slice(&raw).is_ok()
            }
            _ => false,
        }
    }
}
