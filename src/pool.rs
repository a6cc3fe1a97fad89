//! The backend boundary: [`MiddlewarePool`] and [`MiddlewarePoolConnection`]. Every cross-backend
//! `match` lives here, written once, through the two dispatch macros below.

use std::sync::Arc;

use crate::config::{DatabaseType, PoolBuilder, Target};
use crate::decode::FromRow;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::query::QueryBuilder;
use crate::results::{Columns, ResultSet};
use crate::statement::PreparedStatement;
use crate::transaction::Tx;
use crate::translation::TranslationMode;
use crate::value::RowValues;

#[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "turso")))]
compile_error!("enable at least one backend feature: sqlite, postgres or turso");

/// Runs `$body` with `$c` bound to the backend connection.
macro_rules! on_conn {
    ($inner:expr, $c:ident => $body:expr) => {
        match $inner {
            #[cfg(feature = "sqlite")]
            ConnInner::Sqlite($c) => $body,
            #[cfg(feature = "postgres")]
            ConnInner::Postgres($c) => $body,
            #[cfg(feature = "turso")]
            ConnInner::Turso($c) => $body,
        }
    };
}

/// Runs `$body` with the backend connection and the matching statement handle.
macro_rules! on_stmt {
    ($inner:expr, $handle:expr, |$c:ident, $s:ident| $body:expr) => {
        match ($inner, $handle) {
            #[cfg(feature = "sqlite")]
            (ConnInner::Sqlite($c), StmtHandle::Sqlite($s)) => $body,
            #[cfg(feature = "postgres")]
            (ConnInner::Postgres($c), StmtHandle::Postgres($s)) => $body,
            #[cfg(feature = "turso")]
            (ConnInner::Turso($c), StmtHandle::Turso($s)) => $body,
            #[allow(unreachable_patterns)]
            _ => Err(SqlMiddlewareDbError::new(
                ErrorKind::InvalidInput,
                "this statement was prepared on a connection of another backend",
            )),
        }
    };
}

#[derive(Clone)]
enum PoolInner {
    #[cfg(feature = "sqlite")]
    Sqlite(crate::sqlite::Pool),
    #[cfg(feature = "postgres")]
    Postgres(crate::postgres::Pool),
    #[cfg(feature = "turso")]
    Turso(crate::turso::Pool),
}

/// A connection pool for one database. Cheap to clone; clones share the pool.
#[derive(Clone)]
pub struct MiddlewarePool {
    inner: PoolInner,
    translation: TranslationMode,
}

impl std::fmt::Debug for MiddlewarePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiddlewarePool")
            .field("backend", &self.database_type())
            .field("status", &self.status())
            .finish()
    }
}

/// A snapshot of a pool's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStatus {
    /// The configured maximum.
    pub max_size: usize,
    /// Connections currently open (checked out or idle).
    pub size: usize,
    /// Idle connections ready for checkout.
    pub available: usize,
    /// Tasks waiting for a connection.
    pub waiting: usize,
}

macro_rules! status_of {
    ($p:expr) => {{
        let s = $p.status();
        PoolStatus {
            max_size: s.max_size,
            size: s.size,
            available: s.available,
            waiting: s.waiting,
        }
    }};
}

/// Maps a deadpool `PoolError` (deadpool-postgres uses another deadpool release, hence a macro).
macro_rules! pool_error {
    ($e:expr, $m:path) => {{
        use $m as m;
        match $e {
            m::PoolError::Backend(e) => SqlMiddlewareDbError::from(e),
            m::PoolError::Timeout(m::TimeoutType::Wait) => SqlMiddlewareDbError::new(
                ErrorKind::PoolTimeout,
                "no pooled connection became free within the wait timeout; raise max_size or wait_timeout, or hold connections for less time",
            ),
            m::PoolError::Timeout(t) => SqlMiddlewareDbError::new(
                ErrorKind::PoolTimeout,
                format!(
                    "the pool timed out while {} a connection",
                    if matches!(t, m::TimeoutType::Create) { "creating" } else { "recycling" }
                ),
            ),
            m::PoolError::Closed => SqlMiddlewareDbError::new(ErrorKind::PoolClosed, "the pool is closed"),
            other => SqlMiddlewareDbError::new(ErrorKind::Config, other.to_string()),
        }
    }};
}
#[cfg(feature = "postgres")]
pub(crate) use pool_error;

