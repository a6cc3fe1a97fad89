//! The driver of the instruction-count comparison (P8, docs/dev/Benchmarks.md): runs `COUNT` point
//! lookups of the benchmark's SQLite file, either through raw rusqlite or through the
//! middleware, so that `valgrind --tool=callgrind` can count the instructions of each.
//!
//! `callgrind_lookup <raw|middleware> <COUNT> <DB_PATH>`: COUNT point lookups.
//! `callgrind_lookup middleware_tracing <COUNT> <DB_PATH>` (feature `tracing`): the same through a
//! pool with spans on and no subscriber; in such a build `middleware` runs with `.tracing(false)`,
//! as the bench's plain id does.
//! `callgrind_lookup <raw_prepare_cached|middleware_query_one|middleware_checkout_query_one>
//! <COUNT> <DB_PATH>`: the per-call forms: raw rusqlite with `prepare_cached` per lookup,
//! `query(sql).params(..).one()` on one held connection, and the same after a pool checkout
//! per lookup (the `sqlite_single_row_lookup` ids of the same names); `middleware_select`: the
//! per-call form into a `ResultSet`.
//! `callgrind_lookup <pg_raw|pg_middleware|pg_middleware_query_one> <COUNT> <DB_PATH>` (feature
//! `postgres`): COUNT Postgres point lookups (the lookup table in a schema the run creates and
//! drops; the server as the tests find it): raw tokio-postgres with a statement prepared once,
//! the middleware's prepared `stmt.one`, and its per-call `query(sql).params(..).one()`. Only the
//! client's instructions are counted (the server is another process). DB_PATH is not used.
//! `callgrind_lookup <insert_raw|insert_middleware> <COUNT> <DB_PATH>`: COUNT inserted rows of the
//! insert dataset, in transactions of 1000, into a fresh file next to DB_PATH; `insert_bulk`:
//! the same rows through one `bulk_insert`.
//! `callgrind_lookup <tx_lookups|retry_tx_lookups|checkout_tx_per_lookup|retry_tx_per_lookup>
//! <COUNT> <DB_PATH>`: lookups inside a plain `Tx` or a retrying transaction (see `tx_lookups`).
//!
//! Both sides open the file with the same settings (the middleware's pool defaults, reproduced
//! by `sql_middleware_bench::sqlite::open_raw`), prepare the lookup once, run one warm-up lookup, and
//! decode every row into the same struct. The script `scripts/callgrind-lookup.sh` runs two
//! counts per side and divides the difference, so setup and teardown cancel out.

#[cfg(feature = "postgres")]
#[path = "../tests/common/pg/mod.rs"]
mod pg;
#[cfg(feature = "postgres")]
#[path = "../tests/common/unwind.rs"]
#[allow(dead_code)]
mod unwind;

use std::hint::black_box;
use std::path::PathBuf;

use sql_middleware::prelude::*;
use sql_middleware_bench::{BenchRow, dataset, sqlite as bs};

fn usage() -> ! {
    eprintln!(
        "usage: callgrind_lookup <raw|middleware|middleware_tracing|raw_prepare_cached|middleware_query_one|middleware_checkout_query_one|middleware_select|turso_raw|turso_middleware|turso_checkout_query_one|pg_raw|pg_middleware|pg_middleware_query_one|insert_raw|insert_middleware|insert_bulk|tx_lookups|retry_tx_lookups|checkout_tx_per_lookup|retry_tx_per_lookup> <COUNT> <DB_PATH>"
    );
    std::process::exit(2)
}

/// The current-thread runtime every middleware mode runs on.
fn runtime() -> Result<tokio::runtime::Runtime, SqlMiddlewareDbError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, format!("{e}")))
}

/// A pool on the lookup file with spans off when `tracing` is built in (the plain ids).
fn plain_pool(path: &std::path::Path) -> PoolBuilder {
    sql_middleware_bench::plain(lookup_pool(path))
}

