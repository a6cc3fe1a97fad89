//! The engines the test suites run on: listed once, in [`engines!`], each with a module here
//! that implements [`Engine`].
//!
//! What names every engine is generated from the list: [`Kind`] and its methods (the name, the
//! column types, the SQL spellings, a fresh database, a second pool), the per-engine modules of
//! `backend_tests!` (`<topic>::<engine>::<test>`), and the choice of the reliability suite's
//! fingerprint table. Adding an engine to the suites takes:
//!
//! 1. an entry in [`engines!`], and its module here (`pub mod <name>;` below) implementing
//!    [`Engine`];
//! 2. for a server engine, its provisioning module in `tests/common/` (as `pg/` and
//!    `mysql.rs`: the server found or started once per process, a schema or a database per
//!    test);
//! 3. its fingerprint table, `tests/reliability/fingerprint/tables/<name>.rs`.
//!
//! The compiler then points at every `match` on [`Kind`] in the topic files: each states a
//! documented difference between the engines, which the new engine answers too.

use std::future::Future;

use sql_middleware::prelude::*;
use sql_middleware::{DatabaseType, PoolBuilder};

use super::backends::{Logical, TestDb};

#[cfg(feature = "mysql")]
pub mod mysql;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(any(feature = "sqlite", feature = "turso"))]
pub mod sqlite;
#[cfg(feature = "turso")]
pub mod turso;

/// The engines, once each: `<module> "<cargo feature>" <Kind variant>;`, where `<module>` is
/// the engine's module here (its [`Engine`] is `<module>::<Variant>`) and the name its tests
/// run under (`<topic>::<module>::<test>`, so `-- mysql::` selects one engine).
///
/// `engines!([callback] args)` expands to `callback! { args <the entries> }`, with each entry's
/// documentation as `#[doc]` attributes. `callback` is a path to a macro: `[$crate::name]` for
/// an exported one, `[name]` for one in scope where `engines!` is called.
#[macro_export]
macro_rules! engines {
    ([$($then:tt)*] $args:tt) => {
        $($then)*! {
            $args
            /// SQLite through rusqlite: a file database in a temporary directory of its own.
            sqlite "sqlite" Sqlite;
            /// PostgreSQL through tokio-postgres: a schema of its own on the server `pg` finds.
            postgres "postgres" Postgres;
            /// Turso: a file database in a temporary directory of its own.
            turso "turso" Turso;
            /// MySQL or MariaDB through mysql_async: a database of its own on the server
            /// `mysql` finds.
            mysql "mysql" Mysql;
        }
    };
}

/// What an engine supplies to the suites. Its implementation lives in the engine's module and
/// is built with the engine's cargo feature; [`Kind`]'s methods dispatch to it.
pub trait Engine {
    /// What the library reports for a pool of this engine.
    const DATABASE_TYPE: DatabaseType;

    /// How it spells the SQL the topics share.
    const SQL: Sql;

    /// The column type to declare for `l` (see [`Logical`]).
    fn ty(l: Logical) -> &'static str;

    /// Runs `body` on a database of its own, with a pool of 4 on it: a file in a temporary
    /// directory, or a schema or database on the server. Whatever the body made is removed
    /// afterwards, also when it panics.
    fn with_fresh_db<F, Fut>(body: F) -> impl Future<Output = ()>
    where
        F: FnOnce(TestDb) -> Fut,
        Fut: Future<Output = ()>;

    /// A builder for another pool on `db`'s database (for pool-option tests).
    fn builder(db: &TestDb) -> PoolBuilder;

    /// A URL of the engine that needs no test database (in memory, or the server's base URL).
    fn base_url() -> String;

    /// A builder for a pool on the same (`sqlite_memory`, or the server's base URL).
    fn base_builder() -> PoolBuilder;

    /// `Ok` when `conn` (which has just answered `SELECT 1`) is outside any transaction,
    /// neither open nor aborted; otherwise what the engine says instead.
    fn outside_tx(conn: &mut MiddlewarePoolConnection) -> impl Future<Output = Result<(), String>>;

