//! The Turso connection: its state, its constructor, and the [`Wing`] contract on the `turso`
//! crate, which runs statements through `exec.rs`, transactions through `tx.rs` and recovery
//! (what it settles before each use, its recycle check) through `recover.rs`. Every backend
//! folder has a `conn.rs` with the same operations.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::config::TursoOptions;
use super::error::map_err;
use super::session::VERIFY;
use super::stmt::TursoStmt;
use crate::contract::Wing;
use crate::deadline::At;
use crate::decode::FromRow;
use crate::error::Result;
use crate::results::ResultSet;
use crate::sql::ident::BulkTarget;
use crate::stmt_cache::StmtCache;
use crate::translation::TranslationMode;
use crate::value::RowValues;

/// One pooled Turso connection with its statement cache and state.
pub(crate) struct TursoConn {
    pub(super) conn: turso::Connection,
    pub(super) opts: Arc<TursoOptions>,
    pub(super) stmts: StmtCache<TursoStmt>,
    /// A future was dropped while a statement ran: its statement state is unknown.
    pub(super) in_flight: bool,
    /// A transaction was dropped without commit: roll it back before the next statement.
    pub(super) needs_rollback: bool,
    /// A dropped transaction's `ROLLBACK` runs on the blocking pool; it signals here when done,
    /// and the connection's next use waits for it first.
    pub(super) rolling_back: Option<tokio::sync::oneshot::Receiver<()>>,
    /// The connection went back to the pool with a call abandoned mid-way: the pool discards
    /// it at the next checkout.
    pub(super) discard: bool,
    /// The raw connection was handed out: it may have changed the schema.
    pub(super) raw_used: bool,
    /// The pool's schema epoch this connection's cached statements were described at.
    epoch_seen: u64,
    /// Turso's own busy handler is on (the raw connection was handed out); the middleware's
    /// statements turn it off again and wait for locks themselves (see `busy.rs`).
    pub(super) native_busy: bool,
    /// The values of the row being decoded by `one`/`optional`/`all`, reused from call to call.
    pub(super) row_buf: Vec<RowValues>,
    /// What the pool must do with this checkout's session on recycle: check and restore it
    /// ([`VERIFY`]), or discard the connection ([`DISCARD`](super::session::DISCARD)); see
    /// `session.rs`.
    pub(super) session: u8,
    /// When the connection last went back to the pool.
    returned_at: Option<std::time::Instant>,
    /// The time limit of the operation running now.
    pub(super) stop_at: Option<std::time::Instant>,
    /// What this connection has added to the pool's statistics.
    flushed: crate::stats::Flushed,
    /// With an `after_connect` hook: the session the hook left (its settings, and how many
    /// temporary objects it made), which recycling puts the connection back to instead of the
    /// pool's first connection's.
    pub(super) fresh: Option<(super::session::Settings, i64)>,
}

impl TursoConn {
    pub(crate) fn new(conn: turso::Connection, opts: Arc<TursoOptions>) -> Self {
        let epoch_seen = opts.schema_epoch.load(Ordering::Acquire);
        Self {
            conn,
            opts,
            stmts: StmtCache::new(),
            in_flight: false,
            needs_rollback: false,
            rolling_back: None,
            discard: false,
            raw_used: false,
            epoch_seen,
            native_busy: false,
            row_buf: Vec::new(),
            session: 0,
            returned_at: None,
            stop_at: None,
            flushed: Default::default(),
            fresh: None,
        }
    }

    /// Marks this checkout's session for the pool's recycle check ([`VERIFY`],
    /// [`DISCARD`](super::session::DISCARD)).
    #[inline]
    pub(super) fn mark(&mut self, m: u8) {
        self.session |= m;
    }

    /// Turns Turso's own busy handler on (at the configured timeout) or off.
    pub(super) fn set_native_busy(&mut self, on: bool) -> Result<()> {
        let d = if on {
            self.opts.busy_timeout
        } else {
            std::time::Duration::ZERO
        };
        self.conn.busy_timeout(d).map_err(map_err)?;
        self.native_busy = on;
        Ok(())
    }

    /// The pool's schema epoch now.
    #[inline]
    pub(super) fn epoch(&self) -> u64 {
        self.opts.schema_epoch.load(Ordering::Acquire)
    }

    /// The schema changed through this connection: every connection of the pool describes its
    /// statements again.
    pub(super) fn schema_changed(&mut self) {
        self.epoch_seen = self.opts.schema_epoch.fetch_add(1, Ordering::AcqRel) + 1;
        self.forget_statements();
    }

    /// Resets and drops every cached statement: after a call was abandoned mid-way (their
    /// state is unknown), and after a schema change made through this connection (Turso
    /// statements keep the columns they were prepared with).
    pub(super) fn forget_statements(&mut self) {
        for s in self.stmts.values() {
            let _ = s.stmt.reset();
        }
        self.stmts.clear();
    }

    pub(super) fn autocommit(&self) -> Result<bool> {
        self.conn.is_autocommit().map_err(map_err)
    }
}

impl Wing for TursoConn {
    type Stmt = TursoStmt;
    type Raw = turso::Connection;

    /// The statement from this connection's cache, unless something is left to settle (a call
    /// abandoned mid-way, a transaction dropped without commit, raw access) or the schema
    /// changed through another connection of the pool: `prepare` does those first. A hit is
    /// counted and marks the session here, as `prepare` would; `prepare` counts the rest.
    #[inline]
    fn cached(&mut self, sql: &str, mode: TranslationMode) -> Option<Arc<TursoStmt>> {
        if self.unsettled() || self.epoch() != self.epoch_seen {
            return None;
        }
        let s = Arc::clone(self.stmts.find(sql, mode)?);
        self.stmts.count(true);
        self.mark(s.effects.session);
        Some(s)
    }

