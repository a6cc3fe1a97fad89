//! `turso_single_row_lookup`: N point lookups per iteration, raw Turso against the middleware,
//! plus the same micro-benches as the SQLite group. See docs/dev/Benchmarks.md.

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, Throughput};
use sql_middleware::prelude::*;
use sql_middleware_bench::workloads::{self, Lookup};
use sql_middleware_bench::{BenchRow, dataset, turso as bt};

const GROUP: &str = "turso_single_row_lookup";

fn turso_single_row_lookup(c: &mut Criterion) {
    let Lookup { n, ids } = Lookup::from_env();
    let ids = Arc::new(ids);
    let path = dataset::turso_lookup_path(env!("CARGO_MANIFEST_DIR"), n);
    let rt = common::runtime();
    let built = rt
        .block_on(bt::ensure_lookup_db(&path, n))
        .expect("build the Turso lookup database");
    let db = rt
        .block_on(common::plain(ConfigAndPool::turso(&path)).build())
        .expect("build the middleware pool");
    // The raw baseline: its own Database and one connection, the statement prepared once.
    let (raw_db, raw_stmt) = rt
        .block_on(async {
            let (raw_db, conn) = bt::open_raw(&path).await?;
            let stmt = conn
                .prepare(dataset::LOOKUP_SQL_QMARK)
                .await
                .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string()))?;
            Ok::<_, SqlMiddlewareDbError>((raw_db, (conn, stmt)))
        })
        .expect("open the raw Turso connection");
    let raw_stmt = Arc::new(tokio::sync::Mutex::new(raw_stmt));
    eprintln!(
        "[{GROUP}] N = {n} lookups per iteration; {} {}; middleware pool max_size {} (one \
         connection in use); raw: one turso::Connection, statement prepared once",
        if built { "built" } else { "reused" },
        path.display(),
        db.status().max_size,
    );

    // Every contender returns the dataset's rows (checked once, outside the timer).
    {
        let (db, ids, raw) = (db.clone(), Arc::clone(&ids), Arc::clone(&raw_stmt));
        common::in_task(&rt, async move {
            let mut conn = db.get_connection().await?;
            workloads::verify_lookups(&mut conn, &ids).await?;
            let mut raw = raw.lock().await;
            for &id in ids.iter() {
                let row = bt::raw_lookup(&mut raw.1, id)
                    .await
                    .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string()))?;
                workloads::check_row(id, &row)?;
            }
            Ok::<_, SqlMiddlewareDbError>(())
        })
        .expect("every contender returns the dataset's rows");
    }

    common::trace_lookups(&rt, &db, &ids, 3, "turso middleware");

    let rows = common::lookup_rows(&rt, &db, &ids);

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(n as u64));

    g.bench_function(BenchmarkId::new("turso_raw", n), |b| {
        b.iter_custom(|iters| {
            let (raw, ids) = (Arc::clone(&raw_stmt), Arc::clone(&ids));
            common::in_task(&rt, async move {
                let mut raw = raw.lock().await;
                let stmt = &mut raw.1;
                let start = Instant::now();
                for _ in 0..iters {
                    for &id in ids.iter() {
                        black_box(bt::raw_lookup(stmt, id).await.expect("lookup"));
                    }
                }
                start.elapsed()
            })
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

    common::per_call_ids(&mut g, &rt, &db, &ids);

    g.bench_function(BenchmarkId::new("pool_acquire", n), |b| {
        b.iter_custom(|iters| common::pool_acquires(&rt, &db, iters * n as u64));
    });

    g.bench_function(BenchmarkId::new("middleware_prepare", n), |b| {
        b.iter_custom(|iters| common::cached_prepares(&rt, &db, iters * n as u64));
    });

    // Turso runs in process with an async API: the middleware has no blocking bridge for it.
    // Its raw-access round trip is `turso_connection()` plus a call that runs no SQL.
    g.bench_function(BenchmarkId::new("middleware_interact", n), |b| {
        b.iter_custom(|iters| {
            let db = db.clone();
            common::in_task(&rt, async move {
                let mut conn = db.get_connection().await.expect("checkout");
                let start = Instant::now();
                for _ in 0..iters * n as u64 {
                    let raw = conn.turso_connection().await.expect("raw access");
                    black_box(raw.is_autocommit().expect("is_autocommit"));
                }
                start.elapsed()
            })
        });
    });

    g.bench_function(BenchmarkId::new("middleware_marshalling", n), |b| {
        b.iter_custom(|iters| {
            let (db, ids) = (db.clone(), Arc::clone(&ids));
            common::in_task(&rt, async move {
                let mut conn = db.get_connection().await.expect("checkout");
                let raw = conn.turso_connection().await.expect("raw access");
                bt::marshal_loop(raw, &ids, iters)
                    .await
                    .expect("marshalling hook")
            })
        });
    });

    g.bench_function(BenchmarkId::new("middleware_decode", n), |b| {
        b.iter(|| {
            for row in &rows {
                black_box(BenchRow::from_row(black_box(row)).expect("decode"));
            }
        });
    });

    g.bench_function(BenchmarkId::new("middleware_param_convert", n), |b| {
        b.iter_custom(|iters| bt::param_convert_loop(&ids, iters).expect("param hook"));
    });

    g.finish();
    drop(raw_stmt);
    drop(raw_db);
}

bench_main!(turso_single_row_lookup);
