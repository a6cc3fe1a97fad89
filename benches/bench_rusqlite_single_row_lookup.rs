//! `sqlite_single_row_lookup`: N point lookups per iteration, raw rusqlite against the
//! middleware, plus micro-benches that each isolate one step of the middleware's lookup path.
//! See docs/dev/Benchmarks.md.

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use sql_middleware::prelude::*;
use sql_middleware_bench::workloads::{self, Lookup};
use sql_middleware_bench::{BenchRow, dataset, sqlite as bs};

/// A lookup row decoded by column name, by hand.
struct ByName {
    _id: i64,
    _name: String,
    _score: f64,
    _active: bool,
}

impl FromRow for ByName {
    fn from_row<R: SqlRow>(row: &R) -> Result<Self, SqlMiddlewareDbError> {
        Ok(ByName {
            _id: row.get("id")?,
            _name: row.get("name")?,
            _score: row.get("score")?,
            _active: row.get("active")?,
        })
    }
}

/// The same row, derived.
#[derive(FromRow)]
#[allow(dead_code)]
struct Derived {
    id: i64,
    name: String,
    score: f64,
    active: bool,
}

const GROUP: &str = "sqlite_single_row_lookup";

fn sqlite_single_row_lookup(c: &mut Criterion) {
    let Lookup { n, ids } = Lookup::from_env();
    let ids = Arc::new(ids);
    let path = dataset::sqlite_lookup_path(env!("CARGO_MANIFEST_DIR"), n);
    let built = bs::ensure_lookup_db(&path, n).expect("build the SQLite lookup file");
    let rt = common::runtime();
    let db = rt
        .block_on(common::plain(ConfigAndPool::sqlite(&path)).build())
        .expect("build the middleware pool");
    // The same pool with spans on and no subscriber (feature `tracing`).
    #[cfg(feature = "tracing")]
    let traced = rt
        .block_on(ConfigAndPool::sqlite(&path).build())
        .expect("build the traced pool");
    #[cfg(not(feature = "tracing"))]
    eprintln!("[{GROUP}] middleware_tracing needs --features tracing; not run");
    eprintln!(
        "[{GROUP}] N = {n} lookups per iteration; {} {}; middleware pool max_size {} (one \
         connection in use), default exec model; raw: one rusqlite connection",
        if built { "built" } else { "reused" },
        path.display(),
        db.status().max_size,
    );

    // Every contender returns the dataset's rows (checked once, outside the timer).
    {
        let (db, ids) = (db.clone(), Arc::clone(&ids));
        common::in_task(&rt, async move {
            let mut conn = db.get_connection().await?;
            workloads::verify_lookups(&mut conn, &ids).await
        })
        .expect("the middleware returns the dataset's rows");
    }
    let raw = bs::open_raw(&path).expect("open the raw rusqlite connection");
    let mut raw_stmt = bs::lookup_stmt(&raw).expect("prepare the raw lookup");
    for &id in ids.iter() {
        let row = bs::raw_lookup(&mut raw_stmt, id).expect("raw lookup");
        workloads::check_row(id, &row).expect("rusqlite returns the dataset's rows");
    }

    common::trace_lookups(&rt, &db, &ids, 3, "sqlite middleware");

    // Rows for middleware_decode, materialised through the public API.
    let rows = common::lookup_rows(&rt, &db, &ids);

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(n as u64));

    g.bench_function(BenchmarkId::new("rusqlite", n), |b| {
        b.iter(|| {
            for &id in ids.iter() {
                black_box(bs::raw_lookup(&mut raw_stmt, black_box(id)).expect("lookup"));
            }
        });
    });

    g.bench_function(BenchmarkId::new("middleware", n), |b| {
        b.iter_custom(|iters| {
            common::middleware_lookups::<BenchRow>(
                &rt,
                &db,
                &ids,
                dataset::LOOKUP_SQL_DOLLAR,
                iters,
            )
        });
    });

    #[cfg(feature = "tracing")]
    g.bench_function(BenchmarkId::new("middleware_tracing", n), |b| {
        b.iter_custom(|iters| {
            common::middleware_lookups::<BenchRow>(
                &rt,
                &traced,
                &ids,
                dataset::LOOKUP_SQL_DOLLAR,
                iters,
            )
        });
    });

    // The per-call forms, and their floor: raw rusqlite with `prepare_cached` per call.
    g.bench_function(BenchmarkId::new("rusqlite_prepare_cached", n), |b| {
        b.iter(|| {
            for &id in ids.iter() {
                let mut st = raw
                    .prepare_cached(dataset::LOOKUP_SQL_QMARK)
                    .expect("prepare_cached");
                black_box(bs::raw_lookup(&mut st, black_box(id)).expect("lookup"));
            }
        });
    });

    common::per_call_ids(&mut g, &rt, &db, &ids);

    g.bench_function(BenchmarkId::new("pool_acquire", n), |b| {
        b.iter_custom(|iters| common::pool_acquires(&rt, &db, iters * n as u64));
    });

    g.bench_function(BenchmarkId::new("middleware_prepare", n), |b| {
        b.iter_custom(|iters| common::cached_prepares(&rt, &db, iters * n as u64));
    });

    g.bench_function(BenchmarkId::new("middleware_interact", n), |b| {
        b.iter_custom(|iters| {
            let db = db.clone();
            common::in_task(&rt, async move {
                let mut conn = db.get_connection().await.expect("checkout");
                let start = Instant::now();
                for _ in 0..iters * n as u64 {
                    conn.with_blocking_sqlite(|_| Ok(()))
                        .await
                        .expect("interact");
                }
                start.elapsed()
            })
        });
    });

    g.bench_function(BenchmarkId::new("middleware_marshalling", n), |b| {
        b.iter_custom(|iters| {
            let (db, ids) = (db.clone(), Arc::clone(&ids));
            in_blocking_loop(&rt, db, move |c| bs::marshal_loop(c, &ids, iters))
        });
    });

    g.bench_function(BenchmarkId::new("middleware_decode", n), |b| {
        b.iter(|| {
            for row in &rows {
                black_box(BenchRow::from_row(black_box(row)).expect("decode"));
            }
        });
    });

    // The same rows into a struct with named fields: `#[derive(FromRow)]` against the impl a
    // user would write by hand (both read by column name).
    g.bench_function(BenchmarkId::new("middleware_decode_by_name", n), |b| {
        b.iter(|| {
            for row in &rows {
                black_box(ByName::from_row(black_box(row)).expect("decode"));
            }
        });
    });

    g.bench_function(BenchmarkId::new("middleware_decode_derive", n), |b| {
        b.iter(|| {
            for row in &rows {
                black_box(Derived::from_row(black_box(row)).expect("decode"));
            }
        });
    });

    g.bench_function(BenchmarkId::new("middleware_param_convert", n), |b| {
        b.iter_custom(|iters| {
            let (db, ids) = (db.clone(), Arc::clone(&ids));
            in_blocking_loop(&rt, db, move |c| bs::param_convert_loop(c, &ids, iters))
        });
    });

    g.finish();
}

/// Runs a hook on a pooled connection's raw rusqlite handle (one `with_blocking_sqlite` per
/// sample, outside the hook's own timer) and returns the time the hook measured.
fn in_blocking_loop<F>(rt: &tokio::runtime::Runtime, db: ConfigAndPool, hook: F) -> Duration
where
    F: FnOnce(
            &mut sql_middleware::drivers::rusqlite::Connection,
        ) -> Result<Duration, SqlMiddlewareDbError>
        + Send
        + 'static,
{
    common::in_task(rt, async move {
        let mut conn = db.get_connection().await.expect("checkout");
        conn.with_blocking_sqlite(move |c| Ok(hook(c)))
            .await
            .expect("with_blocking_sqlite")
            .expect("micro-bench hook")
    })
}

bench_main!(sqlite_single_row_lookup);
