//! SQLite-only promises: the execution model keeps the runtime responsive, lock waits end in
//! `Busy` after the busy timeout, dropped transactions roll back on any runtime (or none), and
//! raw access that panics never poisons the pool.
#![cfg(feature = "sqlite")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sql_middleware::prelude::*;

use crate::common::backends::{TempDir, one_connection_with_table};
use crate::common::groups;
use crate::common::reliability::heartbeat;

/// The database file of a test directory.
fn db_file(dir: &TempDir) -> std::path::PathBuf {
    dir.path().join("db.sqlite")
}

/// A recursive CTE that keeps SQLite busy for a long while (hundreds of ms in a debug build).
const LONG_QUERY: &str = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) FROM c";

fn p99(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[(v.len() * 99 / 100).min(v.len() - 1)]
}

#[tokio::test(flavor = "current_thread")]
async fn long_statements_do_not_stall_a_single_threaded_runtime() {
    let _group = groups::enter("sqlite");
    let dir = TempDir::new("heartbeat");
    let db = ConfigAndPool::sqlite(db_file(&dir))
        .max_size(2)
        .build()
        .await
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let hb = heartbeat(Arc::clone(&stop), Duration::from_millis(2));
    tokio::task::yield_now().await;
    let mut c = db.get_connection().await.unwrap();
    let t = Instant::now();
    for _ in 0..3 {
        let (n,): (i64,) = c.query(LONG_QUERY).one().await.unwrap();
        assert_eq!(n, 3_000_000);
    }
    let took = t.elapsed();
    // Short statements keep running inline next to it.
    for i in 0..100_i64 {
        let (x,): (i64,) = c
            .query("SELECT $1 + 1")
            .params(&[i.into()])
            .one()
            .await
            .unwrap();
        assert_eq!(x, i + 1);
    }
    stop.store(true, Ordering::Relaxed);
    let lateness = hb.await.unwrap();
    let ticks = lateness.len();
    let worst = p99(lateness);
    println!(
        "heartbeat runtime=current_thread long_statements=3 statement_ms={} ticks={ticks} p99_lateness_ms={:.2}",
        took.as_millis() / 3,
        worst.as_secs_f64() * 1e3
    );
    assert!(
        ticks > 10,
        "the heartbeat must have run while the statements did ({ticks} ticks)"
    );
    assert!(worst < Duration::from_millis(20), "p99 lateness {worst:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn lock_waits_end_in_busy_after_the_timeout_without_stalling_the_runtime() {
    let _group = groups::enter("sqlite");
    let dir = TempDir::new("busy");
    let holder = ConfigAndPool::sqlite(db_file(&dir))
        .max_size(1)
        .build()
        .await
        .unwrap();
    let waiter = ConfigAndPool::sqlite(db_file(&dir))
        .max_size(1)
        .busy_timeout(Duration::from_millis(300))
        .build()
        .await
        .unwrap();
    let mut h = holder.get_connection().await.unwrap();
    h.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY)")
        .await
        .unwrap();
    let mut tx = h.begin().await.unwrap();
    tx.query("INSERT INTO t VALUES (1)").dml().await.unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let hb = heartbeat(Arc::clone(&stop), Duration::from_millis(2));
    let mut w = waiter.get_connection().await.unwrap();
    let t = Instant::now();
    let e = match w.begin().await {
        Ok(_) => panic!("the write lock is held: begin must fail"),
        Err(e) => e,
    };
    let waited = t.elapsed();
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    assert!(
        waited >= Duration::from_millis(250),
        "Busy only after the timeout: {waited:?}"
    );
    assert!(waited < Duration::from_secs(3), "{waited:?}");
    let e = w.query("INSERT INTO t VALUES (2)").dml().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy);
    stop.store(true, Ordering::Relaxed);
    let worst = p99(hb.await.unwrap());
    println!(
        "busy waited_ms={} kind={:?} p99_heartbeat_lateness_ms={:.2}",
        waited.as_millis(),
        e.kind(),
        worst.as_secs_f64() * 1e3
    );
    assert!(worst < Duration::from_millis(20), "{worst:?}");
    tx.commit().await.unwrap();
    // With the lock released, the waiter's write goes through.
    assert_eq!(w.query("INSERT INTO t VALUES (2)").dml().await.unwrap(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn dropped_transaction_rolls_back_on_current_thread_runtime() {
    let _group = groups::enter("sqlite");
    let (_db, mut c) = one_connection_with_table(ConfigAndPool::sqlite_memory()).await;
    {
        let mut tx = c.begin().await.unwrap();
        tx.query("INSERT INTO t VALUES (1)").dml().await.unwrap();
    }
    let (n,): (i64,) = c.query("SELECT count(*) FROM t").one().await.unwrap();
    assert_eq!(n, 0);
    // The connection is usable for a new transaction at once.
    let tx = c.begin().await.unwrap();
    tx.commit().await.unwrap();
}

#[test]
fn dropped_transaction_rolls_back_outside_any_runtime() {
    let _group = groups::enter("sqlite");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = TempDir::new("noruntime");
    let db = rt
        .block_on(ConfigAndPool::sqlite(db_file(&dir)).max_size(1).build())
        .unwrap();
    let mut c = rt.block_on(db.get_connection()).unwrap();
    rt.block_on(c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
        .unwrap();
    let mut tx = rt.block_on(c.begin()).unwrap();
    rt.block_on(tx.query("INSERT INTO t VALUES (1)").dml())
        .unwrap();
    // Drop both outside the runtime's context.
    drop(tx);
    drop(c);
    let mut c = rt.block_on(db.get_connection()).unwrap();
    let (n,): (i64,) = rt
        .block_on(c.query("SELECT count(*) FROM t").one())
        .unwrap();
    assert_eq!(n, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panicking_raw_closure_is_an_error_and_the_pool_recovers() {
    let _group = groups::enter("sqlite");
    let (db, mut c) = one_connection_with_table(ConfigAndPool::sqlite_memory()).await;
    let e = c
        .with_blocking_sqlite(|raw| {
            raw.execute_batch("BEGIN; INSERT INTO t VALUES (1)")?;
            if raw.is_autocommit() {
                return Ok(());
            }
            panic!("boom inside a raw closure");
        })
        .await
        .unwrap_err();
    assert!(e.message().contains("panicked"), "{e}");
    drop(c);
    // The connection was discarded; the pool hands out a fresh, clean one.
    let mut c = db.get_connection().await.unwrap();
    let (n,): (i64,) = c.query("SELECT count(*) FROM t").one().await.unwrap();
    assert_eq!(n, 0, "the panicked transaction's write is not visible");
    assert_eq!(db.status().size, 1);
}

/// A `FromRow` that panics at one id.
struct PanicsAt(i64);

impl FromRow for PanicsAt {
    fn from_row<R: SqlRow>(row: &R) -> Result<Self, SqlMiddlewareDbError> {
        let id: i64 = row.get(0)?;
        if id == 300 {
            panic!("boom inside FromRow at row {id}");
        }
        Ok(PanicsAt(id))
    }
}

/// A stream's rows are decoded on its worker: a panic there is an error item, the stream ends,
/// the transaction it ran in is rolled back at once, and the pool discards the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panicking_from_row_in_a_stream_is_an_error_and_the_pool_recovers() {
    use futures::TryStreamExt;
    let _group = groups::enter("sqlite");
    let (db, mut c) = one_connection_with_table(ConfigAndPool::sqlite_memory()).await;
    c.execute_batch(
        "INSERT INTO t (id) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) SELECT x FROM c",
    )
    .await
    .unwrap();
    let mut tx = c.begin().await.unwrap();
    tx.query("DELETE FROM t WHERE id > 900")
        .dml()
        .await
        .unwrap();
    let mut s = tx
        .query("SELECT id FROM t ORDER BY id")
        .stream::<PanicsAt>();
    let mut read = 0;
    let e = loop {
        match s.try_next().await {
            Ok(Some(r)) => {
                read += 1;
                assert_eq!(r.0, read);
            }
            Ok(None) => panic!("the stream ended without the panic"),
            Err(e) => break e,
        }
    };
    assert!(e.message().contains("panicked"), "{e}");
    assert!(read < 300, "rows after the panic were handed out: {read}");
    assert!(s.try_next().await.unwrap().is_none(), "the stream ends");
    drop(s);
    drop(tx);
    drop(c);
    let mut c = db.get_connection().await.unwrap();
    let (n,): (i64,) = c.query("SELECT count(*) FROM t").one().await.unwrap();
    assert_eq!(n, 1000, "the transaction's delete was rolled back");
    assert_eq!(db.status().size, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_rollback_inside_a_transaction_never_autocommits_later_statements() {
    let _group = groups::enter("sqlite");
    let db = ConfigAndPool::sqlite_memory()
        .max_size(2)
        .build()
        .await
        .unwrap();
    let mut c = db.get_connection().await.unwrap();
    c.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY);
         CREATE TABLE guard (id INTEGER);
         CREATE TRIGGER no_13 BEFORE INSERT ON t WHEN NEW.id = 13 BEGIN SELECT RAISE(ROLLBACK, 'unlucky'); END;",
    )
    .await
    .unwrap();
    let mut tx = c.begin().await.unwrap();
    tx.query("INSERT INTO t VALUES (1)").dml().await.unwrap();
    assert!(tx.query("INSERT INTO t VALUES (13)").dml().await.is_err());
    let e = tx
        .query("INSERT INTO t VALUES (2)")
        .dml()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TransactionAborted);
    assert!(tx.commit().await.is_err());
    let mut other = db.get_connection().await.unwrap();
    let (n,): (i64,) = other.query("SELECT count(*) FROM t").one().await.unwrap();
    assert_eq!(
        n, 0,
        "nothing of the rolled-back transaction, nothing autocommitted after it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_exec_model_gives_the_same_answers() {
    let _group = groups::enter("sqlite");
    for model in [
        SqliteExecModel::Inline,
        SqliteExecModel::Offload,
        SqliteExecModel::Adaptive {
            inline_budget: Duration::from_micros(1),
        },
        SqliteExecModel::default(),
    ] {
        let db = ConfigAndPool::sqlite_memory()
            .sqlite_exec_model(model)
            .max_size(2)
            .build()
            .await
            .unwrap();
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
            .await
            .unwrap();
        let mut ins = c.prepare("INSERT INTO t VALUES ($1, $2)").await.unwrap();
        for i in 0..200_i64 {
            if let Err(e) = ins.dml(&[i.into(), format!("v{i}").into()]).await {
                panic!("{model:?} insert {i}: {e}");
            }
        }
        let (n,): (i64,) = c.query(LONG_QUERY).one().await.unwrap();
        assert_eq!(n, 3_000_000, "{model:?}");
        let rows: Vec<(i64, String)> = c
            .query("SELECT id, v FROM t ORDER BY id")
            .all()
            .await
            .unwrap();
        assert_eq!(rows.len(), 200, "{model:?}");
        assert_eq!(rows[199], (199, "v199".to_owned()));
        let mut tx = c.begin().await.unwrap();
        tx.query("DELETE FROM t").dml().await.unwrap();
        drop(tx);
        let (n,): (i64,) = c.query("SELECT count(*) FROM t").one().await.unwrap();
        assert_eq!(n, 200, "{model:?}");
    }
}

/// The execution counts (inline, offloaded by policy, re-run after an interrupt) of a pool of
/// one connection after `f`, as the checkout ends.
async fn exec_counts_after<F>(model: SqliteExecModel, f: F) -> (u64, u64, u64)
where
    F: AsyncFnOnce(&mut MiddlewarePoolConnection),
{
    let db = ConfigAndPool::sqlite_memory()
        .sqlite_exec_model(model)
        .max_size(1)
        .build()
        .await
        .unwrap();
    let before = db.stats().sqlite;
    {
        let mut c = db.get_connection().await.unwrap();
        f(&mut c).await;
    }
    let after = db.stats().sqlite;
    (
        after.inline - before.inline,
        after.offloaded_by_policy - before.offloaded_by_policy,
        after.rerun_after_interrupt - before.rerun_after_interrupt,
    )
}

/// `one` and `optional`, prepared and per call, run where the execution model says: every call
/// is counted once, where it ran, and a read interrupted inline is re-run on the blocking pool
/// once, with the right answer, and sent there by policy from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_run_where_the_model_says_and_are_counted_once() {
    let _group = groups::enter("sqlite");
    let lookups = async |c: &mut MiddlewarePoolConnection| {
        let mut st = c.prepare("SELECT $1 + 1").await.unwrap();
        for i in 0..5_i64 {
            let (x,): (i64,) = st.one(&[i.into()]).await.unwrap();
            assert_eq!(x, i + 1);
        }
        let null: Option<(Option<i64>,)> = st.optional(&[RowValues::Null]).await.unwrap();
        assert_eq!(null, Some((None,)), "NULL + 1 is one row holding NULL");
        drop(st);
        for i in 0..4_i64 {
            let got: Option<(i64,)> = c
                .query("SELECT $1 WHERE $1 % 2 = 0")
                .params(&[i.into()])
                .optional()
                .await
                .unwrap();
            assert_eq!(got, (i % 2 == 0).then_some((i,)));
        }
    };
    // The prepare and the ten lookups: two statements described, ten run.
    assert_eq!(
        exec_counts_after(SqliteExecModel::Inline, lookups).await,
        (12, 0, 0)
    );
    assert_eq!(
        exec_counts_after(SqliteExecModel::Offload, lookups).await,
        (0, 12, 0)
    );
    let roomy = SqliteExecModel::Adaptive {
        inline_budget: Duration::from_secs(5),
    };
    assert_eq!(exec_counts_after(roomy, lookups).await, (12, 0, 0));

    // A long read under a tight budget: interrupted inline, re-run on the blocking pool once;
    // from then on the statement goes there by policy, and a quick one stays inline.
    let tight = SqliteExecModel::Adaptive {
        inline_budget: Duration::from_millis(2),
    };
    let moved = exec_counts_after(tight, async |c: &mut MiddlewarePoolConnection| {
        let mut st = c.prepare(LONG_QUERY).await.unwrap();
        for _ in 0..2 {
            let (n,): (i64,) = st.one(&[]).await.unwrap();
            assert_eq!(n, 3_000_000);
        }
        drop(st);
        let (x,): (i64,) = c.query("SELECT 7").one().await.unwrap();
        assert_eq!(x, 7);
    })
    .await;
    // The two prepares and the quick lookup ran inline; the long read was re-run once, then
    // offloaded once.
    assert_eq!(moved, (3, 1, 1));
}

/// A read that spends its time inside one step, where SQLite never calls the progress handler
/// (`count(*)` walks the whole table in one), is still noticed by the adaptive model: at its
/// first run, and within 16 runs once it has become slow, after which it is offloaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_slow_inside_one_step_is_noticed_and_offloaded() {
    let _group = groups::enter("sqlite");
    let tight = SqliteExecModel::Adaptive {
        inline_budget: Duration::from_micros(50),
    };
    // 100,000 rows of 300 bytes: about 8,000 pages for `count(*)` to walk, far past 50 µs.
    let fill = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000) \
                INSERT INTO big SELECT x, randomblob(300) FROM c";
    // Slow from its first run: noticed at once, offloaded at the second.
    let at_once = exec_counts_after(tight, async |c: &mut MiddlewarePoolConnection| {
        c.execute_batch(&format!(
            "CREATE TABLE big (id INTEGER PRIMARY KEY, b BLOB); {fill}"
        ))
        .await
        .unwrap();
        let mut st = c.prepare("SELECT count(*) FROM big").await.unwrap();
        for _ in 0..2 {
            let (n,): (i64,) = st.one(&[]).await.unwrap();
            assert_eq!(n, 100_000);
        }
    })
    .await;
    // The prepare and the first run inline (the script runs on the blocking pool by policy),
    // the second run offloaded; a single step is never interrupted.
    assert_eq!(at_once, (2, 2, 0));

    // Quick at first (the table is empty), slow once the table is filled: noticed within 16
    // runs.
    let later = exec_counts_after(tight, async |c: &mut MiddlewarePoolConnection| {
        c.execute_batch("CREATE TABLE big (id INTEGER PRIMARY KEY, b BLOB)")
            .await
            .unwrap();
        // Per call, through the connection's statement cache: one statement throughout.
        let count = "SELECT count(*) FROM big";
        let (n,): (i64,) = c.query(count).one().await.unwrap();
        assert_eq!(n, 0);
        c.execute_batch(fill).await.unwrap();
        for _ in 0..17 {
            let (n,): (i64,) = c.query(count).one().await.unwrap();
            assert_eq!(n, 100_000);
        }
    })
    .await;
    let (inline, offloaded, rerun) = later;
    assert_eq!(rerun, 0);
    // The statement's description, the quick run and at most 16 slow runs inline; the rest
    // offloaded (and the two scripts).
    assert!(
        inline <= 18,
        "a slow read ran inline {inline} times: {later:?}"
    );
    assert!(
        offloaded > 2,
        "the slow read was never offloaded: {later:?}"
    );
    assert_eq!(inline + offloaded, 21, "{later:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_database_is_shared_by_the_pool() {
    let _group = groups::enter("sqlite");
    let db = ConfigAndPool::sqlite_memory()
        .max_size(3)
        .build()
        .await
        .unwrap();
    let mut a = db.get_connection().await.unwrap();
    let mut b = db.get_connection().await.unwrap();
    a.execute_batch("CREATE TABLE t (v TEXT)").await.unwrap();
    a.query("INSERT INTO t VALUES ($1)")
        .params(&["shared".into()])
        .dml()
        .await
        .unwrap();
    let (v,): (String,) = b.query("SELECT v FROM t").one().await.unwrap();
    assert_eq!(v, "shared");
    // A second pool is a different database.
    let other = ConfigAndPool::sqlite_memory().build().await.unwrap();
    let mut o = other.get_connection().await.unwrap();
    assert_eq!(
        o.query("SELECT v FROM t")
            .select()
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::UndefinedObject
    );
}

/// Re-prepares of `sql`'s cached statement on this connection after one more run of it, and the
/// connection's total changes (which tell one connection from a fresh one).
async fn reprepares_of(c: &mut MiddlewarePoolConnection, sql: &'static str) -> (i32, u64) {
    c.with_blocking_sqlite(move |raw| {
        let mut st = raw.prepare_cached(sql)?;
        st.query_row([], |r| r.get::<_, i64>(0))?;
        let n = st.get_status(sql_middleware::drivers::rusqlite::StatementStatus::RePrepare);
        drop(st);
        Ok((n, raw.total_changes()))
    })
    .await
    .unwrap()
}

/// Giving a connection back after raw access restores the pool's settings without expiring the
/// connection's prepared statements: assigning a flag pragma such as `query_only` makes SQLite
/// re-prepare every statement at its next step, so the restore assigns it only when it is on.
/// (Found: every return after raw access re-prepared every cached statement, and a statement
/// held across that re-described its columns on every call.) A `query_only` a borrower turned
/// on is still off for the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_access_keeps_the_connections_prepared_statements() {
    let _group = groups::enter("sqlite");
    const SQL: &str = "SELECT count(*) FROM t";
    let (db, mut c) = one_connection_with_table(ConfigAndPool::sqlite_memory()).await;
    c.query("INSERT INTO t VALUES (1)").dml().await.unwrap();
    let (first, changes) = reprepares_of(&mut c, SQL).await;
    assert!(changes >= 1, "the write is counted on this connection");
    drop(c);
    for round in 0..3 {
        let mut c = db.get_connection().await.unwrap();
        let (n, same) = reprepares_of(&mut c, SQL).await;
        assert_eq!(
            same, changes,
            "round {round}: the pool of one handed out the same connection"
        );
        assert_eq!(
            n, first,
            "round {round}: the statement was re-prepared after raw access"
        );
    }

    let mut c = db.get_connection().await.unwrap();
    c.with_blocking_sqlite(|raw| raw.execute_batch("PRAGMA query_only = 1"))
        .await
        .unwrap();
    drop(c);
    let mut c = db.get_connection().await.unwrap();
    let (on,): (i64,) = c.query("PRAGMA query_only").one().await.unwrap();
    assert_eq!(on, 0, "query_only is restored for the next borrower");
    c.query("INSERT INTO t VALUES (2)").dml().await.unwrap();
}

// ---- the session a borrower leaves behind, as the engine reports it ----

/// A pool of one connection on a private in-memory database, with a table `t` and a table
/// `log` (the next borrower gets the same connection back unless it was discarded).
async fn one_connection_pool() -> ConfigAndPool {
    let db = ConfigAndPool::sqlite_memory()
        .max_size(1)
        .build()
        .await
        .unwrap();
    let mut c = db.get_connection().await.unwrap();
    c.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE); CREATE TABLE log (id INTEGER)",
    )
    .await
    .unwrap();
    db
}

