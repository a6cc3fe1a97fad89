//! Turso's side of the session fingerprint: the pragmas it has and the SQLite forms it
//! supports; the fingerprint is the SQLite family's (`lite_fingerprint` in `fingerprint.rs`).

use sql_middleware::prelude::*;

use super::super::*;

/// The pragmas Turso has, and the cases it runs (the SQLite forms it supports).
const TURSO_PRAGMAS: &[&str] = &[
    "cache_size",
    "temp_store",
    "foreign_keys",
    "query_only",
    "synchronous",
    "busy_timeout",
    "ignore_check_constraints",
    "max_page_count",
    "cache_spill",
    "count_changes",
    "require_where",
    "short_column_names",
    "full_column_names",
];

fn cases() -> Vec<Case> {
    vec![
        c("PRAGMA cache_size = -4321"),
        c("PRAGMA main.cache_size = 777"),
        c("pragma cache_size(555)"),
        c("PRAGMA temp_store = MEMORY").skip(
            IN_TX,
            "Turso refuses to change temp_store inside a transaction",
        ),
        c("PRAGMA foreign_keys = OFF").skip(IN_TX, OUTSIDE_TX_ONLY),
        c("PRAGMA query_only = 1"),
        c("PRAGMA synchronous = OFF").skip(IN_TX, OUTSIDE_TX_ONLY),
        c("PRAGMA busy_timeout = 1234").skip(
            &[Raw, TxRaw, ExecuteBatch],
            "the middleware owns Turso's busy handler: raw access and a script outside a \
             transaction run with it on at the configured timeout and the next middleware \
             statement turns it off, so a raw or scripted busy_timeout never outlives them",
        ),
        c("PRAGMA ignore_check_constraints = 1"),
        r("PRAGMA max_page_count = 123456").skip(
            &[ExecuteBatch, TxBatch, SpBatch],
            "Turso's execute_batch refuses a statement that returns rows",
        ),
        c("PRAGMA cache_spill = 0"),
        c("PRAGMA count_changes = 1"),
        c("PRAGMA require_where = 1"),
        c("PRAGMA short_column_names = 0"),
        c("PRAGMA full_column_names = 1"),
        c("CREATE TEMP TABLE fp_t (a INTEGER)"),
        c("CREATE TEMPORARY TABLE IF NOT EXISTS \"fp t2\" (a)"),
        c("CREATE TABLE temp.fp_q (a INTEGER)"),
        c("CREATE TEMPORARY VIEW IF NOT EXISTS \"q x\" AS SELECT 1 AS a"),
        c("CREATE TEMP TRIGGER fp_tr AFTER INSERT ON fp_base BEGIN SELECT 1; END"),
        script("CREATE TEMP TABLE fp_ti (a INTEGER); CREATE INDEX temp.fp_ti_ix ON fp_ti (a)"),
        // No ATTACH: Turso refuses it unless the database is opened with its experimental
        // attach feature, which the middleware does not enable.
    ]
}

/// Turso's `execute_batch` refuses statements that return rows: those run as a query whose
/// rows are read to the end.
async fn turso_raw(
    c: &sql_middleware::drivers::turso::Connection,
    case: &Case,
) -> Result<(), String> {
    if !case.rows {
        return c.execute_batch(case.sql).await.map_err(err);
    }
    let mut rows = c.query(case.sql, ()).await.map_err(err)?;
    while rows.next().await.map_err(err)?.is_some() {}
    Ok(())
}

/// The Turso engine's table.
pub struct Turso;

impl Table for Turso {
    fn cases(_mariadb: bool) -> Vec<Case> {
        cases()
    }

    async fn setup(conn: &mut MiddlewarePoolConnection, _mariadb: bool) -> Result<(), String> {
        conn.execute_batch(LITE_SETUP).await.map_err(err)
    }

    async fn fingerprint(
        conn: &mut MiddlewarePoolConnection,
        _mariadb: bool,
    ) -> Result<Fingerprint, String> {
        lite_fingerprint(conn, TURSO_PRAGMAS).await
    }

    async fn raw(conn: &mut MiddlewarePoolConnection, case: &Case) -> Result<(), String> {
        turso_raw(conn.turso_connection().await.map_err(err)?, case).await
    }

    async fn raw_in_tx(tx: &mut Tx<'_>, case: &Case) -> Result<(), String> {
        turso_raw(tx.turso_connection().await.map_err(err)?, case).await
    }
}
