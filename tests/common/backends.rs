#![allow(dead_code)]
//! One test body, every backend: fresh databases per test and the [`backend_tests!`] macro.
//!
//! Include it through `tests/common/mod.rs` (`pub mod backends;`). A test file then writes
//!
//! ```ignore
//! mod common;
//! use common::backends::*;
//!
//! backend_tests! {
//!     async fn selects_one(db) {
//!         let mut conn = db.db.get_connection().await.unwrap();
//!         // ...
//!     }
//! }
//! ```
//!
//! and gets `sqlite::selects_one`, `postgres::selects_one` (feature `postgres`),
//! `turso::selects_one` (feature `turso`) and `mysql::selects_one` (feature `mysql`). Test
//! bodies use the public API only, plus [`TestDb::kind`] where the backends document a
//! difference.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use sql_middleware::prelude::*;
use sql_middleware::{ErrorKind, PoolBuilder};

/// The backend a [`TestDb`] runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// SQLite through rusqlite.
    Sqlite,
    /// PostgreSQL through tokio-postgres.
    Postgres,
    /// Turso.
    Turso,
    /// MySQL or MariaDB through mysql_async.
    Mysql,
}

impl Kind {
    /// Lower-case name, for summary lines and messages.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
            Kind::Turso => "turso",
            Kind::Mysql => "mysql",
        }
    }
}

/// A temporary directory, removed (with its contents) when dropped.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates `<temp_dir>/sqlmw_<prefix>_<pid>_<random>`.
    pub fn new(prefix: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!(
            "sqlmw_{prefix}_{}_{}",
            std::process::id(),
            unique_hex()
        ));
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|e| panic!("cannot create temp dir {}: {e}", path.display()));
        TempDir { path }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// 16 hex digits, unique within the process and very likely across processes.
pub fn unique_hex() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let hash = RandomState::new().hash_one((nanos, std::process::id(), count));
    format!("{hash:016x}")
}

/// Where a [`TestDb`] lives, so that more pools can be opened on the same database.
#[derive(Debug, Clone)]
enum Location {
    File(PathBuf),
    Url(String),
}

/// A fresh database for one test, with its pool.
///
/// Field order matters: the pool is dropped before the temporary directory is removed.
#[derive(Debug)]
pub struct TestDb {
    /// The pool on the test database.
    pub db: ConfigAndPool,
    /// Which backend it is.
    pub kind: Kind,
    location: Location,
    _dir: Option<TempDir>,
}

impl TestDb {
    /// A new builder for another pool on the same database (for pool-option tests).
    pub fn builder(&self) -> PoolBuilder {
        match (&self.location, self.kind) {
            #[cfg(feature = "sqlite")]
            (Location::File(p), Kind::Sqlite) => ConfigAndPool::sqlite(p),
            #[cfg(feature = "turso")]
            (Location::File(p), Kind::Turso) => ConfigAndPool::turso(p),
            #[cfg(feature = "postgres")]
            (Location::Url(u), Kind::Postgres) => postgres_builder(u),
            #[cfg(feature = "mysql")]
            (Location::Url(u), Kind::Mysql) => mysql_builder(u),
            (loc, kind) => panic!("no builder for {kind:?} at {loc:?} in this build"),
        }
    }

    /// The database's URL, on the server engines (for raw clients of the engine's own driver).
    pub fn url(&self) -> Option<&str> {
        match &self.location {
            Location::Url(u) => Some(u),
            Location::File(_) => None,
        }
    }

    /// The database file, on SQLite and Turso.
    pub fn path(&self) -> Option<&Path> {
        match &self.location {
            Location::File(p) => Some(p),
            Location::Url(_) => None,
        }
    }

