//! The per-call lookup targets (Q1–Q4 on SQLite, Q7 on Turso, Q9 on Postgres) measured so that
//! drift on a shared machine cancels. Criterion runs the ids of a group one after the other, and
//! on a 2-vCPU VM the raw floor itself moves by 20% or more between them; here every contender
//! and its raw-driver floor run in the same round, N lookups each, in one process and one task,
//! the order reversed every other round, and only the ratio of the round's two times is kept.
//! Prints, per target, the median ratio over the rounds and its interquartile range.
//!
//! Postgres runs twice: on a current-thread runtime, where the calling task and both clients'
//! connection tasks share one thread (no cross-thread wake-ups on either side), and on a
//! two-worker runtime, where the connection tasks run on the workers (cross-thread wake-ups on
//! both sides alike). The Postgres server is
//! `SQL_MIDDLEWARE_PG_URL`, else the local default, else a throwaway cluster (as the tests find
//! it); the example creates its own schema and drops it.
//!
//! MySQL/MariaDB (feature `mysql`; the server of `SQL_MIDDLEWARE_MYSQL_URL`, else
//! `mysql://root@127.0.0.1:3306/test`; the example creates its own database and drops it) runs
//! the lookup pair on both runtimes as Postgres does, against raw `mysql_async` with the lookup
//! prepared once (`exec_first(&stmt, ..)`) and with the SQL text through the driver's statement
//! cache; then the fan-out pair (T = `BENCH_FANOUT_TASKS` tasks, default 32, on a pool of C =
//! `BENCH_CONCURRENCY`, default 8, one round = the N lookups split over the T tasks) against a
//! `mysql_async::Pool` of C connections, with `reset_connection` off (the floor) and on (the
//! driver's default).
//!
//! ```sh
//! cargo run --release --features postgres,turso,mysql --example lookup_ratios -- [ROUNDS] [sqlite] [turso] [postgres] [mysql]
//! ```
//!
//! (`ROUNDS` defaults to 200; with no backend named, all of those built in run.)

#[path = "../tests/common/pg/mod.rs"]
mod pg;
#[path = "../tests/common/unwind.rs"]
#[allow(dead_code)]
mod unwind;

use std::hint::black_box;
use std::time::{Duration, Instant};

use sql_middleware::prelude::*;
use sql_middleware_bench::{BenchRow, dataset, postgres as bp, sqlite as bs};

/// A target: a contender, the floor it is divided by, and the bound.
struct Target {
    id: &'static str,
    what: &'static str,
    contender: usize,
    floor: usize,
    bound: f64,
}

/// Runs `rounds` rounds of every side (`side(i)` runs side `i` once: N lookups, timed; the order
/// reversed every other round) and prints each target's median per-round ratio with its
/// interquartile range.
async fn alternate(
    label: &str,
    rounds: usize,
    n: usize,
    sides: usize,
    side: &mut impl AsyncFnMut(usize) -> Duration,
    targets: &[Target],
) {
    for _ in 0..3 {
        for i in 0..sides {
            side(i).await;
        }
    }
    let mut times = vec![Vec::with_capacity(rounds); sides];
    for r in 0..rounds {
        for k in 0..sides {
            let i = if r % 2 == 0 { k } else { sides - 1 - k };
            times[i].push(side(i).await);
        }
    }
    let per_lookup = |i: usize| {
        let total: Duration = times[i].iter().sum();
        total.as_secs_f64() * 1e9 / (rounds * n) as f64
    };
    println!("\n{label}: {rounds} rounds of {n} lookups per side");
    for t in targets {
        let ratios: Vec<f64> = times[t.contender]
            .iter()
            .zip(&times[t.floor])
            .map(|(c, f)| c.as_secs_f64() / f.as_secs_f64())
            .collect();
        let (q1, med, q3) = quartiles(ratios);
        let verdict = if med <= t.bound { "met" } else { "missed" };
        println!(
            "  {:<3} {:<52} {:>6.0} ns ÷ {:>6.0} ns: median {med:.3}× (interquartile {q1:.3}–{q3:.3}); bound {:.2}: {verdict}",
            t.id,
            t.what,
            per_lookup(t.contender),
            per_lookup(t.floor),
            t.bound
        );
    }
}

fn quartiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}

