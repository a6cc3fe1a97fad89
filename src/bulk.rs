//! Bulk loading: [`MiddlewarePoolConnection::bulk_insert`] (and the same on [`crate::Tx`] and
//! through [`crate::Executor`]) loads many rows into one table the fastest safe way each
//! engine has, all or nothing.
//!
//! The table and column names are data, not SQL: they are checked and always written quoted
//! (`sql::ident`), and a name that is not a plain or double-quoted identifier is refused with
//! [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) before anything reaches the
//! engine. Each wing's `bulk.rs` does the loading.

use crate::connection::{MiddlewarePoolConnection, TxFlag};
use crate::error::Result;
use crate::sql::ident::BulkTarget;
use crate::telemetry::traced;
use crate::value::RowValues;

impl MiddlewarePoolConnection {
    /// Loads `rows` into `table` (`columns` in the order of each row's values) and returns the
    /// number of rows loaded.
    ///
    /// - **Postgres:** one `COPY … FROM STDIN (FORMAT binary)`, each value encoded for the
    ///   column type the server declares (by the same lossless rules as parameters).
    /// - **SQLite and Turso:** multi-row `INSERT … VALUES (…), (…)` statements, prepared once
    ///   per connection, inside one transaction. On SQLite the rows go in batches sized to stay
    ///   within the inline budget of [`crate::SqliteExecModel::Adaptive`], so the load never
    ///   holds the async thread for longer than one ordinary statement may.
    ///
    /// **All or nothing.** Outside a transaction the load runs in one of its own (a single
    /// `COPY` on Postgres): when any row fails (a constraint, a value of the wrong type, a row
    /// with the wrong number of values), nothing is loaded and the connection stays usable.
    /// Inside a [`crate::Tx`] the rows are part of the transaction; a failure aborts it like
    /// any failed statement (roll it back, or use a savepoint to go on). A load whose future is
    /// dropped part-way loads nothing: the connection is rolled back (or replaced) before its
    /// next use or its return to the pool.
    ///
    /// `rows` is anything that iterates over rows of [`RowValues`]: `&Vec<Vec<RowValues>>`,
    /// `&[[RowValues; 3]]`, or an iterator that makes each row as it is needed. Values are
    /// bound by reference where the driver allows it (Postgres and SQLite); nothing is copied
    /// up front.
    ///
    /// Table and column names are plain identifiers (`users`, `app.users`) or double-quoted
    /// ones (`"Order Lines"`); they are always sent quoted, and anything else is refused with
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput). A row with a different
    /// number of values than `columns` fails with
    /// [`ErrorKind::ParameterCount`](crate::ErrorKind::ParameterCount).
    ///
    /// ```
    /// # use sql_middleware::prelude::*;
    /// # async fn demo(conn: &mut MiddlewarePoolConnection) -> Result<(), SqlMiddlewareDbError> {
    /// let rows: Vec<Vec<RowValues>> = (1..=1000)
    ///     .map(|i| vec![RowValues::Int(i), format!("user {i}").into()])
    ///     .collect();
    /// let n = conn.bulk_insert("users", &["id", "name"], &rows).await?;
    /// assert_eq!(n, 1000);
    /// # Ok(()) }
    /// ```
    pub async fn bulk_insert<I, R>(&mut self, table: &str, columns: &[&str], rows: I) -> Result<u64>
    where
        I: IntoIterator<Item = R> + Send,
        I::IntoIter: Send,
        R: AsRef<[RowValues]> + Send + Sync,
    {
        // Refused before the engine is reached: a bad name does not abort a transaction.
        let target = BulkTarget::parse(table, columns)?;
        traced!(
            self,
            &describe(&target),
            None,
            self.bulk_insert_inner(&target, rows.into_iter()),
            |n: &u64| { crate::telemetry::Rows::Affected(*n) }
        )
    }

    async fn bulk_insert_inner<I, R>(&mut self, target: &BulkTarget, rows: I) -> Result<u64>
    where
        I: Iterator<Item = R> + Send,
        R: AsRef<[RowValues]> + Send + Sync,
    {
        self.enter().await?;
        let in_tx = self.tx != TxFlag::None;
        let deadline = self.deadline(None);
        let r = self.inner.bulk_insert(target, rows, in_tx, deadline).await;
        if r.is_ok() {
            self.wrote();
        }
        self.note(r)
    }
}

/// What a span shows for a bulk load: the statement's shape, never a value.
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
fn describe(t: &BulkTarget) -> String {
    let d = crate::sql::Dialect {
        lexer: crate::sql::Lexer::Plain,
        ident_quote: '"',
        folds_to_lower: true,
        outside_tx_only: |_| None,
    };
    format!("BULK INSERT INTO {} ({})", t.table_sql(d), t.columns_sql(d))
}
