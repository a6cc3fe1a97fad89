//! `#[sql_middleware::test]` on each engine: the URL from the suite's variable (else the local
//! default), the migrations, the fixtures, a `Result` return, and panics that reach the harness.

use sql_middleware::prelude::*;

async fn labels(db: &ConfigAndPool) -> Vec<String> {
    let mut conn = db.get_connection().await.unwrap();
    let rows: Vec<(String,)> = conn
        .query("SELECT label FROM items ORDER BY id")
        .all()
        .await
        .unwrap();
    rows.into_iter().map(|r| r.0).collect()
}

#[sql_middleware::test(
    env = "SQL_MIDDLEWARE_PG_URL",
    url = "postgres://postgres@127.0.0.1:5432/postgres",
    migrations = "tests/testing/migrations",
    fixtures("tests/testing/fixtures/items.sql")
)]
async fn postgres_migrated_with_fixture(db: ConfigAndPool) {
    assert_eq!(labels(&db).await, ["one", "two", "three"]);
    assert_eq!(db.database_type(), DatabaseType::Postgres);
}

#[sql_middleware::test(
    env = "SQL_MIDDLEWARE_MYSQL_URL",
    url = "mysql://root@127.0.0.1:3306/test",
    migrations = "tests/testing/migrations",
    fixtures("tests/testing/fixtures/items.sql"),
    connections = 3
)]
async fn mysql_migrated_with_fixture(db: ConfigAndPool) {
    assert_eq!(labels(&db).await, ["one", "two", "three"]);
    assert_eq!(db.status().max_size, 3);
}

#[sql_middleware::test(
    url = "sqlite::memory:",
    migrations = "tests/testing/migrations",
    fixtures("tests/testing/fixtures/items.sql")
)]
async fn sqlite_migrated_with_fixture(db: ConfigAndPool) -> Result<(), SqlMiddlewareDbError> {
    let mut conn = db.get_connection().await?;
    conn.execute_batch("INSERT INTO tags VALUES (1, 'x')")
        .await?;
    assert_eq!(labels(&db).await.len(), 3);
    Ok(())
}

#[sql_middleware::test(url = "turso::memory:", migrations = "tests/testing/migrations")]
async fn turso_migrated(db: ConfigAndPool) {
    assert!(labels(&db).await.is_empty());
    assert_eq!(db.database_type(), DatabaseType::Turso);
}

#[sql_middleware::test(url = "sqlite::memory:")]
#[should_panic(expected = "the attribute lets this through")]
async fn sqlite_panic_reaches_the_harness(_db: ConfigAndPool) {
    panic!("the attribute lets this through");
}

#[sql_middleware::test(
    env = "SQL_MIDDLEWARE_PG_URL",
    url = "postgres://postgres@127.0.0.1:5432/postgres"
)]
#[should_panic(expected = "the test returned an error")]
async fn postgres_error_fails_the_test(_db: ConfigAndPool) -> Result<(), String> {
    Err("on purpose".to_owned())
}

#[sql_middleware::test(
    env = "SQL_MIDDLEWARE_MYSQL_URL",
    url = "mysql://root@127.0.0.1:3306/test"
)]
#[should_panic(expected = "mysql panic")]
async fn mysql_panic_reaches_the_harness(_db: ConfigAndPool) {
    panic!("mysql panic");
}

/// `keep_on_failure = false` is accepted (it overrides `SQL_MIDDLEWARE_TEST_KEEP`).
#[sql_middleware::test(url = "sqlite::memory:", keep_on_failure = false, connections = 1)]
async fn sqlite_keep_on_failure_false(db: ConfigAndPool) {
    assert_eq!(db.status().max_size, 1);
}
