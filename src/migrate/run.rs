//! Applying migrations: each in its own locked transaction where the engine rolls back DDL,
//! statement by statement under the session's lock where it does not (a failure then leaves the
//! migration recorded as dirty, with the statement that failed), and outside a transaction for
//! a file with the no-transaction directive.

use std::time::Instant;

use super::lock::{LockSpec, SessionLock, begin_locked, renew_session};
use super::source::Migration;
use super::status::one_line;
use super::{Event, Migrator, history};
use crate::connection::MiddlewarePoolConnection;
use crate::error::{Result, SqlMiddlewareDbError};
use crate::sql::Dialect;

/// What one locked step found.
pub(crate) enum Step<T> {
    /// The lock is busy: try again.
    Busy,
    /// The migration is dirty (another runner may be applying it outside a transaction).
    Dirty(history::AppliedMigration),
    /// Done.
    Done(T),
}

/// The statements of `text`, as the engine reads them, without blank ones (comments only).
pub(crate) fn statements(text: &str, d: Dialect) -> Vec<String> {
    let text = super::checksum::normalise(text);
    crate::sql::script::statements(&text, d)
        .filter(|s| !crate::sql::is_blank(s, d))
        .map(str::to_owned)
        .collect()
}

/// The error of statement `i` (from 1) of `file`, keeping the engine error's kind.
pub(crate) fn failed(
    file: &str,
    i: usize,
    stmt: &str,
    e: &SqlMiddlewareDbError,
) -> SqlMiddlewareDbError {
    let hint = if e.kind() == crate::error::ErrorKind::TransactionState {
        format!(
            " (a statement the engine runs only outside a transaction needs `{}` at the top of the file)",
            super::source::NO_TRANSACTION
        )
    } else {
        String::new()
    };
    SqlMiddlewareDbError::new(
        e.kind(),
        format!(
            "migration file {file}, statement {i} failed: {}{hint}; statement: {}",
            e.message(),
            one_line(stmt)
        ),
    )
}

/// Runs `stmts` one by one outside a transaction; on a failure records the migration dirty with
/// the statement that failed, and returns the error.
pub(crate) async fn run_outside(
    conn: &mut MiddlewarePoolConnection,
    table: &str,
    version: i64,
    file: &str,
    stmts: &[String],
) -> Result<()> {
    for (i, stmt) in stmts.iter().enumerate() {
        if let Err(e) = conn.execute_batch(stmt).await {
            let err = failed(file, i + 1, stmt, &e);
            history::mark_dirty(conn, table, version, stmt).await?;
            return Err(err);
        }
    }
    Ok(())
}

/// Applies `m` in one locked transaction: `Done(true)` when this runner applied it,
/// `Done(false)` when the history already had it.
async fn apply_in_tx(
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    m: &Migration,
    deadline: Instant,
) -> Result<Step<bool>> {
    let d = conn.dialect();
    let Some(mut tx) = begin_locked(conn, spec, deadline).await? else {
        return Ok(Step::Busy);
    };
    match history::one(&mut tx, spec.table, m.version).await? {
        Some(row) if row.success => return Ok(Step::Done(false)),
        Some(row) => return Ok(Step::Dirty(row)),
        None => {}
    }
    let started = Instant::now();
    for (i, stmt) in statements(&m.up, d).iter().enumerate() {
        // The transaction is rolled back when dropped, on the error path.
        tx.execute_batch(stmt)
            .await
            .map_err(|e| failed(&m.file_name, i + 1, stmt, &e))?;
    }
    history::insert(&mut tx, spec.table, m, started.elapsed(), true).await?;
    tx.commit().await?;
    Ok(Step::Done(true))
}

/// Claims `m` for this runner in one locked transaction, recording it dirty until it finishes:
/// `Done(true)` when claimed, `Done(false)` when the history already had it applied.
async fn claim(
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    m: &Migration,
    deadline: Instant,
) -> Result<Step<bool>> {
    let Some(mut tx) = begin_locked(conn, spec, deadline).await? else {
        return Ok(Step::Busy);
    };
    match history::one(&mut tx, spec.table, m.version).await? {
        Some(row) if row.success => return Ok(Step::Done(false)),
        Some(row) => return Ok(Step::Dirty(row)),
        None => {}
    }
    history::insert(&mut tx, spec.table, m, std::time::Duration::ZERO, false).await?;
    tx.commit().await?;
    Ok(Step::Done(true))
}

