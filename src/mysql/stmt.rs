//! A statement prepared on one MySQL connection, kept in that connection's cache.

use std::sync::Arc;

use crate::contract::WingStmt;
use crate::error::{Result, SqlMiddlewareDbError};
use crate::results::Columns;
use crate::value::RowValues;

/// A MySQL statement and what was learnt about it at prepare time.
pub(crate) struct MyStmt {
    /// The server-side statement (`None` in the unnamed mode: prepared, run and closed per
    /// execution).
    pub(super) stmt: Option<mysql_async::Statement>,
    /// The text sent to the server (placeholders rewritten to `?`).
    pub(super) text: Box<str>,
    pub(super) columns: Arc<Columns>,
    /// The parameter each `?` binds (`None`: in order).
    pub(super) order: Option<Box<[u16]>>,
    /// How many parameters the statement takes.
    pub(super) params: usize,
    /// It changes rows: its affected-row count is a number of rows.
    pub(super) dml: bool,
    /// How its affected-row count is read (see `counts.rs`).
    pub(super) count: super::counts::CountRule,
    /// What running it may do beyond its rows.
    pub(super) fx: Effects,
    /// The connection it was prepared on, and that connection's statement generation then.
    pub(super) conn: (u64, u64),
}

/// What running a statement (or a script) may do beyond its rows, read from its text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Effects {
    /// It may change data (see `session::writes`).
    pub(crate) writes: bool,
    /// It leaves nothing in the session (see `session.rs`).
    pub(crate) plain: bool,
    /// It changes the schema.
    pub(crate) ddl: bool,
    /// It may run a routine (`CALL`, `EXECUTE`) that ends a transaction by itself.
    pub(crate) routine: bool,
}

impl Effects {
    /// The effects of the SQL `text`.
    pub(crate) fn of(text: &str) -> Self {
        Self {
            writes: super::session::writes(text),
            plain: super::session::is_plain(text),
            ddl: crate::sql::script::changes_schema(text, super::dialect::DIALECT),
            routine: super::session::runs_routine(text),
        }
    }
}

impl std::fmt::Debug for MyStmt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MyStmt")
            .field("columns", &self.columns)
            .finish_non_exhaustive()
    }
}

impl WingStmt for MyStmt {
    fn columns(&self) -> &Arc<Columns> {
        &self.columns
    }

    fn writes(&self) -> bool {
        self.fx.writes
    }
}

impl MyStmt {
    /// Checks the parameter count before anything is sent.
    #[inline]
    pub(super) fn check(&self, p: &[RowValues]) -> Result<()> {
        if p.len() == self.params {
            Ok(())
        } else {
            Err(SqlMiddlewareDbError::parameter_count(self.params, p.len()))
        }
    }
}
