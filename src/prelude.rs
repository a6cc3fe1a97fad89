//! The names most programs need: `use sql_middleware::prelude::*;`.

pub use crate::after_connect::NewConnection;
pub use crate::config::{ConfigAndPool, DatabaseType, PoolBuilder};
pub use crate::decode::{FromRow, FromValue, SqlRow};
pub use crate::error::{ErrorKind, SqlMiddlewareDbError};
pub use crate::executor::Executor;
pub use crate::json::Json;
pub use crate::param::ToValue;
pub use crate::pool::{MiddlewarePool, MiddlewarePoolConnection};
pub use crate::query::QueryAndParams;
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