impl MiddlewarePool {
    pub(crate) async fn build(b: PoolBuilder) -> Result<Self> {
        let translation = b.translation;
        let inner = match b.target {
            #[cfg(feature = "sqlite")]
            Target::Sqlite(t) => {
                PoolInner::Sqlite(crate::sqlite::build_pool(t, b.sqlite, &b.pool)?)
            }
            #[cfg(feature = "postgres")]
            Target::Postgres(cfg) => {
                PoolInner::Postgres(crate::postgres::build_pool(*cfg, b.postgres, &b.pool)?)
            }
            #[cfg(feature = "turso")]
            Target::Turso(t) => {
                PoolInner::Turso(crate::turso::build_pool(t, b.turso, &b.pool).await?)
            }
        };
        Ok(Self { inner, translation })
    }

    /// Checks out a connection, waiting at most the wait timeout.
    pub async fn get(&self) -> Result<MiddlewarePoolConnection> {
        let inner = match &self.inner {
            #[cfg(feature = "sqlite")]
            PoolInner::Sqlite(p) => ConnInner::Sqlite(
                p.get()
                    .await
                    .map_err(|e| pool_error!(e, deadpool::managed))?,
            ),
            #[cfg(feature = "postgres")]
            PoolInner::Postgres(p) => ConnInner::Postgres(crate::postgres::checkout(p).await?),
            #[cfg(feature = "turso")]
            PoolInner::Turso(p) => ConnInner::Turso(
                p.get()
                    .await
                    .map_err(|e| pool_error!(e, deadpool::managed))?,
            ),
        };
        Ok(MiddlewarePoolConnection {
            inner,
            tx: TxFlag::None,
            translation: self.translation,
            pending: false,
            calls: 0,
        })
    }

    /// The engine behind this pool.
    pub fn database_type(&self) -> DatabaseType {
        match &self.inner {
            #[cfg(feature = "sqlite")]
            PoolInner::Sqlite(_) => DatabaseType::Sqlite,
            #[cfg(feature = "postgres")]
            PoolInner::Postgres(_) => DatabaseType::Postgres,
            #[cfg(feature = "turso")]
            PoolInner::Turso(_) => DatabaseType::Turso,
        }
    }

    /// Pool size and availability.
    pub fn status(&self) -> PoolStatus {
        match &self.inner {
            #[cfg(feature = "sqlite")]
            PoolInner::Sqlite(p) => status_of!(p),
            #[cfg(feature = "postgres")]
            PoolInner::Postgres(p) => status_of!(p),
            #[cfg(feature = "turso")]
            PoolInner::Turso(p) => status_of!(p),
        }
    }

    /// Closes the pool.
    pub fn close(&self) {
        match &self.inner {
            #[cfg(feature = "sqlite")]
            PoolInner::Sqlite(p) => p.close(),
            #[cfg(feature = "postgres")]
            PoolInner::Postgres(p) => p.close(),
            #[cfg(feature = "turso")]
            PoolInner::Turso(p) => p.close(),
        }
    }
}

pub(crate) enum ConnInner {
    #[cfg(feature = "sqlite")]
    Sqlite(crate::sqlite::Object),
    #[cfg(feature = "postgres")]
    Postgres(crate::postgres::PgConnection),
    #[cfg(feature = "turso")]
    Turso(crate::turso::Object),
}

/// A prepared statement's backend handle.
#[derive(Clone)]
pub(crate) enum StmtHandle {
    #[cfg(feature = "sqlite")]
    Sqlite(Arc<crate::sqlite::conn::SqliteStmt>),
    #[cfg(feature = "postgres")]
    Postgres(Arc<crate::postgres::conn::PgStmt>),
    #[cfg(feature = "turso")]
    Turso(Arc<crate::turso::conn::TursoStmt>),
}

impl StmtHandle {
    pub(crate) fn columns(&self) -> &Arc<Columns> {
        match self {
            #[cfg(feature = "sqlite")]
            StmtHandle::Sqlite(s) => s.columns(),
            #[cfg(feature = "postgres")]
            StmtHandle::Postgres(s) => s.columns(),
            #[cfg(feature = "turso")]
            StmtHandle::Turso(s) => s.columns(),
        }
    }
}

