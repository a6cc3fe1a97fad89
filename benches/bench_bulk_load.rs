//! `bulk_load`: B rows (`BENCH_BULK_ROWS`, default 100,000) of the insert dataset (every
//! `RowValues` kind, 13 columns) loaded into an empty table per iteration, on Postgres, SQLite
//! and Turso: through the middleware's bulk API (`bulk_insert`), row by row through the
//! middleware (a prepared insert per row in one transaction), and through the raw drivers'
//! best practice (tokio-postgres `BinaryCopyInWriter`; rusqlite's prepared insert per row in
//! one transaction, as a control). The table is emptied before every iteration, outside the
//! timer. See docs/dev/Benchmarks.md.
//!
//! Under `cargo test --benches` (no `--bench` argument) the load is 1,000 rows, so the smoke
//! test stays fast.

mod common;
#[path = "../tests/common/pg/mod.rs"]
mod pg;
#[path = "../tests/common/unwind.rs"]
#[allow(dead_code)]
mod unwind;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use sql_middleware::prelude::*;
use sql_middleware_bench::workloads::{self, INSERT_COLUMNS, INSERT_SQL_DOLLAR, InsertRecord};
use sql_middleware_bench::{dataset, postgres as bp, sqlite as bs};

const GROUP: &str = "bulk_load";

type Rows = Arc<Vec<Vec<RowValues>>>;

fn other(e: impl std::fmt::Display) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string())
}

/// The middleware's bulk API: one call.
async fn middleware_bulk(
    conn: &mut MiddlewarePoolConnection,
    rows: &[Vec<RowValues>],
) -> Result<(), SqlMiddlewareDbError> {
    let n = conn
        .bulk_insert("bench_insert", &INSERT_COLUMNS, rows)
        .await?;
    debug_assert_eq!(n as usize, rows.len());
    Ok(())
}

/// Row by row: `begin`, `tx.prepare` (a statement-cache hit after the first iteration),
/// `stmt.dml(&row)` per row, `commit` (the `database_inserts` middleware id).
async fn middleware_rows(
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

/// How the middleware loads the rows.
#[derive(Debug, Clone, Copy)]
enum Load {
    /// `bulk_insert`.
    Bulk,
    /// A prepared insert per row in one transaction.
    Rows,
}

/// `iters` iterations of: empty the table (untimed), load every row (timed).
async fn middleware_iters(
    db: ConfigAndPool,
    rows: Rows,
    reset_sql: &'static str,
    iters: u64,
    load: Load,
) -> Duration {
    let mut conn = db.get_connection().await.expect("checkout");
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        conn.execute_batch(reset_sql).await.expect("reset");
        let start = Instant::now();
        match load {
            Load::Bulk => middleware_bulk(&mut conn, &rows).await,
            Load::Rows => middleware_rows(&mut conn, &rows).await,
        }
        .expect("load");
        total += start.elapsed();
    }
    total
}

async fn check_count(db: &ConfigAndPool, b: usize, what: &str) -> Result<(), SqlMiddlewareDbError> {
    let mut conn = db.get_connection().await?;
    let (count,): (i64,) = conn
        .query("SELECT COUNT(*) FROM bench_insert")
        .one()
        .await?;
    if count == b as i64 {
        Ok(())
    } else {
        Err(other(format!(
            "{what}: the table holds {count} rows, expected {b}"
        )))
    }
}

fn in_task<F: Future<Output = Duration> + Send + 'static>(
    rt: &tokio::runtime::Runtime,
    f: F,
) -> Duration {
    common::in_task(rt, f)
}

