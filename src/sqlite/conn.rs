//! The SQLite connection: its state, its constructor, raw access, and the [`Wing`] contract on
//! rusqlite, which runs statements through `exec.rs`, transactions through `tx.rs` and
//! recovery through `recover.rs`. Every backend folder has a `conn.rs` with the same operations.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::Connection;

use super::busy::install_busy_handler;
use super::config::SqliteOptions;
use super::error::map_err;
use super::exec::{run_all, run_dml, run_optional, run_select};
use super::offload::{ProgressState, broken};
use super::session::{Fresh, SessionCell};
use super::stmt::SqliteStmt;
use crate::contract::Wing;
use crate::deadline::At;
use crate::decode::FromRow;
use crate::error::Result;
use crate::results::ResultSet;
use crate::sql::ident::BulkTarget;
use crate::sqlite_family::session::Effects;
use crate::stmt_cache::StmtCache;
use crate::translation::TranslationMode;
use crate::value::RowValues;

/// One pooled SQLite connection with its per-connection state.
pub(crate) struct SqliteConn {
    /// `None` only while the connection is away on the blocking pool, or lost with it.
    pub(super) conn: Option<Connection>,
    pub(super) interrupt: Arc<rusqlite::InterruptHandle>,
    pub(super) progress: Arc<ProgressState>,
    pub(super) opts: Arc<SqliteOptions>,
    pub(super) broken: bool,
    pub(super) stmts: StmtCache<SqliteStmt>,
    pub(super) simple_slow: Arc<[AtomicBool; 3]>,
    /// Every commit on this connection waits for an fsync (see `open::commits_sync`).
    pub(super) syncing_commits: bool,
    /// `PRAGMA synchronous` as the connection opened with it.
    pub(super) sync_level: i64,
    /// What this checkout changed in the session (besides what `cell` holds); the pool
    /// restores or discards on recycle.
    pub(super) session: Effects,
    /// What the connection's authorizer saw since it was last taken.
    pub(super) cell: Arc<SessionCell>,
    /// The pool's freshly configured connection, which recycling puts this one back to.
    pub(super) fresh: Arc<Fresh>,
    /// When the connection last went back to the pool.
    returned_at: Option<std::time::Instant>,
    /// The time limit of the call running now, for lock waits.
    pub(super) stop_at: Option<std::time::Instant>,
    /// A dropped stream's worker, told to stop, sends the connection back here (see
    /// `stream.rs`); taken back before the next operation, never waited for on drop.
    pub(super) returning: Option<super::stream::Returning>,
    /// A transaction was abandoned while the connection was away with such a worker: rolled
    /// back as it comes back.
    pub(super) abandoned: bool,
    /// How this connection ran its calls (inline, offloaded, re-run), cumulative.
    pub(super) exec: crate::stats::ExecStats,
    /// What this connection has added to the pool's statistics.
    flushed: crate::stats::Flushed,
}

impl std::fmt::Debug for SqliteConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteConn")
            .field("present", &self.conn.is_some())
            .field("broken", &self.broken)
            .finish()
    }
}

impl SqliteConn {
    pub(super) fn new(
        conn: Connection,
        progress: Arc<ProgressState>,
        opts: Arc<SqliteOptions>,
        (syncing_commits, sync_level): (bool, i64),
        (cell, fresh): (Arc<SessionCell>, Arc<Fresh>),
    ) -> Self {
        let interrupt = Arc::new(conn.get_interrupt_handle());
        Self {
            conn: Some(conn),
            interrupt,
            progress,
            opts,
            broken: false,
            stmts: StmtCache::new(),
            simple_slow: Arc::new(Default::default()),
            syncing_commits,
            sync_level,
            session: Effects::NONE,
            cell,
            fresh,
            returned_at: None,
            stop_at: None,
            returning: None,
            abandoned: false,
            exec: Default::default(),
            flushed: Default::default(),
        }
    }

