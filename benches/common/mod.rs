//! Shared wiring of the bench targets: the Criterion configuration (results home, defaults that
//! finish in minutes) and the runtime helpers. Included with `mod common;`.
#![allow(dead_code)]

pub mod summary;

use std::hint::black_box;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use sql_middleware::prelude::*;
use sql_middleware_bench::{BenchRow, dataset, workloads};
use tokio::runtime::Runtime;

/// Criterion writing into `$CRITERION_HOME`, else `<repo>/bench_results/`.
///
/// Defaults: 20 samples, 2 s warm-up, 5 s measurement. Command-line flags (`--sample-size`,
/// `--warm-up-time`, `--measurement-time`, `--quick`, `--profile-time`, filters, baselines)
/// override them.
pub fn criterion() -> Criterion {
    Criterion::default()
        .output_directory(&dataset::criterion_home(env!("CARGO_MANIFEST_DIR")))
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args()
}

/// The runtime every async id runs on: tokio's multi-thread scheduler with its default worker
/// count (one per core).
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("build the tokio runtime")
}

// Not every bench target fans out.
#[allow(unused_imports)]
pub use sql_middleware_bench::tasks::{fan_out, in_task};

/// `main` of a bench target: runs the given functions with [`criterion`], then Criterion's
/// summary and the closing table of what this run measured ([`summary::print`]).
#[macro_export]
macro_rules! bench_main {
    ($($f:path),+ $(,)?) => {
        fn main() {
            let started = std::time::SystemTime::now();
            let mut c = common::criterion();
            $($f(&mut c);)+
            c.final_summary();
            common::summary::print(started);
        }
    };
}

/// The timed loop of every `middleware` lookup id: one task checks a connection out, prepares
/// `sql` once, then runs `stmt.one::<T>` with a reused `[RowValues; 1]` for each id, `iters`
/// times over. Returns the time of the loop alone.
pub fn middleware_lookups<T: FromRow + Send + 'static>(
    rt: &Runtime,
    db: &ConfigAndPool,
    ids: &Arc<Vec<i64>>,
    sql: &'static str,
    iters: u64,
) -> Duration {
    let (db, ids) = (db.clone(), Arc::clone(ids));
    in_task(rt, async move {
        let mut conn = db.get_connection().await.expect("checkout");
        let mut stmt = conn.prepare(sql).await.expect("prepare");
        let mut buf = [RowValues::Int(0)];
        let start = Instant::now();
        for _ in 0..iters {
            for &id in ids.iter() {
                buf[0] = RowValues::Int(id);
                let row: T = stmt.one(&buf).await.expect("lookup");
                black_box(row);
            }
        }
        start.elapsed()
    })
}

/// The timed loop of `middleware_query_one` and `middleware_checkout_query_one`: the per-call
/// form `conn.query(sql).params(..).one::<T>()` for each id (statement cache included), `iters`
/// times over, on one held connection, or with a pool checkout and return around every call
/// when `checkout_per_call` (a request handler's shape).
pub fn middleware_query_ones<T: FromRow + Send + 'static>(
    rt: &Runtime,
    db: &ConfigAndPool,
    ids: &Arc<Vec<i64>>,
    iters: u64,
    checkout_per_call: bool,
) -> Duration {
    let (db, ids) = (db.clone(), Arc::clone(ids));
    in_task(rt, async move {
        let mut held = if checkout_per_call {
            None
        } else {
            Some(db.get_connection().await.expect("checkout"))
        };
        let mut buf = [RowValues::Int(0)];
        let start = Instant::now();
        for _ in 0..iters {
            for &id in ids.iter() {
                buf[0] = RowValues::Int(id);
                let mut fresh = None;
                let conn = match held.as_mut() {
                    Some(conn) => conn,
                    None => fresh.insert(db.get_connection().await.expect("checkout")),
                };
                let row: T = conn
                    .query(dataset::LOOKUP_SQL_DOLLAR)
                    .params(&buf)
                    .one()
                    .await
                    .expect("lookup");
                black_box(row);
            }
        }
        start.elapsed()
    })
}

/// The timed loop of `middleware_select`: the per-call form through `.select()` into a
/// `ResultSet`, then the first row decoded into [`BenchRow`] (the form the original suite
/// measured).
pub fn middleware_selects(
    rt: &Runtime,
    db: &ConfigAndPool,
    ids: &Arc<Vec<i64>>,
    iters: u64,
) -> Duration {
    let (db, ids) = (db.clone(), Arc::clone(ids));
    in_task(rt, async move {
        let mut conn = db.get_connection().await.expect("checkout");
        let mut buf = [RowValues::Int(0)];
        let start = Instant::now();
        for _ in 0..iters {
            for &id in ids.iter() {
                buf[0] = RowValues::Int(id);
                let rs = conn
                    .query(dataset::LOOKUP_SQL_DOLLAR)
                    .params(&buf)
                    .select()
                    .await
                    .expect("lookup");
                black_box(BenchRow::from_row(&rs.results[0]).expect("decode"));
            }
        }
        start.elapsed()
    })
}

