//! SQLite throughput at saturation: point lookups, and a mixed workload of 90% lookups and 10%
//! single-row writes, from T concurrent tasks on a WAL file database of 100,000 rows, run by
//! raw rusqlite, by the crate (its default pool, and its single-writer pool on the mixed
//! workload) and by the async-SQLite peers (deadpool-sqlite, tokio-rusqlite), in interleaved
//! rounds.
//!
//! - **Workloads.** `lookup`: `SELECT id, name, score, active FROM test WHERE id = ?1` by a
//!   uniformly drawn id, the row decoded. `mixed`: each transaction draws a number; 90% are
//!   that lookup, 5% `UPDATE test SET score = score + 1 WHERE id = ?1`, 5% an `INSERT` of one
//!   row into a side table (each in autocommit). The statements, the mix, the draws and the
//!   client loop are in `throughput/sqlite_workload.rs`, which the peers' binary shares.
//! - **Contenders.** Each has T connections (the pool sized to the task count). `raw`:
//!   rusqlite with T connections opened with the crate's settings (the
//!   same open flags, WAL, `foreign_keys=ON`, a 5 s busy timeout, a 128-statement cache), each
//!   transaction checks one out (a semaphore over the set) and runs it on
//!   `tokio::task::spawn_blocking` with `prepare_cached`. `raw_inline`: the same connections,
//!   each transaction run on the calling task (blocking its executor thread for the call and
//!   any lock wait), which is what the crate's default execution model does with a statement
//!   that stays under its budget. `middleware`: the crate's default
//!   mode (`ConfigAndPool::sqlite(path).max_size(T)`: every connection may write),
//!   `get_connection()` then `query(..).params(..).one()` or `.dml()`.
//!   `single_writer` (mixed only): `PoolBuilder::single_writer(T - 1)`, lookups on
//!   `reader()`, writes through `db.dml(..)` (the one writer, whose rounds commit the writes
//!   that queued together), T connections in all (at least one reader).
//! - **The async-SQLite peers** (both workloads, when `--peers PATH` or
//!   `SQLITE_PEERS_THROUGHPUT` names the peer harness's `peers_throughput` binary; see
//!   `throughput/peers.rs`): `deadpool_sqlite`, a pool of T, `pool.get().await?.interact(|c| ..)`
//!   per transaction; `tokio_rusqlite`, T connections (each a background thread), one per task,
//!   `conn.call(|c| ..)` per transaction; both with `prepare_cached` and connections set up as
//!   the raw ones (checked). Each runs in its own process, once per round and per peer.
//! - **Busy.** A transaction that still meets `SQLITE_BUSY` after the busy timeout is counted
//!   and run again; the counts are printed per contender.
//! - **Durability.** WAL, and `synchronous` as the crate leaves it (SQLite's default); the raw
//!   side's connections are checked to have the same level, which is printed.
//! - **Rounds.** Each round runs every contender for the window after a one-second warm-up, in
//!   an order that rotates every round; a ratio is taken within a round, and the median over
//!   the rounds is reported. One tokio multi-thread runtime with a worker per CPU.
//!
//! ```sh
//! cargo run --release --features sqlite --example sqlite_throughput -- \
//!     [--clients 8,64] [--seconds 5] [--rounds 3] [--workload lookup,mixed] [--only NAME] \
//!     [--peers PATH]
//! ```
//!
//! `--only raw|raw_inline|middleware|single_writer --transactions N` runs one contender for a
//! fixed count, for profilers (the peers are profiled through their binary). The database is
//! `sqlmw_throughput/lookup_100000.db` under the system's temporary directory, built once and
//! reused. The figures also go to `<CRITERION_HOME>/throughput/sqlite.json`.

