//! `database_inserts`: R rows inserted in one transaction per iteration, on SQLite, Postgres and
//! Turso, each through its raw driver and through the middleware. The table is emptied before
//! every iteration, outside the timer. See docs/dev/Benchmarks.md.

mod common;
#[path = "../tests/common/pg/mod.rs"]
mod pg;
#[path = "../tests/common/unwind.rs"]
#[allow(dead_code)]
mod unwind;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use sql_middleware::prelude::*;
use sql_middleware_bench::workloads::{self, INSERT_SQL_DOLLAR, InsertRecord};
use sql_middleware_bench::{dataset, postgres as bp, sqlite as bs, turso as bt};

const GROUP: &str = "database_inserts";

fn other(e: impl std::fmt::Display) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string())
}

/// The middleware's insert: `begin`, `tx.prepare` (a statement-cache hit after the first
/// iteration), `stmt.execute(&row)` per row, `commit`.
async fn middleware_insert(
    conn: &mut MiddlewarePoolConnection,
    rows: &[Vec<RowValues>],
) -> Result<(), SqlMiddlewareDbError> {
    let mut tx = conn.begin().await?;
    let mut stmt = tx.prepare(INSERT_SQL_DOLLAR).await?;
    for row in rows {
        stmt.dml(row).await?;
    }
    drop(stmt);
    tx.commit().await
}

/// `iters` iterations of: empty the table (untimed), insert every row in one transaction (timed).
async fn middleware_iters(
    db: ConfigAndPool,
    rows: Arc<Vec<Vec<RowValues>>>,
    reset_sql: &'static str,
    iters: u64,
) -> Duration {
    let mut conn = db.get_connection().await.expect("checkout");
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        conn.execute_batch(reset_sql).await.expect("reset");
        let start = Instant::now();
        middleware_insert(&mut conn, &rows).await.expect("insert");
        total += start.elapsed();
    }
    total
}

async fn check_middleware_count(db: &ConfigAndPool, r: usize) -> Result<(), SqlMiddlewareDbError> {
    let mut conn = db.get_connection().await?;
    let (count,): (i64,) = conn
        .query("SELECT COUNT(*) FROM bench_insert")
        .one()
        .await?;
    if count == r as i64 {
        Ok(())
    } else {
        Err(other(format!("the table holds {count} rows, expected {r}")))
    }
}