    /// The column type for `l` on this backend (see [`ty`]).
    pub fn ty(&self, l: Logical) -> &'static str {
        ty(self.kind, l)
    }

    /// Whether this is a MariaDB server (as opposed to MySQL, or another backend): the two
    /// differ in documented ways (`JSON` is `LONGTEXT` on MariaDB and reads back as text).
    pub async fn is_mariadb(&self) -> bool {
        match (&self.location, self.kind) {
            #[cfg(feature = "mysql")]
            (Location::Url(u), Kind::Mysql) => crate::common::mysql::is_mariadb(u).await,
            _ => false,
        }
    }

    /// Checks out a connection, panicking with the error on failure.
    pub async fn conn(&self) -> MiddlewarePoolConnection {
        self.db
            .get_connection()
            .await
            .unwrap_or_else(|e| panic!("[{}] get_connection failed: {e:?}", self.kind.name()))
    }
}

/// A fresh SQLite file database (WAL, the default) in a unique temporary directory.
#[cfg(feature = "sqlite")]
pub async fn sqlite() -> TestDb {
    let dir = TempDir::new("sqlite");
    let path = dir.path().join("test.db");
    let db = ConfigAndPool::sqlite(&path)
        .max_size(4)
        .build()
        .await
        .unwrap_or_else(|e| panic!("cannot build the SQLite pool: {e:?}"));
    TestDb {
        db,
        kind: Kind::Sqlite,
        location: Location::File(path),
        _dir: Some(dir),
    }
}

/// A Postgres pool builder for `url`, in the statement mode `SQL_MIDDLEWARE_PG_STATEMENT_CACHE`
/// names (`named`, the default, or `unnamed`): the whole suite runs in either mode.
#[cfg(feature = "postgres")]
pub fn postgres_builder(url: &str) -> PoolBuilder {
    let b = ConfigAndPool::postgres(url);
    match std::env::var("SQL_MIDDLEWARE_PG_STATEMENT_CACHE").as_deref() {
        Ok("unnamed") => b.statement_cache(sql_middleware::StatementCache::Unnamed),
        Ok("named") | Ok("") | Err(_) => b,
        Ok(other) => {
            panic!("SQL_MIDDLEWARE_PG_STATEMENT_CACHE must be named or unnamed, not {other}")
        }
    }
}

/// A pool on the schema URL given by `common::pg::with_schema`.
#[cfg(feature = "postgres")]
pub async fn postgres(url: &str) -> TestDb {
    let db = postgres_builder(url)
        .max_size(4)
        .build()
        .await
        .unwrap_or_else(|e| panic!("cannot build the Postgres pool: {e:?}"));
    if std::env::var(crate::common::pg::PG_TLS_ENV).is_ok_and(|v| v == "1") {
        // The TLS mode must really be TLS: the server's view of the session.
        let mut c = db.get_connection().await.expect("checkout");
        let (ssl,): (bool,) = c
            .query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .one()
            .await
            .expect("pg_stat_ssl");
        assert!(
            ssl,
            "SQL_MIDDLEWARE_PG_TLS=1, but the session is not encrypted"
        );
    }
    TestDb {
        db,
        kind: Kind::Postgres,
        location: Location::Url(url.to_owned()),
        _dir: None,
    }
}

/// A fresh Turso file database in a unique temporary directory.
#[cfg(feature = "turso")]
pub async fn turso() -> TestDb {
    let dir = TempDir::new("turso");
    let path = dir.path().join("test.db");
    let db = ConfigAndPool::turso(&path)
        .max_size(4)
        .build()
        .await
        .unwrap_or_else(|e| panic!("cannot build the Turso pool: {e:?}"));
    TestDb {
        db,
        kind: Kind::Turso,
        location: Location::File(path),
        _dir: Some(dir),
    }
}

