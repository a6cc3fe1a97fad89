//! TLS to MySQL/MariaDB: the shared [`SslMode`] meanings (libpq's) on mysql_async's rustls
//! support.
//!
//! | mode | connection |
//! |---|---|
//! | `disable` | plain text |
//! | `prefer` (default) | TLS when the server offers it, else plain text; without a root file nothing is checked, with one the chain is |
//! | `require` | TLS or no connection; without a root file nothing is checked, with one the chain is |
//! | `verify-ca` | TLS, and the certificate chains to the root file; the host name is not checked. Without a root file, a configuration error at connect (the public roots are trusted only with a name check) |
//! | `verify-full` | TLS, the certificate chains to the root file (else the built-in Mozilla roots) and names the host (a DNS name, or an IP address entry for a host given as an address) |
//!
//! A root file replaces the built-in roots: only its CAs are trusted.
//!
//! mysql_async checks a host name whenever it checks the chain. A chain-only check (`verify-ca`,
//! and `prefer`/`require` with a root file) therefore first runs a probe
//! ([`tls_probe`](super::tls_probe)): a handshake of its own, whose verifier checks the chain
//! only, reveals the certificate, and the real connection is then verified against a name that
//! certificate carries ([`tls_names`](super::tls_names)), with the chain checked again against
//! the same root file. The name learned is kept for the endpoint, so the probe runs once, and
//! again only when the server's certificate stops carrying that name. Modes that check nothing
//! or check the name never probe.
//!
//! Without the `mysql-tls` feature `prefer` connects in plain text and the stricter modes are
//! a configuration error, never a plain-text connection.

use std::path::PathBuf;

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::server::SslMode;

/// A pool's TLS settings, as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MyTls {
    pub(crate) mode: Option<SslMode>,
    /// A PEM file of CA certificates (`sslrootcert`, `ssl-ca`).
    pub(crate) roots: Option<PathBuf>,
    /// A client certificate chain and key (`sslcert`/`ssl-cert`, `sslkey`/`ssl-key`).
    pub(crate) client: Option<(PathBuf, PathBuf)>,
    /// What a probe learned for the endpoint these settings connect to.
    #[cfg(feature = "mysql-tls")]
    learned: Learned,
}

fn config_error(msg: impl Into<std::borrow::Cow<'static, str>>) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(ErrorKind::Config, msg)
}

impl MyTls {
    /// The mode in force: the one given, else `prefer`.
    pub(crate) fn mode(&self) -> SslMode {
        self.mode.unwrap_or_default()
    }

    /// Checks the settings against this build.
    pub(crate) fn check(&self) -> Result<()> {
        if !cfg!(feature = "mysql-tls") {
            let mode = self.mode();
            if matches!(
                mode,
                SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
            ) {
                return Err(config_error(format!(
                    "sslmode={mode} asks for TLS, which this build does not support (enable the \
                     `mysql-tls` feature); refusing to connect in plain text"
                )));
            }
            if self.roots.is_some() || self.client.is_some() {
                return Err(config_error(
                    "ssl-ca, ssl-cert and ssl-key need the `mysql-tls` feature",
                ));
            }
        }
        if self
            .client
            .as_ref()
            .is_some_and(|(c, k)| c.as_os_str().is_empty() || k.as_os_str().is_empty())
        {
            return Err(config_error(
                "a client certificate needs both sslcert and sslkey",
            ));
        }
        for p in self
            .roots
            .iter()
            .chain(self.client.iter().flat_map(|(c, k)| [c, k]))
        {
            if std::fs::metadata(p).is_err() {
                return Err(config_error(format!(
                    "the TLS file {} cannot be read",
                    p.display()
                )));
            }
        }
        Ok(())
    }
}

#[cfg(feature = "mysql-tls")]
pub(crate) use connect::Learned;

#[cfg(feature = "mysql-tls")]
mod connect {
    //! Opening a connection in a TLS mode.

    use std::sync::{Arc, Mutex, PoisonError};

    use mysql_async::{Conn, Opts, OptsBuilder, SslOpts};

    use super::super::tls_names::name_to_verify;
    use super::super::tls_probe::{Probe, probe, read_roots};
    use super::{MyTls, SslMode};
    use crate::error::{Backend, ErrorKind, Result, SqlMiddlewareDbError};