/// Times `lookup` over every id (given as the id and as the one-parameter list).
async fn timed(ids: &[i64], mut lookup: impl AsyncFnMut(i64, &[RowValues; 1])) -> Duration {
    let mut buf = [RowValues::Int(0)];
    let start = Instant::now();
    for &id in ids {
        buf[0] = RowValues::Int(id);
        lookup(id, &buf).await;
    }
    start.elapsed()
}

/// The middleware's pool for a backend (four connections, spans off when `tracing` is built
/// in, as the benches' plain ids run) and two checkouts: one for the prepared statement, one
/// for the per-call forms.
async fn middleware_pool(
    builder: PoolBuilder,
) -> Result<
    (
        ConfigAndPool,
        MiddlewarePoolConnection,
        MiddlewarePoolConnection,
    ),
    SqlMiddlewareDbError,
> {
    let db = sql_middleware_bench::plain(builder)
        .max_size(4)
        .build()
        .await?;
    let a = db.get_connection().await?;
    let b = db.get_connection().await?;
    Ok((db, a, b))
}

/// The middleware's sides shared by SQLite, Turso and Postgres: prepared `stmt.one`,
/// `query(sql).params(..).one()` and `.select()` on a held connection, and a checkout per
/// `query().one()`.
async fn middleware_side(
    i: usize,
    ids: &[i64],
    sql: &str,
    db: &ConfigAndPool,
    stmt: &mut PreparedStatement<'_>,
    conn: &mut MiddlewarePoolConnection,
) -> Duration {
    match i {
        0 => {
            timed(ids, async |_, p| {
                black_box(stmt.one::<BenchRow>(p).await.expect("lookup"));
            })
            .await
        }
        1 => {
            timed(ids, async |_, p| {
                let row: BenchRow = conn.query(sql).params(p).one().await.expect("lookup");
                black_box(row);
            })
            .await
        }
        2 => {
            timed(ids, async |_, p| {
                black_box(conn.query(sql).params(p).select().await.expect("lookup"));
            })
            .await
        }
        _ => {
            timed(ids, async |_, p| {
                let mut c = db.get_connection().await.expect("checkout");
                let row: BenchRow = c.query(sql).params(p).one().await.expect("lookup");
                black_box(row);
            })
            .await
        }
    }
}

async fn sqlite(rounds: usize, n: usize, ids: &[i64]) -> Result<(), SqlMiddlewareDbError> {
    let path = dataset::sqlite_lookup_path(env!("CARGO_MANIFEST_DIR"), n);
    bs::ensure_lookup_db(&path, n)?;
    let sql = dataset::LOOKUP_SQL_DOLLAR;
    let raw = bs::open_raw(&path).expect("open rusqlite");
    let raw_cached = bs::open_raw(&path).expect("open rusqlite");
    let mut held = bs::lookup_stmt(&raw).expect("prepare");
    let (db, mut a, mut conn) = middleware_pool(ConfigAndPool::sqlite(&path)).await?;
    let mut stmt = a.prepare(sql).await?;
    let mut side = async |i: usize| match i {
        0 => {
            timed(ids, async |id, _| {
                black_box(bs::raw_lookup(&mut held, id).expect("lookup"));
            })
            .await
        }
        1 => {
            timed(ids, async |id, _| {
                let mut st = raw_cached
                    .prepare_cached(dataset::LOOKUP_SQL_QMARK)
                    .expect("prepare_cached");
                black_box(bs::raw_lookup(&mut st, id).expect("lookup"));
            })
            .await
        }
        i => middleware_side(i - 2, ids, sql, &db, &mut stmt, &mut conn).await,
    };
    alternate(
        "SQLite (rusqlite 0.40; a 2-worker runtime)",
        rounds,
        n,
        6,
        &mut side,
        &[
            Target {
                id: "Q1",
                what: "prepared `stmt.one` ÷ rusqlite (statement held)",
                contender: 2,
                floor: 0,
                bound: 1.10,
            },
            Target {
                id: "Q2",
                what: "`query().params().one()` ÷ rusqlite",
                contender: 3,
                floor: 0,
                bound: 1.15,
            },
            Target {
                id: "Q3",
                what: "`query().params().select()` ÷ rusqlite",
                contender: 4,
                floor: 0,
                bound: 1.20,
            },
            Target {
                id: "Q4",
                what: "checkout + `query().one()` ÷ rusqlite `prepare_cached`",
                contender: 5,
                floor: 1,
                bound: 1.25,
            },
            Target {
                id: "-",
                what: "`query().one()` ÷ rusqlite `prepare_cached`",
                contender: 3,
                floor: 1,
                bound: f64::INFINITY,
            },
            Target {
                id: "-",
                what: "prepared `stmt.one` ÷ rusqlite `prepare_cached`",
                contender: 2,
                floor: 1,
                bound: f64::INFINITY,
            },
            Target {
                id: "-",
                what: "rusqlite `prepare_cached` ÷ rusqlite (statement held): the cache's floor under Q1 and Q2",
                contender: 1,
                floor: 0,
                bound: f64::INFINITY,
            },
        ],
    )
    .await;
    Ok(())
}

