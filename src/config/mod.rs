//! [`ConfigAndPool`] and its builder: one entry point per backend, one set of pool settings.
//! The entry points and settings of one engine only are in that engine's API file
//! (`src/api/`); URLs are read in `url.rs`, serde's `Config` in `serde_config.rs`.

use std::time::Duration;

use crate::dispatch::Settings;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::pool::{MiddlewarePool, MiddlewarePoolConnection, PoolStatus};
use crate::pooling::PoolOptions;
use crate::translation::TranslationMode;

pub use crate::engine::DatabaseType;

#[cfg(feature = "serde")]
pub(crate) mod serde_config;
mod url;
#[cfg(test)]
pub(crate) use url::config_err;

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
    /// has replicas (Postgres, MySQL; see [`PoolBuilder::replica`]), else on the pool's own
    /// server. On Postgres and MySQL reader sessions on replicas and on the primary are
    /// read-only (a write fails with [`ErrorKind::ReadOnly`]) and come from pools of their own,
    /// never handed to [`Self::get_connection`]. SQLite and Turso readers are ordinary
    /// connections, except in the single-writer mode ([`PoolBuilder::single_writer`]), where
    /// they are read-only connections of their own pool.
    pub async fn reader(&self) -> Result<MiddlewarePoolConnection> {
        self.pool.reader().await
    }

    /// Runs one write statement in autocommit on a connection of the pool; in the single-writer
    /// mode of SQLite and Turso, concurrent calls share commits. See [`MiddlewarePool::dml`].
    pub async fn dml(&self, sql: &str, params: &[crate::value::RowValues]) -> Result<u64> {
        self.pool.dml(sql, params).await
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
    /// The engine's settings.
    pub(crate) settings: Settings,
    pub(crate) pool: PoolOptions,
    pub(crate) translation: TranslationMode,
    pub(crate) error: Option<SqlMiddlewareDbError>,
    pub(crate) connect_on_build: Option<Duration>,
    /// Tracing options (feature `tracing`; empty without it).
    pub(crate) trace: crate::telemetry::TraceOptions,
}

impl PoolBuilder {
    /// A builder with the pool's defaults for an engine's settings.
    pub(crate) fn new(settings: Settings) -> Self {
        Self {
            settings,
            pool: PoolOptions::default(),
            translation: TranslationMode::On,
            error: None,
            connect_on_build: None,
            trace: Default::default(),
        }
    }

    /// The builder with `e` as the error [`Self::build`] returns (the first error wins).
    #[cfg(feature = "_server")]
    pub(crate) fn failed(mut self, e: SqlMiddlewareDbError) -> Self {
        self.error.get_or_insert(e);
        self
    }

    /// Applies a parameter of the pool itself, read from a URL.
    pub(crate) fn apply(self, p: crate::url_text::PoolParam) -> Self {
        use crate::url_text::PoolParam as P;
        match p {
            P::MaxSize(n) => self.max_size(n),
            P::WaitTimeout(d) => self.wait_timeout(d),
            P::CreateTimeout(d) => self.create_timeout(d),
            P::RecycleTimeout(d) => self.recycle_timeout(d),
            P::MaxLifetime(d) => self.max_lifetime(d),
            P::IdleTimeout(d) => self.idle_timeout(d),
            P::MinIdle(n) => self.min_idle(n),
            P::StatementTimeout(d) => self.statement_timeout(d),
            P::ConnectOnBuild(d) => self.connect_on_build(d),
            P::StatementCacheCapacity(n) => self.statement_cache_capacity(n),
            P::Translation(m) => self.translation(m),
            P::SingleWriter(n) => self.single_writer(n),
        }
    }

