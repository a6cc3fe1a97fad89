//! Turso side of the benchmarks: the lookup database, the raw baseline, the insert baseline and
//! the micro-bench hooks that run the backend's own code.

use std::path::Path;
use std::time::Duration;

use sql_middleware::bench_hooks;
use sql_middleware::drivers::turso;
use sql_middleware::{ErrorKind, Result, SqlMiddlewareDbError};

use turso::{Connection, Value};

use crate::dataset::{self, BenchRow};
use crate::driver_err as map_err;
use crate::workloads::{INSERT_SCHEMA_SQLITE, INSERT_SQL_QMARK, InsertRecord};

/// The middleware's default Turso busy timeout (`PoolBuilder` default).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens a raw Turso database and one connection with the middleware's settings (a busy
/// timeout, `foreign_keys = ON`). Keep the `Database` alive as long as the connection.
pub async fn open_raw(path: &Path) -> Result<(turso::Database, Connection)> {
    let path = path.to_str().ok_or_else(|| {
        SqlMiddlewareDbError::new(ErrorKind::Config, "the Turso path is not valid UTF-8")
    })?;
    let db = turso::Builder::new_local(path)
        .build()
        .await
        .map_err(map_err)?;
    let conn = db.connect().map_err(map_err)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(map_err)?;
    conn.execute("PRAGMA foreign_keys = ON", ())
        .await
        .map_err(map_err)?;
    Ok((db, conn))
}

async fn lookup_is_ready(conn: &Connection, n: usize) -> bool {
    let Ok(mut st) = conn.prepare(dataset::LOOKUP_CHECK_SQL).await else {
        return false;
    };
    let Ok(row) = st.query_row(()).await else {
        return false;
    };
    let get = |i| row.get::<i64>(i).ok();
    (get(0), get(1), get(2)) == (Some(n as i64), Some(1), Some(n as i64))
}

/// Builds the Turso lookup database of `n` rows at `path` with Turso itself (same rows as the
/// SQLite file, inserted in ascending id order in one transaction), or reuses it when it already
/// holds them. Returns whether it was (re)built.
pub async fn ensure_lookup_db(path: &Path, n: usize) -> Result<bool> {
    if path.exists() {
        let (_db, conn) = open_raw(path).await?;
        if lookup_is_ready(&conn, n).await {
            return Ok(false);
        }
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            SqlMiddlewareDbError::new(
                ErrorKind::Other,
                format!("cannot create {}: {e}", dir.display()),
            )
        })?;
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dataset::with_suffix(path, suffix));
    }
    let (_db, conn) = open_raw(path).await?;
    conn.execute(dataset::LOOKUP_SCHEMA, ())
        .await
        .map_err(map_err)?;
    conn.execute("BEGIN", ()).await.map_err(map_err)?;
    let mut st = conn
        .prepare(dataset::LOOKUP_INSERT_QMARK)
        .await
        .map_err(map_err)?;
    for id in 1..=n as i64 {
        let r = dataset::row(id);
        st.execute((r.id, r.name, r.score, i64::from(r.active)))
            .await
            .map_err(map_err)?;
    }
    conn.execute("COMMIT", ()).await.map_err(map_err)?;
    if lookup_is_ready(&conn, n).await {
        Ok(true)
    } else {
        Err(SqlMiddlewareDbError::new(
            ErrorKind::Other,
            format!(
                "the freshly built Turso lookup database {} does not check out",
                path.display()
            ),
        ))
    }
}

/// The raw baseline's decode of a lookup row, by position.
pub fn decode_row(row: &turso::Row) -> turso::Result<BenchRow> {
    Ok(BenchRow {
        id: row.get(0)?,
        name: row.get(1)?,
        score: row.get(2)?,
        active: row.get(3)?,
    })
}

/// One raw point lookup on a statement prepared once: `query_row` (runs it to completion), decode.
pub async fn raw_lookup(st: &mut turso::Statement, id: i64) -> turso::Result<BenchRow> {
    let row = st.query_row((id,)).await?;
    decode_row(&row)
}

/// Hook of `middleware_marshalling` (the Turso wing's own materialisation, see
/// `sql_middleware::bench_hooks::turso`).
pub async fn marshal_loop(conn: &Connection, ids: &[i64], iters: u64) -> Result<Duration> {
    bench_hooks::turso::marshal_loop(conn, dataset::LOOKUP_SQL_QMARK, ids, iters).await
}

/// Hook of `middleware_param_convert` (the Turso wing's own conversion, see
/// `sql_middleware::bench_hooks::turso`).
pub fn param_convert_loop(ids: &[i64], iters: u64) -> Result<Duration> {
    bench_hooks::turso::param_convert_loop(ids, iters)
}

// ---------------------------------------------------------------------------------------------
// Inserts
// ---------------------------------------------------------------------------------------------

/// Creates the insert table if needed and empties it (outside the timer).
pub async fn reset_insert_table(conn: &Connection) -> Result<()> {
    conn.execute(INSERT_SCHEMA_SQLITE, ())
        .await
        .map_err(map_err)?;
    conn.execute("DELETE FROM bench_insert", ())
        .await
        .map_err(map_err)?;
    Ok(())
}

/// Prepares the raw insert statement (once, outside the timer).
pub async fn prepare_insert(conn: &Connection) -> Result<turso::Statement> {
    conn.prepare(INSERT_SQL_QMARK).await.map_err(map_err)
}

/// The raw insert baseline: `BEGIN IMMEDIATE` (as the middleware's `begin`), the prepared insert
/// with each record converted to Turso's owned values (text forms identical to the middleware's),
/// `COMMIT`.
pub async fn raw_insert(
    conn: &mut Connection,
    st: &mut turso::Statement,
    records: &[InsertRecord],
) -> turso::Result<()> {
    let tx = conn
        .transaction_with_behavior(turso::transaction::TransactionBehavior::Immediate)
        .await?;
    for r in records {
        st.execute(vec![
            Value::Integer(r.id),
            Value::Integer(r.int),
            Value::Real(r.float),
            Value::Text(r.text.clone()),
            Value::Integer(i64::from(r.flag)),
            Value::Text(bench_hooks::timestamp_text(&r.ts)),
            Value::Text(bench_hooks::timestamptz_text(&r.tstz)),
            Value::Text(bench_hooks::date_text(&r.date)),
            Value::Text(r.uuid.hyphenated().to_string()),
            Value::Text(r.numeric.to_string()),
            Value::Blob(r.blob.clone()),
            Value::Text(r.json.to_string()),
            Value::Null,
        ])
        .await?;
    }
    tx.commit().await
}

/// Number of rows in the insert table (to check a run).
pub async fn insert_count(conn: &Connection) -> Result<i64> {
    let mut st = conn
        .prepare("SELECT COUNT(*) FROM bench_insert")
        .await
        .map_err(map_err)?;
    let row = st.query_row(()).await.map_err(map_err)?;
    row.get(0).map_err(map_err)
}
