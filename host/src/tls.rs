//! The TLS client configuration of every outbound connection the host makes
//! for the component (PostgreSQL, a Vault variables provider): the server's
//! certificate chain and host name verified against the system's trusted
//! roots, as Spin (on OpenSSL) does. The roots are the system store
//! (`/etc/ssl/certs`), or the file and folder `SSL_CERT_FILE` /
//! `SSL_CERT_DIR` name, loaded once at start.

use std::sync::Arc;

use rustls::ClientConfig;

pub fn verifying_client_config() -> anyhow::Result<Arc<ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    let (added, _ignored) = roots.add_parsable_certificates(native.certs);
    if added == 0 {
        eprintln!(
            "warning: no trusted root certificates found (system store, SSL_CERT_FILE, \
             SSL_CERT_DIR): every TLS server will be refused, as Spin does"
        );
    }
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