#[path = "throughput/args.rs"]
mod args;
#[path = "throughput/drive.rs"]
mod drive;
#[path = "throughput/external.rs"]
mod external;
#[path = "throughput/peers.rs"]
mod peers;
#[path = "throughput/report.rs"]
mod report;
#[path = "throughput/sqlite_workload.rs"]
mod workload;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sql_middleware::drivers::rusqlite;
use sql_middleware::prelude::*;
use sql_middleware_bench::dataset::{BenchRow, LOOKUP_SQL_DOLLAR, LOOKUP_SQL_QMARK};
use sql_middleware_bench::sqlite::{self as bs, decode_row};

use args::Args;
use drive::Stop;
use external::Contender;
use peers::Peers;
use workload::{LOG_SCHEMA, Op, ROWS, Run, Workload};

const UPDATE_DOLLAR: &str = "UPDATE test SET score = score + 1 WHERE id = $1";
const INSERT_DOLLAR: &str = "INSERT INTO throughput_log (ref, note) VALUES ($1, $2)";

const LOOKUP_CONTENDERS: [&str; 3] = ["raw", "raw_inline", "middleware"];
const MIXED_CONTENDERS: [&str; 4] = ["raw", "raw_inline", "middleware", "single_writer"];

fn main() {
    let args = Args::parse(&Workload::KNOWN, &["peers"]);
    let workloads =
        args.workloads_as(|w| Workload::parse(w).expect("a workload of Workload::KNOWN"));
    let cpus = std::thread::available_parallelism().map_or(2, usize::from);
    let rt = drive::runtime(cpus);
    let path = std::env::temp_dir()
        .join("sqlmw_throughput")
        .join(format!("lookup_{ROWS}.db"));
    let built = bs::ensure_lookup_db(&path, ROWS as usize).expect("the lookup database");
    {
        let c = bs::open_raw(&path).expect("open the database");
        c.execute_batch(LOG_SCHEMA).expect("the side table");
        c.execute_batch("DELETE FROM throughput_log")
            .expect("empty the side table");
    }
    let (settings, pragmas) = rt.block_on(settings(&path));
    eprintln!(
        "[sqlite_throughput] {ROWS} rows ({}); {settings}; a connection per task for every contender; {cpus} runtime workers",
        if built { "built" } else { "reused" }
    );
    let setup = Setup { path, pragmas };
    if args.run_only(&workloads, Workload::name, |only, w, c, n| {
        let run = rt.block_on(run_side(only, &setup, w, c, Stop::Count(n)));
        eprintln!("busy: {}", run.busy);
        run.done
    }) {
        return;
    }
    let peers = Peers::find(args.binary("peers"), "sqlite_throughput");
    let mut results = Vec::new();
    for &w in &workloads {
        for &c in &args.clients {
            let label = format!("{} C={c}", w.name());
            let window = Stop::Window(Duration::from_secs(args.seconds));
            let contenders = Peers::joined(
                peers.as_ref(),
                match w {
                    Workload::Lookup => &LOOKUP_CONTENDERS,
                    Workload::Mixed => &MIXED_CONTENDERS,
                },
            );
            let mut busy = vec![0u64; contenders.len()];
            let rounds = drive::rounds(
                "sqlite_throughput",
                &label,
                &contenders,
                args.rounds,
                |side| {
                    let i = contenders.iter().position(|s| *s == side).expect("a side");
                    match &peers {
                        Some(p) if peers::NAMES.contains(&side) => {
                            let r =
                                p.run(side, &setup.path, w.name(), c, args.seconds, &setup.pragmas);
                            busy[i] += r.busy;
                            r.tps
                        }
                        _ => {
                            let r = rt.block_on(run_side(side, &setup, w, c, window));
                            busy[i] += r.busy;
                            r.done as f64 / args.seconds as f64
                        }
                    }
                },
            );
            let line =
                report::Line::new(w.name(), c, &contenders, &rounds).with_errors("busy", &busy);
            results.push(line);
        }
    }
    report::print_and_save("sqlite", &settings, &results);
}

