//! Turso connection operations: the [`Wing`] contract on the `turso` crate. Every backend folder
//! has a `conn.rs` with the same operations.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::busy::BusyWait;
use super::config::TursoOptions;
use super::error::map_err;
use super::params::to_values;
use super::rows::{TursoRow, describe, fill_row_values, row_values};
use super::session::{DISCARD, VERIFY};
use super::stmt::TursoStmt;
use crate::contract::Wing;
use crate::deadline::At;
use crate::decode::FromRow;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::ResultSet;
use crate::sql::ident::BulkTarget;
use crate::sqlite_family::columns::Described;
use crate::sqlite_family::sql::sqlite_param_count;
use crate::stmt_cache::StmtCache;
use crate::translation::{TranslationMode, translate_placeholders};
use crate::value::RowValues;

/// Runs `$op` (one statement that resets itself before it runs), and again after a sleep on
/// the runtime's timer each time it fails with `Busy`, until the busy timeout has passed (see
/// `busy.rs`). A statement that failed with `Busy` changed nothing.
macro_rules! waiting {
    ($conn:ident, $op:expr) => {{
        if $conn.unsettled() {
            $conn.settle().await?;
        }
        if $conn.native_busy {
            $conn.set_native_busy(false)?;
        }
        let mut wait: Option<BusyWait> = None;
        loop {
            match $op {
                Err(e) if e.kind() == ErrorKind::Busy => {
                    let w = wait.get_or_insert_with(|| BusyWait::new($conn.busy_allowance()));
                    if !w.pause().await {
                        break Err(match $conn.stop_at {
                            Some(at) if crate::deadline::passed(at) => crate::deadline::error(),
                            _ => e,
                        });
                    }
                }
                r => break r,
            }
        }
    }};
}

/// One pooled Turso connection with its statement cache and state.
pub(crate) struct TursoConn {
    pub(super) conn: turso::Connection,
    pub(super) opts: Arc<TursoOptions>,
    stmts: StmtCache<TursoStmt>,
    /// A future was dropped while a statement ran: its statement state is unknown.
    pub(super) in_flight: bool,
    /// A transaction was dropped without commit: roll it back before the next statement.
    needs_rollback: bool,
    /// A dropped transaction's `ROLLBACK` runs on the blocking pool; it signals here when done,
    /// and the connection's next use waits for it first.
    rolling_back: Option<tokio::sync::oneshot::Receiver<()>>,
    /// The connection went back to the pool with a call abandoned mid-way: the pool discards
    /// it at the next checkout.
    discard: bool,
    /// The raw connection was handed out: it may have changed the schema.
    raw_used: bool,
    /// The pool's schema epoch this connection's cached statements were described at.
    epoch_seen: u64,
    /// Turso's own busy handler is on (the raw connection was handed out); the middleware's
    /// statements turn it off again and wait for locks themselves (see `busy.rs`).
    pub(super) native_busy: bool,
    /// The values of the row being decoded by `one`/`optional`/`all`, reused from call to call.
    pub(super) row_buf: Vec<RowValues>,
    /// What the pool must do with this checkout's session on recycle: check and restore it
    /// ([`VERIFY`]), or discard the connection ([`DISCARD`]); see `session.rs`.
    session: u8,
    /// When the connection last went back to the pool.
    returned_at: Option<std::time::Instant>,
    /// The time limit of the operation running now.
    stop_at: Option<std::time::Instant>,
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

    /// Runs the pool's `after_connect` hook on this new connection (see `setup.rs`). What the
    /// hook leaves is the session recycling puts the connection back to.
    pub(crate) async fn set_up(&mut self, hook: &crate::setup::AfterConnect) -> Result<()> {
        if hook.set_up(self).await? {
            self.fresh = Some(super::session::read_fresh(&self.conn).await?);
            self.session = 0;
        }
        Ok(())
    }

    /// Whether a transaction is open.
    async fn in_tx_now(&mut self) -> Result<bool> {
        Ok(!self.autocommit()?)
    }

    /// Starts a limited operation: keeps its time limit `at` while it runs, and fails at once
    /// when it has already passed.
    #[inline]
    pub(super) fn start_limit(&mut self, at: At) -> Result<()> {
        self.stop_at = at;
        crate::deadline::check(self.stop_at)
    }