/// The lookup pool under valgrind. Everything runs some 50 times slower there, so the default
/// 1 ms inline budget is crossed now and then by lookups that take microseconds natively, and
/// the adaptive model sends them to the blocking pool, which a native run never does. The
/// budget is scaled by 100: the count is of the path a native run takes, the budget's clock
/// reads included.
fn lookup_pool(path: &std::path::Path) -> PoolBuilder {
    ConfigAndPool::sqlite(path).sqlite_exec_model(SqliteExecModel::Adaptive {
        inline_budget: std::time::Duration::from_millis(100),
    })
}

fn main() -> Result<(), SqlMiddlewareDbError> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| usage());
    let count: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| usage());
    let path = PathBuf::from(args.next().unwrap_or_else(|| usage()));
    let n = dataset::bench_lookups();
    bs::ensure_lookup_db(&path, n)?;
    let ids = dataset::shuffled_ids(n);
    let id_at = |i: usize| ids[i % ids.len()];

    match mode.as_str() {
        "raw" => {
            let conn = bs::open_raw(&path)
                .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, format!("open: {e}")))?;
            let mut st = bs::lookup_stmt(&conn).map_err(|e| {
                SqlMiddlewareDbError::new(ErrorKind::Other, format!("prepare: {e}"))
            })?;
            let mut lookup = |id| {
                bs::raw_lookup(&mut st, id)
                    .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, format!("{e}")))
            };
            black_box(lookup(id_at(0))?);
            for i in 0..count {
                black_box(lookup(black_box(id_at(i)))?);
            }
        }
        "raw_prepare_cached" => {
            let conn = bs::open_raw(&path)
                .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, format!("open: {e}")))?;
            let lookup = |id| {
                let mut st = conn.prepare_cached(dataset::LOOKUP_SQL_QMARK)?;
                bs::raw_lookup(&mut st, id)
            };
            let err =
                |e: rusqlite::Error| SqlMiddlewareDbError::new(ErrorKind::Other, format!("{e}"));
            black_box(lookup(id_at(0)).map_err(err)?);
            for i in 0..count {
                black_box(lookup(black_box(id_at(i))).map_err(err)?);
            }
        }
        "middleware_select" => {
            let builder = plain_pool(&path);
            let rt = runtime()?;
            rt.block_on(async {
                let db = builder.build().await?;
                let mut conn = db.get_connection().await?;
                let mut buf = [RowValues::Int(0)];
                for i in 0..=count {
                    buf[0] = RowValues::Int(black_box(id_at(i)));
                    let rs = conn
                        .query(dataset::LOOKUP_SQL_DOLLAR)
                        .params(&buf)
                        .select()
                        .await?;
                    black_box(rs);
                }
                Ok::<_, SqlMiddlewareDbError>(())
            })?;
        }
        "middleware_query_one" | "middleware_checkout_query_one" => {
            let checkout_per_call = mode == "middleware_checkout_query_one";
            let builder = plain_pool(&path);
            let rt = runtime()?;
            rt.block_on(async {
                let db = builder.build().await?;
                let mut held = if checkout_per_call {
                    None
                } else {
                    Some(db.get_connection().await?)
                };
                let mut buf = [RowValues::Int(0)];
                for i in 0..=count {
                    buf[0] = RowValues::Int(black_box(id_at(i)));
                    let mut fresh = None;
                    let conn = match held.as_mut() {
                        Some(conn) => conn,
                        None => fresh.insert(db.get_connection().await?),
                    };
                    let row: BenchRow = conn
                        .query(dataset::LOOKUP_SQL_DOLLAR)
                        .params(&buf)
                        .one()
                        .await?;
                    black_box(row);
                }
                Ok::<_, SqlMiddlewareDbError>(())
            })?;
        }
        "middleware" | "middleware_tracing" => {
            let builder = lookup_pool(&path);
            #[cfg(feature = "tracing")]
            let builder = builder.tracing(mode == "middleware_tracing");
            #[cfg(not(feature = "tracing"))]
            if mode == "middleware_tracing" {
                eprintln!("middleware_tracing needs --features tracing");
                std::process::exit(2);
            }
            let rt = runtime()?;
            rt.block_on(async {
                let db = builder.build().await?;
                let mut conn = db.get_connection().await?;
                let mut stmt = conn.prepare(dataset::LOOKUP_SQL_DOLLAR).await?;
                let mut buf = [RowValues::Int(id_at(0))];
                black_box(stmt.one::<BenchRow>(&buf).await?);
                for i in 0..count {
                    buf[0] = RowValues::Int(black_box(id_at(i)));
                    black_box(stmt.one::<BenchRow>(&buf).await?);
                }
                Ok::<_, SqlMiddlewareDbError>(())
            })?;
        }
        "insert_raw" | "insert_middleware" | "insert_bulk" => insert(&mode, count, &path)?,
        "tx_lookups" | "retry_tx_lookups" | "checkout_tx_per_lookup" | "retry_tx_per_lookup" => {
            tx_lookups(&mode, count, &path)?
        }
        #[cfg(feature = "turso")]
        "turso_raw" | "turso_middleware" | "turso_checkout_query_one" => {
            turso_lookups(&mode, count, &path)?
        }
        #[cfg(feature = "postgres")]
        "pg_raw" | "pg_middleware" | "pg_middleware_query_one" => postgres_lookups(&mode, count)?,
        _ => usage(),
    }
    Ok(())
}

