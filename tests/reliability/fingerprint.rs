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
//!   that change by themselves (see `MYSQL_SELF_CHANGING` in `fingerprint/tables/mysql.rs`),
//!   the value of every user variable the table sets, whether each temporary table it makes
//!   exists, whether each named lock it takes is held by this connection, `DATABASE()`,
//!   `LAST_INSERT_ID()`, whether each `PREPARE`d statement and `HANDLER` it opens exists,
//!   whether a table outside any `LOCK TABLES` can be read, and (MariaDB) the session's last
//!   value of a sequence.
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
//! Each engine's part (its table, the objects its statements use, how its fingerprint is read,
//! its raw access) is a file of its own in `fingerprint/tables/`, picked through the engine
//! list; the paths and the runner are written once.
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

/// An engine's side of the test: one file per engine in `fingerprint/tables/`, picked through the
/// engine list (`common::engines`). The paths, the runner and the comparison are this file's.
trait Table {
    /// The session-changing statements (`mariadb`: the MySQL server is MariaDB).
    fn cases(mariadb: bool) -> Vec<Case>;

    /// Makes the objects the statements use, once, in the test's database.
    async fn setup(conn: &mut MiddlewarePoolConnection, mariadb: bool) -> Result<(), String>;

    /// The fingerprint of `conn`'s session (see the module docs).
    async fn fingerprint(
        conn: &mut MiddlewarePoolConnection,
        mariadb: bool,
    ) -> Result<Fingerprint, String>;

    /// Runs the case's SQL with the engine's own connection.
    async fn raw(conn: &mut MiddlewarePoolConnection, case: &Case) -> Result<(), String>;

    /// [`Table::raw`], inside a `Tx`.
    async fn raw_in_tx(tx: &mut Tx<'_>, case: &Case) -> Result<(), String>;
}

/// The engines' tables, one file each in `fingerprint/tables/` (the per-engine test modules
/// below take the engines' names).
mod tables {
    #[cfg(feature = "mysql")]
    pub(super) mod mysql;
    #[cfg(feature = "postgres")]
    pub(super) mod postgres;
    #[cfg(feature = "sqlite")]
    pub(super) mod sqlite;
    #[cfg(feature = "turso")]
    pub(super) mod turso;
}

/// The test on `db`, with the [`Table`] of its engine: `tables::<module>::<Variant>` of the
/// list.
macro_rules! by_engine {
    (() $($(#[$doc:meta])* $module:ident $feature:literal $Variant:ident;)*) => {
        async fn t_every_path_leaves_a_fresh_session(db: &TestDb) {
            match db.kind {
                $(#[cfg(feature = $feature)]
                Kind::$Variant => {
                    every_path_leaves_a_fresh_session::<tables::$module::$Variant>(db).await
                })*
                #[allow(unreachable_patterns)]
                other => panic!("{} is not in this build", other.name()),
            }
        }
    };
}

crate::engines!([by_engine]());

/// The table the SQLite family's temporary triggers watch.
const LITE_SETUP: &str = "CREATE TABLE fp_base (a INTEGER)";

/// The SQLite family's fingerprint (SQLite's, Turso's): the value of each of `pragmas`, the
/// `LIKE` behaviour, `temp.sqlite_master` and `PRAGMA database_list`.
async fn lite_fingerprint(
    conn: &mut MiddlewarePoolConnection,
    pragmas: &[&str],
) -> Result<Fingerprint, String> {
    let mut fp = Fingerprint::new();
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
    for p in pragmas {
        let v = rows_text(conn, &format!("PRAGMA {p}")).await?;
        fp.insert(format!("pragma {p}"), v);
    }
    // `case_sensitive_like` cannot be read back; its effect can.
    fp.insert(
        "'a' LIKE 'A'".into(),
        rows_text(conn, "SELECT 'a' LIKE 'A'").await?,
    );
    Ok(fp)
}

fn err(e: impl std::fmt::Debug) -> String {
    format!("{e:?}")
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
async fn run<T: Table>(
    conn: &mut MiddlewarePoolConnection,
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
        Raw => T::raw(conn, case).await,
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
                TxRaw => T::raw_in_tx(&mut tx, case).await,
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

/// The test on `db`, with its engine's [`Table`].
async fn every_path_leaves_a_fresh_session<T: Table>(db: &TestDb) {
    let k = db.kind.name();
    let started = std::time::Instant::now();
    let mariadb = db.is_mariadb().await;
    {
        let mut c = db.conn().await;
        T::setup(&mut c, mariadb)
            .await
            .unwrap_or_else(|e| panic!("[{k}] setup: {e}"));
    }
    let fresh_pool = db.builder().max_size(1).build().await.unwrap();
    let fresh = T::fingerprint(&mut fresh_pool.get_connection().await.unwrap(), mariadb)
        .await
        .unwrap_or_else(|e| panic!("[{k}] fresh fingerprint: {e}"));
    drop(fresh_pool);

    let table = T::cases(mariadb);
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
                match run::<T>(&mut first, path, case).await {
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
            match T::fingerprint(&mut next, mariadb).await {
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
                        after = match run::<T>(&mut next, path, case).await {
                            Ok(()) => T::fingerprint(&mut next, mariadb).await,
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
