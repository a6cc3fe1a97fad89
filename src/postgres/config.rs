//! PostgreSQL settings and pool construction.

use deadpool_postgres::{Manager, ManagerConfig, RecyclingMethod};
use tokio_postgres::NoTls;

use super::conn::PgConnection;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::pooling::{self, PoolOptions, pool_error};

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
    pooling::build(manager, pool)
}

/// Checks out a connection, with the pool to replace it from if it must be discarded.
pub(crate) async fn checkout(pool: &super::Pool) -> Result<PgConnection> {
    let obj = pool.get().await.map_err(pool_error)?;
    Ok(PgConnection::new(pool.clone(), obj))
}