/// `COUNT` rows of the insert dataset, in transactions of [`INSERT_TX_ROWS`], into a fresh
/// table in a file next to `path`: raw rusqlite (`sql_middleware_bench::sqlite::raw_insert`) or the
/// middleware (`begin`, `prepare`, `execute` per row, `commit`), as `database_inserts` does.
fn insert(mode: &str, count: usize, path: &std::path::Path) -> Result<(), SqlMiddlewareDbError> {
    use sql_middleware_bench::workloads::{self, INSERT_SQL_DOLLAR};
    let file = path.with_file_name(format!("inserts-{mode}.sqlite"));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dataset::with_suffix(&file, suffix));
    }
    let records = workloads::insert_records(count);
    // Both sides build the middleware's rows (the bench builds them outside its timer), so that
    // cost cancels out of the comparison.
    let rows: Vec<Vec<RowValues>> = records.iter().map(|r| r.to_row_values()).collect();
    let err = |e: rusqlite::Error| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string());
    if mode == "insert_raw" {
        black_box(&rows);
        let mut conn = bs::open_raw(&file).map_err(err)?;
        bs::reset_insert_table(&conn).map_err(err)?;
        for chunk in records.chunks(INSERT_TX_ROWS) {
            bs::raw_insert(&mut conn, chunk).map_err(err)?;
        }
        return Ok(());
    }
    let rt = runtime()?;
    rt.block_on(async {
        // Under valgrind every batch runs far past the adaptive model's budget, which would
        // move the load to the blocking pool; `SQL_MIDDLEWARE_CG_INLINE=1` counts the inline run
        // that a native run of the same load makes.
        let mut builder = ConfigAndPool::sqlite(&file);
        if std::env::var_os("SQL_MIDDLEWARE_CG_INLINE").is_some() {
            builder = builder.sqlite_exec_model(SqliteExecModel::Inline);
        }
        let db = builder.build().await?;
        let mut conn = db.get_connection().await?;
        conn.execute_batch(workloads::INSERT_SCHEMA_SQLITE).await?;
        if mode == "insert_bulk" {
            let n = conn
                .bulk_insert(workloads::INSERT_TABLE, &workloads::INSERT_COLUMNS, &rows)
                .await?;
            black_box(n);
            return Ok(());
        }
        for chunk in rows.chunks(INSERT_TX_ROWS) {
            let mut tx = conn.begin().await?;
            let mut stmt = tx.prepare(INSERT_SQL_DOLLAR).await?;
            for row in chunk {
                stmt.dml(row).await?;
            }
            drop(stmt);
            tx.commit().await?;
        }
        Ok(())
    })
}

