//! The Turso wing: the `turso` crate (default features off) on a deadpool pool of our own.
//!
//! The same file set as every wing — `config` (settings, manager, pool), `url`, `dialect` (the
//! family's SQL), `open` (opening and setting up a connection), `conn` (the connection and its
//! `Wing` (`contract.rs`) operations), `exec` (running statements), `tx` (transactions),
//! `deadline` (time limits), `recover` (recovery after a fault or a cancelled call), `session`
//! (what a statement does beyond its rows, from its compiled program, and the check of a
//! session on return), `stmt`, `params`, `rows`, `error`, `stream`, `bulk` — plus Turso's extra: `busy` (lock waits on the runtime's timer).

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
pub(crate) mod open;
pub(crate) mod params;
pub(crate) mod recover;
pub(crate) mod rows;
pub(crate) mod session;
pub(crate) mod stmt;
pub(crate) mod stream;
#[cfg(feature = "testing")]
pub(crate) mod testdb;
pub(crate) mod tx;
pub(crate) mod url;

/// The pool type of the Turso wing.
pub(crate) type Pool = deadpool::managed::Pool<config::TursoManager>;
/// The Turso wing's prepared statement.
pub(crate) type Stmt = stmt::TursoStmt;
/// A checked-out Turso connection.
pub(crate) type Conn = deadpool::managed::Object<config::TursoManager>;
/// A statement of the turso wing being streamed.
pub(crate) type Cursor<T> = stream::TursoCursor<T>;

/// The engine's name as the OpenTelemetry conventions give it (`db.system`).
pub(crate) const SYSTEM: &str = "turso";
pub(crate) use crate::readers_pool::{checkout, checkout_reader, close, status};
pub(crate) use config::{Settings, build, server};
pub(crate) use dialect::DIALECT;
