//! The PostgreSQL wing: tokio-postgres pooled by deadpool-postgres, with a bounded statement
//! cache per connection.
//!
//! The same file set as every wing — `config` (settings, pool), `conn` (the
//! `Wing` (`contract.rs`) operations), `stmt`, `params`, `rows`, `error`, `bulk`.

pub(crate) mod bulk;
pub(crate) mod config;
pub(crate) mod conn;
pub(crate) mod dialect;
pub(crate) mod effects;
pub(crate) mod error;
pub(crate) mod hosts;
pub(crate) mod listen;
pub(crate) mod numeric;
pub(crate) mod params;
pub(crate) mod replica;
pub(crate) mod rows;
pub(crate) mod stmt;
pub(crate) mod stream;
pub(crate) mod url;
mod timeout;
pub(crate) mod tls;
pub(crate) mod types;


/// The pool type of the Postgres wing.
pub(crate) type Pool = deadpool::managed::Pool<config::PgManager>;
/// The Postgres wing's prepared statement.
pub(crate) type Stmt = stmt::PgStmt;
/// A checked-out Postgres connection.
pub(crate) type Conn = conn::PgConnection;
/// A statement of the postgres wing being streamed.
pub(crate) type Cursor<T> = stream::PgCursor<T>;

/// The engine's name as the OpenTelemetry conventions give it (`db.system`).
pub(crate) const SYSTEM: &str = "postgresql";
pub(crate) use dialect::DIALECT;
pub(crate) use config::{Settings, build, checkout, checkout_reader, close, server};