/// Reads one integer.
async fn int_of(c: &mut MiddlewarePoolConnection, sql: &str) -> i64 {
    let (v,): (i64,) = c
        .query(sql)
        .one()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    v
}

/// Per-connection pragmas beyond the four the pool configures, each with the query that shows
/// its value (`case_sensitive_like` cannot be read: `LIKE` shows it).
const LEAKY_PRAGMAS: [(&str, &str); 8] = [
    ("PRAGMA cache_size = 123", "PRAGMA cache_size"),
    ("PRAGMA recursive_triggers = 1", "PRAGMA recursive_triggers"),
    ("PRAGMA case_sensitive_like = 1", "SELECT 'a' LIKE 'A'"),
    ("PRAGMA automatic_index = 0", "PRAGMA automatic_index"),
    ("PRAGMA temp_store = 2", "PRAGMA temp_store"),
    (
        "PRAGMA reverse_unordered_selects = 1",
        "PRAGMA reverse_unordered_selects",
    ),
    ("PRAGMA main.cache_size(77)", "PRAGMA cache_size"),
    (
        "PRAGMA ignore_check_constraints = true",
        "PRAGMA ignore_check_constraints",
    ),
];

/// Every pragma a borrower assigns, through `query`, `prepare` and `execute_batch`, is the
/// fresh connection's value again for the next borrower (found: only `foreign_keys`,
/// `synchronous`, `query_only` and the busy handler were put back).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pragmas_a_borrower_sets_never_reach_the_next_one() {
    let _group = groups::enter("sqlite");
    let db = one_connection_pool().await;
    let mut leaked = Vec::new();
    let mut cases = 0;
    for (set, read) in LEAKY_PRAGMAS {
        let fresh = int_of(&mut db.get_connection().await.unwrap(), read).await;
        for path in ["query", "prepare", "execute_batch"] {
            let mut c = db.get_connection().await.unwrap();
            match path {
                "query" => drop(c.query(set).dml().await.unwrap()),
                "prepare" => drop(c.prepare(set).await.unwrap().dml(&[]).await.unwrap()),
                _ => c.execute_batch(set).await.unwrap(),
            }
            let changed = int_of(&mut c, read).await;
            assert_ne!(changed, fresh, "{set} via {path} took no effect");
            drop(c);
            cases += 1;
            let seen = int_of(&mut db.get_connection().await.unwrap(), read).await;
            if seen != fresh {
                leaked.push(format!("{set} via {path}: {seen} (fresh {fresh})"));
            }
        }
    }
    println!(
        "sqlite_pragmas cases={cases} leaked={} created={}",
        leaked.len(),
        db.stats().created
    );
    assert!(leaked.is_empty(), "pragmas leaked: {leaked:#?}");
}

