//! [`PreparedStatement`]: a real prepared statement of the engine, the same type on every engine.

use std::sync::Arc;

use crate::connection::MiddlewarePoolConnection;
use crate::decode::FromRow;
use crate::dispatch::StmtHandle;
use crate::error::{Result, SqlMiddlewareDbError};
use crate::results::{Columns, ResultSet};
use crate::stream::{RowStream, Source};
use crate::telemetry::traced;
use crate::value::RowValues;

/// A statement prepared on one connection. Each run binds new parameters to the same engine
/// statement: rusqlite's statement cache, a server-side Postgres statement, or the connection's
/// Turso statement cache. Column names are computed once, at prepare time.
///
/// It runs with the query builder's verbs: [`select`](Self::select), [`dml`](Self::dml),
/// [`one`](Self::one), [`optional`](Self::optional) and [`all`](Self::all).
pub struct PreparedStatement<'c> {
    conn: &'c mut MiddlewarePoolConnection,
    handle: StmtHandle,
    timeout: Option<std::time::Duration>,
    /// The SQL as written, for spans (feature `tracing`).
    #[cfg(feature = "tracing")]
    sql: Box<str>,
}

impl std::fmt::Debug for PreparedStatement<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedStatement")
            .field("columns", self.handle.columns())
            .finish()
    }
}

/// The first row of a prepared statement's run, decoded as `T`, if any: the body of
/// [`PreparedStatement::optional`], which [`PreparedStatement::one`] runs without a future of
/// `optional`'s around it.
macro_rules! first_row {
    ($this:ident, $params:ident, $t:ty) => {{
        let deadline = $this.conn.deadline($this.timeout);
        traced!(
            $this.conn,
            &$this.sql,
            None,
            $this.conn.optional::<$t>(&$this.handle, $params, deadline),
            |r: &Option<$t>| crate::telemetry::Rows::Returned(usize::from(r.is_some()))
        )
    }};
}

impl<'c> PreparedStatement<'c> {
    pub(crate) fn new(
        conn: &'c mut MiddlewarePoolConnection,
        handle: StmtHandle,
        #[cfg_attr(not(feature = "tracing"), allow(unused_variables))] sql: &str,
    ) -> Self {
        // The text is kept for the spans only: a pool with spans off copies nothing.
        #[cfg(feature = "tracing")]
        let sql: Box<str> = if conn.trace.enabled() {
            sql.into()
        } else {
            Box::default()
        };
        Self {
            conn,
            handle,
            timeout: None,
            #[cfg(feature = "tracing")]
            sql,
        }
    }

    /// The columns this statement returns (empty for DML without `RETURNING`).
    pub fn columns(&self) -> &Arc<Columns> {
        self.handle.columns()
    }

    /// Limits each later run of this statement to `limit`, in place of the connection's
    /// `statement_timeout`. Past it the statement is stopped and the run fails with
    /// [`crate::ErrorKind::Timeout`].
    pub fn timeout(&mut self, limit: std::time::Duration) -> &mut Self {
        self.timeout = Some(limit);
        self
    }

    /// Runs it and materialises every row.
    pub async fn select(&mut self, params: &[RowValues]) -> Result<ResultSet> {
        let deadline = self.conn.deadline(self.timeout);
        traced!(
            self.conn,
            &self.sql,
            None,
            self.conn.select(&self.handle, params, deadline),
            |rs: &ResultSet| crate::telemetry::Rows::Returned(rs.len())
        )
    }

    /// Runs a data-changing statement and returns the number of rows it changed.
    pub async fn dml(&mut self, params: &[RowValues]) -> Result<u64> {
        let deadline = self.conn.deadline(self.timeout);
        traced!(
            self.conn,
            &self.sql,
            None,
            self.conn.dml(&self.handle, params, deadline),
            |n: &u64| crate::telemetry::Rows::Affected(*n)
        )
    }

    /// The former name of [`select`](Self::select).
    #[deprecated(since = "0.2.0", note = "use `select`, the query builder's verb")]
    pub async fn query(&mut self, params: &[RowValues]) -> Result<ResultSet> {
        self.select(params).await
    }

    /// The former name of [`dml`](Self::dml).
    #[deprecated(since = "0.2.0", note = "use `dml`, the query builder's verb")]
    pub async fn execute(&mut self, params: &[RowValues]) -> Result<u64> {
        self.dml(params).await
    }

    /// Runs it and decodes the first row; no row is an [`crate::ErrorKind::NoRows`] error.
    pub async fn one<T: FromRow + Send + 'static>(&mut self, params: &[RowValues]) -> Result<T> {
        // The call of `optional`, without its future around it.
        first_row!(self, params, T)?.ok_or_else(SqlMiddlewareDbError::no_rows)
    }

    /// Runs it and decodes the first row, if any.
    pub async fn optional<T: FromRow + Send + 'static>(
        &mut self,
        params: &[RowValues],
    ) -> Result<Option<T>> {
        first_row!(self, params, T)
    }

    /// Runs it and decodes every row.
    pub async fn all<T: FromRow + Send + 'static>(
        &mut self,
        params: &[RowValues],
    ) -> Result<Vec<T>> {
        let deadline = self.conn.deadline(self.timeout);
        traced!(
            self.conn,
            &self.sql,
            None,
            self.conn.all::<T>(&self.handle, params, deadline),
            |v: &Vec<T>| crate::telemetry::Rows::Returned(v.len())
        )
    }

    /// Runs it and streams the rows, decoded as `T`, in bounded memory (see [`RowStream`]).
    /// Nothing runs until the stream is first polled; the stream copies `params` and holds the
    /// statement's connection until it is dropped.
    pub fn stream<T: FromRow + Send + 'static>(
        &mut self,
        params: &[RowValues],
    ) -> RowStream<'_, T> {
        let handle = self.handle.clone();
        #[cfg(feature = "tracing")]
        let sql: &str = &self.sql;
        #[cfg(not(feature = "tracing"))]
        let sql = "";
        RowStream::new(
            &mut *self.conn,
            Source::Handle(handle),
            params.to_vec(),
            self.timeout,
            sql,
        )
    }
}

impl MiddlewarePoolConnection {
    /// Prepares `sql` once; run it many times with [`PreparedStatement::query`] and friends.
    pub async fn prepare(&mut self, sql: &str) -> Result<PreparedStatement<'_>> {
        let mode = self.translation;
        let deadline = self.deadline(None);
        let handle = self.prepare_handle(sql, mode, deadline).await?;
        Ok(PreparedStatement::new(self, handle, sql))
    }
}
