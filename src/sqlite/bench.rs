//! Benchmark hooks of the SQLite wing, compiled only with the `bench` feature (the micro-benches
//! time the wing's own materialisation and parameter binding) or with
//! `--cfg sqlmw_bench_slowdown` (the nightly comparison's deliberate slowdown). A normal build
//! carries none of it.

#[cfg(feature = "bench")]
pub(crate) use hooks::*;

#[cfg(feature = "bench")]
mod hooks {
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    use rusqlite::Connection;

    use crate::error::Result;
    use crate::value::RowValues;

    pub(crate) use crate::sqlite::error::map_err;

    /// Hook of `middleware_marshalling`: `iters` rounds over `ids`, each lookup bound with
    /// rusqlite directly, executed, and materialised into a `ResultSet` by the wing's own
    /// `rows::collect`, with the statement described by the wing at prepare time and its columns
    /// checked by `SqliteStmt::columns_now`, as `select` does. Returns the time of the whole loop.
    pub(crate) fn marshal_loop(
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

    /// Hook of `middleware_param_convert`: `iters` rounds over `ids`, each id written into a
    /// reused `[RowValues; 1]` and bound by the wing's own `params::bind_all` (count check, NaN
    /// check, `SqliteParam` → `ToSqlOutput` → `sqlite3_bind_*`). Returns the time of the loop.
    pub(crate) fn param_convert_loop(
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

/// The deliberate slowdown, the one switch the nightly comparison uses to show it catches a
/// regression: only with `--cfg sqlmw_bench_slowdown` (`cargo xtask nightly --slowdown`), every
/// fifth lookup on this thread runs its query once more, so the lookup path costs about 20% more
/// on any machine (docs/BenchTooling.md). No normal build, `--all-features` included, has it.
#[cfg(sqlmw_bench_slowdown)]
#[inline(never)]
pub(crate) fn slowdown(
    c: &rusqlite::Connection,
    sql: &str,
    p: &[crate::value::RowValues],
) -> crate::error::Result<()> {
    use super::error::map_err;
    thread_local!(static CALLS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) });
    let n = CALLS.with(|k| {
        k.set(k.get().wrapping_add(1));
        k.get()
    });
    if n % 5 == 0 {
        let mut st = c.prepare_cached(sql).map_err(map_err)?;
        super::params::bind_all(&mut st, p)?;
        let mut rows = st.raw_query();
        std::hint::black_box(rows.next().map_err(map_err)?.is_some());
    }
    Ok(())
}
