//! Reverting migrations with their down files (newest first), and repairing a dirty one.

use std::time::Instant;

use super::lock::{LockSpec, SessionLock, begin_locked, pause, renew_session};
use super::run::{Script, Step, failed, run_outside, until_done};
use super::source::Migration;
use super::status::dirty_error;
use super::{Event, Migrator, Repair, history};
use crate::connection::MiddlewarePoolConnection;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::executor::Executor;
use crate::value::RowValues;

/// The down file of `m`, or the error that names the migration without one.
pub(crate) fn down_of(m: &Migration) -> Result<&(String, String)> {
    m.down.as_ref().ok_or_else(|| {
        SqlMiddlewareDbError::new(
            ErrorKind::InvalidInput,
            format!(
                "migration {} has no down file ({}), so it cannot be reverted",
                m.file_name,
                m.file_name
                    .strip_suffix(".sql")
                    .map_or_else(|| m.file_name.clone(), |b| format!("{b}.down.sql"))
            ),
        )
    })
}

/// Reverts `m` in one locked transaction: `Done(true)` when this runner reverted it.
async fn revert_in_tx(
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    m: &Migration,
    deadline: Instant,
) -> Result<Step<bool>> {
    let (file, text) = down_of(m)?;
    let Some(mut tx) = begin_locked(conn, spec, deadline).await? else {
        return Ok(Step::Busy);
    };
    match history::one(&mut tx, spec.table, m.version).await? {
        None => return Ok(Step::Done(false)),
        Some(row) if !row.success => return Ok(Step::Dirty(row)),
        Some(_) => {}
    }
    let mut script = Script::new(text);
    while let Some((i, stmt)) = script.next(tx.conn.dialect()) {
        tx.execute_batch(stmt)
            .await
            .map_err(|e| failed(file, i, stmt, &e))?;
    }
    history::remove(&mut tx, spec.table, m.version).await?;
    tx.commit().await?;
    Ok(Step::Done(true))
}

/// Reverts `list` (newest first) on an engine with transactional DDL.
pub(crate) async fn revert_transactional(
    mg: &Migrator,
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    list: &[&Migration],
) -> Result<Vec<i64>> {
    let mut reverted = Vec::new();
    for m in list {
        mg.tell(Event::Reverting {
            version: m.version,
            name: &m.name,
        });
        let started = Instant::now();
        if until_done!(spec, at => revert_in_tx(conn, spec, m, at)) {
            reverted.push(m.version);
        }
        mg.tell(Event::Reverted {
            version: m.version,
            name: &m.name,
            took: started.elapsed(),
        });
    }
    Ok(reverted)
}

/// Reverts `list` (newest first) under the session's lock, statement by statement: the row is
/// marked dirty while the down file runs, and removed once it succeeded.
pub(crate) async fn revert_in_session(
    mg: &Migrator,
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    held: &SessionLock,
    list: &[&Migration],
) -> Result<Vec<i64>> {
    let table = spec.table;
    let mut reverted = Vec::new();
    for m in list {
        renew_session(conn, spec, held, mg.lock_ttl).await?;
        let (file, text) = down_of(m)?;
        mg.tell(Event::Reverting {
            version: m.version,
            name: &m.name,
        });
        let started = Instant::now();
        conn.query(&format!(
            "UPDATE {table} SET success = 0 WHERE version = $1"
        ))
        .params(&[RowValues::Int(m.version)])
        .dml()
        .await?;
        run_outside(conn, table, m.version, file, text).await?;
        history::remove(conn, table, m.version).await?;
        reverted.push(m.version);
        mg.tell(Event::Reverted {
            version: m.version,
            name: &m.name,
            took: started.elapsed(),
        });
    }
    Ok(reverted)
}

/// Resolves the dirty migration `version` on `db` (which holds the lock).
pub(crate) async fn repair_row(
    db: &mut impl Executor,
    table: &str,
    version: i64,
    how: Repair,
    checksum: Option<&str>,
) -> Result<()> {
    let Some(row) = history::one(db, table, version).await? else {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::InvalidInput,
            format!("migration {version} is not in the history table: nothing to repair"),
        ));
    };
    if row.success {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::InvalidInput,
            format!(
                "migration {version} ({}) is not dirty: nothing to repair",
                row.name
            ),
        ));
    }
    match how {
        Repair::MarkApplied => {
            let sum = checksum.unwrap_or(&row.checksum);
            history::finish(db, table, version, sum, std::time::Duration::ZERO).await
        }
        Repair::Forget => history::remove(db, table, version).await,
    }
}

/// [`repair_row`] inside one locked transaction.
pub(crate) async fn repair_in_tx(
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    version: i64,
    how: Repair,
    checksum: Option<&str>,
) -> Result<()> {
    let deadline = Instant::now() + spec.wait;
    loop {
        if let Some(mut tx) = begin_locked(conn, spec, deadline).await? {
            repair_row(&mut tx, spec.table, version, how, checksum).await?;
            return tx.commit().await;
        }
        pause(spec, deadline).await?;
    }
}

/// The error of a dirty migration found among the applied ones.
pub(crate) fn refuse_dirty(rows: &[history::AppliedMigration]) -> Result<()> {
    match rows.iter().find(|r| !r.success) {
        Some(r) => Err(dirty_error(
            r.version,
            &r.name,
            r.failed_statement.as_deref(),
        )),
        None => Ok(()),
    }
}
