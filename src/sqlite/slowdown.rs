//! The deliberate slowdown, the one switch the nightly comparison uses to show it catches a
//! regression: compiled only with `--cfg sqlmw_bench_slowdown` (`cargo xtask nightly
//! --slowdown`). No normal build, `--all-features` included, has it.

use super::error::map_err;
use crate::error::Result;
use crate::value::RowValues;

/// Every fifth lookup on this thread runs its query once more, so the lookup path costs about
/// 20% more on any machine (docs/dev/BenchTooling.md).
#[inline(never)]
pub(crate) fn every_fifth_lookup(
    c: &rusqlite::Connection,
    sql: &str,
    p: &[RowValues],
) -> Result<()> {
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
