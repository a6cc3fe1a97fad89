//! The probe of a chain-only TLS check (`verify-ca`, and `prefer`/`require` with a root file):
//! a connection of its own that goes as far as the TLS handshake and no further.
//!
//! It opens TCP to the server, reads the MySQL greeting, sends an SSLRequest packet and runs a
//! rustls handshake whose verifier checks the certificate chain against the root file and
//! nothing else. It returns the verified end-entity certificate, whose names then let the real
//! connection (mysql_async, which always checks a name with the chain) verify a name the
//! certificate carries. It never logs in: no password or user name is sent.
//!
//! The probe is bounded by the connect it is part of (the pool's create timeout, or the
//! recycle timeout of a `KILL QUERY` connection). A server counts it as an interrupted
//! handshake; MySQL's `max_connect_errors` forgives those once a connection from the host
//! succeeds, which the real connection right after it does.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs1KeyDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::{Backend, ErrorKind, Result, SqlMiddlewareDbError};

/// What the probe found.
#[derive(Debug)]
pub(super) enum Probe {
    /// The server offers no TLS.
    NoTls,
    /// The handshake succeeded and this end-entity certificate chains to the roots.
    Verified(CertificateDer<'static>),
}

fn config_error(msg: String) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(ErrorKind::Config, msg)
}

fn read(setting: &str, path: &std::path::Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        config_error(format!(
            "{setting}: cannot read {}: {}",
            path.display(),
            e.kind()
        ))
    })
}

/// Certificates as mysql_async reads them: PEM blocks, else (not text) one DER certificate.
fn certificates(setting: &str, bytes: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    if std::str::from_utf8(bytes).is_err() {
        return Ok(vec![CertificateDer::from(bytes.to_vec())]);
    }
    let certs = CertificateDer::pem_slice_iter(bytes)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| config_error(format!("{setting}: the PEM file cannot be read: {e}")))?;
    if certs.is_empty() {
        return Err(config_error(format!(
            "{setting}: the file holds no PEM certificate"
        )));
    }
    Ok(certs)
}

/// A private key as mysql_async reads it: PEM (PKCS#8, PKCS#1 or SEC1), else PKCS#1 DER.
fn private_key(bytes: &[u8]) -> Result<PrivateKeyDer<'static>> {
    if std::str::from_utf8(bytes).is_err() {
        return Ok(PrivateKeyDer::Pkcs1(PrivatePkcs1KeyDer::from(
            bytes.to_vec(),
        )));
    }
    PrivateKeyDer::from_pem_slice(bytes)
        .map_err(|e| config_error(format!("ssl-key: no usable private key in the file: {e}")))
}

/// The root file's contents, read once per connection: the probe and the real connection
/// trust the same bytes.
pub(super) fn read_roots(path: &std::path::Path) -> Result<Vec<u8>> {
    read("ssl-ca", path)
}

fn root_store(roots: &[u8]) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    for cert in certificates("ssl-ca", roots)? {
        store
            .add(cert)
            .map_err(|e| config_error(format!("ssl-ca: a certificate is not a usable CA: {e}")))?;
    }
    Ok(store)
}

/// The probe's rustls configuration: the chain-only verifier, and the client certificate
/// (presented as the real connection presents it, for servers that ask for it in the
/// handshake).
fn client_config(roots: &[u8], client: Option<&(PathBuf, PathBuf)>) -> Result<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = ChainOnly {
        roots: Arc::new(root_store(roots)?),
        algorithms: provider.signature_verification_algorithms,
    };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| config_error(format!("TLS setup failed: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    match client {
        Some((cert, key)) => {
            let chain = certificates("ssl-cert", &read("ssl-cert", cert)?)?;
            let key = private_key(&read("ssl-key", key)?)?;
            builder.with_client_auth_cert(chain, key).map_err(|e| {
                config_error(format!(
                    "ssl-cert/ssl-key: the client certificate and key do not go together: {e}"
                ))
            })
        }
        None => Ok(builder.with_no_client_auth()),
    }
}

