//! Turso's own entry points: the pool constructors and raw access to the Turso connection.

use crate::config::{ConfigAndPool, PoolBuilder};
use crate::dispatch::{ConnInner, Settings};
use crate::error::Result;
use crate::pool::MiddlewarePoolConnection;
use crate::transaction::Tx;
use crate::turso::config::{Settings as TursoSettings, TursoTarget};

impl ConfigAndPool {
    /// A Turso database in the file at `path`.
    pub fn turso(path: impl AsRef<std::path::Path>) -> PoolBuilder {
        PoolBuilder::new(Settings::Turso(TursoSettings::new(TursoTarget::File(
            path.as_ref().to_path_buf(),
        ))))
    }

    /// A private in-memory Turso database shared by every connection of this pool.
    pub fn turso_memory() -> PoolBuilder {
        PoolBuilder::new(Settings::Turso(TursoSettings::new(TursoTarget::Memory)))
    }
}

impl MiddlewarePoolConnection {
    /// The raw Turso connection. Fails with [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported)
    /// on other backends.
    pub async fn turso_connection(&mut self) -> Result<&turso::Connection> {
        let ty = self.database_type();
        match &mut self.inner {
            ConnInner::Turso(c) => crate::contract::Wing::raw(&mut ***c).await,
            #[allow(unreachable_patterns)]
            _ => Err(crate::connection::wrong_backend("turso_connection", ty)),
        }
    }
}

impl Tx<'_> {
    /// The raw Turso connection, inside this transaction (see
    /// [`MiddlewarePoolConnection::turso_connection`]).
    pub async fn turso_connection(&mut self) -> Result<&turso::Connection> {
        self.conn.turso_connection().await
    }
}

/// The Turso wing's internal steps as timed loops: materialisation and parameter conversion.
#[doc(hidden)]
pub mod bench {
    use std::hint::black_box;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use turso::Connection;

    use crate::error::Result;
    use crate::results::ResultSet;
    use crate::turso::error::map_err;
    use crate::value::RowValues;

    /// `iters` rounds over `ids` on `conn`, each lookup of `sql` (one parameter) bound natively,
    /// executed, and materialised into a `ResultSet` with the wing's own row conversion (columns
    /// described once), exactly as the wing's `select` does. Returns the loop's time.
    pub async fn marshal_loop(
        conn: &Connection,
        sql: &str,
        ids: &[i64],
        iters: u64,
    ) -> Result<Duration> {
        let mut st = conn.prepare(sql).await.map_err(map_err)?;
        let desc = Arc::new(crate::turso::rows::describe(&st));
        let start = Instant::now();
        for _ in 0..iters {
            for &id in ids {
                let mut rows = st.query((id,)).await.map_err(map_err)?;
                let mut rs = ResultSet::with_capacity(Arc::clone(&desc.columns), 1);
                while let Some(row) = rows.next().await.map_err(map_err)? {
                    rs.push_values(crate::turso::rows::row_values(&row, &desc)?);
                }
                drop(rows);
                black_box(rs);
            }
        }
        Ok(start.elapsed())
    }

    /// `iters` rounds over `ids`, each id written into a reused `[RowValues; 1]` and converted by
    /// the wing's own parameter conversion (Turso's API takes owned values, so this is the whole
    /// conversion). Returns the loop's time.
    pub fn param_convert_loop(ids: &[i64], iters: u64) -> Result<Duration> {
        let mut buf = [RowValues::Int(0)];
        let start = Instant::now();
        for _ in 0..iters {
            for &id in ids {
                buf[0] = RowValues::Int(id);
                black_box(crate::turso::params::to_values(black_box(&buf))?);
            }
        }
        Ok(start.elapsed())
    }
}
