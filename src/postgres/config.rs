//! PostgreSQL settings and pool construction: the pool's manager opens connections (see
//! `open.rs`) and recycles them with deadpool-postgres; each pooled connection carries the
//! middleware's bounded statement cache beside it.

use std::sync::Arc;

use deadpool::managed::{Manager, Metrics, RecycleResult};
use deadpool_postgres::{ClientWrapper, ManagerConfig, RecyclingMethod};

use super::attrs::{ServerFlags, SessionAttrs};
use super::conn::PgConnection;
use super::hosts::{HostBook, HostName};
use super::stmt::PgStmt;
use super::tls::{CancelRequest, Connector, TlsOptions};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::pooling::{self, PoolOptions};
use crate::stmt_cache::StmtCache;

/// Postgres-specific settings.
#[derive(Debug, Clone)]
pub(crate) struct PgOptions {
    /// How many prepared statements each connection keeps (least recently used go first).
    pub(crate) statement_cache_capacity: usize,
    /// Check each connection with a round trip before handing it out.
    pub(crate) test_before_acquire: bool,
    /// Named or unnamed prepared statements.
    pub(crate) statement_cache: super::stmt::StatementCache,
    /// The pool's counters, which each connection adds its statistics to when it goes back.
    pub(crate) counters: Arc<crate::pooling::Counters>,
    /// `sslmode` and certificate files.
    pub(crate) tls: TlsOptions,
    /// `target_session_attrs` as the URL gave it (`None`: the driver configuration's).
    pub(crate) attrs: Option<SessionAttrs>,
    /// Run on each connection the pool opens, and again after a session reset.
    pub(crate) after_connect: crate::setup::AfterConnect,
    /// Asked for the password each time a connection opens.
    pub(crate) password: crate::credentials::PasswordProvider,
    /// A reader pool's (a replica's, or the primary's read-only pool): the provider is told.
    pub(crate) reader: bool,
    /// The pool's recycle timeout: the bound on the background work on a connection given
    /// back (see `server::held::net_bound`).
    pub(crate) recycle_timeout: std::time::Duration,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            statement_cache_capacity: 128,
            test_before_acquire: false,
            statement_cache: super::stmt::StatementCache::Named,
            counters: Arc::default(),
            tls: TlsOptions::default(),
            attrs: None,
            after_connect: Default::default(),
            password: Default::default(),
            reader: false,
            recycle_timeout: std::time::Duration::from_secs(5),
        }
    }
}

/// One pooled Postgres connection: deadpool-postgres's client, and the statements the
/// middleware prepared on it (bounded by `statement_cache_capacity`; deadpool-postgres's own
/// unbounded cache is not used).
pub(crate) struct PgClient {
    pub(crate) client: ClientWrapper,
    pub(crate) stmts: StmtCache<PgStmt>,
    pub(crate) opts: Arc<PgOptions>,
    /// When the connection last went back to the pool.
    pub(crate) returned_at: Option<std::time::Instant>,
    /// What this connection has added to the pool's statistics.
    pub(crate) flushed: crate::stats::Flushed,
    /// The pool's connector, for cancel requests (they open a connection of their own).
    pub(super) connector: Connector,
    /// Unnamed mode: the names and text of the statements tokio-postgres prepared for its type
    /// lookups, which each describe prepares again inside its transaction (see `describe`).
    pub(crate) type_lookups: Vec<(String, String)>,
    /// How many settings (`pg_settings`) the session had when the connection opened: a reset
    /// that finds more (a library was loaded) closes the connection instead.
    pub(crate) settings: Option<u64>,
    /// This connection's number, unique in the process (statements remember it).
    pub(crate) id: u64,
    /// The host it reached.
    pub(crate) host: HostName,
    /// What the server reported of its state (see `attrs::ServerFlags`).
    pub(crate) flags: Arc<ServerFlags>,
    /// The pool's generation when the connection was opened (see `HostBook::epoch`).
    pub(super) epoch: u64,
    /// A fresh session of this connection reads a backslash in a plain `'…'` string as an
    /// escape (`standard_conforming_strings` off when it opened, after the `after_connect`
    /// hook); the reset before reuse brings it back to that.
    pub(crate) backslash_strings: bool,
}

