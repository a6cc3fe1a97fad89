//! The Postgres template of a set of migrations: a database with them applied, named by their
//! fingerprint, from which each test's database is copied (`CREATE DATABASE … TEMPLATE …`), so
//! that no test runs the migrations again. Changed migrations have another fingerprint, hence
//! another template, built on first use.

use super::names::TEMPLATE_PREFIX;
use super::target::{admin, run_retrying, with_database};
use crate::config::ConfigAndPool;
use crate::error::Result;
use crate::migrate::Migrator;

/// The key of the advisory lock that one builder of a template holds.
const BUILD_LOCK: i64 = 0x7371_6c6d_7774_706c;

/// The name of the template of `migrator`.
pub(crate) fn name(migrator: &Migrator) -> String {
    format!("{TEMPLATE_PREFIX}{}", &migrator.fingerprint()[..24])
}

async fn exists(admin: &ConfigAndPool, name: &str) -> Result<bool> {
    let mut conn = admin.get_connection().await?;
    let found: Option<(i32,)> = conn
        .query(&format!(
            "SELECT 1 FROM pg_database WHERE datname = '{name}'"
        ))
        .optional()
        .await?;
    Ok(found.is_some())
}

/// Makes sure the template of `migrator` exists on the server of `url` (whose user may create
/// databases), building it when missing, and returns its name. Concurrent callers, in this
/// process or others, build it once: the builder holds an advisory lock, and builds under a
/// temporary name renamed when complete, so a half-built template is never copied.
pub(crate) async fn ensure(
    url: &str,
    admin_db: &ConfigAndPool,
    migrator: &Migrator,
) -> Result<String> {
    let tpl = name(migrator);
    if exists(admin_db, &tpl).await? {
        return Ok(tpl);
    }
    // The lock is held by this session, so by a pool of its own, closed at the end (which
    // releases the lock too when a step fails).
    let locker = admin(url).await?;
    let mut lock = locker.get_connection().await?;
    lock.execute_batch(&format!("SELECT pg_advisory_lock({BUILD_LOCK})"))
        .await?;
    let built = build(url, admin_db, migrator, &tpl).await;
    lock.execute_batch(&format!("SELECT pg_advisory_unlock({BUILD_LOCK})"))
        .await?;
    drop(lock);
    locker.close();
    built.map(|()| tpl)
}

async fn build(url: &str, admin_db: &ConfigAndPool, migrator: &Migrator, tpl: &str) -> Result<()> {
    if exists(admin_db, tpl).await? {
        return Ok(());
    }
    let work = format!("{tpl}_build");
    run_retrying(
        admin_db,
        &format!("DROP DATABASE IF EXISTS \"{work}\" WITH (FORCE)"),
    )
    .await?;
    run_retrying(admin_db, &format!("CREATE DATABASE \"{work}\"")).await?;
    let db = ConfigAndPool::from_url(&with_database(url, &work)?)?
        .max_size(1)
        .build()
        .await?;
    let mut conn = db.get_connection().await?;
    let ran = migrator.run(&mut conn).await;
    drop(conn);
    db.close();
    drop(db);
    ran?;
    run_retrying(
        admin_db,
        &format!("ALTER DATABASE \"{work}\" RENAME TO \"{tpl}\""),
    )
    .await
}
