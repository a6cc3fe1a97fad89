//! [`ConfigAndPool`] and its builder: one entry point per backend, one set of pool settings.

use std::time::Duration;

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::pool::{MiddlewarePool, MiddlewarePoolConnection, PoolStatus};
use crate::pooling::PoolOptions;
use crate::translation::TranslationMode;

pub use crate::engine::DatabaseType;

#[derive(Debug, Clone)]
pub(crate) enum Target {
    #[cfg(feature = "sqlite")]
    Sqlite(crate::sqlite::config::SqliteTarget),
    #[cfg(feature = "postgres")]
    Postgres(Box<tokio_postgres::Config>),
    #[cfg(feature = "turso")]
    Turso(crate::turso::config::TursoTarget),
    #[cfg(feature = "mysql")]
    Mysql(crate::mysql::config::MyTarget),
}

/// A pool and the settings it was built with. Cheap to clone; clones share the pool.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), sql_middleware::SqlMiddlewareDbError> {
/// use sql_middleware::prelude::*;
///
/// let db = ConfigAndPool::sqlite_memory().max_size(2).build().await?;
/// let mut conn = db.get_connection().await?;
/// let n: (i64,) = conn.query("SELECT 40 + $1").params(&[2.into()]).one().await?;
/// assert_eq!(n.0, 42);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ConfigAndPool {
    pool: MiddlewarePool,
}

impl ConfigAndPool {
    /// A SQLite database in the file at `path` (created if missing), in WAL mode.
    #[cfg(feature = "sqlite")]
    pub fn sqlite(path: impl AsRef<std::path::Path>) -> PoolBuilder {
        PoolBuilder::new(Target::Sqlite(crate::sqlite::config::SqliteTarget::File(
            path.as_ref().to_path_buf(),
        )))
    }

    /// A private in-memory SQLite database that every connection of this pool shares.
    /// It lives as long as the pool.
    #[cfg(feature = "sqlite")]
    pub fn sqlite_memory() -> PoolBuilder {
        PoolBuilder::new(Target::Sqlite(crate::sqlite::config::SqliteTarget::Memory))
    }

