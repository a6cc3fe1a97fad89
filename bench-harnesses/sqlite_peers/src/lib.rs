//! Shared setup of the async-SQLite peer benches (deadpool-sqlite and tokio-rusqlite): the
//! dataset (included by path from the main crate, never copied), the SQLite lookup file, the
//! `BenchRow` decode and the Criterion configuration.
//!
//! Everything here runs outside the timed loops.

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::Criterion;
use rusqlite::{Connection, OpenFlags};
use tokio::runtime::Runtime;

/// The one dataset definition of the repository (std only), shared as source with the main crate.
#[path = "../../../bench-support/src/dataset.rs"]
pub mod dataset;

/// The timed-loop helpers of the main crate's benches (std and tokio only), shared as source:
/// every harness spawns, fans out and splits the ids the same way.
#[path = "../../../bench-support/src/tasks.rs"]
pub mod tasks;

pub use dataset::BenchRow;
pub use tasks::{chunks, fan_out, in_task};

/// This crate's manifest directory; the dataset helpers find the repository root from it.
pub const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// The lookup query (`?1`, as the raw rusqlite baseline runs it).
pub const LOOKUP_SQL: &str = dataset::LOOKUP_SQL_QMARK;

/// The decode of a lookup row, by position: the raw rusqlite baseline's `decode_row` in the
/// main crate (`bench-support/src/sqlite.rs`), so every SQLite contender does the same work.
#[inline]
pub fn decode_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<BenchRow> {
    Ok(BenchRow {
        id: row.get(0)?,
        name: row.get(1)?,
        score: row.get(2)?,
        active: row.get(3)?,
    })
}

/// One lookup as both peers run it inside their closure (`interact` / `call`): the statement
/// from the connection's own cache (`prepare_cached`), `query_row`, decode. This is the pattern
/// both peers document: the closure gets a `&mut rusqlite::Connection` and nothing else, so a
/// statement cannot be kept across calls except in that cache.
#[inline]
pub fn lookup(conn: &Connection, id: i64) -> rusqlite::Result<BenchRow> {
    conn.prepare_cached(LOOKUP_SQL)?.query_row([id], decode_row)
}

/// The Criterion configuration of every suite: results in the shared CRITERION_HOME
/// (`$CRITERION_HOME`, else `<repo>/bench_results/`), 20 samples, 2 s warm-up, 5 s measurement.
/// Command-line flags (`--quick`, `--sample-size`, `--profile-time`, ...) still override it.
pub fn criterion() -> Criterion {
    Criterion::default()
        .output_directory(&dataset::criterion_home(MANIFEST_DIR))
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args()
}

/// The multi-thread tokio runtime every suite runs on (default worker count = cores), the
/// runtime `#[tokio::main]` gives an application.
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("cannot build the tokio runtime")
}

/// Returns the SQLite lookup database of `n` rows, `<repo>/bench_data/lookup_{n}.sqlite`,
/// building it first unless a valid one already exists, following the recipe documented at
/// `dataset::LOOKUP_CHECK_SQL` (the main crate and the SQLx harness follow it too, so whichever
/// runs first creates the file and the others reuse it).
pub fn ensure_sqlite_lookup(n: usize) -> PathBuf {
    let path = dataset::sqlite_lookup_path(MANIFEST_DIR, n);
    if path.is_file() && lookup_is_valid(&path, n) {
        eprintln!("[peers bench] reusing {}", path.display());
        return path;
    }
    let dir = path.parent().expect("the lookup path has a parent folder");
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let tmp = dataset::build_tmp_path(&path);
    remove_sqlite_files(&tmp);
    if let Err(e) = build_lookup(&tmp, n) {
        remove_sqlite_files(&tmp);
        panic!("cannot build {}: {e}", tmp.display());
    }
    remove_sqlite_files(&path);
    std::fs::rename(&tmp, &path).unwrap_or_else(|e| {
        remove_sqlite_files(&tmp);
        panic!("cannot rename {} to {}: {e}", tmp.display(), path.display())
    });
    remove_sqlite_files(&tmp);
    assert!(
        lookup_is_valid(&path, n),
        "the freshly built {} does not check out",
        path.display()
    );
    eprintln!("[peers bench] built {} ({n} rows)", path.display());
    path
}

/// Removes a database file and its `-wal`/`-shm` siblings, ignoring errors.
fn remove_sqlite_files(path: &Path) {
    let _ = std::fs::remove_file(path);
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(dataset::with_suffix(path, suffix));
    }
}

/// Whether `path` holds a complete lookup database of `n` rows in WAL mode (recipe step 1).
fn lookup_is_valid(path: &Path, n: usize) -> bool {
    let Ok(conn) = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY) else {
        return false;
    };
    let wal = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0))
        .is_ok_and(|m| m.eq_ignore_ascii_case("wal"));
    let counts = conn.query_row(dataset::LOOKUP_CHECK_SQL, [], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
        ))
    });
    wal && counts.is_ok_and(|c| c == (n as i64, 1, n as i64))
}

/// Writes the lookup database of `n` rows into `path` (recipe step 2).
fn build_lookup(path: &Path, n: usize) -> rusqlite::Result<()> {
    let mut conn = Connection::open(path)?;
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    assert!(
        mode.eq_ignore_ascii_case("wal"),
        "could not build the lookup file in WAL mode (journal_mode is {mode})"
    );
    conn.execute_batch(dataset::LOOKUP_SCHEMA)?;
    let tx = conn.transaction()?;
    {
        let mut st = tx.prepare(dataset::LOOKUP_INSERT_QMARK)?;
        for id in 1..=n as i64 {
            let r = dataset::row(id);
            st.execute(rusqlite::params![
                r.id,
                r.name,
                r.score,
                i64::from(r.active)
            ])?;
        }
    }
    tx.commit()?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(())
}

/// A deadpool-sqlite pool of `max_size` connections on `path`, built the way its README shows
/// (`Config::new(path).create_pool(Runtime::Tokio1)`), with the pool size set; connections are
/// opened by deadpool-sqlite itself (`rusqlite::Connection::open`).
pub fn deadpool_pool(path: &Path, max_size: usize) -> deadpool_sqlite::Pool {
    deadpool_sqlite::Config::new(path)
        .builder(deadpool_sqlite::Runtime::Tokio1)
        .expect("deadpool-sqlite config")
        .max_size(max_size)
        .build()
        .expect("build the deadpool-sqlite pool")
}
