//! Running statements on a Turso connection: select, dml, optional, all and scripts, each
//! waiting for locks on the runtime's timer, and describing new statements.

use std::sync::Arc;

use super::busy::BusyWait;
use super::conn::TursoConn;
use super::error::map_err;
use super::params::to_values;
use super::rows::{TursoRow, describe, fill_row_values, row_values};
use super::session::VERIFY;
use super::stmt::TursoStmt;
use crate::deadline::At;
use crate::decode::FromRow;
use crate::error::{ErrorKind, Result};
use crate::results::ResultSet;
use crate::sqlite_family::columns::Described;
use crate::sqlite_family::sql::sqlite_param_count;
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

impl TursoConn {
    pub(super) async fn select_inner(
        &mut self,
        s: &Arc<TursoStmt>,
        p: &[RowValues],
    ) -> Result<ResultSet> {
        s.check(p)?;
        waiting!(self, self.select_once(s, p).await)
    }

    pub(super) async fn optional_inner<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<TursoStmt>,
        p: &[RowValues],
    ) -> Result<Option<T>> {
        s.check(p)?;
        waiting!(self, self.optional_once(s, p).await)
    }

    pub(super) async fn all_inner<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<TursoStmt>,
        p: &[RowValues],
    ) -> Result<Vec<T>> {
        s.check(p)?;
        waiting!(self, self.all_once(s, p).await)
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

    /// Ends a read stopped at its time limit: its statement is reset (so the cached statement
    /// is ready for the next call) and the call fails with `Timeout`.
    fn stopped<R>(&mut self, st: &turso::Statement) -> Result<R> {
        let _ = st.reset();
        self.in_flight = false;
        Err(crate::deadline::error())
    }

    /// The columns to read `s`'s rows with: its own, unless the schema changed since it was
    /// prepared (a statement held across a change), then the statement's columns now.
    pub(super) fn desc_now(&self, s: &TursoStmt, st: &turso::Statement) -> Option<Arc<Described>> {
        (s.epoch != self.epoch()).then(|| Arc::new(describe(st)))
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

    pub(super) async fn dml_inner(&mut self, s: &Arc<TursoStmt>, p: &[RowValues]) -> Result<u64> {
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
        crate::decode::decode_taking::<T, _>(TursoRow {
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
            out.push(crate::decode::decode_taking::<T, _>(TursoRow {
                values: &self.row_buf,
                columns: &desc.columns,
            })?);
        }
        drop(rows);
        Ok(out)
    }

    /// Describes a statement not in this connection's cache (the rest of [`Wing::prepare`]),
    /// and caches it unless what it does forbids.
    ///
    /// [`Wing::prepare`]: crate::contract::Wing::prepare
    pub(super) async fn prepare_new(
        &mut self,
        sql: &str,
        mode: TranslationMode,
        epoch: u64,
    ) -> Result<Arc<TursoStmt>> {
        crate::sql::reject_nul(sql)?;
        self.check_reader(sql)?;
        if crate::sqlite_family::sql::has_multiple_statements(sql) {
            // Turso would prepare the first statement and silently ignore the rest.
            return Err(crate::sqlite_family::errors::multiple_statements());
        }
        let translated = match mode {
            TranslationMode::On => translate_placeholders(sql, super::dialect::PLACEHOLDERS),
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
            dml: crate::sql::is_dml(&translated, super::dialect::DIALECT),
            ddl: crate::sql::script::changes_schema(&translated, super::dialect::DIALECT),
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

    /// Runs a script (see [`Wing::execute_batch`]).
    ///
    /// [`Wing::execute_batch`]: crate::contract::Wing::execute_batch
    pub(super) async fn execute_script(&mut self, sql: &str, in_tx: bool, at: At) -> Result<()> {
        self.start_limit(at)?;
        if self.unsettled() {
            self.settle().await?;
        }
        crate::sql::reject_nul(sql)?;
        self.check_reader(sql)?;
        let wrap = !in_tx
            && self.autocommit()?
            && !crate::sql::has_transaction_control(sql, super::dialect::DIALECT)
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
        for (part, alone) in crate::sql::segments(sql, super::dialect::DIALECT) {
            if crate::sql::is_blank(part, super::dialect::DIALECT) {
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

    /// Runs a script as one piece; with `wrap`, inside `BEGIN IMMEDIATE … COMMIT`.
    pub(super) async fn run_script(&mut self, sql: &str, in_tx: bool, wrap: bool) -> Result<()> {
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
        if crate::sql::script::changes_schema(sql, super::dialect::DIALECT) {
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

    /// Runs a script under a time limit: one statement at a time, checking the limit before
    /// each one (a statement that has started runs to its end: Turso's API cannot interrupt
    /// it). Stopped, it fails with `Timeout`; the caller rolls back what the script's
    /// transaction did.
    async fn run_limited(&mut self, sql: &str) -> Result<()> {
        for stmt in crate::sql::script::statements(sql, super::dialect::DIALECT) {
            if crate::sql::is_blank(stmt, super::dialect::DIALECT) {
                continue;
            }
            crate::deadline::check(self.stop_at)?;
            self.conn.execute_batch(stmt).await.map_err(map_err)?;
        }
        Ok(())
    }
}