/// A MySQL pool builder for `url`, in the statement mode `SQL_MIDDLEWARE_MYSQL_STATEMENT_CACHE`
/// names (`named`, the default, or `unnamed`): the whole suite runs in either mode.
#[cfg(feature = "mysql")]
pub fn mysql_builder(url: &str) -> PoolBuilder {
    let b = ConfigAndPool::mysql(url);
    match std::env::var("SQL_MIDDLEWARE_MYSQL_STATEMENT_CACHE").as_deref() {
        Ok("unnamed") => b.statement_cache(sql_middleware::StatementCache::Unnamed),
        Ok("named") | Ok("") | Err(_) => b,
        Ok(other) => {
            panic!("SQL_MIDDLEWARE_MYSQL_STATEMENT_CACHE must be named or unnamed, not {other}")
        }
    }
}

/// A pool on the database URL given by `common::mysql::with_database`.
#[cfg(feature = "mysql")]
pub async fn mysql(url: &str) -> TestDb {
    let db = mysql_builder(url)
        .max_size(4)
        .build()
        .await
        .unwrap_or_else(|e| panic!("cannot build the MySQL pool: {e:?}"));
    TestDb {
        db,
        kind: Kind::Mysql,
        location: Location::Url(url.to_owned()),
        _dir: None,
    }
}

/// Logical column types, mapped to a concrete column type per backend by [`ty`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Logical {
    Int,
    Float,
    Text,
    Bool,
    Blob,
    Timestamp,
    TimestampTz,
    Date,
    Uuid,
    Numeric,
    Json,
    Time,
    Interval,
    IntArray,
    TextArray,
}

/// The column type to declare for `l` on `kind`.
///
/// SQLite and Turso widen results by the declared type (`BOOLEAN`, `TIMESTAMP`, `UUID`, ...),
/// so these names matter there as much as on Postgres.
pub fn ty(kind: Kind, l: Logical) -> &'static str {
    match kind {
        Kind::Postgres => match l {
            Logical::Int => "BIGINT",
            Logical::Float => "DOUBLE PRECISION",
            Logical::Text => "TEXT",
            Logical::Bool => "BOOLEAN",
            Logical::Blob => "BYTEA",
            Logical::Timestamp => "TIMESTAMP",
            Logical::TimestampTz => "TIMESTAMPTZ",
            Logical::Date => "DATE",
            Logical::Uuid => "UUID",
            Logical::Numeric => "NUMERIC",
            Logical::Json => "JSONB",
            Logical::Time => "TIME",
            Logical::Interval => "INTERVAL",
            Logical::IntArray => "BIGINT[]",
            Logical::TextArray => "TEXT[]",
        },
        Kind::Sqlite | Kind::Turso => match l {
            Logical::Int => "INTEGER",
            Logical::Float => "REAL",
            Logical::Text => "TEXT",
            Logical::Bool => "BOOLEAN",
            Logical::Blob => "BLOB",
            Logical::Timestamp => "TIMESTAMP",
            Logical::TimestampTz => "TIMESTAMPTZ",
            Logical::Date => "DATE",
            Logical::Uuid => "UUID",
            // SQLite has no exact decimal type: `NUMERIC` has numeric affinity and stores
            // number-like text as INTEGER or REAL (15 significant digits). A declared type
            // containing TEXT keeps the text as written, and its DECIMAL prefix tells the
            // middleware to read it back as `RowValues::Numeric` (see the README).
            Logical::Numeric => "DECIMAL_TEXT",
            Logical::Json => "JSON",
            // Stored as text (see `RowValues`); the declared type reads them back. Turso
            // reserves `T[]` for its own arrays in STRICT tables, so arrays are `ARRAY` here.
            Logical::Time => "TIME",
            Logical::Interval => "INTERVAL",
            Logical::IntArray | Logical::TextArray => "ARRAY",
        },
        // `TEXT` cannot be a key without a prefix length: a test that indexes a text column
        // declares `VARCHAR(255)` itself. `BOOLEAN` is `TINYINT(1)` and reads back as `Int`.
        // The session time zone is UTC, so `DATETIME(6)` holds a `TimestampTz` as UTC.
        Kind::Mysql => match l {
            Logical::Int => "BIGINT",
            Logical::Float => "DOUBLE",
            Logical::Text => "TEXT",
            Logical::Bool => "BOOLEAN",
            Logical::Blob => "LONGBLOB",
            Logical::Timestamp => "DATETIME(6)",
            Logical::TimestampTz => "DATETIME(6)",
            Logical::Date => "DATE",
            Logical::Uuid => "CHAR(36)",
            Logical::Numeric => "DECIMAL(38,10)",
            Logical::Json => "JSON",
            Logical::Time => "TIME(6)",
            Logical::Interval => "TIME(6)",
            // MySQL has no arrays: binding one is a `ParameterType` error. The column is text
            // so that tables listing every logical type can still be created.
            Logical::IntArray | Logical::TextArray => "TEXT",
        },
    }
}

