//! TLS to the server: libpq's `sslmode` and its certificate files turned into the connector
//! every connection of a pool uses (the pool's, a `Listener`'s, a cancel request's).
//!
//! Without the `postgres-tls` feature the connector is always plain text, and a configuration
//! that asks for TLS (`require`, `verify-ca`, `verify-full`) is an [`ErrorKind::Config`] error,
//! never a plain-text connection. With it, TLS runs on rustls with the `ring` provider.

use std::path::PathBuf;

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

pub use crate::server::SslMode;

fn config_error(msg: impl Into<String>) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(ErrorKind::Config, msg.into())
}

/// Where the trusted roots come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Roots {
    /// A PEM file of CA certificates (`sslrootcert=PATH`).
    File(PathBuf),
    /// The Mozilla root set built into the crate (`sslrootcert=system`).
    System,
}

/// The TLS settings of a pool, as given (files are read when the pool is built).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TlsOptions {
    /// `None`: the `tokio_postgres::Config`'s own mode.
    pub(crate) mode: Option<SslMode>,
    pub(crate) roots: Option<Roots>,
    /// PEM certificate chain and private key presented to the server.
    pub(crate) client_cert: Option<PathBuf>,
    pub(crate) client_key: Option<PathBuf>,
}

/// The mode a driver configuration asks for.
fn driver_mode(cfg: &tokio_postgres::Config) -> SslMode {
    match cfg.get_ssl_mode() {
        tokio_postgres::config::SslMode::Disable => SslMode::Disable,
        tokio_postgres::config::SslMode::Require => SslMode::Require,
        _ => SslMode::Prefer,
    }
}

impl TlsOptions {
    /// The mode in force: the one set, else the driver configuration's.
    fn mode(&self, cfg: &tokio_postgres::Config) -> SslMode {
        self.mode.unwrap_or_else(|| driver_mode(cfg))
    }

    /// Fixes the pool's mode at the strictest one given anywhere for it: this setting (or the
    /// primary's configuration), each replica's configuration, and `replica_modes` (modes the
    /// replicas' URLs named that the driver configuration cannot hold, such as `verify-full`).
    /// Every pool, `Listener` and cancel request of the pool then uses it.
    pub(crate) fn raise_to_strictest<'a>(
        &mut self,
        primary: &tokio_postgres::Config,
        replicas: impl IntoIterator<Item = &'a tokio_postgres::Config>,
        replica_modes: Option<SslMode>,
    ) {
        // A driver configuration's `require` was given; its `prefer` may be only the
        // driver's default, and so does not raise a pool set to `disable`.
        let required = |cfg: &tokio_postgres::Config| {
            (driver_mode(cfg) == SslMode::Require).then_some(SslMode::Require)
        };
        let strictest = replicas
            .into_iter()
            .filter_map(required)
            .chain(required(primary))
            .chain(replica_modes)
            .fold(self.mode(primary), SslMode::max);
        self.mode = Some(strictest);
    }
}

/// The connector of every connection a pool opens. Cloning it is cheap.
#[derive(Clone)]
pub(crate) enum Connector {
    /// No TLS (`disable`, or a build without `postgres-tls`).
    Plain,
    /// rustls, configured for the pool's mode and files.
    #[cfg(feature = "postgres-tls")]
    Rustls(tokio_postgres_rustls::MakeRustlsConnect),
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Connector::Plain => "Connector::Plain",
            #[cfg(feature = "postgres-tls")]
            Connector::Rustls(_) => "Connector::Rustls",
        })
    }
}

/// Checks settings that need no file: the pairing of `sslcert` and `sslkey`, `sslrootcert=system`
/// with its mode, and (without `postgres-tls`) that nothing asks for TLS.
fn validate(mode: SslMode, opts: &TlsOptions) -> Result<()> {
    if opts.client_cert.is_some() != opts.client_key.is_some() {
        return Err(config_error(
            "a client certificate needs both sslcert and sslkey (the certificate and its private key)",
        ));
    }
    if opts.roots == Some(Roots::System) && !matches!(mode, SslMode::VerifyFull | SslMode::Disable)
    {
        // As libpq: the system roots are only trusted together with a host name check.
        return Err(config_error(format!(
            "sslrootcert=system needs sslmode=verify-full (it is {mode})"
        )));
    }

    #[cfg(not(feature = "postgres-tls"))]
    {
        if matches!(
            mode,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
        ) {
            return Err(config_error(format!(
                "sslmode={mode} asks for TLS, which this build does not support (enable the \
                 `postgres-tls` feature); refusing to connect in plain text"
            )));
        }
        if opts.roots.is_some() || opts.client_cert.is_some() {
            return Err(config_error(
                "sslrootcert, sslcert and sslkey need the `postgres-tls` feature",
            ));
        }
    }
    Ok(())
}

