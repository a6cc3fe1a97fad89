//! [`Tx`]: a transaction (or a savepoint inside one) with the same query API as a connection,
//! rolled back when dropped.

use crate::connection::{MiddlewarePoolConnection, TxFlag};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
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
/// - [`Tx::savepoint`] opens a nested transaction, itself a `Tx` with the same rules, at any
///   depth: its `commit` keeps its work in the enclosing transaction; its `rollback` (or drop)
///   undoes its work only. An error inside a savepoint aborts the transaction until the
///   savepoint is rolled back, which makes it usable again on every backend (on Postgres this
///   is how a transaction goes on after an error); committing an aborted savepoint rolls it
///   back and returns [`crate::ErrorKind::TransactionAborted`].
///
/// ```
/// # async fn demo(conn: &mut sql_middleware::MiddlewarePoolConnection) -> Result<(), sql_middleware::SqlMiddlewareDbError> {
/// let mut tx = conn.begin().await?;
/// tx.query("INSERT INTO t (id) VALUES (1)").dml().await?;
/// let mut sp = tx.savepoint().await?;
/// if sp.query("INSERT INTO t (id) VALUES (1)").dml().await.is_err() {
///     sp.rollback().await?; // only the savepoint's work is undone
/// } else {
///     sp.commit().await?;
/// }
/// tx.commit().await?; // row 1 is committed either way
/// # Ok(()) }
/// ```
pub struct Tx<'c> {
    pub(crate) conn: &'c mut MiddlewarePoolConnection,
    finished: bool,
    /// 0 for the transaction itself, `n` for a savepoint nested `n` deep.
    level: u32,
}

impl std::fmt::Debug for Tx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tx")
            .field("level", &self.level)
            .field("conn", &self.conn)
            .finish()
    }
}

impl<'c> Tx<'c> {
    pub(crate) fn new(conn: &'c mut MiddlewarePoolConnection) -> Self {
        Self {
            conn,
            finished: false,
            level: 0,
        }
    }

    /// Opens a savepoint: a nested transaction with the same rules (see [`Tx`]). While it is
    /// open, this transaction is reached through it.
    pub async fn savepoint(&mut self) -> Result<Tx<'_>> {
        let level = self.level + 1;
        self.conn.sp_begin(level).await?;
        self.conn.trace.scope_begin(level);
        Ok(Tx {
            conn: &mut *self.conn,
            finished: false,
            level,
        })
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

    /// Bulk-loads rows inside the transaction (see [`MiddlewarePoolConnection::bulk_insert`]):
    /// they commit or roll back with it, and a failed load aborts it.
    pub async fn bulk_insert<I, R>(&mut self, table: &str, columns: &[&str], rows: I) -> Result<u64>
    where
        I: IntoIterator<Item = R> + Send,
        I::IntoIter: Send,
        R: AsRef<[RowValues]> + Send + Sync,
    {
        self.conn.bulk_insert(table, columns, rows).await
    }

    /// Commits. Returns `Ok` only if the engine committed everything. On a savepoint: releases
    /// it, keeping its work in the enclosing transaction.
    pub async fn commit(mut self) -> Result<()> {
        let r = match self.level {
            0 => self.conn.tx_commit().await,
            n => self.conn.sp_release(n).await,
        };
        self.finished = true;
        let outcome = if r.is_ok() { "commit" } else { "failed" };
        self.conn.trace.scope_end(self.level, outcome);
        r
    }

    /// Rolls back. On a savepoint: undoes its work only, and the enclosing transaction goes on.
    pub async fn rollback(mut self) -> Result<()> {
        let r = match self.level {
            0 => self.conn.tx_rollback().await,
            n => self.conn.sp_rollback(n).await,
        };
        self.finished = true;
        self.conn.trace.scope_end(self.level, "rollback");
        r
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.conn.trace.scope_end(self.level, "dropped");
            match self.level {
                0 => self.conn.tx_abandon(),
                n => self.conn.sp_abandon(n),
            }
        }
    }
}

impl MiddlewarePoolConnection {
    /// Begins a transaction (`BEGIN IMMEDIATE` on SQLite and Turso, so write-lock contention
    /// surfaces at once as a wait bounded by the busy timeout). Commit it with [`Tx::commit`];
    /// dropping it without commit rolls it back.
    pub async fn begin(&mut self) -> Result<Tx<'_>> {
        if self.tx != TxFlag::None {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::TransactionState,
                "a transaction is already open on this connection",
            ));
        }
        self.enter().await?;
        // The checkout's limit covers `BEGIN`, `COMMIT` and `ROLLBACK` too (the wings that
        // have no use for it ignore it).
        let r = self.inner.begin(self.deadline(None)).await;
        self.note(r)?;
        self.tx = TxFlag::Active;
        self.trace.scope_begin(0);
        Ok(Tx::new(self))
    }
}
