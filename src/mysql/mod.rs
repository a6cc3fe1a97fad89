//! The MySQL/MariaDB wing: mysql_async connections on a deadpool pool of our own, with a
//! bounded statement cache per connection.
//!
//! The same file set as every wing — `config` (settings, manager, pool), `conn` (the
//! connection and its `Wing` (`contract.rs`) operations), `exec` (running statements), `tx`
//! (transactions), `session` (what a statement leaves in the session, and the reset on
//! return), `recover` (giving up and replacing a connection, settling what an earlier call
//! left), `open` (the `after_connect` hook and MySQL's checks on a connection being opened),
//! `deadline` (time limits, and stopping a statement past its limit with `KILL QUERY`),
//! `stmt`, `params`, `rows`, `error`, `bulk`, `stream` — plus MySQL's extras: `check` (asking
//! the server what a statement did to the session), `warnings` (a value the server changed
//! with only a warning), `counts` (row counts with one meaning), `sets` (several result sets),
//! `liveness` (connections the server closed while idle), `tls` (with `tls_probe` and
//! `tls_names`, its chain-only check), `hosts` (multi-host URLs and the pool's host book),
//! `health` (whether a node, Galera's included, may be used) and `replica` (readers: read-only
//! sessions, on replicas when the pool has some).

pub(crate) mod bulk;
pub(crate) mod check;
pub(crate) mod config;
pub(crate) mod conn;
pub(crate) mod counts;
mod deadline;
pub(crate) mod dialect;
pub(crate) mod error;
mod exec;
pub(crate) mod health;
pub(crate) mod hosts;
mod liveness;
#[cfg(feature = "migrate")]
pub(crate) mod migrate;
mod open;
pub(crate) mod params;
mod recover;
pub(crate) mod replica;
pub(crate) mod rows;
pub(crate) mod session;
mod sets;
pub(crate) mod stmt;
pub(crate) mod stream;
#[cfg(feature = "testing")]
pub(crate) mod testdb;
pub(crate) mod tls;
#[cfg(feature = "mysql-tls")]
mod tls_names;
#[cfg(feature = "mysql-tls")]
mod tls_probe;
mod tx;
pub(crate) mod url;
mod warnings;

/// The pool type of the MySQL wing.
pub(crate) type Pool = deadpool::managed::Pool<config::MyManager>;
/// The MySQL wing's prepared statement.
pub(crate) type Stmt = stmt::MyStmt;
/// A checked-out MySQL connection.
pub(crate) type Conn = conn::MyConnection;
/// A statement of the MySQL wing being streamed.
pub(crate) type Cursor<T> = stream::MyCursor<T>;

/// The engine's name as the OpenTelemetry conventions give it (`db.system`).
pub(crate) const SYSTEM: &str = "mysql";
pub(crate) use config::{Settings, build, checkout, close, server, status};
pub(crate) use dialect::DIALECT;
pub(crate) use replica::checkout_reader;
