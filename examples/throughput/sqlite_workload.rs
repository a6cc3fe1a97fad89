//! The SQLite throughput workloads as rusqlite runs them, and the loop of their clients: shared as
//! source by `examples/sqlite_throughput.rs` (its raw contenders and its round loop) and by the
//! async-SQLite peer harness's `peers_throughput` binary (`bench-harnesses/sqlite_peers`, which
//! includes this file and `drive.rs` with `#[path]`), so every contender runs the same statements,
//! the same mix and the same draws per client.
//!
//! What the including module provides beside this one: the `drive` module (`drive.rs`), the
//! lookup statement `LOOKUP_SQL_QMARK` and the row decode `decode_row` (the raw baseline's, by
//! position into `BenchRow`). Only std, tokio and rusqlite are used here.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::drive::{self, Rng, Stop};
use super::{LOOKUP_SQL_QMARK, decode_row};

/// Rows in the lookup table (ids `1..=ROWS`).
pub const ROWS: i64 = 100_000;

/// The mixed workload's update, with `?N` placeholders.
pub const UPDATE_QMARK: &str = "UPDATE test SET score = score + 1 WHERE id = ?1";
/// The mixed workload's insert into the side table, with `?N` placeholders.
pub const INSERT_QMARK: &str = "INSERT INTO throughput_log (ref, note) VALUES (?1, ?2)";
/// The side table the mixed workload inserts into.
pub const LOG_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS throughput_log (id INTEGER PRIMARY KEY, ref INTEGER NOT NULL, note TEXT NOT NULL)";

/// A workload of the SQLite suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Point lookups only.
    Lookup,
    /// 90% lookups, 5% updates, 5% inserts.
    Mixed,
}

impl Workload {
    /// The workloads by name, with their aliases (the command line's `--workload`).
    pub const KNOWN: [(&'static str, &'static [&'static str]); 2] =
        [("lookup", &["select"]), ("mixed", &[])];

    /// The workload of a name or alias of [`Workload::KNOWN`].
    pub fn parse(name: &str) -> Option<Workload> {
        let (name, _) = Workload::KNOWN
            .iter()
            .find(|(n, aliases)| *n == name || aliases.contains(&name))?;
        Some(if *name == "lookup" {
            Workload::Lookup
        } else {
            Workload::Mixed
        })
    }

    /// The workload's name.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Lookup => "lookup",
            Workload::Mixed => "mixed",
        }
    }
}

/// One transaction.
#[derive(Clone, Copy)]
pub enum Op {
    /// Look the row up by id and decode it.
    Lookup(i64),
    /// Add one to the row's score.
    Update(i64),
    /// Insert a row referring to this id into the side table.
    Insert(i64),
}

/// The next transaction of a client, and the number its insert writes as a note (drawn for every
/// transaction, so the draws do not depend on the mix).
pub fn draw(rng: &mut Rng, w: Workload) -> (Op, u64) {
    let id = rng.range(1, ROWS);
    let op = match (w, rng.next() % 20) {
        (Workload::Lookup, _) | (Workload::Mixed, 2..) => Op::Lookup(id),
        (Workload::Mixed, 0) => Op::Update(id),
        (Workload::Mixed, 1) => Op::Insert(id),
    };
    (op, rng.next())
}

/// Runs one transaction on a rusqlite connection, in autocommit, every statement from the
/// connection's cache (`prepare_cached`).
pub fn run_op(c: &rusqlite::Connection, op: Op, note: u64) -> rusqlite::Result<()> {
    match op {
        Op::Lookup(id) => {
            let row = c
                .prepare_cached(LOOKUP_SQL_QMARK)?
                .query_row([id], decode_row)?;
            std::hint::black_box(row);
        }
        Op::Update(id) => {
            c.prepare_cached(UPDATE_QMARK)?.execute([id])?;
        }
        Op::Insert(id) => {
            c.prepare_cached(INSERT_QMARK)?
                .execute(rusqlite::params![id, format!("note {note}")])?;
        }
    }
    Ok(())
}

/// Whether a rusqlite error is SQLite's `BUSY` or `LOCKED` (left after the busy timeout).
pub fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// A transaction's outcome for the retry loop: `true` when done, `false` when it met `BUSY` (to be
/// counted and run again); any other error ends the run with a panic naming `who`.
pub fn outcome(who: &str, r: rusqlite::Result<()>) -> bool {
    match r {
        Ok(()) => true,
        Err(e) if is_busy(&e) => false,
        Err(e) => panic!("{who}: {e}"),
    }
}

/// The settings a connection runs with, as one comparable line: journal mode, `synchronous`,
/// `foreign_keys` and the busy timeout in milliseconds.
pub fn settings_of(c: &rusqlite::Connection) -> rusqlite::Result<String> {
    let journal: String = c.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    let int = |pragma: &str| -> rusqlite::Result<i64> {
        c.query_row(&format!("PRAGMA {pragma}"), [], |r| r.get(0))
    };
    Ok(format!(
        "journal_mode={} synchronous={} foreign_keys={} busy_timeout={}",
        journal.to_lowercase(),
        int("synchronous")?,
        int("foreign_keys")?,
        int("busy_timeout")?
    ))
}

/// One client's handle on a contender: runs one transaction.
pub trait Side: Send + Sync + 'static {
    /// Runs `op` to its end; `false` when it met `SQLITE_BUSY` after the busy timeout.
    fn run(&self, op: Op, note: u64) -> impl Future<Output = bool> + Send;
}

/// What one run of a contender did.
pub struct Run {
    /// Transactions done (in the measured window for [`Stop::Window`]).
    pub done: u64,
    /// `SQLITE_BUSY` errors met over the whole run, warm-up included (each transaction was run
    /// again).
    pub busy: u64,
}

/// One client: its handle, its generator and the shared busy count.
struct Worker<S> {
    side: S,
    rng: Rng,
    w: Workload,
    busy: Arc<AtomicU64>,
}

impl<S: Side> drive::Client for Worker<S> {
    async fn transaction(&mut self) {
        let (op, note) = draw(&mut self.rng, self.w);
        while !self.side.run(op, note).await {
            self.busy.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Runs one client per handle (client `k` on `sides[k]`, drawing from [`Rng::for_client`]`(k)`)
/// with [`drive::drive`], and counts the transactions done and the `BUSY` errors met.
pub async fn run_clients<S: Side>(sides: Vec<S>, w: Workload, stop: Stop) -> Run {
    let busy = Arc::new(AtomicU64::new(0));
    let workers = sides
        .into_iter()
        .enumerate()
        .map(|(k, side)| Worker {
            side,
            rng: Rng::for_client(k),
            w,
            busy: Arc::clone(&busy),
        })
        .collect();
    let done = drive::drive(workers, stop).await;
    Run {
        done,
        busy: busy.load(Ordering::Relaxed),
    }
}
