//! SQLite connection operations: the [`Wing`] contract on rusqlite. Every backend folder has a
//! `conn.rs` with the same operations.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::Connection;

use super::busy::install_busy_handler;
use super::config::SqliteOptions;
use super::error::map_err;
use super::offload::{ProgressState, broken};
use super::params::bind_all;
use super::rows::{SqliteRow, collect};
use super::session::{Fresh, SessionCell, install_authorizer};
use super::stmt::SqliteStmt;
use crate::contract::Wing;
use crate::deadline::At;
use crate::decode::FromRow;
use crate::error::{Result, SqlMiddlewareDbError};
use crate::results::ResultSet;
use crate::sql::ident::BulkTarget;
use crate::sqlite_family::columns::Described;
use crate::sqlite_family::session::Effects;
use crate::stmt_cache::StmtCache;
use crate::translation::{TranslationMode, translate_placeholders};
use crate::value::RowValues;

/// One pooled SQLite connection with its per-connection state.
pub(crate) struct SqliteConn {
    /// `None` only while the connection is away on the blocking pool, or lost with it.
    pub(super) conn: Option<Connection>,
    pub(super) interrupt: Arc<rusqlite::InterruptHandle>,
    pub(super) progress: Arc<ProgressState>,
    pub(super) opts: Arc<SqliteOptions>,
    pub(super) broken: bool,
    stmts: StmtCache<SqliteStmt>,
    simple_slow: Arc<[AtomicBool; 3]>,
    /// Every commit on this connection waits for an fsync (see `config::commits_sync`).
    syncing_commits: bool,
    /// `PRAGMA synchronous` as the connection opened with it.
    sync_level: i64,
    /// What this checkout changed in the session (besides what `cell` holds); the pool
    /// restores or discards on recycle.
    session: Effects,
    /// What the connection's authorizer saw since it was last taken.
    pub(super) cell: Arc<SessionCell>,
    /// The pool's freshly configured connection, which recycling puts this one back to.
    fresh: Arc<Fresh>,
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

fn run_select(c: &mut Connection, s: &SqliteStmt, p: &[RowValues]) -> Result<ResultSet> {
    let mut st = c.prepare_cached(&s.sql).map_err(map_err)?;
    bind_all(&mut st, p)?;
    let mut rows = st.raw_query();
    let (mut rs, fresh) = collect(&mut rows, &s.desc, |st| s.columns_now(st))?;
    drop(rows);
    if rs.is_empty() && fresh.is_none() {
        if let Some(d) = s.columns_now(&st) {
            rs = ResultSet::with_capacity(Arc::clone(&d.columns), 0);
        }
    }
    drop(st);
    if s.dml {
        rs.rows_affected = c.changes();
    }
    Ok(rs)
}

fn run_dml(c: &mut Connection, s: &SqliteStmt, p: &[RowValues]) -> Result<u64> {
    let mut st = c.prepare_cached(&s.sql).map_err(map_err)?;
    bind_all(&mut st, p)?;
    if st.column_count() == 0 {
        st.raw_execute().map_err(map_err)?;
    } else {
        let mut rows = st.raw_query();
        while rows.next().map_err(map_err)?.is_some() {}
    }
    drop(st);
    // `changes()` still holds the previous statement's count after DDL: only DML reports one.
    Ok(if s.dml { c.changes() } else { 0 })
}

fn run_optional<T: FromRow>(
    c: &mut Connection,
    s: &SqliteStmt,
    p: &[RowValues],
) -> Result<Option<T>> {
    #[cfg(sqlmw_bench_slowdown)]
    super::slowdown::every_fifth_lookup(c, &s.sql, p)?;
    let mut st = c.prepare_cached(&s.sql).map_err(map_err)?;
    bind_all(&mut st, p)?;
    let mut rows = st.raw_query();
    match rows.next().map_err(map_err)? {
        Some(row) => {
            let fresh = s.columns_now(row.as_ref());
            T::from_row(&SqliteRow {
                row,
                desc: fresh.as_deref().unwrap_or(&s.desc),
            })
            .map(Some)
        }
        None => Ok(None),
    }
}

fn run_all<T: FromRow>(c: &mut Connection, s: &SqliteStmt, p: &[RowValues]) -> Result<Vec<T>> {
    let mut st = c.prepare_cached(&s.sql).map_err(map_err)?;
    bind_all(&mut st, p)?;
    let mut rows = st.raw_query();
    let mut out = Vec::new();
    let mut fresh: Option<Option<Arc<Described>>> = None;
    while let Some(row) = rows.next().map_err(map_err)? {
        let d = fresh.get_or_insert_with(|| s.columns_now(row.as_ref()));
        out.push(T::from_row(&SqliteRow {
            row,
            desc: d.as_deref().unwrap_or(&s.desc),
        })?);
    }
    Ok(out)
}

fn run_sql(c: &mut Connection, sql: &str) -> Result<()> {
    c.prepare_cached(sql)
        .and_then(|mut st| st.raw_execute())
        .map(drop)
        .map_err(map_err)
}

/// Runs a script; with `wrap`, each run of ordinary statements inside its own `BEGIN IMMEDIATE …
/// COMMIT`, and each statement that cannot work inside a transaction (`VACUUM`, `ATTACH`,
/// `PRAGMA foreign_keys = …`, see `sql::effects`) on its own between them.
/// `committed` is set once a segment has committed, so a later failure is known to leave the
/// script part-applied.
fn run_batch(c: &mut Connection, sql: &str, wrap: bool, committed: &AtomicBool) -> Result<()> {
    if !wrap {
        return run_script(c, sql, false);
    }
    for (part, alone) in crate::sql::segments(sql, crate::sqlite_family::DIALECT) {
        if !crate::sql::is_blank(part, crate::sqlite_family::DIALECT) {
            run_script(c, part, !alone)?;
            committed.store(true, Ordering::Relaxed);
        }
    }
    Ok(())
}

fn run_script(c: &mut Connection, sql: &str, wrap: bool) -> Result<()> {
    if !wrap {
        let was_autocommit = c.is_autocommit();
        return c.execute_batch(sql).map_err(map_err).inspect_err(|_| {
            // A failed script that opened its own transaction must not leave it open: later
            // autocommit statements would silently run inside it and be lost.
            if was_autocommit && !c.is_autocommit() {
                let _ = c.execute_batch("ROLLBACK");
            }
        });
    }
    run_sql(c, "BEGIN IMMEDIATE")?;
    match c.execute_batch(sql) {
        Ok(()) => run_sql(c, "COMMIT").inspect_err(|_| {
            if !c.is_autocommit() {
                let _ = c.execute_batch("ROLLBACK");
            }
        }),
        Err(e) => {
            if !c.is_autocommit() {
                let _ = c.execute_batch("ROLLBACK");
            }
            Err(map_err(e))
        }
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
    fn note_session(&mut self, e: Effects) {
        self.session = self.session.with(e);
    }

    /// Puts back the session of a fresh connection of the pool after this checkout changed it
    /// (`effects`); `Ok(false)` when that cannot be done exactly and the connection must go.
    ///
    /// - Pragma assignments the authorizer saw: each restorable one is assigned the fresh
    ///   value again, only if it differs (assigning a flag expires every prepared statement).
    /// - Temporary objects or attachments the authorizer saw: what no setting undoes must
    ///   equal the fresh connection's (a failed `CREATE TEMP …` or `ATTACH` leaves nothing,
    ///   and costs no connection).
    /// - After raw access, which may have done anything: the authorizer is checked (and
    ///   installed again if the closure replaced it, forgetting what was learnt without it;
    ///   every restorable pragma is then compared), the busy and progress handlers are
    ///   installed again, the connection flags and hooks are put back, and what no setting
    ///   undoes (temporary objects, attached databases, functions, collations, modules,
    ///   journal and locking modes) must equal the fresh connection's.
    fn restore_session(&mut self, effects: Effects) -> Result<bool> {
        let fresh = Arc::clone(&self.fresh);
        let (cell, level) = (Arc::clone(&self.cell), self.sync_level);
        let capacity = self.opts.statement_cache_capacity;
        let c = self.conn.as_mut().ok_or_else(broken)?;
        let mut pragmas: Vec<usize> = effects.pragmas().collect();
        if effects.has(Effects::RAW) {
            // Is the pool's authorizer still there? It reports any statement prepared.
            cell.take();
            drop(c.prepare("SELECT 1").map_err(map_err)?);
            // What raw SQL assigned is then already in `effects`. If the closure replaced it,
            // the wing knows nothing of what ran meanwhile: it installs it again, forgets what
            // its statement cache learnt without it, and compares every restorable pragma.
            if !cell.take().has(Effects::SEEN) {
                install_authorizer(c, &cell)?;
                self.stmts.clear();
                pragmas = (0..crate::sqlite_family::session::RESTORABLE.len()).collect();
            }
            install_busy_handler(c)?;
            self.progress.reinstall(c)?;
            fresh.restore_connection(c)?;
            c.set_prepared_statement_cache_capacity(capacity);
        } else if effects
            .pragmas()
            .any(|i| crate::sqlite_family::session::RESTORABLE[i] == "busy_timeout")
        {
            install_busy_handler(c)?;
        }
        fresh.restore_pragmas(c, pragmas.into_iter(), level)?;
        let clean = !effects.needs_state_check() || fresh.state_is_fresh(c)?;
        // What the restore itself ran is not a borrower's change.
        cell.take();
        Ok(clean)
    }

    pub(super) fn conn_mut(&mut self) -> Result<&mut Connection> {
        if self.broken {
            return Err(broken());
        }
        self.conn.as_mut().ok_or_else(broken)
    }

    async fn run<R, F>(&mut self, s: &Arc<SqliteStmt>, p: &[RowValues], at: At, op: F) -> Result<R>
    where
        R: Send + 'static,
        F: Fn(&mut Connection, &SqliteStmt, &[RowValues]) -> Result<R> + Copy + Send + 'static,
    {
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        let owned = Arc::clone(s);
        // A write in autocommit mode commits, and may wait for the disk.
        let syncs = self.syncing_commits && !s.readonly && self.conn_mut()?.is_autocommit();
        let before = self.exec;
        let r = self
            .dispatch(
                at,
                s.restartable,
                syncs,
                Some(&s.slow),
                |c| op(c, s, p),
                || {
                    let params = p.to_vec();
                    move |c: &mut Connection| op(c, &owned, &params)
                },
            )
            .await;
        super::offload::record_exec(before, self.exec);
        r
    }

    /// `BEGIN IMMEDIATE` (0), `COMMIT` (1) or `ROLLBACK` (2): each remembers, per connection,
    /// whether it ran past the inline budget (a `COMMIT` waiting for fsync does), and is then
    /// offloaded.
    pub(super) async fn simple(&mut self, sql: &'static str, slot: usize) -> Result<()> {
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        let slow = Arc::clone(&self.simple_slow);
        self.dispatch(
            None,
            false,
            slot == 1 && self.syncing_commits,
            Some(&slow[slot]),
            |c| run_sql(c, sql),
            || move |c: &mut Connection| run_sql(c, sql),
        )
        .await
    }

    pub(super) fn rollback_if_open(&mut self) {
        let Some(c) = self.conn.as_mut() else {
            return;
        };
        if !c.is_autocommit() && c.execute_batch("ROLLBACK").is_err() {
            self.broken = true;
        }
    }

    /// Rolls back an open transaction on tokio's blocking pool, never on the calling thread:
    /// a rollback rewrites the pages a large transaction spilled to the database file (in
    /// rollback-journal mode, milliseconds for a few megabytes), and `Drop` must not block. The
    /// connection comes back through `self.returning`, as from a dropped stream's worker, and
    /// is discarded if the rollback failed. Outside any runtime it rolls back here.
    fn rollback_off_thread(&mut self) {
        if self.conn.as_ref().is_none_or(|c| c.is_autocommit()) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            self.rollback_if_open();
            return;
        };
        let Some(conn) = self.conn.take() else {
            return;
        };
        let (back, returning) = tokio::sync::oneshot::channel();
        drop(handle.spawn_blocking(move || {
            let failed = !conn.is_autocommit() && conn.execute_batch("ROLLBACK").is_err();
            let _ = back.send((conn, failed));
        }));
        self.returning = Some(returning);
    }

    /// Recycle check: the connection must be present, not broken, and outside any transaction.
    pub(crate) fn make_clean(&mut self) -> Result<()> {
        self.stream_returned();
        self.rollback_if_open();
        if !self.conn_mut()?.is_autocommit() {
            return Err(broken());
        }
        // Settings are restored; attached databases and temporary objects cannot be, so a
        // connection that holds any is discarded (an in-memory database lives on in the pool's
        // keeper).
        let effects = std::mem::take(&mut self.session)
            .with(self.cell.take())
            .lasting();
        if effects == Effects::NONE {
            return Ok(());
        }
        let clean = !effects.discards()
            && self
                .restore_session(effects)
                .inspect_err(|_| self.broken = true)?;
        if !clean {
            self.broken = true;
            return Err(SqlMiddlewareDbError::new(
                crate::error::ErrorKind::ConnectionLost,
                "this SQLite connection holds session state a fresh one lacks (an attached database, temporary objects, or a setting the pool cannot put back); it is discarded",
            ));
        }
        Ok(())
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

crate::setup::setup_via_wing!(SqliteConn, SqliteConn::in_tx_now);

impl SqliteConn {
    /// Whether a transaction is open (after taking the connection back from a stream's worker).
    async fn in_tx_now(&mut self) -> Result<bool> {
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        Ok(!self.conn_mut()?.is_autocommit())
    }

    /// Runs the pool's `after_connect` hook on this new connection (see `setup.rs`). What the
    /// hook leaves is the session recycling puts the connection back to (this connection's own
    /// [`Fresh`]).
    pub(crate) async fn set_up(&mut self, hook: &crate::setup::AfterConnect) -> Result<()> {
        if !hook.set_up(self).await? {
            return Ok(());
        }
        let in_memory = self.opts.in_memory;
        let c = self.conn_mut()?;
        // The pool's own lock waiting (a `PRAGMA busy_timeout` replaces it), and the commit
        // policy and `synchronous` level of the session as the hook left it.
        install_busy_handler(c)?;
        let syncing_commits = !in_memory && super::config::commits_sync(c)?;
        let sync_level: i64 = c
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .map_err(map_err)?;
        let fresh = Arc::new(Fresh::read(c)?);
        (self.syncing_commits, self.sync_level, self.fresh) = (syncing_commits, sync_level, fresh);
        self.session = Effects::NONE;
        self.cell.take();
        Ok(())
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
        if let Some(s) = self
            .stmts
            .get(sql, mode)
            .filter(|s| !s.stale.load(Ordering::Relaxed))
        {
            let s = Arc::clone(s);
            self.note_session(s.session);
            return Ok(s);
        }
        crate::sql::reject_nul(sql)?;
        let translated: Box<str> = match mode {
            TranslationMode::On => translate_placeholders(sql, crate::sqlite_family::PLACEHOLDERS).into(),
            TranslationMode::Off => sql.into(),
        };
        let owned = translated.clone();
        let cell = Arc::clone(&self.cell);
        let moved = Arc::clone(&cell);
        let stmt = self
            .dispatch(
                at,
                true,
                false,
                None,
                |c| SqliteStmt::describe(c, translated, &cell),
                move || move |c: &mut Connection| SqliteStmt::describe(c, owned, &moved),
            )
            .await?;
        let stmt = Arc::new(stmt);
        self.note_session(stmt.session);
        self.stmts.insert(
            sql,
            mode,
            Arc::clone(&stmt),
            self.opts.statement_cache_capacity,
        );
        Ok(stmt)
    }

    async fn select(&mut self, s: &Arc<SqliteStmt>, p: &[RowValues], at: At) -> Result<ResultSet> {
        self.run(s, p, at, run_select).await
    }

    async fn dml(&mut self, s: &Arc<SqliteStmt>, p: &[RowValues], at: At) -> Result<u64> {
        self.run(s, p, at, run_dml).await
    }

    async fn optional<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<SqliteStmt>,
        p: &[RowValues],
        at: At,
    ) -> Result<Option<T>> {
        self.run(s, p, at, run_optional::<T>).await
    }

    async fn all<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<SqliteStmt>,
        p: &[RowValues],
        at: At,
    ) -> Result<Vec<T>> {
        self.run(s, p, at, run_all::<T>).await
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
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        crate::sql::reject_nul(sql)?;
        let autocommit = self.conn_mut()?.is_autocommit();
        let wrap = !in_tx
            && autocommit
            && !crate::sql::has_transaction_control(sql, crate::sqlite_family::DIALECT);
        // A script with transaction control of its own may commit part-way.
        let own_control = !in_tx && autocommit && !wrap;
        let committed = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&committed);
        let sql = sql.to_owned();
        let before = self.exec;
        let r = self
            .dispatch_blocking(at, move |c| run_batch(c, &sql, wrap, &flag))
            .await
            .map_err(|e| {
                // `Timeout` promises that nothing took effect: a script stopped after a part of
                // it committed says so instead.
                if e.kind() == crate::error::ErrorKind::Timeout
                    && (own_control || committed.load(Ordering::Relaxed))
                {
                    crate::deadline::partly_applied()
                } else {
                    e
                }
            });
        super::offload::record_exec(before, self.exec);
        // The authorizer saw each statement of the script as SQLite prepared it, the ones that
        // ran before a failure included.
        let seen = self.cell.take();
        if seen.has(Effects::SCHEMA) {
            // Describe statements again after DDL; SQLite re-prepares its own.
            self.stmts.clear();
        }
        self.note_session(seen.lasting());
        r
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
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        if !self.conn_mut()?.is_autocommit() {
            return Err(SqlMiddlewareDbError::new(
                crate::error::ErrorKind::TransactionState,
                "a transaction begun by raw SQL is still open on this connection; commit or roll it back first",
            ));
        }
        self.simple("BEGIN IMMEDIATE", 0).await
    }

