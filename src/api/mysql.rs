//! MySQL's and MariaDB's own entry points: the pool constructors and raw access to the
//! mysql_async connection.

use crate::config::{ConfigAndPool, PoolBuilder};
use crate::dispatch::{ConnInner, Settings};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::mysql::config::Settings as MySettings;
use crate::pool::MiddlewarePoolConnection;
use crate::transaction::Tx;

impl ConfigAndPool {
    /// A MySQL or MariaDB server, from a `mysql://user:password@host:port/db?options` URL (or
    /// `mariadb://`); the URL forms are listed on [`Self::from_url`].
    pub fn mysql(url: &str) -> PoolBuilder {
        match Self::from_url(url) {
            Ok(b) if matches!(b.settings, Settings::Mysql(_)) => b,
            Ok(_) => {
                Self::mysql_opts(mysql_async::Opts::default()).failed(SqlMiddlewareDbError::new(
                    ErrorKind::Config,
                    "ConfigAndPool::mysql takes a mysql:// or mariadb:// URL",
                ))
            }
            Err(e) => Self::mysql_opts(mysql_async::Opts::default()).failed(e),
        }
    }

    /// A MySQL or MariaDB server from mysql_async's own options (its statement cache is
    /// replaced by the middleware's, and its pool is not used). TLS comes from
    /// [`PoolBuilder::ssl_mode`], not from the options.
    pub fn mysql_opts(opts: mysql_async::Opts) -> PoolBuilder {
        PoolBuilder::new(Settings::Mysql(MySettings::new(opts)))
    }
}

impl PoolBuilder {
    /// MySQL on MariaDB Galera: read-your-writes across the cluster's nodes. Every connection
    /// runs `SET SESSION wsrep_sync_wait=1` when it opens and again after each session reset,
    /// so a read waits until its node has applied everything committed before it anywhere in
    /// the cluster (the URL's `causal_reads=true`). A connection to a server without Galera
    /// fails to open with [`ErrorKind::Config`]; other engines reject the setting.
    pub fn causal_reads(mut self, on: bool) -> Self {
        match &mut self.settings {
            Settings::Mysql(s) => {
                s.options.causal_reads = on;
                self
            }
            #[allow(unreachable_patterns)]
            _ => self.reject("causal_reads"),
        }
    }
}

/// A MySQL replica from `url` for `s`, or the error for the builder (see
/// [`PoolBuilder::replica`]): a `mysql://` or `mariadb://` URL, multi-host allowed.
pub(super) fn add_replica(s: &mut MySettings, error: &mut Option<SqlMiddlewareDbError>, url: &str) {
    match ConfigAndPool::from_url(url) {
        Ok(PoolBuilder {
            settings: Settings::Mysql(r),
            ..
        }) => s
            .replicas
            .replicas
            .push((r.target, r.options.hosts, r.options.tls.mode)),
        #[allow(unreachable_patterns)]
        Ok(_) => {
            error.get_or_insert(SqlMiddlewareDbError::new(
                ErrorKind::Config,
                "a replica of a MySQL pool takes a mysql:// or mariadb:// URL",
            ));
        }
        Err(e) => {
            error.get_or_insert(e);
        }
    }
}

impl MiddlewarePoolConnection {
    /// The raw mysql_async connection of this connection. Fails with
    /// [`ErrorKind::Unsupported`] on other backends. Its session is reset (`COM_RESET_CONNECTION`)
    /// before the next borrower gets the connection; leave it outside any transaction you open
    /// with it.
    pub async fn mysql_connection(&mut self) -> Result<&mut mysql_async::Conn> {
        let ty = self.database_type();
        match &mut self.inner {
            ConnInner::Mysql(c) => c.raw_mut().await,
            #[allow(unreachable_patterns)]
            _ => Err(crate::connection::wrong_backend("mysql_connection", ty)),
        }
    }
}

impl Tx<'_> {
    /// The raw mysql_async connection, inside this transaction (see
    /// [`MiddlewarePoolConnection::mysql_connection`]). A call on it dropped part-way leaves the
    /// connection unusable (mysql_async gives it up), which ends this transaction on the server:
    /// its later statements and its commit then fail with [`ErrorKind::TransactionAborted`], and
    /// nothing of it is committed.
    pub async fn mysql_connection(&mut self) -> Result<&mut mysql_async::Conn> {
        self.conn.mysql_connection().await
    }
}
