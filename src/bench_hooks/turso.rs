//! The Turso wing's internal steps as timed loops: materialisation and parameter conversion.

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