/// [`validate`] for settings whose mode may still come from the driver configuration (a URL
/// being parsed): an unset mode counts as `prefer`.
pub(crate) fn check(opts: &TlsOptions) -> Result<()> {
    validate(opts.mode.unwrap_or_default(), opts)
}

/// Checks `opts` against this build, sets the driver's TLS mode in `cfg`, and builds the
/// connector. Certificate and key files are read here: a missing or bad file is an
/// [`ErrorKind::Config`] error naming the setting.
pub(crate) fn connector(opts: &TlsOptions, cfg: &mut tokio_postgres::Config) -> Result<Connector> {
    use tokio_postgres::config::SslMode as Driver;
    let mode = opts.mode(cfg);
    validate(mode, opts)?;
    if mode == SslMode::VerifyCa && opts.roots.is_none() {
        // As libpq, and for the reason `sslrootcert=system` needs verify-full: verify-ca checks
        // the chain and not the name, so the public roots would accept a certificate issued
        // for any name. Checked here, when the pool is built, as the file may be given after
        // the URL.
        return Err(config_error(
            "sslmode=verify-ca needs sslrootcert=PATH (the server's CA): it checks the chain \
             and not the host name, so the built-in public roots would accept a certificate \
             issued for any name; give the CA file, or use verify-full",
        ));
    }
    cfg.ssl_mode(match mode {
        SslMode::Disable => Driver::Disable,
        SslMode::Prefer => Driver::Prefer,
        _ => Driver::Require,
    });
    if mode == SslMode::Disable {
        return Ok(Connector::Plain);
    }
    build(mode, opts)
}

/// As libpq built without TLS support: `prefer` connects in plain text (`validate` refused
/// every mode above it).
#[cfg(not(feature = "postgres-tls"))]
fn build(_mode: SslMode, _opts: &TlsOptions) -> Result<Connector> {
    Ok(Connector::Plain)
}

#[cfg(feature = "postgres-tls")]
fn build(mode: SslMode, opts: &TlsOptions) -> Result<Connector> {
    let config = rustls_config::client_config(mode, opts)?;
    Ok(Connector::Rustls(
        tokio_postgres_rustls::MakeRustlsConnect::new(config),
    ))
}

impl Connector {
    /// Connects a client outside the pool (a `Listener`) and hands its connection to `drive`,
    /// whatever the stream type.
    pub(crate) async fn connect<D>(
        &self,
        cfg: &tokio_postgres::Config,
        drive: D,
    ) -> std::result::Result<tokio_postgres::Client, tokio_postgres::Error>
    where
        D: Driver,
    {
        match self {
            Connector::Plain => {
                let (client, conn) = cfg.connect(tokio_postgres::NoTls).await?;
                drive.drive(conn);
                Ok(client)
            }
            #[cfg(feature = "postgres-tls")]
            Connector::Rustls(tls) => {
                let (client, conn) = cfg.connect(tls.clone()).await?;
                drive.drive(conn);
                Ok(client)
            }
        }
    }

    /// Sends a cancel request for `token`'s statement, over the same TLS as the connection.
    pub(crate) async fn cancel(
        self,
        token: tokio_postgres::CancelToken,
    ) -> std::result::Result<(), tokio_postgres::Error> {
        match self {
            Connector::Plain => token.cancel_query(tokio_postgres::NoTls).await,
            #[cfg(feature = "postgres-tls")]
            Connector::Rustls(tls) => token.cancel_query(tls).await,
        }
    }
}

/// Something that runs a connection's I/O once it is made (the `Listener`'s task).
pub(crate) trait Driver {
    /// Takes the connection; it must be polled for the client to make progress.
    fn drive<S, T>(self, conn: tokio_postgres::Connection<S, T>)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static;
}

