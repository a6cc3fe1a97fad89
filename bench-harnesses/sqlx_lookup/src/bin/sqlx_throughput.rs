//! SQLx's contender in the throughput-at-saturation suites: the benchmark tools' own workloads
//! (pgbench's select-only and TPC-B-like scripts, sysbench's `oltp_point_select` and
//! `oltp_read_write`), run through a SQLx pool by N clients for a measured window. The main
//! crate's throughput examples run it as an external process, the way they run pgbench.
//!
//! ```sh
//! sqlx_throughput --engine postgres|mysql --url URL --workload select|tpcb|point_select|read_write \
//!     --clients N --seconds S [--warmup W] [--scale K] [--table-size R] [--test-before-acquire]
//! ```
//!
//! It prints one line of JSON on stdout:
//! `{"transactions": T, "seconds": S_measured, "tps": X, "errors": E}`. It exits with 2 on a bad
//! command line, with 1 on a setup failure (connect, dataset check) or when the window completed
//! no transaction at all (the JSON line is still printed then), with a message on stderr.
//!
//! - **Pool.** `PgPoolOptions`/`MySqlPoolOptions` with `max_connections = min_connections = N`;
//!   the N connections are opened (and checked out once together) before the warm-up starts.
//!   `test_before_acquire` is off unless `--test-before-acquire` is given: the other Rust
//!   contenders recycle a connection without a round trip (deadpool's `RecyclingMethod::Fast`),
//!   and SQLx documents the option for that purpose. Every other option is SQLx's default.
//! - **Statements.** `sqlx::query(..).bind(..)` with `fetch_one`/`fetch_all`/`execute`: SQLx
//!   prepares each statement once per connection and keeps it in the connection's statement cache
//!   (persistent statements, SQLx's default). Transactions are `pool.begin()` .. `commit()`.
//! - **Clients.** N tokio tasks on a multi-thread runtime with one worker per CPU. Each task
//!   checks a connection out of the pool per transaction, as a service handling requests does.
//! - **Window.** The clients run for the warm-up (default 1 s), then the completed transactions
//!   and the failed ones are counted for S seconds; `seconds` is the measured window, `tps` is
//!   `transactions / seconds`. A failed transaction (an error from the server, such as an InnoDB
//!   deadlock under `read_write`) is rolled back, counted in `errors`, not in `transactions`, and
//!   the client goes on; the first error is printed on stderr.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sqlx::mysql::{MySqlPool, MySqlPoolOptions};
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::{Pool, Row};

/// The harnesses' command line (flags in, one JSON line out), shared as source with the
/// async-SQLite peers' harness.
#[path = "../../../../examples/throughput/cli.rs"]
mod cli;

use cli::{Flag, required};

/// pgbench's select-only script (`-S`).
const PG_SELECT: &str = "SELECT abalance FROM pgbench_accounts WHERE aid = $1";
/// pgbench's TPC-B-like script, in its order, inside one transaction.
const PG_TPCB: [&str; 5] = [
    "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
    "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
    "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
    "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
];
/// pgbench's accounts, tellers and branches per unit of scale.
const PG_ACCOUNTS_PER_SCALE: i32 = 100_000;
const PG_TELLERS_PER_SCALE: i32 = 10;
/// pgbench's TPC-B-like delta: `random(-5000, 5000)`.
const PG_DELTA: i32 = 5000;

/// sysbench's `oltp_common.lua` statements for table 1 (`--tables=1`, its default).
const SB_POINT_SELECT: &str = "SELECT c FROM sbtest1 WHERE id=?";
const SB_SIMPLE_RANGE: &str = "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?";
const SB_SUM_RANGE: &str = "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?";
const SB_ORDER_RANGE: &str = "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c";
const SB_DISTINCT_RANGE: &str =
    "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c";
