//! The SQLite wing: rusqlite (bundled SQLite) on a deadpool pool with a hop-free recycle.
//!
//! The same file set as every wing — `config` (settings, manager, pool), `url`, `dialect` (the
//! family's SQL), `open` (opening and setting up a connection), `conn` (the connection and its
//! `Wing` (`contract.rs`) operations), `exec` (running statements), `tx` (transactions),
//! `session` (what statements do to the session, from the engine's authorizer, and its reset),
//! `deadline` (time limits), `recover` (recovery after a fault or a cancelled call), `stmt`,
//! `params`, `rows`, `error`, `stream`, `bulk` — plus
//! SQLite's extras: `offload` (the execution model: inline or on the blocking pool), `busy`
//! (lock waits off the async threads) and, only with `--cfg sqlmw_bench_slowdown`, `slowdown`
//! (the nightly comparison's deliberate regression).

pub(crate) mod bulk;
pub(crate) mod busy;
pub(crate) mod config;
pub(crate) mod conn;
pub(crate) mod deadline;
pub(crate) mod dialect;
pub(crate) mod error;
pub(crate) mod exec;
#[cfg(feature = "migrate")]
pub(crate) mod migrate;
pub(crate) mod offload;
pub(crate) mod open;
pub(crate) mod params;
pub(crate) mod recover;
pub(crate) mod rows;
pub(crate) mod session;
#[cfg(sqlmw_bench_slowdown)]
mod slowdown;
pub(crate) mod stmt;
pub(crate) mod stream;
#[cfg(feature = "testing")]
pub(crate) mod testdb;
pub(crate) mod tx;
pub(crate) mod url;

pub use config::SqliteExecModel;

/// The pool type of the SQLite wing.
pub(crate) type Pool = deadpool::managed::Pool<config::SqliteManager>;
/// The SQLite wing's prepared statement.
pub(crate) type Stmt = stmt::SqliteStmt;
/// A checked-out SQLite connection.
pub(crate) type Conn = deadpool::managed::Object<config::SqliteManager>;
/// A statement of the sqlite wing being streamed.
pub(crate) type Cursor<T> = stream::SqliteCursor<T>;

/// The engine's name as the OpenTelemetry conventions give it (`db.system`).
pub(crate) const SYSTEM: &str = "sqlite";
pub(crate) use crate::readers_pool::{checkout, checkout_reader, close, status};
pub(crate) use config::{Settings, build, server};
pub(crate) use dialect::DIALECT;
