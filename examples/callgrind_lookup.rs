//! The driver of the instruction-count comparison (P8, docs/Benchmarks.md): runs `COUNT` point
//! lookups of the benchmark's SQLite file, either through raw rusqlite or through the
//! middleware, so that `valgrind --tool=callgrind` can count the instructions of each.
//!
//! `callgrind_lookup <raw|middleware> <COUNT> <DB_PATH>`
//!
//! Both sides open the file with the same settings (the middleware's pool defaults, reproduced
//! by `bench_support::sqlite::open_raw`), prepare the lookup once, run one warm-up lookup, and
//! decode every row into the same struct. The script `scripts/callgrind-lookup.sh` runs two
//! counts per side and divides the difference, so setup and teardown cancel out.

use std::hint::black_box;
use std::path::PathBuf;

use sql_middleware::bench_support::{BenchRow, dataset, sqlite as bs};
use sql_middleware::prelude::*;

fn usage() -> ! {
    eprintln!("usage: callgrind_lookup <raw|middleware> <COUNT> <DB_PATH>");
    std::process::exit(2)
}

fn main() -> Result<(), SqlMiddlewareDbError> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| usage());
    let count: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| usage());
    let path = PathBuf::from(args.next().unwrap_or_else(|| usage()));
    let n = dataset::bench_lookups();
    bs::ensure_lookup_db(&path, n)?;
    let ids = dataset::shuffled_ids(n);
    let id_at = |i: usize| ids[i % ids.len()];

    match mode.as_str() {
        "raw" => {
            let conn = bs::open_raw(&path)
                .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, format!("open: {e}")))?;
            let mut st = bs::lookup_stmt(&conn).map_err(|e| {
                SqlMiddlewareDbError::new(ErrorKind::Other, format!("prepare: {e}"))
            })?;
            let mut lookup = |id| {
                bs::raw_lookup(&mut st, id)
                    .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, format!("{e}")))
            };
            black_box(lookup(id_at(0))?);
            for i in 0..count {
                black_box(lookup(black_box(id_at(i)))?);
            }
        }
        "middleware" => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, format!("{e}")))?;
            rt.block_on(async {
                let db = ConfigAndPool::sqlite(&path).build().await?;
                let mut conn = db.get_connection().await?;
                let mut stmt = conn.prepare(dataset::LOOKUP_SQL_DOLLAR).await?;
                let mut buf = [RowValues::Int(id_at(0))];
                black_box(stmt.one::<BenchRow>(&buf).await?);
                for i in 0..count {
                    buf[0] = RowValues::Int(black_box(id_at(i)));
                    black_box(stmt.one::<BenchRow>(&buf).await?);
                }
                Ok::<_, SqlMiddlewareDbError>(())
            })?;
        }
        _ => usage(),
    }
    Ok(())
}
