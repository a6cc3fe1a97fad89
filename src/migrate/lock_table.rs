//! The lock table: the lock of a migration run on a cluster whose named locks are per node (a
//! Galera cluster, where `GET_LOCK` on one node does not stop a runner on another). One row
//! holds the lock: inserting it takes the lock, the primary key keeps a second runner out, and
//! its expiry lets the next runner take over from one that died. The holder renews the expiry
//! after each migration.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::lock::{LockSpec, pause};
use crate::connection::MiddlewarePoolConnection;
use crate::error::{ErrorKind, Result};
use crate::value::RowValues;

/// Whether to keep runners apart with the lock table rather than the engine's named lock (on
/// the engines that hold a named lock for the run: MySQL and MariaDB).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LockTable {
    /// The lock table where the server is a Galera node (`wsrep_on`), the named lock elsewhere.
    #[default]
    Auto,
    /// Always the lock table.
    Always,
    /// Always the named lock.
    Never,
}

/// How long a taken lock lasts without renewal unless `Migrator::lock_ttl` sets another: past
/// it, a runner that died is assumed gone and another may take over.
pub const DEFAULT_LOCK_TTL: Duration = Duration::from_secs(15 * 60);

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The lock table's name, beside the history table.
fn name(spec: &LockSpec<'_>) -> String {
    format!("{}_lock", spec.table)
}

/// Whether the server says it is a cluster node whose named locks are per node.
pub(crate) async fn is_cluster(conn: &mut MiddlewarePoolConnection, sql: &str) -> bool {
    // A server without the variable (MySQL itself) is no Galera node.
    matches!(
        conn.query(sql).one::<(Option<i64>,)>().await,
        Ok((Some(1),))
    )
}

/// A write that lost to another runner's (a certification conflict on a cluster, a lock wait).
fn contended(e: &crate::error::SqlMiddlewareDbError) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Deadlock | ErrorKind::SerializationFailure | ErrorKind::Busy
    )
}

/// Takes the lock table's row for `owner`, waiting at most the spec's wait.
pub(crate) async fn acquire(
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    owner: &str,
    ttl: Duration,
) -> Result<()> {
    let table = name(spec);
    conn.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {table} (id BIGINT NOT NULL PRIMARY KEY, owner VARCHAR(64) NOT NULL, expires_ms BIGINT NOT NULL)"
    ))
    .await?;
    let deadline = Instant::now() + spec.wait;
    loop {
        // A lock past its expiry belonged to a runner that died. Runners on other cluster nodes
        // may delete it at the same time: the loser's certification conflict is another try.
        let cleared = conn
            .query(&format!(
                "DELETE FROM {table} WHERE id = 1 AND expires_ms < $1"
            ))
            .params(&[RowValues::Int(now_ms())])
            .dml()
            .await;
        match cleared {
            Ok(_) => {}
            Err(e) if contended(&e) => {
                pause(spec, deadline).await?;
                continue;
            }
            Err(e) => return Err(e),
        }
        let taken = conn
            .query(&format!(
                "INSERT INTO {table} (id, owner, expires_ms) VALUES (1, $1, $2)"
            ))
            .params(&[
                RowValues::Text(owner.to_owned()),
                RowValues::Int(now_ms().saturating_add(ms(ttl))),
            ])
            .dml()
            .await;
        match taken {
            Ok(_) => return Ok(()),
            // Another runner holds it (a certification conflict on a cluster says the same).
            Err(e) if e.kind() == ErrorKind::UniqueViolation || contended(&e) => {
                pause(spec, deadline).await?;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Renews the expiry of the lock `owner` holds.
pub(crate) async fn renew(
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    owner: &str,
    ttl: Duration,
) -> Result<()> {
    conn.query(&format!(
        "UPDATE {} SET expires_ms = $1 WHERE id = 1 AND owner = $2",
        name(spec)
    ))
    .params(&[
        RowValues::Int(now_ms().saturating_add(ms(ttl))),
        RowValues::Text(owner.to_owned()),
    ])
    .dml()
    .await
    .map(drop)
}

/// Releases the lock `owner` holds.
pub(crate) async fn release(
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
    owner: &str,
) -> Result<()> {
    conn.query(&format!(
        "DELETE FROM {} WHERE id = 1 AND owner = $1",
        name(spec)
    ))
    .params(&[RowValues::Text(owner.to_owned())])
    .dml()
    .await
    .map(drop)
}
