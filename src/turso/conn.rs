//! Turso connection operations. Every backend folder has a `conn.rs` with the same functions.

use std::sync::Arc;

use super::config::TursoOptions;
use super::error::map_err;
use super::exec::BusyWait;
use super::params::to_values;
use super::rows::{TursoRow, columns_of, fill_row_values, row_values};
use crate::decode::FromRow;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::{Columns, ResultSet};
use crate::stmt_cache::StmtCache;
use crate::translation::{
    PlaceholderStyle, TranslationMode, sqlite_param_count, translate_placeholders,
};
use crate::value::RowValues;

/// Runs `$op` (one statement that resets itself before it runs), and again after a sleep on
/// the runtime's timer each time it fails with `Busy`, until the busy timeout has passed (see
/// `exec.rs`). A statement that failed with `Busy` changed nothing.
macro_rules! waiting {
    ($conn:ident, $op:expr) => {{
        if $conn.native_busy {
            $conn.set_native_busy(false)?;
        }
        let mut wait: Option<BusyWait> = None;
        loop {
            match $op {
                Err(e) if e.kind() == ErrorKind::Busy => {
                    let w = wait.get_or_insert_with(|| BusyWait::new($conn.opts.busy_timeout));
                    if !w.pause().await {
                        break Err(e);
                    }
                }
                r => break r,
            }
        }
    }};
}

/// A statement prepared on one Turso connection, kept in that connection's cache.
pub(crate) struct TursoStmt {
    stmt: turso::Statement,
    columns: Arc<Columns>,
    param_count: usize,
    dml: bool,
    ddl: bool,
}

impl std::fmt::Debug for TursoStmt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TursoStmt")
            .field("columns", &self.columns)
            .finish()
    }
}

impl TursoStmt {
    pub(crate) fn columns(&self) -> &Arc<Columns> {
        &self.columns
    }

    fn check(&self, p: &[RowValues]) -> Result<()> {
        if p.len() == self.param_count {
            Ok(())
        } else {
            Err(SqlMiddlewareDbError::parameter_count(
                self.param_count,
                p.len(),
            ))
        }
    }
}

/// One pooled Turso connection with its statement cache and state.
pub(crate) struct TursoConn {
    conn: turso::Connection,
    opts: Arc<TursoOptions>,
    stmts: StmtCache<TursoStmt>,
    /// A future was dropped while a statement ran: its statement state is unknown.
    in_flight: bool,
    /// Turso's own busy handler is on (the raw connection was handed out); the middleware's
    /// statements turn it off again and wait for locks themselves (see `exec.rs`).
    native_busy: bool,
    /// The values of the row being decoded by `one`/`optional`/`all`, reused from call to call.
    row_buf: Vec<RowValues>,
}

impl TursoConn {
    pub(crate) fn new(conn: turso::Connection, opts: Arc<TursoOptions>) -> Self {
        Self {
            conn,
            opts,
            stmts: StmtCache::new(),
            in_flight: false,
            native_busy: false,
            row_buf: Vec::new(),
        }
    }

    /// Turns Turso's own busy handler on (at the configured timeout) or off.
    fn set_native_busy(&mut self, on: bool) -> Result<()> {
        let d = if on {
            self.opts.busy_timeout
        } else {
            std::time::Duration::ZERO
        };
        self.conn.busy_timeout(d).map_err(map_err)?;
        self.native_busy = on;
        Ok(())
    }

    /// After an abandoned call: forget cached statements (their state is unknown) and roll back
    /// whatever the abandoned call left open.
    async fn repair(&mut self) -> Result<()> {
        if self.in_flight {
            self.forget_statements();
            self.in_flight = false;
        }
        Ok(())
    }

    pub(crate) async fn prepare(
        &mut self,
        sql: &str,
        mode: TranslationMode,
    ) -> Result<Arc<TursoStmt>> {
        if self.in_flight {
            self.repair().await?;
        }
        if let Some(s) = self.stmts.get(sql, mode) {
            return Ok(Arc::clone(s));
        }
        crate::batch::reject_nul(sql)?;
        if crate::batch::has_multiple_statements(sql) {
            // Turso would prepare the first statement and silently ignore the rest.
            return Err(SqlMiddlewareDbError::multiple_statements());
        }
        let translated = match mode {
            TranslationMode::On => translate_placeholders(sql, PlaceholderStyle::Sqlite),
            TranslationMode::Off => std::borrow::Cow::Borrowed(sql),
        };
        let stmt = self.conn.prepare(&translated).await.map_err(map_err)?;
        let s = Arc::new(TursoStmt {
            columns: Arc::new(columns_of(&stmt)),
            param_count: sqlite_param_count(&translated),
            dml: crate::batch::is_dml(&translated),
            ddl: crate::batch::changes_schema(&translated),
            stmt,
        });
        self.stmts.insert(
            sql,
            mode,
            Arc::clone(&s),
            self.opts.statement_cache_capacity,
        );
        Ok(s)
    }

