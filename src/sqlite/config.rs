//! SQLite settings and the pool manager (`open.rs` opens and sets up its connections).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool::managed::{Manager, Metrics, RecycleError, RecycleResult};
use rusqlite::{Connection, OpenFlags};

use super::conn::SqliteConn;
use super::session::Fresh;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::knobs::SingleWriter;
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
    /// statement that ran past the budget is offloaded from then on (a write is never interrupted:
    /// it finishes where it started). A read's budget usually starts at SQLite's first progress
    /// call, within its first thousand virtual-machine steps (a point lookup takes a few dozen and
    /// usually reads no clock); a statement's first run and every sixteenth are timed from their
    /// start, so that a read that spends its time inside one step (`count(*)` of a large table) is
    /// noticed too. A write's budget starts at once. Lock waits never sleep on the task: a busy
    /// database sends the statement to the blocking pool, where it waits up to the busy timeout.
    /// Scripts (`execute_batch`) and raw access closures always run on the blocking pool.
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
    pub(super) path: String,
    pub(super) flags: OpenFlags,
    pub(super) opts: Arc<SqliteOptions>,
    /// The readers' pool of the single-writer mode (this manager's pool is then the writer's).
    pub(super) readers: Option<super::Pool>,
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
            readers: None,
            _keepalive: keepalive,
        })
    }
}

impl Manager for SqliteManager {
    /// Boxed: the pool moves its objects on every checkout and return, and a pointer is
    /// cheaper to move than the connection's state.
    type Type = Box<SqliteConn>;
    type Error = SqlMiddlewareDbError;

    async fn create(&self) -> Result<Box<SqliteConn>> {
        self.open_conn().await
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
pub(crate) type Settings = crate::knobs::Embedded<SqliteTarget, SqliteOptions>;

impl crate::knobs::EmbeddedOptions for SqliteOptions {
    fn busy_timeout_mut(&mut self) -> &mut Duration {
        &mut self.busy_timeout
    }

    fn statement_cache_capacity_mut(&mut self) -> &mut usize {
        &mut self.statement_cache_capacity
    }

    fn knobs(&self) -> (Duration, usize) {
        (self.busy_timeout, self.statement_cache_capacity)
    }
}

/// Where spans say the database is: SQLite has no server.
#[allow(clippy::default_constructed_unit_structs)]
pub(crate) fn server(_: &Settings) -> crate::telemetry::Server {
    crate::telemetry::Server::default()
}

/// Builds the SQLite wing's pool (in the single-writer mode, the writer's pool, which holds
/// the readers' pool).
pub(crate) async fn build(s: Settings, pool: &PoolOptions) -> Result<super::Pool> {
    let (target, mut opts) = (s.target, s.options);
    opts.counters = Arc::clone(&pool.counters);
    opts.after_connect = pool.after_connect.clone();
    // The recycle is local: at most it takes the connection back from a rollback or a stopped
    // stream worker, so it needs no timer of its own.
    let Some(readers) = s.readers else {
        return pooling::build(SqliteManager::new(target, opts)?, pool, false);
    };
    if matches!(target, SqliteTarget::Memory) {
        return Err(SingleWriter::in_memory());
    }
    if !opts.wal {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::Config,
            "`single_writer` needs WAL (readers would wait for the writer): leave `wal` on",
        ));
    }
    let (writer_pool, reader_pool) = SingleWriter::split(pool, readers);
    let mut reader_opts = opts.clone();
    // The readers' session is their own (opened read-only).
    reader_opts.fresh = Arc::default();
    let mut reader = SqliteManager::new(target.clone(), reader_opts)?;
    reader.flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut writer = SqliteManager::new(target, opts)?;
    writer.readers = Some(pooling::build(reader, &reader_pool, false)?);
    let writer = pooling::build(writer, &writer_pool, false)?;
    // The writer opens the database first: it creates the file and turns WAL on, which a
    // read-only connection cannot do.
    drop(pooling::get(&writer).await?);
    Ok(writer)
}

impl crate::readers_pool::WithReaders for SqliteManager {
    fn readers(&self) -> Option<&super::Pool> {
        self.readers.as_ref()
    }
}