    /// A PostgreSQL server, from a `postgres://user@host:port/db?options` URL or a
    /// `key=value` connection string.
    #[cfg(feature = "postgres")]
    pub fn postgres(url: &str) -> PoolBuilder {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            // URL parameters for the pool (see `from_url`) are understood here too.
            return match Self::from_url(url) {
                Ok(b) => b,
                Err(e) => {
                    let mut b = Self::postgres_config(tokio_postgres::Config::new());
                    b.error = Some(e);
                    b
                }
            };
        }
        // libpq's `key=value` form: `target_session_attrs` is the middleware's (tokio-postgres
        // refuses `primary`, `standby` and `prefer-standby`).
        let (rest, attrs) = match crate::postgres::hosts::split_attrs(url) {
            Ok(split) => split,
            Err(e) => {
                let mut b = Self::postgres_config(tokio_postgres::Config::new());
                b.error = Some(e);
                return b;
            }
        };
        match rest.parse::<tokio_postgres::Config>() {
            Ok(cfg) => {
                let mut b = Self::postgres_config(cfg);
                b.postgres.attrs = attrs;
                b
            }
            Err(e) => {
                let mut b = Self::postgres_config(tokio_postgres::Config::new());
                b.error = Some(SqlMiddlewareDbError::from_driver(
                    crate::error::Backend::Postgres,
                    ErrorKind::Config,
                    None,
                    "the Postgres connection string is invalid",
                    e,
                ));
                b
            }
        }
    }

    /// A PostgreSQL server described by a `tokio_postgres::Config`.
    #[cfg(feature = "postgres")]
    pub fn postgres_config(config: tokio_postgres::Config) -> PoolBuilder {
        PoolBuilder::new(Target::Postgres(Box::new(config)))
    }

    /// A Turso database in the file at `path`.
    #[cfg(feature = "turso")]
    pub fn turso(path: impl AsRef<std::path::Path>) -> PoolBuilder {
        PoolBuilder::new(Target::Turso(crate::turso::config::TursoTarget::File(
            path.as_ref().to_path_buf(),
        )))
    }

    /// A private in-memory Turso database shared by every connection of this pool.
    #[cfg(feature = "turso")]
    pub fn turso_memory() -> PoolBuilder {
        PoolBuilder::new(Target::Turso(crate::turso::config::TursoTarget::Memory))
    }

    /// A MySQL or MariaDB server, from a `mysql://user:password@host:port/db?options` URL (or
    /// `mariadb://`); the URL forms are listed on [`Self::from_url`].
    #[cfg(feature = "mysql")]
    pub fn mysql(url: &str) -> PoolBuilder {
        match Self::from_url(url) {
            Ok(b) if matches!(b.target, Target::Mysql(_)) => b,
            Ok(_) => Self::mysql_opts(mysql_async::Opts::default()).failed(SqlMiddlewareDbError::new(
                ErrorKind::Config,
                "ConfigAndPool::mysql takes a mysql:// or mariadb:// URL",
            )),
            Err(e) => Self::mysql_opts(mysql_async::Opts::default()).failed(e),
        }
    }

    /// A MySQL or MariaDB server from mysql_async's own options (its statement cache is
    /// replaced by the middleware's, and its pool is not used). TLS comes from
    /// [`PoolBuilder::ssl_mode`], not from the options.
    #[cfg(feature = "mysql")]
    pub fn mysql_opts(opts: mysql_async::Opts) -> PoolBuilder {
        PoolBuilder::new(Target::Mysql(crate::mysql::config::MyTarget(Box::new(opts))))
    }

    /// Checks out a connection. Waits at most the pool's wait timeout, then fails with
    /// [`ErrorKind::PoolTimeout`].
    pub async fn get_connection(&self) -> Result<MiddlewarePoolConnection> {
        self.pool.get().await
    }

    /// The pool.
    pub fn pool(&self) -> &MiddlewarePool {
        &self.pool
    }

    /// The engine behind this pool.
    pub fn database_type(&self) -> DatabaseType {
        self.pool.database_type()
    }

    /// Pool size and availability.
    pub fn status(&self) -> PoolStatus {
        self.pool.status()
    }

    /// A snapshot of the pool's live statistics (see [`MiddlewarePool::stats`]).
    pub fn stats(&self) -> crate::PoolStats {
        self.pool.stats()
    }

    /// Checks out a first connection, retrying with backoff until `bound` has passed.
    async fn first_connection(&self, bound: Duration) -> Result<()> {
        let deadline = std::time::Instant::now() + bound;
        let mut pause = Duration::from_millis(50);
        loop {
            let e = match self.get_connection().await {
                Ok(_) => return Ok(()),
                Err(e) => e,
            };
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(e);
            }
            tokio::time::sleep(pause.min(left)).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    /// A connection for reads: on a replica (round-robin among the healthy ones) when the pool
    /// has replicas, else from the pool as [`Self::get_connection`]. Reader sessions on
    /// replicas and on the primary are read-only: a write fails with [`ErrorKind::ReadOnly`].
    pub async fn reader(&self) -> Result<MiddlewarePoolConnection> {
        self.pool.reader().await
    }

    /// Each replica's state, measured now: reachable, in recovery, and how far behind the
    /// primary it is (empty without replicas).
    #[cfg(feature = "postgres")]
    pub async fn replica_status(&self) -> Vec<crate::ReplicaStatus> {
        self.pool.replica_status().await
    }

    /// A `LISTEN`/`NOTIFY` [`Listener`](crate::Listener) on a connection of its own (Postgres
    /// only).
    #[cfg(feature = "postgres")]
    pub async fn listener(&self) -> Result<crate::Listener> {
        self.pool.listener().await
    }

    /// Closes the pool: waiting and later checkouts fail with [`ErrorKind::PoolClosed`].
    pub fn close(&self) {
        self.pool.close();
    }
}

