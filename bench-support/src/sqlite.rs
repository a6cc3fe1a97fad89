//! SQLite (rusqlite) side of the benchmarks: the lookup file, the raw baseline's connection and
//! decode, the insert baseline, and the micro-bench hooks that run the backend's own code.

use std::hint::black_box;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use sql_middleware::bench_hooks;
use sql_middleware::drivers::rusqlite;
use sql_middleware::{ErrorKind, Result, SqlMiddlewareDbError};

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::dataset::{self, BenchRow};
use crate::driver_err as map_err;
use crate::workloads::{INSERT_SCHEMA_SQLITE, INSERT_SQL_QMARK, InsertRecord};

/// The flags the middleware opens every pooled SQLite connection with (the SQLite wing's `config.rs`).
pub const OPEN_FLAGS: OpenFlags = OpenFlags::SQLITE_OPEN_READ_WRITE
    .union(OpenFlags::SQLITE_OPEN_CREATE)
    .union(OpenFlags::SQLITE_OPEN_URI)
    .union(OpenFlags::SQLITE_OPEN_NO_MUTEX);

/// The middleware's default busy timeout, statement cache capacity (`PoolBuilder` defaults).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// See [`BUSY_TIMEOUT`].
pub const STATEMENT_CACHE_CAPACITY: usize = 128;

/// Opens a raw rusqlite connection with the settings the middleware applies to its pooled
/// connections: the same open flags, WAL, `foreign_keys=ON`, a 5 s busy timeout and a statement
/// cache of 128. (The middleware's progress handler and busy callback are part of its own
/// machinery, not settings, so the raw baseline does without them.)
pub fn open_raw(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(path, OPEN_FLAGS)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    debug_assert!(mode.eq_ignore_ascii_case("wal"), "journal_mode is {mode}");
    conn.execute_batch("PRAGMA foreign_keys=ON")?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
    Ok(conn)
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(ErrorKind::Other, format!("{what} {}: {e}", path.display()))
}

fn lookup_is_ready(path: &Path, n: usize) -> bool {
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

fn remove_db_files(path: &Path) {
    for p in [
        path.to_path_buf(),
        dataset::with_suffix(path, "-wal"),
        dataset::with_suffix(path, "-shm"),
    ] {
        let _ = std::fs::remove_file(p);
    }
}

/// Builds the SQLite lookup file of `n` rows at `path`, or reuses it when it already holds them
/// (the recipe shared with the SQLx harness is documented at [`dataset::LOOKUP_CHECK_SQL`]).
/// Returns whether it was (re)built.
pub fn ensure_lookup_db(path: &Path, n: usize) -> Result<bool> {
    if path.exists() && lookup_is_ready(path, n) {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, e))?;
    }
    let tmp = dataset::build_tmp_path(path);
    remove_db_files(&tmp);
    {
        let mut conn = Connection::open(&tmp).map_err(map_err)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(map_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::Config,
                format!("could not build the lookup file in WAL mode (journal_mode is {mode})"),
            ));
        }
        conn.execute_batch(dataset::LOOKUP_SCHEMA)
            .map_err(map_err)?;
        let tx = conn.transaction().map_err(map_err)?;
        {
            let mut st = tx.prepare(dataset::LOOKUP_INSERT_QMARK).map_err(map_err)?;
            for id in 1..=n as i64 {
                let r = dataset::row(id);
                st.execute(rusqlite::params![
                    r.id,
                    r.name,
                    r.score,
                    i64::from(r.active)
                ])
                .map_err(map_err)?;
            }
        }
        tx.commit().map_err(map_err)?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(map_err)?;
    }
    remove_db_files(path);
    std::fs::rename(&tmp, path)
        .map_err(|e| io_err("cannot rename the new lookup file to", path, e))?;
    remove_db_files(&tmp);
    if lookup_is_ready(path, n) {
        Ok(true)
    } else {
        Err(SqlMiddlewareDbError::new(
            ErrorKind::Other,
            format!(
                "the freshly built lookup file {} does not check out",
                path.display()
            ),
        ))
    }
}