    /// Commits; when the engine refuses (a deferred foreign key), the transaction is rolled back
    /// and the error returned, so the connection never stays inside it.
    async fn commit(&mut self, _: At) -> Result<()> {
        match self.simple("COMMIT", 1).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.rollback_if_open();
                Err(e)
            }
        }
    }

    async fn rollback(&mut self, _: At) -> Result<()> {
        self.settle_stream().await;
        if self.conn_mut()?.is_autocommit() {
            // The engine already rolled back (e.g. RAISE(ROLLBACK)); nothing left to undo.
            return Ok(());
        }
        self.simple("ROLLBACK", 2).await
    }

    /// After a cancelled operation outside a transaction: nothing may stay open.
    async fn recover(&mut self) -> Result<()> {
        self.settle_stream().await;
        self.rollback_if_open();
        Ok(())
    }

    /// SQLite is back in autocommit mode while the hall holds a transaction open: the engine
    /// rolled the whole transaction back (a trigger's `RAISE(ROLLBACK)`, a full disk).
    fn tx_ended(&self) -> bool {
        self.conn.as_ref().is_some_and(|c| c.is_autocommit())
    }

    /// A transaction was dropped without commit: it is rolled back off the calling thread (see
    /// [`Self::rollback_off_thread`]); the connection's next operation takes it back first.
    fn abandon_tx(&mut self) {
        self.stream_returned();
        if self.conn.is_none() {
            if self.returning.is_some() {
                // A dropped stream's worker still has it: rolled back when it comes back.
                self.abandoned = true;
            } else {
                self.broken = true;
            }
            return;
        }
        self.rollback_off_thread();
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
