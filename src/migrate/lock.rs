//! The lock of a migration run, as the engine's rules say (`MigrateRules` in `contract.rs`):
//! a transaction-scoped lock taken first in each migration's transaction (Postgres), the write
//! transaction itself (SQLite, Turso), or a named lock the session holds for the whole run
//! (MySQL). Every wait is bounded; a runner that dies releases its lock with its transaction
//! or its session.

use std::time::{Duration, Instant};

use super::lock_table::{self, LockTable};
use crate::connection::MiddlewarePoolConnection;
use crate::contract::MigrateLock;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::transaction::Tx;
use crate::value::RowValues;

/// How often a runner asks again for a lock another runner holds.
const POLL: Duration = Duration::from_millis(20);

/// What a runner needs to take its lock: the history table (which names the lock), the
/// engine's lock, and how long to wait for it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LockSpec<'a> {
    pub(crate) table: &'a str,
    pub(crate) lock: MigrateLock,
    pub(crate) wait: Duration,
}

impl LockSpec<'_> {
    /// The name of the lock, the same for every runner on the same history table (short enough
    /// for MySQL's 64-character limit on lock names, whatever the table's name).
    fn name(&self) -> String {
        format!(
            "sql_middleware_migrate_{:016x}",
            super::checksum::key_of(self.table)
        )
    }

    /// The error of a wait that ran out.
    pub(crate) fn timed_out(&self) -> SqlMiddlewareDbError {
        SqlMiddlewareDbError::new(
            ErrorKind::Busy,
            format!(
                "another migration runner held the lock on {} for longer than the wait ({} ms)",
                self.table,
                self.wait.as_millis()
            ),
        )
    }
}

/// Waits a little before the next try, or fails once `deadline` has passed.
pub(crate) async fn pause(spec: &LockSpec<'_>, deadline: Instant) -> Result<()> {
    if Instant::now() >= deadline {
        return Err(spec.timed_out());
    }
    tokio::time::sleep(POLL).await;
    Ok(())
}

/// Begins a transaction that holds the migration lock, or `None` when the lock is busy right
/// now (the caller tries again until its deadline). With a session lock the session already
/// holds it, and the transaction is a plain one.
pub(crate) async fn begin_locked<'c>(
    conn: &'c mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    deadline: Instant,
) -> Result<Option<Tx<'c>>> {
    let mut tx = match conn.begin().await {
        Ok(tx) => tx,
        // SQLite and Turso: `BEGIN IMMEDIATE` waited the busy timeout for the write lock.
        Err(e) if e.kind() == ErrorKind::Busy => return Ok(None),
        Err(e) => return Err(e),
    };
    if let MigrateLock::InTransaction { try_sql } = spec.lock {
        let key = super::checksum::key_of(&spec.name());
        loop {
            let (held,): (bool,) = tx
                .query(try_sql)
                .params(&[RowValues::Int(key)])
                .one()
                .await?;
            if held {
                break;
            }
            if Instant::now() >= deadline {
                tx.rollback().await?;
                return Ok(None);
            }
            tokio::time::sleep(POLL).await;
        }
    }
    Ok(Some(tx))
}

/// The lock a session holds for a run: the engine's named lock, or the lock table's row.
#[derive(Debug)]
pub(crate) enum SessionLock {
    /// The engine's named lock.
    Named,
    /// The lock table's row, with its owner's name.
    Table(String),
}

/// A name for this runner, unique enough to tell runners apart in the lock table.
fn owner() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{:x}-{:x}-{:x}",
        std::process::id(),
        nanos,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Takes the session's lock for a run, waiting at most the spec's wait: the engine's named lock,
/// or the lock table where `mode` says so (or, with `Auto`, where the server is a cluster node).
pub(crate) async fn acquire_session(
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    mode: LockTable,
    ttl: Duration,
) -> Result<SessionLock> {
    let MigrateLock::Session {
        acquire_sql,
        cluster_sql,
        ..
    } = spec.lock
    else {
        return Ok(SessionLock::Named);
    };
    let table = match mode {
        LockTable::Always => true,
        LockTable::Never => false,
        LockTable::Auto => lock_table::is_cluster(conn, cluster_sql).await,
    };
    if table {
        let me = owner();
        lock_table::acquire(conn, spec, &me, ttl).await?;
        return Ok(SessionLock::Table(me));
    }
    let secs = i64::try_from(spec.wait.as_millis().div_ceil(1000)).unwrap_or(i64::MAX);
    let (got,): (Option<i64>,) = conn
        .query(acquire_sql)
        .params(&[RowValues::Text(spec.name()), RowValues::Int(secs)])
        .one()
        .await?;
    match got {
        Some(1) => Ok(SessionLock::Named),
        _ => Err(spec.timed_out()),
    }
}

/// Renews a lock table's row (a named lock needs nothing).
pub(crate) async fn renew_session(
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    held: &SessionLock,
    ttl: Duration,
) -> Result<()> {
    match held {
        SessionLock::Named => Ok(()),
        SessionLock::Table(me) => lock_table::renew(conn, spec, me, ttl).await,
    }
}

/// Releases the session's lock (taken by [`acquire_session`]).
pub(crate) async fn release_session(
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    held: &SessionLock,
) -> Result<()> {
    if let SessionLock::Table(me) = held {
        return lock_table::release(conn, spec, me).await;
    }
    if let MigrateLock::Session { release_sql, .. } = spec.lock {
        let _: (Option<i64>,) = conn
            .query(release_sql)
            .params(&[RowValues::Text(spec.name())])
            .one()
            .await?;
    }
    Ok(())
}
