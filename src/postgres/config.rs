//! PostgreSQL settings and pool construction.

use deadpool_postgres::{Manager, ManagerConfig, RecyclingMethod};
use tokio_postgres::NoTls;

use crate::config::PoolOptions;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// Postgres-specific settings.
#[derive(Debug, Clone)]
pub(crate) struct PgOptions {
    /// Kept for symmetry with the other backends; deadpool-postgres caches every statement
    /// prepared through it for the connection's lifetime.
    pub(crate) statement_cache_capacity: usize,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            statement_cache_capacity: 128,
        }
    }
}

/// Builds the deadpool-postgres pool. The connector is the TLS seam: `NoTls` today; a TLS
/// feature would pass its connector here without changing the public API.
pub(crate) fn build_pool(
    cfg: tokio_postgres::Config,
    _opts: PgOptions,
    pool: &PoolOptions,
) -> Result<super::Pool> {
    if cfg.get_hosts().is_empty() {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::Config,
            "the Postgres configuration names no host; give a URL like postgres://user@localhost/db",
        ));
    }
    // `Fast` only checks `is_closed`; the transaction state is checked by the middleware itself
    // before a connection goes back (see conn.rs), without a round trip.
    let manager = Manager::from_config(
        cfg,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    super::Pool::builder(manager)
        .max_size(pool.max_size)
        .wait_timeout(Some(pool.wait_timeout))
        .create_timeout(Some(pool.create_timeout))
        .recycle_timeout(Some(pool.recycle_timeout))
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .build()
        .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Config, e.to_string()))
}
