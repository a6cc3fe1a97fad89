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
//! - MySQL/MariaDB (read through raw access, in the text protocol, so that `EXECUTE` and
//!   `HANDLER` probes can run): `information_schema.SESSION_VARIABLES` minus the variables
//!   that change by themselves (see [`MYSQL_SELF_CHANGING`]), the value of every user variable
//!   the table sets, whether each temporary table it makes exists, whether each named lock it
//!   takes is held by this connection, `DATABASE()`, `LAST_INSERT_ID()`, whether each
//!   `PREPARE`d statement and `HANDLER` it opens exists, whether a table outside any
//!   `LOCK TABLES` can be read, and (MariaDB) the session's last value of a sequence.
//!
//! A pair a path cannot run is skipped in the table, with the reason, and counted: scripts of
//! several statements need a path that runs scripts; statements the engine or the middleware
//! refuses inside a transaction are skipped on the transaction paths. A pair the middleware
//! must refuse (MySQL's statements with an implicit commit, inside a `Tx`) must fail, and the
//! next borrower's session must still be fresh. `bulk_insert` runs no SQL
//! of the caller's, so it is no path here. Any other failure to run a pair fails the test.
//! `PRAGMA defer_foreign_keys` is not in the table: SQLite switches it off at every commit,
//! autocommit included, so it never outlives its own transaction.
//!
//! Prints `session_fingerprint backend=X cases=N leaked=M skipped=K refused=R`.

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
    /// Paths on which the middleware must refuse the statement (the run fails), and why; the
    /// next borrower's session must still be fresh.
    refused: Option<(&'static [Path], &'static str)>,
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

    fn refused_on(&self, path: Path) -> bool {
        self.refused.is_some_and(|(paths, _)| paths.contains(&path))
    }
}

