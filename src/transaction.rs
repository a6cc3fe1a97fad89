//! [`Tx`]: a transaction with the same query API as a connection, rolled back when dropped.

use crate::error::Result;
use crate::pool::MiddlewarePoolConnection;
use crate::query::QueryBuilder;
use crate::results::ResultSet;
use crate::statement::PreparedStatement;
use crate::value::RowValues;

/// An open transaction on a checked-out connection.
///
/// - [`Tx::commit`] returns `Ok` only when the engine committed. After any failed statement the
///   transaction is aborted on every backend: later statements fail with
///   [`crate::ErrorKind::TransactionAborted`], and `commit` rolls back and says so.
/// - Dropping a `Tx` without commit rolls it back. On SQLite and Turso that happens at once, in
///   process; on Postgres the connection is marked and rolled back before anyone uses it again
///   (or discarded when that is impossible). `Drop` never blocks on the network, needs no
///   runtime, and never panics.
pub struct Tx<'c> {
    conn: &'c mut MiddlewarePoolConnection,
    finished: bool,
}

impl std::fmt::Debug for Tx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tx").field("conn", &self.conn).finish()
    }
}

impl<'c> Tx<'c> {
    pub(crate) fn new(conn: &'c mut MiddlewarePoolConnection) -> Self {
        Self {
            conn,
            finished: false,
        }
    }

    /// Starts a query inside the transaction (see [`MiddlewarePoolConnection::query`]).
    pub fn query<'a, 'q>(&'a mut self, sql: &'q str) -> QueryBuilder<'a, 'q> {
        self.conn.query(sql)
    }

    /// Prepares a statement inside the transaction.
    pub async fn prepare(&mut self, sql: &str) -> Result<PreparedStatement<'_>> {
        self.conn.prepare(sql).await
    }

    /// Runs a script inside the transaction.
    pub async fn execute_batch(&mut self, sql: &str) -> Result<()> {
        self.conn.execute_batch(sql).await
    }

    /// Pipelines one statement over several parameter sets (see [`MiddlewarePoolConnection::pipeline`]).
    pub async fn pipeline(
        &mut self,
        sql: &str,
        param_sets: &[&[RowValues]],
    ) -> Result<Vec<ResultSet>> {
        self.conn.pipeline(sql, param_sets).await
    }

    /// Runs `f` with the raw rusqlite connection, inside this transaction (see
    /// [`MiddlewarePoolConnection::with_blocking_sqlite`]). An error from `f` aborts the
    /// transaction like any failed statement. Leave the transaction open: end it with
    /// [`Tx::commit`] or [`Tx::rollback`].
    #[cfg(feature = "sqlite")]
    pub async fn with_blocking_sqlite<R, F>(&mut self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut rusqlite::Connection) -> rusqlite::Result<R> + Send + 'static,
    {
        self.conn.with_blocking_sqlite(f).await
    }

    /// The raw tokio-postgres client, inside this transaction (see
    /// [`MiddlewarePoolConnection::postgres_client`]).
    #[cfg(feature = "postgres")]
    pub fn postgres_client(&mut self) -> Result<&tokio_postgres::Client> {
        self.conn.postgres_client()
    }

    /// The raw Turso connection, inside this transaction (see
    /// [`MiddlewarePoolConnection::turso_connection`]).
    #[cfg(feature = "turso")]
    pub fn turso_connection(&mut self) -> Result<&turso::Connection> {
        self.conn.turso_connection()
    }

    /// Commits. Returns `Ok` only if the engine committed everything.
    pub async fn commit(mut self) -> Result<()> {
        let r = self.conn.tx_commit().await;
        self.finished = true;
        r
    }

    /// Rolls back.
    pub async fn rollback(mut self) -> Result<()> {
        let r = self.conn.tx_rollback().await;
        self.finished = true;
        r
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.conn.tx_abandon();
        }
    }
}