/// `COUNT` Turso point lookups of the lookup dataset (a Turso file next to `path`): raw (a
/// statement prepared once, `query_row`, decode) or the middleware (a prepared statement and
/// `one::<BenchRow>`), as `turso_single_row_lookup` does; `turso_checkout_query_one`: a pool
/// checkout and `query(sql).params(..).one()` per lookup. Needs `--features turso`.
#[cfg(feature = "turso")]
fn turso_lookups(
    mode: &str,
    count: usize,
    path: &std::path::Path,
) -> Result<(), SqlMiddlewareDbError> {
    use sql_middleware_bench::turso as bt;
    let n = dataset::bench_lookups();
    let ids = dataset::shuffled_ids(n);
    let file = path.with_file_name(format!("lookup_{n}.turso.db"));
    let rt = runtime()?;
    rt.block_on(async {
        bt::ensure_lookup_db(&file, n).await?;
        if mode == "turso_raw" {
            let (_db, conn) = bt::open_raw(&file).await?;
            let mut st = conn
                .prepare(dataset::LOOKUP_SQL_QMARK)
                .await
                .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string()))?;
            for i in 0..=count {
                let id = ids[i % ids.len()];
                black_box(
                    bt::raw_lookup(&mut st, black_box(id))
                        .await
                        .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string()))?,
                );
            }
            return Ok(());
        }
        let db = ConfigAndPool::turso(&file).build().await?;
        let mut buf = [RowValues::Int(0)];
        if mode == "turso_checkout_query_one" {
            for i in 0..=count {
                buf[0] = RowValues::Int(black_box(ids[i % ids.len()]));
                let mut conn = db.get_connection().await?;
                let row: BenchRow = conn
                    .query(dataset::LOOKUP_SQL_DOLLAR)
                    .params(&buf)
                    .one()
                    .await?;
                black_box(row);
            }
            return Ok(());
        }
        let mut conn = db.get_connection().await?;
        let mut stmt = conn.prepare(dataset::LOOKUP_SQL_DOLLAR).await?;
        for i in 0..=count {
            buf[0] = RowValues::Int(black_box(ids[i % ids.len()]));
            black_box(stmt.one::<BenchRow>(&buf).await?);
        }
        Ok(())
    })
}

/// `COUNT` Postgres point lookups on a current-thread runtime (the caller and the connection
/// task on one thread, as under valgrind anyway): raw tokio-postgres (statement prepared once,
/// `query_one`, decode by index, as `tokio_postgres_raw` does), the middleware's prepared
/// `stmt.one`, or its per-call `query(sql).params(..).one()`.
#[cfg(feature = "postgres")]
fn postgres_lookups(mode: &str, count: usize) -> Result<(), SqlMiddlewareDbError> {
    use sql_middleware_bench::postgres as bp;
    let n = dataset::bench_lookups();
    let ids = dataset::shuffled_ids(n);
    let base = pg::base_url();
    let schema = format!("{}_cg", dataset::postgres_schema(n));
    let url = bp::plain_text_url(&pg::url_with_search_path(&base, &schema));
    let sql = dataset::LOOKUP_SQL_DOLLAR;
    let rt = runtime()?;
    rt.block_on(async {
        let mut admin = bp::connect_raw(&base).await?;
        bp::create_lookup_schema(&mut admin, &schema, n).await?;
        let run = async {
            if mode == "pg_raw" {
                let client = bp::connect_raw(&url).await?;
                let stmt = client
                    .prepare(sql)
                    .await
                    .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string()))?;
                for i in 0..=count {
                    let id = ids[i % ids.len()] as i32;
                    let row = client
                        .query_one(&stmt, &[&black_box(id)])
                        .await
                        .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string()))?;
                    black_box(
                        bp::decode_row(&row).map_err(|e| {
                            SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string())
                        })?,
                    );
                }
                return Ok(());
            }
            let db = sql_middleware_bench::plain(ConfigAndPool::postgres(&url))
                .build()
                .await?;
            let mut conn = db.get_connection().await?;
            let mut buf = [RowValues::Int(0)];
            if mode == "pg_middleware" {
                let mut stmt = conn.prepare(sql).await?;
                for i in 0..=count {
                    buf[0] = RowValues::Int(black_box(ids[i % ids.len()]));
                    black_box(stmt.one::<BenchRow>(&buf).await?);
                }
            } else {
                for i in 0..=count {
                    buf[0] = RowValues::Int(black_box(ids[i % ids.len()]));
                    let row: BenchRow = conn.query(sql).params(&buf).one().await?;
                    black_box(row);
                }
            }
            Ok::<_, SqlMiddlewareDbError>(())
        };
        let r = run.await;
        bp::drop_schema(&admin, &schema).await?;
        r
    })
}