const SB_INDEX_UPDATE: &str = "UPDATE sbtest1 SET k=k+1 WHERE id=?";
const SB_NON_INDEX_UPDATE: &str = "UPDATE sbtest1 SET c=? WHERE id=?";
const SB_DELETE: &str = "DELETE FROM sbtest1 WHERE id=?";
const SB_INSERT: &str = "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)";
/// sysbench's `oltp_read_write` defaults: statements per event.
const SB_POINT_SELECTS: usize = 10;
/// sysbench's `--range_size` default.
const SB_RANGE_SIZE: i32 = 100;
/// sysbench's templates for `c` (10 groups, 119 characters) and `pad` (5 groups, 59 characters):
/// every `#` becomes a random digit.
const SB_C_TEMPLATE: &str = "###########-###########-###########-###########-###########-###########-###########-###########-###########-###########";
const SB_PAD_TEMPLATE: &str = "###########-###########-###########-###########-###########";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    Postgres,
    MySql,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    /// pgbench `-S`.
    Select,
    /// pgbench's TPC-B-like script.
    TpcB,
    /// sysbench `oltp_point_select`.
    PointSelect,
    /// sysbench `oltp_read_write`.
    ReadWrite,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Postgres => "postgres",
            Engine::MySql => "mysql",
        }
    }
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Select => "select",
            Workload::TpcB => "tpcb",
            Workload::PointSelect => "point_select",
            Workload::ReadWrite => "read_write",
        }
    }

    fn engine(self) -> Engine {
        match self {
            Workload::Select | Workload::TpcB => Engine::Postgres,
            Workload::PointSelect | Workload::ReadWrite => Engine::MySql,
        }
    }
}

#[derive(Debug)]
struct Args {
    engine: Engine,
    url: String,
    workload: Workload,
    clients: u32,
    seconds: f64,
    warmup: f64,
    /// pgbench's scale (`-s` of its `-i` step).
    scale: i32,
    /// sysbench's `--table-size`.
    table_size: i32,
    test_before_acquire: bool,
}

const USAGE: &str = "usage: sqlx_throughput --engine postgres|mysql --url URL \
--workload select|tpcb|point_select|read_write --clients N --seconds S [--warmup W] \
[--scale K] [--table-size R] [--test-before-acquire]";

impl Args {
    fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
        let (mut engine, mut url, mut workload, mut clients, mut seconds) =
            (None, None, None, None, None);
        let mut warmup = 1.0;
        let mut scale = 1;
        let mut table_size = 100_000;
        let mut test_before_acquire = false;
        while let Some(flag) = Flag::next(&mut it, &["--test-before-acquire"]) {
            let flag = flag?;
            match flag.name.as_str() {
                "--test-before-acquire" => test_before_acquire = true,
                "--engine" => {
                    engine = Some(match flag.value.as_str() {
                        "postgres" => Engine::Postgres,
                        "mysql" => Engine::MySql,
                        _ => return Err(flag.bad("postgres or mysql")),
                    });
                }
                "--url" => url = Some(flag.value),
                "--workload" => {
                    workload = Some(match flag.value.as_str() {
                        "select" => Workload::Select,
                        "tpcb" => Workload::TpcB,
                        "point_select" => Workload::PointSelect,
                        "read_write" => Workload::ReadWrite,
                        _ => return Err(flag.bad("select, tpcb, point_select or read_write")),
                    });
                }
                "--clients" => clients = Some(flag.parse(|&n: &u32| n > 0, "a positive count")?),
                "--seconds" => {
                    seconds = Some(flag.parse(
                        |&s: &f64| s.is_finite() && s > 0.0,
                        "a positive number of seconds",
                    )?);
                }
                "--warmup" => {
                    warmup =
                        flag.parse(|&s: &f64| s.is_finite() && s >= 0.0, "a number of seconds")?;
                }
                "--scale" => {
                    scale = flag.parse(
                        |&k: &i32| k > 0 && k <= i32::MAX / PG_ACCOUNTS_PER_SCALE,
                        "a positive pgbench scale",
                    )?;
                }
                "--table-size" => {
                    table_size = flag.parse(|&r: &i32| r > 0, "a positive row count")?;
                }
                _ => return Err(format!("unknown flag {}", flag.name)),
            }
        }
        let engine = required(engine, "--engine")?;
        let workload = required(workload, "--workload")?;
        if workload.engine() != engine {
            return Err(format!(
                "workload {} is not a {} workload (postgres: select, tpcb; mysql: point_select, read_write)",
                workload.name(),
                engine.name()
            ));
        }
        Ok(Args {
            engine,
            url: required(url, "--url")?,
            workload,
            clients: required(clients, "--clients")?,
            seconds: required(seconds, "--seconds")?,
            warmup,
            scale,
            table_size,
            test_before_acquire,
        })
    }
}

