//! The PostgreSQL wing: tokio-postgres pooled by deadpool-postgres, with a bounded statement
//! cache per connection.
//!
//! The same file set as every wing — `config` (settings, pool), `conn` (the connection and
//! its `Wing` (`contract.rs`) operations), `exec` (running statements), `tx` (transactions),
//! `session` (what a checkout changed in the session, and its reset), `recover` (giving up and
//! replacing a connection after a fault), `open` (the `after_connect` hook on a connection
//! being opened), `deadline` (time limits, and cancelling a statement past its limit), `stmt`,
//! `params`, `rows`, `error`, `bulk`, `stream`; and, as in the MySQL wing, `liveness`
//! (connections the server closed while idle).

pub(crate) mod attrs;
pub(crate) mod bulk;
pub(crate) mod config;
pub(crate) mod conn;
mod deadline;
pub(crate) mod dialect;
pub(crate) mod effects;
pub(crate) mod error;
mod exec;
pub(crate) mod hosts;
pub(crate) mod listen;
mod liveness;
#[cfg(feature = "migrate")]
pub(crate) mod migrate;
pub(crate) mod numeric;
mod open;
pub(crate) mod params;
mod pure;
mod recover;
pub(crate) mod replica;
pub(crate) mod rows;
mod session;
pub(crate) mod stmt;
pub(crate) mod stream;
#[cfg(feature = "testing")]
pub(crate) mod testdb;
pub(crate) mod tls;
mod tx;
pub(crate) mod types;
pub(crate) mod url;

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
pub(crate) use config::{Settings, build, checkout, checkout_reader, close, server, status};
pub(crate) use dialect::DIALECT;
