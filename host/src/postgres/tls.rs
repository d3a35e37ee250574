//! TLS to PostgreSQL as Spin 4.0.2 does it (its `factor-outbound-pg`, on
//! native-tls): under `prefer` (the default) and `require` the server's
//! certificate chain is verified against the system's trusted roots, and its
//! host name too (`crate::tls`); there is no "encrypt but accept any
//! certificate" mode, and a handshake that fails is an error, never a fall
//! back to plain text. `disable` is plain text.

use std::sync::Arc;

use rustls::ClientConfig;

/// The client configuration, built once.
pub struct Tls {
    config: Arc<ClientConfig>,
}

impl Tls {
    pub fn new() -> anyhow::Result<Tls> {
        Ok(Tls {
            config: crate::tls::verifying_client_config()?,
        })
    }

    /// The connector for one connection attempt.
    pub fn connector(&self) -> tokio_postgres_rustls::MakeRustlsConnect {
        tokio_postgres_rustls::MakeRustlsConnect::new((*self.config).clone())
    }
}