fn database_inserts(c: &mut Criterion) {
    let r = dataset::bench_rows();
    let records: Arc<Vec<InsertRecord>> = Arc::new(workloads::insert_records(r));
    let rows: Arc<Vec<Vec<RowValues>>> =
        Arc::new(records.iter().map(InsertRecord::to_row_values).collect());
    let data = dataset::data_dir(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(&data).expect("create bench_data");
    let sqlite_path = data.join("inserts.sqlite");
    let turso_raw_path = data.join("inserts_raw.turso.db");
    let turso_mw_path = data.join("inserts_middleware.turso.db");
    for p in [&sqlite_path, &turso_raw_path, &turso_mw_path] {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(dataset::with_suffix(p, suffix));
        }
    }
    let rt = common::runtime();

    // SQLite: one raw connection and a middleware pool on the same file.
    let mut sqlite_raw = bs::open_raw(&sqlite_path).expect("open the raw SQLite connection");
    bs::reset_insert_table(&sqlite_raw).expect("create the SQLite insert table");
    let sqlite_db = rt
        .block_on(common::plain(ConfigAndPool::sqlite(&sqlite_path)).build())
        .expect("build the SQLite pool");

    // Postgres: a schema of our own, one raw client and a middleware pool in it.
    let base = pg::base_url();
    let schema = workloads::POSTGRES_INSERT_SCHEMA;
    let pg_url = pg::url_with_search_path(&base, schema);
    let (pg_raw, pg_stmt) = {
        let (base, pg_url) = (base.clone(), pg_url.clone());
        common::in_task(&rt, async move {
            let admin = bp::connect_raw(&base).await?;
            bp::create_insert_schema(&admin, schema).await?;
            let client = bp::connect_raw(&pg_url).await?;
            let stmt = client.prepare(INSERT_SQL_DOLLAR).await.map_err(other)?;
            Ok::<_, SqlMiddlewareDbError>((client, stmt))
        })
        .expect("set up the Postgres insert schema")
    };
    let pg_raw = Arc::new(tokio::sync::Mutex::new(pg_raw));
    let pg_db = rt
        .block_on(common::plain(ConfigAndPool::postgres(&pg_url)).build())
        .expect("build the Postgres pool");

    // Turso: a raw Database + connection + prepared insert, and a middleware pool, on two files
    // (two Turso databases in one process should not share a file).
    let turso_raw = rt
        .block_on(async {
            let (tdb, conn) = bt::open_raw(&turso_raw_path).await?;
            bt::reset_insert_table(&conn).await?;
            let st = bt::prepare_insert(&conn).await?;
            Ok::<_, SqlMiddlewareDbError>((tdb, conn, st))
        })
        .expect("open the raw Turso database");
    let turso_raw = Arc::new(tokio::sync::Mutex::new(turso_raw));
    let turso_db = common::turso_insert_pool(&rt, &turso_mw_path);

    // Every contender inserts all R rows (checked once, outside the timer).
    bs::reset_insert_table(&sqlite_raw).expect("reset");
    bs::raw_insert(&mut sqlite_raw, &records).expect("sqlite_raw insert");
    assert_eq!(
        bs::insert_count(&sqlite_raw).expect("count"),
        r as i64,
        "sqlite_raw"
    );
    {
        let (pg_raw, turso_raw, records) = (
            Arc::clone(&pg_raw),
            Arc::clone(&turso_raw),
            Arc::clone(&records),
        );
        let pg_stmt = pg_stmt.clone();
        common::in_task(&rt, async move {
            let mut client = pg_raw.lock().await;
            bp::reset_insert_table(&client).await?;
            bp::raw_insert(&mut client, &pg_stmt, &records)
                .await
                .map_err(other)?;
            let n = bp::insert_count(&client).await?;
            let mut raw = turso_raw.lock().await;
            let (_, conn, st) = &mut *raw;
            bt::reset_insert_table(conn).await?;
            bt::raw_insert(conn, st, &records).await.map_err(other)?;
            let m = bt::insert_count(conn).await?;
            if (n, m) == (r as i64, r as i64) {
                Ok(())
            } else {
                Err(other(format!(
                    "postgres_raw inserted {n}, turso_raw {m} of {r} rows"
                )))
            }
        })
        .expect("the raw drivers insert every row");
    }
    for (db, reset) in [
        (&sqlite_db, "DELETE FROM bench_insert"),
        (&pg_db, "TRUNCATE bench_insert"),
        (&turso_db, "DELETE FROM bench_insert"),
    ] {
        let (db, rows) = (db.clone(), Arc::clone(&rows));
        common::in_task(&rt, async move {
            middleware_iters(db.clone(), rows, reset, 1).await;
            check_middleware_count(&db, r).await
        })
        .expect("the middleware inserts every row");
    }

    eprintln!(
        "[{GROUP}] R = {r} rows per iteration, one transaction; files in {}; Postgres schema \
         {schema}; pools at their default max_size (one connection in use)",
        data.display()
    );

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(r as u64));

    g.bench_function(BenchmarkId::new("sqlite_raw", r), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                bs::reset_insert_table(&sqlite_raw).expect("reset");
                let start = Instant::now();
                bs::raw_insert(&mut sqlite_raw, &records).expect("insert");
                total += start.elapsed();
            }
            total
        });
    });

    g.bench_function(BenchmarkId::new("sqlite_middleware", r), |b| {
        b.iter_custom(|iters| {
            let (db, rows) = (sqlite_db.clone(), Arc::clone(&rows));
            common::in_task(
                &rt,
                middleware_iters(db, rows, "DELETE FROM bench_insert", iters),
            )
        });
    });

    g.bench_function(BenchmarkId::new("postgres_raw", r), |b| {
        b.iter_custom(|iters| {
            let (raw, records, stmt) = (Arc::clone(&pg_raw), Arc::clone(&records), pg_stmt.clone());
            common::in_task(&rt, async move {
                let mut client = raw.lock().await;
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    bp::reset_insert_table(&client).await.expect("reset");
                    let start = Instant::now();
                    bp::raw_insert(&mut client, &stmt, &records)
                        .await
                        .expect("insert");
                    total += start.elapsed();
                }
                total
            })
        });
    });

    g.bench_function(BenchmarkId::new("postgres_middleware", r), |b| {
        b.iter_custom(|iters| {
            let (db, rows) = (pg_db.clone(), Arc::clone(&rows));
            common::in_task(
                &rt,
                middleware_iters(db, rows, "TRUNCATE bench_insert", iters),
            )
        });
    });

    g.bench_function(BenchmarkId::new("turso_raw", r), |b| {
        b.iter_custom(|iters| {
            let (raw, records) = (Arc::clone(&turso_raw), Arc::clone(&records));
            common::in_task(&rt, async move {
                let mut raw = raw.lock().await;
                let (_, conn, st) = &mut *raw;
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    bt::reset_insert_table(conn).await.expect("reset");
                    let start = Instant::now();
                    bt::raw_insert(conn, st, &records).await.expect("insert");
                    total += start.elapsed();
                }
                total
            })
        });
    });

    g.bench_function(BenchmarkId::new("turso_middleware", r), |b| {
        b.iter_custom(|iters| {
            let (db, rows) = (turso_db.clone(), Arc::clone(&rows));
            common::in_task(
                &rt,
                middleware_iters(db, rows, "DELETE FROM bench_insert", iters),
            )
        });
    });

    g.finish();

    pg_db.close();
    drop(pg_db);
    drop(pg_raw);
    common::in_task(&rt, async move {
        let admin = bp::connect_raw(&base).await?;
        bp::drop_schema(&admin, schema).await
    })
    .expect("drop the Postgres insert schema");
}

bench_main!(database_inserts);