/// A cancel request for one connection's running statement: its token and its connector.
pub(crate) struct CancelRequest {
    token: tokio_postgres::CancelToken,
    connector: Connector,
}

impl CancelRequest {
    pub(crate) fn new(token: tokio_postgres::CancelToken, connector: Connector) -> Self {
        Self { token, connector }
    }

    /// Sends it (errors are the caller's to ignore: a cancel is best effort).
    pub(crate) async fn send(self) -> std::result::Result<(), tokio_postgres::Error> {
        self.connector.cancel(self.token).await
    }
}

#[cfg(feature = "postgres-tls")]
mod rustls_config {
    //! The rustls `ClientConfig` of a mode: which roots, which checks, which client certificate.

    use std::sync::Arc;

    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
    use rustls::server::ParsedCertificate;
    use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

    use super::{Roots, SslMode, TlsOptions, config_error};
    use crate::error::Result;

    /// What the verifier checks of the server's certificate.
    #[derive(Debug)]
    struct Verifier {
        /// `None`: nothing (encryption without authentication, `prefer`/`require` without a
        /// root file). The handshake's signatures are still verified.
        roots: Option<Arc<RootCertStore>>,
        /// Whether the certificate must name the host (`verify-full`).
        check_name: bool,
        algorithms: WebPkiSupportedAlgorithms,
    }

    impl ServerCertVerifier for Verifier {
        fn verify_server_cert(
            &self,
            end_entity: &CertificateDer<'_>,
            intermediates: &[CertificateDer<'_>],
            server_name: &ServerName<'_>,
            _ocsp_response: &[u8],
            now: UnixTime,
        ) -> std::result::Result<ServerCertVerified, rustls::Error> {
            let Some(roots) = &self.roots else {
                return Ok(ServerCertVerified::assertion());
            };
            let cert = ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.algorithms.all,
            )?;
            if self.check_name {
                rustls::client::verify_server_name(&cert, server_name)?;
            }
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

    /// The certificates of the PEM file at `path` (the setting is named in errors).
    fn certificates(setting: &str, path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>> {
        let bad = |e: &dyn std::fmt::Display| {
            config_error(format!(
                "{setting}: cannot read certificates from {}: {e}",
                path.display()
            ))
        };
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(|e| bad(&e))?
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| bad(&e))?;
        if certs.is_empty() {
            return Err(bad(&"the file holds no PEM certificate"));
        }
        Ok(certs)
    }

    /// The private key of the PEM file at `path`.
    fn private_key(path: &std::path::Path) -> Result<PrivateKeyDer<'static>> {
        PrivateKeyDer::from_pem_file(path).map_err(|e| {
            config_error(format!(
                "sslkey: cannot read a private key (PKCS#8, PKCS#1 or SEC1 PEM) from {}: {e}",
                path.display()
            ))
        })
    }

    fn roots_of(roots: &Roots) -> Result<RootCertStore> {
        let mut store = RootCertStore::empty();
        match roots {
            Roots::System => store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            Roots::File(path) => {
                for cert in certificates("sslrootcert", path)? {
                    store.add(cert).map_err(|e| {
                        config_error(format!(
                            "sslrootcert: a certificate in {} is not a usable CA: {e}",
                            path.display()
                        ))
                    })?;
                }
            }
        }
        Ok(store)
    }