    /// How long a lock wait may last: the busy timeout, cut to what is left of the limit.
    /// Whether the limit of the operation running now has passed.
    pub(super) fn stop_at_passed(&self) -> bool {
        self.stop_at.is_some_and(crate::deadline::passed)
    }

    pub(super) fn busy_allowance(&self) -> std::time::Duration {
        match self.stop_at {
            Some(at) => self
                .opts
                .busy_timeout
                .min(at.saturating_duration_since(std::time::Instant::now())),
            None => self.opts.busy_timeout,
        }
    }

    /// Whether a read must stop before its next row: Turso cannot interrupt a step, so a limit
    /// is kept between rows (and between the statements of a script). A write is never cut
    /// short part-way: its rows are all produced, so it either applies whole or fails.
    #[inline]
    pub(super) fn must_stop(&self, s: &TursoStmt) -> bool {
        !s.effects.writes && self.stop_at.is_some_and(crate::deadline::passed)
    }

    /// Marks this checkout's session for the pool's recycle check ([`VERIFY`], [`DISCARD`]).
    #[inline]
    fn mark(&mut self, m: u8) {
        self.session |= m;
    }

    /// Ends a call whose statement ran (`in_flight` was set before it started): an ordinary
    /// error (a constraint, a type, a lock, in any phase) leaves the statement reset and the
    /// connection in service; only an I/O error or corruption leaves it marked, to be replaced.
    /// A call whose future is dropped never gets here, and stays marked.
    #[inline]
    pub(super) fn finish<R>(&mut self, st: &turso::Statement, r: Result<R>) -> Result<R> {
        if let Err(e) = &r {
            if matches!(e.driver_code(), Some("IoError" | "Corrupt")) {
                return r;
            }
            if st.reset().is_err() {
                self.forget_statements();
            }
        }
        self.in_flight = false;
        r
    }

    /// Rolls the open transaction back off the calling thread: a `ROLLBACK` in Turso discards
    /// the transaction's pages in process, which takes milliseconds for a large one, so it runs
    /// through a clone of the connection on the blocking pool (outside any runtime, on a
    /// short-lived thread), never in `Drop`. The connection's next use waits for it
    /// ([`Self::settle`]) and rolls back itself if the background one could not run.
    fn rollback_in_background(&mut self) {
        self.needs_rollback = true;
        let conn = self.conn.clone();
        let (done, rolled_back) = tokio::sync::oneshot::channel();
        let work = move || {
            let _ = futures_executor::block_on(conn.execute("ROLLBACK", ()));
            let _ = done.send(());
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(work)),
            Err(_) => {
                // If no thread can be started, `done` is dropped with the closure and the next
                // use rolls back itself.
                let _ = std::thread::Builder::new()
                    .name("sqlmw-turso-rollback".into())
                    .spawn(work);
            }
        }
        self.rolling_back = Some(rolled_back);
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

    /// Whether an abandoned call or a dropped transaction left work for [`Self::settle`].
    #[inline]
    pub(super) fn unsettled(&self) -> bool {
        self.in_flight || self.needs_rollback || self.raw_used || self.rolling_back.is_some()
    }

    /// The pool's schema epoch now.
    #[inline]
    fn epoch(&self) -> u64 {
        self.opts.schema_epoch.load(Ordering::Acquire)
    }

    /// The schema changed through this connection: every connection of the pool describes its
    /// statements again.
    fn schema_changed(&mut self) {
        self.epoch_seen = self.opts.schema_epoch.fetch_add(1, Ordering::AcqRel) + 1;
        self.forget_statements();
    }

    /// The columns to read `s`'s rows with: its own, unless the schema changed since it was
    /// prepared (a statement held across a change), then the statement's columns now.
    pub(super) fn desc_now(&self, s: &TursoStmt, st: &turso::Statement) -> Option<Arc<Described>> {
        (s.epoch != self.epoch()).then(|| Arc::new(describe(st)))
    }

