//! Once per server and process: the connection bound of its test databases (the configured
//! one, lowered to what the server has free) and the removal of orphans left by earlier runs.

use std::collections::HashMap;
use std::sync::{Mutex, Once, OnceLock};

use super::target;
use super::{DEFAULT_MAX_CONNECTIONS, MAX_CONNECTIONS_ENV, names, slots};
use crate::config::ConfigAndPool;
use crate::contract::{TestDbRules, TestDbSql};
use crate::error::Result;

/// Connections left free for everything else on the server (administration, other clients).
const RESERVE: i64 = 4;

/// The bound on the test databases' connections on server `key`, computed on first use in
/// this process (when the orphans of the server are removed too).
pub(crate) async fn for_server(
    sql: &TestDbSql,
    key: &str,
    url: &str,
    configured: Option<usize>,
) -> Result<usize> {
    static BOUNDS: OnceLock<Mutex<HashMap<String, usize>>> = OnceLock::new();
    static FIRST: OnceLock<tokio::sync::Mutex<()>> = OnceLock::new();
    let wanted = configured
        .or_else(|| {
            std::env::var(MAX_CONNECTIONS_ENV)
                .ok()
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(DEFAULT_MAX_CONNECTIONS)
        .max(2);
    let cache = BOUNDS.get_or_init(Default::default);
    let cached = || {
        cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(key)
            .copied()
    };
    if let Some(free) = cached() {
        return Ok(wanted.min(free).max(2));
    }
    // One task of the process asks the server, on a connection that holds a slot too.
    let _first = FIRST.get_or_init(Default::default).lock().await;
    if let Some(free) = cached() {
        return Ok(wanted.min(free).max(2));
    }
    let slot = slots::acquire(key, 1, wanted).await?;
    let admin = target::admin(url).await?;
    let swept = remove_server_orphans(sql, &admin).await;
    let free = free_connections(sql, &admin).await;
    admin.close();
    drop(admin);
    drop(slot);
    swept?;
    let free = free?;
    cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(key.to_owned(), free);
    Ok(wanted.min(free).max(2))
}

/// The connections the server allows that neither others nor the reserve use (test
/// databases' own connections excluded: they are what the bound shares out).
async fn free_connections(sql: &TestDbSql, admin: &ConfigAndPool) -> Result<usize> {
    let mut conn = admin.get_connection().await?;
    let (free,): (i64,) = conn.query(sql.free_connections).one().await?;
    Ok(usize::try_from(free - RESERVE).unwrap_or(0))
}

async fn remove_server_orphans(sql: &TestDbSql, admin: &ConfigAndPool) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for name in target::list_server(sql, admin).await? {
        if names::is_orphan(&name) {
            target::drop_server(sql, admin, &name).await?;
            removed.push(name);
        }
    }
    Ok(removed)
}

fn remove_file_orphans() -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for name in target::list_files() {
        if names::is_orphan(&name) {
            target::remove_files(&name)?;
            removed.push(name);
        }
    }
    Ok(removed)
}

/// Removes the orphan test files once per process (a failure leaves them for a later run).
pub(crate) fn sweep_files_once() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = remove_file_orphans();
    });
}

/// What [`super::TestDatabase::remove_orphans`] does.
pub(crate) async fn remove_orphans(rules: TestDbRules, url: &str) -> Result<Vec<String>> {
    let Some(sql) = rules.server else {
        return remove_file_orphans();
    };
    let admin = target::admin(url).await?;
    let removed = remove_server_orphans(&sql, &admin).await;
    admin.close();
    removed
}