impl PgClient {
    /// A cancel request for the statement running on this connection, over the pool's TLS.
    pub(crate) fn cancel_request(&self) -> CancelRequest {
        CancelRequest::new(self.client.cancel_token(), self.connector.clone())
    }
}

impl crate::pooling::Pooled for PgClient {
    fn returned_at(&self) -> Option<std::time::Instant> {
        self.returned_at
    }
}

/// deadpool-postgres's manager, with a statement cache per connection.
pub(crate) struct PgManager {
    /// The pool's readers (replicas and the primary's read-only pool), when it has replicas.
    pub(crate) readers: Option<Arc<super::replica::Readers>>,
    /// Set when the pool is closed; the pool's `Listener`s stop when it is.
    pub(crate) closing: Arc<tokio::sync::watch::Sender<bool>>,
    inner: deadpool_postgres::Manager,
    pub(super) opts: Arc<PgOptions>,
    /// The kind of server every connection must reach.
    pub(crate) attrs: SessionAttrs,
    /// Each host's bound (connect, startup, check): `connect_timeout`, else with several hosts
    /// the create timeout shared between them.
    pub(super) host_bound: Option<std::time::Duration>,
    /// The hosts that failed lately, and the connections' generation.
    pub(crate) book: HostBook,
    /// The connection settings and connector, for connections outside the pool (a `Listener`).
    pub(crate) config: Endpoint,
}

impl crate::server::held::NetBound for PgManager {
    fn recycle_timeout(&self) -> std::time::Duration {
        self.opts.recycle_timeout
    }
}

/// Where and how to connect: the driver's settings (TLS mode included) and the connector.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) config: tokio_postgres::Config,
    pub(crate) connector: Connector,
    /// Run on each connection made (a `Listener`'s too).
    pub(crate) after_connect: crate::setup::AfterConnect,
    /// Asked for the password of each connection made (see `open.rs`, `Endpoint::login`).
    pub(crate) password: crate::credentials::PasswordProvider,
    /// A reader pool's: the provider's [`Login`](crate::Login) says so.
    pub(crate) reader: bool,
}

impl std::fmt::Debug for PgManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgManager").finish_non_exhaustive()
    }
}

impl Manager for PgManager {
    /// Boxed: the pool moves its objects on every checkout and return, and a pointer is
    /// cheaper to move than the client's state.
    type Type = Box<PgClient>;
    type Error = SqlMiddlewareDbError;

    /// Opens a connection (see `open::create`).
    async fn create(&self) -> Result<Box<PgClient>> {
        // Boxed: deadpool awaits it inside every checkout's future, which would otherwise
        // carry its size on the path that finds an idle connection.
        Box::pin(super::open::create(self)).await
    }

    async fn recycle(
        &self,
        c: &mut Box<PgClient>,
        metrics: &Metrics,
    ) -> RecycleResult<SqlMiddlewareDbError> {
        // A pool that wants a writable server never hands out a connection whose server
        // reported that it stopped being writable, nor one opened before another connection
        // found that (two atomic loads; no round trip).
        if self.attrs.wants_writable() {
            let stopped = c.flags.stopped_writing(self.attrs);
            if stopped {
                self.book.server_changed(c.epoch);
            }
            if stopped || c.epoch != self.book.epoch() {
                return Err(deadpool::managed::RecycleError::Message(
                    "the server stopped accepting writes (read-only or in recovery); the connection is discarded".into(),
                ));
            }
        }
        self.inner
            .recycle(&mut c.client, metrics)
            .await
            .map_err(|e| match e {
                deadpool::managed::RecycleError::Backend(e) => {
                    deadpool::managed::RecycleError::Backend(e.into())
                }
                deadpool::managed::RecycleError::Message(m) => {
                    deadpool::managed::RecycleError::Message(m)
                }
            })
    }
}

