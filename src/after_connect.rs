//! [`NewConnection`]: what a pool's `after_connect` hook (see
//! [`PoolBuilder::after_connect`](crate::PoolBuilder::after_connect)) receives, on every backend.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::engine::DatabaseType;
use crate::error::Result;
use crate::results::ResultSet;
use crate::setup::{AfterConnect, BoxFuture, Setup};
use crate::value::RowValues;

/// A connection being opened by the pool, handed to the `after_connect` hook before anyone
/// uses it (see [`PoolBuilder::after_connect`](crate::PoolBuilder::after_connect)).
///
/// It runs SQL the same way on every backend: placeholders are `$1` (or `?1`) and translated as
/// the pool's default translation does, and nothing runs inside a transaction unless the SQL
/// opens one (which it must then close).
pub struct NewConnection<'c> {
    conn: &'c mut dyn Setup,
    backend: DatabaseType,
}

impl std::fmt::Debug for NewConnection<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewConnection")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl NewConnection<'_> {
    /// The engine this connection talks to.
    pub fn database_type(&self) -> DatabaseType {
        self.backend
    }

    /// Runs a script of one or more statements without parameters (as
    /// [`MiddlewarePoolConnection::execute_batch`](crate::MiddlewarePoolConnection::execute_batch)).
    pub async fn execute_batch(&mut self, sql: &str) -> Result<()> {
        self.conn.execute_batch(sql).await
    }

    /// Runs one statement with `params` and returns the number of rows it changed (as
    /// `query(sql).params(params).dml()`).
    pub async fn dml(&mut self, sql: &str, params: &[RowValues]) -> Result<u64> {
        self.conn.dml(sql, params).await
    }

    /// Runs one statement with `params` and returns its rows (as
    /// `query(sql).params(params).select()`).
    pub async fn select(&mut self, sql: &str, params: &[RowValues]) -> Result<ResultSet> {
        self.conn.select(sql, params).await
    }
}

/// The shape of a user's hook: an async function of the new connection.
pub(crate) type Hook = dyn for<'c, 'x> Fn(
        &'x mut NewConnection<'c>,
    ) -> Pin<Box<dyn Future<Output = Result<()>> + Send + 'x>>
    + Send
    + Sync;

/// The pool's hook for connections of `backend`: the user's `hook`, handed each new connection.
pub(crate) fn wrap(backend: DatabaseType, hook: Arc<Hook>) -> AfterConnect {
    AfterConnect::new(Arc::new(
        move |conn: &mut dyn Setup| -> BoxFuture<'_, Result<()>> {
            let hook = Arc::clone(&hook);
            Box::pin(async move {
                let mut new = NewConnection { conn, backend };
                hook(&mut new).await
            })
        },
    ))
}