#[cfg(feature = "turso")]
async fn turso(rounds: usize, n: usize, ids: &[i64]) -> Result<(), SqlMiddlewareDbError> {
    use sql_middleware_bench::turso as bt;
    let path = dataset::turso_lookup_path(env!("CARGO_MANIFEST_DIR"), n);
    bt::ensure_lookup_db(&path, n).await?;
    let sql = dataset::LOOKUP_SQL_DOLLAR;
    let (_raw_db, raw) = bt::open_raw(&path).await?;
    let mut held = raw
        .prepare(dataset::LOOKUP_SQL_QMARK)
        .await
        .expect("prepare");
    let (db, mut a, mut conn) = middleware_pool(ConfigAndPool::turso(&path)).await?;
    let mut stmt = a.prepare(sql).await?;
    let mut side = async |i: usize| match i {
        0 => {
            timed(ids, async |id, _| {
                black_box(bt::raw_lookup(&mut held, id).await.expect("lookup"));
            })
            .await
        }
        i => middleware_side(i - 1, ids, sql, &db, &mut stmt, &mut conn).await,
    };
    alternate(
        "Turso (turso 0.8; a 2-worker runtime)",
        rounds,
        n,
        5,
        &mut side,
        &[
            Target {
                id: "Q7",
                what: "prepared `stmt.one` ÷ turso (statement held)",
                contender: 1,
                floor: 0,
                bound: 1.05,
            },
            Target {
                id: "-",
                what: "`query().params().one()` ÷ turso",
                contender: 2,
                floor: 0,
                bound: f64::INFINITY,
            },
        ],
    )
    .await;
    Ok(())
}

async fn postgres(
    label: &str,
    url: &str,
    rounds: usize,
    n: usize,
    ids: &[i64],
) -> Result<(), SqlMiddlewareDbError> {
    let sql = dataset::LOOKUP_SQL_DOLLAR;
    let client = bp::connect_raw(url).await?;
    let raw_stmt = client.prepare(sql).await.expect("prepare");
    let (db, mut a, mut conn) = middleware_pool(ConfigAndPool::postgres(url)).await?;
    let mut stmt = a.prepare(sql).await?;
    let mut side = async |i: usize| match i {
        0 => {
            timed(ids, async |id, _| {
                let row = client
                    .query_one(&raw_stmt, &[&(id as i32)])
                    .await
                    .expect("lookup");
                black_box(bp::decode_row(&row).expect("decode"));
            })
            .await
        }
        i => middleware_side(i - 1, ids, sql, &db, &mut stmt, &mut conn).await,
    };
    alternate(
        label,
        rounds,
        n,
        5,
        &mut side,
        &[
            Target {
                id: "Q9",
                what: "`query().params().one()` ÷ tokio-postgres (prepared)",
                contender: 2,
                floor: 0,
                bound: 1.03,
            },
            Target {
                id: "-",
                what: "prepared `stmt.one` ÷ tokio-postgres (prepared)",
                contender: 1,
                floor: 0,
                bound: f64::INFINITY,
            },
        ],
    )
    .await;
    Ok(())
}

