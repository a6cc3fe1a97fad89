#![allow(dead_code)]
//! One test body, every engine: fresh databases per test and the [`backend_tests!`] macro.
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
//! and gets one copy of the test per engine of the list (`common::engines`), each in the
//! engine's module and built with its feature: `sqlite::selects_one`,
//! `postgres::selects_one`, `turso::selects_one`, `mysql::selects_one`. Test bodies use the
//! public API only, plus [`TestDb::kind`] where the engines document a difference.

use std::path::{Path, PathBuf};

use sql_middleware::prelude::*;
use sql_middleware::{ErrorKind, PoolBuilder};

pub use super::engines::{Kind, Sql};

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

pub use super::unique::unique_hex;

/// Where a [`TestDb`] lives, so that more pools can be opened on the same database.
#[derive(Debug, Clone)]
enum Location {
    File(PathBuf),
    Url(String),
}

/// A fresh database for one test, with its pool.
///
/// Field order matters: the pool is dropped before the test database is removed.
#[derive(Debug)]
pub struct TestDb {
    /// The pool on the test database.
    pub db: ConfigAndPool,
    /// Which backend it is.
    pub kind: Kind,
    location: Location,
    _owner: Option<sql_middleware::testing::TestDatabase>,
}

impl TestDb {
    /// A fresh file database of `kind` (SQLite or Turso), made by the crate's own
    /// `TestDatabase` from `url` (`sqlite::memory:`, `turso::memory:`) with a pool of four; the
    /// file is removed when the `TestDb` is dropped, also while a failed test unwinds.
    pub async fn fresh_file(kind: Kind, url: &str) -> TestDb {
        let owner = sql_middleware::testing::TestDatabase::builder()
            .url(url)
            .connections(4)
            .build()
            .await
            .unwrap_or_else(|e| panic!("[{}] cannot create a test database: {e}", kind.name()));
        TestDb {
            db: owner.pool().clone(),
            kind,
            location: Location::File(PathBuf::from(owner.location())),
            _owner: Some(owner),
        }
    }

    /// A database of `kind` on a server, at `url`.
    pub fn on_url(db: ConfigAndPool, kind: Kind, url: &str) -> TestDb {
        TestDb {
            db,
            kind,
            location: Location::Url(url.to_owned()),
            _owner: None,
        }
    }

    /// A new builder for another pool on the same database (for pool-option tests).
    pub fn builder(&self) -> PoolBuilder {
        self.kind.builder(self)
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

    /// The column type for `l` on this engine (see [`Logical`]).
    pub fn ty(&self, l: Logical) -> &'static str {
        self.kind.ty(l)
    }

    /// How this engine spells the SQL the topics share.
    pub fn sql(&self) -> &'static Sql {
        self.kind.sql()
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

/// Logical column types, mapped to a concrete column type per engine by [`TestDb::ty`] (each
/// engine's map is its `Engine::ty`, in `common::engines`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Logical {
    Int,
    Float,
    Text,
    /// Text that a key or a `UNIQUE` constraint can hold (MySQL keys no `TEXT` column).
    KeyText,
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
pub fn ty(kind: Kind, l: Logical) -> &'static str {
    kind.ty(l)
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

/// Expands each `async fn name(db) { body }` into one `#[tokio::test]` per engine of the list
/// (`common::engines`): in a module named after the engine, built with the engine's feature,
/// on a fresh database of its own (a file, a schema, a database: see `Engine::with_fresh_db`).
/// `db` is that [`TestDb`].
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
        $crate::engines! {
            [$crate::backend_tests_per_engine]
            { [let $guard = $setup;] $(async fn $name($db) $body)* }
        }
    };
}

/// [`backend_tests!`]'s expansion, given the engine list: one module per engine.
#[doc(hidden)]
#[macro_export]
macro_rules! backend_tests_per_engine {
    ($tests:tt $($(#[$doc:meta])* $module:ident $feature:literal $Variant:ident;)*) => {
        $(
            #[cfg(feature = $feature)]
            mod $module {
                #[allow(unused_imports)]
                use super::*;
                $crate::backend_tests_on! { $Variant $tests }
            }
        )*
    };
}

/// [`backend_tests!`]'s tests on one engine.
#[doc(hidden)]
#[macro_export]
macro_rules! backend_tests_on {
    (
        $Variant:ident
        { [let $guard:pat = $setup:expr;] $(async fn $name:ident($db:ident) $body:block)* }
    ) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[allow(unused_braces)]
            async fn $name() {
                let $guard = $setup;
                $crate::common::backends::Kind::$Variant
                    .with_fresh_db(|$db| async move { $body })
                    .await;
            }
        )*
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
