//! An `after_connect` hook that reads a row, for tests of how a hook's statements are read.

use std::sync::{Arc, Mutex};

use sql_middleware::prelude::*;

/// What the hook read: each opened connection's `(p, v)`.
pub type Reads = Arc<Mutex<Vec<(String, i64)>>>;

/// `b` with an `after_connect` hook that runs `setup` (a script, if any), then selects `sql`
/// with `7` bound, and records the row's text column `p` and integer column `v` (a column of
/// another kind is recorded as its debug form, or -1). The hook's own errors fail the
/// connection's opening, as any hook's do.
pub fn reading_hook(
    b: PoolBuilder,
    setup: Option<String>,
    sql: &'static str,
) -> (PoolBuilder, Reads) {
    let reads: Reads = Arc::default();
    let into = Arc::clone(&reads);
    let b = b.after_connect(move |c| {
        let into = Arc::clone(&into);
        let setup = setup.clone();
        Box::pin(async move {
            if let Some(setup) = setup {
                c.execute_batch(&setup).await?;
            }
            let rs = c.select(sql, &[RowValues::Int(7)]).await?;
            let row = &rs.results[0];
            let p = match row.get("p") {
                Some(RowValues::Text(p)) => p.clone(),
                other => format!("{other:?}"),
            };
            let v = match row.get("v") {
                Some(RowValues::Int(v)) => *v,
                _ => -1,
            };
            into.lock().unwrap().push((p, v));
            Ok(())
        })
    });
    (b, reads)
}
