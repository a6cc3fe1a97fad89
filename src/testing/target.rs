//! Where a test database lives, and how it is made, kept, dropped and found again: a database
//! of its own on a Postgres or MySQL/MariaDB server, or a file of its own for SQLite and Turso.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::names;
use crate::config::ConfigAndPool;
use crate::contract::{TestDbRules, TestDbSql};
use crate::dispatch::Settings;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// How the engine of `url` makes test databases (the URL is read as `ConfigAndPool::from_url`
/// reads it, so a bad one fails here).
pub(crate) fn rules_of(url: &str) -> Result<TestDbRules> {
    let (scheme, rest, query) = crate::url_text::split(url.trim())?;
    match Settings::from_url(scheme, rest, query) {
        Some(parsed) => Ok(parsed?.0.testdb_rules()),
        None => Err(config(format!(
            "a test database URL names an engine of this build ({})",
            Settings::known_schemes()
        ))),
    }
}

pub(crate) fn config(msg: impl Into<String>) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(ErrorKind::Config, msg.into())
}

/// `url` with its query (after `?`) split off.
fn split_query(url: &str) -> (&str, Option<&str>) {
    match url.split_once('?') {
        Some((base, q)) => (base, Some(q)),
        None => (url, None),
    }
}

/// A server URL naming database `db` instead of its own (the query is kept).
pub(crate) fn with_database(url: &str, db: &str) -> Result<String> {
    let (base, query) = split_query(url.trim());
    let (scheme, rest) = base
        .split_once("://")
        .ok_or_else(|| config("a server URL reads scheme://user@host/database"))?;
    let authority = rest.split('/').next().unwrap_or_default();
    let mut out = format!("{scheme}://{authority}/{db}");
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    Ok(out)
}

/// A key naming the server of `url` (its host and port), for the connection slots.
pub(crate) fn server_key(url: &str) -> String {
    let (base, _) = split_query(url.trim());
    let rest = base.split_once("://").map_or(base, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    let scheme = base.split(':').next().unwrap_or_default();
    format!("{scheme}_{host}")
}

/// One connection to the server, for creating and dropping databases.
pub(crate) async fn admin(url: &str) -> Result<ConfigAndPool> {
    ConfigAndPool::from_url(url)?.max_size(1).build().await
}

/// Runs `sql` on a fresh admin connection, again for a few seconds while the server says the
/// database is still in use (a closed pool's sessions end a moment after it closes).
pub(crate) async fn run_retrying(admin: &ConfigAndPool, sql: &str) -> Result<()> {
    let started = Instant::now();
    loop {
        let mut conn = admin.get_connection().await?;
        match conn.execute_batch(sql).await {
            Err(e)
                if e.to_string().contains("being accessed by other users")
                    && started.elapsed() < Duration::from_secs(10) =>
            {
                drop(conn);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            r => return r,
        }
    }
}

/// The names of the test databases on the server of `admin` that no kept mark protects.
pub(crate) async fn list_server(sql: &TestDbSql, admin: &ConfigAndPool) -> Result<Vec<String>> {
    let mut conn = admin.get_connection().await?;
    let rows: Vec<(String,)> = conn.query(sql.list).all().await?;
    Ok(rows.into_iter().map(|r| r.0).collect())
}

/// `text` with `{name}` replaced.
pub(crate) fn named(text: &str, name: &str) -> String {
    text.replace("{name}", name)
}

/// Drops database `name` (it need not exist), ending the sessions still in it first where the
/// engine's drop does not, so that a lock held by a test's open transaction cannot stall it.
pub(crate) async fn drop_server(sql: &TestDbSql, admin: &ConfigAndPool, name: &str) -> Result<()> {
    if let Some((sessions, kill)) = sql.sessions {
        let mut conn = admin.get_connection().await?;
        let ids: Vec<(i64,)> = conn.query(&named(sessions, name)).all().await?;
        for (id,) in ids {
            // A session that ended by itself meanwhile is no error.
            let _ = conn
                .execute_batch(&kill.replace("{id}", &id.to_string()))
                .await;
        }
    }
    run_retrying(admin, &named(sql.drop, name)).await
}

/// Marks database `name` as kept, so that no orphan sweep removes it.
pub(crate) async fn mark_kept_server(
    sql: &TestDbSql,
    admin: &ConfigAndPool,
    db: &ConfigAndPool,
    name: &str,
) -> Result<()> {
    let (mark, inside) = sql.mark_kept;
    let mut conn = if inside { db } else { admin }.get_connection().await?;
    conn.execute_batch(&named(mark, name)).await
}

/// The folder of the test files of SQLite and Turso.
pub(crate) fn file_dir() -> PathBuf {
    std::env::temp_dir().join("sql-middleware-tests")
}

/// The file of test database `name`.
pub(crate) fn file_path(name: &str) -> PathBuf {
    file_dir().join(format!("{name}.db"))
}

/// The URL of a test file for `kind`, with the query of the URL the test was given.
pub(crate) fn file_url(scheme: &str, url: &str, name: &str) -> Result<String> {
    std::fs::create_dir_all(file_dir())
        .map_err(|e| config(format!("cannot create the folder of test databases: {e}")))?;
    let path = file_path(name);
    let path = path
        .to_str()
        .ok_or_else(|| config("the temporary folder's path is not UTF-8"))?;
    let sep = if path.starts_with('/') { "//" } else { "///" };
    let mut out = format!("{scheme}:{sep}{path}");
    if let (_, Some(q)) = split_query(url.trim()) {
        out.push('?');
        out.push_str(q);
    }
    Ok(out)
}

/// Removes the files of test database `name` (the database and its journals).
pub(crate) fn remove_files(name: &str) -> Result<()> {
    let prefix = format!("{name}.db");
    let entries = match std::fs::read_dir(file_dir()) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(config(format!("cannot list the test databases: {e}"))),
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            match std::fs::remove_file(entry.path()) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(config(format!(
                        "cannot remove {}: {e}",
                        entry.path().display()
                    )));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Marks the file of test database `name` as kept.
pub(crate) fn mark_kept_file(name: &str) -> Result<()> {
    std::fs::write(file_dir().join(format!("{name}.kept")), b"")
        .map_err(|e| config(format!("cannot mark {name} as kept: {e}")))
}

/// The test databases with files (the database or a journal it left) that no kept mark
/// protects.
pub(crate) fn list_files() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(file_dir()) else {
        return Vec::new();
    };
    let mut out: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            let stem = file.split_once(".db")?.0.to_owned();
            names::owner_of(&stem)?;
            (!file_dir().join(format!("{stem}.kept")).exists()).then_some(stem)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            with_database("postgres://u:p@h:5432/db?sslmode=disable", "x").unwrap(),
            "postgres://u:p@h:5432/x?sslmode=disable"
        );
        assert_eq!(
            with_database("mysql://root@h", "x").unwrap(),
            "mysql://root@h/x"
        );
        assert!(with_database("postgres:nothing", "x").is_err());
        assert_eq!(server_key("mysql://a:b@h:1/d?x"), "mysql_h:1");
        assert_eq!(rules_of("nope://x").unwrap_err().kind(), ErrorKind::Config);
        assert!(
            file_url("turso", "turso::memory:?busy_timeout=1s", "n")
                .unwrap()
                .ends_with("n.db?busy_timeout=1s")
        );
    }
}
