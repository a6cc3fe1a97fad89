//! Reliability 25.1, generated: a fresh session every time, for every session-changing statement
//! of an engine crossed with every API path.
//!
//! For each engine there is a table of statements that change a connection's session (settings,
//! the role, temporary objects in several SQL forms, attached databases, advisory locks,
//! listeners, `PREPARE`d statements and cursors, and the same changes hidden inside a function
//! or a `DO` block). Each statement runs through each API path: `query(..)` with every terminal,
//! `prepare` with every statement method, `execute_batch`, `pipeline`, `stream`, raw access,
//! inside a committed `Tx`, inside a committed savepoint, and through the `Executor` trait on a
//! connection, a `Tx` and a savepoint.
//!
//! Each (statement, path) pair gets a pool of one connection, so the next borrower gets the same
//! connection back unless the pool discarded it:
//! 1. a borrower runs the statement through the path and returns the connection;
//! 2. the next borrower computes the fingerprint of its session and compares it with the
//!    fingerprint of a fresh connection (a separate pool on the same database): any difference
//!    is a leak;
//! 3. on that (clean) session the statement runs again through the path, and the fingerprint
//!    must now differ from the fresh one: otherwise the case checks nothing, and the test says
//!    so. This runs after step 2, never before it, so reading the fingerprint cannot itself
//!    make the middleware reset the connection and hide a leak.
//!
//! The fingerprint:
//! - SQLite and Turso: the value of every per-connection pragma the table changes (and the
//!   `LIKE` behaviour, since `case_sensitive_like` cannot be read back), the contents of
//!   `temp.sqlite_master`, and `PRAGMA database_list`;
//! - Postgres: `pg_settings` (name, setting), `current_user` and `session_user`, the relations
//!   in `pg_my_temp_schema()`, the advisory locks held by `pg_backend_pid()`,
//!   `pg_prepared_statements` made from SQL, `pg_cursors` and `pg_listening_channels()`;
//! - MySQL (read through raw access, MySQL's text protocol): every session variable but the
//!   three that differ between any two sessions (`pseudo_thread_id`, `rand_seed1/2`,
//!   `timestamp`), the default database, the user variables and the user lock the table sets,
//!   the presence of each temporary table and SQL prepared statement it makes, and whether a
//!   table outside `LOCK TABLES` can be read.
//!
//! A pair a path cannot run is skipped in the table, with the reason, and counted: scripts of
//! several statements need a path that runs scripts; statements the engine or the middleware
//! refuses inside a transaction are skipped on the transaction paths. `bulk_insert` runs no SQL
//! of the caller's, so it is no path here. Any other failure to run a pair fails the test.
//! `PRAGMA defer_foreign_keys` is not in the table: SQLite switches it off at every commit,
//! autocommit included, so it never outlives its own transaction.
//!
//! Prints `session_fingerprint backend=X cases=N leaked=M skipped=K`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use futures::TryStreamExt;
use sql_middleware::prelude::*;

use crate::common::backends::{Kind, TestDb};
use crate::common::groups;

/// Key (what was read) to value (as text).
type Fingerprint = BTreeMap<String, String>;

/// An API path a statement can run through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    QuerySelect,
    QueryDml,
    /// `one` for statements that return a row, `optional` for those that do not.
    QueryOne,
    QueryAll,
    QueryStream,
    PrepSelect,
    PrepDml,
    PrepOne,
    PrepAll,
    PrepStream,
    ExecuteBatch,
    Pipeline,
    Raw,
    TxQuery,
    TxPrepare,
    TxBatch,
    TxRaw,
    SpQuery,
    SpBatch,
    ExecConn,
    ExecTx,
    ExecSp,
}

use Path::*;

const PATHS: [Path; 22] = [
    QuerySelect,
    QueryDml,
    QueryOne,
    QueryAll,
    QueryStream,
    PrepSelect,
    PrepDml,
    PrepOne,
    PrepAll,
    PrepStream,
    ExecuteBatch,
    Pipeline,
    Raw,
    TxQuery,
    TxPrepare,
    TxBatch,
    TxRaw,
    SpQuery,
    SpBatch,
    ExecConn,
    ExecTx,
    ExecSp,
];