/// The raw baseline's decode of a lookup row, by position.
pub fn decode_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<BenchRow> {
    Ok(BenchRow {
        id: row.get(0)?,
        name: row.get(1)?,
        score: row.get(2)?,
        active: row.get(3)?,
    })
}

/// Prepares the lookup statement for the raw baseline, once, outside any timed loop: the raw
/// driver's best practice (a `prepare_cached` per call would add a cache-key copy and an LRU
/// round trip to every lookup).
pub fn lookup_stmt(conn: &Connection) -> rusqlite::Result<rusqlite::Statement<'_>> {
    conn.prepare(dataset::LOOKUP_SQL_QMARK)
}

/// One raw point lookup on a statement prepared by [`lookup_stmt`]: bind, `query_row`, decode.
pub fn raw_lookup(st: &mut rusqlite::Statement<'_>, id: i64) -> rusqlite::Result<BenchRow> {
    st.query_row([id], decode_row)
}

/// One task's share of the raw fan-out baseline, run on a blocking thread: takes a connection
/// from `pool`, prepares the lookup once, looks up every id of `ids`, and puts the connection
/// back. Panics when the pool is empty (the benches size it to the task count).
pub fn raw_share(pool: &Mutex<Vec<Connection>>, ids: &[i64]) {
    let conn = pool
        .lock()
        .expect("raw pool")
        .pop()
        .expect("one raw connection per task");
    let mut st = lookup_stmt(&conn).expect("prepare");
    for &id in ids {
        black_box(raw_lookup(&mut st, id).expect("lookup"));
    }
    drop(st);
    pool.lock().expect("raw pool").push(conn);
}

/// Hook of `middleware_marshalling` (the SQLite wing's own materialisation, see
/// `sql_middleware::bench_hooks::sqlite`).
pub fn marshal_loop(conn: &mut Connection, ids: &[i64], iters: u64) -> Result<Duration> {
    bench_hooks::sqlite::marshal_loop(conn, dataset::LOOKUP_SQL_QMARK, ids, iters)
}

/// Hook of `middleware_param_convert` (the SQLite wing's own binding, see
/// `sql_middleware::bench_hooks::sqlite`).
pub fn param_convert_loop(conn: &mut Connection, ids: &[i64], iters: u64) -> Result<Duration> {
    bench_hooks::sqlite::param_convert_loop(conn, dataset::LOOKUP_SQL_QMARK, ids, iters)
}

// ---------------------------------------------------------------------------------------------
// Inserts
// ---------------------------------------------------------------------------------------------

/// Creates the insert table if needed and empties it (outside the timer).
pub fn reset_insert_table(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(INSERT_SCHEMA_SQLITE)?;
    conn.execute_batch("DELETE FROM bench_insert")
}

/// The raw insert baseline: `BEGIN IMMEDIATE` (as the middleware's `begin`), the cached
/// prepared insert, each record bound natively, commit. Timestamps and dates are formatted by
/// the middleware's own text-form functions, so both sides do the same formatting work.
pub fn raw_insert(conn: &mut Connection, records: &[InsertRecord]) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    {
        let mut st = tx.prepare_cached(INSERT_SQL_QMARK)?;
        for r in records {
            st.execute(rusqlite::params![
                r.id,
                r.int,
                r.float,
                r.text,
                r.flag,
                bench_hooks::timestamp_text(&r.ts),
                bench_hooks::timestamptz_text(&r.tstz),
                bench_hooks::date_text(&r.date),
                r.uuid.hyphenated().to_string(),
                r.numeric.to_string(),
                r.blob,
                r.json.to_string(),
                None::<&str>,
            ])?;
        }
    }
    tx.commit()
}

/// Number of rows in the insert table (to check a run).
pub fn insert_count(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT COUNT(*) FROM bench_insert", [], |r| r.get(0))
}