    /// A stable identity of the physical connection behind `conn`, when the engine offers one.
    fn conn_identity(conn: &mut MiddlewarePoolConnection) -> impl Future<Output = Option<i64>>;
}

/// How an engine spells the SQL the topics share, where the engines spell it differently.
/// A topic builds such SQL with [`TestDb::sql`] instead of a `match` on [`Kind`].
#[derive(Debug)]
pub struct Sql {
    /// The keyword of `CREATE … TABLE` for a temporary table: `TEMP`, or `TEMPORARY` (MySQL
    /// has no shorthand).
    pub temp: &'static str,
    /// The integer type a `CAST` names: `BIGINT`, or `SIGNED` (MySQL casts to no `BIGINT`).
    pub cast_int: &'static str,
    /// What quotes an identifier: `"`, or a backtick (MySQL reads `"…"` as a string).
    pub quote: char,
    /// Whether `||` concatenates text (MySQL reads it as a logical OR, and concatenates with
    /// `CONCAT()`).
    pub pipes_concat: bool,
    /// The engine's own placeholder, for SQL sent with translation off.
    pub placeholder: Placeholder,
    /// The statement that opens a transaction in raw SQL: `BEGIN`, or `START TRANSACTION`.
    pub begin: &'static str,
}

/// An engine's own placeholder for the n-th parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholder {
    /// `$1`, `$2`, … (Postgres).
    Dollar,
    /// `?1`, `?2`, … (SQLite, Turso).
    QuestionNumbered,
    /// `?`, by position (MySQL).
    Question,
}

impl Sql {
    /// `ident` quoted as an identifier, its quote characters doubled.
    pub fn quote(&self, ident: &str) -> String {
        let q = self.quote;
        format!("{q}{}{q}", ident.replace(q, &format!("{q}{q}")))
    }

    /// `a` and `b` concatenated as text.
    pub fn concat(&self, a: &str, b: &str) -> String {
        if self.pipes_concat {
            format!("{a} || {b}")
        } else {
            format!("CONCAT({a}, {b})")
        }
    }

    /// `expr` cast to a 64-bit integer.
    pub fn cast_int(&self, expr: &str) -> String {
        format!("CAST({expr} AS {})", self.cast_int)
    }

    /// The engine's own placeholder for parameter `n` (from 1).
    pub fn param(&self, n: usize) -> String {
        match self.placeholder {
            Placeholder::Dollar => format!("${n}"),
            Placeholder::QuestionNumbered => format!("?{n}"),
            Placeholder::Question => "?".to_owned(),
        }
    }
}