    pub(crate) fn reject(mut self, what: &str) -> Self {
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

    /// How long the health check of a returned connection may take (default 5 s). Only a
    /// check that can wait is timed: Postgres with `test_before_acquire` (a query), and the
    /// checks of MySQL (a session reset, a ping) and Turso (a rollback, a session check), which
    /// bound their own waits with it and arm no timer for a connection that came back clean.
    /// SQLite's and the Postgres default look at the connection locally and arm no timer.
    ///
    /// On Postgres and MySQL it also bounds the network work on a connection given back
    /// (rolling back, resetting a touched session, stopping an abandoned statement), which runs
    /// in the background: past it the connection is closed and its slot freed.
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
    /// while they open, so it does not delay a checkout while a connection is free. It applies
    /// to the pool's own connections and to each replica's pool; the read-only sessions that
    /// [`ConfigAndPool::reader`] takes on the pool's own server (MySQL, and Postgres with
    /// replicas) are opened when readers are asked for.
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
    #[cfg(feature = "_server")]
    pub fn statement_cache(mut self, mode: crate::StatementCache) -> Self {
        if !self.settings.knobs().statement_cache(mode) {
            return self.reject("statement_cache");
        }
        self
    }

    /// Postgres and MySQL: check every connection with a round trip (bounded by the recycle
    /// timeout) before handing it out, and replace it if the check fails: for networks that drop
    /// idle connections silently. Off by default (a closed connection is always noticed without
    /// it).
    #[cfg(feature = "_server")]
    pub fn test_before_acquire(mut self, on: bool) -> Self {
        if !self.settings.knobs().test_before_acquire(on) {
            return self.reject("test_before_acquire");
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
    #[cfg(feature = "_server")]
    pub fn ssl_mode(mut self, mode: crate::SslMode) -> Self {
        if !self.settings.knobs().ssl_mode(mode) {
            return self.reject("ssl_mode");
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
    #[cfg(feature = "_tls")]
    pub fn ssl_root_cert(mut self, path: impl AsRef<std::path::Path>) -> Self {
        if !self
            .settings
            .knobs()
            .ssl_root_cert(path.as_ref().to_path_buf())
        {
            return self.reject("ssl_root_cert");
        }
        self
    }

    /// Postgres (feature `postgres-tls`): a client certificate (PEM chain, libpq's `sslcert`)
    /// and its private key (PEM: PKCS#8, PKCS#1 or SEC1, libpq's `sslkey`) presented to the
    /// server, for `cert` authentication in `pg_hba.conf`. Read when the pool is built; a bad
    /// file, or a key that does not match the certificate, fails [`Self::build`] with
    /// [`ErrorKind::Config`]. MySQL (feature `mysql-tls`): the same, as MySQL's `ssl-cert` and
    /// `ssl-key`.
    #[cfg(feature = "_tls")]
    pub fn ssl_client_cert(
        mut self,
        cert: impl AsRef<std::path::Path>,
        key: impl AsRef<std::path::Path>,
    ) -> Self {
        let (cert, key) = (cert.as_ref().to_path_buf(), key.as_ref().to_path_buf());
        if !self.settings.knobs().ssl_client_cert(cert, key) {
            return self.reject("ssl_client_cert");
        }
        self
    }

    /// Default placeholder translation for this pool's connections (default on); each query can override it.
    pub fn translation(mut self, mode: TranslationMode) -> Self {
        self.translation = mode;
        self
    }

    /// How long SQLite or Turso waits for another connection's lock before [`ErrorKind::Busy`] (default 5 s).
    pub fn busy_timeout(mut self, d: Duration) -> Self {
        if !self.settings.knobs().busy_timeout(d) {
            return self.reject("busy_timeout");
        }
        self
    }

    /// SQLite and Turso: the single-writer mode, one writer connection and `readers` read-only
    /// connections (at least 1) in place of `max_size` connections that all write. Checkouts
    /// ([`ConfigAndPool::get_connection`], [`MiddlewarePool::get`](crate::MiddlewarePool::get),
    /// transactions, the retrying `transaction`) share the writer: a writer waits for it in the
    /// pool's fair queue (up to the wait timeout), never in the engine's busy handler, so
    /// writers never fail with [`ErrorKind::Busy`] for each other. [`ConfigAndPool::reader`]
    /// takes a reader: the database is in WAL mode, so readers never wait for the writer, and
    /// they see what it committed, never what it has not; a write through a reader fails with
    /// [`ErrorKind::ReadOnly`]. The pool's status and statistics count both pools (its
    /// `max_size` is `1 + readers`). The [`Self::after_connect`] hook runs on the readers too,
    /// where a write fails. The database must be a file in WAL mode: with
    /// `wal(false)` or an in-memory database, [`Self::build`] fails with
    /// [`ErrorKind::Config`], as on Postgres and MySQL (which have read replicas instead).
    /// URL parameter: `single_writer=N`.
    pub fn single_writer(mut self, readers: usize) -> Self {
        if !self.settings.knobs().single_writer(readers) {
            return self.reject("single_writer");
        }
        self
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
        self.settings.knobs().statement_cache_capacity(n);
        self
    }

    /// Runs `hook` once on each connection the pool opens, before any checkout uses it: the
    /// pool's own connections (replacements and those `min_idle` keeps open included), on
    /// Postgres and MySQL also the readers' (replicas and the primary's read-only pool), on
    /// Postgres each [`Listener`](crate::Listener)'s, on whichever host a multi-host URL
    /// reached. The hook gets a [`NewConnection`](crate::NewConnection) to run SQL on, the same
    /// on every backend.
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
    /// - **Readers** run every session read-only (Postgres: `default_transaction_read_only`;
    ///   MySQL: `SET SESSION TRANSACTION READ ONLY`, before the hook): a hook must not write
    ///   there (`SHOW transaction_read_only`, `@@tx_read_only` tell). On Postgres, behind a
    ///   transaction-mode pooler (PgBouncer) a server session is not one connection's,
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
        let backend = self.settings.database_type();
        self.pool.after_connect = crate::after_connect::wrap(backend, std::sync::Arc::new(hook));
        self
    }

    /// Postgres and MySQL: asks `provider` for the password (or token) each time the pool opens
    /// a connection, for secrets that rotate and short-lived cloud IAM tokens. It applies to
    /// the pool's connections, also to the readers' (replicas and the primary's read-only
    /// pool), on Postgres to each [`Listener`](crate::Listener)'s, on whichever host a
    /// multi-host URL reaches, over TLS or not; on MySQL also to the second connection that
    /// stops a statement past its limit.
    ///
    /// Each call gets the [`Login`](crate::Login) being made: the engine, the host and port
    /// actually being connected to (with a multi-host URL, each host as it is tried, so a host
    /// that turns out to be down was asked for too; for a replica, the replica), the user, the
    /// database and whether the connection serves reads, which is what a cloud IAM token is
    /// signed for. Its [`Password`](crate::Password) replaces the
    /// URL's password, if any; connections already open stay as they are (set a
    /// [`max_lifetime`](Self::max_lifetime) shorter than a token's validity so that none
    /// outlives its login for long, where the server cares).
    ///
    /// - **Bounds.** The provider runs inside the opening, so the
    ///   [create timeout](Self::create_timeout) bounds it: past it the opening fails with
    ///   [`ErrorKind::PoolTimeout`]. Cache the secret in the provider if fetching it is slow;
    ///   it is called once per connection opened.
    /// - **Errors.** An error returned by the provider fails that opening with
    ///   [`ErrorKind::Config`], whose message leaves out the provider's error (its text may quote
    ///   the secret); [`SqlMiddlewareDbError::driver_error`] returns it. A password the server
    ///   refuses is [`ErrorKind::Config`] too, as any refused login. The pool stays usable: the
    ///   next checkout asks the provider again.
    /// - **No secret in output.** [`Password`](crate::Password) prints as `***`; the password
    ///   goes to the driver's login only, never into an error, a `Debug` or a span.
    ///
    /// SQLite and Turso have no login: there [`Self::build`] fails with [`ErrorKind::Config`].
    ///
    /// ```no_run
    /// # #[cfg(feature = "postgres")]
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), sql_middleware::SqlMiddlewareDbError> {
    /// use std::sync::{Arc, RwLock};
    /// use sql_middleware::{Login, Password};
    /// use sql_middleware::prelude::*;
    ///
    /// // Whatever keeps the current secret up to date (a file watcher, a vault client, ...).
    /// let current = Arc::new(RwLock::new(String::from("first-secret")));
    /// let secret = Arc::clone(&current);
    /// let db = ConfigAndPool::postgres("postgres://app@db.internal/app")
    ///     .password_provider(move |login: Login| {
    ///         let secret = Arc::clone(&secret);
    ///         async move {
    ///             // A token service would sign for `login.host()`, `login.port()`, `login.user()`.
    ///             assert_eq!((login.host(), login.user()), ("db.internal", "app"));
    ///             let text = secret.read().map_err(|_| "the secret's lock is poisoned")?.clone();
    ///             Ok(Password::new(text))
    ///         }
    ///     })
    ///     .max_lifetime(std::time::Duration::from_secs(600))
    ///     .build()
    ///     .await?;
    /// // Later, after the password changed on the server:
    /// *current.write().unwrap() = String::from("second-secret");
    /// let mut conn = db.get_connection().await?;
    /// # Ok(()) }
    /// # #[cfg(not(feature = "postgres"))]
    /// # fn main() {}
    /// ```
    #[cfg(feature = "_server")]
    pub fn password_provider<F, Fut>(mut self, provider: F) -> Self
    where
        F: Fn(crate::Login) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<
                Output = std::result::Result<
                    crate::Password,
                    Box<dyn std::error::Error + Send + Sync + 'static>,
                >,
            > + Send
            + 'static,
    {
        let p = crate::credentials::PasswordProvider::new(std::sync::Arc::new(move |login| {
            Box::pin(provider(login))
        }));
        if !self.settings.knobs().password_provider(p) {
            return self.reject("password_provider");
        }
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
        #[cfg(feature = "tracing")]
        let slow = self.trace.slow;
        #[cfg(not(feature = "tracing"))]
        let slow = None;
        crate::limits::check(&self.pool, self.connect_on_build, slow)?;
        self.settings.check()?;
        let connect = self.connect_on_build;
        let db = ConfigAndPool {
            pool: MiddlewarePool::build(self.settings, &self.pool, self.translation, &self.trace)
                .await?,
        };
        if let Some(bound) = connect {
            db.first_connection(bound).await?;
        }
        Ok(db)
    }
}
