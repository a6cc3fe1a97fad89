//! A statement prepared on a SQLite connection: its translated SQL and what was learnt about it
//! once, at prepare time.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use rusqlite::Connection;

use super::error::map_err;
use super::rows::describe;
use crate::contract::WingStmt;
use crate::error::Result;
use crate::results::Columns;
use crate::sql::Session;
use crate::sqlite_family::columns::Described;

/// A statement prepared on a SQLite connection. The engine statement itself lives in rusqlite's
/// per-connection cache, keyed by `sql`.
#[derive(Debug)]
pub(crate) struct SqliteStmt {
    /// The SQL as the engine runs it (after translation).
    pub(super) sql: Box<str>,
    pub(super) desc: Arc<Described>,
    /// The statement does not write: it may be interrupted and re-run elsewhere.
    pub(super) readonly: bool,
    /// It changes rows, so `changes()` counts its rows.
    pub(super) dml: bool,
    /// What running it changes in the connection's session (`PRAGMA x = …`, `ATTACH`, …).
    pub(super) session: Session,
    /// SQLite's re-prepare count when `desc` was read.
    pub(super) reprepares: i32,
    /// The schema changed since: the connection's cache describes the statement again.
    pub(super) stale: AtomicBool,
    /// It ran past the inline budget: the adaptive model offloads it.
    pub(super) slow: AtomicBool,
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
    /// Prepares `sql` on `c` (into rusqlite's statement cache) and describes it.
    pub(super) fn describe(c: &mut Connection, sql: Box<str>) -> Result<SqliteStmt> {
        let st = c.prepare_cached(&sql).map_err(map_err)?;
        let desc = Arc::new(describe(&st));
        let readonly = st.readonly();
        let reprepares = st.get_status(rusqlite::StatementStatus::RePrepare);
        drop(st);
        Ok(SqliteStmt {
            dml: crate::sql::is_dml(&sql, crate::sql::Dialect::Sqlite),
            session: crate::sql::session_change(&sql, crate::sql::Dialect::Sqlite),
            sql,
            desc,
            readonly,
            reprepares,
            stale: AtomicBool::new(false),
            slow: AtomicBool::new(false),
        })
    }
}
