//! MySQL settings and the pool manager: mysql_async connections (its own statement cache and
//! pool unused; opened in `open.rs`) pooled by deadpool, each with the middleware's bounded
//! statement cache.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use deadpool::managed::{Manager, Metrics, RecycleError, RecycleResult};
use mysql_async::prelude::Queryable;

use super::conn::MyConnection;
use super::stmt::MyStmt;
use super::tls::MyTls;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::pooling::{self, PoolOptions};
use crate::server::StatementCache;
use crate::stmt_cache::StmtCache;

/// MySQL-specific settings.
#[derive(Debug, Clone)]
pub(crate) struct MyOptions {
    /// How many prepared statements each connection keeps (least recently used go first).
    pub(crate) statement_cache_capacity: usize,
    /// Prepared statements kept (named) or closed after each run (unnamed).
    pub(crate) statement_cache: StatementCache,
    /// Check each connection with a `COM_PING` before handing it out.
    pub(crate) test_before_acquire: bool,
    pub(crate) tls: MyTls,
    /// The pool's counters, which each connection adds its statistics to when it goes back.
    pub(crate) counters: Arc<crate::pooling::Counters>,
    /// Run on each connection the pool opens, and again after a session reset.
    pub(crate) after_connect: crate::setup::AfterConnect,
    /// Asked for the password each time a connection opens.
    pub(crate) password: crate::credentials::PasswordProvider,
    /// Bumped by every schema change made through the pool: connections behind it forget their
    /// cached statements (whose columns may have changed).
    pub(crate) schema_epoch: Arc<AtomicU64>,
    /// The pool's recycle timeout, which bounds the rare recycle that needs the network.
    pub(crate) recycle_timeout: std::time::Duration,
    /// The URL's hosts and how to pick one (see `hosts.rs`).
    pub(crate) hosts: super::hosts::Hosts,
    /// `SET SESSION wsrep_sync_wait=1` on every connection (read-your-writes across Galera
    /// nodes), again after each session reset.
    pub(crate) causal_reads: bool,
    /// A reader pool's: every session is read-only (`SET SESSION TRANSACTION READ ONLY`, again
    /// after each session reset), and the password provider is told.
    pub(crate) reader: bool,
}

impl Default for MyOptions {
    fn default() -> Self {
        Self {
            statement_cache_capacity: 128,
            statement_cache: StatementCache::Named,
            test_before_acquire: false,
            tls: MyTls::default(),
            counters: Arc::default(),
            after_connect: Default::default(),
            password: Default::default(),
            schema_epoch: Arc::default(),
            recycle_timeout: std::time::Duration::from_secs(5),
            hosts: Default::default(),
            causal_reads: false,
            reader: false,
        }
    }
}

/// One pooled MySQL connection and what the middleware keeps beside it.
pub(crate) struct MyClient {
    pub(crate) conn: mysql_async::Conn,
    pub(crate) stmts: StmtCache<MyStmt>,
    pub(crate) opts: Arc<MyOptions>,
    /// When the connection last went back to the pool.
    pub(crate) returned_at: Option<std::time::Instant>,
    /// What this connection has added to the pool's statistics.
    pub(crate) flushed: crate::stats::Flushed,
    /// This connection's number, unique in the process (statements remember it).
    pub(crate) id: u64,
    /// Bumped whenever the server's prepared statements of this session were dropped (a reset)
    /// or closed by the middleware: a statement of an older generation is prepared again.
    pub(crate) generation: u64,
    /// What the middleware last learnt of the session's settings (see `check.rs`).
    pub(crate) facts: super::check::Facts,
    /// Autocommit was found off inside a transaction: it is turned back on when that ends.
    pub(crate) autocommit_off: bool,
    /// Statements prepared for one run whose run was abandoned between rows (a stream dropped
    /// early): closed on the server before the connection's next command.
    pub(crate) pending_close: Vec<mysql_async::Statement>,
    /// A borrower may have left something in the session: reset before the next one.
    pub(crate) dirty: bool,
    /// Must not be reused (a cleaning that could not finish).
    pub(crate) broken: bool,
    /// The pool's schema epoch this connection's statements were prepared at.
    pub(crate) epoch: u64,
    /// The server's `max_allowed_packet`: the largest value (and statement) it takes.
    pub(crate) max_packet: u64,
    /// How a fresh session of the server reads quotes (its global `sql_mode`, as read when the
    /// connection opened): what a session reset goes back to, before the check reads it again.
    pub(crate) server_quotes: crate::sql::scanner::QuoteModes,
    /// The host and port it reached (for spans).
    #[cfg(feature = "tracing")]
    pub(crate) host: (Arc<str>, u16),
    /// How to open another connection to the same server (a `KILL QUERY` for this one).
    pub(crate) endpoint: Arc<Endpoint>,
    /// The server and the session this connection reached, recorded when it opened: a
    /// `KILL QUERY` for it is sent only where the killer finds them (see `deadline::Mark`).
    pub(crate) mark: Option<super::deadline::Mark>,
    /// The host it reached (its number in the URL's list) and that host's generation then: a
    /// checkout drops the connection once the host was marked down (see `hosts.rs`).
    pub(crate) node: (usize, u64),
}

