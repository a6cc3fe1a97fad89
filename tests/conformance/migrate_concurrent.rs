//! Migration runners started together (feature `migrate`): each migration is applied exactly
//! once, with the engine's lock, with MySQL's lock table, and with a migration that runs outside
//! a transaction among the others.

use std::sync::Arc;
use std::time::Duration;

use sql_middleware::ErrorKind;
use sql_middleware::migrate::{LockTable, Migrator};

use crate::backend_tests;
use crate::common::backends::{Kind, TestDb, expect_kind};
use crate::helpers::*;

/// Eight runners started together apply each migration exactly once.
async fn t_migrate_concurrent_runners(db: &TestDb) {
    eight_runners(db, LockTable::Auto).await;
    if db.kind == Kind::Mysql {
        // Not a Galera node: the named lock, and no lock table.
        let mut conn = db.conn().await;
        assert!(
            conn.execute_batch("SELECT id FROM _sql_middleware_migrations_lock")
                .await
                .is_err()
        );
    }
}

/// The same with the lock table (on MySQL; the other engines have no session lock to replace),
/// which also takes over from a runner that died holding it, once the lock expires.
async fn t_migrate_lock_table(db: &TestDb) {
    let k = db.kind.name();
    eight_runners(db, LockTable::Always).await;
    if db.kind != Kind::Mysql {
        return;
    }
    let mut conn = db.conn().await;
    let m = Migrator::from_files([("0100_t.sql", "CREATE TABLE m_lt (id BIGINT);")])
        .expect("files")
        .lock_table(LockTable::Always)
        .lock_wait(Duration::from_millis(300));
    // A live holder: the wait runs out.
    batch(&mut conn, "INSERT INTO _sql_middleware_migrations_lock (id, owner, expires_ms) VALUES (1, 'other', 9000000000000000)").await;
    expect_kind(
        &format!("[{k}] held"),
        m.run(&mut conn).await,
        ErrorKind::Busy,
    );
    // A holder that died: its lock has expired, and the run takes over.
    batch(
        &mut conn,
        "UPDATE _sql_middleware_migrations_lock SET expires_ms = 1",
    )
    .await;
    assert_eq!(
        m.run(&mut conn).await.expect("after expiry").applied,
        [100],
        "[{k}]"
    );
    assert_eq!(
        count(&mut conn, "_sql_middleware_migrations_lock").await,
        0,
        "[{k}] released"
    );
}

async fn eight_runners(db: &TestDb, mode: LockTable) {
    let k = db.kind.name();
    let pool = Arc::new(db.builder().max_size(9).build().await.expect("pool"));
    let mut files = vec![(
        "0000_hits.sql".to_owned(),
        "CREATE TABLE m_hits (v BIGINT NOT NULL);".to_owned(),
    )];
    for v in 1..=10 {
        files.push((
            format!("{v:04}_hit.sql"),
            format!("INSERT INTO m_hits (v) VALUES ({v});\nCREATE TABLE m_t{v} (id BIGINT);"),
        ));
    }
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let pool = Arc::clone(&pool);
        let files = files.clone();
        tasks.push(tokio::spawn(async move {
            let m = Migrator::from_files(files.iter().map(|(f, t)| (f.as_str(), t.as_str())))
                .expect("files")
                .lock_table(mode);
            let mut conn = pool.get_connection().await.expect("conn");
            m.run(&mut conn).await.map(|r| r.applied)
        }));
    }
    let mut applied = Vec::new();
    for t in tasks {
        applied.extend(
            t.await
                .expect("task")
                .unwrap_or_else(|e| panic!("[{k}] runner: {e:?}")),
        );
    }
    applied.sort_unstable();
    assert_eq!(
        applied,
        (0..=10).collect::<Vec<i64>>(),
        "[{k}] each migration applied once"
    );
    let mut conn = pool.get_connection().await.expect("conn");
    let rs = select(&mut conn, "SELECT v FROM m_hits ORDER BY v", &[]).await;
    let vs: Vec<i64> = rs.iter().map(|r| r.try_get("v").expect("v")).collect();
    assert_eq!(
        vs,
        (1..=10).collect::<Vec<i64>>(),
        "[{k}] each body ran once"
    );
}

/// Eight runners with a migration outside a transaction among the others: the runners that
/// find it being applied wait for it, and each migration is applied once.
async fn t_migrate_concurrent_no_transaction(db: &TestDb) {
    let k = db.kind.name();
    let pool = Arc::new(db.builder().max_size(9).build().await.expect("pool"));
    let index = format!(
        "{}\nCREATE INDEX {}m_ci ON m_c (id);\n",
        sql_middleware::migrate::NO_TRANSACTION,
        if db.kind == Kind::Postgres {
            "CONCURRENTLY "
        } else {
            ""
        }
    );
    let files: Vec<(String, String)> = vec![
        ("0001_c.sql".into(), "CREATE TABLE m_c (id BIGINT);".into()),
        ("0002_ci.sql".into(), index),
        (
            "0003_c.sql".into(),
            "INSERT INTO m_c (id) VALUES (3);".into(),
        ),
    ];
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (pool, files) = (Arc::clone(&pool), files.clone());
        tasks.push(tokio::spawn(async move {
            let m = Migrator::from_files(files.iter().map(|(f, t)| (f.as_str(), t.as_str())))
                .expect("files");
            let mut conn = pool.get_connection().await.expect("conn");
            m.run(&mut conn).await.map(|r| r.applied)
        }));
    }
    let mut applied = Vec::new();
    for t in tasks {
        applied.extend(
            t.await
                .expect("task")
                .unwrap_or_else(|e| panic!("[{k}] runner: {e:?}")),
        );
    }
    applied.sort_unstable();
    assert_eq!(applied, [1, 2, 3], "[{k}] each migration applied once");
    let mut conn = pool.get_connection().await.expect("conn");
    assert_eq!(count(&mut conn, "m_c").await, 1, "[{k}]");
}

backend_tests! {
    async fn migrate_concurrent_runners(db) { t_migrate_concurrent_runners(&db).await }
    async fn migrate_lock_table(db) { t_migrate_lock_table(&db).await }
    async fn migrate_concurrent_no_transaction(db) { t_migrate_concurrent_no_transaction(&db).await }
}