/// The paths that run inside a transaction of the middleware.
const IN_TX: &[Path] = &[
    TxQuery, TxPrepare, TxBatch, TxRaw, SpQuery, SpBatch, ExecTx, ExecSp,
];

/// The paths that run a script of several statements.
const SCRIPT_PATHS: &[Path] = &[ExecuteBatch, Raw, TxBatch, TxRaw, SpBatch];

/// The other paths: one statement, prepared.
const NOT_SCRIPT_PATHS: &[Path] = &[
    QuerySelect,
    QueryDml,
    QueryOne,
    QueryAll,
    QueryStream,
    PrepSelect,
    PrepDml,
    PrepOne,
    PrepAll,
    PrepStream,
    Pipeline,
    TxQuery,
    TxPrepare,
    SpQuery,
    ExecConn,
    ExecTx,
    ExecSp,
];

impl Path {
    fn name(self) -> &'static str {
        match self {
            QuerySelect => "query.select",
            QueryDml => "query.dml",
            QueryOne => "query.one/optional",
            QueryAll => "query.all",
            QueryStream => "query.stream",
            PrepSelect => "prepare.select",
            PrepDml => "prepare.dml",
            PrepOne => "prepare.one/optional",
            PrepAll => "prepare.all",
            PrepStream => "prepare.stream",
            ExecuteBatch => "execute_batch",
            Pipeline => "pipeline",
            Raw => "raw",
            TxQuery => "tx.query",
            TxPrepare => "tx.prepare",
            TxBatch => "tx.execute_batch",
            TxRaw => "tx.raw",
            SpQuery => "savepoint.query",
            SpBatch => "savepoint.execute_batch",
            ExecConn => "executor(conn).prepare",
            ExecTx => "executor(tx).pipeline",
            ExecSp => "executor(savepoint).query",
        }
    }
}

/// One session-changing statement and the paths it cannot run through.
#[derive(Debug, Clone)]
struct Case {
    sql: &'static str,
    /// The statement returns a row (so `one` applies; else `optional`).
    rows: bool,
    /// Several statements: only the script paths run it.
    script: bool,
    /// Paths skipped, and why.
    skip: Option<(&'static [Path], &'static str)>,
}

impl Case {
    fn skip_reason(&self, path: Path) -> Option<&'static str> {
        if self.script && !SCRIPT_PATHS.contains(&path) {
            return Some("a script of several statements; this path runs one statement");
        }
        match self.skip {
            Some((paths, why)) if paths.contains(&path) => Some(why),
            _ => None,
        }
    }
}

/// A statement that returns no rows.
fn c(sql: &'static str) -> Case {
    Case {
        sql,
        rows: false,
        script: false,
        skip: None,
    }
}

/// A statement that returns a row.
fn r(sql: &'static str) -> Case {
    Case {
        rows: true,
        ..c(sql)
    }
}

/// A script of several statements.
fn script(sql: &'static str) -> Case {
    Case {
        script: true,
        ..c(sql)
    }
}

impl Case {
    fn skip(mut self, paths: &'static [Path], why: &'static str) -> Case {
        self.skip = Some((paths, why));
        self
    }
}

const OUTSIDE_TX_ONLY: &str = "the engine ignores or refuses it inside a transaction, and the middleware refuses it inside a Tx with TransactionState";

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

