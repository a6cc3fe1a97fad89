//! The neutral pool layer, below the wings and above the core: the pool settings every backend
//! shares, the one deadpool builder, the mapping of deadpool's errors, and [`PoolStatus`].
//!
//! The wings import this module and the core only; the hall (`pool.rs`, `config.rs`) imports the
//! wings. deadpool is one release in the lockfile (deadpool-postgres re-exports the same
//! `deadpool::managed` types), so every function here is generic over the manager.

use std::time::Duration;

use deadpool::managed::{Manager, Pool, PoolError, TimeoutType};

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// Pool settings shared by every backend.
#[derive(Debug, Clone)]
pub(crate) struct PoolOptions {
    pub(crate) max_size: usize,
    pub(crate) wait_timeout: Duration,
    pub(crate) create_timeout: Duration,
    pub(crate) recycle_timeout: Duration,
}

impl Default for PoolOptions {
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(2, usize::from);
        Self {
            max_size: (cpus * 2).max(4),
            wait_timeout: Duration::from_secs(10),
            create_timeout: Duration::from_secs(10),
            recycle_timeout: Duration::from_secs(5),
        }
    }
}

/// A snapshot of a pool's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStatus {
    /// The configured maximum.
    pub max_size: usize,
    /// Connections currently open (checked out or idle).
    pub size: usize,
    /// Idle connections ready for checkout.
    pub available: usize,
    /// Tasks waiting for a connection.
    pub waiting: usize,
}

/// Builds a deadpool pool for `manager` with the shared settings and tokio's timers.
pub(crate) fn build<M: Manager>(manager: M, opts: &PoolOptions) -> Result<Pool<M>> {
    Pool::builder(manager)
        .max_size(opts.max_size)
        .wait_timeout(Some(opts.wait_timeout))
        .create_timeout(Some(opts.create_timeout))
        .recycle_timeout(Some(opts.recycle_timeout))
        .runtime(deadpool::Runtime::Tokio1)
        .build()
        .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Config, e.to_string()))
}

/// The size and availability of `pool`.
pub(crate) fn status<M: Manager>(pool: &Pool<M>) -> PoolStatus {
    let s = pool.status();
    PoolStatus {
        max_size: s.max_size,
        size: s.size,
        available: s.available,
        waiting: s.waiting,
    }
}

/// Maps a deadpool checkout error: the backend's own error keeps its kind; timeouts and a closed
/// pool get theirs, with a message that says what to change.
pub(crate) fn pool_error<E>(e: PoolError<E>) -> SqlMiddlewareDbError
where
    E: std::fmt::Display,
    SqlMiddlewareDbError: From<E>,
{
    match e {
        PoolError::Backend(e) => SqlMiddlewareDbError::from(e),
        PoolError::Timeout(TimeoutType::Wait) => SqlMiddlewareDbError::new(
            ErrorKind::PoolTimeout,
            "no pooled connection became free within the wait timeout; raise max_size or wait_timeout, or hold connections for less time",
        ),
        PoolError::Timeout(t) => SqlMiddlewareDbError::new(
            ErrorKind::PoolTimeout,
            format!(
                "the pool timed out while {} a connection",
                if matches!(t, TimeoutType::Create) {
                    "creating"
                } else {
                    "recycling"
                }
            ),
        ),
        PoolError::Closed => SqlMiddlewareDbError::new(ErrorKind::PoolClosed, "the pool is closed"),
        other => SqlMiddlewareDbError::new(ErrorKind::Config, other.to_string()),
    }
}