/// Temporary objects made in forms a text scanner reads differently from the engine
/// (schema-qualified, quoted, `IF NOT EXISTS`, inside a script) never reach the next borrower.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temporary_objects_in_any_form_stay_with_their_checkout() {
    let _group = groups::enter("sqlite");
    let db = one_connection_pool().await;
    let forms = [
        ("query", "CREATE TABLE temp.x1 (a INTEGER)"),
        (
            "query",
            "CREATE TABLE IF NOT EXISTS \"temp\".\"x2\" (a INTEGER)",
        ),
        ("prepare", "CREATE VIEW temp.v1 AS SELECT 1 AS one"),
        (
            "execute_batch",
            "INSERT INTO log VALUES (0); CREATE TRIGGER temp.tr1 AFTER INSERT ON main.t BEGIN SELECT 1; END",
        ),
        (
            "execute_batch",
            "CREATE TEMP TABLE IF NOT EXISTS x3 (a); CREATE INDEX temp.ix3 ON x3 (a)",
        ),
    ];
    let mut leaked = Vec::new();
    for (path, sql) in forms {
        let mut c = db.get_connection().await.unwrap();
        match path {
            "query" => drop(c.query(sql).dml().await.unwrap()),
            "prepare" => drop(c.prepare(sql).await.unwrap().dml(&[]).await.unwrap()),
            _ => c.execute_batch(sql).await.unwrap(),
        }
        let made = int_of(&mut c, "SELECT count(*) FROM temp.sqlite_master").await;
        assert!(made > 0, "{sql}: no temporary object was made");
        drop(c);
        let left = int_of(
            &mut db.get_connection().await.unwrap(),
            "SELECT count(*) FROM temp.sqlite_master",
        )
        .await;
        if left != 0 {
            leaked.push(format!("{path}: {sql} ({left} objects)"));
        }
    }
    println!(
        "sqlite_temp_forms forms={} leaked={}",
        forms.len(),
        leaked.len()
    );
    assert!(leaked.is_empty(), "temporary objects leaked: {leaked:#?}");
}