/// Transaction state of a checked-out connection, as seen through the public API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TxFlag {
    None,
    Active,
    /// A statement inside the transaction failed: only rollback is allowed now.
    Aborted,
}

/// A checked-out connection. Dropping it returns it to the pool, clean: a connection is never
/// handed to the next user inside a transaction or while a statement still runs.
pub struct MiddlewarePoolConnection {
    pub(crate) inner: ConnInner,
    pub(crate) tx: TxFlag,
    pub(crate) translation: TranslationMode,
    /// Set while an operation awaits its backend; still set afterwards means its future was
    /// dropped mid-way (cancelled), and the connection's state must be repaired first.
    pub(crate) pending: bool,
    /// Operations started on this checkout, for [`BUDGET_EVERY`].
    calls: u32,
}

/// Every this many operations, one unit of tokio's cooperative budget is spent (see
/// [`MiddlewarePoolConnection::enter`]).
const BUDGET_EVERY: u32 = 4;

impl std::fmt::Debug for MiddlewarePoolConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiddlewarePoolConnection")
            .field("backend", &self.database_type())
            .field("tx", &self.tx)
            .finish()
    }
}

impl MiddlewarePoolConnection {
    /// The engine behind this connection.
    pub fn database_type(&self) -> DatabaseType {
        match &self.inner {
            #[cfg(feature = "sqlite")]
            ConnInner::Sqlite(_) => DatabaseType::Sqlite,
            #[cfg(feature = "postgres")]
            ConnInner::Postgres(_) => DatabaseType::Postgres,
            #[cfg(feature = "turso")]
            ConnInner::Turso(_) => DatabaseType::Turso,
        }
    }

    /// Starts a query: add `.params(..)`, then run it with `.select()`, `.dml()`, `.one()`,
    /// `.optional()` or `.all()`.
    pub fn query<'c, 'q>(&'c mut self, sql: &'q str) -> QueryBuilder<'c, 'q> {
        QueryBuilder::new(self, sql)
    }

