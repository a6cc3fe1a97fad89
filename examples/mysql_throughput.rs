//! MySQL/MariaDB throughput at saturation: sysbench's `oltp_point_select` and
//! `oltp_read_write`, run by sysbench itself (libmysqlclient or libmariadb, C), by raw
//! mysql_async (a `mysql_async::Pool`, prepared statements from its per-connection statement
//! cache) and by the crate, each with C clients on C connections, in interleaved rounds of one
//! process.
//!
//! - **Workloads.** `point_select` is sysbench's `oltp_point_select` (one
//!   `SELECT c FROM sbtest1 WHERE id=?` per event); `read_write` its `oltp_read_write` with
//!   its defaults (in one transaction: 10 point selects, one each of the simple, `SUM`,
//!   `ORDER BY` and `DISTINCT` range selects over 100 ids, an index update, a non-index update,
//!   a delete and an insert of the same id). The Rust contenders send the same statements with
//!   the same parameters, drawn uniformly (sysbench runs with `--rand-type=uniform`), and read
//!   every row. Each client of the Rust contenders checks a connection out of its pool per
//!   transaction, as a service handling requests does; sysbench keeps one connection per
//!   thread. A transaction the server aborts (deadlock 1213, lock wait timeout 1205, 1020) is
//!   rolled back and run again, as sysbench does by default; those retries are counted.
//! - **Dataset.** Made by sysbench's own `prepare` step (`--tables=1 --table-size=100000`) in a
//!   database of its own, `sysbench_sqlmw`, created when missing and reused.
//! - **Durability.** Every contender runs against the same server with its own settings
//!   (`innodb_flush_log_at_trx_commit`, `sync_binlog` and `log_bin` are printed); nothing is
//!   changed per contender.
//! - **Rounds.** Each round runs every contender for the window, in an order that rotates every
//!   round; a ratio is taken within a round, and the median over the rounds is reported. The
//!   Rust contenders warm up for a second before their window; sysbench 1.0 has no warm-up
//!   option, so its figure includes its first second.
//! - **Runtime.** The Rust contenders share one tokio multi-thread runtime with one worker per
//!   CPU; sysbench gets `--threads` = C (its model: a thread per client).
//!
//! ```sh
//! cargo run --release --features mysql --example mysql_throughput -- \
//!     [--clients 8,64] [--seconds 5] [--rounds 3] [--workload point_select,read_write] [--only NAME]
//! ```
//!
//! `--only raw|middleware|sysbench` with `--transactions N` runs one contender for a fixed
//! count (no rounds), for profilers. The server is `SQL_MIDDLEWARE_MYSQL_URL`, else
//! `mysql://root@127.0.0.1:3306/test`, else a throwaway MariaDB (as the tests find it). The
//! figures also go to
//! `<CRITERION_HOME>/throughput/mysql.json`.

#[path = "../tests/common/mysql.rs"]
mod mysql_server;
#[path = "../tests/common/unwind.rs"]
#[allow(dead_code)]
mod unwind;

#[path = "../tests/common/unique.rs"]
mod unique;

/// The one item `tests/common/mysql.rs` takes from the tests' `backends` module (which needs
/// the test harness's engine macros): a name unique to this process.
mod backends {
    pub use super::unique::unique_hex;
}

#[path = "throughput/args.rs"]
mod args;
#[path = "throughput/drive.rs"]
mod drive;
#[path = "throughput/external.rs"]
mod external;
#[path = "throughput/report.rs"]
mod report;
#[path = "throughput/sqlx.rs"]
mod sqlx;

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mysql_async::prelude::Queryable;
use rust_decimal::Decimal;
use sql_middleware::prelude::*;
use sql_middleware_bench::mysql as bm;

use args::Args;
use drive::{Rng, Stop};
use external::Contender;

