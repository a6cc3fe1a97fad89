//! Running statements on a SQLite connection: the per-call functions (select, dml, optional,
//! all, scripts) and the connection's dispatch of them, describing new statements included.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::Connection;

use super::conn::SqliteConn;
use super::error::map_err;
use super::offload::Run;
use super::params::bind_all;
use super::rows::{SqliteRow, collect};
use super::stmt::SqliteStmt;
use crate::deadline::At;
use crate::decode::FromRow;
use crate::error::Result;
use crate::results::ResultSet;
use crate::sqlite_family::columns::Described;
use crate::sqlite_family::session::Effects;
use crate::translation::{TranslationMode, translate_placeholders};
use crate::value::RowValues;

pub(super) fn run_select(c: &mut Connection, s: &SqliteStmt, p: &[RowValues]) -> Result<ResultSet> {
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

pub(super) fn run_dml(c: &mut Connection, s: &SqliteStmt, p: &[RowValues]) -> Result<u64> {
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

pub(super) fn run_optional<T: FromRow>(
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
            crate::decode::decode_taking::<T, _>(SqliteRow {
                row,
                desc: fresh.as_deref().unwrap_or(&s.desc),
            })
            .map(Some)
        }
        None => Ok(None),
    }
}

pub(super) fn run_all<T: FromRow>(
    c: &mut Connection,
    s: &SqliteStmt,
    p: &[RowValues],
) -> Result<Vec<T>> {
    let mut st = c.prepare_cached(&s.sql).map_err(map_err)?;
    bind_all(&mut st, p)?;
    let mut rows = st.raw_query();
    let mut out = Vec::new();
    let mut fresh: Option<Option<Arc<Described>>> = None;
    while let Some(row) = rows.next().map_err(map_err)? {
        let d = fresh.get_or_insert_with(|| s.columns_now(row.as_ref()));
        out.push(crate::decode::decode_taking::<T, _>(SqliteRow {
            row,
            desc: d.as_deref().unwrap_or(&s.desc),
        })?);
    }
    Ok(out)
}

pub(super) fn run_sql(c: &mut Connection, sql: &str) -> Result<()> {
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
    for (part, alone) in crate::sql::segments(sql, super::dialect::DIALECT) {
        if !crate::sql::is_blank(part, super::dialect::DIALECT) {
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
    pub(super) async fn run<R, F>(
        &mut self,
        s: &Arc<SqliteStmt>,
        p: &[RowValues],
        at: At,
        op: F,
    ) -> Result<R>
    where
        R: Send + 'static,
        F: Fn(&mut Connection, &SqliteStmt, &[RowValues]) -> Result<R> + Copy + Send + 'static,
    {
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        // A write in autocommit mode commits, and may wait for the disk.
        let syncs = self.syncing_commits && !s.readonly && self.conn_mut()?.is_autocommit();
        let before = self.exec_mark();
        let run = s.next_run();
        // Only work that leaves for the blocking pool owns the statement and the parameters.
        let owned = || {
            let owned = Arc::clone(s);
            let params = p.to_vec();
            move |c: &mut Connection| op(c, &owned, &params)
        };
        let r = if at.is_none() {
            // No time limit to arm: the two halves of `dispatch` directly, so that a statement
            // run inline awaits no future.
            match self.inline_first(run, syncs, Some(&s.slow), |c| op(c, s, p)) {
                Ok(Some(r)) => r,
                Ok(None) => self.offload_after(Some(&s.slow), owned).await,
                Err(e) => Err(e),
            }
        } else {
            self.dispatch(at, run, syncs, Some(&s.slow), |c| op(c, s, p), owned)
                .await
        };
        super::offload::record_exec(before, self.exec);
        r
    }

    /// Describes a statement not in this connection's cache (the rest of [`Wing::prepare`]),
    /// and caches it.
    ///
    /// [`Wing::prepare`]: crate::contract::Wing::prepare
    pub(super) async fn prepare_new(
        &mut self,
        sql: &str,
        mode: TranslationMode,
        at: At,
    ) -> Result<Arc<SqliteStmt>> {
        crate::sql::reject_nul(sql)?;
        let translated: Box<str> = match mode {
            TranslationMode::On => translate_placeholders(sql, super::dialect::PLACEHOLDERS).into(),
            TranslationMode::Off => sql.into(),
        };
        let owned = translated.clone();
        let cell = Arc::clone(&self.cell);
        let moved = Arc::clone(&cell);
        let stmt = self
            .dispatch(
                at,
                Run::TimedRead,
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

    /// One of the hall's savepoint statements, inside its transaction: a script the execution
    /// model may run on the task (see `Wing::savepoint_stmt`).
    pub(super) async fn savepoint_script(&mut self, sql: &str) -> Result<()> {
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        let before = self.exec_mark();
        let r = self
            .dispatch(
                None,
                Run::Write,
                false,
                None,
                |c| run_script(c, sql, false),
                || {
                    let sql = sql.to_owned();
                    move |c: &mut Connection| run_script(c, &sql, false)
                },
            )
            .await;
        self.script_ran(before);
        r
    }

    /// Runs a script (see [`Wing::execute_batch`]).
    ///
    /// [`Wing::execute_batch`]: crate::contract::Wing::execute_batch
    pub(super) async fn execute_script(&mut self, sql: &str, in_tx: bool, at: At) -> Result<()> {
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        crate::sql::reject_nul(sql)?;
        let autocommit = self.conn_mut()?.is_autocommit();
        let wrap = !in_tx
            && autocommit
            && !crate::sql::has_transaction_control(sql, super::dialect::DIALECT);
        // A script with transaction control of its own may commit part-way.
        let own_control = !in_tx && autocommit && !wrap;
        let committed = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&committed);
        let sql = sql.to_owned();
        let before = self.exec_mark();
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
        self.script_ran(before);
        r
    }

    /// What every script ends with: its execution counts (`before` is the connection's as it
    /// started), and what the authorizer saw of each statement as SQLite prepared it, the ones
    /// that ran before a failure included.
    fn script_ran(&mut self, before: super::offload::ExecMark) {
        super::offload::record_exec(before, self.exec);
        let seen = self.cell.take();
        if seen.has(Effects::SCHEMA) {
            // Describe statements again after DDL; SQLite re-prepares its own.
            self.stmts.clear();
        }
        self.note_session(seen.lasting());
    }
}
