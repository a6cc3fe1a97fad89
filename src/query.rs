//! The query builder and [`QueryAndParams`].

use crate::connection::MiddlewarePoolConnection;
use crate::decode::FromRow;
use crate::dispatch::Call;
use crate::error::{Result, SqlMiddlewareDbError};
use crate::results::ResultSet;
use crate::stream::{RowStream, Source};
use crate::telemetry::traced;
use crate::translation::TranslationMode;
use crate::value::{ParamKinds, RowValues};

/// The body every runner shares: the call's deadline, then the hall's `$op`, which finds the
/// statement in the connection's cache (or prepares it) and runs it with the parameters, as one
/// operation, inside the call's span (`$rows` says what the span records of the result).
macro_rules! prepared_call {
    ($this:ident, $op:ident $(::<$t:ty>)?, $rows:expr) => {{
        let QueryBuilder {
            conn,
            sql,
            params,
            translation,
            timeout,
        } = $this;
        let call = Call {
            sql,
            mode: translation,
            params,
            deadline: conn.deadline(timeout),
        };
        traced!(conn, sql, None, conn.$op$(::<$t>)?(&call), $rows)
    }};
}

/// A query being set up on a connection or transaction; finish it with one of the async runners.
///
/// The statement is prepared through the connection's statement cache, so running the same SQL
/// again re-uses the engine's prepared statement.
#[must_use = "a query does nothing until .select(), .dml(), .one(), .optional() or .all() is awaited, or .stream() polled"]
pub struct QueryBuilder<'c, 'q> {
    conn: &'c mut MiddlewarePoolConnection,
    sql: &'q str,
    params: &'q [RowValues],
    translation: TranslationMode,
    timeout: Option<std::time::Duration>,
}

impl std::fmt::Debug for QueryBuilder<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryBuilder")
            .field("sql", &self.sql)
            .field("params", &ParamKinds(self.params))
            .field("translation", &self.translation)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl<'c, 'q> QueryBuilder<'c, 'q> {
    pub(crate) fn new(conn: &'c mut MiddlewarePoolConnection, sql: &'q str) -> Self {
        let translation = conn.translation;
        Self {
            conn,
            sql,
            params: &[],
            translation,
            timeout: None,
        }
    }

    /// The parameters, one per placeholder (`$1` is `params[0]`).
    pub fn params(mut self, params: &'q [RowValues]) -> Self {
        self.params = params;
        self
    }

    /// Overrides placeholder translation for this call.
    pub fn translation(mut self, mode: TranslationMode) -> Self {
        self.translation = mode;
        self
    }

    /// Limits this call (preparing and running the statement) to `limit`, in place of the
    /// connection's `statement_timeout`. Past it the statement is stopped and the call fails
    /// with [`crate::ErrorKind::Timeout`].
    pub fn timeout(mut self, limit: std::time::Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Runs the query and materialises every row.
    pub async fn select(self) -> Result<ResultSet> {
        prepared_call!(self, select_sql, |rs: &ResultSet| {
            crate::telemetry::Rows::Returned(rs.len())
        })
    }

    /// Runs a data-changing statement and returns the number of rows it changed.
    pub async fn dml(self) -> Result<u64> {
        prepared_call!(self, dml_sql, |n: &u64| {
            crate::telemetry::Rows::Affected(*n)
        })
    }

    /// Decodes the first row into `T`; no row is an [`crate::ErrorKind::NoRows`] error.
    pub async fn one<T: FromRow + Send + 'static>(self) -> Result<T> {
        // The call of `optional`, without its future around it.
        prepared_call!(self, optional_sql::<T>, |r: &Option<T>| {
            crate::telemetry::Rows::Returned(usize::from(r.is_some()))
        })?
        .ok_or_else(SqlMiddlewareDbError::no_rows)
    }

    /// Decodes the first row into `T`, or `None` when there is none.
    pub async fn optional<T: FromRow + Send + 'static>(self) -> Result<Option<T>> {
        prepared_call!(self, optional_sql::<T>, |r: &Option<T>| {
            crate::telemetry::Rows::Returned(usize::from(r.is_some()))
        })
    }

    /// Streams the rows, decoded as `T`, in bounded memory (see [`RowStream`]). Nothing runs
    /// until the stream is first polled; the stream copies the SQL and parameters, and holds
    /// the connection (or transaction) until it is dropped.
    pub fn stream<T: FromRow + Send + 'static>(self) -> RowStream<'c, T> {
        let Self {
            conn,
            sql,
            params,
            translation,
            timeout,
        } = self;
        RowStream::new(
            conn,
            Source::Sql(sql.into(), translation),
            params.to_vec(),
            timeout,
            sql,
        )
    }

    /// Decodes every row into `T`.
    pub async fn all<T: FromRow + Send + 'static>(self) -> Result<Vec<T>> {
        prepared_call!(self, all_sql::<T>, |v: &Vec<T>| {
            crate::telemetry::Rows::Returned(v.len())
        })
    }
}

/// An owned SQL text with its parameters, for code that builds queries before running them.
/// Its `Debug` shows each parameter's kind, never its value.
#[derive(Clone, PartialEq)]
pub struct QueryAndParams {
    /// The SQL text, with `$N` placeholders.
    pub query: String,
    /// One value per placeholder.
    pub params: Vec<RowValues>,
}

impl std::fmt::Debug for QueryAndParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryAndParams")
            .field("query", &self.query)
            .field("params", &ParamKinds(&self.params))
            .finish()
    }
}

impl QueryAndParams {
    /// Pairs `query` with `params`.
    pub fn new(query: impl Into<String>, params: Vec<RowValues>) -> Self {
        Self {
            query: query.into(),
            params,
        }
    }

    /// Runs it as a select on `conn`.
    pub async fn select(&self, conn: &mut MiddlewarePoolConnection) -> Result<ResultSet> {
        conn.query(&self.query).params(&self.params).select().await
    }

    /// Runs it as DML on `conn`.
    pub async fn dml(&self, conn: &mut MiddlewarePoolConnection) -> Result<u64> {
        conn.query(&self.query).params(&self.params).dml().await
    }
}

impl MiddlewarePoolConnection {
    /// Starts a query: add `.params(..)`, then run it with `.select()`, `.dml()`, `.one()`,
    /// `.optional()` or `.all()`.
    pub fn query<'c, 'q>(&'c mut self, sql: &'q str) -> QueryBuilder<'c, 'q> {
        QueryBuilder::new(self, sql)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_parameter_kinds_never_values() {
        let q = QueryAndParams::new(
            "UPDATE users SET password = $1 WHERE id = $2",
            vec![RowValues::Text("hunter2-secret".into()), RowValues::Int(42)],
        );
        let shown = format!("{q:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(!shown.contains("42"), "{shown}");
        assert!(
            shown.contains("$1 Text") && shown.contains("$2 Int"),
            "{shown}"
        );
    }
}