    pub(crate) async fn select(
        &mut self,
        s: &Arc<TursoStmt>,
        p: &[RowValues],
    ) -> Result<ResultSet> {
        s.check(p)?;
        waiting!(self, self.select_once(s, p).await)
    }

    async fn select_once(&mut self, s: &Arc<TursoStmt>, p: &[RowValues]) -> Result<ResultSet> {
        let values = to_values(p)?;
        self.in_flight = true;
        let mut st = s.stmt.clone();
        let mut rs = ResultSet::with_capacity(Arc::clone(&s.columns), 1);
        let mut rows = st.query(values).await.map_err(map_err)?;
        while let Some(row) = rows.next().await.map_err(map_err)? {
            rs.push_values(row_values(&row, &s.columns)?);
        }
        drop(rows);
        if s.dml {
            rs.rows_affected = usize::try_from(st.n_change()).unwrap_or(usize::MAX);
        }
        self.in_flight = false;
        Ok(rs)
    }

    /// Resets and drops every cached statement: after a call was abandoned mid-way (their
    /// state is unknown), and after a schema change made through this connection (Turso
    /// statements keep the columns they were prepared with).
    fn forget_statements(&mut self) {
        for s in self.stmts.values() {
            let _ = s.stmt.reset();
        }
        self.stmts.clear();
    }

    pub(crate) async fn execute(&mut self, s: &Arc<TursoStmt>, p: &[RowValues]) -> Result<usize> {
        if s.ddl {
            let n = self.execute_inner(s, p).await;
            self.forget_statements();
            return n;
        }
        self.execute_inner(s, p).await
    }

    async fn execute_inner(&mut self, s: &Arc<TursoStmt>, p: &[RowValues]) -> Result<usize> {
        s.check(p)?;
        waiting!(self, self.execute_once(s, p).await)
    }

    async fn execute_once(&mut self, s: &Arc<TursoStmt>, p: &[RowValues]) -> Result<usize> {
        let values = to_values(p)?;
        self.in_flight = true;
        let mut st = s.stmt.clone();
        let n = if s.columns.is_empty() {
            st.execute(values).await.map_err(map_err)?
        } else {
            let mut rows = st.query(values).await.map_err(map_err)?;
            while rows.next().await.map_err(map_err)?.is_some() {}
            drop(rows);
            st.n_change()
        };
        self.in_flight = false;
        Ok(if s.dml {
            usize::try_from(n).unwrap_or(usize::MAX)
        } else {
            0
        })
    }