#[cfg(feature = "mysql")]
async fn mysql(
    label: &str,
    url: &str,
    rounds: usize,
    n: usize,
    ids: &[i64],
) -> Result<(), SqlMiddlewareDbError> {
    use mysql_async::prelude::Queryable;
    use sql_middleware_bench::mysql as bm;
    let sql = dataset::LOOKUP_SQL_DOLLAR;
    // A write that changes nothing (`CLIENT_FOUND_ROWS` counts the row): the checkout that
    // writes first, which checks a pooled connection with a ping.
    let update = "UPDATE test SET score = score WHERE id = $1";
    let (mut raw, raw_stmt) = bm::raw_lookup_conn(url).await?;
    let raw_update = raw
        .prep("UPDATE test SET score = score WHERE id = ?")
        .await
        .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string()))?;
    let (db, mut a, mut conn) = middleware_pool(ConfigAndPool::mysql(url)).await?;
    let mut stmt = a.prepare(sql).await?;
    let mut side = async |i: usize| match i {
        6 => {
            timed(ids, async |id, _| {
                raw.exec_drop(&raw_update, (id,)).await.expect("update");
            })
            .await
        }
        7 => {
            timed(ids, async |_, p| {
                let mut c = db.get_connection().await.expect("checkout");
                black_box(c.query(update).params(p).dml().await.expect("update"));
            })
            .await
        }
        0 => {
            timed(ids, async |id, _| {
                black_box(
                    bm::raw_lookup(&mut raw, &raw_stmt, id)
                        .await
                        .expect("lookup"),
                );
            })
            .await
        }
        1 => {
            timed(ids, async |id, _| {
                black_box(bm::raw_lookup_cached(&mut raw, id).await.expect("lookup"));
            })
            .await
        }
        i => middleware_side(i - 2, ids, sql, &db, &mut stmt, &mut conn).await,
    };
    alternate(
        label,
        rounds,
        n,
        8,
        &mut side,
        &[
            Target {
                id: "M1",
                what: "`query().params().one()` ÷ mysql_async (prepared)",
                contender: 3,
                floor: 0,
                bound: 1.05,
            },
            Target {
                id: "-",
                what: "prepared `stmt.one` ÷ mysql_async (prepared)",
                contender: 2,
                floor: 0,
                bound: f64::INFINITY,
            },
            Target {
                id: "-",
                what: "`query().params().one()` ÷ mysql_async `exec_first(sql)`",
                contender: 3,
                floor: 1,
                bound: f64::INFINITY,
            },
            Target {
                id: "-",
                what: "`query().params().select()` ÷ mysql_async (prepared)",
                contender: 4,
                floor: 0,
                bound: f64::INFINITY,
            },
            Target {
                id: "-",
                what: "checkout + `query().one()` ÷ mysql_async `exec_first(sql)`",
                contender: 5,
                floor: 1,
                bound: f64::INFINITY,
            },
            Target {
                id: "-",
                what: "checkout + `query().dml()` (UPDATE) ÷ mysql_async (prepared UPDATE)",
                contender: 7,
                floor: 6,
                bound: f64::INFINITY,
            },
        ],
    )
    .await;
    drop(stmt);
    drop((a, conn));
    db.close();
    raw.disconnect()
        .await
        .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string()))
}

/// The MySQL fan-out pair: each side runs one round of the fan-out (the N lookups split over
/// T spawned tasks sharing a pool of C), timed from the first spawn to the last task's end.
#[cfg(feature = "mysql")]
async fn mysql_fanout(
    label: &str,
    url: &str,
    rounds: usize,
    ids: &[i64],
) -> Result<(), SqlMiddlewareDbError> {
    use sql_middleware_bench::mysql as bm;
    use std::ops::Range;
    use std::sync::Arc;

    /// Spawns `share` for every range and waits for all of them.
    async fn fan<Fut>(ranges: &[Range<usize>], share: impl Fn(Range<usize>) -> Fut) -> Duration
    where
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let start = Instant::now();
        let handles: Vec<_> = ranges
            .iter()
            .map(|r| tokio::spawn(share(r.clone())))
            .collect();
        for h in handles {
            h.await.expect("a fan-out task panicked");
        }
        start.elapsed()
    }

    let n = ids.len();
    let size = dataset::bench_concurrency();
    let tasks = dataset::env_usize("BENCH_FANOUT_TASKS").unwrap_or(32);
    let ranges = sql_middleware_bench::tasks::chunks(n, tasks);
    let ids = Arc::new(ids.to_vec());
    let db = sql_middleware_bench::plain(ConfigAndPool::mysql(url))
        .max_size(size)
        .build()
        .await?;
    let raw = bm::raw_pool(url, size, false)?;
    let raw_reset = bm::raw_pool(url, size, true)?;
    bm::warm_raw_pool(&raw, size, &ids).await?;
    bm::warm_raw_pool(&raw_reset, size, &ids).await?;
    {
        let mut conns = Vec::with_capacity(size);
        for _ in 0..size {
            conns.push(db.get_connection().await?);
        }
    }
    let mut side = async |i: usize| match i {
        0 => {
            fan(&ranges, |r| {
                bm::raw_fanout_share(raw.clone(), Arc::clone(&ids), r)
            })
            .await
        }
        1 => {
            fan(&ranges, |r| {
                bm::middleware_fanout_share(db.clone(), Arc::clone(&ids), r)
            })
            .await
        }
        _ => {
            fan(&ranges, |r| {
                bm::raw_fanout_share(raw_reset.clone(), Arc::clone(&ids), r)
            })
            .await
        }
    };
    alternate(
        &format!("{label}: T = {tasks} tasks on a pool of C = {size}, one round = {n} lookups"),
        rounds,
        n,
        3,
        &mut side,
        &[
            Target {
                id: "M2",
                what: "fan-out: middleware ÷ mysql_async::Pool (reset off)",
                contender: 1,
                floor: 0,
                bound: 1.10,
            },
            Target {
                id: "-",
                what: "fan-out: middleware ÷ mysql_async::Pool (reset on, its default)",
                contender: 1,
                floor: 2,
                bound: f64::INFINITY,
            },
            Target {
                id: "-",
                what: "fan-out: mysql_async (reset on) ÷ mysql_async (reset off)",
                contender: 2,
                floor: 0,
                bound: f64::INFINITY,
            },
        ],
    )
    .await;
    db.close();
    for pool in [raw, raw_reset] {
        pool.disconnect()
            .await
            .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string()))?;
    }
    Ok(())
}

