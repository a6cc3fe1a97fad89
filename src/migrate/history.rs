//! The history table: one row per migration applied (or being applied), with its checksum, when
//! it was applied, how long it took, whether it succeeded and, when it did not on an engine
//! without transactional DDL, the statement that failed. One table definition serves every
//! engine.

use std::time::{Duration, SystemTime};

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::executor::Executor;
use crate::value::RowValues;

/// The longest failed statement kept in the history table, in characters.
const FAILED_STATEMENT_KEPT: usize = 2000;

/// One row of the history table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedMigration {
    /// The migration's version.
    pub version: i64,
    /// The migration's name.
    pub name: String,
    /// The SHA-256 of its text (hexadecimal), line endings and byte-order mark normalised.
    pub checksum: String,
    /// When it was applied (RFC 3339, UTC).
    pub applied_at: String,
    /// How long it took, in milliseconds.
    pub duration_ms: i64,
    /// Whether it finished; `false` marks a migration that failed part-way, or that a runner
    /// is applying outside a transaction right now (a dirty migration).
    pub success: bool,
    /// The statement that failed, for a dirty migration whose failure was recorded.
    pub failed_statement: Option<String>,
}

/// Checks that `table` is a plain identifier (it is written into SQL).
pub(crate) fn check_table(table: &str) -> Result<()> {
    let ok = table.len() <= 58
        && table
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && table
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(SqlMiddlewareDbError::new(
            ErrorKind::InvalidInput,
            "the migration history table's name must be 1 to 58 ASCII letters, digits or `_`, not starting with a digit",
        ))
    }
}

/// Creates the history table when it does not exist.
pub(crate) async fn ensure(db: &mut impl Executor, table: &str) -> Result<()> {
    db.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {table} (
            version BIGINT NOT NULL PRIMARY KEY,
            name VARCHAR(255) NOT NULL,
            checksum VARCHAR(64) NOT NULL,
            applied_at VARCHAR(40) NOT NULL,
            duration_ms BIGINT NOT NULL,
            success BIGINT NOT NULL,
            failed_statement TEXT
        )"
    ))
    .await
}

type Row = (i64, String, String, String, i64, i64, Option<String>);

fn from_row(r: Row) -> AppliedMigration {
    AppliedMigration {
        version: r.0,
        name: r.1,
        checksum: r.2,
        applied_at: r.3,
        duration_ms: r.4,
        success: r.5 != 0,
        failed_statement: r.6,
    }
}

const COLUMNS: &str = "version, name, checksum, applied_at, duration_ms, success, failed_statement";

/// Every row, by version.
pub(crate) async fn read(db: &mut impl Executor, table: &str) -> Result<Vec<AppliedMigration>> {
    let rows: Vec<Row> = db
        .query(&format!("SELECT {COLUMNS} FROM {table} ORDER BY version"))
        .all()
        .await?;
    Ok(rows.into_iter().map(from_row).collect())
}

/// The row of `version`, if any.
pub(crate) async fn one(
    db: &mut impl Executor,
    table: &str,
    version: i64,
) -> Result<Option<AppliedMigration>> {
    let row: Option<Row> = db
        .query(&format!("SELECT {COLUMNS} FROM {table} WHERE version = $1"))
        .params(&[RowValues::Int(version)])
        .optional()
        .await?;
    Ok(row.map(from_row))
}

/// Now, as the history table keeps it.
pub(crate) fn now_text() -> String {
    chrono::DateTime::<chrono::Utc>::from(SystemTime::now())
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Records `version` as applied (`success`) or as being applied (dirty until [`finish`]).
pub(crate) async fn insert(
    db: &mut impl Executor,
    table: &str,
    m: &super::source::Migration,
    took: Duration,
    success: bool,
) -> Result<()> {
    db.query(&format!(
        "INSERT INTO {table} ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, NULL)"
    ))
    .params(&[
        RowValues::Int(m.version),
        RowValues::Text(m.name.clone()),
        RowValues::Text(m.checksum.clone()),
        RowValues::Text(now_text()),
        RowValues::Int(millis(took)),
        RowValues::Int(i64::from(success)),
    ])
    .dml()
    .await
    .map(drop)
}

/// Marks `version` finished: succeeded, with when and how long, and no failed statement.
pub(crate) async fn finish(
    db: &mut impl Executor,
    table: &str,
    version: i64,
    checksum: &str,
    took: Duration,
) -> Result<()> {
    db.query(&format!(
        "UPDATE {table} SET success = 1, failed_statement = NULL, checksum = $1, applied_at = $2, duration_ms = $3 WHERE version = $4"
    ))
    .params(&[
        RowValues::Text(checksum.to_owned()),
        RowValues::Text(now_text()),
        RowValues::Int(millis(took)),
        RowValues::Int(version),
    ])
    .dml()
    .await
    .map(drop)
}

/// Marks `version` dirty, with the statement that failed (cut to a bounded length).
pub(crate) async fn mark_dirty(
    db: &mut impl Executor,
    table: &str,
    version: i64,
    statement: &str,
) -> Result<()> {
    let kept: String = statement
        .trim()
        .chars()
        .take(FAILED_STATEMENT_KEPT)
        .collect();
    db.query(&format!(
        "UPDATE {table} SET success = 0, failed_statement = $1 WHERE version = $2"
    ))
    .params(&[RowValues::Text(kept), RowValues::Int(version)])
    .dml()
    .await
    .map(drop)
}

/// Removes the row of `version`.
pub(crate) async fn remove(db: &mut impl Executor, table: &str, version: i64) -> Result<()> {
    db.query(&format!("DELETE FROM {table} WHERE version = $1"))
        .params(&[RowValues::Int(version)])
        .dml()
        .await
        .map(drop)
}