    /// Notes a change to the session made on this checkout.
    #[inline]
    pub(super) fn note_session(&mut self, e: Effects) {
        self.session = self.session.with(e);
    }

    pub(super) fn conn_mut(&mut self) -> Result<&mut Connection> {
        if self.broken {
            return Err(broken());
        }
        self.conn.as_mut().ok_or_else(broken)
    }

    /// Raw access to the rusqlite connection, run like a script: on the blocking pool unless the
    /// model is inline. rusqlite work blocks, so this is how the hall's `with_blocking_sqlite`
    /// reaches the engine. It starts as raw access does on every wing, with [`Wing::raw`]: the
    /// connection must be usable.
    pub(crate) async fn with_raw<R, F>(&mut self, f: F, at: At) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<R> + Send + 'static,
    {
        self.raw().await?;
        let progress = Arc::clone(&self.progress);
        self.dispatch_blocking(at, move |c| {
            let was_autocommit = c.is_autocommit();
            let r = f(c).map_err(map_err);
            // Like a failed script: a failed closure must not leave its own transaction open.
            if r.is_err() && was_autocommit && !c.is_autocommit() {
                let _ = c.execute_batch("ROLLBACK");
            }
            // The rest of this checkout relies on the pool's busy and progress handlers
            // (lock waits off the async threads, time limits); the rest is settled when the
            // connection goes back.
            install_busy_handler(c)?;
            progress.reinstall(c)?;
            r
        })
        .await
    }
}

impl Wing for SqliteConn {
    type Stmt = SqliteStmt;
    type Raw = Connection;

    /// Prepares (or finds in this connection's cache) the statement for `sql`.
    async fn prepare(
        &mut self,
        sql: &str,
        mode: TranslationMode,
        at: At,
    ) -> Result<Arc<SqliteStmt>> {
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        if let Some(s) = self.cached(sql, mode) {
            return Ok(s);
        }
        // Not cached, or described before the schema changed: prepared (again) now.
        self.stmts.count(false);
        self.prepare_new(sql, mode, at).await
    }

    /// The statement from this connection's cache, unless a stream is still open (`prepare`
    /// settles it first) or the schema changed under it. A hit is counted here; `prepare`
    /// counts the rest.
    #[inline]
    fn cached(&mut self, sql: &str, mode: TranslationMode) -> Option<Arc<SqliteStmt>> {
        if self.returning.is_some() {
            return None;
        }
        let s = self
            .stmts
            .find(sql, mode)
            .filter(|s| !s.stale.load(Ordering::Relaxed))?;
        let s = Arc::clone(s);
        self.stmts.count(true);
        self.note_session(s.session);
        Some(s)
    }

    // The four statement runners return the future of `run` itself, with no future of their
    // own around it: one state machine fewer to poll on every call.
    fn select(
        &mut self,
        s: &Arc<SqliteStmt>,
        p: &[RowValues],
        at: At,
    ) -> impl Future<Output = Result<ResultSet>> {
        self.run(s, p, at, run_select)
    }

    fn dml(
        &mut self,
        s: &Arc<SqliteStmt>,
        p: &[RowValues],
        at: At,
    ) -> impl Future<Output = Result<u64>> {
        self.run(s, p, at, run_dml)
    }