/// The first host, port and database of a configuration, for the spans' `server.address`,
/// `server.port` and `db.namespace`.
#[cfg(feature = "tracing")]
pub(crate) fn trace_server(cfg: &tokio_postgres::Config) -> crate::telemetry::Server {
    crate::telemetry::Server {
        namespace: cfg.get_dbname().map(str::to_owned),
        address: cfg.get_hosts().first().map(|h| match h {
            tokio_postgres::config::Host::Tcp(s) => s.clone(),
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
        }),
        port: cfg.get_ports().first().copied(),
    }
}

/// Builds the pool, with the connector of its TLS settings (see `tls.rs`).
pub(crate) fn build_pool(
    mut cfg: tokio_postgres::Config,
    mut opts: PgOptions,
    pool: &PoolOptions,
    readers: Option<Arc<super::replica::Readers>>,
) -> Result<super::Pool> {
    opts.counters = Arc::clone(&pool.counters);
    opts.after_connect = pool.after_connect.clone();
    opts.recycle_timeout = pool.recycle_timeout;
    opts.password = opts.password.clone().bounded(pool.create_timeout);
    if cfg.get_hosts().is_empty() {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::Config,
            "the Postgres configuration names no host; give a URL like postgres://user@localhost/db",
        ));
    }
    // `Fast` only checks `is_closed`; the transaction state is checked by the middleware itself
    // before a connection goes back (see conn.rs), without a round trip. `test_before_acquire`
    // adds one (an empty query, bounded by the recycle timeout) for networks that drop idle
    // connections silently.
    let recycling_method = if opts.test_before_acquire {
        RecyclingMethod::Verified
    } else {
        RecyclingMethod::Fast
    };
    // Only `Verified` recycling waits (for its query): `Fast` arms no recycle timer per
    // checkout, which would cost a clock read and a timer entry each time.
    let recycle_waits = !matches!(recycling_method, RecyclingMethod::Fast);
    let connector = super::tls::connector(&opts.tls, &mut cfg)?;
    let attrs = *opts
        .attrs
        .get_or_insert_with(|| SessionAttrs::of_driver(&cfg));
    // The driver's own check, for connections it makes itself (a `Listener`): the nearest
    // value it knows.
    cfg.target_session_attrs(if attrs.wants_writable() {
        tokio_postgres::config::TargetSessionAttrs::ReadWrite
    } else {
        tokio_postgres::config::TargetSessionAttrs::Any
    });
    let hosts = cfg.get_hosts().len().max(cfg.get_hostaddrs().len());
    let host_bound = cfg.get_connect_timeout().copied().or_else(|| {
        (hosts > 1).then(|| pool.create_timeout / u32::try_from(hosts).unwrap_or(u32::MAX))
    });
    let manager_config = ManagerConfig { recycling_method };
    let inner = match &connector {
        Connector::Plain => deadpool_postgres::Manager::from_config(
            cfg.clone(),
            tokio_postgres::NoTls,
            manager_config,
        ),
        #[cfg(feature = "postgres-tls")]
        Connector::Rustls(tls) => {
            deadpool_postgres::Manager::from_config(cfg.clone(), tls.clone(), manager_config)
        }
    };
    let (password, reader) = (opts.password.clone(), opts.reader);
    let manager = PgManager {
        readers,
        closing: Arc::new(tokio::sync::watch::Sender::new(false)),
        inner,
        opts: Arc::new(opts),
        attrs,
        host_bound,
        book: HostBook::new(hosts),
        config: Endpoint {
            config: cfg,
            connector,
            after_connect: pool.after_connect.clone(),
            password,
            reader,
        },
    };
    pooling::build(manager, pool, recycle_waits)
}

/// Checks out a connection, with the pool to replace it from if it must be discarded; bounded
/// by the pool's wait timeout as a whole (see `deadline::checkout`). With `read_your_writes`, the
/// connection notes its writes on the pool's clock.
pub(crate) async fn checkout(pool: &super::Pool) -> Result<PgConnection> {
    let obj = super::deadline::checkout(pool, None).await?;
    let mut c = PgConnection::new(pool.clone(), obj);
    c.write_clock = pool.manager().readers.as_ref().and_then(|r| r.clock());
    Ok(c)
}

