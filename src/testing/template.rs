//! The template of a set of migrations, on engines that copy databases (Postgres): a database
//! with them applied, named by their fingerprint, from which each test's database is copied, so
//! that no test runs the migrations again. Changed migrations have another fingerprint, hence
//! another template, built on first use.

use super::names::TEMPLATE_PREFIX;
use super::target::{admin, named, run_retrying, with_database};
use crate::config::ConfigAndPool;
use crate::contract::{TestDbSql, TestDbTemplate};
use crate::error::Result;
use crate::migrate::Migrator;

/// The name of the template of `migrator`.
pub(crate) fn name(migrator: &Migrator) -> String {
    format!("{TEMPLATE_PREFIX}{}", &migrator.fingerprint()[..24])
}

async fn exists(tpl: &TestDbTemplate, admin: &ConfigAndPool, name: &str) -> Result<bool> {
    let mut conn = admin.get_connection().await?;
    let found: Option<(i64,)> = conn.query(&named(tpl.exists, name)).optional().await?;
    Ok(found.is_some())
}

/// Makes sure the template of `migrator` exists on the server of `url` (whose user may create
/// databases), building it when missing, and returns its name. Concurrent callers, in this
/// process or others, build it once: the builder holds the engine's session lock, and builds
/// under a temporary name renamed when complete, so a half-built template is never copied.
pub(crate) async fn ensure(
    url: &str,
    sql: &TestDbSql,
    tpl: &TestDbTemplate,
    admin_db: &ConfigAndPool,
    migrator: &Migrator,
) -> Result<String> {
    let name = name(migrator);
    if exists(tpl, admin_db, &name).await? {
        return Ok(name);
    }
    // The lock is held by a session of its own, closed at the end (which releases the lock
    // too when a step fails).
    let locker = admin(url).await?;
    let mut lock = locker.get_connection().await?;
    lock.execute_batch(tpl.lock.0).await?;
    let built = build(url, sql, tpl, admin_db, migrator, &name).await;
    lock.execute_batch(tpl.lock.1).await?;
    drop(lock);
    locker.close();
    built.map(|()| name)
}

async fn build(
    url: &str,
    sql: &TestDbSql,
    tpl: &TestDbTemplate,
    admin_db: &ConfigAndPool,
    migrator: &Migrator,
    name: &str,
) -> Result<()> {
    if exists(tpl, admin_db, name).await? {
        return Ok(());
    }
    let work = format!("{name}_build");
    run_retrying(admin_db, &named(sql.drop, &work)).await?;
    run_retrying(admin_db, &named(sql.create, &work)).await?;
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
        &named(tpl.rename, &work).replace("{template}", name),
    )
    .await
}
