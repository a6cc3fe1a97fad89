//! `mysql_single_row_lookup`: N point lookups per iteration against a MySQL or MariaDB server
//! (`SQL_MIDDLEWARE_MYSQL_URL`, else `mysql://root@127.0.0.1:3306/test`), raw `mysql_async`
//! against the middleware. The bench creates its own database (`sqlmw_bench_lookup_<N>`, the
//! dataset's table and rows) and drops it at the end.
//!
//! - `mysql_async_raw`: one `mysql_async::Conn`, the lookup prepared once (`Conn::prep`), then
//!   `exec_first(&stmt, (id,))` decoded by position: the driver's documented fast path, the floor.
//! - `mysql_async_raw_cached`: the same connection, `exec_first(sql, (id,))` with the SQL text,
//!   which the driver finds in its per-connection statement cache: the raw per-call form.
//! - `middleware`: a pooled connection, the lookup prepared once, `stmt.one::<BenchRow>` with a
//!   reused `[RowValues; 1]`.
//! - `middleware_query_one`, `middleware_select`, `middleware_checkout_query_one`: the per-call
//!   forms (statement cache included), as in the other lookup groups.
//! - `pool_acquire`: a checkout and its return.
//!
//! The SQLx side is the group `mysql_single_row_lookup_sqlx` of the SQLx harness. See
//! docs/dev/Benchmarks.md.

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, Throughput};
use sql_middleware::prelude::*;
use sql_middleware_bench::mysql as bm;
use sql_middleware_bench::workloads::{self, Lookup};
use sql_middleware_bench::{BenchRow, dataset};
use tokio::sync::Mutex;

const GROUP: &str = "mysql_single_row_lookup";

fn mysql_single_row_lookup(c: &mut Criterion) {
    let Lookup { n, ids } = Lookup::from_env();
    let ids = Arc::new(ids);
    let base = bm::base_url();
    let database = bm::lookup_database(n, "");
    let rt = common::runtime();
    let url = {
        let (base, database) = (base.clone(), database.clone());
        common::in_task(&rt, async move {
            bm::create_lookup_database(&base, &database, n).await
        })
        .expect("create the MySQL lookup database")
    };
    let db = rt
        .block_on(common::plain(ConfigAndPool::mysql(&url)).build())
        .expect("build the middleware pool");
    let raw = {
        let url = url.clone();
        common::in_task(&rt, async move { bm::raw_lookup_conn(&url).await })
            .map(|conn| Arc::new(Mutex::new(conn)))
            .expect("connect the raw mysql_async connection")
    };
    eprintln!(
        "[{GROUP}] N = {n} lookups per iteration; database {database}; middleware pool max_size \
         {} (one connection in use); raw: one mysql_async connection, statement prepared once",
        db.status().max_size,
    );

    // Every contender returns the dataset's rows (checked once, outside the timer).
    {
        let (db, ids, raw) = (db.clone(), Arc::clone(&ids), Arc::clone(&raw));
        common::in_task(&rt, async move {
            let mut conn = db.get_connection().await?;
            workloads::verify_lookups(&mut conn, &ids).await?;
            let mut guard = raw.lock().await;
            let (conn, stmt) = &mut *guard;
            for &id in ids.iter() {
                let row = bm::raw_lookup(conn, stmt, id)
                    .await
                    .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string()))?;
                workloads::check_row(id, &row)?;
                let row = bm::raw_lookup_cached(conn, id)
                    .await
                    .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string()))?;
                workloads::check_row(id, &row)?;
            }
            Ok::<_, SqlMiddlewareDbError>(())
        })
        .expect("every contender returns the dataset's rows");
    }

    common::trace_lookups(&rt, &db, &ids, 1, "mysql middleware");

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(n as u64));

    g.bench_function(BenchmarkId::new("mysql_async_raw", n), |b| {
        b.iter_custom(|iters| {
            let (raw, ids) = (Arc::clone(&raw), Arc::clone(&ids));
            common::in_task(&rt, async move {
                let mut guard = raw.lock().await;
                let (conn, stmt) = &mut *guard;
                let start = Instant::now();
                for _ in 0..iters {
                    for &id in ids.iter() {
                        black_box(bm::raw_lookup(conn, stmt, id).await.expect("lookup"));
                    }
                }
                start.elapsed()
            })
        });
    });

    g.bench_function(BenchmarkId::new("mysql_async_raw_cached", n), |b| {
        b.iter_custom(|iters| {
            let (raw, ids) = (Arc::clone(&raw), Arc::clone(&ids));
            common::in_task(&rt, async move {
                let mut guard = raw.lock().await;
                let conn = &mut guard.0;
                let start = Instant::now();
                for _ in 0..iters {
                    for &id in ids.iter() {
                        black_box(bm::raw_lookup_cached(conn, id).await.expect("lookup"));
                    }
                }
                start.elapsed()
            })
        });
    });

    g.bench_function(BenchmarkId::new("middleware", n), |b| {
        b.iter_custom(|iters| {
            common::middleware_lookups::<BenchRow>(
                &rt,
                &db,
                &ids,
                dataset::LOOKUP_SQL_DOLLAR,
                iters,
            )
        });
    });

    common::per_call_ids(&mut g, &rt, &db, &ids);

    g.bench_function(BenchmarkId::new("pool_acquire", n), |b| {
        b.iter_custom(|iters| common::pool_acquires(&rt, &db, iters * n as u64));
    });

    g.finish();

    db.close();
    drop(db);
    common::in_task(&rt, async move {
        let raw = Arc::into_inner(raw).expect("no timed loop holds the raw connection");
        let (conn, _stmt) = raw.into_inner();
        conn.disconnect()
            .await
            .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string()))?;
        bm::drop_database(&base, &database).await
    })
    .expect("drop the MySQL lookup database");
}

bench_main!(mysql_single_row_lookup);