/// Verifies the chain against the roots; the name is never looked at.
#[derive(Debug)]
struct ChainOnly {
    roots: Arc<RootCertStore>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let cert = ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_cert_signed_by_trust_anchor(
            &cert,
            &self.roots,
            intermediates,
            now,
            self.algorithms.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Capability flags of the MySQL protocol used here.
const CLIENT_LONG_PASSWORD: u32 = 0x0000_0001;
const CLIENT_PROTOCOL_41: u32 = 0x0000_0200;
const CLIENT_SSL: u32 = 0x0000_0800;
const CLIENT_SECURE_CONNECTION: u32 = 0x0000_8000;
/// utf8mb4_general_ci, as mysql_async announces on servers since 5.5.3.
const UTF8MB4_GENERAL_CI: u8 = 45;
/// A greeting larger than this is not a greeting.
const MAX_GREETING: usize = 64 * 1024;

fn lost(e: &std::io::Error) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::ConnectionLost,
        format!("the connection to the MySQL server failed: {e}"),
    )
}

fn protocol_error(what: &str) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::Tls,
        format!("the MySQL server's greeting is not understood ({what}); no TLS was set up"),
    )
}

/// What the greeting says: TLS offered or not, or the server's refusal (an ERR packet).
fn read_greeting(payload: &[u8]) -> Result<bool> {
    match payload.first() {
        Some(0xff) => {
            let code = payload
                .get(1..3)
                .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
            let rest = payload.get(3..).unwrap_or_default();
            let (state, message) = match rest.strip_prefix(b"#") {
                Some(r) if r.len() >= 5 => (&r[..5], &r[5..]),
                _ => (&b"HY000"[..], rest),
            };
            let server = mysql_async::ServerError {
                code,
                message: String::from_utf8_lossy(message).into_owned(),
                state: String::from_utf8_lossy(state).into_owned(),
            };
            Err(super::error::map_err(mysql_async::Error::Server(server)))
        }
        Some(10) => {
            // Protocol 10: server version (NUL-terminated), connection id (4), scramble (8),
            // filler (1), then the lower two bytes of the capability flags.
            let version_end = payload[1..]
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| protocol_error("no server version"))?;
            let at = 1 + version_end + 1 + 4 + 8 + 1;
            let caps = payload
                .get(at..at + 2)
                .ok_or_else(|| protocol_error("no capability flags"))?;
            Ok(u32::from(u16::from_le_bytes([caps[0], caps[1]])) & CLIENT_SSL != 0)
        }
        Some(v) => Err(protocol_error(&format!("protocol version {v}"))),
        None => Err(protocol_error("an empty packet")),
    }
}

/// The SSLRequest packet (sequence number 1), which asks the server to start TLS.
fn ssl_request() -> [u8; 36] {
    let mut p = [0u8; 36];
    p[0] = 32;
    p[3] = 1;
    let flags = CLIENT_LONG_PASSWORD | CLIENT_PROTOCOL_41 | CLIENT_SSL | CLIENT_SECURE_CONNECTION;
    p[4..8].copy_from_slice(&flags.to_le_bytes());
    p[8..12].copy_from_slice(&(16u32 * 1024 * 1024).to_le_bytes());
    p[12] = UTF8MB4_GENERAL_CI;
    p
}

/// A TLS failure: the rustls error's reason when there is one.
fn tls_error(e: std::io::Error) -> SqlMiddlewareDbError {
    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        Some(r) => SqlMiddlewareDbError::from_driver(
            Backend::Mysql,
            ErrorKind::Tls,
            None,
            format!("TLS with the MySQL server failed: {r}"),
            r.clone(),
        ),
        None => lost(&e),
    }
}

