//! TLS to MySQL/MariaDB: the shared [`SslMode`] meanings on mysql_async's rustls support.
//!
//! | mode | connection |
//! |---|---|
//! | `disable` | plain text |
//! | `prefer` (default) | TLS when the server offers it, else plain text; the certificate is checked only against a given root file |
//! | `require` | TLS or no connection; the certificate is checked only against a given root file |
//! | `verify-ca` | TLS, and the certificate chains to the root file (else the built-in Mozilla roots); any host name |
//! | `verify-full` | as `verify-ca`, and the certificate names the host |
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
            if matches!(mode, SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull) {
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
        if self.client.as_ref().is_some_and(|(c, k)| c.as_os_str().is_empty() || k.as_os_str().is_empty()) {
            return Err(config_error("a client certificate needs both sslcert and sslkey"));
        }
        for p in self.roots.iter().chain(self.client.iter().flat_map(|(c, k)| [c, k])) {
            if std::fs::metadata(p).is_err() {
                return Err(config_error(format!(
                    "the TLS file {} cannot be read",
                    p.display()
                )));
            }
        }
        Ok(())
    }

    /// The driver's TLS options for a connection that uses TLS (`None`: plain text).
    #[cfg(feature = "mysql-tls")]
    pub(crate) fn ssl_opts(&self) -> Option<mysql_async::SslOpts> {
        let mode = self.mode();
        if mode == SslMode::Disable {
            return None;
        }
        let mut o = mysql_async::SslOpts::default();
        if let Some(r) = &self.roots {
            o = o.with_root_certs(vec![r.clone().into()]);
        }
        if let Some((c, k)) = &self.client {
            o = o.with_client_identity(Some(mysql_async::ClientIdentity::new(
                c.clone().into(),
                k.clone().into(),
            )));
        }
        // `prefer` and `require` check the chain only against a given root file, as libpq.
        let check_chain = matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull) || self.roots.is_some();
        o = o
            .with_danger_accept_invalid_certs(!check_chain)
            .with_danger_skip_domain_validation(mode != SslMode::VerifyFull);
        Some(o)
    }
}
