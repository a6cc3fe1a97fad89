//! `postgres_single_row_lookup`: N point lookups per iteration against a Postgres server, raw
//! tokio-postgres against the middleware (sequential and pipelined; named and unnamed
//! statements; over TLS; and through a PgBouncer in transaction mode, which the bench starts
//! when the `pgbouncer` binary is installed). The bench creates its own schema
//! (`dataset::postgres_schema(N)`) and drops it at the end.
//!
//! `postgres_connect`: K = `BENCH_CONNECTS` new connections per iteration (a checkout that
//! opens a connection, then `SELECT 1`), in plain text and over TLS.
//!
//! The TLS ids (`middleware_tls`, `connect_tls`, feature `postgres-tls`) use the server of
//! `SQL_MIDDLEWARE_PG_TLS_URL`, else a throwaway TLS cluster the bench starts (it needs the
//! PostgreSQL server binaries); when neither can be had, the bench says why they are not
//! measured. See docs/dev/Benchmarks.md.

mod common;
#[path = "../tests/common/pg/mod.rs"]
mod pg;
#[path = "../tests/common/unwind.rs"]
#[allow(dead_code)]
mod unwind;

use std::hint::black_box;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use sql_middleware::prelude::*;
use sql_middleware_bench::workloads::{self, Lookup};
use sql_middleware_bench::{BenchRow, dataset, postgres as bp};

const GROUP: &str = "postgres_single_row_lookup";
const CONNECT_GROUP: &str = "postgres_connect";

/// The server of the TLS ids.
struct TlsTarget {
    /// A URL that asks for TLS (`verify-full` to the throwaway cluster).
    url: String,
    /// The same server in plain text, when it accepts that (the throwaway cluster does).
    plain_url: Option<String>,
}

/// `SQL_MIDDLEWARE_PG_TLS_URL`, else a throwaway TLS cluster (started once per process), or why
/// there is none.
fn tls_target() -> &'static Result<TlsTarget, String> {
    static T: OnceLock<Result<TlsTarget, String>> = OnceLock::new();
    T.get_or_init(|| {
        if !cfg!(feature = "postgres-tls") {
            return Err("this build has no TLS: run with --features postgres-tls".to_owned());
        }
        if let Some(url) = std::env::var("SQL_MIDDLEWARE_PG_TLS_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())
        {
            return Ok(TlsTarget {
                url,
                plain_url: None,
            });
        }
        #[cfg(feature = "postgres-tls")]
        {
            let server = pg::tls::start_with(true).map_err(|e| {
                format!("no SQL_MIDDLEWARE_PG_TLS_URL, and no throwaway TLS cluster: {e}")
            })?;
            Ok(TlsTarget {
                url: server.verify_full_url(),
                plain_url: Some(server.url("postgres", "127.0.0.1", "sslmode=disable")),
            })
        }
        #[cfg(not(feature = "postgres-tls"))]
        unreachable!("checked above")
    })
}

/// Recreates the lookup table (the dataset's rows `1..=n`) in `schema` on the server of `url`,
/// through the middleware (the URL may ask for TLS, which the raw admin client does not speak).
async fn create_lookup_schema_via(
    url: &str,
    schema: &str,
    n: usize,
) -> Result<(), SqlMiddlewareDbError> {
    let db = ConfigAndPool::postgres(url).max_size(1).build().await?;
    let mut c = db.get_connection().await?;
    c.execute_batch(&format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}; SET search_path TO {schema}; {}; \
         INSERT INTO test SELECT g, 'name-' || g, g * 0.5, (g % 2 = 0)::int FROM generate_series(1, {n}) g; \
         ANALYZE test",
        dataset::LOOKUP_SCHEMA
    ))
    .await
}

