//! Group `sqlite_single_row_lookup_peers`: the main crate's `sqlite_single_row_lookup` lookup
//! (same file, query and `BenchRow` decode, N lookups per iteration) through the two async
//! SQLite peers, each in its documented best practice. See README.md.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, Throughput};
use sqlite_peers::{dataset, in_task, lookup};

const GROUP: &str = "sqlite_single_row_lookup_peers";

fn main() {
    let mut c = sqlite_peers::criterion();
    bench(&mut c);
    c.final_summary();
}

fn bench(c: &mut Criterion) {
    let n = dataset::bench_lookups();
    let ids = Arc::new(dataset::shuffled_ids(n));
    let path = sqlite_peers::ensure_sqlite_lookup(n);
    let rt = sqlite_peers::runtime();

    // deadpool-sqlite: a pool of its default size; the lookups run on one object held for the
    // whole loop, as `middleware` holds one checkout.
    let pool = sqlite_peers::deadpool_pool(&path, deadpool_sqlite::PoolConfig::default().max_size);
    // tokio-rusqlite: one connection handle (one background thread), opened up front.
    let trc = rt
        .block_on(tokio_rusqlite::Connection::open(&path))
        .expect("open the tokio-rusqlite connection");
    eprintln!(
        "[{GROUP}] N = {n} lookups per iteration; {}; deadpool-sqlite max_size {}, one object held; \
         tokio-rusqlite one connection; tokio multi-thread runtime, {} workers",
        path.display(),
        pool.status().max_size,
        rt.metrics().num_workers(),
    );

    // Both peers return the dataset's rows (checked once, outside the timer; this also fills
    // each connection's statement cache).
    {
        let (pool, trc, ids) = (pool.clone(), trc.clone(), Arc::clone(&ids));
        in_task(&rt, async move {
            let obj = pool.get().await.expect("checkout");
            let ids2 = Arc::clone(&ids);
            obj.interact(move |conn| {
                for &id in ids2.iter() {
                    assert_eq!(lookup(conn, id).expect("lookup"), dataset::row(id));
                }
            })
            .await
            .expect("interact");
            trc.call(move |conn| {
                for &id in ids.iter() {
                    assert_eq!(lookup(conn, id)?, dataset::row(id));
                }
                Ok::<_, rusqlite::Error>(())
            })
            .await
            .expect("call");
        });
    }

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(n as u64));

    // A held pool object; one `interact` per lookup (a `spawn_blocking` hop and the object's
    // mutex), `prepare_cached` + `query_row` + decode inside.
    g.bench_function(BenchmarkId::new("deadpool_sqlite", n), |b| {
        b.iter_custom(|iters| {
            let (pool, ids) = (pool.clone(), Arc::clone(&ids));
            in_task(&rt, async move {
                let obj = pool.get().await.expect("checkout");
                let start = Instant::now();
                for _ in 0..iters {
                    for &id in ids.iter() {
                        let row = obj
                            .interact(move |conn| lookup(conn, id))
                            .await
                            .expect("interact")
                            .expect("lookup");
                        black_box(row);
                    }
                }
                start.elapsed()
            })
        });
    });

    // One `call` per lookup (a channel hop to the connection's thread and a oneshot back),
    // `prepare_cached` + `query_row` + decode inside.
    g.bench_function(BenchmarkId::new("tokio_rusqlite", n), |b| {
        b.iter_custom(|iters| {
            let (trc, ids) = (trc.clone(), Arc::clone(&ids));
            in_task(&rt, async move {
                let start = Instant::now();
                for _ in 0..iters {
                    for &id in ids.iter() {
                        let row = trc
                            .call(move |conn| lookup(conn, id))
                            .await
                            .expect("lookup");
                        black_box(row);
                    }
                }
                start.elapsed()
            })
        });
    });

    g.finish();
    // deadpool-sqlite closes its connections on tokio's blocking pool: drop it inside the runtime.
    rt.block_on(async move {
        pool.close();
        drop(pool);
        trc.close().await.expect("close tokio-rusqlite");
    });
}