impl crate::pooling::Pooled for MyClient {
    fn returned_at(&self) -> Option<std::time::Instant> {
        self.returned_at
    }
}

/// A pool's server, as given: mysql_async's options, whose `Debug` would show the password.
#[derive(Clone)]
pub(crate) struct MyTarget(pub(crate) Box<mysql_async::Opts>);

impl std::fmt::Debug for MyTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_opts(&self.0, f)
    }
}

/// mysql_async's options without the password.
fn debug_opts(o: &mysql_async::Opts, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_struct("MysqlOpts")
        .field("host", &o.ip_or_hostname())
        .field("port", &o.tcp_port())
        .field("socket", &o.socket())
        .field("user", &o.user())
        .field("password", &o.pass().map(|_| "***"))
        .field("db_name", &o.db_name())
        .finish_non_exhaustive()
}

/// Where and how to connect.
pub(crate) struct Endpoint {
    pub(crate) opts: mysql_async::Opts,
    #[cfg_attr(not(feature = "mysql-tls"), allow(dead_code))]
    pub(crate) tls: MyTls,
    /// Asked for the password of each connection made (see `open.rs`, `Endpoint::connect_to`).
    pub(crate) password: crate::credentials::PasswordProvider,
    /// The URL's hosts (`opts` names the first, or, for a connection's own endpoint, its host).
    pub(crate) hosts: super::hosts::Hosts,
    /// What the pool remembers of its hosts (shared with its readers' pool on the same hosts).
    pub(crate) book: Arc<super::hosts::HostBook>,
    /// A reader pool's: the password provider's [`Login`](crate::Login) says so.
    pub(crate) reader: bool,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_opts(&self.opts, f)
    }
}

/// The pool manager.
pub(crate) struct MyManager {
    pub(crate) opts: Arc<MyOptions>,
    pub(crate) endpoint: Arc<Endpoint>,
    /// The pool's readers (see `replica.rs`); `None` on a reader pool itself.
    pub(crate) readers: Option<Arc<super::replica::Readers>>,
}

impl crate::server::held::NetBound for MyManager {
    fn recycle_timeout(&self) -> std::time::Duration {
        self.opts.recycle_timeout
    }
}

impl std::fmt::Debug for MyManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MyManager").finish_non_exhaustive()
    }
}

impl Manager for MyManager {
    /// Boxed: the pool moves its objects on every checkout and return.
    type Type = Box<MyClient>;
    type Error = SqlMiddlewareDbError;

    /// Opens a connection (see `open::create`).
    async fn create(&self) -> Result<Box<MyClient>> {
        // Boxed: deadpool awaits it inside every checkout's future, which would otherwise
        // carry its size on the path that finds an idle connection.
        Box::pin(super::open::create(self)).await
    }

    /// Without the network, usually: a connection comes back clean (see `MyConnection`'s
    /// `Drop`, which detaches one it cannot clean), so recycling checks flags; a touched session
    /// is reset here, within the recycle timeout, and `test_before_acquire` adds a `COM_PING`.
    async fn recycle(
        &self,
        c: &mut Box<MyClient>,
        _: &Metrics,
    ) -> RecycleResult<SqlMiddlewareDbError> {
        if c.broken || c.conn.is_disconnected() {
            return Err(RecycleError::Message(
                "the connection was left in an unknown state; it is discarded".into(),
            ));
        }
        let (host, generation) = c.node;
        if c.endpoint.book.generation(host) != generation {
            // Its host was marked down since it opened: no network work on it.
            return Err(RecycleError::Message(
                "its host was marked down since the connection opened; it is discarded".into(),
            ));
        }
        if !(c.dirty || c.opts.test_before_acquire) {
            return Ok(());
        }
        let bound = super::hosts::checkout_bound(&c.endpoint, self.opts.recycle_timeout);
        let clean = async {
            if c.dirty {
                super::session::reset(c).await?;
            }
            if c.opts.test_before_acquire {
                c.conn.ping().await.map_err(super::error::map_err)?;
            }
            Ok::<(), SqlMiddlewareDbError>(())
        };
        match tokio::time::timeout(bound, clean).await {
            Ok(r) => r.map_err(RecycleError::Backend),
            Err(_) => {
                c.broken = true;
                let e = SqlMiddlewareDbError::new(
                    ErrorKind::Timeout,
                    format!(
                        "cleaning the connection took longer than its bound ({bound:?}); it is discarded"
                    ),
                );
                // A host that stopped answering is left by the pool's other connections too.
                super::hosts::after_error(&c.endpoint, host, &e);
                Err(RecycleError::Backend(e))
            }
        }
    }
}

