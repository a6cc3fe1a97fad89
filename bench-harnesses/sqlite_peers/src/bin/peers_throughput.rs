//! The async-SQLite peers' contender in the SQLite throughput-at-saturation suite: the main
//! crate's `sqlite_throughput` workloads (point lookups; 90% lookups, 5% updates, 5% inserts) run
//! through deadpool-sqlite or tokio-rusqlite by C clients for a measured window. The example runs
//! it as an external process, once per round and per peer, as it would a C client.
//!
//! ```sh
//! peers_throughput --peer deadpool_sqlite|tokio_rusqlite --path FILE --workload lookup|mixed \
//!     --clients C --seconds S
//! ```
//!
//! It prints one line of JSON on stdout:
//! `{"transactions": T, "seconds": S, "tps": X, "errors": 0, "busy": B, "settings": "..."}`, where
//! `seconds` is the window, `busy` the `SQLITE_BUSY`/`SQLITE_LOCKED` errors met after the busy
//! timeout over the whole run (each transaction run again, as the example does), and `settings`
//! the connections' journal mode, `synchronous`, `foreign_keys` and busy timeout (the example
//! checks them against its own). Any other error ends the run with a non-zero exit and a message
//! on stderr, so `errors` is 0 in every completed run. It exits with 2 on a bad command line and
//! with 1 on a setup failure or when the window completed no transaction.
//!
//! - **Workloads.** From the example's own source, included with `#[path]`
//!   (`examples/throughput/sqlite_workload.rs` and `drive.rs`): the same statements (`?1` forms,
//!   each through `prepare_cached`), the same mix, the same generator per client
//!   (`Rng::for_client(k)`), the same client loop, one-second warm-up and window.
//! - **Connections.** Exactly C, all opened before the warm-up with the settings the example's
//!   raw connections have (`bench_support::sqlite::open_raw`): rusqlite's default open flags
//!   (read-write, create, URI, no mutex: the crate's flags), then a 5 s busy timeout, WAL,
//!   `foreign_keys=ON` and a statement cache of 128. `synchronous` is left at SQLite's default, as
//!   the crate leaves it.
//! - **deadpool-sqlite.** A pool of exactly C (`max_size`), every connection set up by a
//!   `post_create` hook; each transaction is `pool.get().await?.interact(|c| ..)`: a checkout
//!   (deadpool-sqlite's recycle check, one `SELECT $1` through `interact`, included), then the
//!   statement on the blocking pool.
//! - **tokio-rusqlite.** A `Connection` is one background thread that runs its calls in turn, and
//!   cloning it shares that thread; the library has no pool. So C connections, one per client
//!   task (client `k` on connection `k`), each transaction one `conn.call(|c| ..)`.
//! - **Runtime.** tokio multi-thread, a worker per CPU, as the example's.

use std::path::PathBuf;
use std::time::Duration;

use deadpool_sqlite::{Hook, HookError};
use rusqlite::{Connection, OpenFlags};
use sqlite_peers::dataset::LOOKUP_SQL_QMARK;
use sqlite_peers::decode_row;

/// The throughput examples' client driver and generator, shared as source. This binary runs one
/// contender once, so the examples' rotating rounds and `--only` helpers go unused here.
#[path = "../../../../examples/throughput/drive.rs"]
#[allow(dead_code)]
mod drive;

/// The SQLite suite's workloads and client loop, shared as source with the example.
#[path = "../../../../examples/throughput/sqlite_workload.rs"]
mod workload;

/// The harnesses' command line (flags in, one JSON line out), shared as source with the SQLx
/// harness.
#[path = "../../../../examples/throughput/cli.rs"]
mod cli;

use cli::{Flag, required};
use drive::Stop;
use workload::{Op, Workload};

/// The crate's busy timeout (`PoolBuilder`'s default; `bench_support::sqlite::BUSY_TIMEOUT`).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// The crate's statement cache capacity (`bench_support::sqlite::STATEMENT_CACHE_CAPACITY`).
const STATEMENT_CACHE_CAPACITY: usize = 128;
/// The flags the crate opens its connections with (`bench_support::sqlite::OPEN_FLAGS`).
const OPEN_FLAGS: OpenFlags = OpenFlags::SQLITE_OPEN_READ_WRITE
    .union(OpenFlags::SQLITE_OPEN_CREATE)
    .union(OpenFlags::SQLITE_OPEN_URI)
    .union(OpenFlags::SQLITE_OPEN_NO_MUTEX);

const USAGE: &str = "usage: peers_throughput --peer deadpool_sqlite|tokio_rusqlite --path FILE \
--workload lookup|mixed --clients C --seconds S";

/// A peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PeerKind {
    DeadpoolSqlite,
    TokioRusqlite,
}

/// The command line.
#[derive(Debug)]
struct Args {
    peer: PeerKind,
    path: PathBuf,
    workload: Workload,
    clients: usize,
    seconds: u64,
}