/// A small per-client generator (xorshift), the same as the main crate's throughput examples.
struct Rng(u64);

impl Rng {
    fn for_client(k: u32) -> Rng {
        Rng(0x9E37_79B9_7F4A_7C15 ^ ((u64::from(k) + 1) << 20))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i32, hi: i32) -> i32 {
        let span = u64::try_from(i64::from(hi) - i64::from(lo) + 1).expect("lo <= hi");
        let offset = i64::try_from(self.next() % span).expect("span fits i64");
        i32::try_from(i64::from(lo) + offset).expect("in lo..=hi")
    }

    /// sysbench's `sysbench.rand.string(template)`: every `#` becomes a random digit.
    fn fill(&mut self, template: &str) -> String {
        template
            .chars()
            .map(|ch| {
                if ch == '#' {
                    char::from(b'0' + u8::try_from(self.next() % 10).expect("a digit"))
                } else {
                    ch
                }
            })
            .collect()
    }
}

#[derive(Clone)]
enum Client {
    Pg(PgPool),
    My(MySqlPool),
}

impl Client {
    async fn connect(args: &Args) -> Result<Client, String> {
        let n = args.clients;
        match args.engine {
            Engine::Postgres => {
                let pool = PgPoolOptions::new()
                    .max_connections(n)
                    .min_connections(n)
                    .test_before_acquire(args.test_before_acquire)
                    .connect(&args.url)
                    .await
                    .map_err(|e| format!("connect to Postgres: {e}"))?;
                open_all(&pool, n).await?;
                Ok(Client::Pg(pool))
            }
            Engine::MySql => {
                let pool = MySqlPoolOptions::new()
                    .max_connections(n)
                    .min_connections(n)
                    .test_before_acquire(args.test_before_acquire)
                    .connect(&args.url)
                    .await
                    .map_err(|e| format!("connect to MySQL: {e}"))?;
                open_all(&pool, n).await?;
                Ok(Client::My(pool))
            }
        }
    }

    /// Fails unless the dataset the workload expects is there.
    async fn check_dataset(&self, args: &Args) -> Result<(), String> {
        match self {
            Client::Pg(pool) => {
                let branches: i64 = sqlx::query("SELECT count(*) FROM pgbench_branches")
                    .fetch_one(pool)
                    .await
                    .and_then(|r| r.try_get(0))
                    .map_err(|e| format!("pgbench's tables (run `pgbench -i`): {e}"))?;
                if branches != i64::from(args.scale) {
                    return Err(format!(
                        "pgbench_branches holds {branches} rows, scale {} expects {} (pass --scale or rerun `pgbench -i -s`)",
                        args.scale, args.scale
                    ));
                }
            }
            Client::My(pool) => {
                let rows: i64 = sqlx::query("SELECT COUNT(*) FROM sbtest1")
                    .fetch_one(pool)
                    .await
                    .and_then(|r| r.try_get(0))
                    .map_err(|e| {
                        format!("sysbench's table sbtest1 (run `sysbench prepare`): {e}")
                    })?;
                if rows != i64::from(args.table_size) {
                    return Err(format!(
                        "sbtest1 holds {rows} rows, --table-size is {} (pass the size `sysbench prepare` used)",
                        args.table_size
                    ));
                }
            }
        }
        Ok(())
    }

    async fn close(&self) {
        match self {
            Client::Pg(p) => p.close().await,
            Client::My(p) => p.close().await,
        }
    }