/// A temporary trigger on a main table, made by one borrower, never fires on the next
/// borrower's writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_borrowers_temporary_trigger_never_fires_for_the_next_one() {
    let _group = groups::enter("sqlite");
    let db = one_connection_pool().await;
    let mut c = db.get_connection().await.unwrap();
    c.execute_batch(
        "CREATE TRIGGER \"temp\".audit AFTER INSERT ON main.t BEGIN INSERT INTO main.log VALUES (NEW.id); END",
    )
    .await
    .unwrap();
    c.query("INSERT INTO t (id) VALUES (1)")
        .dml()
        .await
        .unwrap();
    assert_eq!(int_of(&mut c, "SELECT count(*) FROM log").await, 1);
    drop(c);
    let mut next = db.get_connection().await.unwrap();
    next.query("INSERT INTO t (id) VALUES (2)")
        .dml()
        .await
        .unwrap();
    let fired = int_of(&mut next, "SELECT count(*) FROM log WHERE id = 2").await;
    println!("sqlite_temp_trigger fired_for_next_borrower={fired}");
    assert_eq!(fired, 0, "the previous borrower's temporary trigger fired");
}

/// What raw access leaves behind (temporary tables, attached databases, a replaced
/// authorizer, hooks, connection flags, pragmas) never reaches the next borrower.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_access_leaves_nothing_for_the_next_borrower() {
    use sql_middleware::drivers::rusqlite::config::DbConfig;
    use sql_middleware::drivers::rusqlite::hooks::Authorization;
    let _group = groups::enter("sqlite");
    let db = one_connection_pool().await;
    let commits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut c = db.get_connection().await.unwrap();
    let seen = Arc::clone(&commits);
    c.with_blocking_sqlite(move |raw| {
        raw.execute_batch("CREATE TEMP TABLE r1 (a); ATTACH ':memory:' AS aux")?;
        raw.authorizer(Some(
            |_: sql_middleware::drivers::rusqlite::hooks::AuthContext<'_>| Authorization::Allow,
        ))?;
        raw.execute_batch("PRAGMA recursive_triggers = 1; CREATE TEMP VIEW rv AS SELECT 1")?;
        raw.commit_hook(Some(move || {
            seen.fetch_add(1, Ordering::Relaxed);
            false
        }))?;
        raw.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, false)?;
        Ok(())
    })
    .await
    .unwrap();
    drop(c);
    let mut next = db.get_connection().await.unwrap();
    let mut leaked = Vec::new();
    let temp = int_of(&mut next, "SELECT count(*) FROM temp.sqlite_master").await;
    if temp != 0 {
        leaked.push(format!("{temp} temporary objects"));
    }
    let attached = int_of(
        &mut next,
        "SELECT count(*) FROM pragma_database_list WHERE name NOT IN ('main', 'temp')",
    )
    .await;
    if attached != 0 {
        leaked.push(format!("{attached} attached databases"));
    }
    if int_of(&mut next, "PRAGMA recursive_triggers").await != 0 {
        leaked.push("recursive_triggers".to_owned());
    }
    let before = commits.load(Ordering::Relaxed);
    next.execute_batch(
        "CREATE TRIGGER copy AFTER INSERT ON t BEGIN INSERT INTO log VALUES (NEW.id); END",
    )
    .await
    .unwrap();
    next.query("INSERT INTO t (id) VALUES (5)")
        .dml()
        .await
        .unwrap();
    if commits.load(Ordering::Relaxed) != before {
        leaked.push("the commit hook".to_owned());
    }
    if int_of(&mut next, "SELECT count(*) FROM log").await != 1 {
        leaked.push("triggers disabled".to_owned());
    }
    // The authorizer the pool installs is back: what this borrower does is seen again.
    next.query("CREATE TEMP TABLE after_raw (a)")
        .dml()
        .await
        .unwrap();
    drop(next);
    let temp = int_of(
        &mut db.get_connection().await.unwrap(),
        "SELECT count(*) FROM temp.sqlite_master",
    )
    .await;
    if temp != 0 {
        leaked.push("a temporary table made after raw access".to_owned());
    }
    println!("sqlite_raw_leftovers checks=6 leaked={}", leaked.len());
    assert!(leaked.is_empty(), "raw access leaked: {leaked:?}");
}

