//! The Turso backend: the `turso` crate (default features off) on a deadpool pool of our own.

pub(crate) mod config;
pub(crate) mod conn;
pub(crate) mod error;
pub(crate) mod exec;
pub(crate) mod params;
pub(crate) mod rows;

pub(crate) use config::build_pool;

/// The pool type of the Turso backend.
pub(crate) type Pool = deadpool::managed::Pool<config::TursoManager>;
/// A checked-out Turso connection.
pub(crate) type Object = deadpool::managed::Object<config::TursoManager>;