    /// One transaction of the workload, on a connection checked out for it.
    async fn transaction(&self, args: &Args, rng: &mut Rng) -> Result<(), sqlx::Error> {
        match (self, args.workload) {
            (Client::Pg(pool), Workload::Select) => {
                let aid = rng.range(1, PG_ACCOUNTS_PER_SCALE * args.scale);
                let row = sqlx::query(PG_SELECT).bind(aid).fetch_one(pool).await?;
                std::hint::black_box(row.try_get::<i32, _>(0)?);
            }
            (Client::Pg(pool), Workload::TpcB) => {
                let aid = rng.range(1, PG_ACCOUNTS_PER_SCALE * args.scale);
                let tid = rng.range(1, PG_TELLERS_PER_SCALE * args.scale);
                let bid = rng.range(1, args.scale);
                let delta = rng.range(-PG_DELTA, PG_DELTA);
                let mut tx = pool.begin().await?;
                sqlx::query(PG_TPCB[0])
                    .bind(delta)
                    .bind(aid)
                    .execute(&mut *tx)
                    .await?;
                let row = sqlx::query(PG_TPCB[1])
                    .bind(aid)
                    .fetch_one(&mut *tx)
                    .await?;
                std::hint::black_box(row.try_get::<i32, _>(0)?);
                sqlx::query(PG_TPCB[2])
                    .bind(delta)
                    .bind(tid)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query(PG_TPCB[3])
                    .bind(delta)
                    .bind(bid)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query(PG_TPCB[4])
                    .bind(tid)
                    .bind(bid)
                    .bind(aid)
                    .bind(delta)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
            }
            (Client::My(pool), Workload::PointSelect) => {
                let id = rng.range(1, args.table_size);
                let row = sqlx::query(SB_POINT_SELECT)
                    .bind(id)
                    .fetch_one(pool)
                    .await?;
                std::hint::black_box(row.try_get::<&str, _>(0)?.len());
            }
            (Client::My(pool), Workload::ReadWrite) => {
                let size = args.table_size;
                let mut tx = pool.begin().await?;
                for _ in 0..SB_POINT_SELECTS {
                    let row = sqlx::query(SB_POINT_SELECT)
                        .bind(rng.range(1, size))
                        .fetch_one(&mut *tx)
                        .await?;
                    std::hint::black_box(row.try_get::<&str, _>(0)?.len());
                }
                // The four range selects: rows fetched in full and not decoded, as sysbench does
                // (`SUM(k)` is a DECIMAL).
                for sql in [
                    SB_SIMPLE_RANGE,
                    SB_SUM_RANGE,
                    SB_ORDER_RANGE,
                    SB_DISTINCT_RANGE,
                ] {
                    let lo = rng.range(1, size);
                    let rows = sqlx::query(sql)
                        .bind(lo)
                        .bind(lo.saturating_add(SB_RANGE_SIZE - 1))
                        .fetch_all(&mut *tx)
                        .await?;
                    std::hint::black_box(rows.len());
                }
                sqlx::query(SB_INDEX_UPDATE)
                    .bind(rng.range(1, size))
                    .execute(&mut *tx)
                    .await?;
                let c = rng.fill(SB_C_TEMPLATE);
                sqlx::query(SB_NON_INDEX_UPDATE)
                    .bind(c.as_str())
                    .bind(rng.range(1, size))
                    .execute(&mut *tx)
                    .await?;
                let id = rng.range(1, size);
                let k = rng.range(1, size);
                let (c, pad) = (rng.fill(SB_C_TEMPLATE), rng.fill(SB_PAD_TEMPLATE));
                sqlx::query(SB_DELETE).bind(id).execute(&mut *tx).await?;
                sqlx::query(SB_INSERT)
                    .bind(id)
                    .bind(k)
                    .bind(c.as_str())
                    .bind(pad.as_str())
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
            }
            (_, w) => unreachable!(
                "workload {} on the other engine's pool (checked by Args)",
                w.name()
            ),
        }
        Ok(())
    }
}

/// Checks the pool's `n` connections out together, so all are open before the clock starts.
async fn open_all<DB: sqlx::Database>(pool: &Pool<DB>, n: u32) -> Result<(), String> {
    let mut held = Vec::with_capacity(usize::try_from(n).expect("a client count"));
    for _ in 0..n {
        held.push(
            pool.acquire()
                .await
                .map_err(|e| format!("open {n} connections: {e}"))?,
        );
    }
    Ok(())
}

/// What the window measured.
struct Outcome {
    transactions: u64,
    errors: u64,
    seconds: f64,
}