const DB: &str = "sysbench_sqlmw";
/// sysbench's `--table-size`.
const TABLE_SIZE: i64 = 100_000;
/// sysbench's `--range_size` default.
const RANGE: i64 = 100;
/// sysbench's `--point_selects` default (`oltp_point_select` sets it to 1).
const POINT_SELECTS: usize = 10;

/// A workload of sysbench's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    PointSelect,
    ReadWrite,
}

impl Workload {
    const KNOWN: [(&'static str, &'static [&'static str]); 2] =
        [("point_select", &["select"]), ("read_write", &["tpcb"])];

    fn from_name(name: &str) -> Workload {
        match name {
            "point_select" => Workload::PointSelect,
            _ => Workload::ReadWrite,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Workload::PointSelect => "point_select",
            Workload::ReadWrite => "read_write",
        }
    }

    /// sysbench's script.
    fn script(self) -> &'static str {
        match self {
            Workload::PointSelect => "oltp_point_select",
            Workload::ReadWrite => "oltp_read_write",
        }
    }
}

/// sysbench's statements (oltp_common.lua), with `?` as the raw driver takes them.
mod q {
    pub const POINT: &str = "SELECT c FROM sbtest1 WHERE id=?";
    pub const SIMPLE_RANGE: &str = "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?";
    pub const SUM_RANGE: &str = "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?";
    pub const ORDER_RANGE: &str = "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c";
    pub const DISTINCT_RANGE: &str =
        "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c";
    pub const INDEX_UPDATE: &str = "UPDATE sbtest1 SET k=k+1 WHERE id=?";
    pub const NON_INDEX_UPDATE: &str = "UPDATE sbtest1 SET c=? WHERE id=?";
    pub const DELETE: &str = "DELETE FROM sbtest1 WHERE id=?";
    pub const INSERT: &str = "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)";
}

/// The same statements with the crate's `$N` placeholders (which it sends to the server as
/// the `?` above).
mod mq {
    pub const POINT: &str = "SELECT c FROM sbtest1 WHERE id=$1";
    pub const SIMPLE_RANGE: &str = "SELECT c FROM sbtest1 WHERE id BETWEEN $1 AND $2";
    pub const SUM_RANGE: &str = "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN $1 AND $2";
    pub const ORDER_RANGE: &str = "SELECT c FROM sbtest1 WHERE id BETWEEN $1 AND $2 ORDER BY c";
    pub const DISTINCT_RANGE: &str =
        "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN $1 AND $2 ORDER BY c";
    pub const INDEX_UPDATE: &str = "UPDATE sbtest1 SET k=k+1 WHERE id=$1";
    pub const NON_INDEX_UPDATE: &str = "UPDATE sbtest1 SET c=$1 WHERE id=$2";
    pub const DELETE: &str = "DELETE FROM sbtest1 WHERE id=$1";
    pub const INSERT: &str = "INSERT INTO sbtest1 (id, k, c, pad) VALUES ($1, $2, $3, $4)";
}

/// The contenders, in their first round's order.
const CONTENDERS: [&str; 3] = ["sysbench", "raw", "middleware"];

/// One `oltp_read_write` event's random inputs, drawn as sysbench draws them (uniform ids;
/// `c` and `pad` from its `###########-…` templates, one random digit per `#`).
struct Draw {
    points: [i64; POINT_SELECTS],
    /// The first ids of the simple, sum, order and distinct ranges.
    ranges: [i64; 4],
    index_update: i64,
    non_index_update: i64,
    c: String,
    delete_insert: i64,
    k: i64,
    c2: String,
    pad: String,
}

fn id(rng: &mut Rng) -> i64 {
    rng.range(1, TABLE_SIZE)
}

/// sysbench's `sysbench.rand.string` of a template of `groups` groups of 11 digits joined by
/// `-`.
fn digits(rng: &mut Rng, groups: usize) -> String {
    let mut s = String::with_capacity(groups * 12);
    for g in 0..groups {
        if g > 0 {
            s.push('-');
        }
        for _ in 0..11 {
            s.push(char::from(
                b'0' + u8::try_from(rng.next() % 10).expect("a digit"),
            ));
        }
    }
    s
}

fn draw(rng: &mut Rng) -> Draw {
    Draw {
        points: std::array::from_fn(|_| id(rng)),
        ranges: std::array::from_fn(|_| id(rng)),
        index_update: id(rng),
        non_index_update: id(rng),
        c: digits(rng, 10),
        delete_insert: id(rng),
        k: id(rng),
        c2: digits(rng, 10),
        pad: digits(rng, 5),
    }
}

fn main() {
    let args = Args::parse(&Workload::KNOWN, &["sqlx"]);
    let cpus = std::thread::available_parallelism().map_or(2, usize::from);
    let rt = drive::runtime(cpus);
    // As the tests find it: the environment's URL, else the local default, else a throwaway
    // server (stopped when this process exits).
    let base = mysql_server::driver_url(&mysql_server::base_url());
    let url = bm::url_with_database(&base, DB);
    let server = Server::from_url(&base);
    rt.block_on(prepare(&base, &url, &server));
    let settings = rt.block_on(server_settings(&url));
    eprintln!(
        "[mysql_throughput] database {DB} (sysbench prepare --tables=1 --table-size={TABLE_SIZE}); server {settings}; {cpus} runtime workers"
    );
    let sqlx = sqlx::Sqlx::find(args.binary("sqlx"), "mysql_throughput");
    let contenders = sqlx::Sqlx::joined(sqlx.as_ref(), &CONTENDERS);
    let workloads = args.workloads_as(Workload::from_name);
    if args.run_only(&workloads, Workload::name, |only, w, c, n| match only {
        "sysbench" => server.sysbench(w, c, Stop::Count(n)).done,
        side => {
            rt.block_on(rust_side(side, &url, w, c, Stop::Count(n)))
                .done
        }
    }) {
        return;
    }
    let mut results = Vec::new();
    for &w in &workloads {
        for &c in &args.clients {
            let label = format!("{} C={c}", w.name());
            let mut retried = vec![0u64; contenders.len()];
            let window = Stop::Window(Duration::from_secs(args.seconds));
            let rounds = drive::rounds(
                "mysql_throughput",
                &label,
                &contenders,
                args.rounds,
                |side| {
                    let run = match (side, &sqlx) {
                        ("sysbench", _) => server.sysbench(w, c, window),
                        ("sqlx", Some(x)) => Run {
                            // The binary counts failed transactions and fails on any; SQLx
                            // retries nothing itself.
                            done: (x.tps("mysql", &url, w.name(), c, args.seconds)
                                * args.seconds as f64) as u64,
                            retried: 0,
                        },
                        (side, _) => rt.block_on(rust_side(side, &url, w, c, window)),
                    };
                    let i = contenders.iter().position(|s| *s == side).expect("a side");
                    retried[i] += run.retried;
                    run.done as f64 / args.seconds as f64
                },
            );
            results.push(
                report::Line::new(w.name(), c, &contenders, &rounds)
                    .with_errors("retried", &retried),
            );
        }
    }
    report::print_and_save("mysql", &settings, &results);
}

/// What one run of a contender did.
struct Run {
    /// Transactions done (in the window).
    done: u64,
    /// Transactions the server aborted and the client ran again.
    retried: u64,
}

/// The server as sysbench's command line names it.
struct Server {
    host: String,
    port: u16,
    user: String,
    password: Option<String>,
}

impl Server {
    fn from_url(url: &str) -> Server {
        let opts = bm::raw_opts(url).expect("a MySQL URL");
        Server {
            host: opts.ip_or_hostname().to_owned(),
            port: opts.tcp_port(),
            user: opts.user().unwrap_or("root").to_owned(),
            password: opts.pass().map(str::to_owned),
        }
    }

    fn args(&self, script: &str) -> Vec<String> {
        let mut a = vec![
            script.to_owned(),
            "--db-driver=mysql".to_owned(),
            format!("--mysql-host={}", self.host),
            format!("--mysql-port={}", self.port),
            format!("--mysql-user={}", self.user),
            format!("--mysql-db={DB}"),
            "--tables=1".to_owned(),
            format!("--table-size={TABLE_SIZE}"),
            "--rand-type=uniform".to_owned(),
        ];
        if let Some(p) = &self.password {
            a.push(format!("--mysql-password={p}"));
        }
        a
    }

    fn run(&self, args: &[String]) -> String {
        let out = std::process::Command::new("sysbench")
            .args(args)
            .output()
            .expect("sysbench is installed (Debian: sysbench)");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "sysbench failed: {}{}",
            text,
            String::from_utf8_lossy(&out.stderr)
        );
        text
    }

    /// sysbench's own figures: `transactions: N (X per sec.)` and `ignored errors: N`.
    fn sysbench(&self, w: Workload, clients: usize, stop: Stop) -> Run {
        let mut a = self.args(w.script());
        a.push(format!("--threads={clients}"));
        match stop {
            Stop::Window(d) => {
                a.push(format!("--time={}", d.as_secs()));
                a.push("--events=0".to_owned());
            }
            Stop::Count(n) => {
                a.push("--time=0".to_owned());
                a.push(format!("--events={n}"));
            }
        }
        a.push("run".to_owned());
        let text = self.run(&a);
        let field = |name: &str| -> u64 {
            text.lines()
                .map(str::trim)
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| u64::from_str(v).ok())
                .unwrap_or_else(|| panic!("no `{name}` in sysbench's output: {text}"))
        };
        let done = field("transactions:");
        let retried = field("ignored errors:");
        if let Stop::Window(d) = stop {
            // The rate sysbench prints is over its own elapsed time; report that.
            let per_sec = text
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("transactions:"))
                .and_then(|l| l.split('(').nth(1))
                .and_then(|r| r.split_whitespace().next())
                .and_then(|v| f64::from_str(v).ok())
                .unwrap_or_else(|| panic!("no rate in sysbench's output: {text}"));
            return Run {
                done: (per_sec * d.as_secs_f64()).round() as u64,
                retried,
            };
        }
        Run { done, retried }
    }
}

