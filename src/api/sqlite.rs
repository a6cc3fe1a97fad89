//! SQLite's own entry points and settings: the pool constructors, the execution model, WAL and
//! foreign keys, and raw access to the rusqlite connection.

use crate::config::{ConfigAndPool, PoolBuilder};
use crate::dispatch::{ConnInner, Settings};
use crate::error::Result;
use crate::pool::MiddlewarePoolConnection;
use crate::sqlite::config::{Settings as SqliteSettings, SqliteTarget};
use crate::transaction::Tx;

impl ConfigAndPool {
    /// A SQLite database in the file at `path` (created if missing), in WAL mode.
    pub fn sqlite(path: impl AsRef<std::path::Path>) -> PoolBuilder {
        PoolBuilder::new(Settings::Sqlite(SqliteSettings::new(SqliteTarget::File(
            path.as_ref().to_path_buf(),
        ))))
    }

    /// A private in-memory SQLite database that every connection of this pool shares.
    /// It lives as long as the pool.
    pub fn sqlite_memory() -> PoolBuilder {
        PoolBuilder::new(Settings::Sqlite(SqliteSettings::new(SqliteTarget::Memory)))
    }
}

impl PoolBuilder {
    /// The SQLite settings, or the builder with an error saying `what` does not apply.
    fn sqlite_settings(mut self, what: &str, set: impl FnOnce(&mut SqliteSettings)) -> PoolBuilder {
        match &mut self.settings {
            Settings::Sqlite(s) => set(s),
            #[allow(unreachable_patterns)]
            _ => return self.reject(what),
        }
        self
    }

    /// The SQLite execution model (default: [`crate::SqliteExecModel::Adaptive`]).
    pub fn sqlite_exec_model(self, model: crate::SqliteExecModel) -> Self {
        self.sqlite_settings("sqlite_exec_model", |s| s.options.exec_model = model)
    }

    /// Whether SQLite files use WAL (default true). Ignored for in-memory databases.
    pub fn wal(self, on: bool) -> Self {
        self.sqlite_settings("wal", |s| s.options.wal = on)
    }

    /// Whether SQLite enforces foreign keys (default true).
    pub fn foreign_keys(self, on: bool) -> Self {
        self.sqlite_settings("foreign_keys", |s| s.options.foreign_keys = on)
    }
}

impl MiddlewarePoolConnection {
    /// Runs `f` with the raw rusqlite connection, on tokio's blocking pool (or inline under
    /// [`crate::SqliteExecModel::Inline`]). Fails with [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported)
    /// on other backends.
    pub async fn with_blocking_sqlite<R, F>(&mut self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut rusqlite::Connection) -> rusqlite::Result<R> + Send + 'static,
    {
        self.enter().await?;
        let ty = self.database_type();
        let deadline = self.deadline(None);
        let r = match &mut self.inner {
            ConnInner::Sqlite(c) => c.with_raw(f, deadline).await,
            #[allow(unreachable_patterns)]
            _ => Err(crate::connection::wrong_backend("with_blocking_sqlite", ty)),
        };
        self.note(r)
    }
}

impl Tx<'_> {
    /// Runs `f` with the raw rusqlite connection, inside this transaction (see
    /// [`MiddlewarePoolConnection::with_blocking_sqlite`]). An error from `f` aborts the
    /// transaction like any failed statement. Leave the transaction open: end it with
    /// [`Tx::commit`] or [`Tx::rollback`].
    pub async fn with_blocking_sqlite<R, F>(&mut self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut rusqlite::Connection) -> rusqlite::Result<R> + Send + 'static,
    {
        self.conn.with_blocking_sqlite(f).await
    }
}

/// The SQLite wing's internal steps as timed loops: materialisation and parameter binding.
#[doc(hidden)]
pub mod bench {
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    use rusqlite::Connection;

    use crate::error::Result;
    use crate::sqlite::error::map_err;
    use crate::value::RowValues;

    /// `iters` rounds over `ids`, each lookup bound with rusqlite directly, executed, and
    /// materialised into a `ResultSet` by the wing's own row collection, with the statement
    /// described at prepare time and its columns checked on each execution, as `select` does.
    /// `sql` takes one parameter. Returns the time of the whole loop.
    pub fn marshal_loop(
        conn: &mut Connection,
        sql: &str,
        ids: &[i64],
        iters: u64,
    ) -> Result<Duration> {
        let cell = crate::sqlite::session::SessionCell::default();
        let s = crate::sqlite::stmt::SqliteStmt::describe(conn, sql.into(), &cell)?;
        let mut st = conn.prepare_cached(sql).map_err(map_err)?;
        let start = Instant::now();
        for _ in 0..iters {
            for &id in ids {
                st.raw_bind_parameter(1, id).map_err(map_err)?;
                let mut rows = st.raw_query();
                let rs = crate::sqlite::rows::collect(&mut rows, &s.desc, |st| s.columns_now(st))?;
                black_box(rs);
            }
        }
        Ok(start.elapsed())
    }

    /// `iters` rounds over `ids`, each id written into a reused `[RowValues; 1]` and bound by the
    /// wing's own binding (count check, NaN check, conversion, `sqlite3_bind_*`) to the statement
    /// `sql` (one parameter). Returns the time of the loop.
    pub fn param_convert_loop(
        conn: &mut Connection,
        sql: &str,
        ids: &[i64],
        iters: u64,
    ) -> Result<Duration> {
        let mut st = conn.prepare_cached(sql).map_err(map_err)?;
        let mut buf = [RowValues::Int(0)];
        let start = Instant::now();
        for _ in 0..iters {
            for &id in ids {
                buf[0] = RowValues::Int(id);
                crate::sqlite::params::bind_all(&mut st, black_box(&buf))?;
            }
        }
        let elapsed = start.elapsed();
        st.clear_bindings();
        Ok(elapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::config_err as err;

    #[test]
    fn sqlite_urls_and_their_errors() {
        assert!(ConfigAndPool::from_url("sqlite::memory:").is_ok());
        assert!(ConfigAndPool::from_url("sqlite://:memory:?max_size=3").is_ok());
        assert!(err(ConfigAndPool::from_url("sqlite://")).contains("names no file"));
        assert!(err(ConfigAndPool::from_url("sqlite::memory:?colour=blue")).contains("`colour`"));
        assert!(
            err(ConfigAndPool::from_url("sqlite::memory:?max_size=many")).contains("whole number")
        );
    }
}