static TRACED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn count_trace(_: sql_middleware::drivers::rusqlite::trace::TraceEvent<'_>) {
    TRACED.fetch_add(1, Ordering::Relaxed);
}

/// Run-time limits and trace callbacks a raw closure sets are the pool's again for the next
/// borrower (a closure with rusqlite's `limits` and `trace` APIs can set both).
#[tokio::test(flavor = "current_thread")]
async fn raw_limits_and_tracing_never_reach_the_next_borrower() {
    use sql_middleware::drivers::rusqlite::limits::Limit;
    use sql_middleware::drivers::rusqlite::trace::TraceEventCodes;
    let _group = groups::enter("sqlite");
    let db = one_connection_pool().await;
    let mut c = db.get_connection().await.unwrap();
    let fresh = c
        .with_blocking_sqlite(|raw| raw.limit(Limit::SQLITE_LIMIT_LIKE_PATTERN_LENGTH))
        .await
        .unwrap();
    c.with_blocking_sqlite(|raw| {
        raw.set_limit(Limit::SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 7)?;
        raw.trace_v2(TraceEventCodes::SQLITE_TRACE_STMT, Some(count_trace));
        Ok(())
    })
    .await
    .unwrap();
    let limited = c
        .with_blocking_sqlite(|raw| raw.limit(Limit::SQLITE_LIMIT_LIKE_PATTERN_LENGTH))
        .await
        .unwrap();
    assert_eq!(
        limited, 7,
        "the change took no effect, so this test checks nothing"
    );
    drop(c);
    let mut next = db.get_connection().await.unwrap();
    let before = TRACED.load(Ordering::Relaxed);
    int_of(&mut next, "SELECT 1").await;
    let traced = TRACED.load(Ordering::Relaxed) - before;
    let seen = next
        .with_blocking_sqlite(|raw| raw.limit(Limit::SQLITE_LIMIT_LIKE_PATTERN_LENGTH))
        .await
        .unwrap();
    let created = db.stats().created;
    println!(
        "sqlite_raw_limits_trace limit_seen={seen} fresh={fresh} traced={traced} created={created}"
    );
    assert_eq!(
        seen, fresh,
        "a raw closure's run-time limit reached the next borrower"
    );
    assert_eq!(
        traced, 0,
        "a raw closure's trace callback ran for the next borrower"
    );
}

