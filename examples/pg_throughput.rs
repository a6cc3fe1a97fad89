//! Postgres throughput at saturation: pgbench's own scripts, run by pgbench itself (libpq, C),
//! by raw tokio-postgres on deadpool-postgres (`prepare_cached`, `RecyclingMethod::Fast`) and by
//! the crate, each with C clients on C connections, in interleaved rounds of one process.
//!
//! - **Workloads.** `select` is pgbench's select-only script (`-S`: one
//!   `SELECT abalance FROM pgbench_accounts WHERE aid = :aid`); `tpcb` its TPC-B-like script (in
//!   one transaction: update an account, read it back, update a teller and a branch, insert a
//!   history row). Each client of the Rust contenders checks a connection out of its pool per
//!   transaction, as a service handling requests does; pgbench keeps one connection per client.
//! - **Dataset.** Made by pgbench's own `-i` step (scale 1: 100,000 accounts, 10 tellers, 1
//!   branch) in a database of its own, `sqlmw_pgbench`, created when missing and reused.
//! - **Durability.** Every contender runs against the same server with its own settings
//!   (`synchronous_commit` and `fsync` are printed); nothing is changed per contender.
//! - **Rounds.** Each round runs every contender for the window after a warm-up, in an order
//!   that rotates every round; a ratio is taken within a round, and the median over the rounds
//!   is reported, so drift on a shared machine cancels.
//! - **Runtime.** The Rust contenders share one tokio multi-thread runtime with one worker per
//!   CPU; pgbench gets `-j` = the CPU count.
//!
//! ```sh
//! cargo run --release --features postgres --example pg_throughput -- \
//!     [--clients 8,64] [--seconds 5] [--rounds 3] [--workload select,tpcb] [--only NAME]
//! ```
//!
//! `--only raw|middleware|pgbench` with `--transactions N` runs one contender for a fixed
//! count (no rounds), for profilers (`perf stat`, `strace -c -f`, `valgrind`). The server is
//! `SQL_MIDDLEWARE_PG_URL`, else the local default, else a throwaway cluster (as the tests find
//! it). The figures also go to `<CRITERION_HOME>/throughput/postgres.json`.

#[path = "../tests/common/pg/mod.rs"]
mod pg;
#[path = "../tests/common/unwind.rs"]
#[allow(dead_code)]
mod unwind;

#[path = "throughput/args.rs"]
mod args;
#[path = "throughput/drive.rs"]
mod drive;
#[path = "throughput/external.rs"]
mod external;
#[path = "throughput/report.rs"]
#[allow(dead_code)]
mod report;
#[path = "throughput/sqlx.rs"]
mod sqlx;

use std::str::FromStr;
use std::time::Duration;

use deadpool_postgres::{ManagerConfig, RecyclingMethod};
use sql_middleware::prelude::*;
use sql_middleware_bench::postgres as bp;

use args::Args;
use drive::{Rng, Stop};
use external::Contender;

/// A workload of pgbench's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    /// pgbench `-S`.
    Select,
    /// pgbench's TPC-B-like script.
    TpcB,
}