    async fn prepare(
        &mut self,
        sql: &str,
        mode: TranslationMode,
        at: At,
    ) -> Result<Arc<TursoStmt>> {
        self.start_limit(at)?;
        if self.unsettled() {
            self.settle().await?;
        }
        let epoch = self.epoch();
        if epoch != self.epoch_seen {
            // The schema changed through another connection of the pool.
            self.forget_statements();
            self.epoch_seen = epoch;
        }
        if let Some(s) = self.cached(sql, mode) {
            return Ok(s);
        }
        self.stmts.count(false);
        self.prepare_new(sql, mode, epoch).await
    }

    async fn select(&mut self, s: &Arc<TursoStmt>, p: &[RowValues], at: At) -> Result<ResultSet> {
        self.start_limit(at)?;
        self.select_inner(s, p).await
    }

    async fn dml(&mut self, s: &Arc<TursoStmt>, p: &[RowValues], at: At) -> Result<u64> {
        self.start_limit(at)?;
        if s.ddl {
            let n = self.dml_inner(s, p).await;
            self.schema_changed();
            return n;
        }
        self.dml_inner(s, p).await
    }

    async fn optional<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<TursoStmt>,
        p: &[RowValues],
        at: At,
    ) -> Result<Option<T>> {
        self.start_limit(at)?;
        self.optional_inner(s, p).await
    }

    async fn all<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<TursoStmt>,
        p: &[RowValues],
        at: At,
    ) -> Result<Vec<T>> {
        self.start_limit(at)?;
        self.all_inner(s, p).await
    }

    type Cursor<T: FromRow + Send + 'static> = super::stream::TursoCursor<T>;

    /// Steps the statement a bounded batch at a time, on the task (see `stream.rs`).
    async fn stream_open<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<TursoStmt>,
        p: Vec<RowValues>,
        at: At,
    ) -> Result<Self::Cursor<T>> {
        self.open_stream(s, p, at).await
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

    /// Runs a script; outside a transaction and without its own transaction control it runs
    /// inside `BEGIN IMMEDIATE … COMMIT`, so it applies entirely or not at all. A script of
    /// `PRAGMA`s only runs as it is (see `session::only_pragmas`).
    async fn execute_batch(&mut self, sql: &str, in_tx: bool, at: At) -> Result<()> {
        self.execute_script(sql, in_tx, at).await
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
        self.bulk_load(target, rows, in_tx, at).await
    }

    async fn begin(&mut self, at: At) -> Result<()> {
        self.begin_tx(at).await
    }

    /// After a cancelled operation outside a transaction: forget statements left mid-way and
    /// roll back whatever is open (see `recover.rs`).
    async fn recover(&mut self) -> Result<()> {
        self.recover_after_cancel().await
    }

    /// A commit the engine refuses is rolled back (see `tx.rs`).
    async fn commit(&mut self, at: At) -> Result<()> {
        self.commit_tx(at).await
    }

    async fn rollback(&mut self, at: At) -> Result<()> {
        self.rollback_tx(at).await
    }

    /// Turso is back in autocommit mode while the hall holds a transaction open: the engine
    /// ended the transaction by itself.
    fn tx_ended(&self) -> bool {
        self.rolling_back.is_none() && self.autocommit().unwrap_or(false)
    }

    /// Rolled back at once, off the calling thread (see `tx.rs`).
    fn abandon_tx(&mut self) {
        self.abandon();
    }

    /// The connection goes back to the pool. An open transaction (a raw `BEGIN`, or one left
    /// by a cancelled call) is rolled back at once off the calling thread (see
    /// [`Self::rollback_in_background`]), so an idle pooled connection never holds the write
    /// lock and `Drop` never blocks or drives a future itself; the pool's recycle waits for
    /// that rollback and keeps the connection. One with a call abandoned mid-way is marked for
    /// the pool to discard.
    fn on_return(&mut self) {
        self.returned_at = self.opts.counters.returned_now();
        if self.rolling_back.is_none()
            && (self.needs_rollback || !self.autocommit().unwrap_or(false))
        {
            self.rollback_in_background();
        }
        if self.in_flight {
            self.discard = true;
        }
    }

    fn counted(&mut self) -> Option<(&mut crate::stats::Flushed, &crate::stats::Live)> {
        Some((&mut self.flushed, &self.opts.counters.live))
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

    /// The raw connection runs with Turso's own busy handler at the configured timeout; the
    /// middleware's next statement turns it off again.
    async fn raw(&mut self) -> Result<&turso::Connection> {
        // A transaction dropped without commit is rolled back first: raw statements must not
        // run inside it (Turso would roll it back only at the next statement, losing theirs).
        if self.unsettled() {
            self.settle().await?;
        }
        // Raw SQL may change the schema: every connection describes its statements again,
        // now and after this connection's next statement. It may change the session too: the
        // pool checks it on recycle (see `session.rs`).
        self.raw_used = true;
        self.mark(VERIFY);
        self.schema_changed();
        if !self.native_busy {
            self.set_native_busy(true)?;
        }
        Ok(&self.conn)
    }
}

impl crate::pooling::Pooled for TursoConn {
    fn returned_at(&self) -> Option<std::time::Instant> {
        self.returned_at
    }
}
