//! What the tests of this binary share: each engine's URL, the migrations, and checks made from
//! outside a test database (does it exist, is it marked kept).

use std::path::Path;

use sql_middleware::migrate::Migrator;
use sql_middleware::prelude::*;
use sql_middleware::testing::TestDatabase;

/// The engines, as the tests name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Postgres,
    Mysql,
    Sqlite,
    Turso,
}

/// The URL tests of `engine` run against.
pub fn url(engine: Engine) -> String {
    match engine {
        Engine::Postgres => crate::common::pg::base_url(),
        Engine::Mysql => crate::common::mysql::base_url(),
        Engine::Sqlite => "sqlite::memory:".to_owned(),
        Engine::Turso => "turso::memory:".to_owned(),
    }
}

/// This binary's migrations (`tests/testing/migrations`).
pub fn migrator() -> Migrator {
    Migrator::from_files(sql_middleware::migrate::embed_migrations!(
        "tests/testing/migrations"
    ))
    .unwrap()
}

/// A builder on `engine` with the migrations and the fixture.
pub fn builder(engine: Engine) -> sql_middleware::testing::TestDatabaseBuilder {
    TestDatabase::builder()
        .url(url(engine))
        .migrations(migrator())
        .fixture("items.sql", include_str!("fixtures/items.sql"))
}

/// The name (server) or path (file) of the database `db` is a pool on.
pub async fn location_of(engine: Engine, db: &ConfigAndPool) -> String {
    let mut conn = db.get_connection().await.unwrap();
    match engine {
        Engine::Postgres => {
            let (n,): (String,) = conn
                .query("SELECT current_database()::text")
                .one()
                .await
                .unwrap();
            n
        }
        Engine::Mysql => {
            let (n,): (String,) = conn.query("SELECT DATABASE()").one().await.unwrap();
            n
        }
        Engine::Sqlite | Engine::Turso => {
            let rows: Vec<(i64, String, String)> =
                conn.query("PRAGMA database_list").all().await.unwrap();
            rows.into_iter().find(|r| r.1 == "main").unwrap().2
        }
    }
}

/// An admin pool on the server of `engine`.
pub async fn admin(engine: Engine) -> ConfigAndPool {
    ConfigAndPool::from_url(&url(engine))
        .unwrap()
        .max_size(1)
        .build()
        .await
        .unwrap()
}

/// Whether the database (or file) at `location` exists.
pub async fn exists(engine: Engine, location: &str) -> bool {
    let sql = match engine {
        Engine::Postgres => {
            format!("SELECT count(*)::bigint FROM pg_database WHERE datname = '{location}'")
        }
        Engine::Mysql => format!(
            "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '{location}'"
        ),
        Engine::Sqlite | Engine::Turso => return Path::new(location).exists(),
    };
    let admin = admin(engine).await;
    let mut conn = admin.get_connection().await.unwrap();
    let (n,): (i64,) = conn.query(&sql).one().await.unwrap();
    n == 1
}

/// Runs `sql` on the server of `engine` (creating or dropping databases by hand).
pub async fn on_server(engine: Engine, sql: &str) {
    let admin = admin(engine).await;
    let mut conn = admin.get_connection().await.unwrap();
    conn.execute_batch(sql).await.unwrap();
}

/// Creates an empty database (or file) named `name`, and returns where it is.
pub async fn create_named(engine: Engine, name: &str) -> String {
    match engine {
        Engine::Postgres => on_server(engine, &format!("CREATE DATABASE \"{name}\"")).await,
        Engine::Mysql => on_server(engine, &format!("CREATE DATABASE `{name}`")).await,
        Engine::Sqlite | Engine::Turso => {
            let dir = std::env::temp_dir().join("sql-middleware-tests");
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(format!("{name}.db"));
            std::fs::write(&path, b"").unwrap();
            return path.display().to_string();
        }
    }
    name.to_owned()
}

/// Removes the database (or file) at `location`, as a user would a kept one.
pub async fn remove(engine: Engine, location: &str) {
    match engine {
        Engine::Postgres => {
            on_server(
                engine,
                &format!("DROP DATABASE IF EXISTS \"{location}\" WITH (FORCE)"),
            )
            .await;
        }
        Engine::Mysql => on_server(engine, &format!("DROP DATABASE IF EXISTS `{location}`")).await,
        Engine::Sqlite | Engine::Turso => {
            // The database, the journals a kept database keeps (Turso's WAL), and the mark.
            for file in [
                location.to_owned(),
                format!("{location}-wal"),
                format!("{location}-shm"),
                location.replace(".db", ".kept"),
            ] {
                let _ = std::fs::remove_file(file);
            }
        }
    }
}

/// The machine part of this process's test database names.
pub fn machine_of(name: &str) -> String {
    name.split('_').nth(2).unwrap().to_owned()
}