    pub(crate) async fn fetch_first<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<TursoStmt>,
        p: &[RowValues],
    ) -> Result<Option<T>> {
        s.check(p)?;
        waiting!(self, self.fetch_first_once(s, p).await)
    }

    async fn fetch_first_once<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<TursoStmt>,
        p: &[RowValues],
    ) -> Result<Option<T>> {
        let values = to_values(p)?;
        self.in_flight = true;
        let mut st = s.stmt.clone();
        let mut rows = st.query(values).await.map_err(map_err)?;
        let first = rows.next().await.map_err(map_err)?;
        // Run the statement to completion, as Turso requires before reuse.
        while rows.next().await.map_err(map_err)?.is_some() {}
        drop(rows);
        self.in_flight = false;
        let Some(row) = first else {
            return Ok(None);
        };
        fill_row_values(&row, &s.columns, &mut self.row_buf)?;
        let decoded = T::from_row(&TursoRow {
            values: &self.row_buf,
            columns: &s.columns,
        });
        self.row_buf.clear();
        decoded.map(Some)
    }

    pub(crate) async fn fetch_all<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<TursoStmt>,
        p: &[RowValues],
    ) -> Result<Vec<T>> {
        s.check(p)?;
        waiting!(self, self.fetch_all_once(s, p).await)
    }

    async fn fetch_all_once<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<TursoStmt>,
        p: &[RowValues],
    ) -> Result<Vec<T>> {
        let values = to_values(p)?;
        self.in_flight = true;
        let mut st = s.stmt.clone();
        let mut rows = st.query(values).await.map_err(map_err)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().await.map_err(map_err)? {
            fill_row_values(&row, &s.columns, &mut self.row_buf)?;
            out.push(T::from_row(&TursoRow {
                values: &self.row_buf,
                columns: &s.columns,
            })?);
        }
        self.row_buf.clear();
        drop(rows);
        self.in_flight = false;
        Ok(out)
    }

    /// Turso has no pipelining: the statements run one after another.
    pub(crate) async fn pipeline(
        &mut self,
        s: &Arc<TursoStmt>,
        sets: &[&[RowValues]],
    ) -> Result<Vec<ResultSet>> {
        let mut out = Vec::with_capacity(sets.len());
        for p in sets {
            out.push(self.select(s, p).await?);
        }
        Ok(out)
    }

    async fn simple(&mut self, sql: &'static str) -> Result<()> {
        let s = self.prepare(sql, TranslationMode::Off).await?;
        self.execute(&s, &[]).await.map(drop)
    }

    /// Runs a script; outside a transaction and without its own transaction control it runs
    /// inside `BEGIN IMMEDIATE … COMMIT`, so it applies entirely or not at all.
    pub(crate) async fn execute_batch(&mut self, sql: &str, in_tx: bool) -> Result<()> {
        if self.in_flight {
            self.repair().await?;
        }
        crate::batch::reject_nul(sql)?;
        let wrap = !in_tx && self.autocommit()? && !crate::batch::has_transaction_control(sql);
        if wrap {
            self.simple("BEGIN IMMEDIATE").await?;
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
        let r = self.conn.execute_batch(sql).await.map_err(map_err);
        self.in_flight = false;
        if native {
            self.set_native_busy(false)?;
        }
        if crate::batch::changes_schema(sql) {
            self.forget_statements();
        }
        if !wrap {
            if r.is_err() && !in_tx && was_autocommit {
                // A failed script must not leave its own transaction open.
                self.rollback_if_open().await;
            }
            return r;
        }
        match r {
            Ok(()) => match self.simple("COMMIT").await {
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

    fn autocommit(&self) -> Result<bool> {
        self.conn.is_autocommit().map_err(map_err)
    }

    async fn rollback_if_open(&mut self) {
        if !self.autocommit().unwrap_or(true) {
            let _ = self.simple("ROLLBACK").await;
        }
    }

    pub(crate) async fn begin(&mut self) -> Result<()> {
        if self.in_flight {
            self.repair().await?;
        }
        if !self.autocommit()? {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::TransactionState,
                "a transaction begun by raw SQL is still open on this connection; commit or roll it back first",
            ));
        }
        self.simple("BEGIN IMMEDIATE").await
    }

    /// After a cancelled operation outside a transaction: forget statements left mid-way and
    /// roll back whatever is open.
    pub(crate) async fn recover(&mut self) -> Result<()> {
        self.repair().await?;
        self.rollback_if_open().await;
        Ok(())
    }

    pub(crate) async fn commit(&mut self) -> Result<()> {
        match self.simple("COMMIT").await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.rollback_if_open().await;
                Err(e)
            }
        }
    }

    pub(crate) async fn rollback(&mut self) -> Result<()> {
        if self.autocommit()? {
            return Ok(());
        }
        self.simple("ROLLBACK").await
    }

    /// A transaction was dropped without commit. Turso would roll it back only lazily, on the
    /// connection's next statement, after a write through a cached statement could already have
    /// been acknowledged inside it. So roll back now: Turso runs in process, and `ROLLBACK`
    /// waits for no lock, so driving its future to completion here does not wait on anything.
    pub(crate) fn abandon_tx(&mut self) {
        if self.in_flight {
            // A statement of the transaction was left mid-way: reset it before rolling back.
            self.forget_statements();
            self.in_flight = false;
        }
        if self.autocommit().unwrap_or(false) {
            return;
        }
        let conn = self.conn.clone();
        let done = futures_executor::block_on(async move { conn.execute("ROLLBACK", ()).await });
        if done.is_err() || !self.autocommit().unwrap_or(false) {
            // Recycling checks again and discards the connection if it is still inside a transaction.
            self.in_flight = true;
        }
    }

    /// The connection goes back to the pool: reset statements left mid-way and roll back
    /// whatever transaction is still open, so an idle pooled connection holds no lock. A
    /// connection whose call was abandoned mid-way is still discarded at the next checkout.
    pub(crate) fn on_return(&mut self) {
        let abandoned = self.in_flight;
        self.abandon_tx();
        self.in_flight |= abandoned;
    }

    /// Recycle check: outside any transaction, no statement left mid-way.
    pub(crate) async fn make_clean(&mut self) -> Result<()> {
        if self.in_flight {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::ConnectionLost,
                "a call on this Turso connection was abandoned mid-way; the connection is discarded",
            ));
        }
        if !self.autocommit()? {
            self.simple("ROLLBACK").await?;
            if !self.autocommit()? {
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::TransactionState,
                    "the Turso connection stayed inside a transaction; it is discarded",
                ));
            }
        }
        Ok(())
    }

    /// The raw connection runs with Turso's own busy handler at the configured timeout; the
    /// middleware's next statement turns it off again.
    pub(crate) fn raw_connection(&mut self) -> Result<&turso::Connection> {
        if !self.native_busy {
            self.set_native_busy(true)?;
        }
        Ok(&self.conn)
    }
}