/// A connection for reads: on a replica (or the primary's read-only pool) when the pool has
/// replicas, else as [`checkout`].
pub(crate) async fn checkout_reader(pool: &super::Pool) -> Result<PgConnection> {
    match &pool.manager().readers {
        Some(r) => r.checkout().await,
        None => checkout(pool).await,
    }
}

/// Closes the pool, its readers' pools and its `Listener`s.
pub(crate) fn close(pool: &super::Pool) {
    pool.close();
    let m = pool.manager();
    m.closing.send_replace(true);
    if let Some(r) = &m.readers {
        r.close();
    }
}

/// What a Postgres pool is built from: the driver's configuration, the middleware's settings,
/// and the replicas.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) config: Box<tokio_postgres::Config>,
    pub(crate) options: PgOptions,
    pub(crate) replicas: super::replica::ReplicaOptions,
    /// The strictest `sslmode` the replicas' URLs named (the pool never uses less).
    pub(crate) replica_ssl: Option<crate::SslMode>,
}

impl Settings {
    /// The defaults, for the server `config` names.
    pub(crate) fn new(config: tokio_postgres::Config) -> Self {
        Self {
            config: Box::new(config),
            options: PgOptions::default(),
            replicas: Default::default(),
            replica_ssl: None,
        }
    }
}

impl crate::knobs::Knobs for Settings {
    fn statement_cache_capacity(&mut self, n: usize) {
        self.options.statement_cache_capacity = n;
    }

    fn statement_cache(&mut self, mode: crate::StatementCache) -> bool {
        self.options.statement_cache = mode;
        true
    }

    fn test_before_acquire(&mut self, on: bool) -> bool {
        self.options.test_before_acquire = on;
        true
    }

    fn password_provider(&mut self, p: crate::credentials::PasswordProvider) -> bool {
        self.options.password = p;
        true
    }

    fn ssl_mode(&mut self, mode: crate::SslMode) -> bool {
        let tls = &mut self.options.tls;
        tls.mode = Some(tls.mode.map_or(mode, |m| m.max(mode)));
        true
    }

    #[cfg(feature = "postgres-tls")]
    fn ssl_root_cert(&mut self, path: std::path::PathBuf) -> bool {
        self.options.tls.roots = Some(super::tls::Roots::File(path));
        true
    }

    #[cfg(feature = "postgres-tls")]
    fn ssl_client_cert(&mut self, cert: std::path::PathBuf, key: std::path::PathBuf) -> bool {
        self.options.tls.client_cert = Some(cert);
        self.options.tls.client_key = Some(key);
        true
    }

    fn check(&self) -> Result<()> {
        crate::limits::statement_cache_capacity(self.options.statement_cache_capacity)?;
        crate::limits::duration("replica_retry_after", self.replicas.retry_after)?;
        if let Some(d) = self.replicas.read_your_writes {
            crate::limits::duration("read_your_writes", d)?;
        }
        Ok(())
    }
}

/// Builds the pool, and the readers' pools when it has replicas; every connection's TLS is
/// the strictest mode given for any of them.
pub(crate) async fn build(s: Settings, pool: &PoolOptions) -> Result<super::Pool> {
    let (cfg, mut pg, replicas) = (s.config, s.options, s.replicas);
    pg.tls.raise_to_strictest(
        &cfg,
        replicas.replicas.iter().map(|(c, _)| c),
        s.replica_ssl,
    );
    let readers = if replicas.replicas.is_empty() {
        None
    } else {
        Some(Arc::new(super::replica::Readers::build(
            &cfg, &pg, pool, replicas,
        )?))
    };
    build_pool(*cfg, pg, pool, readers)
}

/// Where spans say the database is.
#[allow(clippy::default_constructed_unit_structs)]
pub(crate) fn server(s: &Settings) -> crate::telemetry::Server {
    #[cfg(feature = "tracing")]
    return trace_server(&s.config);
    #[cfg(not(feature = "tracing"))]
    {
        let _ = s;
        crate::telemetry::Server::default()
    }
}

/// The pool's size and availability (its readers' pools, on servers of their own, are not
/// counted in).
pub(crate) fn status(
    pool: &super::Pool,
    counters: &crate::pooling::Counters,
) -> crate::pooling::PoolStatus {
    crate::pooling::status(pool, None, counters)
}