/// A deferred transaction that read, then tries to write while another connection holds the
/// write lock, is refused by SQLite at once (no busy wait can help): that is a
/// `SerializationFailure` that says to restart the transaction, not `Busy`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_refused_at_once_is_a_serialization_failure() {
    let _group = groups::enter("sqlite");
    let dir = TempDir::new("at_once");
    let a = ConfigAndPool::sqlite(db_file(&dir))
        .max_size(1)
        .busy_timeout(Duration::from_millis(2_000))
        .build()
        .await
        .unwrap();
    let b = ConfigAndPool::sqlite(db_file(&dir))
        .max_size(1)
        .build()
        .await
        .unwrap();
    let mut ca = a.get_connection().await.unwrap();
    ca.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1)")
        .await
        .unwrap();
    ca.query("BEGIN").dml().await.unwrap();
    assert_eq!(int_of(&mut ca, "SELECT count(*) FROM t").await, 1);
    let mut cb = b.get_connection().await.unwrap();
    let mut tx = cb.begin().await.unwrap();
    tx.query("INSERT INTO t VALUES (2)").dml().await.unwrap();
    let t = Instant::now();
    let e = ca
        .query("INSERT INTO t VALUES (3)")
        .dml()
        .await
        .unwrap_err();
    let took = t.elapsed();
    println!(
        "sqlite_at_once kind={:?} waited_ms={}",
        e.kind(),
        took.as_millis()
    );
    assert_eq!(e.kind(), ErrorKind::SerializationFailure, "{e}");
    assert!(
        took < Duration::from_millis(1_000),
        "refused at once: {took:?}"
    );
    assert!(e.message().contains("restart"), "{e}");
    assert!(!e.message().contains("busy_timeout"), "{e}");
    assert!(e.is_retryable());
    tx.commit().await.unwrap();
}

