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
//! ```sh
//! cargo run --release --features postgres,turso --example lookup_ratios -- [ROUNDS] [sqlite] [turso] [postgres]
//! ```
//!
//! (`ROUNDS` defaults to 200; with no backend named, all three run.)

#[path = "../tests/common/pg.rs"]
mod pg;
#[cfg(feature = "postgres-tls")]
#[path = "../tests/common/pg_tls.rs"]
mod pg_tls;
#[path = "../tests/common/pgbouncer.rs"]
#[allow(dead_code)]
mod pgbouncer;

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

fn main() -> Result<(), SqlMiddlewareDbError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(200);
    let all = !args
        .iter()
        .any(|a| ["sqlite", "turso", "postgres"].contains(&a.as_str()));
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
    Ok(())
}
