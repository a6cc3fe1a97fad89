//! The PostgreSQL backend: tokio-postgres pooled by deadpool-postgres.

pub(crate) mod config;
pub(crate) mod conn;
pub(crate) mod error;
pub(crate) mod params;
pub(crate) mod rows;

pub(crate) use config::build_pool;
pub(crate) use conn::PgConnection;

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// The pool type of the Postgres backend.
pub(crate) type Pool = deadpool_postgres::Pool;

pub(crate) async fn checkout(pool: &Pool) -> Result<PgConnection> {
    let obj = pool
        .get()
        .await
        .map_err(|e| crate::pool::pool_error!(e, deadpool_postgres))?;
    Ok(PgConnection::new(pool.clone(), obj))
}