fn main() -> Result<(), SqlMiddlewareDbError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(200);
    let all = !args
        .iter()
        .any(|a| ["sqlite", "turso", "postgres", "mysql"].contains(&a.as_str()));
    let wants = |b: &str| all || args.iter().any(|a| a == b);
    let n = dataset::bench_lookups();
    let ids = dataset::shuffled_ids(n);
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    // SQLite and Turso run on the runtime's `block_on` thread (a rusqlite statement held across
    // calls is not `Send`, so it cannot move into a spawned task); both sides alike.
    if wants("sqlite") {
        multi.block_on(sqlite(rounds, n, &ids))?;
    }
    #[cfg(feature = "turso")]
    if wants("turso") {
        multi.block_on(turso(rounds, n, &ids))?;
    }
    #[cfg(not(feature = "turso"))]
    if wants("turso") && !all {
        eprintln!("turso: this build has no `turso` feature (add --features turso)");
    }
    if wants("postgres") {
        let base = pg::base_url();
        let schema = format!("{}_ratios", dataset::postgres_schema(n));
        let url = bp::plain_text_url(&pg::url_with_search_path(&base, &schema));
        multi.block_on(async {
            let mut admin = bp::connect_raw(&base).await?;
            bp::create_lookup_schema(&mut admin, &schema, n).await
        })?;
        let current = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let r = current
            .block_on(postgres(
                "Postgres, current-thread runtime (caller and connection tasks on one thread)",
                &url,
                rounds,
                n,
                &ids,
            ))
            .and_then(|()| {
                multi.block_on(postgres(
                    "Postgres, 2-worker runtime (connection tasks on the workers)",
                    &url,
                    rounds,
                    n,
                    &ids,
                ))
            });
        multi.block_on(async {
            let admin = bp::connect_raw(&base).await?;
            bp::drop_schema(&admin, &schema).await
        })?;
        r?;
    }
    #[cfg(feature = "mysql")]
    if wants("mysql") {
        use sql_middleware_bench::mysql as bm;
        let base = bm::base_url();
        let database = bm::lookup_database(n, "_ratios");
        let url = multi.block_on(bm::create_lookup_database(&base, &database, n))?;
        let current = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let r = current
            .block_on(mysql(
                "MySQL/MariaDB lookups, current-thread runtime",
                &url,
                rounds,
                n,
                &ids,
            ))
            .and_then(|()| {
                multi.block_on(mysql(
                    "MySQL/MariaDB lookups, 2-worker runtime",
                    &url,
                    rounds,
                    n,
                    &ids,
                ))
            })
            .and_then(|()| {
                multi.block_on(mysql_fanout(
                    "MySQL/MariaDB fan-out, 2-worker runtime",
                    &url,
                    rounds,
                    &ids,
                ))
            });
        multi.block_on(bm::drop_database(&base, &database))?;
        r?;
    }
    #[cfg(not(feature = "mysql"))]
    if wants("mysql") && !all {
        eprintln!("mysql: this build has no `mysql` feature (add --features mysql)");
    }
    Ok(())
}
