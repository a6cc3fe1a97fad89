//! Group `sqlite_multithread_pool_checkout_sqlx`: N lookups (or checkouts, or prepares) per
//! iteration, fanned out over C = `BENCH_CONCURRENCY` concurrent tasks on tokio's multi-thread
//! runtime; the SQLx mirror of `sqlite_multithread_pool_checkout`. See README.md.

use std::hint::black_box;
use std::ops::Range;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput};
use sqlx::sqlite::{SqlitePool, SqliteStatement};
use sqlx::{Executor, FromRow, SqlStr, Statement};
use sqlx_lookup::{BenchRow, dataset, fan_out};

const GROUP: &str = "sqlite_multithread_pool_checkout_sqlx";

/// The lookup statement, as SQLx takes it.
const LOOKUP: SqlStr = SqlStr::from_static(dataset::LOOKUP_SQL_QMARK);

fn main() {
    let mut c = sqlx_lookup::criterion();
    bench(&mut c);
    c.final_summary();
}

/// One task's share of `sqlx_parallel_select`: check a connection out, look up `ids[range]`
/// through the prepared statement, decode every row into `BenchRow`.
async fn select_share(
    pool: SqlitePool,
    stmt: Arc<SqliteStatement>,
    ids: Arc<Vec<i64>>,
    range: Range<usize>,
) {
    let mut conn = pool.acquire().await.expect("acquire");
    for &id in &ids[range] {
        let row: BenchRow = stmt
            .query_as()
            .bind(id)
            .fetch_one(&mut *conn)
            .await
            .expect("lookup");
        black_box(row);
    }
}

fn bench(c: &mut Criterion) {
    let n = dataset::bench_lookups();
    let ids = Arc::new(dataset::shuffled_ids(n));
    let conc = dataset::bench_concurrency();
    let ranges = sqlx_lookup::chunks(n, conc);
    let pool_size = u32::try_from(conc).expect("BENCH_CONCURRENCY fits in u32");
    let rt = sqlx_lookup::runtime();

    // The pool holds one connection per task, all opened up front. Every connection prepares the
    // lookup (SQLx caches it per connection) and answers a few lookups before any timing; the
    // `SqliteStatement` handle itself is connection-independent and shared by all tasks.
    let (pool, stmt) = rt.block_on(async {
        let path = sqlx_lookup::ensure_sqlite_lookup(n).await;
        let pool = sqlx_lookup::sqlite_pool(&path, pool_size).await;
        let mut conns = Vec::with_capacity(conc);
        for _ in 0..conc {
            conns.push(pool.acquire().await.expect("acquire"));
        }
        let mut stmt = None;
        for conn in &mut conns {
            stmt = Some(conn.prepare(LOOKUP).await.expect("prepare the lookup"));
            let stmt = stmt.as_ref().expect("prepared");
            for &id in ids.iter().take(64) {
                let row: BenchRow = stmt
                    .query_as()
                    .bind(id)
                    .fetch_one(&mut **conn)
                    .await
                    .expect("lookup");
                assert_eq!(row, dataset::row(id));
            }
        }
        drop(conns);
        // Wait until the release tasks have put every connection back.
        while pool.num_idle() < conc {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        (pool, Arc::new(stmt.expect("C >= 1")))
    });
    eprintln!(
        "[{GROUP}] N = {n} operations per iteration over C = {conc} tasks; SQLx pool \
         max_connections {conc}; tokio multi-thread runtime, {} workers",
        rt.metrics().num_workers(),
    );

    // Every row of the dataset comes back right through the fan-out (checked once, untimed).
    {
        let checked = rt.block_on(async {
            let handles: Vec<_> = ranges
                .iter()
                .map(|r| {
                    let (pool, stmt, ids, r) =
                        (pool.clone(), Arc::clone(&stmt), Arc::clone(&ids), r.clone());
                    tokio::spawn(async move {
                        let mut conn = pool.acquire().await.expect("acquire");
                        for &id in &ids[r.clone()] {
                            let row = stmt
                                .query()
                                .bind(id)
                                .fetch_one(&mut *conn)
                                .await
                                .expect("lookup");
                            assert_eq!(BenchRow::from_row(&row).expect("decode"), dataset::row(id));
                        }
                        r.len()
                    })
                })
                .collect();
            let mut total = 0;
            for h in handles {
                total += h.await.expect("check task");
            }
            total
        });
        assert_eq!(checked, n);
    }

    if dataset::bench_trace() {
        // One traced fan-out: each task splits its own share's rows into query and decode.
        let splits: Vec<_> = rt.block_on(async {
            let handles: Vec<_> = ranges
                .iter()
                .map(|r| {
                    let (pool, stmt, ids, r) =
                        (pool.clone(), Arc::clone(&stmt), Arc::clone(&ids), r.clone());
                    tokio::spawn(async move {
                        let mut conn = pool.acquire().await.expect("acquire");
                        sqlx_lookup::trace_sqlite_split(&mut conn, &stmt, &ids[r], 1).await
                    })
                })
                .collect();
            let mut out = Vec::new();
            for h in handles {
                out.push(h.await.expect("trace task"));
            }
            out
        });
        for (i, split) in splits.into_iter().enumerate() {
            sqlx_lookup::print_trace(&format!("sqlite sqlx_parallel_select task {i}"), split);
        }
    }

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(n as u64));

    g.bench_function(BenchmarkId::new("sqlx_parallel_select", conc), |b| {
        b.iter_custom(|iters| {
            fan_out(&rt, iters, &ranges, |r| {
                select_share(pool.clone(), Arc::clone(&stmt), Arc::clone(&ids), r)
            })
        });
    });

    g.bench_function(BenchmarkId::new("sqlx_pool_checkout", conc), |b| {
        b.iter_custom(|iters| {
            fan_out(&rt, iters, &ranges, |r| {
                let pool = pool.clone();
                async move {
                    for _ in r {
                        let conn = pool.acquire().await.expect("acquire");
                        drop(black_box(conn));
                    }
                }
            })
        });
    });

    g.bench_function(BenchmarkId::new("sqlx_prepare_parallel", conc), |b| {
        b.iter_custom(|iters| {
            fan_out(&rt, iters, &ranges, |r| {
                let pool = pool.clone();
                async move {
                    let mut conn = pool.acquire().await.expect("acquire");
                    for _ in r {
                        let stmt = conn.prepare(black_box(LOOKUP)).await.expect("prepare");
                        drop(black_box(stmt));
                    }
                }
            })
        });
    });

    g.finish();
    rt.block_on(pool.close());
}