impl Args {
    fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
        let (mut peer, mut path, mut workload, mut clients, mut seconds) =
            (None, None, None, None, None);
        while let Some(flag) = Flag::next(&mut it, &[]) {
            let flag = flag?;
            match flag.name.as_str() {
                "--peer" => {
                    peer = Some(match flag.value.as_str() {
                        "deadpool_sqlite" => PeerKind::DeadpoolSqlite,
                        "tokio_rusqlite" => PeerKind::TokioRusqlite,
                        _ => return Err(flag.bad("deadpool_sqlite or tokio_rusqlite")),
                    });
                }
                "--path" => path = Some(PathBuf::from(&flag.value)),
                "--workload" => {
                    workload = Some(
                        Workload::parse(&flag.value).ok_or_else(|| flag.bad("lookup or mixed"))?,
                    );
                }
                "--clients" => clients = Some(flag.parse(|&n: &usize| n > 0, "a positive count")?),
                "--seconds" => {
                    seconds =
                        Some(flag.parse(|&s: &u64| s > 0, "a positive whole number of seconds")?);
                }
                _ => return Err(format!("unknown flag {}", flag.name)),
            }
        }
        Ok(Args {
            peer: required(peer, "--peer")?,
            path: required(path, "--path")?,
            workload: required(workload, "--workload")?,
            clients: required(clients, "--clients")?,
            seconds: required(seconds, "--seconds")?,
        })
    }
}

/// Gives a freshly opened connection the crate's settings, as `bench_support::sqlite::open_raw`
/// does: the busy timeout, WAL, `foreign_keys=ON` and the statement cache capacity.
fn configure(c: &mut Connection) -> rusqlite::Result<()> {
    c.busy_timeout(BUSY_TIMEOUT)?;
    let mode: String = c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(format!("journal_mode is {mode}, not WAL")),
        ));
    }
    c.execute_batch("PRAGMA foreign_keys=ON")?;
    c.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
    Ok(())
}

/// A deadpool-sqlite pool: one handle, cloned into every client.
#[derive(Clone)]
struct DeadpoolSide(deadpool_sqlite::Pool);

impl workload::Side for DeadpoolSide {
    async fn run(&self, op: Op, note: u64) -> bool {
        let obj = self.0.get().await.expect("a deadpool-sqlite connection");
        let r = obj
            .interact(move |c| workload::run_op(c, op, note))
            .await
            .expect("deadpool-sqlite interact");
        workload::outcome("deadpool_sqlite", r)
    }
}

/// A tokio-rusqlite connection: one per client.
struct TokioRusqliteSide(tokio_rusqlite::Connection);

impl workload::Side for TokioRusqliteSide {
    async fn run(&self, op: Op, note: u64) -> bool {
        let r = match self.0.call(move |c| workload::run_op(c, op, note)).await {
            Ok(()) => Ok(()),
            Err(tokio_rusqlite::Error::Error(e)) => Err(e),
            Err(e) => panic!("tokio_rusqlite: {e}"),
        };
        workload::outcome("tokio_rusqlite", r)
    }
}

/// The settings of every one of `settings` (one line per connection), checked equal.
fn same_settings(settings: Vec<String>) -> Result<String, String> {
    let first = settings.first().cloned().ok_or("no connection")?;
    match settings.iter().find(|s| **s != first) {
        None => Ok(first),
        Some(other) => Err(format!(
            "the connections run with different settings: {first} and {other}"
        )),
    }
}

/// The deadpool-sqlite pool of `n` connections on `path`, all opened and set up; and their
/// settings.
async fn deadpool_pool(args: &Args) -> Result<(deadpool_sqlite::Pool, String), String> {
    let pool = deadpool_sqlite::Config::new(&args.path)
        .builder(deadpool_sqlite::Runtime::Tokio1)
        .map_err(|e| format!("deadpool-sqlite config: {e}"))?
        .max_size(args.clients)
        .post_create(Hook::async_fn(|obj, _| {
            Box::pin(async move {
                obj.interact(configure)
                    .await
                    .map_err(|e| HookError::message(e.to_string()))?
                    .map_err(HookError::Backend)
            })
        }))
        .build()
        .map_err(|e| format!("build the deadpool-sqlite pool: {e}"))?;
    // Check all C out together, so every connection is open before the clock starts.
    let mut held = Vec::with_capacity(args.clients);
    for _ in 0..args.clients {
        held.push(
            pool.get()
                .await
                .map_err(|e| format!("open {} connections: {e}", args.clients))?,
        );
    }
    let mut settings = Vec::with_capacity(held.len());
    for obj in &held {
        let s = obj
            .interact(|c| workload::settings_of(c))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("the connection's settings: {e}"))?;
        settings.push(s);
    }
    Ok((pool, same_settings(settings)?))
}

/// C tokio-rusqlite connections on `path`, opened and set up; and their settings.
async fn tokio_rusqlite_conns(
    args: &Args,
) -> Result<(Vec<tokio_rusqlite::Connection>, String), String> {
    let mut conns = Vec::with_capacity(args.clients);
    let mut settings = Vec::with_capacity(args.clients);
    for _ in 0..args.clients {
        let conn = tokio_rusqlite::Connection::open_with_flags(&args.path, OPEN_FLAGS)
            .await
            .map_err(|e| format!("open {}: {e}", args.path.display()))?;
        let s = conn
            .call(|c| {
                configure(c)?;
                workload::settings_of(c)
            })
            .await
            .map_err(|e| format!("set the connection up: {e}"))?;
        settings.push(s);
        conns.push(conn);
    }
    Ok((conns, same_settings(settings)?))
}