/// Drops `schema` on the server of `url`, through the middleware.
async fn drop_schema_via(url: &str, schema: &str) -> Result<(), SqlMiddlewareDbError> {
    let db = ConfigAndPool::postgres(url).max_size(1).build().await?;
    let mut c = db.get_connection().await?;
    c.execute_batch(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .await
}

fn postgres_single_row_lookup(c: &mut Criterion) {
    let Lookup { n, ids } = Lookup::from_env();
    let ids = Arc::new(ids);
    let base = pg::base_url();
    let schema = dataset::postgres_schema(n);
    // The plain ids stay plain text, as the raw baseline (NoTls) is, even where the server
    // offers TLS and the build has it (libpq's default, `prefer`, would take it).
    let url = bp::plain_text_url(&pg::url_with_search_path(&base, &schema));
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
        .block_on(common::plain(ConfigAndPool::postgres(&url)).build())
        .expect("build the middleware pool");
    let unnamed = rt
        .block_on(
            common::plain(
                ConfigAndPool::postgres(&url)
                    .statement_cache(sql_middleware::StatementCache::Unnamed),
            )
            .build(),
        )
        .expect("build the unnamed-statement pool");
    // The same lookups through PgBouncer (transaction mode, unnamed statements); the bouncer
    // gives its server connections the bench schema as search_path.
    let bounced = match pg::pgbouncer::start(&base, 4, Some(("sqlmw_lookup", &schema))) {
        Ok(b) => Some((
            rt.block_on(
                common::plain(
                    ConfigAndPool::postgres(&b.url("sqlmw_lookup"))
                        .statement_cache(sql_middleware::StatementCache::Unnamed),
                )
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
    // The same lookups over TLS, on a schema of their own (the TLS server may be this one).
    let tls_schema = format!("{schema}_tls");
    let tls = match tls_target() {
        Ok(t) => {
            let (t_url, new_schema) = (t.url.clone(), tls_schema.clone());
            common::in_task(&rt, async move {
                create_lookup_schema_via(&t_url, &new_schema, n).await
            })
            .expect("create the lookup schema on the TLS server");
            let db = rt
                .block_on(
                    common::plain(ConfigAndPool::postgres(&pg::url_with_search_path(
                        &t.url,
                        &tls_schema,
                    )))
                    .build(),
                )
                .expect("build the TLS pool");
            let (check, ids) = (db.clone(), Arc::clone(&ids));
            common::in_task(&rt, async move {
                let mut conn = check.get_connection().await?;
                let (ssl,): (bool,) = conn
                    .query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
                    .one()
                    .await?;
                assert!(ssl, "the TLS pool's session is not encrypted");
                workloads::verify_lookups(&mut conn, &ids).await
            })
            .expect("the TLS pool returns the dataset's rows");
            Some(db)
        }
        Err(e) => {
            eprintln!("[{GROUP}] middleware_tls is not measured: {e}");
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

    common::per_call_ids(&mut g, &rt, &db, &ids);

    if let Some(tls) = &tls {
        g.bench_function(BenchmarkId::new("middleware_tls", n), |b| {
            b.iter_custom(|iters| {
                common::middleware_lookups::<BenchRow>(
                    &rt,
                    tls,
                    &ids,
                    dataset::LOOKUP_SQL_DOLLAR,
                    iters,
                )
            });
        });
    }

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
    if let (Some(tls), Ok(t)) = (tls, tls_target()) {
        tls.close();
        drop(tls);
        let t_url = t.url.clone();
        common::in_task(
            &rt,
            async move { drop_schema_via(&t_url, &tls_schema).await },
        )
        .expect("drop the lookup schema on the TLS server");
    }
    common::in_task(&rt, async move {
        let admin = bp::connect_raw(&base).await?;
        bp::drop_schema(&admin, &schema).await
    })
    .expect("drop the Postgres lookup schema");
}

/// `BENCH_CONNECTS` (default 20): connections opened per iteration of `postgres_connect`.
fn bench_connects() -> usize {
    dataset::env_usize("BENCH_CONNECTS").unwrap_or(20).max(1)
}

/// The timed loop of the connect ids: `count` checkouts, each opening a new connection (the
/// pool's connections live 1 ns, so the previous one is retired at the next checkout) and
/// running `SELECT 1`. Checks, outside the timer, that every checkout did connect.
fn connects(rt: &tokio::runtime::Runtime, db: &ConfigAndPool, count: u64) -> Duration {
    let db = db.clone();
    common::in_task(rt, async move {
        let before = db.status().created;
        let start = Instant::now();
        for _ in 0..count {
            let mut conn = db.get_connection().await.expect("connect");
            let one: (i32,) = conn.query("SELECT 1").one().await.expect("SELECT 1");
            black_box(one);
        }
        let elapsed = start.elapsed();
        let made = db.status().created - before;
        assert!(
            made >= count,
            "{made} connections opened for {count} checkouts"
        );
        elapsed
    })
}

/// A pool whose every checkout opens a new connection.
fn connecting_pool(rt: &tokio::runtime::Runtime, url: &str) -> ConfigAndPool {
    rt.block_on(
        ConfigAndPool::postgres(url)
            .max_size(1)
            .max_lifetime(Duration::from_nanos(1))
            .build(),
    )
    .expect("build the connecting pool")
}

fn postgres_connect(c: &mut Criterion) {
    let k = bench_connects();
    let rt = common::runtime();
    let tls = tls_target();
    // Plain and TLS on one server when the TLS server also accepts plain text.
    let plain_url = match tls {
        Ok(TlsTarget {
            plain_url: Some(u), ..
        }) => u.clone(),
        _ => bp::plain_text_url(&pg::base_url()),
    };
    let plain = connecting_pool(&rt, &plain_url);
    let tls = match tls {
        Ok(t) => Some(connecting_pool(&rt, &t.url)),
        Err(e) => {
            eprintln!("[{CONNECT_GROUP}] connect_tls is not measured: {e}");
            None
        }
    };
    eprintln!("[{CONNECT_GROUP}] K = {k} new connections per iteration, each then SELECT 1");
    let mut g = c.benchmark_group(CONNECT_GROUP);
    g.throughput(Throughput::Elements(k as u64));
    g.bench_function(BenchmarkId::new("connect_plain", k), |b| {
        b.iter_custom(|iters| connects(&rt, &plain, iters * k as u64));
    });
    if let Some(tls) = &tls {
        g.bench_function(BenchmarkId::new("connect_tls", k), |b| {
            b.iter_custom(|iters| connects(&rt, tls, iters * k as u64));
        });
    }
    g.finish();
}

bench_main!(postgres_single_row_lookup, postgres_connect);
