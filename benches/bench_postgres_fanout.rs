//! `postgres_fanout`: N lookups per iteration, split over T = `BENCH_FANOUT_TASKS` (default 32)
//! concurrent tasks sharing a pool of C = `BENCH_CONCURRENCY` (default 8) connections. One
//! operation is a request handler's shape: check a connection out, run one lookup with the
//! per-call API (statement cache included), decode it, give the connection back.
//!
//! - `deadpool_postgres_raw`: deadpool-postgres (`RecyclingMethod::Fast`), `prepare_cached` +
//!   `query_one` + the raw tokio-postgres decode.
//! - `middleware`: `db.get_connection()`, then `conn.query(sql).params(..).one::<BenchRow>()`.
//!
//! The SQLx side (`sqlx/<T>` in the same group) is the bench `postgres_fanout_sqlx` of the SQLx
//! harness. The bench creates its own schema (`<dataset::postgres_schema(N)>_fanout`, the lookup
//! table and rows) and drops it at the end. See docs/dev/Benchmarks.md.

mod common;
#[path = "../tests/common/pg/mod.rs"]
mod pg;
#[path = "../tests/common/unwind.rs"]
#[allow(dead_code)]
mod unwind;

use std::hint::black_box;
use std::ops::Range;
use std::str::FromStr;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput};
use deadpool_postgres::{ManagerConfig, RecyclingMethod};
use sql_middleware::prelude::*;
use sql_middleware_bench::workloads::{self, Lookup};
use sql_middleware_bench::{BenchRow, dataset, postgres as bp};

const GROUP: &str = "postgres_fanout";

/// `BENCH_FANOUT_TASKS`: tasks of the fan-out (default 32; the SQLx harness reads it the same way).
fn fanout_tasks() -> usize {
    dataset::env_usize("BENCH_FANOUT_TASKS").unwrap_or(32)
}

/// The schema of this bench: the lookup table and rows of `postgres_single_row_lookup`, under a
/// name of its own (the SQLx harness uses the same name; the two run one after the other).
fn fanout_schema(n: usize) -> String {
    format!("{}_fanout", dataset::postgres_schema(n))
}

/// One task's share through deadpool-postgres: per id, a checkout, `prepare_cached` (a hit in
/// the client's statement cache), `query_one`, decode, and the return of the client.
async fn raw_share(pool: deadpool_postgres::Pool, ids: Arc<Vec<i64>>, range: Range<usize>) {
    for &id in &ids[range] {
        let client = pool.get().await.expect("checkout");
        let stmt = client
            .prepare_cached(dataset::LOOKUP_SQL_DOLLAR)
            .await
            .expect("prepare_cached");
        let row = client
            .query_one(&stmt, &[&(id as i32)])
            .await
            .expect("lookup");
        black_box(bp::decode_row(&row).expect("decode"));
    }
}

/// One task's share through the middleware: per id, a checkout and one per-call
/// `query(..).params(..).one::<BenchRow>()` (its statement cache included), then the return.
async fn middleware_share(db: ConfigAndPool, ids: Arc<Vec<i64>>, range: Range<usize>) {
    for &id in &ids[range] {
        let mut conn = db.get_connection().await.expect("checkout");
        let row: BenchRow = conn
            .query(dataset::LOOKUP_SQL_DOLLAR)
            .params(&[RowValues::Int(id)])
            .one()
            .await
            .expect("lookup");
        black_box(row);
    }
}

fn postgres_fanout(c: &mut Criterion) {
    let Lookup { n, ids } = Lookup::from_env();
    let ids = Arc::new(ids);
    let pool_size = dataset::bench_concurrency();
    let tasks = fanout_tasks();
    let ranges = workloads::chunks(n, tasks);
    let base = pg::base_url();
    let schema = fanout_schema(n);
    let url = bp::plain_text_url(&pg::url_with_search_path(&base, &schema));
    let rt = common::runtime();
    {
        let (base, schema) = (base.clone(), schema.clone());
        common::in_task(&rt, async move {
            let mut admin = bp::connect_raw(&base).await?;
            bp::create_lookup_schema(&mut admin, &schema, n).await
        })
        .expect("create the Postgres fan-out schema");
    }
    let db = rt
        .block_on(common::plain(ConfigAndPool::postgres(&url).max_size(pool_size)).build())
        .expect("build the middleware pool");
    let raw = {
        let cfg = tokio_postgres::Config::from_str(&url).expect("parse the Postgres URL");
        let mgr = deadpool_postgres::Manager::from_config(
            cfg,
            tokio_postgres::NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        deadpool_postgres::Pool::builder(mgr)
            .max_size(pool_size)
            .build()
            .expect("build the deadpool-postgres pool")
    };
    eprintln!(
        "[{GROUP}] N = {n} operations per iteration over T = {tasks} tasks on a pool of C = \
         {pool_size} (middleware max_size {pool_size}, deadpool-postgres max_size {pool_size}, \
         RecyclingMethod::Fast); schema {schema}; tokio multi-thread runtime, {} workers",
        rt.metrics().num_workers(),
    );

    // Open every connection of both pools, and check both return the dataset's rows (untimed;
    // this also prepares the lookup on every connection).
    {
        let (db, raw, all) = (db.clone(), raw.clone(), Arc::clone(&ids));
        common::in_task(&rt, async move {
            let mut conns = Vec::with_capacity(pool_size);
            let mut clients = Vec::with_capacity(pool_size);
            for _ in 0..pool_size {
                conns.push(db.get_connection().await?);
                clients.push(raw.get().await.expect("deadpool-postgres checkout"));
            }
            for (conn, client) in conns.iter_mut().zip(&clients) {
                for &id in all.iter().take(64) {
                    let row: BenchRow = conn
                        .query(dataset::LOOKUP_SQL_DOLLAR)
                        .params(&[RowValues::Int(id)])
                        .one()
                        .await?;
                    workloads::check_row(id, &row)?;
                    let stmt = client
                        .prepare_cached(dataset::LOOKUP_SQL_DOLLAR)
                        .await
                        .expect("prepare_cached");
                    let row = client
                        .query_one(&stmt, &[&(id as i32)])
                        .await
                        .and_then(|r| bp::decode_row(&r))
                        .expect("raw lookup");
                    workloads::check_row(id, &row)?;
                }
            }
            workloads::verify_lookups(&mut conns[0], &all).await
        })
        .expect("both pools return the dataset's rows");
    }

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(n as u64));

    g.bench_function(BenchmarkId::new("deadpool_postgres_raw", tasks), |b| {
        b.iter_custom(|iters| {
            common::fan_out(&rt, iters, &ranges, |r| {
                raw_share(raw.clone(), Arc::clone(&ids), r)
            })
        });
    });

    g.bench_function(BenchmarkId::new("middleware", tasks), |b| {
        b.iter_custom(|iters| {
            common::fan_out(&rt, iters, &ranges, |r| {
                middleware_share(db.clone(), Arc::clone(&ids), r)
            })
        });
    });

    g.finish();

    db.close();
    drop(db);
    raw.close();
    drop(raw);
    common::in_task(&rt, async move {
        let admin = bp::connect_raw(&base).await?;
        bp::drop_schema(&admin, &schema).await
    })
    .expect("drop the Postgres fan-out schema");
}

bench_main!(postgres_fanout);
