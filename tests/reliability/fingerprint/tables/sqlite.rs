//! SQLite's side of the session fingerprint: its pragmas and statements; the fingerprint is the
//! SQLite family's (`lite_fingerprint` in `fingerprint.rs`).

use sql_middleware::prelude::*;

use super::super::*;

/// Per-connection SQLite pragmas the fingerprint reads (each one the table changes).
const SQLITE_PRAGMAS: &[&str] = &[
    "cache_size",
    "recursive_triggers",
    "automatic_index",
    "temp_store",
    "foreign_keys",
    "query_only",
    "synchronous",
    "busy_timeout",
    "reverse_unordered_selects",
    "cell_size_check",
    "secure_delete",
    "ignore_check_constraints",
    "legacy_alter_table",
    "trusted_schema",
    "cache_spill",
    "mmap_size",
    "wal_autocheckpoint",
    "read_uncommitted",
    "max_page_count",
    "threads",
    "analysis_limit",
    "journal_size_limit",
    "fullfsync",
    "checkpoint_fullfsync",
    "count_changes",
    "writable_schema",
    "locking_mode",
];

fn cases() -> Vec<Case> {
    vec![
        c("PRAGMA cache_size = -4321"),
        c("PRAGMA main.cache_size = 777"),
        c("pragma cache_size(555)"),
        c("/* a comment first */ PRAGMA recursive_triggers = ON"),
        c("PRAGMA case_sensitive_like = ON"),
        c("PRAGMA \"automatic_index\" = 0"),
        c("PRAGMA temp_store = MEMORY").skip(IN_TX, OUTSIDE_TX_ONLY),
        c("PRAGMA foreign_keys = OFF").skip(IN_TX, OUTSIDE_TX_ONLY),
        c("PRAGMA query_only = 1"),
        c("PRAGMA synchronous = OFF").skip(IN_TX, OUTSIDE_TX_ONLY),
        r("PRAGMA busy_timeout = 1234").skip(
            &[Raw, TxRaw],
            "the middleware owns SQLite's busy handler: it is put back after every raw closure, \
             so a raw busy_timeout never outlives the closure that set it",
        ),
        c("PRAGMA reverse_unordered_selects = 1"),
        c("PRAGMA cell_size_check = 1"),
        r("PRAGMA secure_delete = 1"),
        c("PRAGMA ignore_check_constraints = 1"),
        c("PRAGMA legacy_alter_table = 1"),
        c("PRAGMA trusted_schema = 0"),
        c("PRAGMA cache_spill = 0"),
        r("PRAGMA mmap_size = 65536"),
        r("PRAGMA wal_autocheckpoint = 77"),
        c("PRAGMA read_uncommitted = 1"),
        r("PRAGMA max_page_count = 123456"),
        r("PRAGMA threads = 2"),
        r("PRAGMA analysis_limit = 100"),
        r("PRAGMA journal_size_limit = 4096"),
        c("PRAGMA fullfsync = 1"),
        c("PRAGMA checkpoint_fullfsync = 1"),
        c("PRAGMA count_changes = 1"),
        c("PRAGMA writable_schema = ON"),
        r("PRAGMA locking_mode = EXCLUSIVE"),
        c("CREATE TEMP TABLE fp_t (a INTEGER)"),
        c("CREATE TEMPORARY TABLE IF NOT EXISTS \"fp t2\" (a)"),
        c("CREATE TABLE temp.fp_q (a INTEGER)"),
        c("create table \"temp\".fp_q2 (a)"),
        c("CREATE TEMP TABLE fp_as AS SELECT 1 AS a"),
        c("CREATE TEMPORARY VIEW IF NOT EXISTS \"q x\" AS SELECT 1 AS a"),
        c("CREATE VIEW temp.fp_v AS SELECT 1 AS a"),
        c("CREATE TEMP TRIGGER fp_tr AFTER INSERT ON fp_base BEGIN SELECT 1; END"),
        c("CREATE TRIGGER temp.fp_tr2 AFTER INSERT ON main.fp_base BEGIN SELECT 1; END"),
        script("CREATE TEMP TABLE fp_ti (a INTEGER); CREATE INDEX temp.fp_ti_ix ON fp_ti (a)"),
        script(
            "CREATE TABLE temp.fp_tu (a INTEGER); CREATE UNIQUE INDEX IF NOT EXISTS temp.fp_tu_ix ON fp_tu (a)",
        ),
        c("ATTACH ':memory:' AS fp_mem").skip(IN_TX, OUTSIDE_TX_ONLY),
        c("attach database '' as \"fp anon\"").skip(IN_TX, OUTSIDE_TX_ONLY),
    ]
}

/// The SQLite engine's table.
pub struct Sqlite;

impl Table for Sqlite {
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
        lite_fingerprint(conn, SQLITE_PRAGMAS).await
    }

    async fn raw(conn: &mut MiddlewarePoolConnection, case: &Case) -> Result<(), String> {
        let sql = case.sql;
        conn.with_blocking_sqlite(move |c| c.execute_batch(sql))
            .await
            .map_err(err)
    }

    async fn raw_in_tx(tx: &mut Tx<'_>, case: &Case) -> Result<(), String> {
        let sql = case.sql;
        tx.with_blocking_sqlite(move |c| c.execute_batch(sql))
            .await
            .map_err(err)
    }
}