/// Runs the probe against `host:port` with the root file's contents `roots` and the client
/// certificate and key files (see the module docs).
pub(super) async fn probe(
    host: &str,
    port: u16,
    roots: &[u8],
    client: Option<&(PathBuf, PathBuf)>,
) -> Result<Probe> {
    let config = client_config(roots, client)?;
    let mut tcp = tokio::net::TcpStream::connect((host, port))
        .await
        .map_err(|e| lost(&e))?;
    // The name is only sent (as SNI) and never checked here; a host that is no valid name
    // goes by its address, which sends none.
    let name = match ServerName::try_from(host) {
        Ok(n) => n.to_owned(),
        Err(_) => ServerName::IpAddress(tcp.peer_addr().map_err(|e| lost(&e))?.ip().into()),
    };
    let mut header = [0u8; 4];
    tcp.read_exact(&mut header).await.map_err(|e| lost(&e))?;
    let len = usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
    if len > MAX_GREETING {
        return Err(protocol_error("a packet too large for a greeting"));
    }
    let mut payload = vec![0u8; len];
    tcp.read_exact(&mut payload).await.map_err(|e| lost(&e))?;
    if !read_greeting(&payload)? {
        return Ok(Probe::NoTls);
    }
    tcp.write_all(&ssl_request()).await.map_err(|e| lost(&e))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(tls_error)?;
    let cert = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.clone().into_owned());
    match cert {
        Some(c) => Ok(Probe::Verified(c)),
        None => Err(SqlMiddlewareDbError::new(
            ErrorKind::Tls,
            "the MySQL server presented no certificate",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_greeting_says_whether_tls_is_offered() {
        let mut g = vec![10u8];
        g.extend_from_slice(b"10.11.6-MariaDB\0");
        g.extend_from_slice(&[1, 0, 0, 0]);
        g.extend_from_slice(b"12345678\0");
        let with = g
            .iter()
            .copied()
            .chain((0xf7ffu16 | 0x0800).to_le_bytes())
            .collect::<Vec<_>>();
        let without = g
            .iter()
            .copied()
            .chain((0xf7ffu16 & !0x0800).to_le_bytes())
            .collect::<Vec<_>>();
        assert!(read_greeting(&with).unwrap());
        assert!(!read_greeting(&without).unwrap());
        for short in 0..with.len() {
            let r = read_greeting(&with[..short]);
            assert!(r.is_err(), "{short}: {r:?}");
        }
        let e = read_greeting(&[9, 0]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Tls);
    }

    #[test]
    fn a_refusing_greeting_is_the_servers_error() {
        let mut p = vec![0xff];
        p.extend_from_slice(&1040u16.to_le_bytes());
        p.extend_from_slice(b"#08004Too many connections");
        let e = read_greeting(&p).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectionLost, "{e}");
        assert!(e.to_string().contains("Too many connections"), "{e}");
        let mut p = vec![0xff];
        p.extend_from_slice(&1130u16.to_le_bytes());
        p.extend_from_slice(b"Host is not allowed to connect");
        let e = read_greeting(&p).unwrap_err();
        assert!(e.to_string().contains("not allowed"), "{e}");
    }

    #[test]
    fn the_ssl_request_asks_for_tls() {
        let p = ssl_request();
        assert_eq!(&p[..4], &[32, 0, 0, 1]);
        let flags = u32::from_le_bytes([p[4], p[5], p[6], p[7]]);
        assert_ne!(flags & CLIENT_SSL, 0);
        assert_ne!(flags & CLIENT_PROTOCOL_41, 0);
    }

    #[test]
    fn bad_files_are_config_errors() {
        let e = certificates("ssl-ca", b"not a certificate\n").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(e.to_string().contains("no PEM certificate"), "{e}");
        let e = private_key(b"not a key\n").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
        let missing = std::path::Path::new("/nonexistent/sqlmw-ca.pem");
        let e = read_roots(missing).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(e.to_string().contains("ssl-ca"), "{e}");
        let e = client_config(b"junk\n", None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
    }
}
