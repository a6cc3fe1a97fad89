//! A statement prepared on a SQLite connection: its translated SQL and what was learnt about it
//! once, at prepare time.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;

use super::error::map_err;
use super::rows::describe;
use crate::contract::WingStmt;
use crate::error::Result;
use crate::results::Columns;
use crate::sqlite_family::columns::Described;
use crate::sqlite_family::session::Effects;

use super::offload::{Run, TIMED_EVERY};
use super::session::SessionCell;

/// A statement prepared on a SQLite connection. The engine statement itself lives in rusqlite's
/// per-connection cache, keyed by `sql`.
#[derive(Debug)]
pub(crate) struct SqliteStmt {
    /// The SQL as the engine runs it (after translation).
    pub(super) sql: Box<str>,
    pub(crate) desc: Arc<Described>,
    /// The statement does not write the database (`sqlite3_stmt_readonly`).
    pub(super) readonly: bool,
    /// It may be interrupted and re-run elsewhere: it neither writes, nor controls
    /// transactions, nor attaches databases.
    pub(super) restartable: bool,
    /// It changes rows, so `changes()` counts its rows.
    pub(super) dml: bool,
    /// What running it changes in the connection's session (`PRAGMA x = …`, `ATTACH`,
    /// temporary objects, …), as SQLite's authorizer reported it when the statement was
    /// prepared.
    pub(super) session: Effects,
    /// SQLite's re-prepare count when `desc` was read.
    pub(super) reprepares: i32,
    /// How many times it has run, for [`Self::next_run`].
    runs: AtomicU32,
    /// The schema changed since: the connection's cache describes the statement again.
    pub(super) stale: AtomicBool,
    /// It ran past the inline budget: the adaptive model offloads it.
    pub(super) slow: AtomicBool,
    /// The columns as described after SQLite last re-prepared the statement, with that
    /// re-prepare count: a handle held across a schema change describes them once per change,
    /// not on every call. Touched only after a re-prepare.
    refreshed: Mutex<Option<(i32, Arc<Described>)>>,
}

impl WingStmt for SqliteStmt {
    fn columns(&self) -> &Arc<Columns> {
        &self.desc.columns
    }

    fn writes(&self) -> bool {
        !self.readonly
    }
}

impl SqliteStmt {
    /// Prepares `sql` on `c` (into rusqlite's statement cache) and describes it, with what the
    /// connection's authorizer (`cell`) reported while SQLite prepared it.
    pub(crate) fn describe(
        c: &mut Connection,
        sql: Box<str>,
        cell: &SessionCell,
    ) -> Result<SqliteStmt> {
        // What the authorizer saw before belongs to the checkout, not to this statement: it
        // stays in the cell.
        let before = cell.take();
        let st = c.prepare_cached(&sql);
        let mut effects = cell.take();
        if st.is_ok() && !effects.has(Effects::SEEN) {
            // rusqlite's cache still held the statement, so SQLite did not prepare it now:
            // prepare it once more, uncached, to hear what it does.
            drop(c.prepare(&sql));
            effects = cell.take();
        }
        cell.add(before.with(effects));
        let st = st.map_err(map_err)?;
        let desc = Arc::new(describe(&st));
        let readonly = st.readonly();
        let reprepares = st.get_status(rusqlite::StatementStatus::RePrepare);
        drop(st);
        Ok(SqliteStmt {
            dml: crate::sql::is_dml(&sql, super::dialect::DIALECT),
            restartable: readonly && !effects.has(Effects::TX | Effects::ATTACH),
            session: effects.lasting(),
            sql,
            desc,
            readonly,
            reprepares,
            runs: AtomicU32::new(0),
            stale: AtomicBool::new(false),
            slow: AtomicBool::new(false),
            refreshed: Mutex::new(None),
        })
    }

    /// How its next run keeps the inline budget (see [`Run`]): a read is timed from its start
    /// at its first run and every [`TIMED_EVERY`]th after.
    #[inline]
    pub(super) fn next_run(&self) -> Run {
        if !self.restartable {
            return Run::Write;
        }
        // Not a read-modify-write: the statement runs on one connection at a time, and a
        // count lost to a race would only move when the next timed run comes.
        let n = self.runs.load(Ordering::Relaxed);
        self.runs.store(n.wrapping_add(1), Ordering::Relaxed);
        if n % TIMED_EVERY == 0 {
            Run::TimedRead
        } else {
            Run::Read
        }
    }

    /// The columns to read `st`'s rows with, when they are no longer `desc` (SQLite re-prepared
    /// the statement after a schema change); `None` while `desc` holds, which is the only check
    /// on the usual path. Marks the statement stale, so the connection's cache describes it
    /// afresh at the next `prepare`.
    #[inline]
    pub(crate) fn columns_now(&self, st: &rusqlite::Statement<'_>) -> Option<Arc<Described>> {
        let now = st.get_status(rusqlite::StatementStatus::RePrepare);
        let count = st.column_count();
        if now == self.reprepares && count == self.desc.len() {
            return None;
        }
        Some(self.columns_changed(st, now, count))
    }

    /// The rest of [`Self::columns_now`], after a re-prepare: the columns described once per
    /// re-prepare count.
    #[cold]
    fn columns_changed(
        &self,
        st: &rusqlite::Statement<'_>,
        now: i32,
        count: usize,
    ) -> Arc<Described> {
        self.stale.store(true, Ordering::Relaxed);
        let mut slot = self
            .refreshed
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((_, d)) = slot.as_ref().filter(|(n, d)| *n == now && d.len() == count) {
            return Arc::clone(d);
        }
        let d = Arc::new(describe(st));
        *slot = Some((now, Arc::clone(&d)));
        d
    }
}