    /// Prepares `sql` once; run it many times with [`PreparedStatement::query`] and friends.
    pub async fn prepare(&mut self, sql: &str) -> Result<PreparedStatement<'_>> {
        let mode = self.translation;
        let handle = self.prepare_handle(sql, mode).await?;
        Ok(PreparedStatement::new(self, handle))
    }

    /// Runs a script of `;`-separated statements without parameters.
    ///
    /// Outside a transaction the script is atomic on every backend: it applies entirely or not at
    /// all. A script that contains its own `BEGIN`/`COMMIT` runs as written, under its own control.
    pub async fn execute_batch(&mut self, sql: &str) -> Result<()> {
        self.enter().await?;
        let in_tx = self.tx != TxFlag::None;
        if in_tx && crate::batch::ends_or_starts_transaction(sql) {
            return self.note(Err(tx_control_in_tx()));
        }
        let r = on_conn!(&mut self.inner, c => c.execute_batch(sql, in_tx).await);
        self.note(r)
    }

    /// Begins a transaction (`BEGIN IMMEDIATE` on SQLite and Turso, so write-lock contention
    /// surfaces at once as a wait bounded by the busy timeout). Commit it with [`Tx::commit`];
    /// dropping it without commit rolls it back.
    pub async fn begin(&mut self) -> Result<Tx<'_>> {
        if self.tx != TxFlag::None {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::TransactionState,
                "a transaction is already open on this connection",
            ));
        }
        self.enter().await?;
        let r = on_conn!(&mut self.inner, c => c.begin().await);
        self.note(r)?;
        self.tx = TxFlag::Active;
        Ok(Tx::new(self))
    }

    /// Runs `f` with the raw rusqlite connection, on tokio's blocking pool (or inline under
    /// [`crate::SqliteExecModel::Inline`]). Fails with [`ErrorKind::Unsupported`] on other backends.
    #[cfg(feature = "sqlite")]
    pub async fn with_blocking_sqlite<R, F>(&mut self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut rusqlite::Connection) -> rusqlite::Result<R> + Send + 'static,
    {
        self.enter().await?;
        let ty = self.database_type();
        let r = match &mut self.inner {
            ConnInner::Sqlite(c) => c.with_raw(f).await,
            #[allow(unreachable_patterns)]
            _ => Err(wrong_backend("with_blocking_sqlite", ty)),
        };
        self.note(r)
    }

    /// The raw tokio-postgres client of this connection. Fails with [`ErrorKind::Unsupported`] on
    /// other backends. Statements run through it are outside the middleware's bookkeeping: leave
    /// the connection outside any transaction you open with it.
    #[cfg(feature = "postgres")]
    pub fn postgres_client(&mut self) -> Result<&tokio_postgres::Client> {
        let ty = self.database_type();
        match &mut self.inner {
            ConnInner::Postgres(c) => c.raw_client(),
            #[allow(unreachable_patterns)]
            _ => Err(wrong_backend("postgres_client", ty)),
        }
    }

    /// The raw Turso connection. Fails with [`ErrorKind::Unsupported`] on other backends.
    #[cfg(feature = "turso")]
    pub fn turso_connection(&mut self) -> Result<&turso::Connection> {
        let ty = self.database_type();
        match &mut self.inner {
            ConnInner::Turso(c) => c.raw_connection(),
            #[allow(unreachable_patterns)]
            _ => Err(wrong_backend("turso_connection", ty)),
        }
    }

    /// Runs one parameterised statement for each parameter set and returns the results in order.
    ///
    /// On Postgres the statements are pipelined on this connection (all sent before the first
    /// answer arrives), which turns N round trips into about one. On SQLite and Turso they run
    /// one after another. Inside a transaction they are part of it.
    pub async fn pipeline(
        &mut self,
        sql: &str,
        param_sets: &[&[RowValues]],
    ) -> Result<Vec<ResultSet>> {
        let mode = self.translation;
        let handle = self.prepare_handle(sql, mode).await?;
        self.enter().await?;
        let r = on_stmt!(&mut self.inner, &handle, |c, s| c
            .pipeline(s, param_sets)
            .await);
        self.note(r)
    }

    // ---- the internal operations every public type goes through ----

    /// Starts an operation: repairs what a cancelled earlier operation left behind, refuses work
    /// in an aborted transaction, and marks the operation as pending until [`Self::note`].
    ///
    /// Every fourth operation first spends one unit of tokio's cooperative budget (a channel
    /// receive spends one per call). SQLite (inline) and Turso calls usually complete without
    /// ever returning `Pending`, so without this a task looping over them would keep its worker
    /// thread, and the timers and I/O of every other task on it, for as long as the loop runs.
    /// When the budget (128 units) is spent the task yields here, before anything has started:
    /// about every 512 operations. A yield costs a thread wake-up on a multi-thread runtime,
    /// which is why a short in-process call spends only a quarter unit.
    pub(crate) async fn enter(&mut self) -> Result<()> {
        self.calls = self.calls.wrapping_add(1);
        if self.calls.is_multiple_of(BUDGET_EVERY) {
            tokio::task::coop::consume_budget().await;
        }
        if self.pending {
            self.pending = false;
            match self.tx {
                // A statement of this transaction was cancelled mid-way: whether it ran is
                // unknown, so the transaction can only be rolled back.
                TxFlag::Active => self.tx = TxFlag::Aborted,
                TxFlag::Aborted => {}
                TxFlag::None => on_conn!(&mut self.inner, c => c.recover().await)?,
            }
        }
        if self.tx == TxFlag::Aborted {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::TransactionAborted,
                "an earlier statement of this transaction failed or was cancelled; roll it back (or drop it) and start again",
            ));
        }
        self.pending = true;
        Ok(())
    }

    /// Ends an operation started by [`Self::enter`]; a failure aborts the open transaction.
    pub(crate) fn note<T>(&mut self, r: Result<T>) -> Result<T> {
        self.pending = false;
        if r.is_err() && self.tx == TxFlag::Active {
            self.tx = TxFlag::Aborted;
        }
        r
    }

    pub(crate) async fn prepare_handle(
        &mut self,
        sql: &str,
        mode: TranslationMode,
    ) -> Result<StmtHandle> {
        self.enter().await?;
        if crate::batch::is_blank(sql) {
            return self.note(Err(SqlMiddlewareDbError::blank_sql()));
        }
        if self.tx != TxFlag::None && crate::batch::ends_or_starts_transaction(sql) {
            return self.note(Err(tx_control_in_tx()));
        }
        let r = match &mut self.inner {
            #[cfg(feature = "sqlite")]
            ConnInner::Sqlite(c) => c.prepare(sql, mode).await.map(StmtHandle::Sqlite),
            #[cfg(feature = "postgres")]
            ConnInner::Postgres(c) => c.prepare(sql, mode).await.map(StmtHandle::Postgres),
            #[cfg(feature = "turso")]
            ConnInner::Turso(c) => c.prepare(sql, mode).await.map(StmtHandle::Turso),
        };
        self.note(r)
    }

    pub(crate) async fn run_select(
        &mut self,
        h: &StmtHandle,
        p: &[RowValues],
    ) -> Result<ResultSet> {
        self.enter().await?;
        let r = on_stmt!(&mut self.inner, h, |c, s| c.select(s, p).await);
        self.note(r)
    }

    pub(crate) async fn run_execute(&mut self, h: &StmtHandle, p: &[RowValues]) -> Result<usize> {
        self.enter().await?;
        let r = on_stmt!(&mut self.inner, h, |c, s| c.execute(s, p).await);
        self.note(r)
    }

    pub(crate) async fn run_first<T: FromRow + Send + 'static>(
        &mut self,
        h: &StmtHandle,
        p: &[RowValues],
    ) -> Result<Option<T>> {
        self.enter().await?;
        let r = on_stmt!(&mut self.inner, h, |c, s| c.fetch_first::<T>(s, p).await);
        self.note(r)
    }

    pub(crate) async fn run_all<T: FromRow + Send + 'static>(
        &mut self,
        h: &StmtHandle,
        p: &[RowValues],
    ) -> Result<Vec<T>> {
        self.enter().await?;
        let r = on_stmt!(&mut self.inner, h, |c, s| c.fetch_all::<T>(s, p).await);
        self.note(r)
    }

    pub(crate) async fn tx_commit(&mut self) -> Result<()> {
        if self.pending {
            // A statement of this transaction was cancelled mid-way.
            self.pending = false;
            self.tx = TxFlag::Aborted;
        }
        if self.tx == TxFlag::Aborted {
            let _ = on_conn!(&mut self.inner, c => c.rollback().await);
            self.tx = TxFlag::None;
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::TransactionAborted,
                "the transaction was rolled back because an earlier statement in it failed; nothing was committed",
            ));
        }
        self.pending = true;
        let r = on_conn!(&mut self.inner, c => c.commit().await);
        self.pending = false;
        self.tx = TxFlag::None;
        r
    }

    pub(crate) async fn tx_rollback(&mut self) -> Result<()> {
        self.pending = true;
        let r = on_conn!(&mut self.inner, c => c.rollback().await);
        self.pending = false;
        self.tx = TxFlag::None;
        r
    }

    /// A transaction was dropped without commit or rollback (also when its `commit` or
    /// `rollback` future was dropped mid-way): the backend rolls it back or marks the connection.
    pub(crate) fn tx_abandon(&mut self) {
        on_conn!(&mut self.inner, c => c.abandon_tx());
        self.tx = TxFlag::None;
        self.pending = false;
    }
}

/// A connection goes back to the pool outside any transaction: SQLite and Turso roll back what a
/// raw `BEGIN` (or a cancelled call) left open, here, in process, so an idle pooled connection
/// never holds the write lock; Postgres connections clean themselves on drop (a spawned
/// `ROLLBACK`, or the connection is detached). Recycling checks the engine's state again.
impl Drop for MiddlewarePoolConnection {
    fn drop(&mut self) {
        on_conn!(&mut self.inner, c => c.on_return());
    }
}

fn tx_control_in_tx() -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::TransactionState,
        "this SQL begins or ends a transaction inside a Tx; use Tx::commit / Tx::rollback (savepoints are fine)",
    )
}

fn wrong_backend(what: &str, actual: DatabaseType) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::Unsupported,
        format!("{what} is not available on a {actual:?} connection"),
    )
}