impl Workload {
    const KNOWN: [(&'static str, &'static [&'static str]); 2] =
        [("select", &[]), ("tpcb", &["read_write"])];

    fn from_name(name: &str) -> Workload {
        match name {
            "select" => Workload::Select,
            _ => Workload::TpcB,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Workload::Select => "select",
            Workload::TpcB => "tpcb",
        }
    }
}

/// pgbench's scale for the dataset: 100,000 accounts per unit.
const SCALE: i32 = 1;
const DB: &str = "sqlmw_pgbench";

const SELECT: &str = "SELECT abalance FROM pgbench_accounts WHERE aid = $1";
const TPCB: [&str; 5] = [
    "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
    "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
    "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
    "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
];

/// The contenders, in their first round's order.
const CONTENDERS: [&str; 3] = ["pgbench", "raw", "middleware"];

/// One transaction's random inputs, as pgbench draws them (uniform).
#[derive(Clone, Copy)]
struct Draw {
    aid: i32,
    tid: i32,
    bid: i32,
    delta: i32,
}

/// One transaction's draws, as pgbench makes them (uniform).
fn draw(rng: &mut Rng) -> Draw {
    let scale = i64::from(SCALE);
    let int = |v: i64| i32::try_from(v).expect("in range");
    Draw {
        aid: int(rng.range(1, 100_000 * scale)),
        tid: int(rng.range(1, 10 * scale)),
        bid: int(rng.range(1, scale)),
        delta: int(rng.range(-5000, 5000)),
    }
}

fn main() {
    let args = Args::parse(&Workload::KNOWN, &["sqlx"]);
    let cpus = std::thread::available_parallelism().map_or(2, usize::from);
    let rt = drive::runtime(cpus);
    let base = pg::base_url();
    let url = bp::plain_text_url(&with_database(&base, DB));
    rt.block_on(prepare(&base, &url));
    let settings = rt.block_on(server_settings(&url));
    eprintln!(
        "[pg_throughput] database {DB} (pgbench -i -s {SCALE}); server {settings}; {cpus} runtime workers, pgbench -j {cpus}"
    );
    let sqlx = sqlx::Sqlx::find(args.binary("sqlx"), "pg_throughput");
    let contenders = sqlx::Sqlx::joined(sqlx.as_ref(), &CONTENDERS);
    let workloads = args.workloads_as(Workload::from_name);
    if args.run_only(&workloads, Workload::name, |only, w, c, n| match only {
        "pgbench" => pgbench_count(&url, w, c, cpus, n),
        side => rt.block_on(rust_side(side, &url, w, c, Stop::Count(n))),
    }) {
        return;
    }
    let mut results = Vec::new();
    for &w in &workloads {
        for &c in &args.clients {
            let label = format!("{} C={c}", w.name());
            let rounds =
                drive::rounds(
                    "pg_throughput",
                    &label,
                    &contenders,
                    args.rounds,
                    |side| match (side, &sqlx) {
                        ("pgbench", _) => pgbench_tps(&url, w, c, cpus, args.seconds),
                        ("sqlx", Some(x)) => x.tps("postgres", &url, w.name(), c, args.seconds),
                        (side, _) => rt.block_on(rust_tps(side, &url, w, c, args.seconds)),
                    },
                );
            results.push(report::Line::new(w.name(), c, &contenders, &rounds));
        }
    }
    report::print_and_save("postgres", &settings, &results);
}

/// `base` pointed at database `db`.
fn with_database(base: &str, db: &str) -> String {
    let (head, query) = base
        .split_once('?')
        .map_or((base, None), |(h, q)| (h, Some(q)));
    let (scheme, rest) = head.split_once("://").expect("a postgres URL");
    let authority = rest.split_once('/').map_or(rest, |(a, _)| a);
    match query {
        Some(q) => format!("{scheme}://{authority}/{db}?{q}"),
        None => format!("{scheme}://{authority}/{db}"),
    }
}

/// Creates the database and pgbench's tables when missing (pgbench's own `-i`).
async fn prepare(base: &str, url: &str) {
    let admin = bp::connect_raw(&bp::plain_text_url(base))
        .await
        .expect("connect to the server");
    let exists = admin
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&DB])
        .await
        .expect("pg_database")
        .is_some();
    if !exists {
        admin
            .batch_execute(&format!("CREATE DATABASE {DB}"))
            .await
            .expect("create the pgbench database");
    }
    let db = bp::connect_raw(url)
        .await
        .expect("connect to the pgbench database");
    let ready = db
        .query_opt(
            "SELECT count(*) FROM pgbench_branches HAVING count(*) = $1::bigint",
            &[&i64::from(SCALE)],
        )
        .await
        .ok()
        .flatten()
        .is_some();
    if !ready {
        let out = std::process::Command::new("pgbench")
            .args(["-i", "-q", "-s", &SCALE.to_string(), url])
            .output()
            .expect("pgbench is installed (Debian: postgresql-client)");
        assert!(
            out.status.success(),
            "pgbench -i failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

async fn server_settings(url: &str) -> String {
    let c = bp::connect_raw(url).await.expect("connect");
    let mut parts = Vec::new();
    for s in [
        "server_version",
        "synchronous_commit",
        "fsync",
        "max_connections",
    ] {
        let row = c.query_one(&format!("SHOW {s}"), &[]).await.expect("SHOW");
        parts.push(format!("{s}={}", row.get::<_, String>(0)));
    }
    parts.join(" ")
}

fn pgbench_args(url: &str, w: Workload, clients: usize, threads: usize) -> Vec<String> {
    let mut a = vec![
        "-n".to_owned(),
        "-M".to_owned(),
        "prepared".to_owned(),
        "-c".to_owned(),
        clients.to_string(),
        "-j".to_owned(),
        threads.min(clients).to_string(),
    ];
    if w == Workload::Select {
        a.push("-S".to_owned());
    }
    a.push(url.to_owned());
    a
}

fn run_pgbench(args: &[String]) -> String {
    let out = std::process::Command::new("pgbench")
        .args(args)
        .output()
        .expect("pgbench is installed (Debian: postgresql-client)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "pgbench failed: {}{}",
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// pgbench's own figure: `tps = X (without initial connection time)`.
fn pgbench_tps(url: &str, w: Workload, clients: usize, threads: usize, seconds: u64) -> f64 {
    let mut a = pgbench_args(url, w, clients, threads);
    a.splice(0..0, ["-T".to_owned(), seconds.to_string()]);
    let text = run_pgbench(&a);
    text.lines()
        .find(|l| l.starts_with("tps = "))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|v| f64::from_str(v).ok())
        .unwrap_or_else(|| panic!("no tps in pgbench's output: {text}"))
}

fn pgbench_count(url: &str, w: Workload, clients: usize, threads: usize, n: u64) -> u64 {
    let per = n.div_ceil(clients as u64);
    let mut a = pgbench_args(url, w, clients, threads);
    a.splice(0..0, ["-t".to_owned(), per.to_string()]);
    run_pgbench(&a);
    per * clients as u64
}

/// A Rust contender's transactions per second over the window, after a one-second warm-up.
async fn rust_tps(side: &str, url: &str, w: Workload, clients: usize, seconds: u64) -> f64 {
    let done = rust_side(
        side,
        url,
        w,
        clients,
        Stop::Window(Duration::from_secs(seconds)),
    )
    .await;
    done as f64 / seconds as f64
}

/// Runs `clients` clients of `side` (`raw` or `middleware`) and returns the transactions done
/// (in the measured window for [`Stop::Window`]).
async fn rust_side(side: &str, url: &str, w: Workload, clients: usize, stop: Stop) -> u64 {
    let pool = Pool::new(side, url, clients).await;
    let workers = (0..clients)
        .map(|k| Worker {
            pool: pool.clone(),
            rng: Rng::for_client(k),
            w,
        })
        .collect();
    let done = drive::drive(workers, stop).await;
    pool.close();
    done
}

/// One client of a Rust contender.
struct Worker {
    pool: Pool,
    rng: Rng,
    w: Workload,
}

impl drive::Client for Worker {
    async fn transaction(&mut self) {
        let d = draw(&mut self.rng);
        self.pool.transaction(self.w, d).await;
    }
}

/// One Rust contender's pool.
#[derive(Clone)]
enum Pool {
    Raw(deadpool_postgres::Pool),
    Middleware(ConfigAndPool),
}

impl Pool {
    async fn new(side: &str, url: &str, size: usize) -> Pool {
        let c = match side {
            "raw" => {
                let cfg = tokio_postgres::Config::from_str(url).expect("parse the URL");
                let mgr = deadpool_postgres::Manager::from_config(
                    cfg,
                    tokio_postgres::NoTls,
                    ManagerConfig {
                        recycling_method: RecyclingMethod::Fast,
                    },
                );
                Pool::Raw(
                    deadpool_postgres::Pool::builder(mgr)
                        .max_size(size)
                        .build()
                        .expect("deadpool-postgres pool"),
                )
            }
            "middleware" => Pool::Middleware(
                sql_middleware_bench::plain(ConfigAndPool::postgres(url).max_size(size))
                    .build()
                    .await
                    .expect("the middleware pool"),
            ),
            other => panic!("unknown contender `{other}` (pgbench, raw, middleware)"),
        };
        // Open every connection before the clock starts.
        let mut held = Vec::new();
        for _ in 0..size {
            held.push(c.open().await);
        }
        c
    }

    async fn open(&self) -> Result<(), SqlMiddlewareDbError> {
        match self {
            Pool::Raw(p) => {
                let _c = p.get().await.expect("raw checkout");
                Ok(())
            }
            Pool::Middleware(p) => p.get_connection().await.map(drop),
        }
    }

    fn close(&self) {
        match self {
            Pool::Raw(p) => p.close(),
            Pool::Middleware(p) => p.close(),
        }
    }

    async fn transaction(&self, w: Workload, d: Draw) {
        match (self, w) {
            (Pool::Raw(p), Workload::Select) => {
                let c = p.get().await.expect("raw checkout");
                let st = c.prepare_cached(SELECT).await.expect("prepare");
                let row = c.query_one(&st, &[&d.aid]).await.expect("select");
                std::hint::black_box(row.get::<_, i32>(0));
            }
            (Pool::Raw(p), Workload::TpcB) => {
                let mut c = p.get().await.expect("raw checkout");
                let mut st = Vec::with_capacity(TPCB.len());
                for sql in TPCB {
                    st.push(c.prepare_cached(sql).await.expect("prepare"));
                }
                let tx = c.transaction().await.expect("begin");
                tx.execute(&st[0], &[&d.delta, &d.aid])
                    .await
                    .expect("update");
                let row = tx.query_one(&st[1], &[&d.aid]).await.expect("select");
                std::hint::black_box(row.get::<_, i32>(0));
                tx.execute(&st[2], &[&d.delta, &d.tid])
                    .await
                    .expect("update");
                tx.execute(&st[3], &[&d.delta, &d.bid])
                    .await
                    .expect("update");
                tx.execute(&st[4], &[&d.tid, &d.bid, &d.aid, &d.delta])
                    .await
                    .expect("insert");
                tx.commit().await.expect("commit");
            }
            (Pool::Middleware(p), Workload::Select) => {
                let mut c = p.get_connection().await.expect("checkout");
                let (v,): (i32,) = c
                    .query(SELECT)
                    .params(&[RowValues::Int(i64::from(d.aid))])
                    .one()
                    .await
                    .expect("select");
                std::hint::black_box(v);
            }
            (Pool::Middleware(p), Workload::TpcB) => {
                let mut c = p.get_connection().await.expect("checkout");
                let int = |v: i32| RowValues::Int(i64::from(v));
                let mut tx = c.begin().await.expect("begin");
                tx.query(TPCB[0])
                    .params(&[int(d.delta), int(d.aid)])
                    .dml()
                    .await
                    .expect("update");
                let (v,): (i32,) = tx
                    .query(TPCB[1])
                    .params(&[int(d.aid)])
                    .one()
                    .await
                    .expect("select");
                std::hint::black_box(v);
                tx.query(TPCB[2])
                    .params(&[int(d.delta), int(d.tid)])
                    .dml()
                    .await
                    .expect("update");
                tx.query(TPCB[3])
                    .params(&[int(d.delta), int(d.bid)])
                    .dml()
                    .await
                    .expect("update");
                tx.query(TPCB[4])
                    .params(&[int(d.tid), int(d.bid), int(d.aid), int(d.delta)])
                    .dml()
                    .await
                    .expect("insert");
                tx.commit().await.expect("commit");
            }
        }
    }
}
