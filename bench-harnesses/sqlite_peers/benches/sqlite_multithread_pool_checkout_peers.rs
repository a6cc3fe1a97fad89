//! Group `sqlite_multithread_pool_checkout_peers`: the main crate's fan-out
//! (`sqlite_multithread_pool_checkout`): N lookups per iteration split over C =
//! `BENCH_CONCURRENCY` concurrent tasks, each task on its own connection, through the two async
//! SQLite peers. See README.md.

use std::hint::black_box;
use std::ops::Range;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput};
use sqlite_peers::{dataset, fan_out, lookup};

const GROUP: &str = "sqlite_multithread_pool_checkout_peers";

fn main() {
    let mut c = sqlite_peers::criterion();
    bench(&mut c);
    c.final_summary();
}

/// One task's share through deadpool-sqlite: check an object out (deadpool's recycle check
/// included, as the middleware's checkout is), then one `interact` per id.
async fn deadpool_share(pool: deadpool_sqlite::Pool, ids: Arc<Vec<i64>>, range: Range<usize>) {
    let obj = pool.get().await.expect("checkout");
    for &id in &ids[range] {
        let row = obj
            .interact(move |conn| lookup(conn, id))
            .await
            .expect("interact")
            .expect("lookup");
        black_box(row);
    }
}

/// One task's share through tokio-rusqlite: its own connection, one `call` per id.
async fn tokio_rusqlite_share(
    conn: tokio_rusqlite::Connection,
    ids: Arc<Vec<i64>>,
    range: Range<usize>,
) {
    for &id in &ids[range] {
        let row = conn.call(move |c| lookup(c, id)).await.expect("lookup");
        black_box(row);
    }
}

fn bench(c: &mut Criterion) {
    let n = dataset::bench_lookups();
    let ids = Arc::new(dataset::shuffled_ids(n));
    let conc = dataset::bench_concurrency();
    let ranges = sqlite_peers::chunks(n, conc);
    let path = sqlite_peers::ensure_sqlite_lookup(n);
    let rt = sqlite_peers::runtime();

    // deadpool-sqlite: a pool of C objects (one per task, as the middleware's `max_size(C)`).
    // tokio-rusqlite has no pool: C connections (C background threads), task i uses number i.
    let pool = sqlite_peers::deadpool_pool(&path, conc);
    let conns: Arc<Vec<tokio_rusqlite::Connection>> = Arc::new(rt.block_on(async {
        let mut v = Vec::with_capacity(conc);
        for _ in 0..conc {
            v.push(
                tokio_rusqlite::Connection::open(&path)
                    .await
                    .expect("open a tokio-rusqlite connection"),
            );
        }
        v
    }));
    eprintln!(
        "[{GROUP}] N = {n} lookups per iteration over C = {conc} tasks; {}; deadpool-sqlite \
         max_size {conc}; tokio-rusqlite {conc} connections; tokio multi-thread runtime, {} workers",
        path.display(),
        rt.metrics().num_workers(),
    );

    // Open all C objects, and check every connection returns the dataset's rows (untimed; this
    // also fills each connection's statement cache).
    rt.block_on(async {
        let mut objs = Vec::with_capacity(conc);
        for _ in 0..conc {
            objs.push(pool.get().await.expect("checkout"));
        }
        for obj in &objs {
            let check = Arc::clone(&ids);
            obj.interact(move |conn| {
                for &id in check.iter().take(64) {
                    assert_eq!(lookup(conn, id).expect("lookup"), dataset::row(id));
                }
            })
            .await
            .expect("interact");
        }
        for conn in conns.iter() {
            let check = Arc::clone(&ids);
            conn.call(move |c| {
                for &id in check.iter().take(64) {
                    assert_eq!(lookup(c, id)?, dataset::row(id));
                }
                Ok::<_, rusqlite::Error>(())
            })
            .await
            .expect("call");
        }
    });

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(n as u64));

    g.bench_function(
        BenchmarkId::new("deadpool_sqlite_parallel_select", conc),
        |b| {
            b.iter_custom(|iters| {
                fan_out(&rt, iters, &ranges, |r| {
                    deadpool_share(pool.clone(), Arc::clone(&ids), r)
                })
            });
        },
    );

    g.bench_function(
        BenchmarkId::new("tokio_rusqlite_parallel_select", conc),
        |b| {
            b.iter_custom(|iters| {
                fan_out(&rt, iters, &ranges, |r| {
                    let conn = conns[ranges.iter().position(|x| *x == r).expect("a share")].clone();
                    tokio_rusqlite_share(conn, Arc::clone(&ids), r)
                })
            });
        },
    );

    g.finish();
    // deadpool-sqlite closes its connections on tokio's blocking pool: drop it inside the runtime.
    rt.block_on(async move {
        pool.close();
        drop(pool);
    });
}