    /// Before the next statement: forget cached statements an abandoned call left mid-way (their
    /// state is unknown), and roll back a transaction that was dropped without commit. Turso
    /// itself would roll such a transaction back only lazily, after a write through a cached
    /// statement could already have been acknowledged inside it.
    pub(super) async fn settle(&mut self) -> Result<()> {
        if let Some(rolled_back) = self.rolling_back.as_mut() {
            // Awaited in place (cancel-safe): dropped meanwhile, the next use waits again.
            let _ = rolled_back.await;
            self.rolling_back = None;
        }
        if self.in_flight {
            self.forget_statements();
            self.in_flight = false;
        }
        if self.needs_rollback {
            if !self.autocommit()? {
                self.conn.execute("ROLLBACK", ()).await.map_err(map_err)?;
            }
            self.needs_rollback = false;
        }
        if self.raw_used {
            self.raw_used = false;
            self.schema_changed();
        }
        Ok(())
    }

    async fn select_once(&mut self, s: &Arc<TursoStmt>, p: &[RowValues]) -> Result<ResultSet> {
        let values = to_values(p)?;
        self.in_flight = true;
        let mut st = s.stmt.clone();
        let r = self.select_rows(s, &mut st, values).await;
        self.finish(&st, r)
    }

    async fn select_rows(
        &mut self,
        s: &Arc<TursoStmt>,
        st: &mut turso::Statement,
        values: Vec<turso::Value>,
    ) -> Result<ResultSet> {
        let mut rows = st.query(values).await.map_err(map_err)?;
        let first = rows.next().await.map_err(map_err)?;
        let fresh = self.desc_now(s, st);
        let desc = fresh.as_ref().unwrap_or(&s.desc);
        let mut rs = ResultSet::with_capacity(Arc::clone(&desc.columns), 1);
        if let Some(row) = first {
            rs.push_values(row_values(&row, desc)?);
            loop {
                if self.must_stop(s) {
                    drop(rows);
                    return self.stopped(st);
                }
                let Some(row) = rows.next().await.map_err(map_err)? else {
                    break;
                };
                rs.push_values(row_values(&row, desc)?);
            }
        }
        drop(rows);
        if s.dml {
            rs.rows_affected = st.n_change();
        }
        Ok(rs)
    }

    /// Ends a read stopped at its time limit: its statement is reset (so the cached statement
    /// is ready for the next call) and the call fails with `Timeout`.
    fn stopped<R>(&mut self, st: &turso::Statement) -> Result<R> {
        let _ = st.reset();
        self.in_flight = false;
        Err(crate::deadline::error())
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

    async fn dml_inner(&mut self, s: &Arc<TursoStmt>, p: &[RowValues]) -> Result<u64> {
        s.check(p)?;
        waiting!(self, self.dml_once(s, p).await)
    }

    async fn dml_once(&mut self, s: &Arc<TursoStmt>, p: &[RowValues]) -> Result<u64> {
        let values = to_values(p)?;
        self.in_flight = true;
        let mut st = s.stmt.clone();
        let r = Self::dml_rows(s, &mut st, values).await;
        self.finish(&st, r)
    }

    async fn dml_rows(
        s: &TursoStmt,
        st: &mut turso::Statement,
        values: Vec<turso::Value>,
    ) -> Result<u64> {
        let n = if s.desc.len() == 0 {
            st.execute(values).await.map_err(map_err)?
        } else {
            let mut rows = st.query(values).await.map_err(map_err)?;
            while rows.next().await.map_err(map_err)?.is_some() {}
            drop(rows);
            st.n_change()
        };
        Ok(if s.dml { n } else { 0 })
    }

    async fn optional_once<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<TursoStmt>,
        p: &[RowValues],
    ) -> Result<Option<T>> {
        let values = to_values(p)?;
        self.in_flight = true;
        let mut st = s.stmt.clone();
        let r = self.optional_rows(s, &mut st, values).await;
        self.row_buf.clear();
        self.finish(&st, r)
    }