/// Unwraps an expected error and checks its kind; panics with `what` and the value otherwise.
#[track_caller]
pub fn expect_kind<T: std::fmt::Debug>(
    what: &str,
    r: Result<T, SqlMiddlewareDbError>,
    kind: ErrorKind,
) -> SqlMiddlewareDbError {
    match r {
        Ok(v) => panic!("{what}: expected an error of kind {kind:?}, got Ok({v:?})"),
        Err(e) => {
            assert_eq!(e.kind(), kind, "{what}: wrong error kind: {e:?}");
            e
        }
    }
}

/// Expands each `async fn name(db) { body }` into one `#[tokio::test]` per backend, in modules
/// `sqlite`, `postgres` (feature `postgres`, inside its own schema), `turso` (feature
/// `turso`) and `mysql` (feature `mysql`, inside its own database). `db` is a [`TestDb`] on a
/// fresh database.
///
/// An optional first line `let <pattern> = <expr>;` runs at the start of every generated test,
/// before its database is created, and the value lives until the test ends (for example
/// `let _group = groups::enter("cancel");`, see `common::groups`).
///
/// Inside a module other than the crate root, import the macro with `use crate::backend_tests;`.
#[macro_export]
macro_rules! backend_tests {
    ($(async fn $name:ident($db:ident) $body:block)*) => {
        $crate::backend_tests! { let () = (); $(async fn $name($db) $body)* }
    };
    (let $guard:pat = $setup:expr; $(async fn $name:ident($db:ident) $body:block)*) => {
        #[cfg(feature = "sqlite")]
        mod sqlite {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[allow(unused_braces)]
                async fn $name() {
                    let $guard = $setup;
                    let $db = $crate::common::backends::sqlite().await;
                    $body
                }
            )*
        }

        #[cfg(feature = "postgres")]
        mod postgres {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[allow(unused_braces)]
                async fn $name() {
                    let $guard = $setup;
                    $crate::common::pg::with_schema(|url| async move {
                        let $db = $crate::common::backends::postgres(&url).await;
                        $body
                    })
                    .await;
                }
            )*
        }

        #[cfg(feature = "mysql")]
        mod mysql {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[allow(unused_braces)]
                async fn $name() {
                    let $guard = $setup;
                    $crate::common::mysql::with_database(|url| async move {
                        let $db = $crate::common::backends::mysql(&url).await;
                        $body
                    })
                    .await;
                }
            )*
        }

        #[cfg(feature = "turso")]
        mod turso {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[allow(unused_braces)]
                async fn $name() {
                    let $guard = $setup;
                    let $db = $crate::common::backends::turso().await;
                    $body
                }
            )*
        }
    };
}

/// A pool of one connection from `builder`, and that connection with an empty table
/// `t (id INTEGER PRIMARY KEY)`.
pub async fn one_connection_with_table(
    builder: PoolBuilder,
) -> (ConfigAndPool, MiddlewarePoolConnection) {
    let db = builder.max_size(1).build().await.expect("pool of one");
    let mut c = db.get_connection().await.expect("checkout");
    c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY)")
        .await
        .expect("create t");
    (db, c)
}
