//! The two pools of the single-writer mode, as SQLite and Turso both keep them: the pool the
//! engine's settings build is the writer's, and its manager holds the readers' pool. Closing,
//! status and checkouts for reads are the same for both engines.

use deadpool::managed::{Manager, Object, Pool};

use crate::error::{Result, SqlMiddlewareDbError};
use crate::pooling::{self, Counters, PoolStatus};

/// A manager whose pool may be the writer's of the single-writer mode.
pub(crate) trait WithReaders: Manager + Sized {
    /// The readers' pool, in the single-writer mode.
    fn readers(&self) -> Option<&Pool<Self>>;
}

/// Closes the pool (and its readers' pool).
pub(crate) fn close<M: WithReaders>(pool: &Pool<M>) {
    pool.close();
    if let Some(r) = pool.manager().readers() {
        r.close();
    }
}

/// A connection for reads: one of the readers in the single-writer mode, else any connection.
pub(crate) async fn checkout_reader<M: WithReaders>(pool: &Pool<M>) -> Result<Object<M>>
where
    M::Error: std::fmt::Display,
    SqlMiddlewareDbError: From<M::Error>,
{
    pooling::get(pool.manager().readers().unwrap_or(pool)).await
}

/// Checks out a connection (the writer, in the single-writer mode).
pub(crate) async fn checkout<M: WithReaders>(pool: &Pool<M>) -> Result<Object<M>>
where
    M::Error: std::fmt::Display,
    SqlMiddlewareDbError: From<M::Error>,
{
    pooling::get(pool).await
}

/// The pool's size and availability, its readers' pool counted in.
pub(crate) fn status<M: WithReaders>(pool: &Pool<M>, counters: &Counters) -> PoolStatus {
    pooling::status(pool, pool.manager().readers(), counters)
}
