//! PostgreSQL settings and pool construction: deadpool-postgres connects and recycles; each
//! pooled connection carries the middleware's bounded statement cache beside it.

use std::sync::Arc;

use deadpool::managed::{Manager, Metrics, RecycleResult};
use deadpool_postgres::{ClientWrapper, ManagerConfig, RecyclingMethod};

use super::conn::PgConnection;
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
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            statement_cache_capacity: 128,
            test_before_acquire: false,
            statement_cache: super::stmt::StatementCache::Named,
            counters: Arc::default(),
            tls: TlsOptions::default(),
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
    connector: Connector,
    /// Unnamed mode: the names and text of the statements tokio-postgres prepared for its type
    /// lookups, which each describe prepares again inside its transaction (see `describe`).
    pub(crate) type_lookups: Vec<(String, String)>,
    /// How many settings (`pg_settings`) the session had when the connection opened: a reset
    /// that finds more (a library was loaded) closes the connection instead.
    pub(crate) settings: Option<u64>,
    /// This connection's number, unique in the process (statements remember it).
    pub(crate) id: u64,
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
    inner: deadpool_postgres::Manager,
    opts: Arc<PgOptions>,
    /// The connection settings and connector, for connections outside the pool (a `Listener`).
    pub(crate) config: Endpoint,
}

/// Where and how to connect: the driver's settings (TLS mode included) and the connector.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) config: tokio_postgres::Config,
    pub(crate) connector: Connector,
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

    async fn create(&self) -> Result<Box<PgClient>> {
        let limit = self.config.config.get_connect_timeout().copied();
        let client = match limit {
            None => self.inner.create().await?,
            // Boxed: a connect is rare, and its future is deep.
            Some(limit) => Box::pin(self.connect_bounded(limit)).await?,
        };
        // The opening exchange is part of the connect: bounded by `connect_timeout` too.
        let mut settings = match limit {
            None => opening_settings(&client).await?,
            Some(limit) => tokio::time::timeout(limit, opening_settings(&client))
                .await
                .map_err(|_| {
                    SqlMiddlewareDbError::new(
                        ErrorKind::ConnectionLost,
                        format!(
                            "the server did not finish opening the session within connect_timeout ({limit:?})"
                        ),
                    )
                })??,
        };
        if self.opts.statement_cache == super::stmt::StatementCache::Unnamed {
            // Behind a transaction-mode pooler each transaction may run on another server
            // connection, whose count says nothing about this one.
            settings = None;
        }
        Ok(Box::new(PgClient {
            client,
            stmts: StmtCache::new(),
            opts: Arc::clone(&self.opts),
            returned_at: None,
            flushed: Default::default(),
            connector: self.config.connector.clone(),
            type_lookups: Vec::new(),
            settings,
            id: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        }))
    }

    async fn recycle(
        &self,
        c: &mut Box<PgClient>,
        metrics: &Metrics,
    ) -> RecycleResult<SqlMiddlewareDbError> {
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

/// Part of the session every pooled connection opens with: PL/pgSQL loaded (an empty `DO`
/// block), as the first `DO` block or PL/pgSQL function of any borrower would load it, adding
/// settings that no reset removes. Returns how many settings the session then has (`None`
/// where the server has no PL/pgSQL or no `pg_settings`, as a pooler may not).
async fn opening_settings(
    client: &tokio_postgres::Client,
) -> std::result::Result<Option<u64>, tokio_postgres::Error> {
    const COUNT: &str = "SELECT count(*) FROM pg_settings";
    let msgs = match client
        .simple_query(&format!("DO $$BEGIN END$$; {COUNT}"))
        .await
    {
        Ok(m) => m,
        Err(e) if e.as_db_error().is_some() => match client.simple_query(COUNT).await {
            Ok(m) => m,
            Err(e) if e.as_db_error().is_some() => return Ok(None),
            Err(e) => return Err(e),
        },
        Err(e) => return Err(e),
    };
    Ok(msgs.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).and_then(|n| n.parse().ok()),
        _ => None,
    }))
}

