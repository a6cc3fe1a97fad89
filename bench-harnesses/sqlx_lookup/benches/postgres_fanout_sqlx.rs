//! SQLx's side of the main crate's `postgres_fanout` group: id `sqlx/<T>` in the group
//! `postgres_fanout` itself, so the report reads it beside `deadpool_postgres_raw` and
//! `middleware`.
//!
//! N lookups per iteration over T = `BENCH_FANOUT_TASKS` (default 32) tasks sharing a pool of
//! C = `BENCH_CONCURRENCY` (default 8) connections. One operation is SQLx's per-call form,
//! `sqlx::query_as(sql).bind(id).fetch_one(&pool)`: a checkout, the lookup through the
//! connection's statement cache, the decode, and the return of the connection.
//!
//! The bench uses the main bench's schema (`<dataset::postgres_schema(N)>_fanout`, same table and
//! rows), creates it when missing and drops it at the end. Don't run both at once.

use std::hint::black_box;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx_lookup::{BenchRow, dataset, fan_out, in_task, pg};

const GROUP: &str = "postgres_fanout";

fn main() {
    let mut c = sqlx_lookup::criterion();
    bench(&mut c);
    c.final_summary();
}

/// `BENCH_FANOUT_TASKS` (default 32), read as the main crate's `bench_postgres_fanout` reads it.
fn fanout_tasks() -> usize {
    dataset::env_usize("BENCH_FANOUT_TASKS").unwrap_or(32)
}

/// The main bench's schema name.
fn fanout_schema(n: usize) -> String {
    format!("{}_fanout", dataset::postgres_schema(n))
}

/// The lookup id as the table's int4 key.
fn key(id: i64) -> i32 {
    i32::try_from(id).expect("the lookup table's ids are int4")
}

/// One task's share: per id, `query_as(..).bind(..).fetch_one(&pool)` (checkout, cached
/// statement, decode into `BenchRow`, return).
async fn share(pool: PgPool, ids: Arc<Vec<i64>>, range: Range<usize>) {
    for &id in &ids[range] {
        let row: BenchRow = sqlx::query_as(dataset::LOOKUP_SQL_DOLLAR)
            .bind(key(id))
            .fetch_one(&pool)
            .await
            .expect("lookup");
        black_box(row);
    }
}

fn bench(c: &mut Criterion) {
    let n = dataset::bench_lookups();
    let ids = Arc::new(dataset::shuffled_ids(n));
    let pool_size = dataset::bench_concurrency();
    let tasks = fanout_tasks();
    let ranges = sqlx_lookup::chunks(n, tasks);
    let base = pg::base_url();
    let schema = fanout_schema(n);
    let rt = sqlx_lookup::runtime();

    // C connections, all opened up front; no ping before each acquire (SQLx's default is one
    // round trip per acquire; the middleware and deadpool-postgres with `RecyclingMethod::Fast`
    // check a returned connection without one). Every other option is SQLx's default.
    let pool = {
        let (base, schema) = (base.clone(), schema.clone());
        let size = u32::try_from(pool_size).expect("BENCH_CONCURRENCY fits in u32");
        in_task(&rt, async move {
            sqlx_lookup::ensure_pg_lookup_in(&base, &schema, n).await;
            PgPoolOptions::new()
                .max_connections(size)
                .min_connections(size)
                .test_before_acquire(false)
                .connect_with(sqlx_lookup::pg_options(&base, &schema))
                .await
                .expect("SQLx cannot open a Postgres pool")
        })
    };
    eprintln!(
        "[{GROUP}/sqlx] N = {n} operations per iteration over T = {tasks} tasks on a SQLx pool of \
         C = {pool_size} (min = max, test_before_acquire off); schema {schema}; tokio \
         multi-thread runtime, {} workers",
        rt.metrics().num_workers(),
    );

    // Every connection returns the dataset's rows and has the lookup in its statement cache
    // (checked once, outside the timer).
    {
        let (pool, ids) = (pool.clone(), Arc::clone(&ids));
        in_task(&rt, async move {
            let mut conns = Vec::with_capacity(pool_size);
            for _ in 0..pool_size {
                conns.push(pool.acquire().await.expect("acquire"));
            }
            for conn in &mut conns {
                for &id in ids.iter().take(64) {
                    let row: BenchRow = sqlx::query_as(dataset::LOOKUP_SQL_DOLLAR)
                        .bind(key(id))
                        .fetch_one(&mut **conn)
                        .await
                        .expect("lookup");
                    assert_eq!(row, dataset::row(id));
                }
            }
            drop(conns);
            for &id in ids.iter() {
                let row: BenchRow = sqlx::query_as(dataset::LOOKUP_SQL_DOLLAR)
                    .bind(key(id))
                    .fetch_one(&pool)
                    .await
                    .expect("lookup");
                assert_eq!(row, dataset::row(id));
            }
        });
    }

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(n as u64));

    g.bench_function(BenchmarkId::new("sqlx", tasks), |b| {
        b.iter_custom(|iters| {
            fan_out(&rt, iters, &ranges, |r| {
                share(pool.clone(), Arc::clone(&ids), r)
            })
        });
    });

    g.finish();

    in_task(&rt, async move {
        let closed = tokio::time::timeout(Duration::from_secs(30), pool.close()).await;
        if closed.is_err() {
            eprintln!("[{GROUP}/sqlx] the SQLx pool did not close within 30 s");
        }
        sqlx_lookup::drop_pg_schema(&base, &schema).await;
    });
}