fn sqlite_cases() -> Vec<Case> {
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

fn turso_cases() -> Vec<Case> {
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

fn postgres_cases() -> Vec<Case> {
    vec![
        c("SET work_mem = '7MB'"),
        c("set session statement_timeout to 4321"),
        c("SET search_path TO public"),
        r("SELECT set_config('lock_timeout', '2345', false)"),
        c(
            "DO $$BEGIN PERFORM set_config('idle_in_transaction_session_timeout', '3456', false); END$$",
        ),
        c("DO $fp$ BEGIN EXECUTE 'SET application_name = ''fp_do'''; END $fp$"),
        r("SELECT sqlmw_fp_guc()"),
        r("SELECT pg_advisory_lock(7340001)"),
        r("SELECT pg_try_advisory_lock(7340002)"),
        r("select pg_advisory_lock_shared(7340003)"),
        r("SELECT sqlmw_fp_lock()"),
        c("DO $$BEGIN PERFORM pg_advisory_lock(7340005); END$$"),
        c("SET ROLE pg_monitor"),
        r("SELECT set_config('role', 'pg_monitor', false)"),
        c("SET SESSION AUTHORIZATION pg_monitor"),
        c("CREATE TEMP TABLE fp_t (a int)"),
        c("CREATE TEMPORARY TABLE IF NOT EXISTS \"fp x\" (a int)"),
        c("CREATE TABLE pg_temp.fp_q (a int)"),
        c("CREATE TEMP TABLE fp_c (a int) ON COMMIT DELETE ROWS"),
        c("CREATE TEMP VIEW fp_v AS SELECT 1 AS a"),
        c("CREATE VIEW pg_temp.fp_v2 AS SELECT 1 AS a"),
        c("CREATE TEMP SEQUENCE fp_s"),
        c("create sequence pg_temp.fp_s2"),
        c("SELECT 1 AS a INTO TEMP fp_i"),
        c("CREATE TEMP TABLE fp_as AS SELECT 1 AS a"),
        r("SELECT sqlmw_fp_temp()"),
        c("DO $$BEGIN CREATE TEMP TABLE fp_do (a int); END$$"),
        script("CREATE TEMP TABLE fp_m (a int); CREATE INDEX fp_m_ix ON fp_m (a)"),
        c("LISTEN fp_chan"),
        c("DO $$BEGIN EXECUTE 'LISTEN fp_do_chan'; END$$"),
        c("PREPARE fp_p AS SELECT 1"),
        c("DECLARE fp_cur CURSOR WITH HOLD FOR SELECT 1"),
    ]
}

/// Objects the Postgres statements use, made once in the test's schema.
const PG_SETUP: &str = "
CREATE FUNCTION sqlmw_fp_guc() RETURNS int LANGUAGE plpgsql AS $$
BEGIN PERFORM set_config('work_mem', '3MB', false); RETURN 1; END $$;
CREATE FUNCTION sqlmw_fp_lock() RETURNS int LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_advisory_lock(7340004); RETURN 1; END $$;
CREATE FUNCTION sqlmw_fp_temp() RETURNS int LANGUAGE plpgsql AS $$
BEGIN CREATE TEMP TABLE IF NOT EXISTS fp_fn (a int); RETURN 1; END $$;
";

fn mysql_cases() -> Vec<Case> {
    // MySQL commits implicitly around `LOCK TABLES`: the middleware refuses it inside a Tx.
    const NO_TX: &str = "MySQL commits implicitly around it: the middleware refuses it inside a Tx";
    vec![
        c("SET SESSION group_concat_max_len = 4321"),
        c("set @@session.sort_buffer_size = 1048577"),
        c("SET sql_mode = 'ANSI_QUOTES'"),
        c("SET time_zone = '+05:00'"),
        c("SET NAMES latin1"),
        c("SET autocommit = 0"),
        c("SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE"),
        c("SET SESSION TRANSACTION READ ONLY"),
        c("SET @fp_u = 1"),
        r("SELECT @fp_v := 2"),
        r("SELECT GET_LOCK('sqlmw_fp_lock', 0)"),
        c("CALL sqlmw_fp_proc()"),
        r("SELECT sqlmw_fp_fn()"),
        c("USE information_schema"),
        c("CREATE TEMPORARY TABLE fp_t (a INT)"),
        c("CREATE TEMPORARY TABLE IF NOT EXISTS `fp t2` (a INT)"),
        c("CREATE TEMPORARY TABLE fp_as AS SELECT 1 AS a"),
        script("CREATE TEMPORARY TABLE fp_s1 (a INT); INSERT INTO fp_s1 VALUES (1)"),
        c("PREPARE fp_p FROM 'SELECT 1'").skip(
            NOT_SCRIPT_PATHS,
            "MySQL cannot run PREPARE through the prepared-statement protocol (1295): it runs \
             on the paths that run scripts",
        ),
        c("LOCK TABLES fp_base READ").skip(IN_TX, NO_TX),
    ]
}

/// Objects the MySQL statements use, made once in the test's database.
const MY_SETUP: &str = "
CREATE TABLE fp_base (a INT);
CREATE TABLE fp_other (a INT);
CREATE PROCEDURE sqlmw_fp_proc() BEGIN SET @@session.max_sort_length = 777; END;
CREATE FUNCTION sqlmw_fp_fn() RETURNS INT BEGIN SET @fp_fn = 3; RETURN 1; END;
";

/// The MySQL session variables that differ between any two sessions.
const MY_VOLATILE: &str = "'PSEUDO_THREAD_ID', 'RAND_SEED1', 'RAND_SEED2', 'TIMESTAMP'";

/// The rows of `sql` on MySQL's text protocol, one line per row, or the error.
#[cfg(feature = "mysql")]
async fn my_rows_text(c: &mut sql_middleware::drivers::mysql_async::Conn, sql: &str) -> String {
    use sql_middleware::drivers::mysql_async::prelude::Queryable;
    match c
        .query::<sql_middleware::drivers::mysql_async::Row, _>(sql)
        .await
    {
        Ok(rows) => rows
            .iter()
            .map(|r| format!("{:?}", r.clone().unwrap()))
            .collect::<Vec<_>>()
            .join(" | "),
        Err(e) => format!("error: {e}"),
    }
}

/// The table the SQLite and Turso temporary triggers watch.
const SQLITE_SETUP: &str = "CREATE TABLE fp_base (a INTEGER)";

fn cases(kind: Kind) -> Vec<Case> {
    match kind {
        Kind::Sqlite => sqlite_cases(),
        Kind::Turso => turso_cases(),
        Kind::Postgres => postgres_cases(),
        Kind::Mysql => mysql_cases(),
    }
}

fn err(e: impl std::fmt::Debug) -> String {
    format!("{e:?}")
}

/// Runs the case's SQL with the engine's own connection.
async fn raw(conn: &mut MiddlewarePoolConnection, kind: Kind, case: &Case) -> Result<(), String> {
    let sql = case.sql;
    match kind {
        #[cfg(feature = "sqlite")]
        Kind::Sqlite => conn
            .with_blocking_sqlite(move |c| c.execute_batch(sql))
            .await
            .map_err(err),
        #[cfg(feature = "postgres")]
        Kind::Postgres => conn
            .postgres_client()
            .await
            .map_err(err)?
            .batch_execute(sql)
            .await
            .map_err(err),
        #[cfg(feature = "turso")]
        Kind::Turso => turso_raw(conn.turso_connection().await.map_err(err)?, case).await,
        #[cfg(feature = "mysql")]
        Kind::Mysql => {
            use sql_middleware::drivers::mysql_async::prelude::Queryable;
            conn.mysql_connection()
                .await
                .map_err(err)?
                .query_drop(sql)
                .await
                .map_err(err)
        }
        #[allow(unreachable_patterns)]
        _ => Err(format!("{kind:?} is not in this build")),
    }
}

/// [`raw`], inside a `Tx`.
async fn raw_in_tx(tx: &mut Tx<'_>, kind: Kind, case: &Case) -> Result<(), String> {
    let sql = case.sql;
    match kind {
        #[cfg(feature = "sqlite")]
        Kind::Sqlite => tx
            .with_blocking_sqlite(move |c| c.execute_batch(sql))
            .await
            .map_err(err),
        #[cfg(feature = "postgres")]
        Kind::Postgres => tx
            .postgres_client()
            .await
            .map_err(err)?
            .batch_execute(sql)
            .await
            .map_err(err),
        #[cfg(feature = "turso")]
        Kind::Turso => turso_raw(tx.turso_connection().await.map_err(err)?, case).await,
        #[cfg(feature = "mysql")]
        Kind::Mysql => {
            use sql_middleware::drivers::mysql_async::prelude::Queryable;
            tx.mysql_connection()
                .await
                .map_err(err)?
                .query_drop(sql)
                .await
                .map_err(err)
        }
        #[allow(unreachable_patterns)]
        _ => Err(format!("{kind:?} is not in this build")),
    }
}

/// Turso's `execute_batch` refuses statements that return rows: those run as a query whose
/// rows are read to the end.
#[cfg(feature = "turso")]
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

/// Through the `Executor` trait: prepare and run.
async fn exec_prepare(e: &mut impl Executor, sql: &str) -> Result<(), String> {
    let mut st = e.prepare(sql).await.map_err(err)?;
    st.dml(&[]).await.map_err(err).map(drop)
}

/// Through the `Executor` trait: a pipeline of one parameter set.
async fn exec_pipeline(e: &mut impl Executor, sql: &str) -> Result<(), String> {
    e.pipeline(sql, &[&[]]).await.map_err(err).map(drop)
}

/// Through the `Executor` trait: a query, every row decoded.
async fn exec_all(e: &mut impl Executor, sql: &str) -> Result<(), String> {
    e.query(sql)
        .all::<CustomDbRow>()
        .await
        .map_err(err)
        .map(drop)
}

/// Runs the case's statement through `path` on `conn`.
async fn run(
    conn: &mut MiddlewarePoolConnection,
    kind: Kind,
    path: Path,
    case: &Case,
) -> Result<(), String> {
    let sql = case.sql;
    match path {
        QuerySelect => conn.query(sql).select().await.map_err(err).map(drop),
        QueryDml => conn.query(sql).dml().await.map_err(err).map(drop),
        QueryOne if case.rows => conn
            .query(sql)
            .one::<CustomDbRow>()
            .await
            .map_err(err)
            .map(drop),
        QueryOne => conn
            .query(sql)
            .optional::<CustomDbRow>()
            .await
            .map_err(err)
            .map(drop),
        QueryAll => conn
            .query(sql)
            .all::<CustomDbRow>()
            .await
            .map_err(err)
            .map(drop),
        QueryStream => {
            let mut s = conn.query(sql).stream::<CustomDbRow>();
            while s.try_next().await.map_err(err)?.is_some() {}
            Ok(())
        }
        PrepSelect | PrepDml | PrepOne | PrepAll | PrepStream => {
            let mut st = conn.prepare(sql).await.map_err(err)?;
            match path {
                PrepSelect => st.select(&[]).await.map_err(err).map(drop),
                PrepDml => st.dml(&[]).await.map_err(err).map(drop),
                PrepOne if case.rows => st.one::<CustomDbRow>(&[]).await.map_err(err).map(drop),
                PrepOne => st.optional::<CustomDbRow>(&[]).await.map_err(err).map(drop),
                PrepAll => st.all::<CustomDbRow>(&[]).await.map_err(err).map(drop),
                _ => {
                    let mut s = st.stream::<CustomDbRow>(&[]);
                    while s.try_next().await.map_err(err)?.is_some() {}
                    Ok(())
                }
            }
        }
        ExecuteBatch => conn.execute_batch(sql).await.map_err(err),
        Pipeline => conn.pipeline(sql, &[&[]]).await.map_err(err).map(drop),
        Raw => raw(conn, kind, case).await,
        ExecConn => exec_prepare(conn, sql).await,
        TxQuery | TxPrepare | TxBatch | TxRaw | ExecTx => {
            let mut tx = conn.begin().await.map_err(err)?;
            match path {
                TxQuery => tx.query(sql).select().await.map_err(err).map(drop),
                TxPrepare => {
                    let mut st = tx.prepare(sql).await.map_err(err)?;
                    st.dml(&[]).await.map_err(err).map(drop)
                }
                TxBatch => tx.execute_batch(sql).await.map_err(err),
                TxRaw => raw_in_tx(&mut tx, kind, case).await,
                _ => exec_pipeline(&mut tx, sql).await,
            }?;
            tx.commit().await.map_err(err)
        }
        SpQuery | SpBatch | ExecSp => {
            let mut tx = conn.begin().await.map_err(err)?;
            {
                let mut sp = tx.savepoint().await.map_err(err)?;
                match path {
                    SpQuery => sp.query(sql).dml().await.map_err(err).map(drop),
                    SpBatch => sp.execute_batch(sql).await.map_err(err),
                    _ => exec_all(&mut sp, sql).await,
                }?;
                sp.commit().await.map_err(err)?;
            }
            tx.commit().await.map_err(err)
        }
    }
}

/// The rows of `sql`, one line per row, values by their `Debug` form.
async fn rows_text(conn: &mut MiddlewarePoolConnection, sql: &str) -> Result<String, String> {
    let rs = conn
        .query(sql)
        .select()
        .await
        .map_err(|e| format!("{sql}: {e:?}"))?;
    let mut out = String::new();
    for row in rs.iter() {
        if !out.is_empty() {
            out.push_str(" | ");
        }
        let _ = write!(out, "{:?}", row.values());
    }
    Ok(out)
}

async fn fingerprint(
    conn: &mut MiddlewarePoolConnection,
    kind: Kind,
) -> Result<Fingerprint, String> {
    let mut fp = Fingerprint::new();
    match kind {
        #[cfg(feature = "mysql")]
        Kind::Mysql => {
            let c = conn.mysql_connection().await.map_err(err)?;
            let probes = [
                (
                    "session variables".to_owned(),
                    format!(
                        "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.SESSION_VARIABLES \
                         WHERE VARIABLE_NAME NOT IN ({MY_VOLATILE}) ORDER BY 1"
                    ),
                ),
                ("database".to_owned(), "SELECT DATABASE()".to_owned()),
                (
                    "user variables".to_owned(),
                    "SELECT @fp_u, @fp_v, @fp_fn".to_owned(),
                ),
                (
                    "user lock".to_owned(),
                    "SELECT IS_USED_LOCK('sqlmw_fp_lock') = CONNECTION_ID()".to_owned(),
                ),
                ("prepared fp_p".to_owned(), "EXECUTE fp_p".to_owned()),
                (
                    "a table outside LOCK TABLES".to_owned(),
                    "SELECT COUNT(*) FROM fp_other".to_owned(),
                ),
            ];
            for (key, sql) in probes {
                fp.insert(key, my_rows_text(c, &sql).await);
            }
            for t in ["fp_t", "`fp t2`", "fp_as", "fp_s1"] {
                let seen = my_rows_text(c, &format!("SELECT COUNT(*) FROM {t}")).await;
                fp.insert(format!("temporary table {t}"), seen);
            }
        }
        #[cfg(not(feature = "mysql"))]
        Kind::Mysql => unreachable!("a MySQL test database needs the mysql feature"),
        Kind::Sqlite | Kind::Turso => {
            // Temp objects first: reading them opens the temp database, which then shows in
            // `database_list` on every connection alike.
            fp.insert(
                "temp.sqlite_master".into(),
                rows_text(
                    conn,
                    "SELECT type, name, tbl_name, sql FROM temp.sqlite_master ORDER BY type, name",
                )
                .await?,
            );
            fp.insert(
                "database_list".into(),
                rows_text(conn, "PRAGMA database_list").await?,
            );
            let pragmas = if kind == Kind::Sqlite {
                SQLITE_PRAGMAS
            } else {
                TURSO_PRAGMAS
            };
            for p in pragmas {
                let v = rows_text(conn, &format!("PRAGMA {p}")).await?;
                fp.insert(format!("pragma {p}"), v);
            }
            // `case_sensitive_like` cannot be read back; its effect can.
            fp.insert(
                "'a' LIKE 'A'".into(),
                rows_text(conn, "SELECT 'a' LIKE 'A'").await?,
            );
        }
        Kind::Postgres => {
            let rs = conn
                .query("SELECT name::text, setting::text FROM pg_settings ORDER BY name")
                .select()
                .await
                .map_err(err)?;
            for row in rs.iter() {
                let name: String = row.try_get(0).map_err(err)?;
                let setting: Option<String> = row.try_get(1).map_err(err)?;
                fp.insert(format!("guc {name}"), format!("{setting:?}"));
            }
            for (key, sql) in [
                ("users", "SELECT current_user::text, session_user::text"),
                (
                    "temp objects",
                    "SELECT relname::text, relkind::text FROM pg_class \
                     WHERE relnamespace = pg_my_temp_schema() ORDER BY 1",
                ),
                (
                    "advisory locks",
                    "SELECT classid::text, objid::text, objsubid::text, mode::text, granted \
                     FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' \
                     ORDER BY 1, 2, 3, 4",
                ),
                (
                    "prepared statements",
                    "SELECT name::text, statement FROM pg_prepared_statements WHERE from_sql \
                     ORDER BY 1",
                ),
                (
                    "cursors",
                    "SELECT name::text, statement, is_holdable FROM pg_cursors ORDER BY 1",
                ),
                (
                    "listening channels",
                    "SELECT c::text FROM pg_listening_channels() AS c ORDER BY 1",
                ),
            ] {
                fp.insert(key.into(), rows_text(conn, sql).await?);
            }
        }
    }
    Ok(fp)
}

/// What differs between `seen` and `fresh`, one `key: seen (fresh: ...)` per difference.
fn diff(seen: &Fingerprint, fresh: &Fingerprint) -> String {
    let mut out = Vec::new();
    for key in seen
        .keys()
        .chain(fresh.keys().filter(|k| !seen.contains_key(*k)))
    {
        let (a, b) = (seen.get(key), fresh.get(key));
        if a != b {
            out.push(format!(
                "{key}: {} (fresh: {})",
                a.map_or("<missing>", String::as_str),
                b.map_or("<missing>", String::as_str)
            ));
        }
    }
    out.join("; ")
}

async fn t_every_path_leaves_a_fresh_session(db: &TestDb) {
    let k = db.kind.name();
    let started = std::time::Instant::now();
    {
        let mut c = db.conn().await;
        let setup = match db.kind {
            Kind::Postgres => PG_SETUP,
            Kind::Sqlite | Kind::Turso => SQLITE_SETUP,
            Kind::Mysql => MY_SETUP,
        };
        c.execute_batch(setup)
            .await
            .unwrap_or_else(|e| panic!("[{k}] setup: {e:?}"));
    }
    let fresh_pool = db.builder().max_size(1).build().await.unwrap();
    let fresh = fingerprint(&mut fresh_pool.get_connection().await.unwrap(), db.kind)
        .await
        .unwrap_or_else(|e| panic!("[{k}] fresh fingerprint: {e}"));
    drop(fresh_pool);

    let table = cases(db.kind);
    let (mut ran, mut skipped) = (0usize, Vec::new());
    let (mut leaked, mut failed, mut no_effect) = (Vec::new(), Vec::new(), Vec::new());
    for case in &table {
        for path in PATHS {
            let pair = format!("`{}` via {}", case.sql, path.name());
            if let Some(why) = case.skip_reason(path) {
                skipped.push(format!("{pair}: {why}"));
                continue;
            }
            ran += 1;
            let pool = db.builder().max_size(1).build().await.unwrap();
            {
                let mut first = pool.get_connection().await.unwrap();
                if let Err(e) = run(&mut first, db.kind, path, case).await {
                    failed.push(format!("{pair}: {e}"));
                    continue;
                }
            }
            let mut next = pool.get_connection().await.unwrap();
            match fingerprint(&mut next, db.kind).await {
                Ok(fp) if fp == fresh => {
                    // Clean: the same statement on this session must change its fingerprint,
                    // or the case proves nothing.
                    let after = match run(&mut next, db.kind, path, case).await {
                        Ok(()) => fingerprint(&mut next, db.kind).await,
                        Err(e) => Err(format!("second run: {e}")),
                    };
                    match after {
                        Ok(fp) if fp == fresh => no_effect.push(pair),
                        Ok(_) => {}
                        Err(e) => failed.push(format!("{pair}: {e}")),
                    }
                }
                Ok(fp) => leaked.push(format!("{pair}: {}", diff(&fp, &fresh))),
                Err(e) => leaked.push(format!(
                    "{pair}: the next borrower cannot read its session: {e}"
                )),
            }
        }
    }
    println!(
        "session_fingerprint backend={k} cases={ran} leaked={} skipped={}",
        leaked.len(),
        skipped.len()
    );
    eprintln!(
        "[{k}] {} statements x {} paths in {:?}",
        table.len(),
        PATHS.len(),
        started.elapsed()
    );
    assert!(
        leaked.is_empty() && failed.is_empty() && no_effect.is_empty(),
        "[{k}] {} of {ran} (statement, path) pairs reached the next borrower:\n  {}\n\
         pairs that failed to run ({}):\n  {}\n\
         pairs with no effect on the first borrower, which check nothing ({}):\n  {}",
        leaked.len(),
        leaked.join("\n  "),
        failed.len(),
        failed.join("\n  "),
        no_effect.len(),
        no_effect.join("\n  "),
    );
}

crate::backend_tests! {
    let _group = groups::enter("fingerprint");
    async fn every_path_leaves_a_fresh_session(db) {
        t_every_path_leaves_a_fresh_session(&db).await
    }
}

crate::mysql_tests! {
    let _group = groups::enter("fingerprint");
    async fn every_path_leaves_a_fresh_session(db) {
        t_every_path_leaves_a_fresh_session(&db).await
    }
}