fn bulk_load(c: &mut Criterion) {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let b = workloads::bench_bulk_rows(if smoke { 1_000 } else { 100_000 });
    let records: Arc<Vec<InsertRecord>> = Arc::new(workloads::insert_records(b));
    let rows: Rows = Arc::new(records.iter().map(InsertRecord::to_row_values).collect());
    let data = dataset::data_dir(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(&data).expect("create bench_data");
    let sqlite_path = data.join("bulk.sqlite");
    let turso_path = data.join("bulk.turso.db");
    for p in [&sqlite_path, &turso_path] {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(dataset::with_suffix(p, suffix));
        }
    }
    let rt = common::runtime();

    // SQLite: a raw connection (the control) and a middleware pool on the same file.
    let mut sqlite_raw = bs::open_raw(&sqlite_path).expect("open the raw SQLite connection");
    bs::reset_insert_table(&sqlite_raw).expect("create the SQLite insert table");
    let sqlite_db = rt
        .block_on(common::plain(ConfigAndPool::sqlite(&sqlite_path)).build())
        .expect("build the SQLite pool");

    // Postgres: a schema of our own, one raw client and a middleware pool in it.
    let base = pg::base_url();
    let schema = workloads::POSTGRES_BULK_SCHEMA;
    let pg_url = pg::url_with_search_path(&base, schema);
    let pg_raw = {
        let (base, pg_url) = (base.clone(), pg_url.clone());
        common::in_task(&rt, async move {
            let admin = bp::connect_raw(&base).await?;
            bp::create_insert_schema(&admin, schema).await?;
            bp::connect_raw(&pg_url).await
        })
        .expect("set up the Postgres bulk schema")
    };
    let pg_raw = Arc::new(tokio::sync::Mutex::new(pg_raw));
    let pg_db = rt
        .block_on(common::plain(ConfigAndPool::postgres(&pg_url)).build())
        .expect("build the Postgres pool");

    // Turso: a middleware pool.
    let turso_db = common::turso_insert_pool(&rt, &turso_path);

    // Every contender loads all B rows (checked once, outside the timer).
    bs::reset_insert_table(&sqlite_raw).expect("reset");
    bs::raw_insert(&mut sqlite_raw, &records).expect("sqlite_raw_rows insert");
    assert_eq!(
        bs::insert_count(&sqlite_raw).expect("count"),
        b as i64,
        "sqlite_raw_rows"
    );
    {
        let (pg_raw, records) = (Arc::clone(&pg_raw), Arc::clone(&records));
        common::in_task(&rt, async move {
            let client = pg_raw.lock().await;
            bp::reset_insert_table(&client).await?;
            let n = bp::raw_copy(&client, &records).await.map_err(other)?;
            let m = bp::insert_count(&client).await?;
            if (n, m) == (b as u64, b as i64) {
                Ok(())
            } else {
                Err(other(format!(
                    "postgres_copy_raw copied {n}, the table holds {m} of {b}"
                )))
            }
        })
        .expect("the raw COPY loads every row");
    }
    for (db, reset, name) in [
        (&sqlite_db, "DELETE FROM bench_insert", "sqlite"),
        (&pg_db, "TRUNCATE bench_insert", "postgres"),
        (&turso_db, "DELETE FROM bench_insert", "turso"),
    ] {
        let (db2, rows2) = (db.clone(), Arc::clone(&rows));
        common::in_task(&rt, async move {
            middleware_iters(db2.clone(), Arc::clone(&rows2), reset, 1, Load::Bulk).await;
            check_count(&db2, b, &format!("{name}_middleware_bulk")).await?;
            middleware_iters(db2.clone(), rows2, reset, 1, Load::Rows).await;
            check_count(&db2, b, &format!("{name}_middleware_rows")).await
        })
        .expect("the middleware loads every row");
    }

    eprintln!(
        "[{GROUP}] B = {b} rows per iteration (13 columns, every RowValues kind); files in {}; \
         Postgres schema {schema}; pools at their default max_size (one connection in use)",
        data.display()
    );

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(b as u64));
    // One iteration is a whole load (tens of milliseconds to seconds).
    g.sampling_mode(SamplingMode::Flat);
    g.sample_size(10);

    g.bench_function(BenchmarkId::new("postgres_copy_raw", b), |bn| {
        bn.iter_custom(|iters| {
            let (raw, records) = (Arc::clone(&pg_raw), Arc::clone(&records));
            in_task(&rt, async move {
                let client = raw.lock().await;
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    bp::reset_insert_table(&client).await.expect("reset");
                    let start = Instant::now();
                    bp::raw_copy(&client, &records).await.expect("copy");
                    total += start.elapsed();
                }
                total
            })
        });
    });

    for (id, db, reset) in [
        ("postgres", &pg_db, "TRUNCATE bench_insert"),
        ("sqlite", &sqlite_db, "DELETE FROM bench_insert"),
        ("turso", &turso_db, "DELETE FROM bench_insert"),
    ] {
        g.bench_function(BenchmarkId::new(format!("{id}_middleware_bulk"), b), |bn| {
            bn.iter_custom(|iters| {
                let (db, rows) = (db.clone(), Arc::clone(&rows));
                in_task(&rt, middleware_iters(db, rows, reset, iters, Load::Bulk))
            });
        });
        g.bench_function(BenchmarkId::new(format!("{id}_middleware_rows"), b), |bn| {
            bn.iter_custom(|iters| {
                let (db, rows) = (db.clone(), Arc::clone(&rows));
                in_task(&rt, middleware_iters(db, rows, reset, iters, Load::Rows))
            });
        });
    }

    g.bench_function(BenchmarkId::new("sqlite_raw_rows", b), |bn| {
        bn.iter_custom(|iters| {
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

    g.finish();

    pg_db.close();
    drop(pg_db);
    drop(pg_raw);
    common::in_task(&rt, async move {
        let admin = bp::connect_raw(&base).await?;
        bp::drop_schema(&admin, schema).await
    })
    .expect("drop the Postgres bulk schema");
}

bench_main!(bulk_load);