/// What the window measured.
struct Outcome {
    run: workload::Run,
    seconds: u64,
    settings: String,
}

impl Outcome {
    fn json(&self) -> String {
        format!(
            "{{\"transactions\": {}, \"seconds\": {}, \"tps\": {:.3}, \"errors\": 0, \"busy\": {}, \"settings\": \"{}\"}}",
            self.run.done,
            self.seconds,
            self.run.done as f64 / self.seconds as f64,
            self.run.busy,
            self.settings
        )
    }
}

/// Checks the database holds the lookup table of `workload::ROWS` rows, and makes the side
/// table the mixed workload writes to (the example makes it too).
fn check_database(args: &Args) -> Result<(), String> {
    if !args.path.is_file() {
        return Err(format!(
            "{}: no such file (the example builds it)",
            args.path.display()
        ));
    }
    let mut c = Connection::open_with_flags(&args.path, OPEN_FLAGS)
        .map_err(|e| format!("open {}: {e}", args.path.display()))?;
    configure(&mut c).map_err(|e| format!("set the connection up: {e}"))?;
    let rows: i64 = c
        .query_row("SELECT COUNT(*) FROM test", [], |r| r.get(0))
        .map_err(|e| format!("the lookup table: {e}"))?;
    if rows != workload::ROWS {
        return Err(format!(
            "the lookup table holds {rows} rows, the workloads draw ids up to {}",
            workload::ROWS
        ));
    }
    c.execute_batch(workload::LOG_SCHEMA)
        .map_err(|e| format!("the side table: {e}"))
}

async fn run(args: Args) -> Result<Outcome, String> {
    let stop = Stop::Window(Duration::from_secs(args.seconds));
    let (run, settings) = match args.peer {
        PeerKind::DeadpoolSqlite => {
            let (pool, settings) = deadpool_pool(&args).await?;
            let sides = (0..args.clients)
                .map(|_| DeadpoolSide(pool.clone()))
                .collect();
            let run = workload::run_clients(sides, args.workload, stop).await;
            pool.close();
            (run, settings)
        }
        PeerKind::TokioRusqlite => {
            let (conns, settings) = tokio_rusqlite_conns(&args).await?;
            let sides: Vec<TokioRusqliteSide> =
                conns.iter().cloned().map(TokioRusqliteSide).collect();
            let run = workload::run_clients(sides, args.workload, stop).await;
            for c in conns {
                c.close()
                    .await
                    .map_err(|e| format!("close a connection: {e}"))?;
            }
            (run, settings)
        }
    };
    Ok(Outcome {
        run,
        seconds: args.seconds,
        settings,
    })
}

fn main() {
    let args = cli::or_usage(
        "peers_throughput",
        Args::parse(std::env::args().skip(1)),
        USAGE,
    );
    let label = format!(
        "{:?} {} C={}",
        args.peer,
        args.workload.name(),
        args.clients
    );
    if let Err(msg) = check_database(&args) {
        cli::finish("peers_throughput", &label, Err(msg));
    }
    let cpus = std::thread::available_parallelism().map_or(2, usize::from);
    let rt = drive::runtime(cpus);
    let ran = rt.block_on(run(args)).map(|o| (o.json(), o.run.done));
    cli::finish("peers_throughput", &label, ran);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Args, String> {
        Args::parse(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn parses_the_contract() {
        let a =
            parse("--peer tokio_rusqlite --path /d/x.db --workload mixed --clients 64 --seconds 3")
                .expect("valid");
        assert_eq!(
            (a.peer, a.workload, a.clients, a.seconds),
            (PeerKind::TokioRusqlite, Workload::Mixed, 64, 3)
        );
        assert_eq!(a.path, PathBuf::from("/d/x.db"));
    }

    #[test]
    fn rejects_bad_lines() {
        for (line, says) in [
            (
                "--peer sqlx --path p --workload lookup --clients 8 --seconds 1",
                "--peer: `sqlx`",
            ),
            (
                "--peer deadpool_sqlite --path p --workload lookup --clients 0 --seconds 1",
                "--clients: `0`",
            ),
            (
                "--peer deadpool_sqlite --path p --workload lookup --clients 8 --seconds 1.5",
                "--seconds: `1.5`",
            ),
            (
                "--peer deadpool_sqlite --path p --workload write --clients 8 --seconds 1",
                "--workload: `write`",
            ),
            (
                "--peer deadpool_sqlite --path p --workload lookup --clients 8",
                "--seconds is required",
            ),
            (
                "--peer deadpool_sqlite --path p --workload lookup --clients 8 --seconds",
                "--seconds needs a value",
            ),
            (
                "--peer deadpool_sqlite --path p --workload lookup --clients 8 --seconds 1 --x 1",
                "unknown flag --x",
            ),
        ] {
            let err = parse(line).expect_err(line);
            assert!(err.contains(says), "{line}: {err}");
        }
    }
}