    /// The rustls configuration for `mode` (never `disable`) and the files of `opts`.
    pub(super) fn client_config(mode: SslMode, opts: &TlsOptions) -> Result<ClientConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = match (&opts.roots, mode) {
            (Some(r), _) => Some(roots_of(r)?),
            // verify-full without a file: the built-in Mozilla roots (`validate` refuses
            // verify-ca without one).
            (None, SslMode::VerifyFull) => Some(roots_of(&Roots::System)?),
            (None, _) => None,
        };
        let verifier = Verifier {
            roots: roots.map(Arc::new),
            check_name: mode == SslMode::VerifyFull,
            algorithms: provider.signature_verification_algorithms,
        };
        let builder =
            ClientConfig::builder_with_provider(Arc::clone(&provider) as Arc<CryptoProvider>)
                .with_safe_default_protocol_versions()
                .map_err(|e| config_error(format!("TLS setup failed: {e}")))?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier));
        match (&opts.client_cert, &opts.client_key) {
            (Some(cert), Some(key)) => {
                let chain = certificates("sslcert", cert)?;
                let key = private_key(key)?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    config_error(format!(
                        "sslcert/sslkey: the client certificate and key do not go together: {e}"
                    ))
                })
            }
            _ => Ok(builder.with_no_client_auth()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_as_libpq_spells_them() {
        for m in [
            SslMode::Disable,
            SslMode::Prefer,
            SslMode::Require,
            SslMode::VerifyCa,
            SslMode::VerifyFull,
        ] {
            assert_eq!(m.as_str().parse::<SslMode>().unwrap(), m);
        }
        let e = "verify_full".parse::<SslMode>().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
    }

    #[test]
    fn the_driver_mode_follows_the_setting() {
        let mut cfg = tokio_postgres::Config::new();
        let opts = TlsOptions {
            mode: Some(SslMode::Disable),
            ..Default::default()
        };
        assert!(matches!(connector(&opts, &mut cfg), Ok(Connector::Plain)));
        assert_eq!(cfg.get_ssl_mode(), tokio_postgres::config::SslMode::Disable);
        let half = TlsOptions {
            mode: Some(SslMode::Require),
            client_cert: Some("c.pem".into()),
            ..Default::default()
        };
        let e = connector(&half, &mut cfg).unwrap_err();
        assert!(e.to_string().contains("sslkey"), "{e}");
    }

    #[cfg(not(feature = "postgres-tls"))]
    #[test]
    fn without_the_feature_tls_is_refused_not_downgraded() {
        for mode in [SslMode::Require, SslMode::VerifyCa, SslMode::VerifyFull] {
            let mut cfg = tokio_postgres::Config::new();
            let opts = TlsOptions {
                mode: Some(mode),
                ..Default::default()
            };
            let e = connector(&opts, &mut cfg).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Config);
            assert!(e.to_string().contains("postgres-tls"), "{e}");
        }
        let mut cfg = tokio_postgres::Config::new();
        cfg.ssl_mode(tokio_postgres::config::SslMode::Require);
        assert!(connector(&TlsOptions::default(), &mut cfg).is_err());
    }

    #[cfg(feature = "postgres-tls")]
    #[test]
    fn verify_ca_needs_a_root_file_when_the_pool_is_built() {
        let opts = TlsOptions {
            mode: Some(SslMode::VerifyCa),
            ..Default::default()
        };
        // A URL may name the mode before the builder gives the file.
        check(&opts).unwrap();
        let e = connector(&opts, &mut tokio_postgres::Config::new()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(e.to_string().contains("sslrootcert"), "{e}");
        let full = TlsOptions {
            mode: Some(SslMode::VerifyFull),
            ..Default::default()
        };
        assert!(connector(&full, &mut tokio_postgres::Config::new()).is_ok());
    }

    #[cfg(feature = "postgres-tls")]
    #[test]
    fn bad_files_are_config_errors() {
        let dir = std::env::temp_dir().join(format!("sqlmw_tls_unit_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let junk = dir.join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        let missing = dir.join("missing.pem");
        let cases = [
            (Some(Roots::File(missing.clone())), None, "sslrootcert"),
            (
                Some(Roots::File(junk.clone())),
                None,
                "holds no PEM certificate",
            ),
            (None, Some((junk.clone(), junk.clone())), "sslcert"),
        ];
        for (roots, client, expect) in cases {
            let mut cfg = tokio_postgres::Config::new();
            let opts = TlsOptions {
                mode: Some(SslMode::VerifyFull),
                roots,
                client_cert: client.as_ref().map(|c| c.0.clone()),
                client_key: client.as_ref().map(|c| c.1.clone()),
            };
            let e = connector(&opts, &mut cfg).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Config, "{e}");
            assert!(e.to_string().contains(expect), "{e}");
        }
        let system = TlsOptions {
            mode: Some(SslMode::Require),
            roots: Some(Roots::System),
            ..Default::default()
        };
        let e = connector(&system, &mut tokio_postgres::Config::new()).unwrap_err();
        assert!(e.to_string().contains("verify-full"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