/// Runs a locked step until it is done, waiting while the lock is busy or while another runner
/// applies the migration outside a transaction; past the wait, a busy lock or a dirty migration
/// is an error.
macro_rules! until_done {
    ($spec:expr, $at:ident => $step:expr) => {{
        let deadline = std::time::Instant::now() + $spec.wait;
        loop {
            let $at = deadline;
            match $step.await? {
                $crate::migrate::run::Step::Done(v) => break v,
                $crate::migrate::run::Step::Busy => {
                    $crate::migrate::lock::pause($spec, deadline).await?
                }
                $crate::migrate::run::Step::Dirty(row) => {
                    if std::time::Instant::now() >= deadline {
                        return Err($crate::migrate::status::dirty_error(
                            row.version,
                            &row.name,
                            row.failed_statement.as_deref(),
                        ));
                    }
                    $crate::migrate::lock::pause($spec, deadline).await?;
                }
            }
        }
    }};
}
pub(crate) use until_done;

/// Applies the pending migrations of `list` on an engine with transactional DDL.
pub(crate) async fn apply_transactional(
    mg: &Migrator,
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    list: &[&Migration],
) -> Result<Vec<i64>> {
    let mut applied = Vec::new();
    for m in list {
        mg.tell(Event::Applying {
            version: m.version,
            name: &m.name,
        });
        let started = Instant::now();
        let did = if m.no_transaction {
            let claimed = until_done!(spec, at => claim(conn, spec, m, at));
            if claimed {
                let stmts = statements(&m.up, conn.dialect());
                run_outside(conn, spec.table, m.version, &m.file_name, &stmts).await?;
                history::finish(conn, spec.table, m.version, &m.checksum, started.elapsed())
                    .await?;
            }
            claimed
        } else {
            until_done!(spec, at => apply_in_tx(conn, spec, m, at))
        };
        if did {
            applied.push(m.version);
        }
        mg.tell(Event::Applied {
            version: m.version,
            name: &m.name,
            took: started.elapsed(),
            by_this_runner: did,
        });
    }
    Ok(applied)
}

/// Applies the pending migrations of `list` under the session's lock, on an engine whose DDL
/// commits implicitly: each is recorded dirty first, run statement by statement, then marked
/// applied.
pub(crate) async fn apply_in_session(
    mg: &Migrator,
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    held: &SessionLock,
    list: &[&Migration],
) -> Result<Vec<i64>> {
    let table = spec.table;
    let mut applied = Vec::new();
    for m in list {
        renew_session(conn, spec, held, mg.lock_ttl).await?;
        mg.tell(Event::Applying {
            version: m.version,
            name: &m.name,
        });
        let started = Instant::now();
        history::insert(conn, table, m, std::time::Duration::ZERO, false).await?;
        let stmts = statements(&m.up, conn.dialect());
        run_outside(conn, table, m.version, &m.file_name, &stmts).await?;
        history::finish(conn, table, m.version, &m.checksum, started.elapsed()).await?;
        applied.push(m.version);
        mg.tell(Event::Applied {
            version: m.version,
            name: &m.name,
            took: started.elapsed(),
            by_this_runner: true,
        });
    }
    Ok(applied)
}

/// Makes sure the history table exists and reads it, inside one locked transaction.
pub(crate) async fn read_locked(
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    deadline: Instant,
) -> Result<Step<Vec<history::AppliedMigration>>> {
    let Some(mut tx) = begin_locked(conn, spec, deadline).await? else {
        return Ok(Step::Busy);
    };
    history::ensure(&mut tx, spec.table).await?;
    let rows = history::read(&mut tx, spec.table).await?;
    tx.commit().await?;
    Ok(Step::Done(rows))
}
