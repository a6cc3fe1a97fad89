//! Error kinds: each engine error maps to its `ErrorKind` and keeps its driver code, and
//! configuration mistakes are `Config` errors (`errors::config`, not per backend).

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, Logical, TestDb, expect_kind};
use crate::helpers::*;

// ---------------------------------------------------------------------------------------------
// error kinds
// ---------------------------------------------------------------------------------------------

async fn t_error_kinds(db: &TestDb) {
    let k = db.kind.name();
    let int = db.ty(Logical::Int);
    let mut conn = db.conn().await;
    // A unique text column (MySQL needs a bounded type for it). MySQL: a foreign key is
    // declared at table level (MySQL ignores a column-level REFERENCES).
    let name_ty = db.ty(Logical::KeyText);
    let (fk_col, fk_table) = match db.kind {
        Kind::Mysql => (
            "",
            ",\n                 FOREIGN KEY (parent_id) REFERENCES parent (id)",
        ),
        Kind::Sqlite | Kind::Postgres | Kind::Turso => (" REFERENCES parent (id)", ""),
    };
    batch(
        &mut conn,
        &format!(
            "CREATE TABLE parent (id {int} PRIMARY KEY);
             CREATE TABLE ek (
                 id {int} PRIMARY KEY,
                 name {name_ty} NOT NULL UNIQUE,
                 qty {int} CHECK (qty >= 0),
                 parent_id {int}{fk_col}{fk_table}
             );
             INSERT INTO parent (id) VALUES (1);
             INSERT INTO ek (id, name, qty, parent_id) VALUES (1, 'one', 1, 1);"
        ),
    )
    .await;
    let ins = "INSERT INTO ek (id, name, qty, parent_id) VALUES ($1, $2, $3, $4)";
    let cases: Vec<(&str, Vec<RowValues>, ErrorKind)> = vec![
        (
            "duplicate primary key",
            vec![1.into(), "x".into(), 1.into(), 1.into()],
            ErrorKind::UniqueViolation,
        ),
        (
            "duplicate unique column",
            vec![2.into(), "one".into(), 1.into(), 1.into()],
            ErrorKind::UniqueViolation,
        ),
        (
            "NULL into NOT NULL",
            vec![3.into(), RowValues::Null, 1.into(), 1.into()],
            ErrorKind::NotNullViolation,
        ),
        (
            "CHECK (qty >= 0)",
            vec![4.into(), "four".into(), (-1).into(), 1.into()],
            ErrorKind::CheckViolation,
        ),
        (
            "missing parent row",
            vec![5.into(), "five".into(), 1.into(), 99.into()],
            ErrorKind::ForeignKeyViolation,
        ),
    ];
    for (what, params, kind) in cases {
        let e = expect_kind(
            &format!("[{k}] {what}"),
            conn.query(ins).params(&params).dml().await,
            kind,
        );
        assert!(
            e.driver_code().is_some(),
            "[{k}] {what}: no driver code: {e:?}"
        );
        assert!(
            std::error::Error::source(&e).is_some(),
            "[{k}] {what}: no source: {e:?}"
        );
    }
    expect_kind(
        &format!("[{k}] deleting a referenced parent"),
        conn.query("DELETE FROM parent WHERE id = 1").dml().await,
        ErrorKind::ForeignKeyViolation,
    );
    let e = expect_kind(
        &format!("[{k}] syntax"),
        conn.query("SELEC id FROM ek").select().await,
        ErrorKind::Syntax,
    );
    assert!(e.driver_code().is_some(), "[{k}] syntax: {e:?}");
    let e = expect_kind(
        &format!("[{k}] undefined table"),
        conn.query("SELECT * FROM no_such_table").select().await,
        ErrorKind::UndefinedObject,
    );
    assert!(e.driver_code().is_some(), "[{k}] undefined table: {e:?}");
    expect_kind(
        &format!("[{k}] undefined column"),
        conn.query("SELECT no_such_column FROM ek").select().await,
        ErrorKind::UndefinedObject,
    );
    expect_kind(
        &format!("[{k}] one() without a row"),
        conn.query("SELECT id FROM ek WHERE id = $1")
            .params(&[(-1).into()])
            .one::<(i64,)>()
            .await,
        ErrorKind::NoRows,
    );
    assert_eq!(
        conn.query("SELECT id FROM ek WHERE id = $1")
            .params(&[(-1).into()])
            .optional::<(i64,)>()
            .await
            .unwrap(),
        None
    );
    let e = expect_kind(
        &format!("[{k}] text decoded as i64"),
        conn.query("SELECT name FROM ek WHERE id = 1")
            .one::<(i64,)>()
            .await,
        ErrorKind::TypeMismatch,
    );
    assert!(
        e.message().contains("name"),
        "[{k}] message names the column: {e}"
    );
    let rs = select(&mut conn, "SELECT name FROM ek WHERE id = 1", &[]).await;
    let e = expect_kind(
        &format!("[{k}] try_get text as i64"),
        rs.results[0].try_get::<i64>("name"),
        ErrorKind::TypeMismatch,
    );
    assert!(
        e.message().contains("`name`"),
        "[{k}] message names the column: {e}"
    );
    expect_kind(
        &format!("[{k}] too few parameters"),
        conn.query("SELECT id FROM ek WHERE id = $1 AND name = $2")
            .params(&[1.into()])
            .select()
            .await,
        ErrorKind::ParameterCount,
    );
    expect_kind(
        &format!("[{k}] too many parameters"),
        conn.query("SELECT id FROM ek WHERE id = $1")
            .params(&[1.into(), 2.into()])
            .select()
            .await,
        ErrorKind::ParameterCount,
    );
    // Nothing of the failed inserts was stored, and the connection is fine.
    assert_eq!(count(&mut conn, "ek").await, 1, "[{k}]");
}

backend_tests! {
    async fn error_kinds(db) { t_error_kinds(&db).await }
}

/// Configuration mistakes are `ErrorKind::Config` errors on every backend, at `build()` or at
/// the first checkout, never a panic and never another kind.
#[cfg(all(feature = "sqlite", feature = "postgres", feature = "turso"))]
mod config {
    use sql_middleware::prelude::*;

    use crate::common::backends::{TempDir, unique_hex};
    use crate::common::pg;

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
                unique_hex()
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
        let dir = TempDir::new("cfg");
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
        cfg.dbname(format!("sqlmw_no_such_db_{}", unique_hex()));
        let e = first_error(ConfigAndPool::postgres_config(cfg).max_size(1)).await;
        assert_config("a database that does not exist", &e);
        assert_eq!(e.driver_code(), Some("3D000"), "{e}");
    }
}