/// The database every contender runs on.
struct Setup {
    path: PathBuf,
    /// The raw connections' settings as `workload::settings_of` gives them: the peers' connections
    /// are checked to run with the same.
    pragmas: String,
}

/// The settings both sides run with (checked equal): the line printed and saved with the figures,
/// and the raw connections' `workload::settings_of`.
async fn settings(path: &Path) -> (String, String) {
    let db = ConfigAndPool::sqlite(path)
        .build()
        .await
        .expect("the middleware pool");
    let mut c = db.get_connection().await.expect("checkout");
    let (mw_journal,): (String,) = c
        .query("PRAGMA journal_mode")
        .one()
        .await
        .expect("journal_mode");
    let (mw_sync,): (i64,) = c
        .query("PRAGMA synchronous")
        .one()
        .await
        .expect("synchronous");
    drop(c);
    db.close();
    let raw = bs::open_raw(path).expect("open the database");
    let raw_journal: String = raw
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .expect("journal_mode");
    let raw_sync: i64 = raw
        .query_row("PRAGMA synchronous", [], |r| r.get(0))
        .expect("synchronous");
    assert_eq!(
        (mw_journal.to_lowercase(), mw_sync),
        (raw_journal.to_lowercase(), raw_sync),
        "the raw connections must run with the crate's journal mode and synchronous level"
    );
    let pragmas = workload::settings_of(&raw).expect("the raw connection's settings");
    let level = match raw_sync {
        0 => "OFF",
        1 => "NORMAL",
        2 => "FULL",
        _ => "EXTRA",
    };
    let line = format!(
        "journal_mode={raw_journal} synchronous={level} busy_timeout={}s sqlite {}",
        bs::BUSY_TIMEOUT.as_secs(),
        rusqlite::version()
    );
    (line, pragmas)
}

/// Runs contender `side` from `clients` tasks, a connection each, until `stop`.
async fn run_side(side: &str, setup: &Setup, w: Workload, clients: usize, stop: Stop) -> Run {
    let pool = Pool::new(side, setup, clients).await;
    let run = workload::run_clients((0..clients).map(|_| pool.clone()).collect(), w, stop).await;
    pool.close();
    run
}

/// Raw rusqlite: a fixed set of connections, one per permit.
struct RawPool {
    conns: Mutex<Vec<rusqlite::Connection>>,
    permits: tokio::sync::Semaphore,
}

impl RawPool {
    /// Takes a connection, waiting for a permit; give it back with [`Self::put`] before the
    /// permit drops.
    async fn take(&self) -> (tokio::sync::SemaphorePermit<'_>, rusqlite::Connection) {
        let permit = self.permits.acquire().await.expect("the semaphore");
        let c = self
            .conns
            .lock()
            .expect("the connections")
            .pop()
            .expect("a connection per permit");
        (permit, c)
    }

    fn put(&self, c: rusqlite::Connection) {
        self.conns.lock().expect("the connections").push(c);
    }
}

/// A contender's connections, one handle cloned into each of its clients.
#[derive(Clone)]
enum Pool {
    Raw(Arc<RawPool>),
    RawInline(Arc<RawPool>),
    Middleware(ConfigAndPool),
    SingleWriter(ConfigAndPool),
}

