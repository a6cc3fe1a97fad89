//! A statement prepared on one Turso connection, kept in that connection's cache.

use std::sync::Arc;

use crate::contract::WingStmt;
use crate::error::{Result, SqlMiddlewareDbError};
use crate::results::Columns;
use crate::sqlite_family::columns::Described;
use crate::value::RowValues;

/// A Turso statement and what was learnt about it at prepare time.
pub(crate) struct TursoStmt {
    pub(super) stmt: turso::Statement,
    pub(super) desc: Arc<Described>,
    pub(super) param_count: usize,
    /// It changes rows, so its change count is a number of rows.
    pub(super) dml: bool,
    /// It changes the schema: the pool's cached statements are described again after it.
    pub(super) ddl: bool,
    /// What preparing and running it does beyond its rows (see `session.rs`): whether it
    /// writes, and what it leaves in the session.
    pub(super) effects: super::session::Effects,
    /// The pool's schema epoch when `desc` was read.
    pub(super) epoch: u64,
}

impl std::fmt::Debug for TursoStmt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TursoStmt")
            .field("columns", &self.desc.columns)
            .finish()
    }
}

impl WingStmt for TursoStmt {
    fn columns(&self) -> &Arc<Columns> {
        &self.desc.columns
    }

    /// From the program Turso compiled for a query or DML statement (a `SELECT` that calls
    /// `nextval()`, directly or through a view, writes); every other statement counts as a write
    /// (see `session.rs`).
    fn writes(&self) -> bool {
        self.effects.writes
    }
}

impl TursoStmt {
    /// Checks the parameter count (Turso would bind missing parameters as NULL).
    pub(super) fn check(&self, p: &[RowValues]) -> Result<()> {
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
