//! `postgres_single_row_lookup`: N point lookups per iteration against a Postgres server, raw
//! tokio-postgres against the middleware (sequential and pipelined; named and unnamed
//! statements; and through a PgBouncer in transaction mode, which the bench starts when the
//! `pgbouncer` binary is installed). The bench creates its own schema
//! (`dataset::postgres_schema(N)`) and drops it at the end. See docs/Benchmarks.md.

mod common;
#[path = "../tests/common/pg.rs"]
mod pg;
#[path = "../tests/common/pgbouncer.rs"]
#[allow(dead_code)]
mod pgbouncer;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, Throughput};
use sql_middleware::bench_support::workloads::{self, Lookup};
use sql_middleware::bench_support::{BenchRow, dataset, postgres as bp};
use sql_middleware::prelude::*;

const GROUP: &str = "postgres_single_row_lookup";

fn postgres_single_row_lookup(c: &mut Criterion) {
    let Lookup { n, ids } = Lookup::from_env();
    let ids = Arc::new(ids);
    let base = pg::base_url();
    let schema = dataset::postgres_schema(n);
    let url = pg::url_with_search_path(&base, &schema);
    let rt = common::runtime();
    {
        let (base, schema) = (base.clone(), schema.clone());
        common::in_task(&rt, async move {
            let mut admin = bp::connect_raw(&base).await?;
            bp::create_lookup_schema(&mut admin, &schema, n).await
        })
        .expect("create the Postgres lookup schema");
    }
    let db = rt
        .block_on(ConfigAndPool::postgres(&url).build())
        .expect("build the middleware pool");
    let unnamed = rt
        .block_on(
            ConfigAndPool::postgres(&url)
                .statement_cache(sql_middleware::StatementCache::Unnamed)
                .build(),
        )
        .expect("build the unnamed-statement pool");
    // The same lookups through PgBouncer (transaction mode, unnamed statements); the bouncer
    // gives its server connections the bench schema as search_path.
    let bounced = match pgbouncer::start(&base, 4, Some(("sqlmw_lookup", &schema))) {
        Ok(b) => Some((
            rt.block_on(
                ConfigAndPool::postgres(&b.url("sqlmw_lookup"))
                    .statement_cache(sql_middleware::StatementCache::Unnamed)
                    .build(),
            )
            .expect("build the pool through PgBouncer"),
            b,
        )),
        Err(e) => {
            eprintln!("[{GROUP}] middleware_via_pgbouncer is not measured: {e}");
            None
        }
    };
    let raw = {
        let url = url.clone();
        common::in_task(&rt, async move {
            let client = bp::connect_raw(&url).await?;
            let stmt = client
                .prepare(dataset::LOOKUP_SQL_DOLLAR)
                .await
                .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string()))?;
            Ok::<_, SqlMiddlewareDbError>(Arc::new((client, stmt)))
        })
        .expect("connect the raw tokio-postgres client")
    };
    eprintln!(
        "[{GROUP}] N = {n} lookups per iteration; schema {schema}; middleware pool max_size {} \
         (one connection in use); raw: one tokio-postgres client, statement prepared once",
        db.status().max_size,
    );

    // Every contender returns the dataset's rows (checked once, outside the timer).
    {
        let (db, ids, raw) = (db.clone(), Arc::clone(&ids), Arc::clone(&raw));
        common::in_task(&rt, async move {
            let mut conn = db.get_connection().await?;
            workloads::verify_lookups(&mut conn, &ids).await?;
            for &id in ids.iter() {
                let row = raw
                    .0
                    .query_one(&raw.1, &[&(id as i32)])
                    .await
                    .and_then(|r| bp::decode_row(&r))
                    .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string()))?;
                workloads::check_row(id, &row)?;
            }
            Ok::<_, SqlMiddlewareDbError>(())
        })
        .expect("every contender returns the dataset's rows");
    }

    common::trace_lookups(&rt, &db, &ids, 1, "postgres middleware");
    if dataset::bench_trace() {
        let (db, ids) = (db.clone(), Arc::clone(&ids));
        let (pipe, decode) = common::in_task(&rt, async move {
            let mut conn = db.get_connection().await?;
            let params: Vec<[RowValues; 1]> = ids.iter().map(|&id| [RowValues::Int(id)]).collect();
            let sets: Vec<&[RowValues]> = params.iter().map(|p| &p[..]).collect();
            let t0 = Instant::now();
            let results = conn.pipeline(dataset::LOOKUP_SQL_DOLLAR, &sets).await?;
            let t1 = Instant::now();
            for rs in &results {
                black_box(BenchRow::from_row(&rs.results[0])?);
            }
            Ok::<_, SqlMiddlewareDbError>((t1 - t0, t1.elapsed()))
        })
        .expect("BENCH_TRACE pipelined pass");
        eprintln!(
            "[BENCH_TRACE] postgres middleware_pipelined: per row pipeline+materialise {:.0} ns, decode {:.0} ns",
            pipe.as_nanos() as f64 / n as f64,
            decode.as_nanos() as f64 / n as f64
        );
    }

    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(n as u64));

    g.bench_function(BenchmarkId::new("tokio_postgres_raw", n), |b| {
        b.iter_custom(|iters| {
            let (raw, ids) = (Arc::clone(&raw), Arc::clone(&ids));
            common::in_task(&rt, async move {
                let (client, stmt) = (&raw.0, &raw.1);
                let start = Instant::now();
                for _ in 0..iters {
                    for &id in ids.iter() {
                        let row = client
                            .query_one(stmt, &[&(id as i32)])
                            .await
                            .expect("lookup");
                        black_box(bp::decode_row(&row).expect("decode"));
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

    g.bench_function(BenchmarkId::new("middleware_unnamed", n), |b| {
        b.iter_custom(|iters| {
            common::middleware_lookups::<BenchRow>(
                &rt,
                &unnamed,
                &ids,
                dataset::LOOKUP_SQL_DOLLAR,
                iters,
            )
        });
    });

    if let Some((bounced, _bouncer)) = &bounced {
        g.bench_function(BenchmarkId::new("middleware_via_pgbouncer", n), |b| {
            b.iter_custom(|iters| {
                common::middleware_lookups::<BenchRow>(
                    &rt,
                    bounced,
                    &ids,
                    dataset::LOOKUP_SQL_DOLLAR,
                    iters,
                )
            });
        });
    }

    g.bench_function(BenchmarkId::new("middleware_pipelined", n), |b| {
        b.iter_custom(|iters| {
            let (db, ids) = (db.clone(), Arc::clone(&ids));
            common::in_task(&rt, async move {
                let mut conn = db.get_connection().await.expect("checkout");
                let params: Vec<[RowValues; 1]> =
                    ids.iter().map(|&id| [RowValues::Int(id)]).collect();
                let sets: Vec<&[RowValues]> = params.iter().map(|p| &p[..]).collect();
                let start = Instant::now();
                for _ in 0..iters {
                    let results = conn
                        .pipeline(dataset::LOOKUP_SQL_DOLLAR, &sets)
                        .await
                        .expect("pipeline");
                    for rs in &results {
                        black_box(BenchRow::from_row(&rs.results[0]).expect("decode"));
                    }
                }
                start.elapsed()
            })
        });
    });

    g.bench_function(BenchmarkId::new("pool_acquire", n), |b| {
        b.iter_custom(|iters| common::pool_acquires(&rt, &db, iters * n as u64));
    });

    g.finish();

    db.close();
    drop(db);
    drop(raw);
    common::in_task(&rt, async move {
        let admin = bp::connect_raw(&base).await?;
        bp::drop_schema(&admin, &schema).await
    })
    .expect("drop the Postgres lookup schema");
}

bench_main!(postgres_single_row_lookup);