/// A statement that returns no rows.
fn c(sql: &'static str) -> Case {
    Case {
        sql,
        rows: false,
        script: false,
        skip: None,
        refused: None,
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

    fn refused(mut self, paths: &'static [Path], why: &'static str) -> Case {
        self.refused = Some((paths, why));
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

/// The table the SQLite and Turso temporary triggers watch.
const SQLITE_SETUP: &str = "CREATE TABLE fp_base (a INTEGER)";

/// The paths that run a statement through MySQL's binary protocol (`COM_STMT_PREPARE`): every
/// path but the scripts, which run in the text protocol.
const BINARY_PATHS: &[Path] = &[
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

const NOT_PREPARABLE: &str = "MySQL cannot prepare PREPARE (ER_UNSUPPORTED_PS): only the text \
     protocol of a script runs it";

const IMPLICIT_COMMIT: &str = "MySQL commits the open transaction implicitly around this \
     statement, so the middleware fails the Tx with TransactionState";

/// Raw access (skipped where a case is refused on every other path: see [`RAW_PUT_BACK`]).
const RAW: &[Path] = &[Raw, TxRaw];

const RAW_PUT_BACK: &str = "after raw access the middleware puts the setting back at the \
     connection's next operation (the probes' own raw access), and fails that operation";

const NOT_UTF8: &str = "the middleware binds and reads text as UTF-8: it puts the character \
     set back and fails the statement (after raw access, the next operation)";

const AUTOCOMMIT: &str = "outside a Tx the middleware commits every statement: it puts \
     autocommit and completion_type back and fails the statement (after raw access, the next \
     operation)";

/// The paths inside a transaction whose statements the middleware runs itself (so it sees an
/// implicit commit); raw SQL inside a `Tx` is the caller's own.
const IN_TX_MIDDLEWARE: &[Path] = &[
    TxQuery, TxPrepare, TxBatch, SpQuery, SpBatch, ExecTx, ExecSp,
];

fn mysql_cases(mariadb: bool) -> Vec<Case> {
    let mut v = vec![
        c("SET @fp_x = 1"),
        c("set @`fp x2` = 'a', @'fp_q' := 2"),
        r("SELECT @fp_sel := 1"),
        c("SELECT 1 INTO @fp_into"),
        c("SET SESSION sql_mode = 'ANSI'"),
        c("SET @@session.sql_mode = CONCAT(@@sql_mode, ',PAD_CHAR_TO_FULL_LENGTH')"),
        c("SET time_zone = '+05:00'"),
        c("set session wait_timeout = 12345"),
        c("set @@session.sort_buffer_size = 1048577"),
        c("SET sql_mode = 'ANSI_QUOTES'"),
        c("SET @@SESSION.group_concat_max_len = 4321"),
        c("SET SESSION innodb_lock_wait_timeout = 7"),
        c("SET lock_wait_timeout = 77, @fp_x = 2"),
        c("SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE"),
        c("SET SESSION TRANSACTION READ ONLY"),
        c("SET NAMES latin1")
            .refused(&PATHS, NOT_UTF8)
            .skip(RAW, RAW_PUT_BACK),
        c("SET character_set_client = latin1")
            .refused(&PATHS, NOT_UTF8)
            .skip(RAW, RAW_PUT_BACK),
        c("SET character_set_results = NULL")
            .refused(&PATHS, NOT_UTF8)
            .skip(RAW, RAW_PUT_BACK),
        c("SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci"),
        c("SET collation_connection = 'utf8mb4_bin'"),
        c("SET foreign_key_checks = 0"),
        c("SET autocommit = 0")
            .refused(&PATHS, AUTOCOMMIT)
            .skip(RAW, RAW_PUT_BACK),
        c("SET SESSION autocommit = OFF")
            .refused(&PATHS, AUTOCOMMIT)
            .skip(RAW, RAW_PUT_BACK),
        c("SET completion_type = 'CHAIN'")
            .refused(&PATHS, AUTOCOMMIT)
            .skip(RAW, RAW_PUT_BACK),
        c("SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED"),
        c("SET SESSION sql_mode = ''"),
        c("SET insert_id = 4242"),
        c("CREATE TEMPORARY TABLE fp_t (a INT)"),
        c("create temporary table if not exists `fp t2` (a int)"),
        c("CREATE TEMPORARY TABLE fp_as AS SELECT 1 AS a"),
        c("CREATE TEMPORARY TABLE fp_like LIKE fp_base"),
        c("CREATE TEMPORARY TABLE fp_base (b INT)"),
        script("CREATE TEMPORARY TABLE fp_m (a INT); INSERT INTO fp_m (a) VALUES (1)"),
        r("SELECT GET_LOCK('fp_lock', 0)"),
        r("select get_lock('fp_lock2', 0) AS l"),
        c("DO GET_LOCK('fp_do_lock', 0)"),
        r("SELECT LAST_INSERT_ID(77)"),
        c("PREPARE fp_p FROM 'SELECT 1'").skip(BINARY_PATHS, NOT_PREPARABLE),
        script("SET @fp_sql = 'SELECT 2'; PREPARE fp_p2 FROM @fp_sql"),
        c("USE information_schema"),
        c("use `mysql`"),
        c("LOCK TABLES fp_base READ").refused(IN_TX_MIDDLEWARE, IMPLICIT_COMMIT),
        c("lock table fp_base write, fp_like2 read").refused(IN_TX_MIDDLEWARE, IMPLICIT_COMMIT),
        c("HANDLER fp_base OPEN"),
        c("HANDLER fp_base OPEN AS fp_h"),
        c("CALL sqlmw_fp_proc()"),
        c("CALL sqlmw_fp_sess()"),
        // The same changes hidden where the statement's text cannot show them.
        r("SELECT sqlmw_fp_fn()"),
        r("SELECT sqlmw_fp_fn2()"),
        r("SELECT sqlmw_fp_lock()"),
        // Not here: a trigger that sets a variable on a plain INSERT. Its text proves the
        // statement plain, and MySQL's driver does not ask for session tracking, so the change
        // reaches the next borrower: the documented limit (docs/Backends.md, "Sessions"), as on
        // Postgres.
        r("SELECT 1 AS a /*!, @fp_ec := 3 */"),
        c("/*!40101 SET @fp_ec2 = 4 */"),
    ];
    if mariadb {
        v.extend([
            r("SELECT 1 AS a /*M!, @fp_m := 5 */"),
            r("SELECT 1 AS a /*M!100000 , @fp_m2 := 6 */"),
            c("SET max_statement_time = 77"),
            c("CREATE OR REPLACE TEMPORARY TABLE fp_r (a INT) ENGINE = MEMORY"),
            c("CREATE TEMPORARY SEQUENCE fp_tseq").refused(IN_TX_MIDDLEWARE, IMPLICIT_COMMIT),
            r("SELECT NEXTVAL(fp_seq)"),
            c("SET STATEMENT max_statement_time = 5 FOR SET @fp_st = 5"),
        ]);
    }
    v
}

/// Objects the MySQL statements use, made once in the test's database, one statement each.
const MY_SETUP: &[&str] = &[
    "CREATE TABLE fp_base (a INT)",
    "CREATE TABLE fp_like2 (a INT)",
    "CREATE TABLE fp_probe (a INT)",
    "CREATE FUNCTION sqlmw_fp_fn() RETURNS INT NOT DETERMINISTIC RETURN (@fp_fn := 7)",
    "CREATE FUNCTION sqlmw_fp_lock() RETURNS INT NOT DETERMINISTIC RETURN GET_LOCK('fp_fn_lock', 0)",
    "CREATE PROCEDURE sqlmw_fp_proc() SET @fp_proc = 8",
    "CREATE PROCEDURE sqlmw_fp_sess() BEGIN SET @@session.max_sort_length = 777; END",
    "CREATE FUNCTION sqlmw_fp_fn2() RETURNS INT NOT DETERMINISTIC BEGIN SET @fp_fn2 = 3; RETURN 1; END",
];

/// MariaDB only: a sequence, whose last value is session state.
const MARIADB_SETUP: &[&str] = &["CREATE SEQUENCE fp_seq"];

/// `SESSION_VARIABLES` that differ between two fresh sessions or change on their own, left out
/// of the MySQL fingerprint:
/// - `TIMESTAMP`: the current time, unless a session pins it (no case does);
/// - `RAND_SEED1`, `RAND_SEED2`: drawn per session;
/// - `PSEUDO_THREAD_ID`: the connection id (a fresh connection has another);
/// - `LAST_INSERT_ID`, `IDENTITY`: changed by every insert into an `AUTO_INCREMENT` column, by
///   design of the API (a probe reads `LAST_INSERT_ID()` itself, for `LAST_INSERT_ID(expr)`);
/// - `WARNING_COUNT`, `ERROR_COUNT`: the last statement's diagnostics, including the probes';
/// - `LAST_GTID`: the last transaction's global id, when the binary log is on.
#[cfg(feature = "mysql")]
const MYSQL_SELF_CHANGING: &[&str] = &[
    "TIMESTAMP",
    "RAND_SEED1",
    "RAND_SEED2",
    "PSEUDO_THREAD_ID",
    "LAST_INSERT_ID",
    "IDENTITY",
    "WARNING_COUNT",
    "ERROR_COUNT",
    "LAST_GTID",
];

/// The MySQL probes: key and statement; each statement's rows, or its error code, are the value.
#[cfg(feature = "mysql")]
fn mysql_probes(mariadb: bool) -> Vec<(&'static str, &'static str)> {
    let mut v = vec![
        (
            "user variables",
            "SELECT @fp_x, @`fp x2`, @fp_q, @fp_sel, @fp_into, @fp_sql, @fp_fn, @fp_fn2, \
             @fp_proc, @fp_ec, @fp_ec2, @fp_st, @fp_m, @fp_m2",
        ),
        (
            "named locks",
            "SELECT IFNULL(IS_USED_LOCK('fp_lock') = CONNECTION_ID(), 0), \
             IFNULL(IS_USED_LOCK('fp_lock2') = CONNECTION_ID(), 0), \
             IFNULL(IS_USED_LOCK('fp_do_lock') = CONNECTION_ID(), 0), \
             IFNULL(IS_USED_LOCK('fp_fn_lock') = CONNECTION_ID(), 0)",
        ),
        ("database", "SELECT DATABASE()"),
        ("last_insert_id", "SELECT LAST_INSERT_ID()"),
        ("temp fp_t", "SELECT 1 FROM fp_t LIMIT 0"),
        ("temp `fp t2`", "SELECT 1 FROM `fp t2` LIMIT 0"),
        ("temp fp_as", "SELECT 1 FROM fp_as LIMIT 0"),
        ("temp fp_like", "SELECT 1 FROM fp_like LIMIT 0"),
        ("temp fp_m", "SELECT 1 FROM fp_m LIMIT 0"),
        (
            "temp fp_base shadows the table",
            "SELECT b FROM fp_base LIMIT 0",
        ),
        (
            "table lock (fp_probe is never locked)",
            "SELECT COUNT(*) FROM fp_probe",
        ),
        ("prepared fp_p", "EXECUTE fp_p"),
        ("prepared fp_p2", "EXECUTE fp_p2"),
        ("handler fp_base", "HANDLER fp_base READ FIRST"),
        ("handler fp_h", "HANDLER fp_h READ FIRST"),
    ];
    if mariadb {
        v.extend([
            ("temp fp_r", "SELECT 1 FROM fp_r LIMIT 0"),
            ("temp fp_tseq", "SELECT 1 FROM fp_tseq LIMIT 0"),
            ("sequence fp_seq", "SELECT PREVIOUS VALUE FOR fp_seq"),
        ]);
    }
    v
}

fn cases(kind: Kind, mariadb: bool) -> Vec<Case> {
    match kind {
        Kind::Mysql => mysql_cases(mariadb),
        Kind::Sqlite => sqlite_cases(),
        Kind::Turso => turso_cases(),
        Kind::Postgres => postgres_cases(),
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
            use mysql_async::prelude::Queryable;
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
            use mysql_async::prelude::Queryable;
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

/// The MySQL fingerprint (see the module docs), read through raw access in the text protocol.
#[cfg(feature = "mysql")]
async fn mysql_fingerprint(
    conn: &mut MiddlewarePoolConnection,
    mariadb: bool,
) -> Result<Fingerprint, String> {
    use mysql_async::prelude::Queryable;
    let raw = conn.mysql_connection().await.map_err(err)?;
    let mut fp = Fingerprint::new();
    let vars: Vec<(String, Option<String>)> = raw
        .query("SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.SESSION_VARIABLES")
        .await
        .map_err(err)?;
    for (name, value) in vars {
        let name = name.to_ascii_uppercase();
        if !MYSQL_SELF_CHANGING.contains(&name.as_str()) {
            fp.insert(format!("var {name}"), format!("{value:?}"));
        }
    }
    for (key, sql) in mysql_probes(mariadb) {
        let value = match raw.query::<mysql_async::Row, _>(sql).await {
            Ok(rows) => rows
                .into_iter()
                .map(|row| format!("{:?}", row.unwrap()))
                .collect::<Vec<_>>()
                .join(" | "),
            Err(mysql_async::Error::Server(e)) => format!("error {}", e.code),
            Err(e) => return Err(format!("{sql}: {e:?}")),
        };
        fp.insert(key.into(), value);
    }
    Ok(fp)
}

async fn fingerprint(
    conn: &mut MiddlewarePoolConnection,
    kind: Kind,
    mariadb: bool,
) -> Result<Fingerprint, String> {
    let mut fp = Fingerprint::new();
    let _ = mariadb;
    match kind {
        #[cfg(feature = "mysql")]
        Kind::Mysql => return mysql_fingerprint(conn, mariadb).await,
        #[cfg(not(feature = "mysql"))]
        Kind::Mysql => return Err("MySQL is not in this build".into()),
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
    let mariadb = db.is_mariadb().await;
    {
        let mut c = db.conn().await;
        match db.kind {
            Kind::Mysql => {
                // One statement at a time (two routine bodies hold `;` of their own).
                let extra = if mariadb { MARIADB_SETUP } else { &[] };
                for sql in MY_SETUP.iter().chain(extra) {
                    c.execute_batch(sql)
                        .await
                        .unwrap_or_else(|e| panic!("[{k}] setup `{sql}`: {e:?}"));
                }
                Ok(())
            }
            Kind::Postgres => c.execute_batch(PG_SETUP).await,
            Kind::Sqlite | Kind::Turso => c.execute_batch(SQLITE_SETUP).await,
        }
        .unwrap_or_else(|e| panic!("[{k}] setup: {e:?}"));
    }
    let fresh_pool = db.builder().max_size(1).build().await.unwrap();
    let fresh = fingerprint(
        &mut fresh_pool.get_connection().await.unwrap(),
        db.kind,
        mariadb,
    )
    .await
    .unwrap_or_else(|e| panic!("[{k}] fresh fingerprint: {e}"));
    drop(fresh_pool);

    let table = cases(db.kind, mariadb);
    let (mut ran, mut skipped, mut refused) = (0usize, Vec::new(), 0usize);
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
            let must_fail = case.refused_on(path);
            {
                let mut first = pool.get_connection().await.unwrap();
                match run(&mut first, db.kind, path, case).await {
                    Err(_) if must_fail => refused += 1,
                    Ok(()) if must_fail => {
                        failed.push(format!("{pair}: ran, but the middleware must refuse it"));
                        continue;
                    }
                    Err(e) => {
                        failed.push(format!("{pair}: {e}"));
                        continue;
                    }
                    Ok(()) => {}
                }
            }
            let mut next = pool.get_connection().await.unwrap();
            match fingerprint(&mut next, db.kind, mariadb).await {
                // A refused pair has nothing to run again: a fresh session is all it asks.
                Ok(fp) if fp == fresh && must_fail => {}
                Ok(fp) if fp == fresh => {
                    // Clean: the same statement on this session must change its fingerprint,
                    // or the case proves nothing. A lock another session still holds (an earlier
                    // pair's connection, closing) makes a try-lock change nothing: it is tried
                    // again a few times.
                    let mut after = Err(String::new());
                    for attempt in 0..5 {
                        if attempt > 0 {
                            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                        }
                        after = match run(&mut next, db.kind, path, case).await {
                            Ok(()) => fingerprint(&mut next, db.kind, mariadb).await,
                            Err(e) => Err(format!("second run: {e}")),
                        };
                        if !matches!(&after, Ok(fp) if *fp == fresh) {
                            break;
                        }
                    }
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
        "session_fingerprint backend={k} cases={ran} leaked={} skipped={} refused={refused}",
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
