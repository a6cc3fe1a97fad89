//! Group `postgres_single_row_lookup_sqlx`: SQLx's best practice for the Postgres point lookup,
//! the mirror of `postgres_single_row_lookup` in the main crate.
//!
//! The server is `SQL_MIDDLEWARE_PG_URL`, else the local default, else a throwaway cluster
//! (`tests/common/pg/`, shared by path). The bench uses schema `dataset::postgres_schema(N)`
//! with the main crate's table and rows, creates it when missing and drops it at the end.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgPool, PgPoolOptions, PgStatement};
use sqlx::{Executor, FromRow, Postgres, SqlStr, Statement};
use sqlx_lookup::{BenchRow, dataset, in_task, pg};

const GROUP: &str = "postgres_single_row_lookup_sqlx";

/// The lookup statement, as SQLx takes it.
const LOOKUP: SqlStr = SqlStr::from_static(dataset::LOOKUP_SQL_DOLLAR);

fn main() {
    let mut c = sqlx_lookup::criterion();
    bench(&mut c);
    c.final_summary();
}

/// Checks a connection out and prepares the lookup on it (outside every timer; SQLx keeps the
/// server-side prepared statement in the connection's statement cache).
async fn checkout(pool: &PgPool) -> (PoolConnection<Postgres>, PgStatement) {
    let mut conn = pool.acquire().await.expect("acquire");
    let stmt = conn.prepare(LOOKUP).await.expect("prepare the lookup");
    (conn, stmt)
}

/// The lookup id as the table's int4 key (bound with the column's type, as the main crate's
/// raw tokio-postgres baseline does).
fn key(id: i64) -> i32 {
    i32::try_from(id).expect("the lookup table's ids are int4")
}

fn bench(c: &mut Criterion) {
    let n = dataset::bench_lookups();
    let ids = Arc::new(dataset::shuffled_ids(n));
    let base = pg::base_url();
    let schema = dataset::postgres_schema(n);
    let rt = sqlx_lookup::runtime();

    let pool = {
        let base = base.clone();
        let schema = schema.clone();
        in_task(&rt, async move {
            sqlx_lookup::ensure_pg_lookup(&base, n).await;
            PgPoolOptions::new()
                .max_connections(sqlx_lookup::SINGLE_POOL_MAX)
                .connect_with(sqlx_lookup::pg_options(&base, &schema))
                .await
                .expect("SQLx cannot open a Postgres pool")
        })
    };
    eprintln!(
        "[{GROUP}] N = {n} lookups per iteration; schema {schema}; SQLx pool max_connections {} \
         (one connection in use), statement prepared once per checkout; tokio multi-thread \
         runtime, {} workers",
        sqlx_lookup::SINGLE_POOL_MAX,
        rt.metrics().num_workers(),
    );

    // SQLx returns the dataset's rows (checked once, outside the timer).
    {
        let (pool, ids) = (pool.clone(), Arc::clone(&ids));
        in_task(&rt, async move {
            let (mut conn, stmt) = checkout(&pool).await;
            for &id in ids.iter() {
                let row: BenchRow = stmt
                    .query_as()
                    .bind(key(id))
                    .fetch_one(&mut *conn)
                    .await
                    .expect("lookup");
                assert_eq!(row, dataset::row(id));
            }
        });
    }

    if dataset::bench_trace() {
        let (pool, ids) = (pool.clone(), Arc::clone(&ids));
        let split = in_task(&rt, async move {
            let (mut conn, stmt) = checkout(&pool).await;
            let (mut query, mut decode, mut fused) = (Vec::new(), Vec::new(), Vec::new());
            for &id in ids.iter() {
                let t0 = Instant::now();
                let row = stmt
                    .query()
                    .bind(key(id))
                    .fetch_one(&mut *conn)
                    .await
                    .expect("lookup");
                let t1 = Instant::now();
                black_box(BenchRow::from_row(&row).expect("decode"));
                let t2 = Instant::now();
                let row: BenchRow = stmt
                    .query_as()
                    .bind(key(id))
                    .fetch_one(&mut *conn)
                    .await
                    .expect("lookup");
                let t3 = Instant::now();
                black_box(row);
                query.push(t1 - t0);
                decode.push(t2 - t1);
                fused.push(t3 - t2);
            }
            (query, decode, fused)
        });
        sqlx_lookup::print_trace("postgres sqlx", split);
    }

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(n as u64));

    // A prepared statement on a pooled connection held for the whole loop, each row decoded
    // into `BenchRow` by `query_as`.
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
                            .bind(key(id))
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

    g.finish();

    in_task(&rt, async move {
        // Close the pool first, so no connection of ours holds a lock on the schema.
        let closed = tokio::time::timeout(Duration::from_secs(30), pool.close()).await;
        if closed.is_err() {
            eprintln!("[{GROUP}] the SQLx pool did not close within 30 s");
        }
        sqlx_lookup::drop_pg_lookup(&base, n).await;
    });
}