    async fn optional_rows<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<TursoStmt>,
        st: &mut turso::Statement,
        values: Vec<turso::Value>,
    ) -> Result<Option<T>> {
        let mut rows = st.query(values).await.map_err(map_err)?;
        let first = rows.next().await.map_err(map_err)?;
        // Run the statement to completion, as Turso requires before reuse.
        loop {
            if self.must_stop(s) {
                drop(rows);
                return self.stopped(st);
            }
            if rows.next().await.map_err(map_err)?.is_none() {
                break;
            }
        }
        drop(rows);
        let Some(row) = first else {
            return Ok(None);
        };
        let fresh = self.desc_now(s, st);
        let desc = fresh.as_ref().unwrap_or(&s.desc);
        fill_row_values(&row, desc, &mut self.row_buf)?;
        T::from_row(&TursoRow {
            values: &self.row_buf,
            columns: &desc.columns,
        })
        .map(Some)
    }

    async fn all_once<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<TursoStmt>,
        p: &[RowValues],
    ) -> Result<Vec<T>> {
        let values = to_values(p)?;
        self.in_flight = true;
        let mut st = s.stmt.clone();
        let r = self.all_rows(s, &mut st, values).await;
        self.row_buf.clear();
        self.finish(&st, r)
    }

    async fn all_rows<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<TursoStmt>,
        st: &mut turso::Statement,
        values: Vec<turso::Value>,
    ) -> Result<Vec<T>> {
        let mut rows = st.query(values).await.map_err(map_err)?;
        let mut out = Vec::new();
        let mut fresh: Option<Option<Arc<Described>>> = None;
        loop {
            if self.must_stop(s) {
                drop(rows);
                return self.stopped(st);
            }
            let Some(row) = rows.next().await.map_err(map_err)? else {
                break;
            };
            let desc = fresh
                .get_or_insert_with(|| self.desc_now(s, st))
                .as_ref()
                .unwrap_or(&s.desc);
            fill_row_values(&row, desc, &mut self.row_buf)?;
            out.push(T::from_row(&TursoRow {
                values: &self.row_buf,
                columns: &desc.columns,
            })?);
        }
        drop(rows);
        Ok(out)
    }

    /// Runs transaction control (`BEGIN IMMEDIATE`, `COMMIT`, `ROLLBACK`) as an operation of its
    /// own, within `at`.
    pub(super) async fn simple(&mut self, sql: &'static str, at: At) -> Result<()> {
        self.start_limit(at)?;
        self.simple_within(sql).await
    }

    /// Runs transaction control as a step of the operation running now (a script's own
    /// `BEGIN IMMEDIATE … COMMIT`), under that operation's limit.
    async fn simple_within(&mut self, sql: &'static str) -> Result<()> {
        // Preparing starts an operation of its own (without a limit); keep ours.
        let stop = self.stop_at;
        let s = self.prepare(sql, TranslationMode::Off, None).await;
        self.stop_at = stop;
        self.dml_inner(&s?, &[]).await.map(drop)
    }

    pub(super) fn autocommit(&self) -> Result<bool> {
        self.conn.is_autocommit().map_err(map_err)
    }

    pub(super) async fn rollback_if_open(&mut self) {
        if !self.autocommit().unwrap_or(true) {
            let _ = self.simple_within("ROLLBACK").await;
        }
    }

    /// Recycle check: outside any transaction, no statement left mid-way.
    pub(crate) async fn make_clean(&mut self) -> Result<()> {
        if let Some(rolled_back) = self.rolling_back.as_mut() {
            // Awaited in place (cancel-safe): dropped meanwhile, the next use waits again.
            let _ = rolled_back.await;
            self.rolling_back = None;
        }
        if self.discard {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::ConnectionLost,
                "this Turso connection went back to the pool mid-call; it is discarded",
            ));
        }
        if self.in_flight {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::ConnectionLost,
                "a call on this Turso connection was abandoned mid-way; the connection is discarded",
            ));
        }
        if !self.autocommit()? {
            self.simple("ROLLBACK", None).await?;
            if !self.autocommit()? {
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::TransactionState,
                    "the Turso connection stayed inside a transaction; it is discarded",
                ));
            }
        }
        self.needs_rollback = false;
        // The session: nothing to do after plain statements; checked and restored, or the
        // connection discarded, after anything else (see `session.rs`).
        let mark = std::mem::take(&mut self.session);
        if mark & DISCARD != 0 {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::ConnectionLost,
                "this Turso connection set a sequence's session value, which nothing resets; it is discarded",
            ));
        }
        if mark & VERIFY != 0 {
            self.verify_session().await?;
        }
        Ok(())
    }
}

