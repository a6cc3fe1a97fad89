//! `sqlite_multithread_pool_checkout`: N lookups (or checkouts) per iteration, fanned out over
//! C concurrent tasks on tokio's multi-thread runtime. See docs/dev/Benchmarks.md.

mod common;

use std::hint::black_box;
use std::sync::{Arc, Mutex};

use criterion::{BenchmarkId, Criterion, Throughput};
use sql_middleware::drivers::rusqlite::Connection;
use sql_middleware::prelude::*;
use sql_middleware_bench::workloads::{self, Lookup};
use sql_middleware_bench::{dataset, sqlite as bs};

const GROUP: &str = "sqlite_multithread_pool_checkout";

fn sqlite_multithread_pool_checkout(c: &mut Criterion) {
    let Lookup { n, ids } = Lookup::from_env();
    let ids = Arc::new(ids);
    let conc = dataset::bench_concurrency();
    let ranges = workloads::chunks(n, conc);
    let path = dataset::sqlite_lookup_path(env!("CARGO_MANIFEST_DIR"), n);
    let built = bs::ensure_lookup_db(&path, n).expect("build the SQLite lookup file");
    let rt = common::runtime();
    let db = rt
        .block_on(common::plain(ConfigAndPool::sqlite(&path).max_size(conc)).build())
        .expect("build the middleware pool");
    let raw_pool: Arc<Mutex<Vec<Connection>>> = Arc::new(Mutex::new(
        (0..conc)
            .map(|_| bs::open_raw(&path).expect("open a raw rusqlite connection"))
            .collect(),
    ));
    eprintln!(
        "[{GROUP}] N = {n} operations per iteration over C = {conc} tasks; {} {}; pools: \
         middleware max_size {conc}, rusqlite_blocking {conc} connections; tokio multi-thread \
         runtime, {} workers",
        if built { "built" } else { "reused" },
        path.display(),
        rt.metrics().num_workers(),
    );

    // Every contender returns the dataset's rows (checked once, outside the timer).
    {
        let (db, all) = (db.clone(), Arc::clone(&ids));
        common::in_task(&rt, async move {
            let mut conn = db.get_connection().await?;
            workloads::verify_lookups(&mut conn, &all).await
        })
        .expect("the middleware returns the dataset's rows");
        let pool = raw_pool.lock().expect("raw pool");
        for conn in pool.iter() {
            let mut st = bs::lookup_stmt(conn).expect("prepare the raw lookup");
            for &id in ids.iter().take(64) {
                let row = bs::raw_lookup(&mut st, id).expect("raw lookup");
                workloads::check_row(id, &row).expect("rusqlite returns the dataset's rows");
            }
        }
    }

    if dataset::bench_trace() {
        // One traced fan-out: each task splits its own share's rows into query and decode.
        let splits: Vec<_> = rt.block_on(async {
            let handles: Vec<_> = ranges
                .iter()
                .map(|r| {
                    let (db, ids, r) = (db.clone(), Arc::clone(&ids), r.clone());
                    tokio::spawn(async move {
                        let mut conn = db.get_connection().await?;
                        workloads::trace_lookup_split(&mut conn, &ids[r], 1).await
                    })
                })
                .collect();
            let mut out = Vec::new();
            for h in handles {
                out.push(h.await.expect("trace task").expect("BENCH_TRACE pass"));
            }
            out
        });
        for (i, split) in splits.iter().enumerate() {
            workloads::print_trace(
                &format!("sqlite middleware_parallel_select task {i}"),
                split,
            );
        }
    }

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(n as u64));

    g.bench_function(BenchmarkId::new("middleware_parallel_select", conc), |b| {
        b.iter_custom(|iters| {
            common::fan_out(&rt, iters, &ranges, |r| {
                common::middleware_share(db.clone(), Arc::clone(&ids), r)
            })
        });
    });

    g.bench_function(BenchmarkId::new("middleware_pool_checkout", conc), |b| {
        b.iter_custom(|iters| {
            common::fan_out(&rt, iters, &ranges, |r| {
                let db = db.clone();
                async move {
                    for _ in r {
                        let conn = db.get_connection().await.expect("checkout");
                        drop(black_box(conn));
                    }
                }
            })
        });
    });

    g.bench_function(BenchmarkId::new("rusqlite_blocking", conc), |b| {
        b.iter_custom(|iters| {
            common::fan_out(&rt, iters, &ranges, |r| {
                let (pool, ids) = (Arc::clone(&raw_pool), Arc::clone(&ids));
                async move {
                    // One hop per task: its whole share runs on one raw connection.
                    tokio::task::spawn_blocking(move || bs::raw_share(&pool, &ids[r]))
                        .await
                        .expect("the blocking share panicked");
                }
            })
        });
    });

    g.finish();
}

bench_main!(sqlite_multithread_pool_checkout);
