#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, rust_2018_idioms)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// Layers, each importing only the ones below it (docs/dev/Design.md):
//   face:     lib.rs (with the prelude and the bench hooks), api/ (each engine's own methods)
//   hall:     config/, pool, query, statement, stream, transaction, bulk, dispatch
//   wings:    sqlite/, postgres/, turso/, mysql/
//   neutral:  contract (the backend trait), pooling, knobs, limits, url_text, setup, server, …
//   family:   sqlite_family/ (shared by the SQLite and Turso wings)
//   core:     engine, value, results, decode, error, translation, sql/ (the one SQL scanner)

// No engine is on by default (README, "Install"): a build without one stops here with one
// error that says what to add, instead of compiling a crate that could open nothing.
#[cfg(not(any(
    feature = "sqlite",
    feature = "postgres",
    feature = "turso",
    feature = "mysql"
)))]
compile_error!(
    "sql-middleware needs at least one engine feature: `sqlite`, `postgres`, `turso` or `mysql` \
     (for example `cargo add sql-middleware --features sqlite`)"
);

/// Declares the crate's items only when an engine is enabled, so that the error above is the
/// only one a build without an engine reports.
macro_rules! with_an_engine {
    ($($item:item)*) => {
        $(
            #[cfg(any(feature = "sqlite", feature = "postgres", feature = "turso", feature = "mysql"))]
            $item
        )*
    };
}