/// Registers the three per-call ids (`middleware_query_one`, `middleware_select`,
/// `middleware_checkout_query_one`) of a lookup group on `db`.
pub fn per_call_ids(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &Runtime,
    db: &ConfigAndPool,
    ids: &Arc<Vec<i64>>,
) {
    let n = ids.len();
    g.bench_function(
        criterion::BenchmarkId::new("middleware_query_one", n),
        |b| b.iter_custom(|iters| middleware_query_ones::<BenchRow>(rt, db, ids, iters, false)),
    );
    g.bench_function(criterion::BenchmarkId::new("middleware_select", n), |b| {
        b.iter_custom(|iters| middleware_selects(rt, db, ids, iters))
    });
    g.bench_function(
        criterion::BenchmarkId::new("middleware_checkout_query_one", n),
        |b| b.iter_custom(|iters| middleware_query_ones::<BenchRow>(rt, db, ids, iters, true)),
    );
}

pub use sql_middleware_bench::plain;

/// A middleware pool on the Turso file at `path` (plain: see [`plain`]) with the insert
/// table created, for the insert and bulk-load groups (whose targets require `turso`; the
/// others must still build without it).
#[cfg(feature = "turso")]
pub fn turso_insert_pool(rt: &Runtime, path: &std::path::Path) -> ConfigAndPool {
    rt.block_on(async {
        let db = plain(ConfigAndPool::turso(path)).build().await?;
        let mut conn = db.get_connection().await?;
        conn.execute_batch(workloads::INSERT_SCHEMA_SQLITE).await?;
        drop(conn);
        Ok::<_, SqlMiddlewareDbError>(db)
    })
    .expect("build the Turso pool")
}

/// The timed loop of `pool_acquire`: `count` checkouts, each dropped at once (recycle included).
pub fn pool_acquires(rt: &Runtime, db: &ConfigAndPool, count: u64) -> Duration {
    let db = db.clone();
    in_task(rt, async move {
        let start = Instant::now();
        for _ in 0..count {
            let conn = db.get_connection().await.expect("checkout");
            drop(black_box(conn));
        }
        start.elapsed()
    })
}

/// The timed loop of `middleware_prepare`: `count` prepares of a statement this connection has
/// already prepared (the statement-cache hit).
pub fn cached_prepares(rt: &Runtime, db: &ConfigAndPool, count: u64) -> Duration {
    let db = db.clone();
    in_task(rt, async move {
        let mut conn = db.get_connection().await.expect("checkout");
        let start = Instant::now();
        for _ in 0..count {
            let stmt = conn
                .prepare(black_box(dataset::LOOKUP_SQL_DOLLAR))
                .await
                .expect("prepare");
            drop(black_box(stmt));
        }
        start.elapsed()
    })
}

/// The `BENCH_TRACE` pass of a lookup group (when `BENCH_TRACE` is set): `rounds` rounds over
/// `ids` on one checkout, printed under `label`. Outside every timed loop.
pub fn trace_lookups(
    rt: &Runtime,
    db: &ConfigAndPool,
    ids: &Arc<Vec<i64>>,
    rounds: usize,
    label: &str,
) {
    if !dataset::bench_trace() {
        return;
    }
    let (db, ids) = (db.clone(), Arc::clone(ids));
    let split = in_task(rt, async move {
        let mut conn = db.get_connection().await?;
        workloads::trace_lookup_split(&mut conn, &ids, rounds).await
    })
    .expect("BENCH_TRACE pass");
    workloads::print_trace(label, &split);
}

/// The rows of `ids` materialised through the public API (`stmt.query`), for the
/// `middleware_decode` id. Outside every timed loop.
pub fn lookup_rows(rt: &Runtime, db: &ConfigAndPool, ids: &Arc<Vec<i64>>) -> Vec<CustomDbRow> {
    let (db, ids) = (db.clone(), Arc::clone(ids));
    in_task(rt, async move {
        let mut conn = db.get_connection().await?;
        let mut stmt = conn.prepare(dataset::LOOKUP_SQL_DOLLAR).await?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids.iter() {
            let rs = stmt.select(&[RowValues::Int(id)]).await?;
            out.extend(rs.results);
        }
        Ok::<_, SqlMiddlewareDbError>(out)
    })
    .expect("materialise the decode rows")
}

/// One task's share of the middleware fan-out: a checkout, the lookup prepared once, then
/// `stmt.one::<BenchRow>` for each id of `range`.
pub async fn middleware_share(db: ConfigAndPool, ids: Arc<Vec<i64>>, range: Range<usize>) {
    let mut conn = db.get_connection().await.expect("checkout");
    let mut stmt = conn
        .prepare(dataset::LOOKUP_SQL_DOLLAR)
        .await
        .expect("prepare");
    let mut buf = [RowValues::Int(0)];
    for &id in &ids[range] {
        buf[0] = RowValues::Int(id);
        let row: BenchRow = stmt.one(&buf).await.expect("lookup");
        black_box(row);
    }
}
