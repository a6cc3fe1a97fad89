//! A migration runner killed with SIGKILL in the middle of a long migration: where the engine's
//! DDL is transactional nothing of it is left and the next run applies it; on MySQL the
//! migration is reported dirty. The runner is this test binary itself, started again to run
//! [`migrate_kill_child`] on the test's database.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use sql_middleware::ErrorKind;
use sql_middleware::migrate::{Event, MigrationState, Migrator};
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, TestDb, expect_kind};

const URL_ENV: &str = "SQL_MIDDLEWARE_MIGRATE_KILL_URL";
const SLOW_ENV: &str = "SQL_MIDDLEWARE_MIGRATE_KILL_SLOW";

/// The long migration, per engine: a table, then seconds of work.
fn slow(kind: &str) -> &'static str {
    match kind {
        "postgres" => "CREATE TABLE m_k (id BIGINT);\nSELECT pg_sleep(3);\n",
        "mysql" => {
            "CREATE TABLE m_k (id BIGINT);\nSELECT SLEEP(3);\nCREATE TABLE m_k2 (id BIGINT);\n"
        }
        _ => {
            "CREATE TABLE m_k (id BIGINT);\nINSERT INTO m_k (id) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000000) SELECT count(*) FROM c;\n"
        }
    }
}

const QUICK: &str = "CREATE TABLE m_k (id BIGINT);\nINSERT INTO m_k (id) VALUES (1);\n";

/// The runner the parent kills: run only as a child of [`t_migrate_killed_runner`], which sets
/// the database URL and the engine; run alone it fails.
#[tokio::test]
#[ignore = "the child process of migrate_killed_runner"]
async fn migrate_kill_child() {
    let url = std::env::var(URL_ENV).expect("run as the child of migrate_killed_runner");
    let kind = std::env::var(SLOW_ENV).expect("the engine");
    let db = ConfigAndPool::from_url(&url)
        .expect("url")
        .build()
        .await
        .expect("pool");
    let mut conn = db.get_connection().await.expect("conn");
    let m = Migrator::from_files([("0001_slow.sql", slow(&kind))])
        .expect("files")
        .on_event(|e| {
            if let Event::Applying { .. } = e {
                println!("migrate-child: applying");
            }
        });
    m.run(&mut conn)
        .await
        .expect("the child is killed before this ends");
    println!("migrate-child: finished");
}

/// The database the runner works on: the test's own on a server; on SQLite and Turso a file
/// of its own beside the test's (Turso locks a database file to one process, and the test's
/// pool keeps its file open), named after it so that it goes when the test's files go.
fn url_of(db: &TestDb) -> String {
    match (db.url(), db.path()) {
        (Some(u), _) => u.to_owned(),
        (None, Some(p)) => format!("{}://{}.killed", db.kind.name(), p.display()),
        (None, None) => panic!("the test database has neither a URL nor a file"),
    }
}

async fn t_migrate_killed_runner(db: &TestDb) {
    let k = db.kind.name();
    let url = url_of(db);
    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new(exe)
        .args([
            "migrate_kill::migrate_kill_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(URL_ENV, &url)
        .env(SLOW_ENV, k)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the runner");
    let stdout = child.stdout.take().expect("stdout");
    let started = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|l| l.contains("migrate-child: applying"))
    })
    .await
    .expect("reader");
    assert!(started, "[{k}] the runner never started its migration");
    // Into the long statement, then SIGKILL.
    tokio::time::sleep(Duration::from_millis(500)).await;
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("wait");
    assert!(
        !status.success(),
        "[{k}] the runner finished before it was killed"
    );

    let pool = ConfigAndPool::from_url(&url)
        .expect("url")
        .build()
        .await
        .expect("pool");
    let mut conn = pool.get_connection().await.expect("conn");
    let m = Migrator::from_files([("0001_slow.sql", QUICK)]).expect("files");
    match db.kind {
        Kind::Sqlite | Kind::Postgres | Kind::Turso => {
            let st = m.status(&mut conn).await.expect("status");
            assert_eq!(st.len(), 1, "[{k}] {st:?}");
            assert_eq!(
                st[0].state,
                MigrationState::Pending,
                "[{k}] nothing recorded"
            );
            // The next run waits for the dead runner's lock to go, then applies it.
            assert_eq!(
                m.run(&mut conn).await.expect("next run").applied,
                [1],
                "[{k}]"
            );
            let (n,): (i64,) = conn
                .query("SELECT count(*) FROM m_k")
                .one()
                .await
                .expect("count");
            assert_eq!(
                n, 1,
                "[{k}] only the next run's row: nothing of the killed one"
            );
        }
        Kind::Mysql => {
            let e = expect_kind(
                &format!("[{k}] dirty"),
                m.run(&mut conn).await,
                ErrorKind::TransactionState,
            );
            assert!(e.message().contains("dirty"), "[{k}] {e:?}");
            let st = m.status(&mut conn).await.expect("status");
            assert_eq!(st[0].state, MigrationState::Dirty, "[{k}] {st:?}");
        }
    }
}

backend_tests! {
    async fn migrate_killed_runner(db) { t_migrate_killed_runner(&db).await }
}