impl PgManager {
    /// Connects to the configuration's hosts in order, each within `limit` as a whole: TCP,
    /// TLS, startup, authentication and the `target_session_attrs` check (tokio-postgres bounds
    /// only the TCP connect by `connect_timeout`, so a host that accepts and never answers
    /// would hold the connect, and every host after it, for ever).
    async fn connect_bounded(&self, limit: std::time::Duration) -> Result<ClientWrapper> {
        let cfg = &self.config.config;
        let hosts = cfg.get_hosts().len().max(cfg.get_hostaddrs().len());
        // `load_balance_hosts=random`: start at a host picked by the clock, then go round.
        let start = match cfg.get_load_balance_hosts() {
            tokio_postgres::config::LoadBalanceHosts::Random if hosts > 0 => {
                usize::try_from(crate::deadline::now_nanos() % hosts as u64).unwrap_or(0)
            }
            _ => 0,
        };
        let mut last = None;
        for i in (0..hosts).map(|k| (start + k) % hosts.max(1)) {
            let one = one_host(cfg, i);
            let mut task = None;
            match tokio::time::timeout(limit, self.config.connector.connect(&one, &mut task)).await
            {
                Ok(Ok(client)) => {
                    if let Some(task) = task {
                        return Ok(ClientWrapper::new(client, task));
                    }
                }
                Ok(Err(e)) => last = Some(SqlMiddlewareDbError::from(e)),
                Err(_) => {
                    last = Some(SqlMiddlewareDbError::new(
                        ErrorKind::ConnectionLost,
                        format!(
                            "host {} of the configuration did not complete the connection (TCP, startup, authentication) within connect_timeout ({limit:?})",
                            i + 1
                        ),
                    ));
                }
            }
        }
        Err(last.unwrap_or_else(|| {
            SqlMiddlewareDbError::new(
                ErrorKind::Config,
                "the Postgres configuration names no host",
            )
        }))
    }
}

/// Drives a pooled connection's I/O in a task of its own, whose handle it keeps.
impl super::tls::Driver for &mut Option<tokio::task::JoinHandle<()>> {
    fn drive<S, T>(self, conn: tokio_postgres::Connection<S, T>)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        *self = Some(tokio::spawn(async move {
            let _ = conn.await;
        }));
    }
}

/// `cfg` with only its host number `i` (and that host's address and port).
fn one_host(cfg: &tokio_postgres::Config, i: usize) -> tokio_postgres::Config {
    use tokio_postgres::config::Host;
    let mut one = tokio_postgres::Config::new();
    match cfg.get_hosts().get(i) {
        Some(Host::Tcp(h)) => {
            one.host(h);
        }
        #[cfg(unix)]
        Some(Host::Unix(p)) => {
            one.host_path(p);
        }
        None => {}
    }
    if let Some(a) = cfg.get_hostaddrs().get(i) {
        one.hostaddr(*a);
    }
    let ports = cfg.get_ports();
    one.port(ports.get(i).or(ports.first()).copied().unwrap_or(5432));
    if let Some(u) = cfg.get_user() {
        one.user(u);
    }
    if let Some(p) = cfg.get_password() {
        one.password(p);
    }
    if let Some(d) = cfg.get_dbname() {
        one.dbname(d);
    }
    if let Some(o) = cfg.get_options() {
        one.options(o);
    }
    if let Some(a) = cfg.get_application_name() {
        one.application_name(a);
    }
    if let Some(t) = cfg.get_connect_timeout() {
        one.connect_timeout(*t);
    }
    if let Some(t) = cfg.get_tcp_user_timeout() {
        one.tcp_user_timeout(*t);
    }
    one.ssl_mode(cfg.get_ssl_mode())
        .ssl_negotiation(cfg.get_ssl_negotiation())
        .keepalives(cfg.get_keepalives())
        .keepalives_idle(cfg.get_keepalives_idle())
        .target_session_attrs(cfg.get_target_session_attrs())
        .channel_binding(cfg.get_channel_binding());
    if let Some(t) = cfg.get_keepalives_interval() {
        one.keepalives_interval(t);
    }
    if let Some(n) = cfg.get_keepalives_retries() {
        one.keepalives_retries(n);
    }
    one
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
) -> Result<super::Pool> {
    opts.counters = Arc::clone(&pool.counters);
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
    let connector = super::tls::connector(&opts.tls, &mut cfg)?;
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
    let manager = PgManager {
        inner,
        opts: Arc::new(opts),
        config: Endpoint {
            config: cfg,
            connector,
        },
    };
    pooling::build(manager, pool, true)
}

/// Checks out a connection, with the pool to replace it from if it must be discarded; bounded
/// by the pool's wait timeout as a whole (see `timeout::checkout`).
pub(crate) async fn checkout(pool: &super::Pool) -> Result<PgConnection> {
    // Boxed: the bounded checkout (and the connect it may start) is large, and the pool's
    // checkout future, shared by every backend, would otherwise carry its size.
    let obj = Box::pin(super::timeout::checkout(pool, None)).await?;
    Ok(PgConnection::new(pool.clone(), obj))
}