impl Outcome {
    fn json(&self) -> String {
        format!(
            "{{\"transactions\": {}, \"seconds\": {:.6}, \"tps\": {:.3}, \"errors\": {}}}",
            self.transactions,
            self.seconds,
            self.transactions as f64 / self.seconds,
            self.errors
        )
    }
}

async fn run(args: Arc<Args>) -> Result<Outcome, String> {
    let client = Client::connect(&args).await?;
    client.check_dataset(&args).await?;
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let reported = Arc::new(AtomicBool::new(false));
    let stopped = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for k in 0..args.clients {
        let (client, args, done, failed, reported, stopped) = (
            client.clone(),
            Arc::clone(&args),
            Arc::clone(&done),
            Arc::clone(&failed),
            Arc::clone(&reported),
            Arc::clone(&stopped),
        );
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng::for_client(k);
            while !stopped.load(Ordering::Relaxed) {
                match client.transaction(&args, &mut rng).await {
                    Ok(()) => {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        if !reported.swap(true, Ordering::Relaxed) {
                            eprintln!("sqlx_throughput: first failed transaction: {e}");
                        }
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(args.warmup)).await;
    let (done0, failed0, t0) = (
        done.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
        Instant::now(),
    );
    tokio::time::sleep(Duration::from_secs_f64(args.seconds)).await;
    let (done1, failed1, seconds) = (
        done.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
        t0.elapsed().as_secs_f64(),
    );
    stopped.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.map_err(|e| format!("a client task: {e}"))?;
    }
    client.close().await;
    Ok(Outcome {
        transactions: done1 - done0,
        errors: failed1 - failed0,
        seconds,
    })
}

fn main() {
    let args = cli::or_usage(
        "sqlx_throughput",
        Args::parse(std::env::args().skip(1)),
        USAGE,
    );
    let label = format!(
        "{} {} C={}",
        args.engine.name(),
        args.workload.name(),
        args.clients
    );
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let ran = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cpus)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))
        .and_then(|rt| rt.block_on(run(Arc::new(args))))
        .map(|o| (o.json(), o.transactions));
    cli::finish("sqlx_throughput", &label, ran);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Args, String> {
        Args::parse(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn parses_the_contract() {
        let a = parse(
            "--engine mysql --url mysql://u@h/db --workload read_write --clients 8 --seconds 5",
        )
        .expect("valid");
        assert_eq!(
            (a.engine, a.workload, a.clients),
            (Engine::MySql, Workload::ReadWrite, 8)
        );
        assert_eq!((a.seconds, a.warmup, a.table_size), (5.0, 1.0, 100_000));
        assert!(!a.test_before_acquire);
        let a = parse("--engine postgres --url u --workload tpcb --clients 64 --seconds 2.5 --warmup 0 --scale 3")
            .expect("valid");
        assert_eq!((a.workload, a.scale, a.warmup), (Workload::TpcB, 3, 0.0));
    }

    #[test]
    fn rejects_bad_lines() {
        for line in [
            "--engine postgres --url u --workload point_select --clients 8 --seconds 5",
            "--engine mysql --url u --workload select --clients 8 --seconds 5",
            "--engine postgres --url u --workload select --clients 0 --seconds 5",
            "--engine postgres --url u --workload select --clients 8",
            "--engine postgres --url u --workload select --clients 8 --seconds",
            "--engine sqlite --url u --workload select --clients 8 --seconds 5",
        ] {
            assert!(parse(line).is_err(), "accepted: {line}");
        }
    }

    #[test]
    fn draws_stay_in_range_and_fill_the_templates() {
        let mut rng = Rng::for_client(0);
        for _ in 0..10_000 {
            let v = rng.range(-PG_DELTA, PG_DELTA);
            assert!((-PG_DELTA..=PG_DELTA).contains(&v));
            assert_eq!(rng.range(1, 1), 1);
        }
        let c = rng.fill(SB_C_TEMPLATE);
        assert_eq!(c.len(), 119);
        assert!(
            c.bytes()
                .zip(SB_C_TEMPLATE.bytes())
                .all(|(v, t)| if t == b'#' {
                    v.is_ascii_digit()
                } else {
                    v == t
                })
        );
        assert_eq!(rng.fill(SB_PAD_TEMPLATE).len(), 59);
    }
}
