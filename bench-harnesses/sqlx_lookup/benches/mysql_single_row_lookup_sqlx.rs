//! Group `mysql_single_row_lookup_sqlx`: SQLx's best practice for the MySQL/MariaDB point lookup,
//! the mirror of `mysql_single_row_lookup` in the main crate.
//!
//! - `sqlx`: the lookup prepared once on a pooled connection held for the loop
//!   (`Executor::prepare`, then `stmt.query_as().bind(id).fetch_one(&mut *conn)`), the mirror of
//!   the middleware's prepared `stmt.one`.
//! - `sqlx_query_one`: the per-call form `sqlx::query_as(sql).bind(id).fetch_one(&mut *conn)` on
//!   the held connection; SQLx's persistent statements find the lookup in the connection's
//!   statement cache (the mirror of `middleware_query_one`).
//!
//! The server is `SQL_MIDDLEWARE_MYSQL_URL`, else `mysql://root@127.0.0.1:3306/test`. The bench
//! uses the main bench's database (`sqlmw_bench_lookup_<N>`, same table and rows), creates it
//! when missing and drops it at the end. Don't run both at once.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use sqlx::mysql::{MySql, MySqlPool, MySqlPoolOptions, MySqlStatement};
use sqlx::pool::PoolConnection;
use sqlx::{Executor, FromRow, SqlStr, Statement};
use sqlx_lookup::{BenchRow, dataset, in_task};

const GROUP: &str = "mysql_single_row_lookup_sqlx";

/// The lookup with MySQL's positional placeholder.
const LOOKUP_QMARK: &str = "SELECT id, name, score, active FROM test WHERE id = ?";

/// The lookup statement, as SQLx takes it.
const LOOKUP: SqlStr = SqlStr::from_static(LOOKUP_QMARK);

fn main() {
    let mut c = sqlx_lookup::criterion();
    bench(&mut c);
    c.final_summary();
}

/// Checks a connection out and prepares the lookup on it (outside every timer).
async fn checkout(pool: &MySqlPool) -> (PoolConnection<MySql>, MySqlStatement) {
    let mut conn = pool.acquire().await.expect("acquire");
    let stmt = conn.prepare(LOOKUP).await.expect("prepare the lookup");
    (conn, stmt)
}

/// The lookup id as the table's INT key.
fn key(id: i64) -> i32 {
    i32::try_from(id).expect("the lookup table's ids are INT")
}

fn bench(c: &mut Criterion) {
    let n = dataset::bench_lookups();
    let ids = Arc::new(dataset::shuffled_ids(n));
    let base = sqlx_lookup::mysql_base_url();
    let database = sqlx_lookup::mysql_database(n, "");
    let rt = sqlx_lookup::runtime();

    let pool = {
        let (base, database) = (base.clone(), database.clone());
        in_task(&rt, async move {
            sqlx_lookup::ensure_mysql_lookup(&base, &database, n).await;
            MySqlPoolOptions::new()
                .max_connections(sqlx_lookup::SINGLE_POOL_MAX)
                .connect_with(sqlx_lookup::mysql_options(&base, &database))
                .await
                .expect("SQLx cannot open a MySQL pool")
        })
    };
    eprintln!(
        "[{GROUP}] N = {n} lookups per iteration; database {database}; SQLx pool max_connections \
         {} (one connection in use), statement prepared once per checkout; tokio multi-thread \
         runtime, {} workers",
        sqlx_lookup::SINGLE_POOL_MAX,
        rt.metrics().num_workers(),
    );

    // Both forms return the dataset's rows (checked once, outside the timer).
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
                let row: BenchRow = sqlx::query_as(LOOKUP_QMARK)
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
        sqlx_lookup::print_trace("mysql sqlx", split);
    }

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(n as u64));

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

    g.bench_function(BenchmarkId::new("sqlx_query_one", n), |b| {
        b.iter_custom(|iters| {
            let (pool, ids) = (pool.clone(), Arc::clone(&ids));
            in_task(&rt, async move {
                let mut conn = pool.acquire().await.expect("acquire");
                let start = Instant::now();
                for _ in 0..iters {
                    for &id in ids.iter() {
                        let row: BenchRow = sqlx::query_as(LOOKUP_QMARK)
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
        let closed = tokio::time::timeout(Duration::from_secs(30), pool.close()).await;
        if closed.is_err() {
            eprintln!("[{GROUP}] the SQLx pool did not close within 30 s");
        }
        sqlx_lookup::drop_mysql_database(&base, &database).await;
    });
}