crate::setup::setup_via_wing!(TursoConn, TursoConn::in_tx_now);

impl Wing for TursoConn {
    type Stmt = TursoStmt;
    type Raw = turso::Connection;

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
        if let Some(s) = self.stmts.get(sql, mode) {
            let s = Arc::clone(s);
            self.mark(s.effects.session);
            return Ok(s);
        }
        crate::sql::reject_nul(sql)?;
        if crate::sqlite_family::sql::has_multiple_statements(sql) {
            // Turso would prepare the first statement and silently ignore the rest.
            return Err(crate::sqlite_family::errors::multiple_statements());
        }
        let translated = match mode {
            TranslationMode::On => translate_placeholders(sql, crate::sqlite_family::PLACEHOLDERS),
            TranslationMode::Off => std::borrow::Cow::Borrowed(sql),
        };
        // What the statement does, from its program, learnt once. A `PRAGMA` marks the checkout
        // even when preparing it fails (Turso applies it while compiling); another statement that
        // fails to compile did nothing.
        let effects = super::session::learn(&self.conn, &translated).await;
        let prepared = self.conn.prepare(&translated).await;
        if prepared.is_ok() || !effects.cache {
            self.mark(effects.session);
        }
        let stmt = prepared.map_err(map_err)?;
        let s = Arc::new(TursoStmt {
            desc: Arc::new(describe(&stmt)),
            param_count: sqlite_param_count(&translated),
            dml: crate::sql::is_dml(&translated, crate::sqlite_family::DIALECT),
            ddl: crate::sql::script::changes_schema(&translated, crate::sqlite_family::DIALECT),
            effects,
            epoch,
            stmt,
        });
        if effects.cache {
            self.stmts.insert(
                sql,
                mode,
                Arc::clone(&s),
                self.opts.statement_cache_capacity,
            );
        }
        Ok(s)
    }

    async fn select(&mut self, s: &Arc<TursoStmt>, p: &[RowValues], at: At) -> Result<ResultSet> {
        self.start_limit(at)?;
        s.check(p)?;
        waiting!(self, self.select_once(s, p).await)
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
        s.check(p)?;
        waiting!(self, self.optional_once(s, p).await)
    }

    async fn all<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<TursoStmt>,
        p: &[RowValues],
        at: At,
    ) -> Result<Vec<T>> {
        self.start_limit(at)?;
        s.check(p)?;
        waiting!(self, self.all_once(s, p).await)
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
        self.start_limit(at)?;
        if self.unsettled() {
            self.settle().await?;
        }
        crate::sql::reject_nul(sql)?;
        let wrap = !in_tx
            && self.autocommit()?
            && !crate::sql::has_transaction_control(sql, crate::sqlite_family::DIALECT)
            && !super::session::only_pragmas(sql);
        // A script's statements are not compiled one by one here: its session is checked on
        // return.
        self.mark(VERIFY);
        if !wrap {
            return self.run_script(sql, in_tx, false).await;
        }
        // Each run of ordinary statements in its own transaction; a statement that cannot work
        // inside one (see `sql::effects`) on its own between them. Each segment applies whole
        // or not at all. The limit is checked before every statement (Turso cannot stop one
        // that runs): a segment stopped part-way is rolled back, and the call is a `Timeout`
        // only when no earlier segment committed; after one did, the script is part-applied
        // and the outcome says so.
        let mut committed = false;
        for (part, alone) in crate::sql::segments(sql, crate::sqlite_family::DIALECT) {
            if crate::sql::is_blank(part, crate::sqlite_family::DIALECT) {
                continue;
            }
            let r = match crate::deadline::check(self.stop_at) {
                Ok(()) => self.run_script(part, false, !alone).await,
                Err(e) => Err(e),
            };
            match r {
                Err(e) if committed && e.kind() == crate::ErrorKind::Timeout => {
                    return Err(crate::deadline::partly_applied());
                }
                Err(e) => return Err(e),
                Ok(()) => committed = true,
            }
        }
        Ok(())
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
        if self.unsettled() {
            self.settle().await?;
        }
        if !self.autocommit()? {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::TransactionState,
                "a transaction begun by raw SQL is still open on this connection; commit or roll it back first",
            ));
        }
        self.simple("BEGIN IMMEDIATE", at).await
    }

    /// After a cancelled operation outside a transaction: forget statements left mid-way and
    /// roll back whatever is open.
    async fn recover(&mut self) -> Result<()> {
        self.settle().await?;
        self.rollback_if_open().await;
        Ok(())
    }

    async fn commit(&mut self, at: At) -> Result<()> {
        match self.simple("COMMIT", at).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.rollback_if_open().await;
                Err(e)
            }
        }
    }

    async fn rollback(&mut self, at: At) -> Result<()> {
        if self.autocommit()? {
            return Ok(());
        }
        self.simple("ROLLBACK", at).await
    }

    /// Turso is back in autocommit mode while the hall holds a transaction open: the engine
    /// ended the transaction by itself.
    fn tx_ended(&self) -> bool {
        self.rolling_back.is_none() && self.autocommit().unwrap_or(false)
    }

    /// A transaction was dropped without commit: it is rolled back at once, off the calling
    /// thread ([`Self::rollback_in_background`]), so the write lock is free for other
    /// connections before this one is used again, and its next statement (or raw access)
    /// waits for that rollback first ([`Self::settle`]).
    fn abandon_tx(&mut self) {
        if self.in_flight {
            // A statement of the transaction was left mid-way: reset it.
            self.forget_statements();
            self.in_flight = false;
        }
        if self.rolling_back.is_none() && !self.autocommit().unwrap_or(false) {
            self.rollback_in_background();
        }
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

impl TursoConn {
    /// Runs a script as one piece; with `wrap`, inside `BEGIN IMMEDIATE … COMMIT`.
    async fn run_script(&mut self, sql: &str, in_tx: bool, wrap: bool) -> Result<()> {
        if wrap {
            self.simple_within("BEGIN IMMEDIATE").await?;
        }
        let was_autocommit = self.autocommit()?;
        // Inside `BEGIN IMMEDIATE` (ours or the caller's) the write lock is held and nothing in
        // the script waits. A script with its own transaction control cannot be retried as a
        // whole, so Turso's own busy handler waits for it, statement by statement.
        let native = !wrap && !in_tx;
        if native {
            self.set_native_busy(true)?;
        }
        self.in_flight = true;
        let r = if self.stop_at.is_some() {
            self.run_limited(sql).await
        } else {
            self.conn.execute_batch(sql).await.map_err(map_err)
        };
        self.in_flight = false;
        if native {
            self.set_native_busy(false)?;
        }
        if crate::sql::script::changes_schema(sql, crate::sqlite_family::DIALECT) {
            self.schema_changed();
        }
        if !wrap {
            if r.is_err() && !in_tx && was_autocommit {
                // A failed script must not leave its own transaction open.
                self.rollback_if_open().await;
            }
            return r;
        }
        match r {
            Ok(()) => match self.simple_within("COMMIT").await {
                Ok(()) => Ok(()),
                Err(e) => {
                    self.rollback_if_open().await;
                    Err(e)
                }
            },
            Err(e) => {
                self.rollback_if_open().await;
                Err(e)
            }
        }
    }
}

impl TursoConn {
    /// Runs a script under a time limit: one statement at a time, checking the limit before
    /// each one (a statement that has started runs to its end: Turso's API cannot interrupt
    /// it). Stopped, it fails with `Timeout`; the caller rolls back what the script's
    /// transaction did.
    async fn run_limited(&mut self, sql: &str) -> Result<()> {
        for stmt in crate::sql::script::statements(sql, crate::sqlite_family::DIALECT) {
            if crate::sql::is_blank(stmt, crate::sqlite_family::DIALECT) {
                continue;
            }
            crate::deadline::check(self.stop_at)?;
            self.conn.execute_batch(stmt).await.map_err(map_err)?;
        }
        Ok(())
    }
}

impl crate::pooling::Pooled for TursoConn {
    fn returned_at(&self) -> Option<std::time::Instant> {
        self.returned_at
    }
}
