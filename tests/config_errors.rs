//! Configuration mistakes are `ErrorKind::Config` errors on every backend, at `build()` or at
//! the first checkout, never a panic and never another kind.
#![cfg(all(feature = "sqlite", feature = "postgres", feature = "turso"))]

mod common;

use common::pg;
use sql_middleware::prelude::*;

/// The error of `build()`, or else of the first checkout (connections open lazily).
async fn first_error(b: PoolBuilder) -> SqlMiddlewareDbError {
    match b.build().await {
        Err(e) => e,
        Ok(db) => match db.get_connection().await {
            Err(e) => e,
            Ok(_) => panic!("the pool opened a connection from a bad configuration"),
        },
    }
}

fn assert_config(what: &str, e: &SqlMiddlewareDbError) {
    assert_eq!(e.kind(), ErrorKind::Config, "{what}: {e}");
}

/// A directory that does not exist, under the temp dir.
fn missing_dir_file(name: &str) -> std::path::PathBuf {
    std::env::temp_dir()
        .join(format!(
            "sqlmw-no-such-dir-{}-{}",
            std::process::id(),
            common::backends::unique_hex()
        ))
        .join(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_for_another_backend_and_zero_sizes_are_config_errors() {
    let cases: Vec<(&str, PoolBuilder)> = vec![
        (
            "application_name on SQLite",
            ConfigAndPool::sqlite_memory().application_name("x"),
        ),
        (
            "application_name on Turso",
            ConfigAndPool::turso_memory().application_name("x"),
        ),
        (
            "max_size(0) on SQLite",
            ConfigAndPool::sqlite_memory().max_size(0),
        ),
        (
            "max_size(0) on Turso",
            ConfigAndPool::turso_memory().max_size(0),
        ),
        (
            "max_size(0) on Postgres",
            ConfigAndPool::postgres("postgres://u@127.0.0.1/db").max_size(0),
        ),
    ];
    for (what, b) in cases {
        let e = b
            .build()
            .await
            .err()
            .unwrap_or_else(|| panic!("{what}: built"));
        assert_config(what, &e);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_that_cannot_be_opened_are_config_errors() {
    let e = first_error(ConfigAndPool::sqlite(missing_dir_file("db.sqlite"))).await;
    assert_config("SQLite file in a missing directory", &e);

    let e = first_error(ConfigAndPool::turso(missing_dir_file("db.turso"))).await;
    assert_config("Turso file in a missing directory", &e);

    // A file that is not a database.
    let dir = common::backends::TempDir::new("cfg");
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![0x5au8; 8192]).unwrap();
    let e = first_error(ConfigAndPool::sqlite(&junk)).await;
    assert_config("SQLite on a file that is not a database", &e);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_postgres_settings_are_config_errors() {
    let e = first_error(ConfigAndPool::postgres("postgres://u@host:notaport/db")).await;
    assert_config("a URL with a bad port", &e);

    // A database that does not exist on a real server: SQLSTATE 3D000 at connect.
    let mut cfg: tokio_postgres::Config = pg::base_url().parse().unwrap();
    cfg.dbname(format!(
        "sqlmw_no_such_db_{}",
        common::backends::unique_hex()
    ));
    let e = first_error(ConfigAndPool::postgres_config(cfg).max_size(1)).await;
    assert_config("a database that does not exist", &e);
    assert_eq!(e.driver_code(), Some("3D000"), "{e}");
}
