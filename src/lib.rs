#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, rust_2018_idioms)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod batch;
#[cfg(feature = "bench")]
#[doc(hidden)]
pub mod bench_support;
pub mod config;
pub mod decode;
pub mod error;
pub mod pool;
pub mod prelude;
pub mod query;
pub mod results;
pub mod statement;
#[cfg(any(feature = "sqlite", feature = "turso"))]
mod stmt_cache;
mod text_form;
pub mod transaction;
pub mod translation;
pub mod value;

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "turso")]
mod turso;

pub use config::{ConfigAndPool, DatabaseType, PoolBuilder};
pub use decode::{ColumnRef, FromRow, FromValue, SqlRow};
pub use error::{Backend, DecodeError, ErrorKind, SqlMiddlewareDbError};
pub use pool::{MiddlewarePool, MiddlewarePoolConnection, PoolStatus};
pub use query::{QueryAndParams, QueryBuilder};
pub use results::{Columns, CustomDbRow, ResultSet};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteExecModel;
pub use statement::PreparedStatement;
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
}
