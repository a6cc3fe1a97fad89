//! SQLite settings, connection setup and the pool manager.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool::managed::{Manager, Metrics, RecycleError, RecycleResult};
use rusqlite::{Connection, OpenFlags};

use super::busy::{BusyScope, install_busy_handler};
use super::conn::SqliteConn;
use super::offload::ProgressState;
use super::session::{Fresh, SessionCell, install_authorizer};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::pooling::{self, PoolOptions};

/// How SQLite work leaves (or does not leave) the async task that holds the connection.
///
/// SQLite calls are blocking. Moving each one to another thread costs a thread wake-up, which on
/// small machines costs 10× a cached point lookup; running it on the task costs nothing extra but
/// blocks that executor thread while it runs. The default takes the best of both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SqliteExecModel {
    /// Run statements on the calling task, but watch each one: a read-only statement that runs
    /// longer than `inline_budget` is interrupted and re-run on tokio's blocking pool, and any
    /// statement that ran past the budget is offloaded from then on (a write is never
    /// interrupted: it finishes where it started). Lock waits never sleep on the task: a busy database sends the statement to
    /// the blocking pool, where it waits up to the busy timeout. Scripts (`execute_batch`) and raw
    /// access closures always run on the blocking pool.
    Adaptive {
        /// How long a statement may run on the calling task before it is moved off it.
        inline_budget: Duration,
    },
    /// Always run on the calling task. Fastest; a long statement or a lock wait blocks that
    /// executor thread for its whole duration.
    Inline,
    /// Always run on tokio's blocking pool (`spawn_blocking`), one thread hop per call.
    Offload,
}

impl Default for SqliteExecModel {
    fn default() -> Self {
        SqliteExecModel::Adaptive {
            inline_budget: Duration::from_millis(1),
        }
    }
}

/// SQLite connection settings applied to every pooled connection.
#[derive(Debug, Clone)]
pub(crate) struct SqliteOptions {
    pub(crate) busy_timeout: Duration,
    pub(crate) exec_model: SqliteExecModel,
    pub(crate) statement_cache_capacity: usize,
    pub(crate) wal: bool,
    pub(crate) foreign_keys: bool,
    /// The database is the pool's private in-memory one: nothing ever waits for a disk.
    pub(crate) in_memory: bool,
    /// The pool's counters, which each connection adds its statistics to when it goes back.
    pub(crate) counters: Arc<crate::pooling::Counters>,
    /// A freshly configured connection of the pool, read when the first one opens: what the
    /// pool puts every connection back to (with an `after_connect` hook, each connection reads
    /// its own after the hook).
    pub(crate) fresh: Arc<std::sync::OnceLock<Arc<Fresh>>>,
    /// Run on each connection the pool opens.
    pub(crate) after_connect: crate::setup::AfterConnect,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(5),
            exec_model: SqliteExecModel::default(),
            statement_cache_capacity: 128,
            wal: true,
            foreign_keys: true,
            in_memory: false,
            counters: Arc::default(),
            fresh: Arc::default(),
            after_connect: Default::default(),
        }
    }
}

/// Where the database lives.
#[derive(Debug, Clone)]
pub(crate) enum SqliteTarget {
    /// A file path.
    File(PathBuf),
    /// A private in-memory database shared by every connection of one pool.
    Memory,
}

static MEMORY_DB_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Creates and checks pooled SQLite connections. Recycling inspects the connection directly
/// (no query, no thread hop): a connection left inside a transaction is rolled back, and a
/// broken one is discarded.
pub(crate) struct SqliteManager {
    path: String,
    flags: OpenFlags,
    opts: Arc<SqliteOptions>,
    /// Keeps a shared in-memory database alive while the pool exists.
    _keepalive: Option<Mutex<Connection>>,
}

impl std::fmt::Debug for SqliteManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteManager")
            .field("path", &self.path)
            .finish()
    }
}