    /// The name a probe found to verify the server's certificate against. Not a setting: a
    /// clone starts empty (each endpoint learns its own), and it takes no part in equality.
    #[derive(Default)]
    pub(crate) struct Learned(Mutex<Option<Arc<str>>>);

    impl Learned {
        pub(super) fn get(&self) -> Option<Arc<str>> {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        }

        pub(super) fn set(&self, name: Option<Arc<str>>) {
            *self.0.lock().unwrap_or_else(PoisonError::into_inner) = name;
        }
    }

    impl Clone for Learned {
        fn clone(&self) -> Self {
            Learned::default()
        }
    }

    impl PartialEq for Learned {
        fn eq(&self, _: &Self) -> bool {
            true
        }
    }

    impl Eq for Learned {}

    impl std::fmt::Debug for Learned {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Learned")
        }
    }

    /// What a mode checks of the server's certificate.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Check {
        /// Nothing (`prefer`/`require` without a root file): encryption only.
        Nothing,
        /// The chain, not the name (`verify-ca`; `prefer`/`require` with a root file).
        Chain,
        /// The chain and the name (`verify-full`).
        ChainAndName,
    }

    /// Whether `e` comes from a rustls error, and which.
    fn rustls_error(e: &mysql_async::Error) -> Option<&rustls::Error> {
        use mysql_async::{IoError, TlsError};
        match e {
            mysql_async::Error::Io(IoError::Tls(TlsError::Tls(r))) => Some(r),
            mysql_async::Error::Io(IoError::Io(io)) => {
                io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
            }
            _ => None,
        }
    }

    /// The certificate does not carry the name it was verified against.
    fn name_mismatch(e: &mysql_async::Error) -> bool {
        use rustls::CertificateError as C;
        matches!(
            rustls_error(e),
            Some(rustls::Error::InvalidCertificate(
                C::NotValidForName | C::NotValidForNameContext { .. }
            ))
        )
    }

    /// A driver error; a refused handshake or certificate is [`ErrorKind::Tls`].
    fn map_err(e: mysql_async::Error) -> SqlMiddlewareDbError {
        match rustls_error(&e) {
            Some(r) => {
                let message = format!("TLS with the MySQL server failed: {r}");
                SqlMiddlewareDbError::from_driver(Backend::Mysql, ErrorKind::Tls, None, message, e)
            }
            None => super::super::error::map_err(e),
        }
    }

    /// As libpq: the public roots are trusted only together with a host name check.
    fn verify_ca_without_roots() -> SqlMiddlewareDbError {
        SqlMiddlewareDbError::new(
            ErrorKind::Config,
            "sslmode=verify-ca needs a root file (ssl-ca or sslrootcert): it checks the chain \
             and not the host name, so the built-in public roots would accept a certificate \
             issued for any name; give the server's CA, or use verify-full",
        )
    }

    fn no_tls() -> SqlMiddlewareDbError {
        super::super::error::map_err(mysql_async::DriverError::NoClientSslFlagFromServer.into())
    }

    impl MyTls {
        fn check_kind(&self) -> Check {
            match (self.mode(), &self.roots) {
                (SslMode::VerifyFull, _) => Check::ChainAndName,
                (SslMode::VerifyCa, _) | (_, Some(_)) => Check::Chain,
                _ => Check::Nothing,
            }
        }

        /// The driver's options for `check`; a chain check trusts the root file alone, given
        /// here as `roots` (the bytes the probe used) or as the path.
        fn ssl_opts(&self, check: Check, roots: Option<Vec<u8>>, name: Option<&str>) -> SslOpts {
            let mut o = SslOpts::default();
            match roots {
                Some(bytes) => o = o.with_root_certs(vec![bytes.into()]),
                None => {
                    if let Some(r) = &self.roots {
                        o = o.with_root_certs(vec![r.clone().into()]);
                    }
                }
            }
            if let Some((c, k)) = &self.client {
                o = o.with_client_identity(Some(mysql_async::ClientIdentity::new(
                    c.clone().into(),
                    k.clone().into(),
                )));
            }
            o.with_disable_built_in_roots(self.roots.is_some())
                .with_danger_accept_invalid_certs(check == Check::Nothing)
                .with_danger_tls_hostname_override(name.map(str::to_owned))
        }

        /// Opens a connection in this mode (not `disable`); `prefer` connects in plain text
        /// when the server offers no TLS.
        pub(crate) async fn connect(&self, opts: &Opts) -> Result<Conn> {
            if self.mode() == SslMode::VerifyCa && self.roots.is_none() {
                return Err(verify_ca_without_roots());
            }
            let check = self.check_kind();
            // A Unix socket carries no TLS: mysql_async does not set it up there.
            let r = if check == Check::Chain && opts.socket().is_none() {
                self.connect_chain_only(opts).await
            } else {
                let tls = OptsBuilder::from_opts(opts.clone())
                    .ssl_opts(Some(self.ssl_opts(check, None, None)));
                Conn::new(tls).await.map_err(Fallback::Driver)
            };
            match r {
                Ok(c) => Ok(c),
                Err(Fallback::NoTls) if self.mode() == SslMode::Prefer => {
                    Conn::new(opts.clone()).await.map_err(map_err)
                }
                Err(Fallback::NoTls) => Err(no_tls()),
                Err(Fallback::Driver(mysql_async::Error::Driver(
                    mysql_async::DriverError::NoClientSslFlagFromServer,
                ))) if self.mode() == SslMode::Prefer => {
                    Conn::new(opts.clone()).await.map_err(map_err)
                }
                Err(Fallback::Driver(e)) => Err(map_err(e)),
                Err(Fallback::Other(e)) => Err(e),
            }
        }

        /// The chain-only check: the name learned before, or a probe's, and the real connection
        /// verified against it. A learned name the certificate no longer carries (the server's
        /// certificate changed) is probed again, once.
        async fn connect_chain_only(&self, opts: &Opts) -> std::result::Result<Conn, Fallback> {
            let Some(roots) = &self.roots else {
                return Err(Fallback::Other(verify_ca_without_roots()));
            };
            // Read once: the probe and the real connection trust the same bytes.
            let roots = read_roots(roots).map_err(Fallback::Other)?;
            let host = opts.ip_or_hostname();
            // Whether this call probed, or already gave up a learned name: then a name
            // mismatch is the answer.
            let mut fresh = false;
            loop {
                let name = match self.learned.get() {
                    Some(n) => n,
                    None => {
                        fresh = true;
                        match probe(host, opts.tcp_port(), &roots, self.client.as_ref()).await {
                            Ok(Probe::NoTls) => return Err(Fallback::NoTls),
                            Ok(Probe::Verified(cert)) => {
                                let name = name_to_verify(&cert, host).ok_or_else(|| {
                                    Fallback::Other(SqlMiddlewareDbError::new(
                                        ErrorKind::Tls,
                                        "the MySQL server's certificate chains to the root file \
                                         but names no DNS name or IP address (subject \
                                         alternative names) the driver can verify; give it one",
                                    ))
                                })?;
                                let name: Arc<str> = name.into();
                                self.learned.set(Some(Arc::clone(&name)));
                                name
                            }
                            Err(e) => return Err(Fallback::Other(e)),
                        }
                    }
                };
                let tls = OptsBuilder::from_opts(opts.clone()).ssl_opts(Some(self.ssl_opts(
                    Check::Chain,
                    Some(roots.clone()),
                    Some(&name),
                )));
                match Conn::new(tls).await {
                    Err(e) if name_mismatch(&e) && !fresh => {
                        fresh = true;
                        self.learned.set(None);
                    }
                    r => return r.map_err(Fallback::Driver),
                }
            }
        }
    }

    /// Why a TLS connection was not made.
    enum Fallback {
        /// The server offers no TLS (seen by the probe).
        NoTls,
        /// The driver's error.
        Driver(mysql_async::Error),
        /// The probe's error, already mapped.
        Other(SqlMiddlewareDbError),
    }
}

#[cfg(all(test, feature = "mysql-tls"))]
mod tests {
    use super::*;

    #[test]
    fn what_a_probe_learned_is_not_a_setting() {
        let a = MyTls::default();
        a.learned.set(Some("db.example.com".into()));
        let b = a.clone();
        assert_eq!(a, b);
        assert_eq!(b.learned.get(), None, "a clone starts empty");
        assert_eq!(a.learned.get().as_deref(), Some("db.example.com"));
    }
}