/// Lookups inside transactions, to show what a retrying transaction adds to a plain one:
/// - `tx_lookups` / `retry_tx_lookups`: COUNT lookups (`query(sql).params(..).one()`) inside one
///   plain `Tx`, or inside the closure of one retrying transaction (`pool.transaction`): the
///   per-statement path, which the retrying call must leave as it is;
/// - `checkout_tx_per_lookup` / `retry_tx_per_lookup`: COUNT transactions of one lookup each,
///   as checkout + `begin` + lookup + `commit`, or as one retrying transaction (which checks
///   out, begins and commits itself): the retrying call's own cost per transaction.
fn tx_lookups(
    mode: &str,
    count: usize,
    path: &std::path::Path,
) -> Result<(), SqlMiddlewareDbError> {
    let ids = dataset::shuffled_ids(dataset::bench_lookups());
    let id_at = |i: usize| ids[i % ids.len()];
    let builder = plain_pool(path);
    let policy = RetryPolicy::new();
    runtime()?.block_on(async {
        let db = builder.build().await?;
        match mode {
            "tx_lookups" => {
                let mut conn = db.get_connection().await?;
                let mut tx = conn.begin().await?;
                let mut buf = [RowValues::Int(0)];
                for i in 0..=count {
                    buf[0] = RowValues::Int(black_box(id_at(i)));
                    let row: BenchRow = tx
                        .query(dataset::LOOKUP_SQL_DOLLAR)
                        .params(&buf)
                        .one()
                        .await?;
                    black_box(row);
                }
                tx.commit().await?;
            }
            "retry_tx_lookups" => {
                // The closure's future may borrow only the transaction: what it reads from
                // outside is moved (or cloned) into each attempt.
                let ids = std::sync::Arc::new(ids.clone());
                db.transaction(&policy, |tx| {
                    let ids = std::sync::Arc::clone(&ids);
                    Box::pin(async move {
                        let mut buf = [RowValues::Int(0)];
                        for i in 0..=count {
                            buf[0] = RowValues::Int(black_box(ids[i % ids.len()]));
                            let row: BenchRow = tx
                                .query(dataset::LOOKUP_SQL_DOLLAR)
                                .params(&buf)
                                .one()
                                .await?;
                            black_box(row);
                        }
                        Ok::<_, SqlMiddlewareDbError>(())
                    })
                })
                .await
                .map_err(|e| e.into_error())?;
            }
            "checkout_tx_per_lookup" => {
                for i in 0..=count {
                    let buf = [RowValues::Int(black_box(id_at(i)))];
                    let mut conn = db.get_connection().await?;
                    let mut tx = conn.begin().await?;
                    let row: BenchRow = tx
                        .query(dataset::LOOKUP_SQL_DOLLAR)
                        .params(&buf)
                        .one()
                        .await?;
                    tx.commit().await?;
                    black_box(row);
                }
            }
            _ => {
                for i in 0..=count {
                    let id = black_box(id_at(i));
                    let row: BenchRow = db
                        .transaction(&policy, |tx| {
                            Box::pin(async move {
                                tx.query(dataset::LOOKUP_SQL_DOLLAR)
                                    .params(&[RowValues::Int(id)])
                                    .one()
                                    .await
                            })
                        })
                        .await
                        .map_err(|e: RetryError<SqlMiddlewareDbError>| e.into_error())?;
                    black_box(row);
                }
            }
        }
        Ok::<_, SqlMiddlewareDbError>(())
    })
}

/// Rows per insert transaction (the `database_inserts` target's R).
const INSERT_TX_ROWS: usize = 1000;
