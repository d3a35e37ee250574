//! A HashiCorp Vault variables provider, as Spin's `[[variables_provider]]
//! type = "vault"`: a variable `name` is the KV version 2 secret
//! `{mount}/{prefix}/{name}` (or `{mount}/{name}`), whose field `value`
//! holds it. A secret that does not exist is "no value" (the next source is
//! asked); any other failure is an error, which the component sees as
//! `error::provider` and which is never replaced by a default.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use bytes::Bytes;
use http::{Request, StatusCode, Uri};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use tokio::net::TcpStream;

/// Connecting and answering together; Vault answers a read in milliseconds.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The `[[variables_provider]]` table of a Vault provider.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VaultConfig {
    pub url: String,
    pub token: String,
    pub mount: String,
    pub prefix: Option<String>,
}

pub struct Vault {
    base: Uri,
    token: String,
    mount: String,
    prefix: Option<String>,
    tls: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        write!(f, "Vault({}, mount {:?})", self.base, self.mount)
    }
}

impl Vault {
    pub fn new(config: VaultConfig) -> Result<Vault> {
        let base: Uri = config
            .url
            .trim_end_matches('/')
            .parse()
            .with_context(|| format!("vault url {:?} is not a URL", config.url))?;
        if !matches!(base.scheme_str(), Some("http" | "https")) || base.host().is_none() {
            bail!("vault url {:?} is not http(s)://host[:port]", config.url);
        }
        let tls = crate::tls::verifying_client_config()?;
        Ok(Vault {
            base,
            token: config.token,
            mount: config.mount.trim_matches('/').to_string(),
            prefix: config
                .prefix
                .map(|p| p.trim_matches('/').to_string())
                .filter(|p| !p.is_empty()),
            tls,
        })
    }

    /// `Ok(None)` when Vault has no such secret; `Err` never holds the token.
    pub async fn get(&self, name: &str) -> Result<Option<String>, String> {
        match tokio::time::timeout(TIMEOUT, self.read(name)).await {
            Ok(result) => result.map_err(|e| format!("Vault at {}: {e:#}", self.base)),
            Err(_) => {
                Err(format!("Vault at {} did not answer within {} s", self.base, TIMEOUT.as_secs()))
            }
        }
    }

    async fn read(&self, name: &str) -> Result<Option<String>> {
        let secret = match &self.prefix {
            Some(prefix) => format!("{prefix}/{name}"),
            None => name.to_string(),
        };
        let path = format!("/v1/{}/data/{secret}", self.mount);
        let host = self.base.host().unwrap_or_default();
        let https = self.base.scheme_str() == Some("https");
        let port = self.base.port_u16().unwrap_or(if https { 443 } else { 80 });
        let request = Request::get(path)
            .header(http::header::HOST, self.base.authority().map_or(host, |a| a.as_str()))
            .header("x-vault-token", &self.token)
            .header("x-vault-request", "true")
            .body(Empty::<Bytes>::new())?;
        let stream = TcpStream::connect((host.trim_matches(['[', ']']), port))
            .await
            .context("cannot connect")?;
        let (status, body) = if https {
            let name = rustls::pki_types::ServerName::try_from(host.to_string())?;
            let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
                .connect(name, stream)
                .await
                .context("TLS")?;
            send(TokioIo::new(tls), request).await?
        } else {
            send(TokioIo::new(stream), request).await?
        };
        match status {
            StatusCode::OK => {
                // KV version 2: `{"data": {"data": {"value": ...}}}`.
                let read: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                match read.pointer("/data/data/value").and_then(serde_json::Value::as_str) {
                    Some(value) => Ok(Some(value.to_string())),
                    None => bail!("the secret has no string field \"value\""),
                }
            }
            StatusCode::NOT_FOUND => Ok(None),
            other => bail!("answered {other}"),
        }
    }
}

async fn send<Io>(io: Io, request: Request<Empty<Bytes>>) -> Result<(StatusCode, Bytes)>
where
    Io: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let response = sender.send_request(request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, body))
}