/// What a MySQL pool is built from: mysql_async's options and the middleware's settings.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) target: MyTarget,
    pub(crate) options: MyOptions,
    /// The replicas readers go to, and how.
    pub(crate) replicas: super::replica::ReplicaOptions,
}

impl Settings {
    /// The defaults, for the server `opts` names.
    pub(crate) fn new(opts: mysql_async::Opts) -> Self {
        Self {
            target: MyTarget(Box::new(opts)),
            options: MyOptions::default(),
            replicas: Default::default(),
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

    #[cfg(feature = "mysql-tls")]
    fn ssl_root_cert(&mut self, path: std::path::PathBuf) -> bool {
        self.options.tls.roots = Some(path);
        true
    }

    #[cfg(feature = "mysql-tls")]
    fn ssl_client_cert(&mut self, cert: std::path::PathBuf, key: std::path::PathBuf) -> bool {
        self.options.tls.client = Some((cert, key));
        true
    }

    fn check(&self) -> Result<()> {
        crate::limits::statement_cache_capacity(self.options.statement_cache_capacity)?;
        crate::limits::duration("replica_retry_after", self.replicas.retry_after)
    }
}

/// Where spans say the database is.
#[allow(clippy::default_constructed_unit_structs)]
pub(crate) fn server(s: &Settings) -> crate::telemetry::Server {
    #[cfg(feature = "tracing")]
    return crate::telemetry::Server {
        namespace: s.target.0.db_name().map(str::to_owned),
        address: Some(s.target.0.ip_or_hostname().to_owned()),
        port: Some(s.target.0.tcp_port()),
    };
    #[cfg(not(feature = "tracing"))]
    {
        let _ = s;
        crate::telemetry::Server::default()
    }
}

/// Closes the pool and its readers' pools.
pub(crate) fn close(pool: &super::Pool) {
    pool.close();
    if let Some(r) = &pool.manager().readers {
        r.close();
    }
}

/// Builds the pool and its readers' pools (a read-only pool on the same hosts, and one per
/// replica).
pub(crate) async fn build(s: Settings, pool: &PoolOptions) -> Result<super::Pool> {
    let book = Arc::new(super::hosts::HostBook::new(s.options.hosts.list.len()));
    let readers = super::replica::Readers::build(&s, pool, &book)?;
    build_pool(*s.target.0, s.options, pool, book, Some(Arc::new(readers)))
}

/// Builds a pool from mysql_async's options and the middleware's settings, on the hosts whose
/// state `book` keeps.
pub(crate) fn build_pool(
    opts: mysql_async::Opts,
    mut my: MyOptions,
    pool: &PoolOptions,
    book: Arc<super::hosts::HostBook>,
    readers: Option<Arc<super::replica::Readers>>,
) -> Result<super::Pool> {
    my.counters = Arc::clone(&pool.counters);
    my.after_connect = pool.after_connect.clone();
    my.recycle_timeout = pool.recycle_timeout;
    my.tls.check()?;
    // Recycling needs no timer of deadpool's per checkout: it bounds its own rare network
    // work (see `MyManager::recycle`).
    let recycle_waits = false;
    let opts: mysql_async::Opts = mysql_async::OptsBuilder::from_opts(opts)
        // The middleware's own bounded cache; mysql_async's would keep a second copy.
        .stmt_cache_size(0)
        // `UPDATE` counts the rows it matched, as on the other engines (not only those whose
        // value changed).
        .client_found_rows(true)
        .setup(vec![super::check::SETUP])
        .into();
    if opts.ip_or_hostname().is_empty() && opts.socket().is_none() {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::Config,
            "the MySQL configuration names no host; give a URL like mysql://user@localhost/db",
        ));
    }
    let manager = MyManager {
        endpoint: Arc::new(Endpoint {
            opts,
            tls: my.tls.clone(),
            password: my.password.clone().bounded(pool.create_timeout),
            book,
            hosts: my.hosts.clone(),
            reader: my.reader,
        }),
        opts: Arc::new(my),
        readers,
    };
    pooling::build(manager, pool, recycle_waits)
}

/// Checks out a connection, with the pool to replace it from if it must be discarded; bounded
/// by the pool's wait timeout as a whole.
pub(crate) async fn checkout(pool: &super::Pool) -> Result<MyConnection> {
    loop {
        let mut obj = super::deadline::checkout(pool, None).await?;
        // A connection whose host was marked down since it opened is dropped (no I/O); and
        // once per period per host, a checkout checks the node (see `hosts::still_usable`;
        // boxed, so that the checkout's future does not carry the check's size).
        let (host, generation) = obj.node;
        let bound = super::hosts::checkout_bound(&obj.endpoint, obj.opts.recycle_timeout);
        if obj.endpoint.book.generation(host) != generation
            || (super::hosts::check_due(&obj)
                && !Box::pin(super::hosts::still_usable(&mut obj, bound)).await)
        {
            drop(deadpool::managed::Object::take(obj));
            continue;
        }
        return Ok(MyConnection::new(pool.clone(), obj));
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