/// [`Kind`] and its methods, from the list.
macro_rules! kinds {
    (() $($(#[$doc:meta])* $module:ident $feature:literal $Variant:ident;)*) => {
        /// The engine a [`TestDb`] runs on: one variant per entry of [`engines!`], whether or
        /// not this build has the engine.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Kind {
            $($(#[$doc])* $Variant,)*
        }

        impl Kind {
            /// Every engine of the list, in its order.
            pub const ALL: &[Kind] = &[$(Kind::$Variant),*];

            /// Lower-case name, for summary lines and messages: the engine's module in test
            /// paths.
            pub fn name(self) -> &'static str {
                match self {
                    $(Kind::$Variant => stringify!($module),)*
                }
            }

            /// The engine's cargo feature.
            pub fn feature(self) -> &'static str {
                match self {
                    $(Kind::$Variant => $feature,)*
                }
            }

            /// Whether this build has the engine (its cargo feature is on).
            pub fn in_build(self) -> bool {
                match self {
                    $(Kind::$Variant => cfg!(feature = $feature),)*
                }
            }

            /// The engine named `name` (as [`Kind::name`] spells it).
            pub fn from_name(name: &str) -> Option<Kind> {
                Kind::ALL.iter().copied().find(|k| k.name() == name)
            }

            /// What the library reports for a pool of this engine.
            pub fn database_type(self) -> DatabaseType {
                match self {
                    $(#[cfg(feature = $feature)]
                    Kind::$Variant => <$module::$Variant as Engine>::DATABASE_TYPE,)*
                    #[allow(unreachable_patterns)]
                    other => other.not_in_build(),
                }
            }

            /// The column type to declare for `l` on this engine.
            pub fn ty(self, l: Logical) -> &'static str {
                match self {
                    $(#[cfg(feature = $feature)]
                    Kind::$Variant => <$module::$Variant as Engine>::ty(l),)*
                    #[allow(unreachable_patterns)]
                    other => other.not_in_build(),
                }
            }

            /// How this engine spells the SQL the topics share.
            pub fn sql(self) -> &'static Sql {
                match self {
                    $(#[cfg(feature = $feature)]
                    Kind::$Variant => &<$module::$Variant as Engine>::SQL,)*
                    #[allow(unreachable_patterns)]
                    other => other.not_in_build(),
                }
            }

            /// Runs `body` on a fresh database of this engine (see [`Engine::with_fresh_db`]).
            ///
            /// The engine's future is boxed: this one holds every engine's, and a test on one
            /// engine keeps its stack for the engine's own work (Turso parses deep SQL on it).
            pub async fn with_fresh_db<F, Fut>(self, body: F)
            where
                F: FnOnce(TestDb) -> Fut,
                Fut: Future<Output = ()>,
            {
                match self {
                    $(#[cfg(feature = $feature)]
                    Kind::$Variant => {
                        Box::pin(<$module::$Variant as Engine>::with_fresh_db(body)).await
                    })*
                    #[allow(unreachable_patterns)]
                    other => {
                        let _ = body;
                        other.not_in_build()
                    }
                }
            }

            /// A builder for another pool on `db`'s database.
            pub(crate) fn builder(self, db: &TestDb) -> PoolBuilder {
                match self {
                    $(#[cfg(feature = $feature)]
                    Kind::$Variant => <$module::$Variant as Engine>::builder(db),)*
                    #[allow(unreachable_patterns)]
                    other => {
                        let _ = db;
                        other.not_in_build()
                    }
                }
            }

            /// A URL of this engine that needs no test database.
            pub fn base_url(self) -> String {
                match self {
                    $(#[cfg(feature = $feature)]
                    Kind::$Variant => <$module::$Variant as Engine>::base_url(),)*
                    #[allow(unreachable_patterns)]
                    other => other.not_in_build(),
                }
            }

            /// A builder for a pool that needs no test database.
            pub fn base_builder(self) -> PoolBuilder {
                match self {
                    $(#[cfg(feature = $feature)]
                    Kind::$Variant => <$module::$Variant as Engine>::base_builder(),)*
                    #[allow(unreachable_patterns)]
                    other => other.not_in_build(),
                }
            }

            /// See [`Engine::outside_tx`].
            pub async fn outside_tx(
                self,
                conn: &mut MiddlewarePoolConnection,
            ) -> Result<(), String> {
                match self {
                    $(#[cfg(feature = $feature)]
                    Kind::$Variant => <$module::$Variant as Engine>::outside_tx(conn).await,)*
                    #[allow(unreachable_patterns)]
                    other => {
                        let _ = conn;
                        other.not_in_build()
                    }
                }
            }

            /// See [`Engine::conn_identity`].
            pub async fn conn_identity(self, conn: &mut MiddlewarePoolConnection) -> Option<i64> {
                match self {
                    $(#[cfg(feature = $feature)]
                    Kind::$Variant => <$module::$Variant as Engine>::conn_identity(conn).await,)*
                    #[allow(unreachable_patterns)]
                    other => {
                        let _ = conn;
                        other.not_in_build()
                    }
                }
            }
        }
    };
}

crate::engines!([kinds]());

impl Kind {
    /// The engines this build has, in the list's order.
    pub fn built() -> Vec<Kind> {
        Kind::ALL.iter().copied().filter(|k| k.in_build()).collect()
    }

    fn not_in_build(self) -> ! {
        panic!(
            "{} is not in this build (cargo feature `{}`)",
            self.name(),
            self.feature()
        )
    }
}