/// Builds a [`ConfigAndPool`]. Settings that do not apply to the chosen backend make
/// [`PoolBuilder::build`] fail with [`ErrorKind::Config`] rather than being ignored.
#[derive(Debug)]
#[must_use = "call .build().await to create the pool"]
pub struct PoolBuilder {
    pub(crate) target: Target,
    pub(crate) pool: PoolOptions,
    pub(crate) translation: TranslationMode,
    #[cfg(feature = "sqlite")]
    pub(crate) sqlite: crate::sqlite::config::SqliteOptions,
    #[cfg(feature = "postgres")]
    pub(crate) postgres: crate::postgres::config::PgOptions,
    #[cfg(feature = "postgres")]
    pub(crate) replicas: crate::postgres::replica::ReplicaOptions,
    /// The strictest `sslmode` the replicas' URLs named (the pool never uses less).
    #[cfg(feature = "postgres")]
    pub(crate) replica_ssl: Option<crate::SslMode>,
    #[cfg(feature = "turso")]
    pub(crate) turso: crate::turso::config::TursoOptions,
    #[cfg(feature = "mysql")]
    pub(crate) mysql: crate::mysql::config::MyOptions,
    pub(crate) error: Option<SqlMiddlewareDbError>,
    pub(crate) connect_on_build: Option<Duration>,
    /// Tracing options (feature `tracing`; empty without it).
    pub(crate) trace: crate::telemetry::TraceOptions,
}

impl PoolBuilder {
    fn new(target: Target) -> Self {
        Self {
            target,
            pool: PoolOptions::default(),
            translation: TranslationMode::On,
            #[cfg(feature = "sqlite")]
            sqlite: Default::default(),
            #[cfg(feature = "postgres")]
            postgres: Default::default(),
            #[cfg(feature = "postgres")]
            replicas: Default::default(),
            #[cfg(feature = "postgres")]
            replica_ssl: None,
            #[cfg(feature = "turso")]
            turso: Default::default(),
            #[cfg(feature = "mysql")]
            mysql: Default::default(),
            error: None,
            connect_on_build: None,
            trace: Default::default(),
        }
    }

