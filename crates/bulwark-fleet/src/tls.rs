//! TLS to the broker (`mqtts://`): rustls with the ring provider the rest of Bulwark uses,
//! trusting only the CA the operator names — a fleet's broker certificate comes from the
//! fleet's own CA, and the system's roots would let any public CA vouch for it.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// A client configuration trusting the certificates in the PEM file at `ca`.
pub fn client_config(ca: &Path) -> Result<Arc<rustls::ClientConfig>, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut roots = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(ca)
        .map_err(|e| format!("cannot read the CA file {}: {e}", ca.display()))?;
    for c in certs {
        let c = c.map_err(|e| format!("{}: {e}", ca.display()))?;
        roots
            .add(c)
            .map_err(|e| format!("{}: not a usable CA certificate: {e}", ca.display()))?;
    }
    if roots.is_empty() {
        return Err(format!("{} holds no certificate", ca.display()));
    }
    Ok(Arc::new(
        rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    ))
}
