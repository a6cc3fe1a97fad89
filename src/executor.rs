//! [`Executor`]: one trait over a connection, a transaction and a savepoint, so a helper is
//! written once and called with any of them.

use std::future::Future;

use crate::connection::MiddlewarePoolConnection;
use crate::error::Result;
use crate::query::QueryBuilder;
use crate::results::ResultSet;
use crate::statement::PreparedStatement;
use crate::transaction::Tx;
use crate::value::RowValues;

/// What runs SQL: a checked-out connection ([`MiddlewarePoolConnection`]), a transaction or a
/// savepoint ([`Tx`]). The methods are the types' own, without boxing: a helper generic over
/// `impl Executor` costs what a direct call does.
///
/// ```
/// use sql_middleware::prelude::*;
///
/// async fn save_user(db: &mut impl Executor, id: i64, name: &str) -> Result<u64, SqlMiddlewareDbError> {
///     db.query("INSERT INTO users (id, name) VALUES ($1, $2)")
///         .params(&[id.into(), name.into()])
///         .dml()
///         .await
/// }
///
/// # async fn demo(conn: &mut MiddlewarePoolConnection) -> Result<(), SqlMiddlewareDbError> {
/// save_user(conn, 1, "ada").await?; // autocommit
/// let mut tx = conn.begin().await?;
/// save_user(&mut tx, 2, "grace").await?; // inside a transaction
/// tx.commit().await
/// # }
/// ```
pub trait Executor: Send {
    /// Starts a query (see [`MiddlewarePoolConnection::query`]).
    fn query<'a, 'q>(&'a mut self, sql: &'q str) -> QueryBuilder<'a, 'q>;

    /// Prepares a statement (see [`MiddlewarePoolConnection::prepare`]).
    fn prepare(&mut self, sql: &str) -> impl Future<Output = Result<PreparedStatement<'_>>> + Send;

    /// Runs a script (see [`MiddlewarePoolConnection::execute_batch`]).
    fn execute_batch(&mut self, sql: &str) -> impl Future<Output = Result<()>> + Send;

    /// Runs one statement over several parameter sets (see
    /// [`MiddlewarePoolConnection::pipeline`]).
    fn pipeline(
        &mut self,
        sql: &str,
        param_sets: &[&[RowValues]],
    ) -> impl Future<Output = Result<Vec<ResultSet>>> + Send;

    /// Bulk-loads rows into a table (see [`MiddlewarePoolConnection::bulk_insert`]).
    fn bulk_insert<I, R>(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: I,
    ) -> impl Future<Output = Result<u64>> + Send
    where
        I: IntoIterator<Item = R> + Send,
        I::IntoIter: Send,
        R: AsRef<[RowValues]> + Send + Sync;
}

/// `Executor` on a type whose inherent methods of the same names it forwards to: the connection
/// and the transaction implement it the same way.
macro_rules! forward_executor {
    ($($ty:ty),+) => {$(
        impl Executor for $ty {
            #[inline]
            fn query<'a, 'q>(&'a mut self, sql: &'q str) -> QueryBuilder<'a, 'q> {
                <$ty>::query(self, sql)
            }

            fn prepare(&mut self, sql: &str) -> impl Future<Output = Result<PreparedStatement<'_>>> + Send {
                <$ty>::prepare(self, sql)
            }

            fn execute_batch(&mut self, sql: &str) -> impl Future<Output = Result<()>> + Send {
                <$ty>::execute_batch(self, sql)
            }

            fn pipeline(
                &mut self,
                sql: &str,
                param_sets: &[&[RowValues]],
            ) -> impl Future<Output = Result<Vec<ResultSet>>> + Send {
                <$ty>::pipeline(self, sql, param_sets)
            }

            fn bulk_insert<I, R>(
                &mut self,
                table: &str,
                columns: &[&str],
                rows: I,
            ) -> impl Future<Output = Result<u64>> + Send
            where
                I: IntoIterator<Item = R> + Send,
                I::IntoIter: Send,
                R: AsRef<[RowValues]> + Send + Sync,
            {
                <$ty>::bulk_insert(self, table, columns, rows)
            }
        }
    )+};
}

forward_executor!(MiddlewarePoolConnection, Tx<'_>);