    /// A Postgres builder's driver configuration and `sslmode` (`None` on other backends).
    #[cfg(feature = "postgres")]
    fn into_postgres(self) -> Option<(tokio_postgres::Config, Option<crate::SslMode>)> {
        let mode = self.postgres.tls.mode;
        match self.target {
            Target::Postgres(cfg) => Some((*cfg, mode)),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The builder with `e` as the error [`Self::build`] returns.
    #[cfg(feature = "mysql")]
    pub(crate) fn failed(mut self, e: SqlMiddlewareDbError) -> Self {
        self.error.get_or_insert(e);
        self
    }

    fn reject(mut self, what: &str) -> Self {
        if self.error.is_none() {
            self.error = Some(SqlMiddlewareDbError::new(
                ErrorKind::Config,
                format!("{what} does not apply to this backend"),
            ));
        }
        self
    }

    /// Whether this pool's checkouts, statements and transactions get `tracing` spans
    /// (default: on; see the README's "Observability"). Off, a statement costs one branch more
    /// than a build without the feature.
    #[cfg(feature = "tracing")]
    pub fn tracing(mut self, on: bool) -> Self {
        self.trace.enabled = on;
        self
    }

    /// Logs a `WARN` event (target `sql_middleware::slow`) with the SQL text and the elapsed time
    /// for every statement that takes at least `threshold`, measured from the start of the
    /// call to its result (feature `tracing`).
    #[cfg(feature = "tracing")]
    pub fn slow_statement_threshold(mut self, threshold: Duration) -> Self {
        self.trace.slow = Some(threshold);
        self
    }

    /// The largest number of open connections (default: twice the CPU count, at least 4).
    pub fn max_size(mut self, n: usize) -> Self {
        if n == 0 {
            self.error.get_or_insert_with(|| {
                SqlMiddlewareDbError::new(ErrorKind::Config, "max_size must be at least 1")
            });
        }
        self.pool.max_size = n;
        self
    }

    /// How long a checkout waits for a free connection before [`ErrorKind::PoolTimeout`] (default 10 s).
    pub fn wait_timeout(mut self, d: Duration) -> Self {
        self.pool.wait_timeout = d;
        self
    }

    /// How long opening a new connection may take (default 10 s).
    pub fn create_timeout(mut self, d: Duration) -> Self {
        self.pool.create_timeout = d;
        self
    }

    /// How long the health check of a returned connection may take (default 5 s).
    pub fn recycle_timeout(mut self, d: Duration) -> Self {
        self.pool.recycle_timeout = d;
        self
    }

    /// Close connections this old (default: never), at their next checkout or, when idle, in
    /// the background. Each connection's lifetime is shortened by up to a fifth, by an amount
    /// fixed per connection, so pools started together do not all reconnect at once.
    /// [`PoolStatus::retired_max_lifetime`] counts them.
    pub fn max_lifetime(mut self, d: Duration) -> Self {
        self.pool.max_lifetime = Some(d);
        self
    }

    /// Close connections idle this long (default: never), in the background or at their next
    /// checkout. [`PoolStatus::retired_idle`] counts them.
    pub fn idle_timeout(mut self, d: Duration) -> Self {
        self.pool.idle_timeout = Some(d);
        self
    }

    /// Keep at least this many connections open (default 0), opened in the background after
    /// the pool is built and whenever retirements leave fewer. The upkeep holds idle
    /// connections only while it starts opening the missing ones (one scheduler pass), never
    /// while they open, so it does not delay a checkout while a connection is free.
    pub fn min_idle(mut self, n: usize) -> Self {
        self.pool.min_idle = n;
        self
    }

    /// The default time limit of every statement run on the pool's connections (default: none).
    /// A statement still running when it passes is stopped and its call fails with
    /// [`ErrorKind::Timeout`]; the connection stays usable. Postgres sends the server a cancel
    /// request, SQLite interrupts the statement, Turso stops between rows (see the README's
    /// "Deploying on Postgres" for what each engine can stop). Override it per connection with
    /// [`crate::MiddlewarePoolConnection::set_statement_timeout`] and per call with
    /// [`crate::QueryBuilder::timeout`]. On Postgres it bounds `begin`, `commit` and `rollback`
    /// too (a `commit` past it fails with [`ErrorKind::OutcomeUnknown`]); on SQLite and Turso
    /// they are never cut short.
    pub fn statement_timeout(mut self, d: Duration) -> Self {
        if d.is_zero() {
            self.error.get_or_insert_with(|| {
                SqlMiddlewareDbError::new(
                    ErrorKind::Config,
                    "statement_timeout must be greater than zero; leave it unset for no limit",
                )
            });
        }
        self.pool.statement_timeout = Some(d);
        self
    }

    /// Postgres and MySQL: named (default) or unnamed prepared statements; use
    /// [`crate::StatementCache::Unnamed`] behind PgBouncer in transaction mode or any pooler
    /// or proxy that does not track prepared statements (see the README's "Scaling out").
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    pub fn statement_cache(mut self, mode: crate::StatementCache) -> Self {
        match &self.target {
            #[cfg(feature = "postgres")]
            Target::Postgres(_) => self.postgres.statement_cache = mode,
            #[cfg(feature = "mysql")]
            Target::Mysql(_) => self.mysql.statement_cache = mode,
            #[allow(unreachable_patterns)]
            _ => return self.reject("statement_cache"),
        }
        self
    }

    /// Postgres: a read replica (a streaming hot standby), from a URL or connection string, for
    /// [`ConfigAndPool::reader`]; call it once per replica. Replicas get the pool's settings
    /// (size, timeouts, statement mode, TLS files) and their own pools; `get_connection` and
    /// transactions stay on the primary. A `postgres://` URL takes the forms of
    /// [`ConfigAndPool::from_url`] (`sslmode=verify-full` included; its pool parameters are
    /// ignored). A replica's `sslmode` never weakens the pool's TLS, and a stricter one raises
    /// every connection of the pool to it. See the README's "Scaling out".
    #[cfg(feature = "postgres")]
    pub fn replica(mut self, url: &str) -> Self {
        if !matches!(self.target, Target::Postgres(_)) {
            return self.reject("replica");
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            // The URL forms of `from_url`, `sslmode=verify-full` and every
            // `target_session_attrs` value included; the pool's TLS is never weaker than the
            // strictest mode a replica names.
            match ConfigAndPool::from_url(url) {
                Ok(r) => {
                    let attrs = r.postgres.attrs;
                    if let Some((cfg, mode)) = r.into_postgres() {
                        self.replica_ssl = self.replica_ssl.max(mode);
                        self.replicas.replicas.push((cfg, attrs));
                    }
                }
                Err(e) => {
                    self.error.get_or_insert(e);
                }
            }
            return self;
        }
        // libpq's `key=value` form: `target_session_attrs` is the middleware's.
        let (rest, attrs) = match crate::postgres::hosts::split_attrs(url) {
            Ok(split) => split,
            Err(e) => {
                self.error.get_or_insert(e);
                return self;
            }
        };
        match rest.parse::<tokio_postgres::Config>() {
            Ok(cfg) => self.replicas.replicas.push((cfg, attrs)),
            Err(e) => {
                self.error.get_or_insert_with(|| {
                    SqlMiddlewareDbError::from_driver(
                        crate::error::Backend::Postgres,
                        ErrorKind::Config,
                        None,
                        "a replica's connection string is invalid",
                        e,
                    )
                });
            }
        }
        self
    }

    /// Postgres: how long a replica that could not be reached is skipped before readers try
    /// it again (default 5 s).
    #[cfg(feature = "postgres")]
    pub fn replica_retry_after(mut self, d: Duration) -> Self {
        self.replicas.retry_after = d;
        self
    }

    /// Postgres: whether readers go to the primary (in read-only sessions) when no replica is
    /// healthy (default `true`); with `false`, [`ConfigAndPool::reader`] fails with
    /// [`ErrorKind::ConnectionLost`] instead.
    #[cfg(feature = "postgres")]
    pub fn replica_fallback(mut self, to_primary: bool) -> Self {
        self.replicas.fallback_to_primary = to_primary;
        self
    }

    /// Postgres with replicas: after a write through this pool completes, readers go to the
    /// primary (in read-only sessions) for `window`, so a caller reads its own writes while the
    /// replicas catch up. Off by default; set it to more than the replicas' usual replay delay
    /// (see [`ConfigAndPool::replica_status`]).
    #[cfg(feature = "postgres")]
    pub fn read_your_writes(mut self, window: Duration) -> Self {
        self.replicas.read_your_writes = Some(window);
        self
    }

    /// Postgres and MySQL: check every connection with a round trip (bounded by the recycle
    /// timeout) before handing it out, and replace it if the check fails: for networks that drop
    /// idle connections silently. Off by default (a closed connection is always noticed without
    /// it).
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    pub fn test_before_acquire(mut self, on: bool) -> Self {
        match &self.target {
            #[cfg(feature = "postgres")]
            Target::Postgres(_) => self.postgres.test_before_acquire = on,
            #[cfg(feature = "mysql")]
            Target::Mysql(_) => self.mysql.test_before_acquire = on,
            #[allow(unreachable_patterns)]
            _ => return self.reject("test_before_acquire"),
        }
        self
    }

    /// Postgres: how connections use TLS (libpq's `sslmode`; see [`crate::SslMode`] for each
    /// mode's meaning). It applies to every connection the pool opens, to a
    /// [`Listener`](crate::Listener)'s, and to cancel requests. Without this call, the URL's
    /// `sslmode` (or the `tokio_postgres::Config`'s) applies, else `prefer`. TLS is never
    /// weaker than the strictest mode given anywhere for the pool: this call, the URL's
    /// `sslmode`, a `require` in the `tokio_postgres::Config`, and each replica's (see
    /// [`Self::replica`]); so `ssl_mode(SslMode::Disable)` does not undo a URL's `require`.
    /// Modes above `prefer` need the `postgres-tls` feature: without it [`Self::build`] fails
    /// with [`ErrorKind::Config`] rather than connecting in plain text.
    ///
    /// MySQL: the same modes (MySQL's `ssl-mode` names map onto them), with the `mysql-tls`
    /// feature; the strictest mode given (here or in the URL) applies.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    pub fn ssl_mode(mut self, mode: crate::SslMode) -> Self {
        match &self.target {
            #[cfg(feature = "postgres")]
            Target::Postgres(_) => {
                self.postgres.tls.mode = Some(self.postgres.tls.mode.map_or(mode, |m| m.max(mode)))
            }
            #[cfg(feature = "mysql")]
            Target::Mysql(_) => {
                self.mysql.tls.mode = Some(self.mysql.tls.mode.map_or(mode, |m| m.max(mode)))
            }
            #[allow(unreachable_patterns)]
            _ => return self.reject("ssl_mode"),
        }
        self
    }

    /// Postgres (feature `postgres-tls`): the PEM file of CA certificates the server's
    /// certificate must chain to (libpq's `sslrootcert`), in place of the Mozilla root set built
    /// into the crate (which only `verify-full` uses without a file; `verify-ca` needs one).
    /// With `prefer` or `require` it turns on the chain check (as `verify-ca` does), as libpq
    /// does when it finds a root file. The file is read when the pool is built:
    /// a missing or unreadable file fails [`Self::build`] with [`ErrorKind::Config`]. MySQL
    /// (feature `mysql-tls`): the same, as MySQL's `ssl-ca`.
    #[cfg(any(feature = "postgres-tls", feature = "mysql-tls"))]
    pub fn ssl_root_cert(mut self, path: impl AsRef<std::path::Path>) -> Self {
        match &self.target {
            #[cfg(feature = "postgres-tls")]
            Target::Postgres(_) => {
                self.postgres.tls.roots = Some(crate::postgres::tls::Roots::File(
                    path.as_ref().to_path_buf(),
                ));
            }
            #[cfg(feature = "mysql-tls")]
            Target::Mysql(_) => self.mysql.tls.roots = Some(path.as_ref().to_path_buf()),
            #[allow(unreachable_patterns)]
            _ => return self.reject("ssl_root_cert"),
        }
        self
    }

    /// Postgres (feature `postgres-tls`): a client certificate (PEM chain, libpq's `sslcert`)
    /// and its private key (PEM: PKCS#8, PKCS#1 or SEC1, libpq's `sslkey`) presented to the
    /// server, for `cert` authentication in `pg_hba.conf`. Read when the pool is built; a bad
    /// file, or a key that does not match the certificate, fails [`Self::build`] with
    /// [`ErrorKind::Config`]. MySQL (feature `mysql-tls`): the same, as MySQL's `ssl-cert` and
    /// `ssl-key`.
    #[cfg(any(feature = "postgres-tls", feature = "mysql-tls"))]
    pub fn ssl_client_cert(
        mut self,
        cert: impl AsRef<std::path::Path>,
        key: impl AsRef<std::path::Path>,
    ) -> Self {
        match &self.target {
            #[cfg(feature = "postgres-tls")]
            Target::Postgres(_) => {
                self.postgres.tls.client_cert = Some(cert.as_ref().to_path_buf());
                self.postgres.tls.client_key = Some(key.as_ref().to_path_buf());
            }
            #[cfg(feature = "mysql-tls")]
            Target::Mysql(_) => {
                self.mysql.tls.client = Some((cert.as_ref().to_path_buf(), key.as_ref().to_path_buf()))
            }
            #[allow(unreachable_patterns)]
            _ => return self.reject("ssl_client_cert"),
        }
        self
    }

    /// Default placeholder translation for this pool's connections (default on); each query can override it.
    pub fn translation(mut self, mode: TranslationMode) -> Self {
        self.translation = mode;
        self
    }

    /// How long SQLite or Turso waits for another connection's lock before [`ErrorKind::Busy`] (default 5 s).
    pub fn busy_timeout(self, d: Duration) -> Self {
        #[allow(unused_mut)]
        let mut b = self;
        match &b.target {
            #[cfg(feature = "sqlite")]
            Target::Sqlite(_) => b.sqlite.busy_timeout = d,
            #[cfg(feature = "turso")]
            Target::Turso(_) => b.turso.busy_timeout = d,
            #[allow(unreachable_patterns)]
            _ => {
                let _ = d;
                return b.reject("busy_timeout");
            }
        }
        #[allow(unreachable_code)]
        b
    }

    /// How many prepared statements each connection keeps (default 128, at least 1), on every
    /// backend; past it the least recently used statement is dropped (on Postgres, closed on
    /// the server). See [`MiddlewarePoolConnection::statement_cache_stats`](crate::MiddlewarePoolConnection::statement_cache_stats).
    pub fn statement_cache_capacity(mut self, n: usize) -> Self {
        if n == 0 {
            self.error.get_or_insert_with(|| {
                SqlMiddlewareDbError::new(
                    ErrorKind::Config,
                    "statement_cache_capacity must be at least 1: a statement is cached while it runs",
                )
            });
            return self;
        }
        match &self.target {
            #[cfg(feature = "sqlite")]
            Target::Sqlite(_) => self.sqlite.statement_cache_capacity = n,
            #[cfg(feature = "turso")]
            Target::Turso(_) => self.turso.statement_cache_capacity = n,
            #[cfg(feature = "postgres")]
            Target::Postgres(_) => self.postgres.statement_cache_capacity = n,
            #[cfg(feature = "mysql")]
            Target::Mysql(_) => self.mysql.statement_cache_capacity = n,
        }
        self
    }

    /// The SQLite execution model (default: [`crate::SqliteExecModel::Adaptive`]).
    #[cfg(feature = "sqlite")]
    pub fn sqlite_exec_model(mut self, model: crate::SqliteExecModel) -> Self {
        match &self.target {
            Target::Sqlite(_) => self.sqlite.exec_model = model,
            #[allow(unreachable_patterns)]
            _ => return self.reject("sqlite_exec_model"),
        }
        self
    }

    /// Whether SQLite files use WAL (default true). Ignored for in-memory databases.
    #[cfg(feature = "sqlite")]
    pub fn wal(mut self, on: bool) -> Self {
        match &self.target {
            Target::Sqlite(_) => self.sqlite.wal = on,
            #[allow(unreachable_patterns)]
            _ => return self.reject("wal"),
        }
        self
    }

    /// Whether SQLite enforces foreign keys (default true).
    #[cfg(feature = "sqlite")]
    pub fn foreign_keys(mut self, on: bool) -> Self {
        match &self.target {
            Target::Sqlite(_) => self.sqlite.foreign_keys = on,
            #[allow(unreachable_patterns)]
            _ => return self.reject("foreign_keys"),
        }
        self
    }

    /// The Postgres `application_name` of every connection.
    #[cfg(feature = "postgres")]
    pub fn application_name(mut self, name: &str) -> Self {
        match &mut self.target {
            Target::Postgres(cfg) => {
                cfg.application_name(name);
            }
            #[allow(unreachable_patterns)]
            _ => return self.reject("application_name"),
        }
        self
    }

    /// Runs `hook` once on each connection the pool opens, before any checkout uses it: the
    /// pool's own connections (replacements and those `min_idle` keeps open included), on
    /// Postgres also the readers' (replicas and the primary's read-only pool) and each
    /// [`Listener`](crate::Listener)'s, on whichever host a multi-host URL reached. The hook
    /// gets a [`NewConnection`](crate::NewConnection) to run SQL on, the same on every backend.
    ///
    /// - **Errors.** An error returned by the hook (or the hook running past the
    ///   [create timeout](Self::create_timeout), which then fails with
    ///   [`ErrorKind::PoolTimeout`]) fails that connection's opening: the checkout that asked for
    ///   it gets the hook's error, kind and message unchanged, and the connection is closed. The
    ///   pool stays usable, and the next checkout opens a connection again.
    /// - **The clean state.** What the hook sets is what the pool puts a connection back to
    ///   between borrowers. On SQLite and Turso, settings a borrower changes are restored to the
    ///   values the hook left, and a connection holding more than the hook left (a temporary
    ///   table of its own, say) is closed and replaced. On Postgres, resetting a borrower's
    ///   session (`RESET ALL`, `DISCARD TEMP`, …) undoes the hook's work too, so the hook runs
    ///   again after each such reset: write it so that running it twice is harmless (`SET`,
    ///   `CREATE TEMP TABLE IF NOT EXISTS`). A connection is reset only when its borrower ran
    ///   something other than plain queries and DML, or used raw access.
    /// - **Postgres readers** run every session read-only (`default_transaction_read_only`): a
    ///   hook of a pool with replicas must not write there (`SHOW transaction_read_only` tells).
    ///   Behind a transaction-mode pooler (PgBouncer) a server session is not one connection's,
    ///   so session state set by the hook does not stay with the connection.
    /// - **Statistics.** The hook's statements are not counted in [`crate::PoolStats`] (statement
    ///   cache hits and misses, SQLite's execution counts), and have no spans; connections it
    ///   failed to open are not counted as `created`.
    ///
    /// Setting a hook again replaces the previous one.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), sql_middleware::SqlMiddlewareDbError> {
    /// use sql_middleware::prelude::*;
    ///
    /// let db = ConfigAndPool::sqlite_memory()
    ///     .after_connect(|conn| {
    ///         Box::pin(async move {
    ///             match conn.database_type() {
    ///                 DatabaseType::Postgres => conn.execute_batch("SET TIME ZONE 'UTC'").await?,
    ///                 _ => conn.execute_batch("PRAGMA cache_size = -8000").await?,
    ///             }
    ///             conn.execute_batch("CREATE TEMP TABLE IF NOT EXISTS scratch (k TEXT, v TEXT)")
    ///                 .await?;
    ///             conn.dml("INSERT INTO scratch VALUES ($1, $2)", &["opened".into(), "yes".into()])
    ///                 .await?;
    ///             let rows = conn.select("SELECT count(*) FROM scratch", &[]).await?;
    ///             assert_eq!(rows.results.len(), 1);
    ///             Ok(())
    ///         })
    ///     })
    ///     .build()
    ///     .await?;
    /// let mut conn = db.get_connection().await?;
    /// let (v,): (String,) = conn.query("SELECT v FROM scratch WHERE k = 'opened'").one().await?;
    /// assert_eq!(v, "yes");
    /// # Ok(()) }
    /// ```
    pub fn after_connect<F>(mut self, hook: F) -> Self
    where
        F: for<'c, 'x> Fn(
                &'x mut crate::NewConnection<'c>,
            ) -> std::pin::Pin<
                Box<dyn std::future::Future<Output = Result<()>> + Send + 'x>,
            > + Send
            + Sync
            + 'static,
    {
        let backend = match &self.target {
            #[cfg(feature = "sqlite")]
            Target::Sqlite(_) => DatabaseType::Sqlite,
            #[cfg(feature = "postgres")]
            Target::Postgres(_) => DatabaseType::Postgres,
            #[cfg(feature = "turso")]
            Target::Turso(_) => DatabaseType::Turso,
            #[cfg(feature = "mysql")]
            Target::Mysql(_) => DatabaseType::Mysql,
        };
        self.pool.after_connect = crate::after_connect::wrap(backend, std::sync::Arc::new(hook));
        self
    }

    /// Makes [`Self::build`] open a first connection before it returns, retrying with
    /// backoff (50 ms, doubling up to 1 s) while it fails, for at most `bound`; then `build`
    /// fails with the driver's last error. For services that start beside their database.
    /// Without it, connections open on first checkout.
    pub fn connect_on_build(mut self, bound: Duration) -> Self {
        self.connect_on_build = Some(bound);
        self
    }

    /// Creates the pool. Connections are opened lazily, on first checkout, unless
    /// [`Self::connect_on_build`] asks for one now.
    pub async fn build(self) -> Result<ConfigAndPool> {
        if let Some(e) = self.error {
            return Err(e);
        }
        crate::limits::check(&self)?;
        let connect = self.connect_on_build;
        let db = ConfigAndPool {
            pool: MiddlewarePool::build(self).await?,
        };
        if let Some(bound) = connect {
            db.first_connection(bound).await?;
        }
        Ok(db)
    }
}