/// An ordinary statement error, at prepare, bind or step and with every terminal, never
/// costs a connection: the pool statistics show none discarded and none created anew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordinary_statement_errors_never_cost_a_connection() {
    use futures::TryStreamExt;
    let _group = groups::enter("sqlite");
    let db = one_connection_pool().await;
    let mut c = db.get_connection().await.unwrap();
    c.query("INSERT INTO t (id, name) VALUES (1, 'a')")
        .dml()
        .await
        .unwrap();
    let mut failures = 0;
    let mut fail = |r: Result<(), SqlMiddlewareDbError>, what: &str| {
        assert!(r.is_err(), "{what} should fail");
        failures += 1;
    };
    // Prepare errors.
    fail(c.query("SELEC 1").select().await.map(drop), "select syntax");
    fail(
        c.query("SELECT nope FROM t").dml().await.map(drop),
        "dml unknown column",
    );
    // Bind errors.
    fail(
        c.query("SELECT $1")
            .params(&[])
            .one::<(i64,)>()
            .await
            .map(drop),
        "one parameter count",
    );
    fail(
        c.query("SELECT $1")
            .params(&[1.into(), 2.into()])
            .optional::<(i64,)>()
            .await
            .map(drop),
        "optional parameter count",
    );
    // Step errors.
    fail(
        c.query("INSERT INTO t (id, name) VALUES (2, 'a')")
            .dml()
            .await
            .map(drop),
        "dml unique",
    );
    fail(
        c.query("SELECT abs(-9223372036854775807 - 1)")
            .select()
            .await
            .map(drop),
        "select overflow",
    );
    // Statements that would have made temporary objects or attached a database, had they
    // not failed: nothing is left to discard.
    fail(
        c.query("CREATE TEMP TABLE tt AS SELECT nope FROM t")
            .dml()
            .await
            .map(drop),
        "temp table from an unknown column",
    );
    fail(
        c.execute_batch("CREATE TEMP VIEW tv AS SELECT 1; SELEC")
            .await,
        "script with a temp view, then a syntax error",
    );
    fail(
        c.query("ATTACH ':memory:' AS main").dml().await.map(drop),
        "attach under a name in use",
    );
    fail(
        c.query("SELECT name FROM t")
            .all::<(i64,)>()
            .await
            .map(drop),
        "all decode",
    );
    fail(
        c.query("SELECT id FROM t WHERE id = 99")
            .one::<(i64,)>()
            .await
            .map(drop),
        "one none",
    );
    let p1 = [RowValues::Int(10), RowValues::Text("z".into())];
    let p2 = [RowValues::Int(11), RowValues::Text("a".into())];
    fail(
        c.pipeline("INSERT INTO t (id, name) VALUES ($1, $2)", &[&p1, &p2])
            .await
            .map(drop),
        "pipeline unique",
    );
    let streamed: Result<Vec<(i64,)>, _> = c
        .query("SELECT CASE WHEN id > 0 THEN abs(-9223372036854775807 - 1) END FROM t")
        .stream::<(i64,)>()
        .try_collect()
        .await;
    fail(streamed.map(drop), "stream overflow");
    fail(
        c.execute_batch("INSERT INTO log VALUES (1); INSERT INTO t (id, name) VALUES (3, 'a')")
            .await,
        "execute_batch unique",
    );
    fail(
        c.execute_batch("INSERT INTO log VALUES (1); SELEC").await,
        "execute_batch syntax",
    );
    fail(
        c.bulk_insert(
            "t",
            &["id", "name"],
            [
                vec![RowValues::Int(20), RowValues::Text("q".into())],
                vec![RowValues::Int(21), RowValues::Text("a".into())],
            ],
        )
        .await
        .map(drop),
        "bulk_insert unique",
    );
    let mut st = c
        .prepare("INSERT INTO t (id, name) VALUES ($1, $2)")
        .await
        .unwrap();
    fail(st.dml(&p2).await.map(drop), "prepared dml unique");
    drop(st);
    let mut tx = c.begin().await.unwrap();
    fail(
        tx.query("INSERT INTO t (id, name) VALUES (30, 'a')")
            .dml()
            .await
            .map(drop),
        "tx dml unique",
    );
    drop(tx);
    // Still usable, and still the only connection.
    assert_eq!(int_of(&mut c, "SELECT count(*) FROM t").await, 1);
    drop(c);
    let mut again = db.get_connection().await.unwrap();
    assert_eq!(int_of(&mut again, "SELECT count(*) FROM log").await, 0);
    drop(again);
    let s = db.stats();
    println!(
        "sqlite_errors_keep_connection failures={failures} created={} discarded={}",
        s.created, s.discarded
    );
    assert_eq!(
        (s.created, s.discarded),
        (1, 0),
        "a connection was discarded"
    );
}

