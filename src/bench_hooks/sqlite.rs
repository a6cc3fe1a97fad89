//! The SQLite wing's internal steps as timed loops: materialisation and parameter binding.

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
pub fn marshal_loop(conn: &mut Connection, sql: &str, ids: &[i64], iters: u64) -> Result<Duration> {
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