impl SqliteManager {
    pub(crate) fn new(target: SqliteTarget, mut opts: SqliteOptions) -> Result<Self> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let (path, keepalive) = match target {
            SqliteTarget::File(p) => {
                let path = p.to_str().ok_or_else(|| {
                    SqlMiddlewareDbError::new(
                        ErrorKind::Config,
                        "the SQLite path is not valid UTF-8",
                    )
                })?;
                if path.contains('\0') {
                    return Err(SqlMiddlewareDbError::new(
                        ErrorKind::Config,
                        "the SQLite path contains a NUL byte",
                    ));
                }
                (path.to_owned(), None)
            }
            SqliteTarget::Memory => {
                // The memdb VFS shares one in-memory database between connections of this
                // process that open the same name; the keepalive connection holds it open.
                let n = MEMORY_DB_COUNTER.fetch_add(1, Ordering::Relaxed);
                let uri = format!("file:/sqlmw-mem-{}-{n}?vfs=memdb", std::process::id());
                opts.wal = false;
                opts.in_memory = true;
                let keep =
                    Connection::open_with_flags(&uri, flags).map_err(super::error::map_err)?;
                (uri, Some(Mutex::new(keep)))
            }
        };
        Ok(Self {
            path,
            flags,
            opts: Arc::new(opts),
            _keepalive: keepalive,
        })
    }

    /// [`Self::open`], tried again while the database is busy, until the busy timeout.
    ///
    /// SQLite does not always call the busy handler: a connection that opens while another one
    /// closes the last handle on a WAL database (and checkpoints it), or while the WAL index is
    /// being recovered, can get `SQLITE_BUSY` at once. A checkout must not fail for that, so the
    /// whole open is retried on its blocking thread, with a short, growing sleep.
    fn open_retrying(
        path: &str,
        flags: OpenFlags,
        opts: &Arc<SqliteOptions>,
    ) -> Result<SqliteConn> {
        let deadline = std::time::Instant::now() + opts.busy_timeout;
        let mut pause = Duration::from_millis(1);
        loop {
            match Self::open(path, flags, opts) {
                // A new connection holds no transaction: a lock SQLite refused at once is a
                // race that passes, like any lock wait.
                Err(e) if matches!(e.kind(), ErrorKind::Busy | ErrorKind::SerializationFailure) => {
                    let e = e.with_kind(ErrorKind::Busy);
                    let now = std::time::Instant::now();
                    if now >= deadline {
                        return Err(e);
                    }
                    std::thread::sleep(pause.min(deadline - now));
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                // A read-only database that cannot be set up is a configuration error.
                r => return r.map_err(super::error::at_open),
            }
        }
    }

    fn open(path: &str, flags: OpenFlags, opts: &Arc<SqliteOptions>) -> Result<SqliteConn> {
        let conn = Connection::open_with_flags(path, flags).map_err(super::error::map_err)?;
        // First, so that configuring the connection expires no prepared statement later.
        let cell = Arc::new(SessionCell::default());
        install_authorizer(&conn, &cell)?;
        install_busy_handler(&conn)?;
        // Switching to WAL may wait for another connection's lock: allow the busy timeout.
        let _scope =
            BusyScope::set(u64::try_from(opts.busy_timeout.as_millis()).unwrap_or(u64::MAX));
        if opts.wal {
            let mode: String = conn
                .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
                .map_err(super::error::map_err)?;
            if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::Config,
                    format!("could not switch the database to WAL (journal_mode is {mode})"),
                ));
            }
        }
        conn.execute_batch(if opts.foreign_keys {
            "PRAGMA foreign_keys=ON"
        } else {
            "PRAGMA foreign_keys=OFF"
        })
        .map_err(super::error::map_err)?;
        conn.set_prepared_statement_cache_capacity(opts.statement_cache_capacity);
        let syncing_commits = !opts.in_memory && commits_sync(&conn)?;
        let sync_level: i64 = conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .map_err(super::error::map_err)?;
        let progress = ProgressState::install(&conn)?;
        let fresh = match opts.fresh.get() {
            Some(f) => Arc::clone(f),
            None => {
                let f = Arc::new(Fresh::read(&conn)?);
                Arc::clone(opts.fresh.get_or_init(|| f))
            }
        };
        // What configuring the connection did is the fresh session, not a borrower's change.
        cell.take();
        Ok(SqliteConn::new(
            conn,
            progress,
            Arc::clone(opts),
            (syncing_commits, sync_level),
            (cell, fresh),
        ))
    }
}