/// A statement keeps what SQLite reported when it was prepared: run again from the
/// connection's statement caches (the middleware's, or rusqlite's, filled by raw access), its
/// pragma assignment is still put back for the next borrower.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_statements_keep_their_session_effects() {
    let _group = groups::enter("sqlite");
    const SET: &str = "PRAGMA recursive_triggers = 1";
    const READ: &str = "PRAGMA recursive_triggers";
    let db = one_connection_pool().await;
    // Only prepared into rusqlite's cache by raw access, never run there.
    let mut c = db.get_connection().await.unwrap();
    c.with_blocking_sqlite(|raw| raw.prepare_cached(SET).map(drop))
        .await
        .unwrap();
    drop(c);
    let mut leaked = 0;
    for round in 0..3 {
        let mut c = db.get_connection().await.unwrap();
        c.query(SET).dml().await.unwrap();
        assert_eq!(int_of(&mut c, READ).await, 1, "round {round}: no effect");
        drop(c);
        if int_of(&mut db.get_connection().await.unwrap(), READ).await != 0 {
            leaked += 1;
        }
    }
    let s = db.stats();
    println!(
        "sqlite_cached_effects rounds=3 leaked={leaked} created={} discarded={}",
        s.created, s.discarded
    );
    assert_eq!(
        leaked, 0,
        "a cached statement's pragma reached the next borrower"
    );
    assert_eq!(s.discarded, 0, "a restorable pragma costs no connection");
}

async fn journal_mode(c: &mut MiddlewarePoolConnection) -> String {
    let (m,): (String,) = c.query("PRAGMA journal_mode").one().await.unwrap();
    m
}

/// Assigning `journal_mode` the mode the pool set already (a common start-up line) costs no
/// connection; another mode never reaches the next borrower.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journal_mode_assignments_are_compared_with_a_fresh_connection() {
    let _group = groups::enter("sqlite");
    let dir = TempDir::new("journal_mode");
    let db = ConfigAndPool::sqlite(db_file(&dir))
        .max_size(1)
        .build()
        .await
        .unwrap();
    let mut c = db.get_connection().await.unwrap();
    c.execute_batch("PRAGMA journal_mode = WAL").await.unwrap();
    drop(c);
    let kept = db.stats().discarded;
    let mut c = db.get_connection().await.unwrap();
    let (_,): (String,) = c.query("PRAGMA journal_mode = DELETE").one().await.unwrap();
    assert_eq!(
        journal_mode(&mut c).await,
        "delete",
        "the assignment took no effect"
    );
    drop(c);
    let seen = journal_mode(&mut db.get_connection().await.unwrap()).await;
    let s = db.stats();
    println!(
        "sqlite_journal_mode same_mode_discarded={kept} other_mode_next_borrower={seen} discarded={}",
        s.discarded
    );
    assert_eq!(kept, 0, "assigning the pool's own mode cost the connection");
    assert_eq!(
        seen, "wal",
        "another journal mode reached the next borrower"
    );
}
