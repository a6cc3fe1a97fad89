//! `mysql_fanout`: N lookups per iteration, split over T = `BENCH_FANOUT_TASKS` (default 32)
//! concurrent tasks sharing a pool of C = `BENCH_CONCURRENCY` (default 8) connections to a MySQL
//! or MariaDB server (`SQL_MIDDLEWARE_MYSQL_URL`, else `mysql://root@127.0.0.1:3306/test`). One
//! operation is a request handler's shape: check a connection out, run one lookup with the
//! per-call API (statement cache included), decode it, give the connection back.
//!
//! - `mysql_async_raw`: a `mysql_async::Pool` of exactly C connections with
//!   `reset_connection(false)` (the driver's documented opt-out for speed: a returned connection
//!   keeps its statement cache), `pool.get_conn()` + `exec_first(sql, (id,))` + the decode by
//!   position. The floor.
//! - `mysql_async_raw_reset`: the same with the driver's default `reset_connection(true)`: every
//!   return runs `COM_RESET_CONNECTION` (one more round trip), which also empties the
//!   connection's statement cache, so the next lookup prepares again.
//! - `middleware`: `db.get_connection()`, then `conn.query(sql).params(..).one::<BenchRow>()`.
//!
//! The SQLx side (`sqlx/<T>` in the same group) is the bench `mysql_fanout_sqlx` of the SQLx
//! harness. The bench creates its own database (`sqlmw_bench_lookup_<N>_fanout`, the lookup table
//! and rows) and drops it at the end. See docs/dev/Benchmarks.md.

mod common;

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput};
use sql_middleware::prelude::*;
use sql_middleware_bench::mysql as bm;
use sql_middleware_bench::workloads::{self, Lookup};
use sql_middleware_bench::{BenchRow, dataset};

const GROUP: &str = "mysql_fanout";

/// `BENCH_FANOUT_TASKS`: tasks of the fan-out (default 32; the SQLx harness reads it the same way).
fn fanout_tasks() -> usize {
    dataset::env_usize("BENCH_FANOUT_TASKS").unwrap_or(32)
}

fn mysql_fanout(c: &mut Criterion) {
    let Lookup { n, ids } = Lookup::from_env();
    let ids = Arc::new(ids);
    let pool_size = dataset::bench_concurrency();
    let tasks = fanout_tasks();
    let ranges = workloads::chunks(n, tasks);
    let base = bm::base_url();
    let database = bm::lookup_database(n, "_fanout");
    let rt = common::runtime();
    let url = {
        let (base, database) = (base.clone(), database.clone());
        common::in_task(&rt, async move {
            bm::create_lookup_database(&base, &database, n).await
        })
        .expect("create the MySQL fan-out database")
    };
    let db = rt
        .block_on(common::plain(ConfigAndPool::mysql(&url).max_size(pool_size)).build())
        .expect("build the middleware pool");
    let raw = bm::raw_pool(&url, pool_size, false).expect("build the mysql_async pool");
    let raw_reset = bm::raw_pool(&url, pool_size, true).expect("build the mysql_async pool");
    eprintln!(
        "[{GROUP}] N = {n} operations per iteration over T = {tasks} tasks on a pool of C = \
         {pool_size} (middleware max_size {pool_size}; mysql_async::Pool min = max = \
         {pool_size}, reset_connection off for mysql_async_raw, on for mysql_async_raw_reset); \
         database {database}; tokio multi-thread runtime, {} workers",
        rt.metrics().num_workers(),
    );

    // Open every connection of the three pools, and check they return the dataset's rows
    // (untimed; this also prepares the lookup on every connection).
    {
        let (db, raw, raw_reset, all) =
            (db.clone(), raw.clone(), raw_reset.clone(), Arc::clone(&ids));
        common::in_task(&rt, async move {
            bm::warm_raw_pool(&raw, pool_size, &all).await?;
            bm::warm_raw_pool(&raw_reset, pool_size, &all).await?;
            let mut conns = Vec::with_capacity(pool_size);
            for _ in 0..pool_size {
                conns.push(db.get_connection().await?);
            }
            for conn in &mut conns {
                for &id in all.iter().take(64) {
                    let row: BenchRow = conn
                        .query(dataset::LOOKUP_SQL_DOLLAR)
                        .params(&[RowValues::Int(id)])
                        .one()
                        .await?;
                    workloads::check_row(id, &row)?;
                }
            }
            workloads::verify_lookups(&mut conns[0], &all).await
        })
        .expect("every pool returns the dataset's rows");
    }

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(n as u64));

    g.bench_function(BenchmarkId::new("mysql_async_raw", tasks), |b| {
        b.iter_custom(|iters| {
            common::fan_out(&rt, iters, &ranges, |r| {
                bm::raw_fanout_share(raw.clone(), Arc::clone(&ids), r)
            })
        });
    });

    g.bench_function(BenchmarkId::new("middleware", tasks), |b| {
        b.iter_custom(|iters| {
            common::fan_out(&rt, iters, &ranges, |r| {
                bm::middleware_fanout_share(db.clone(), Arc::clone(&ids), r)
            })
        });
    });

    g.bench_function(BenchmarkId::new("mysql_async_raw_reset", tasks), |b| {
        b.iter_custom(|iters| {
            common::fan_out(&rt, iters, &ranges, |r| {
                bm::raw_fanout_share(raw_reset.clone(), Arc::clone(&ids), r)
            })
        });
    });

    g.finish();

    db.close();
    drop(db);
    common::in_task(&rt, async move {
        for pool in [raw, raw_reset] {
            pool.disconnect()
                .await
                .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string()))?;
        }
        bm::drop_database(&base, &database).await
    })
    .expect("drop the MySQL fan-out database");
}

bench_main!(mysql_fanout);