    fn optional<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<SqliteStmt>,
        p: &[RowValues],
        at: At,
    ) -> impl Future<Output = Result<Option<T>>> {
        self.run(s, p, at, run_optional::<T>)
    }

    fn all<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<SqliteStmt>,
        p: &[RowValues],
        at: At,
    ) -> impl Future<Output = Result<Vec<T>>> {
        self.run(s, p, at, run_all::<T>)
    }

    type Cursor<T: FromRow + Send + 'static> = super::stream::SqliteCursor<T>;

    /// The statement runs on a worker that hands over bounded batches (see `stream.rs`).
    async fn stream_open<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<SqliteStmt>,
        p: Vec<RowValues>,
        at: At,
    ) -> Result<Self::Cursor<T>> {
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        self.open_stream(s, p, at)
    }

    async fn stream_next<T: FromRow + Send + 'static>(
        &mut self,
        c: &mut Self::Cursor<T>,
        out: &mut std::collections::VecDeque<T>,
    ) -> Result<bool> {
        self.next_batch(c, out).await
    }

    fn stream_close<T: FromRow + Send + 'static>(
        &mut self,
        c: Self::Cursor<T>,
        finished: bool,
    ) -> bool {
        self.close_stream(c, finished)
    }

    /// Runs a script. Outside a transaction, and when the script has no transaction control of
    /// its own, it runs inside one `BEGIN IMMEDIATE … COMMIT`, so it applies entirely or not at all.
    async fn execute_batch(&mut self, sql: &str, in_tx: bool, at: At) -> Result<()> {
        self.execute_script(sql, in_tx, at).await
    }

    /// Under the adaptive model these run on the task: inside the transaction, which already
    /// holds the write lock, they wait for nothing.
    async fn savepoint_stmt(&mut self, sql: &str) -> Result<()> {
        self.savepoint_script(sql).await
    }

    async fn bulk_insert<I, R>(
        &mut self,
        target: &BulkTarget,
        rows: I,
        in_tx: bool,
        at: At,
    ) -> Result<u64>
    where
        I: Iterator<Item = R> + Send,
        R: AsRef<[RowValues]> + Send + Sync,
    {
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        self.bulk_load(target, rows, in_tx, at).await
    }

    /// `BEGIN`, `COMMIT` and `ROLLBACK` are never cut short: their limit is ignored.
    async fn begin(&mut self, _: At) -> Result<()> {
        self.begin_tx().await
    }

    /// A commit the engine refuses is rolled back (see `tx.rs`).
    async fn commit(&mut self, _: At) -> Result<()> {
        self.commit_tx().await
    }

    async fn rollback(&mut self, _: At) -> Result<()> {
        self.rollback_tx().await
    }

    /// After a cancelled operation outside a transaction: nothing may stay open (see `recover.rs`).
    async fn recover(&mut self) -> Result<()> {
        self.recover_after_cancel().await
    }

    /// SQLite is back in autocommit mode while the hall holds a transaction open: the engine
    /// rolled the whole transaction back (a trigger's `RAISE(ROLLBACK)`, a full disk).
    fn tx_ended(&self) -> bool {
        self.conn.as_ref().is_some_and(|c| c.is_autocommit())
    }

    /// Rolled back off the calling thread (see `tx.rs`).
    fn abandon_tx(&mut self) {
        self.abandon();
    }

    /// The connection goes back to the pool: whatever transaction is still open (a raw
    /// `BEGIN`, or one left by a cancelled call) is rolled back off the calling thread, and the
    /// pool's recycle takes the connection back from that rollback.
    fn on_return(&mut self) {
        self.returned_at = self.opts.counters.returned_now();
        self.stream_returned();
        self.rollback_off_thread();
    }

    fn counted(&mut self) -> Option<(&mut crate::stats::Flushed, &crate::stats::Live)> {
        Some((&mut self.flushed, &self.opts.counters.live))
    }

    fn exec_stats(&self) -> crate::stats::ExecStats {
        self.exec
    }

    #[cfg(feature = "tracing")]
    fn connection_id(&self) -> u64 {
        self.flushed.id()
    }

    #[inline]
    fn dialect(&self) -> crate::sql::Dialect {
        super::DIALECT
    }

    fn cache_stats(&self) -> crate::StatementCacheStats {
        self.stmts.stats(self.opts.statement_cache_capacity)
    }

    /// Raw access may change anything: the pool checks and restores the session on recycle.
    async fn raw(&mut self) -> Result<&Connection> {
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        self.note_session(Effects(Effects::RAW));
        self.conn_mut().map(|c| &*c)
    }
}

impl crate::pooling::Pooled for SqliteConn {
    fn returned_at(&self) -> Option<std::time::Instant> {
        self.returned_at
    }
}