/// Creates the database and sysbench's table when missing (sysbench's own `prepare`).
async fn prepare(base: &str, url: &str, server: &Server) {
    let mut admin = bm::connect_raw(base).await.expect("connect to the server");
    admin
        .query_drop(format!("CREATE DATABASE IF NOT EXISTS {DB}"))
        .await
        .expect("create the sysbench database");
    drop(admin);
    let mut db = bm::connect_raw(url)
        .await
        .expect("connect to the sysbench database");
    let rows: Option<i64> = db
        .query_first("SELECT COUNT(*) FROM sbtest1")
        .await
        .ok()
        .flatten();
    if rows != Some(TABLE_SIZE) {
        if rows.is_some() {
            db.query_drop("DROP TABLE sbtest1")
                .await
                .expect("drop a partial sbtest1");
        }
        let mut a = server.args("oltp_read_write");
        a.push("prepare".to_owned());
        server.run(&a);
    }
}

async fn server_settings(url: &str) -> String {
    let mut c = bm::connect_raw(url).await.expect("connect");
    let mut parts = Vec::new();
    for s in [
        "version",
        "innodb_flush_log_at_trx_commit",
        "sync_binlog",
        "log_bin",
        "max_connections",
    ] {
        let v: Option<String> = c
            .query_first(format!("SELECT CAST(@@{s} AS CHAR)"))
            .await
            .expect("a server variable");
        parts.push(format!("{s}={}", v.unwrap_or_default()));
    }
    parts.join(" ")
}

