//! SQLx's side of the main crate's `mysql_fanout` group: id `sqlx/<T>` in the group
//! `mysql_fanout` itself, so the report reads it beside `mysql_async_raw` and `middleware`.
//!
//! N lookups per iteration over T = `BENCH_FANOUT_TASKS` (default 32) tasks sharing a pool of
//! C = `BENCH_CONCURRENCY` (default 8) connections. One operation is SQLx's per-call form,
//! `sqlx::query_as(sql).bind(id).fetch_one(&pool)`: a checkout, the lookup through the
//! connection's statement cache (persistent statements), the decode, and the return.
//!
//! The bench uses the main bench's database (`sqlmw_bench_lookup_<N>_fanout`, same table and
//! rows), creates it when missing and drops it at the end. Don't run both at once.

use std::hint::black_box;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use sqlx::mysql::{MySqlPool, MySqlPoolOptions};
use sqlx_lookup::{BenchRow, dataset, fan_out, in_task};

const GROUP: &str = "mysql_fanout";

/// The lookup with MySQL's positional placeholder.
const LOOKUP_QMARK: &str = "SELECT id, name, score, active FROM test WHERE id = ?";

fn main() {
    let mut c = sqlx_lookup::criterion();
    bench(&mut c);
    c.final_summary();
}

/// `BENCH_FANOUT_TASKS` (default 32), read as the main crate's `bench_mysql_fanout` reads it.
fn fanout_tasks() -> usize {
    dataset::env_usize("BENCH_FANOUT_TASKS").unwrap_or(32)
}

/// The lookup id as the table's INT key.
fn key(id: i64) -> i32 {
    i32::try_from(id).expect("the lookup table's ids are INT")
}

/// One task's share: per id, `query_as(..).bind(..).fetch_one(&pool)` (checkout, cached
/// statement, decode into `BenchRow`, return).
async fn share(pool: MySqlPool, ids: Arc<Vec<i64>>, range: Range<usize>) {
    for &id in &ids[range] {
        let row: BenchRow = sqlx::query_as(LOOKUP_QMARK)
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
    let base = sqlx_lookup::mysql_base_url();
    let database = sqlx_lookup::mysql_database(n, "_fanout");
    let rt = sqlx_lookup::runtime();

    // C connections, all opened up front; no ping before each acquire (SQLx's default is one
    // round trip per acquire; the middleware and the raw mysql_async pool check a returned
    // connection without one). Every other option is SQLx's default.
    let pool = {
        let (base, database) = (base.clone(), database.clone());
        let size = u32::try_from(pool_size).expect("BENCH_CONCURRENCY fits in u32");
        in_task(&rt, async move {
            sqlx_lookup::ensure_mysql_lookup(&base, &database, n).await;
            MySqlPoolOptions::new()
                .max_connections(size)
                .min_connections(size)
                .test_before_acquire(false)
                .connect_with(sqlx_lookup::mysql_options(&base, &database))
                .await
                .expect("SQLx cannot open a MySQL pool")
        })
    };
    eprintln!(
        "[{GROUP}/sqlx] N = {n} operations per iteration over T = {tasks} tasks on a SQLx pool of \
         C = {pool_size} (min = max, test_before_acquire off); database {database}; tokio \
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
                    let row: BenchRow = sqlx::query_as(LOOKUP_QMARK)
                        .bind(key(id))
                        .fetch_one(&mut **conn)
                        .await
                        .expect("lookup");
                    assert_eq!(row, dataset::row(id));
                }
            }
            drop(conns);
            for &id in ids.iter() {
                let row: BenchRow = sqlx::query_as(LOOKUP_QMARK)
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
        sqlx_lookup::drop_mysql_database(&base, &database).await;
    });
}
