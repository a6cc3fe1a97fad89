//! A server-side prepared statement and its columns, and the parameter checks made before a
//! statement is sent.

use std::sync::Arc;

use crate::contract::WingStmt;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::Columns;
use crate::sql::scanner::{Dialect, Kind};
use crate::value::RowValues;

/// The most parameters one Postgres statement can take (the protocol counts them in 16 bits).
pub(super) const MAX_PARAMS: usize = 65_535;

/// A server-side prepared statement and its columns.
#[derive(Debug)]
pub(crate) struct PgStmt {
    /// The SQL as the caller wrote it: the statement cache's key, with `mode`.
    pub(super) key: Box<str>,
    pub(super) mode: crate::translation::TranslationMode,
    pub(super) stmt: tokio_postgres::Statement,
    pub(super) columns: Arc<Columns>,
    /// It changes rows, so the command tag counts changed rows.
    pub(super) dml: bool,
    /// What running it changes in the session (`SET`, temporary tables, …).
    pub(super) session: crate::sql::Session,
    /// It holds transaction control (`BEGIN`, `COMMIT`, …).
    pub(super) tx_control: bool,
}

impl WingStmt for PgStmt {
    fn columns(&self) -> &Arc<Columns> {
        &self.columns
    }

    /// DML writes (also with `RETURNING`), and so may any statement that returns no rows; a
    /// query that returns rows is treated as a read (a data-changing CTE counts as DML).
    fn writes(&self) -> bool {
        self.dml || self.columns.is_empty()
    }
}

/// A statement with more than 65,535 placeholders cannot be prepared (the protocol counts
/// parameter types in 16 bits; the server's answer is unreadable). Only long SQL can hold that
/// many, so short statements are not scanned.
pub(super) fn too_many_placeholders(sql: &str) -> Result<()> {
    if sql.len() <= 2 * MAX_PARAMS {
        return Ok(());
    }
    let max = crate::sql::scanner::tokens(sql, Dialect::Postgres)
        .filter(|t| t.kind == Kind::Placeholder)
        .map(|t| sql[t.start + 1..t.end].parse().unwrap_or(usize::MAX))
        .max()
        .unwrap_or(0);
    if max > MAX_PARAMS {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::ParameterCount,
            format!(
                "the statement has placeholders up to ${max}; Postgres accepts at most {MAX_PARAMS} per statement"
            ),
        ));
    }
    Ok(())
}

impl PgStmt {
    /// Checks the parameter count before anything is sent: the server's answer to a wrong count
    /// (or to more than 65,535) is hard to read.
    pub(super) fn check(&self, p: &[RowValues]) -> Result<()> {
        if p.len() > MAX_PARAMS {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::ParameterCount,
                format!(
                    "{} parameters were given; Postgres accepts at most {MAX_PARAMS} per statement (split the statement or use UNNEST with arrays)",
                    p.len()
                ),
            ));
        }
        let expected = self.stmt.params().len();
        if expected != p.len() {
            return Err(SqlMiddlewareDbError::parameter_count(expected, p.len()));
        }
        Ok(())
    }
}