/// Whether every commit on this file database waits for the disk (an fsync): true unless
/// `synchronous` is `OFF`, or `NORMAL` in WAL mode (which syncs only at checkpoints).
pub(super) fn commits_sync(conn: &Connection) -> Result<bool> {
    let level: i64 = conn
        .query_row("PRAGMA synchronous", [], |r| r.get(0))
        .map_err(super::error::map_err)?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .map_err(super::error::map_err)?;
    let wal = mode.eq_ignore_ascii_case("wal");
    Ok(match level {
        0 => false,
        1 => !wal,
        _ => !mode.eq_ignore_ascii_case("memory") && !mode.eq_ignore_ascii_case("off"),
    })
}

impl Manager for SqliteManager {
    /// Boxed: the pool moves its objects on every checkout and return, and a pointer is
    /// cheaper to move than the connection's state.
    type Type = Box<SqliteConn>;
    type Error = SqlMiddlewareDbError;

    async fn create(&self) -> Result<Box<SqliteConn>> {
        let path = self.path.clone();
        let flags = self.flags;
        let opts = Arc::clone(&self.opts);
        // Opening touches the file system (and may recover a WAL): keep it off the async thread.
        let mut conn = match tokio::runtime::Handle::try_current() {
            Ok(handle) => handle
                .spawn_blocking(move || Self::open_retrying(&path, flags, &opts).map(Box::new))
                .await
                .map_err(|e| {
                    SqlMiddlewareDbError::new(
                        ErrorKind::Other,
                        format!("opening the SQLite connection failed: {e}"),
                    )
                })??,
            Err(_) => Self::open_retrying(&path, flags, &opts).map(Box::new)?,
        };
        if self.opts.after_connect.is_set() {
            // Boxed: the hook's future must not grow every checkout's future.
            Box::pin(conn.set_up(&self.opts.after_connect)).await?;
        }
        Ok(conn)
    }

    async fn recycle(
        &self,
        conn: &mut Box<SqliteConn>,
        _: &Metrics,
    ) -> RecycleResult<SqlMiddlewareDbError> {
        if conn.returning.is_some() {
            // A rollback (or a dropped stream's worker, told to stop) still has the connection.
            // Boxed: this rare wait must not grow every checkout's future.
            Box::pin(conn.settle_stream()).await;
        }
        conn.make_clean().map_err(RecycleError::Backend)
    }
}

/// What a SQLite pool is built from: where the database is, and how connections use it.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) target: SqliteTarget,
    pub(crate) options: SqliteOptions,
}

impl Settings {
    /// The defaults, for the database at `target`.
    pub(crate) fn new(target: SqliteTarget) -> Self {
        Self {
            target,
            options: SqliteOptions::default(),
        }
    }
}

impl crate::knobs::Knobs for Settings {
    fn statement_cache_capacity(&mut self, n: usize) {
        self.options.statement_cache_capacity = n;
    }

    fn busy_timeout(&mut self, d: Duration) -> bool {
        self.options.busy_timeout = d;
        true
    }

    fn check(&self) -> Result<()> {
        crate::limits::duration("busy_timeout", self.options.busy_timeout)?;
        crate::limits::statement_cache_capacity(self.options.statement_cache_capacity)
    }
}

/// Where spans say the database is: SQLite has no server.
#[allow(clippy::default_constructed_unit_structs)]
pub(crate) fn server(_: &Settings) -> crate::telemetry::Server {
    crate::telemetry::Server::default()
}

/// Builds the SQLite wing's pool.
pub(crate) async fn build(s: Settings, pool: &PoolOptions) -> Result<super::Pool> {
    let (target, mut opts) = (s.target, s.options);
    opts.counters = Arc::clone(&pool.counters);
    opts.after_connect = pool.after_connect.clone();
    // The recycle is local: at most it takes the connection back from a rollback or a stopped
    // stream worker, so it needs no timer of its own.
    pooling::build(SqliteManager::new(target, opts)?, pool, false)
}

/// Closes the pool.
pub(crate) fn close(pool: &super::Pool) {
    pool.close();
}

/// Checks out a connection.
pub(crate) async fn checkout(pool: &super::Pool) -> Result<super::Conn> {
    pooling::get(pool).await
}
