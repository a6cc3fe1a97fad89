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

/// A migration's text, read one statement at a time, each as the session reads quotes when it
/// comes to run: an earlier statement of the same file may change that (`SET
/// standard_conforming_strings = off` on Postgres, a `sql_mode` quote flag on MySQL), and a
/// script split in one go with the rules from before would be cut inside a string. Each wing
/// reads such a setting again after the statement that changed it, so the connection's dialect
/// is current between statements.
pub(crate) struct Script {
    text: String,
    /// Where the unread part starts.
    at: usize,
    /// Statements handed out so far.
    n: usize,
}

impl Script {
    pub(crate) fn new(text: &str) -> Self {
        Script {
            text: super::checksum::normalise(text),
            at: 0,
            n: 0,
        }
    }

    /// The next statement that is not blank (comments only), with its number from 1, read in
    /// `d`; `None` at the end.
    pub(crate) fn next(&mut self, d: Dialect) -> Option<(usize, &str)> {
        loop {
            let rest = &self.text[self.at..];
            let stmt = crate::sql::script::statements(rest, d).next()?;
            let start = self.at;
            // The statements of a text concatenate to it: this one ends where the next starts.
            self.at += stmt.len();
            if !crate::sql::is_blank(stmt, d) {
                self.n += 1;
                return Some((self.n, &self.text[start..self.at]));
            }
        }
    }
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

/// Runs the statements of `text` one by one outside a transaction; on a failure records the
/// migration dirty with the statement that failed, and returns the error.
pub(crate) async fn run_outside(
    conn: &mut MiddlewarePoolConnection,
    table: &str,
    version: i64,
    file: &str,
    text: &str,
) -> Result<()> {
    let mut script = Script::new(text);
    while let Some((i, stmt)) = script.next(conn.dialect()) {
        if let Err(e) = conn.execute_batch(stmt).await {
            let err = failed(file, i, stmt, &e);
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
    let Some(mut tx) = begin_locked(conn, spec, deadline).await? else {
        return Ok(Step::Busy);
    };
    match history::one(&mut tx, spec.table, m.version).await? {
        Some(row) if row.success => return Ok(Step::Done(false)),
        Some(row) => return Ok(Step::Dirty(row)),
        None => {}
    }
    let started = Instant::now();
    let mut script = Script::new(&m.up);
    while let Some((i, stmt)) = script.next(tx.conn.dialect()) {
        // The transaction is rolled back when dropped, on the error path.
        tx.execute_batch(stmt)
            .await
            .map_err(|e| failed(&m.file_name, i, stmt, &e))?;
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
                run_outside(conn, spec.table, m.version, &m.file_name, &m.up).await?;
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
        run_outside(conn, table, m.version, &m.file_name, &m.up).await?;
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

#[cfg(test)]
mod tests {
    use super::Script;
    use crate::sql::Dialect;
    use crate::sql::scanner::Lexer;

    /// Dollar quotes, with (`true`) or without backslash escapes in plain strings.
    fn of_session(backslash_strings: bool) -> Dialect {
        Dialect {
            lexer: if backslash_strings {
                Lexer::DollarQuotesBackslashStrings
            } else {
                Lexer::DollarQuotes
            },
            ident_quote: '"',
            folds_to_lower: true,
            outside_tx_only: |_| None,
        }
    }

    /// Each statement is read with the dialect given when it is asked for, so a setting an
    /// earlier statement changed decides where the next one ends.
    #[test]
    fn each_statement_is_read_in_the_dialect_of_its_turn() {
        let text = "SET standard_conforming_strings = off;\n-- only a comment;\nINSERT INTO t VALUES ('a\\';b');\nSELECT 1";
        let mut s = Script::new(text);
        let (i, first) = s.next(of_session(false)).expect("first");
        assert_eq!((i, first), (1, "SET standard_conforming_strings = off;"));
        let (i, second) = s.next(of_session(true)).expect("second");
        assert_eq!(i, 2);
        assert!(second.ends_with("VALUES ('a\\';b');"), "{second:?}");
        let (i, third) = s.next(of_session(true)).expect("third");
        assert_eq!((i, third.trim()), (3, "SELECT 1"));
        assert!(s.next(of_session(true)).is_none());

        // Read with the standard rules, the same text is cut inside the string.
        let mut s = Script::new(text);
        s.next(of_session(false));
        let (_, cut) = s.next(of_session(false)).expect("second");
        assert!(cut.ends_with("VALUES ('a\\';"), "{cut:?}");
    }
}
