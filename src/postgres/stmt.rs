//! A server-side prepared statement and its columns, and the parameter checks made before a
//! statement is sent.

use std::sync::{Arc, OnceLock};

use crate::contract::WingStmt;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::Columns;
use crate::sql::scanner::Kind;
use crate::value::RowValues;

/// The most parameters one Postgres statement can take (the protocol counts them in 16 bits).
pub(super) const MAX_PARAMS: usize = 65_535;

/// A server-side prepared statement and its columns.
#[derive(Debug)]
pub(crate) struct PgStmt {
    /// The SQL as the caller wrote it: the statement cache's key, with `mode`.
    pub(super) key: Box<str>,
    pub(super) mode: crate::translation::TranslationMode,
    /// The SQL as sent (after translation): what the unnamed statement parses on every run.
    pub(super) text: Box<str>,
    /// The parameter types the server inferred when the statement was described.
    pub(super) param_types: Vec<tokio_postgres::types::Type>,
    /// The server-side named statement; `None` in the unnamed mode
    /// ([`crate::StatementCache::Unnamed`]), where every run parses the text again.
    pub(super) stmt: Option<tokio_postgres::Statement>,
    pub(super) columns: Arc<Columns>,
    /// It changes rows, so the command tag counts changed rows.
    pub(super) dml: bool,
    /// What running it may change in the session (anything but a plain statement, see
    /// `crate::sql::pg_effects`).
    pub(super) session: super::effects::Session,
    /// Prepared while the session was as the pool configured it (so a reset leaves it valid).
    pub(super) clean: bool,
    /// It deallocates prepared statements (`DEALLOCATE`, `DISCARD ALL`).
    pub(super) deallocates: bool,
    /// It holds transaction control (`BEGIN`, `COMMIT`, …).
    pub(super) tx_control: bool,
    /// The statement prepared in its place after the server refused its cached plan (a schema
    /// change altered its result type): a handle held across the change runs that one from then
    /// on, instead of being refused and prepared again on every call.
    pub(super) successor: OnceLock<Arc<PgStmt>>,
    /// The connection it was prepared on (`PgClient::id`): a handle held across a connection's
    /// replacement (after a time limit, or a lost connection) is prepared again on the new one.
    pub(super) conn: u64,
}

impl WingStmt for PgStmt {
    fn columns(&self) -> &Arc<Columns> {
        &self.columns
    }

    /// DML writes (also with `RETURNING`), and so may any statement that returns no rows, and
    /// any statement whose effects its text does not prove read-only: a call of a function
    /// other than the known built-ins, `DO`, `CALL` (see `crate::sql::pg_effects`). Only a
    /// plain query that returns rows is a read (a data-changing CTE counts as DML).
    fn writes(&self) -> bool {
        self.dml || self.columns.is_empty() || self.session != super::effects::Session::Untouched
    }
}

/// A statement with more than 65,535 placeholders cannot be prepared (the protocol counts
/// parameter types in 16 bits; the server's answer is unreadable). Only long SQL can hold that
/// many, so short statements are not scanned.
pub(super) fn too_many_placeholders(sql: &str) -> Result<()> {
    if sql.len() <= 2 * MAX_PARAMS {
        return Ok(());
    }
    let max = crate::sql::scanner::tokens(sql, super::dialect::DIALECT)
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
    /// The statement to run for `s`: `s` itself, or the last statement prepared in its place.
    #[inline]
    pub(super) fn current(s: &Arc<PgStmt>) -> &Arc<PgStmt> {
        let mut s = s;
        while let Some(next) = s.successor.get() {
            s = next;
        }
        s
    }

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
        let expected = self.param_types.len();
        if expected != p.len() {
            return Err(SqlMiddlewareDbError::parameter_count(expected, p.len()));
        }
        Ok(())
    }
}

pub use crate::server::StatementCache;