/// Runs `clients` clients of `side` (`raw` or `middleware`).
async fn rust_side(side: &str, url: &str, w: Workload, clients: usize, stop: Stop) -> Run {
    let pool = Pool::new(side, url, clients).await;
    let retried = Arc::new(AtomicU64::new(0));
    let workers = (0..clients)
        .map(|k| Worker {
            pool: pool.clone(),
            rng: Rng::for_client(k),
            w,
            retried: Arc::clone(&retried),
        })
        .collect();
    let done = drive::drive(workers, stop).await;
    pool.close().await;
    Run {
        done,
        retried: retried.load(Ordering::Relaxed),
    }
}

/// One client of a Rust contender.
struct Worker {
    pool: Pool,
    rng: Rng,
    w: Workload,
    retried: Arc<AtomicU64>,
}

impl drive::Client for Worker {
    async fn transaction(&mut self) {
        match self.w {
            Workload::PointSelect => {
                let id = id(&mut self.rng);
                self.pool.point_select(id).await;
            }
            Workload::ReadWrite => {
                let d = draw(&mut self.rng);
                while !self.pool.read_write(&d).await {
                    self.retried.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// One Rust contender's pool.
#[derive(Clone)]
enum Pool {
    Raw(mysql_async::Pool),
    Middleware(ConfigAndPool),
}

/// The errors sysbench ignores by default (`--mysql-ignore-errors=1213,1020,1205`), which make
/// it run the event again.
fn raw_retryable(e: &mysql_async::Error) -> bool {
    matches!(e, mysql_async::Error::Server(s) if matches!(s.code, 1213 | 1020 | 1205))
}

fn middleware_retryable(e: &SqlMiddlewareDbError) -> bool {
    e.is_retryable() || matches!(e.driver_code(), Some("1213" | "1020" | "1205"))
}

impl Pool {
    async fn new(side: &str, url: &str, size: usize) -> Pool {
        let p = match side {
            // The driver's pool of exactly `size` connections, keeping each connection's
            // session and statement cache between borrowers (the driver's documented opt-out
            // of `COM_RESET_CONNECTION` "to increase overall performance").
            "raw" => Pool::Raw(bm::raw_pool(url, size, false).expect("mysql_async pool")),
            "middleware" => Pool::Middleware(
                sql_middleware_bench::plain(
                    ConfigAndPool::from_url(url)
                        .expect("the middleware URL")
                        .max_size(size),
                )
                .build()
                .await
                .expect("the middleware pool"),
            ),
            other => panic!("unknown contender `{other}` (sysbench, raw, middleware)"),
        };
        // Open every connection before the clock starts.
        match &p {
            Pool::Raw(pool) => {
                let mut held = Vec::new();
                for _ in 0..size {
                    held.push(pool.get_conn().await.expect("raw checkout"));
                }
            }
            Pool::Middleware(pool) => {
                let mut held = Vec::new();
                for _ in 0..size {
                    held.push(pool.get_connection().await.expect("checkout"));
                }
            }
        }
        p
    }

    async fn close(self) {
        match self {
            Pool::Raw(p) => p.disconnect().await.expect("disconnect the raw pool"),
            Pool::Middleware(p) => p.close(),
        }
    }

    async fn point_select(&self, id: i64) {
        match self {
            Pool::Raw(p) => {
                let mut c = p.get_conn().await.expect("raw checkout");
                let row: Option<String> = c.exec_first(q::POINT, (id,)).await.expect("select");
                std::hint::black_box(row);
            }
            Pool::Middleware(p) => {
                let mut c = p.get_connection().await.expect("checkout");
                let row: Option<(String,)> = c
                    .query(mq::POINT)
                    .params(&[RowValues::Int(id)])
                    .optional()
                    .await
                    .expect("select");
                std::hint::black_box(row);
            }
        }
    }

    /// One `oltp_read_write` event; false when the server aborted it (rolled back).
    async fn read_write(&self, d: &Draw) -> bool {
        match self {
            Pool::Raw(p) => match raw_read_write(p, d).await {
                Ok(()) => true,
                Err(e) if raw_retryable(&e) => false,
                Err(e) => panic!("raw read_write: {e}"),
            },
            Pool::Middleware(p) => match middleware_read_write(p, d).await {
                Ok(()) => true,
                Err(e) if middleware_retryable(&e) => false,
                Err(e) => panic!("middleware read_write: {e}"),
            },
        }
    }
}

async fn raw_read_write(p: &mysql_async::Pool, d: &Draw) -> Result<(), mysql_async::Error> {
    let mut c = p.get_conn().await?;
    // Dropped on an error: the driver rolls the transaction back.
    let mut tx = c.start_transaction(mysql_async::TxOpts::default()).await?;
    for &id in &d.points {
        let row: Option<String> = tx.exec_first(q::POINT, (id,)).await?;
        std::hint::black_box(row);
    }
    let [simple, sum, order, distinct] = d.ranges;
    let rows: Vec<String> = tx
        .exec(q::SIMPLE_RANGE, (simple, simple + RANGE - 1))
        .await?;
    std::hint::black_box(rows);
    let total: Option<Option<String>> = tx.exec_first(q::SUM_RANGE, (sum, sum + RANGE - 1)).await?;
    std::hint::black_box(total);
    let rows: Vec<String> = tx.exec(q::ORDER_RANGE, (order, order + RANGE - 1)).await?;
    std::hint::black_box(rows);
    let rows: Vec<String> = tx
        .exec(q::DISTINCT_RANGE, (distinct, distinct + RANGE - 1))
        .await?;
    std::hint::black_box(rows);
    tx.exec_drop(q::INDEX_UPDATE, (d.index_update,)).await?;
    tx.exec_drop(q::NON_INDEX_UPDATE, (d.c.as_str(), d.non_index_update))
        .await?;
    tx.exec_drop(q::DELETE, (d.delete_insert,)).await?;
    tx.exec_drop(
        q::INSERT,
        (d.delete_insert, d.k, d.c2.as_str(), d.pad.as_str()),
    )
    .await?;
    tx.commit().await
}

async fn middleware_read_write(p: &ConfigAndPool, d: &Draw) -> Result<(), SqlMiddlewareDbError> {
    let mut c = p.get_connection().await?;
    // Dropped on an error: rolled back.
    let mut tx = c.begin().await?;
    let int = RowValues::Int;
    for &id in &d.points {
        let row: Option<(String,)> = tx.query(mq::POINT).params(&[int(id)]).optional().await?;
        std::hint::black_box(row);
    }
    let [simple, sum, order, distinct] = d.ranges;
    let rows: Vec<(String,)> = tx
        .query(mq::SIMPLE_RANGE)
        .params(&[int(simple), int(simple + RANGE - 1)])
        .all()
        .await?;
    std::hint::black_box(rows);
    let total: Option<(Option<Decimal>,)> = tx
        .query(mq::SUM_RANGE)
        .params(&[int(sum), int(sum + RANGE - 1)])
        .optional()
        .await?;
    std::hint::black_box(total);
    let rows: Vec<(String,)> = tx
        .query(mq::ORDER_RANGE)
        .params(&[int(order), int(order + RANGE - 1)])
        .all()
        .await?;
    std::hint::black_box(rows);
    let rows: Vec<(String,)> = tx
        .query(mq::DISTINCT_RANGE)
        .params(&[int(distinct), int(distinct + RANGE - 1)])
        .all()
        .await?;
    std::hint::black_box(rows);
    tx.query(mq::INDEX_UPDATE)
        .params(&[int(d.index_update)])
        .dml()
        .await?;
    tx.query(mq::NON_INDEX_UPDATE)
        .params(&[RowValues::Text(d.c.clone()), int(d.non_index_update)])
        .dml()
        .await?;
    tx.query(mq::DELETE)
        .params(&[int(d.delete_insert)])
        .dml()
        .await?;
    tx.query(mq::INSERT)
        .params(&[
            int(d.delete_insert),
            int(d.k),
            RowValues::Text(d.c2.clone()),
            RowValues::Text(d.pad.clone()),
        ])
        .dml()
        .await?;
    tx.commit().await
}