impl Pool {
    /// `side`'s pool of `size` connections.
    async fn new(side: &str, setup: &Setup, size: usize) -> Pool {
        let p = match side {
            "raw" | "raw_inline" => {
                let conns = (0..size)
                    .map(|_| bs::open_raw(&setup.path).expect("open a raw connection"))
                    .collect();
                let p = Arc::new(RawPool {
                    conns: Mutex::new(conns),
                    permits: tokio::sync::Semaphore::new(size),
                });
                if side == "raw" {
                    Pool::Raw(p)
                } else {
                    Pool::RawInline(p)
                }
            }
            "middleware" => Pool::Middleware(
                sql_middleware_bench::plain(ConfigAndPool::sqlite(&setup.path).max_size(size))
                    .build()
                    .await
                    .expect("the middleware pool"),
            ),
            "single_writer" => Pool::SingleWriter(
                sql_middleware_bench::plain(
                    ConfigAndPool::sqlite(&setup.path).single_writer(size.saturating_sub(1).max(1)),
                )
                .build()
                .await
                .expect("the single-writer pool"),
            ),
            other => {
                panic!("unknown contender `{other}` (raw, raw_inline, middleware, single_writer)")
            }
        };
        // Open every connection before the clock starts.
        match &p {
            Pool::Raw(_) | Pool::RawInline(_) => {}
            Pool::Middleware(db) => {
                let mut held = Vec::new();
                for _ in 0..size {
                    held.push(db.get_connection().await.expect("checkout"));
                }
            }
            Pool::SingleWriter(db) => {
                let mut held = vec![db.get_connection().await.expect("the writer")];
                for _ in 1..size.max(2) {
                    held.push(db.reader().await.expect("a reader"));
                }
            }
        }
        p
    }

    fn close(&self) {
        match self {
            Pool::Raw(_) | Pool::RawInline(_) => {}
            Pool::Middleware(db) | Pool::SingleWriter(db) => db.close(),
        }
    }
}

impl workload::Side for Pool {
    /// One transaction; false when it met `SQLITE_BUSY`.
    async fn run(&self, op: Op, note: u64) -> bool {
        match self {
            Pool::Raw(p) => {
                let (_permit, c) = p.take().await;
                let (c, r) = tokio::task::spawn_blocking(move || {
                    let r = workload::run_op(&c, op, note);
                    (c, r)
                })
                .await
                .expect("a blocking task");
                p.put(c);
                workload::outcome("raw", r)
            }
            Pool::RawInline(p) => {
                let (_permit, c) = p.take().await;
                let r = workload::run_op(&c, op, note);
                p.put(c);
                workload::outcome("raw", r)
            }
            Pool::Middleware(db) => {
                let r = match db.get_connection().await {
                    Ok(mut c) => middleware_op(&mut c, op, note).await,
                    Err(e) => Err(e),
                };
                middleware_outcome(r)
            }
            Pool::SingleWriter(db) => {
                let r = match op {
                    Op::Lookup(_) => match db.reader().await {
                        Ok(mut c) => middleware_op(&mut c, op, note).await,
                        Err(e) => Err(e),
                    },
                    // Writes share the writer's commits (`ConfigAndPool::dml`: group commit).
                    Op::Update(id) => db.dml(UPDATE_DOLLAR, &[RowValues::Int(id)]).await.map(drop),
                    Op::Insert(id) => db
                        .dml(
                            INSERT_DOLLAR,
                            &[RowValues::Int(id), RowValues::Text(format!("note {note}"))],
                        )
                        .await
                        .map(drop),
                };
                middleware_outcome(r)
            }
        }
    }
}

fn middleware_outcome(r: Result<(), SqlMiddlewareDbError>) -> bool {
    match r {
        Ok(()) => true,
        Err(e) if e.kind() == ErrorKind::Busy => false,
        Err(e) => panic!("middleware {e}"),
    }
}

async fn middleware_op(
    c: &mut MiddlewarePoolConnection,
    op: Op,
    note: u64,
) -> Result<(), SqlMiddlewareDbError> {
    match op {
        Op::Lookup(id) => {
            let row: BenchRow = c
                .query(LOOKUP_SQL_DOLLAR)
                .params(&[RowValues::Int(id)])
                .one()
                .await?;
            std::hint::black_box(row);
        }
        Op::Update(id) => {
            c.query(UPDATE_DOLLAR)
                .params(&[RowValues::Int(id)])
                .dml()
                .await?;
        }
        Op::Insert(id) => {
            c.query(INSERT_DOLLAR)
                .params(&[RowValues::Int(id), RowValues::Text(format!("note {note}"))])
                .dml()
                .await?;
        }
    }
    Ok(())
}
