//! Group `sqlite_single_row_lookup_sqlx`: SQLx's best practice for the SQLite point lookup,
//! plus the micro-benchmarks that mirror the middleware's (`sqlite_single_row_lookup`).
//!
//! Every id performs N = `BENCH_LOOKUPS` operations per iteration and declares
//! `Throughput::Elements(N)`. The async ids run as one spawned task per sample on tokio's
//! multi-thread runtime, exactly like the main crate's benches; the connection checkout and the
//! statement preparation happen in that task before its timer starts. See README.md.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, Throughput};
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{SqlitePool, SqliteRow, SqliteStatement};
use sqlx::{Executor, FromRow, SqlStr, Sqlite, Statement};
use sqlx_lookup::{BenchRow, dataset, in_task};

const GROUP: &str = "sqlite_single_row_lookup_sqlx";

/// The lookup statement, as SQLx takes it.
const LOOKUP: SqlStr = SqlStr::from_static(dataset::LOOKUP_SQL_QMARK);

fn main() {
    let mut c = sqlx_lookup::criterion();
    bench(&mut c);
    c.final_summary();
}

/// Checks a connection out and prepares the lookup on it (outside every timer). SQLx keeps the
/// prepared statement in the connection's statement cache; the returned `SqliteStatement` is the
/// handle `query`/`query_as` execute it through.
async fn checkout(pool: &SqlitePool) -> (PoolConnection<Sqlite>, SqliteStatement) {
    let mut conn = pool.acquire().await.expect("acquire");
    let stmt = conn.prepare(LOOKUP).await.expect("prepare the lookup");
    (conn, stmt)
}

fn bench(c: &mut Criterion) {
    let n = dataset::bench_lookups();
    let ids = Arc::new(dataset::shuffled_ids(n));
    let rt = sqlx_lookup::runtime();

    let pool = rt.block_on(async {
        let path = sqlx_lookup::ensure_sqlite_lookup(n).await;
        sqlx_lookup::sqlite_pool(&path, sqlx_lookup::SINGLE_POOL_MAX).await
    });
    eprintln!(
        "[{GROUP}] N = {n} lookups per iteration; SQLx pool max_connections {} (one connection \
         in use), statement prepared once per checkout; tokio multi-thread runtime, {} workers",
        sqlx_lookup::SINGLE_POOL_MAX,
        rt.metrics().num_workers(),
    );

    // SQLx returns the dataset's rows (checked once, outside the timer); the fetched rows are
    // kept for `sqlx_decode`.
    let rows: Vec<SqliteRow> = {
        let (pool, ids) = (pool.clone(), Arc::clone(&ids));
        in_task(&rt, async move {
            let (mut conn, stmt) = checkout(&pool).await;
            let mut rows = Vec::with_capacity(ids.len());
            for &id in ids.iter() {
                let row = stmt
                    .query()
                    .bind(id)
                    .fetch_one(&mut *conn)
                    .await
                    .expect("lookup");
                assert_eq!(BenchRow::from_row(&row).expect("decode"), dataset::row(id));
                rows.push(row);
            }
            rows
        })
    };

    if dataset::bench_trace() {
        let (pool, ids) = (pool.clone(), Arc::clone(&ids));
        in_task(&rt, async move {
            let (mut conn, stmt) = checkout(&pool).await;
            let split = sqlx_lookup::trace_sqlite_split(&mut conn, &stmt, &ids, 3).await;
            sqlx_lookup::print_trace("sqlite sqlx", split);
        });
    }

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(n as u64));

    // The headline: a prepared statement on a pooled connection held for the whole loop, each
    // row decoded into `BenchRow` by `query_as`.
    g.bench_function(BenchmarkId::new("sqlx", n), |b| {
        b.iter_custom(|iters| {
            let (pool, ids) = (pool.clone(), Arc::clone(&ids));
            in_task(&rt, async move {
                let (mut conn, stmt) = checkout(&pool).await;
                let start = Instant::now();
                for _ in 0..iters {
                    for &id in ids.iter() {
                        let row: BenchRow = stmt
                            .query_as()
                            .bind(id)
                            .fetch_one(&mut *conn)
                            .await
                            .expect("lookup");
                        black_box(row);
                    }
                }
                start.elapsed()
            })
        });
    });

    // Check a connection out of the pool and drop it. With `test_before_acquire` off (see
    // `sqlite_pool`) the acquire itself does no I/O; the drop still spawns SQLx's release task,
    // which pings the connection before it goes back to the pool.
    g.bench_function(BenchmarkId::new("sqlx_pool_acquire", n), |b| {
        b.iter_custom(|iters| {
            let pool = pool.clone();
            in_task(&rt, async move {
                let start = Instant::now();
                for _ in 0..iters * n as u64 {
                    let conn = pool.acquire().await.expect("acquire");
                    drop(black_box(conn));
                }
                start.elapsed()
            })
        });
    });

    // Prepare the lookup statement: `Executor::prepare`, answered from the connection's
    // statement cache (after the first call) through a round trip to its worker thread.
    g.bench_function(BenchmarkId::new("sqlx_prepare", n), |b| {
        b.iter_custom(|iters| {
            let pool = pool.clone();
            in_task(&rt, async move {
                let (mut conn, _) = checkout(&pool).await;
                let start = Instant::now();
                for _ in 0..iters * n as u64 {
                    let stmt = conn.prepare(black_box(LOOKUP)).await.expect("prepare");
                    drop(black_box(stmt));
                }
                start.elapsed()
            })
        });
    });

    // Execute and fetch the row (a materialised `SqliteRow`), without decoding it.
    g.bench_function(BenchmarkId::new("sqlx_query_raw", n), |b| {
        b.iter_custom(|iters| {
            let (pool, ids) = (pool.clone(), Arc::clone(&ids));
            in_task(&rt, async move {
                let (mut conn, stmt) = checkout(&pool).await;
                let start = Instant::now();
                for _ in 0..iters {
                    for &id in ids.iter() {
                        let row: SqliteRow = stmt
                            .query()
                            .bind(id)
                            .fetch_one(&mut *conn)
                            .await
                            .expect("lookup");
                        black_box(row);
                    }
                }
                start.elapsed()
            })
        });
    });

    // Decode already-fetched `SqliteRow`s into `BenchRow`.
    g.bench_function(BenchmarkId::new("sqlx_decode", n), |b| {
        b.iter(|| {
            for row in &rows {
                black_box(BenchRow::from_row(black_box(row)).expect("decode"));
            }
        });
    });

    // Bind one i64 argument into a query object (its `SqliteArguments`), without executing it.
    let stmt = in_task(&rt, {
        let pool = pool.clone();
        async move { checkout(&pool).await.1 }
    });
    g.bench_function(BenchmarkId::new("sqlx_param_bind", n), |b| {
        b.iter(|| {
            for &id in ids.iter() {
                let query = stmt.query().bind(black_box(id));
                black_box(&query);
            }
        });
    });

    g.finish();
    drop(rows);
    rt.block_on(pool.close());
}
