//! A private certificate authority for https remotes (`ENGRAM_GIT_CA`, git's
//! `http.sslCAInfo`): the server's certificate is checked against the authority's
//! certificates (and any intermediates in the same PEM file) with rustls' WebPKI
//! verifier: chain, validity dates, key usage and the host name or IP address.
//!
//! libgit2 only hands over the server's own certificate, so the PEM file must hold
//! every intermediate between it and the authority.

use std::path::Path;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

/// Whether the certificate `leaf` (DER) of `host` is issued by an authority in `ca_pem`.
pub(super) fn verify(ca_pem: &Path, leaf: &[u8], host: &str) -> Result<(), String> {
    let pem = std::fs::read(ca_pem).map_err(|e| format!("cannot read {}: {e}", ca_pem.display()))?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{} is not a PEM certificate file: {e}", ca_pem.display()))?;
    if certs.is_empty() {
        return Err(format!("{} holds no certificate", ca_pem.display()));
    }
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs.iter().cloned());
    if added == 0 {
        return Err(format!("{} holds no usable certificate", ca_pem.display()));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| e.to_string())?;
    let name = ServerName::try_from(host.to_owned()).map_err(|e| format!("{host}: {e}"))?;
    verifier
        .verify_server_cert(&CertificateDer::from(leaf.to_vec()), &certs, &name, &[], UnixTime::now())
        .map(|_| ())
        .map_err(|e| e.to_string())
}
