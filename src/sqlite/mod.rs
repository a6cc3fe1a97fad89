//! The SQLite backend: rusqlite (bundled SQLite) on a deadpool pool with a hop-free recycle.

pub(crate) mod config;
pub(crate) mod conn;
pub(crate) mod error;
pub(crate) mod exec;
pub(crate) mod params;
pub(crate) mod rows;

pub use config::SqliteExecModel;

/// The pool type of the SQLite backend.
pub(crate) type Pool = deadpool::managed::Pool<config::SqliteManager>;
/// A checked-out SQLite connection.
pub(crate) type Object = deadpool::managed::Object<config::SqliteManager>;

use crate::config::PoolOptions;
use crate::error::Result;

pub(crate) fn build_pool(
    target: config::SqliteTarget,
    opts: config::SqliteOptions,
    pool: &PoolOptions,
) -> Result<Pool> {
    let manager = config::SqliteManager::new(target, opts)?;
    Pool::builder(manager)
        .max_size(pool.max_size)
        .wait_timeout(Some(pool.wait_timeout))
        .create_timeout(Some(pool.create_timeout))
        .recycle_timeout(Some(pool.recycle_timeout))
        .runtime(deadpool::Runtime::Tokio1)
        .build()
        .map_err(|e| {
            crate::error::SqlMiddlewareDbError::new(crate::error::ErrorKind::Config, e.to_string())
        })
}