with_an_engine! {
    // core
    pub mod decode;
    mod engine;
    pub mod error;
    mod interval;
    mod json;
    mod param;
    pub mod results;
    mod sql;
    #[cfg(feature = "time")]
    mod time_types;
    pub mod translation;
    pub mod value;

    // the SQLite family, the neutral layer
    mod contract;
    #[cfg(feature = "_server")]
    mod credentials;
    #[cfg(feature = "_server")]
    pub use credentials::{Login, Password};
    mod deadline;
    mod knobs;
    mod limits;
    mod pooling;
    #[cfg(feature = "_embedded")]
    mod readers_pool;
    mod setup;
    mod stats;
    #[cfg(feature = "metrics")]
    mod stats_metrics;
    mod stmt_cache;
    mod telemetry;
    #[cfg(feature = "postgres")]
    pub use postgres::listen::{Listener, Notification};
    #[cfg(feature = "postgres")]
    pub use postgres::replica::ReplicaStatus;
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    mod replica_health;
    #[cfg(feature = "_server")]
    mod server;
    #[cfg(feature = "_server")]
    pub use server::{SslMode, StatementCache};
    pub use stats::{ExecStats, PoolStats, RetryStats, WAIT_BUCKET_BOUNDS, WaitStats};
    pub use stmt_cache::StatementCacheStats;
    mod url_text;
    #[cfg(feature = "serde")]
    pub use config::serde_config::Config;
    #[cfg(feature = "_embedded")]
    mod sqlite_family;

    // wings
    #[cfg(feature = "mysql")]
    mod mysql;
    #[cfg(feature = "postgres")]
    mod postgres;
    #[cfg(feature = "sqlite")]
    mod sqlite;
    #[cfg(feature = "turso")]
    mod turso;

    // hall
    mod after_connect;
    mod bulk;
    pub mod config;
    mod dispatch;
    #[cfg(feature = "migrate")]
    pub mod migrate;
    #[cfg(feature = "testing")]
    pub mod testing;
    pub mod executor;
    #[cfg(feature = "_embedded")]
    mod group_commit;
    mod connection;
    pub mod pool;
    pub mod query;
    pub mod retry;
    mod savepoint;
    pub mod statement;
    pub mod stream;
    pub mod transaction;

    // face
    /// Each engine's own methods on the shared types (constructors, settings, raw access).
    mod api {
        #[cfg(feature = "mysql")]
        mod mysql;
        #[cfg(feature = "postgres")]
        mod postgres;
        #[cfg(any(feature = "postgres", feature = "mysql"))]
        mod replicas;
        #[cfg(feature = "sqlite")]
        pub(crate) mod sqlite;
        #[cfg(feature = "turso")]
        pub(crate) mod turso;
    }
    pub mod guide;

    /// Entry points for the repository's micro-benchmarks, hidden from the documentation and
    /// not part of the stable API: they may change or go away in any release.
    ///
    /// Most benchmarks measure the crate from outside, through its public API. The few that
    /// time one internal step on its own reach it here:
    ///
    /// - `sqlite`, `turso`: the materialisation of a result set and the binding (or
    ///   conversion) of parameters, each as a timed loop over a prepared lookup, run by the
    ///   crate's own code;
    /// - [`timestamp_text`](bench_hooks::timestamp_text),
    ///   [`timestamptz_text`](bench_hooks::timestamptz_text),
    ///   [`date_text`](bench_hooks::date_text): the text forms SQLite and Turso store dates and
    ///   times in, so that a raw-driver baseline stores the same text with the same work.
    #[doc(hidden)]
    pub mod bench_hooks {
        #[cfg(feature = "sqlite")]
        pub use crate::api::sqlite::bench as sqlite;
        #[cfg(feature = "_embedded")]
        pub use crate::sqlite_family::text_form::{date_text, timestamp_text, timestamptz_text};
        #[cfg(feature = "turso")]
        pub use crate::api::turso::bench as turso;
    }

    /// The names most programs need: `use sql_middleware::prelude::*;`.
    pub mod prelude {
        pub use crate::after_connect::NewConnection;
        pub use crate::config::{ConfigAndPool, DatabaseType, PoolBuilder};
        pub use crate::decode::{FromRow, FromValue, SqlRow};
        pub use crate::error::{ErrorKind, SqlMiddlewareDbError};
        pub use crate::executor::Executor;
        pub use crate::json::Json;
        pub use crate::param::ToValue;
        pub use crate::pool::{MiddlewarePool, MiddlewarePoolConnection};
        pub use crate::query::QueryAndParams;
        pub use crate::retry::{RetryError, RetryPolicy};
        pub use crate::results::{CustomDbRow, ResultSet};
        #[cfg(feature = "sqlite")]
        pub use crate::sqlite::SqliteExecModel;
        pub use crate::statement::PreparedStatement;
        pub use crate::stream::RowStream;
        pub use crate::transaction::Tx;
        pub use crate::translation::TranslationMode;
        pub use crate::value::RowValues;
        #[cfg(feature = "derive")]
        pub use sql_middleware_derive::FromRow;
    }

    pub use after_connect::NewConnection;
    pub use config::{ConfigAndPool, DatabaseType, PoolBuilder};
    pub use decode::{ColumnRef, FromRow, FromValue, SqlRow};
    pub use error::{Backend, DecodeError, DriverError, ErrorKind, Result, SqlMiddlewareDbError};
    /// `#[derive(FromRow)]`: named fields by column name, tuple fields by position, with
    /// `#[sql(rename = "..")]`, `#[sql(default)]`, `#[sql(try_from = "T")]` and `#[sql(flatten)]`
    /// (feature `derive`; see the `sql-middleware-derive` crate).
    #[cfg(feature = "derive")]
    pub use sql_middleware_derive::FromRow;
    /// `#[sql_middleware::test]`: a test with a pool on a fresh database of its own (feature
    /// `testing`; see [`testing`] and the `sql-middleware-derive` crate).
    #[cfg(feature = "testing")]
    pub use sql_middleware_derive::test;
    /// The crate's error type, by its short name.
    pub type Error = SqlMiddlewareDbError;
    pub use executor::Executor;
    pub use interval::{Interval, ParseIntervalError};
    pub use json::Json;
    pub use param::ToValue;
    /// What [`params!`] expands to; not called directly.
    #[doc(hidden)]
    pub use param::collect_params as __params_collect;
    pub use pool::{MiddlewarePool, MiddlewarePoolConnection, PoolStatus};
    pub use query::{QueryAndParams, QueryBuilder};
    pub use retry::{RetryError, RetryPolicy, TxFuture};
    pub use results::{Columns, CustomDbRow, ResultSet};
    #[cfg(feature = "sqlite")]
    pub use sqlite::SqliteExecModel;
    pub use statement::PreparedStatement;
    pub use stream::RowStream;
    pub use transaction::Tx;
    pub use translation::{PlaceholderStyle, TranslationMode, translate_placeholders};
    pub use value::{RowValues, ValueRef};

    /// The driver crates, re-exported so raw-access code uses the exact versions this crate links.
    pub mod drivers {
        #[cfg(feature = "sqlite")]
        pub use ::rusqlite;
        #[cfg(feature = "postgres")]
        pub use ::tokio_postgres;
        #[cfg(feature = "turso")]
        pub use ::turso;
        #[cfg(feature = "mysql")]
        pub use ::mysql_async;
    }
}
