//! Turso-only promises: no write is acknowledged and then lost after a dropped transaction, and
//! two tasks never share one Turso connection.
#![cfg(feature = "turso")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use sql_middleware::prelude::*;

use crate::common::backends::{TempDir, one_connection_with_table};
use crate::common::groups;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_write_is_acknowledged_then_lost_after_a_dropped_transaction() {
    let _group = groups::enter("turso");
    let dir = TempDir::new("dangling");
    let db = ConfigAndPool::turso(dir.path().join("t.db"))
        .max_size(2)
        .build()
        .await
        .unwrap();
    let mut c = db.get_connection().await.unwrap();
    c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        .await
        .unwrap();
    let mut insert = c.prepare("INSERT INTO t VALUES ($1, $2)").await.unwrap();
    insert.dml(&[0.into(), "warm".into()]).await.unwrap();
    drop(insert);
    let mut acknowledged = Vec::new();
    for round in 1..=20_i64 {
        {
            let mut tx = c.begin().await.unwrap();
            tx.query("INSERT INTO t VALUES ($1, $2)")
                .params(&[(-round).into(), "dropped".into()])
                .dml()
                .await
                .unwrap();
            // dropped without commit
        }
        // A write through the same connection and a cached statement right after.
        let mut insert = c.prepare("INSERT INTO t VALUES ($1, $2)").await.unwrap();
        assert_eq!(insert.dml(&[round.into(), "kept".into()]).await.unwrap(), 1);
        acknowledged.push(round);
    }
    drop(c);
    // A fresh connection sees every acknowledged write and none of the dropped ones.
    let mut other = db.get_connection().await.unwrap();
    let kept: Vec<(i64,)> = other
        .query("SELECT id FROM t WHERE v = 'kept' ORDER BY id")
        .all()
        .await
        .unwrap();
    let dropped: (i64,) = other
        .query("SELECT count(*) FROM t WHERE v = 'dropped'")
        .one()
        .await
        .unwrap();
    let found: Vec<i64> = kept.into_iter().map(|r| r.0).collect();
    println!(
        "turso_dangling rounds=20 acknowledged={} found={} lost={} phantom={}",
        acknowledged.len(),
        found.len(),
        acknowledged.len() - found.len(),
        dropped.0
    );
    assert_eq!(found, acknowledged);
    assert_eq!(dropped.0, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tasks_never_share_a_connection() {
    let _group = groups::enter("turso");
    let dir = TempDir::new("sharing");
    let db = ConfigAndPool::turso(dir.path().join("t.db"))
        .max_size(4)
        .busy_timeout(Duration::from_secs(10))
        .build()
        .await
        .unwrap();
    {
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch("CREATE TABLE w (task INTEGER, i INTEGER, PRIMARY KEY (task, i))")
            .await
            .unwrap();
    }
    const TASKS: usize = 16;
    const ROUNDS: usize = 10;
    let in_use = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for task in 0..TASKS {
        let db = db.clone();
        let in_use = Arc::clone(&in_use);
        let peak = Arc::clone(&peak);
        handles.push(tokio::spawn(async move {
            for i in 0..ROUNDS {
                let mut c = db.get_connection().await.unwrap();
                let now = in_use.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                // A transaction held across await points: if another task used this connection
                // meanwhile, its BEGIN or statements would fail or see our rows.
                let mut tx = c.begin().await.unwrap();
                tx.query("INSERT INTO w VALUES ($1, $2)")
                    .params(&[(task as i64).into(), (i as i64).into()])
                    .dml()
                    .await
                    .unwrap();
                tokio::task::yield_now().await;
                let (mine,): (i64,) = tx
                    .query("SELECT count(*) FROM w WHERE task = $1")
                    .params(&[(task as i64).into()])
                    .one()
                    .await
                    .unwrap();
                assert_eq!(mine, i as i64 + 1);
                tx.commit().await.unwrap();
                in_use.fetch_sub(1, Ordering::SeqCst);
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let mut c = db.get_connection().await.unwrap();
    let (n,): (i64,) = c.query("SELECT count(*) FROM w").one().await.unwrap();
    let peak = peak.load(Ordering::SeqCst);
    println!(
        "turso_no_sharing tasks={TASKS} rounds={ROUNDS} rows={n} peak_checked_out={peak} max_size=4 pool_size={}",
        db.status().size
    );
    assert_eq!(n as usize, TASKS * ROUNDS);
    assert!(
        peak <= 4,
        "never more connections in use than the pool holds"
    );
    assert!(db.status().size <= 4);
}

#[tokio::test(flavor = "current_thread")]
async fn dropped_transaction_outside_a_runtime_is_rolled_back() {
    let _group = groups::enter("turso");
    let (_db, mut c) = one_connection_with_table(ConfigAndPool::turso_memory()).await;
    let mut tx = c.begin().await.unwrap();
    tx.query("INSERT INTO t VALUES (1)").dml().await.unwrap();
    std::thread::scope(|s| {
        s.spawn(move || {
            assert!(tokio::runtime::Handle::try_current().is_err());
            drop(tx);
        });
    });
    let (n,): (i64,) = c.query("SELECT count(*) FROM t").one().await.unwrap();
    assert_eq!(n, 0);
    let (autocommit,) = (c.turso_connection().await.unwrap().is_autocommit().unwrap(),);
    assert!(autocommit);
}

/// A checkout that must reuse the pool's one connection: how many connections the pool has
/// opened since `before`.
/// A pool of one Turso connection on a file in `dir`: the next borrower gets the same
/// connection back unless the pool replaced it.
async fn one_connection_pool(dir: &TempDir) -> ConfigAndPool {
    ConfigAndPool::turso(dir.path().join("t.db"))
        .max_size(1)
        .build()
        .await
        .unwrap()
}

async fn opened_since(db: &ConfigAndPool, before: u64) -> u64 {
    // Recycling happens at checkout: a connection the pool refuses is replaced here.
    drop(db.get_connection().await.unwrap());
    db.stats().created - before
}

#[test]
fn an_ordinary_statement_error_never_costs_a_connection() {
    // The body awaits 29 different terminals in one function; unoptimised, polling it takes
    // more than a test thread's 2 MiB of stack, so it runs on a thread with more.
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(ordinary_statement_errors_keep_the_connection());
        })
        .expect("test thread")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
}

// The deprecated `execute` and `query` of a prepared statement are terminals too.
#[allow(deprecated)]
async fn ordinary_statement_errors_keep_the_connection() {
    use futures::TryStreamExt;
    let _group = groups::enter("turso");
    let dir = TempDir::new("errkeep");
    let db = one_connection_pool(&dir).await;
    {
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch(
            "CREATE TABLE u (k INTEGER PRIMARY KEY, v TEXT UNIQUE); INSERT INTO u VALUES (1, 'taken')",
        )
        .await
        .unwrap();
    }
    let ins = "INSERT INTO u (k, v) VALUES ($1, 'taken')";
    let ret = "INSERT INTO u (k, v) VALUES ($1, 'taken') RETURNING k";
    // An error raised while rows are being read: the second row overflows.
    let mid = "SELECT CASE WHEN column1 = 2 THEN abs(-9223372036854775808) ELSE column1 END \
               FROM (VALUES (1), (2), (3))";
    let p: &[RowValues] = &[RowValues::Int(2)];
    let mut cases = 0;
    let mut costly: Vec<(&str, u64)> = Vec::new();
    macro_rules! case {
        ($name:expr, |$c:ident| $body:expr) => {{
            let before = db.stats().created;
            {
                let mut $c = db.get_connection().await.unwrap();
                let r: Result<_, SqlMiddlewareDbError> = async { $body }.await;
                assert!(r.is_err(), "{}: the statement should fail", $name);
            }
            cases += 1;
            let opened = opened_since(&db, before).await;
            if opened != 0 {
                costly.push(($name, opened));
            }
        }};
    }
    // Step phase: a unique violation, through every terminal.
    case!("query.dml", |c| c.query(ins).params(p).dml().await);
    case!("query.select", |c| c.query(ret).params(p).select().await);
    case!("query.one", |c| c
        .query(ret)
        .params(p)
        .one::<(i64,)>()
        .await);
    case!("query.optional", |c| c
        .query(ret)
        .params(p)
        .optional::<(i64,)>()
        .await);
    case!("query.all", |c| c
        .query(ret)
        .params(p)
        .all::<(i64,)>()
        .await);
    case!("query.stream", |c| c
        .query(ret)
        .params(p)
        .stream::<(i64,)>()
        .try_collect::<Vec<_>>()
        .await);
    case!("pipeline", |c| c
        .pipeline(ret, &[&[RowValues::Int(3)], p])
        .await);
    case!("execute_batch", |c| c
        .execute_batch("INSERT INTO u VALUES (5, 'taken')")
        .await);
    case!("execute_batch, second statement", |c| c
        .execute_batch("INSERT INTO u VALUES (6, 'x6'); INSERT INTO u VALUES (7, 'taken')")
        .await);
    case!("bulk_insert", |c| c
        .bulk_insert("u", &["k", "v"], [vec![RowValues::Int(8), "taken".into()]])
        .await);
    case!("stmt.dml", |c| c.prepare(ins).await?.dml(p).await);
    case!("stmt.execute", |c| c.prepare(ins).await?.execute(p).await);
    case!("stmt.select", |c| c.prepare(ret).await?.select(p).await);
    case!("stmt.query", |c| c.prepare(ret).await?.query(p).await);
    case!("stmt.one", |c| c.prepare(ret).await?.one::<(i64,)>(p).await);
    case!("stmt.optional", |c| c
        .prepare(ret)
        .await?
        .optional::<(i64,)>(p)
        .await);
    case!("stmt.all", |c| c.prepare(ret).await?.all::<(i64,)>(p).await);
    case!("stmt.stream", |c| {
        let mut s = c.prepare(ret).await?;
        s.stream::<(i64,)>(p).try_collect::<Vec<_>>().await
    });
    // An error part-way through the rows.
    case!("rows: select", |c| c.query(mid).select().await);
    case!("rows: one", |c| c.query(mid).one::<(i64,)>().await);
    case!("rows: optional", |c| c
        .query(mid)
        .optional::<(i64,)>()
        .await);
    case!("rows: all", |c| c.query(mid).all::<(i64,)>().await);
    case!("rows: stream", |c| c
        .query(mid)
        .stream::<(i64,)>()
        .try_collect::<Vec<_>>()
        .await);
    // Prepare and bind phases.
    case!("prepare: syntax", |c| c.prepare("SELEC 1").await.map(drop));
    case!("prepare: no such table", |c| c
        .query("SELECT * FROM nosuch")
        .select()
        .await);
    case!("bind: parameter count", |c| c
        .query(ins)
        .params(&[])
        .dml()
        .await);
    // Inside transactions and savepoints.
    case!("tx: dml, then commit", |c| {
        let mut tx = c.begin().await?;
        let _ = tx.query(ins).params(p).dml().await;
        tx.commit().await
    });
    case!("tx: select, then dropped", |c| {
        let mut tx = c.begin().await?;
        tx.query(ret).params(p).select().await
    });
    case!("savepoint: dml", |c| {
        let mut tx = c.begin().await?;
        let r = {
            let mut sp = tx.savepoint().await?;
            sp.query(ins).params(p).dml().await
        };
        tx.commit().await?;
        r
    });
    let s = db.stats();
    println!(
        "turso_error_keeps_connection terminals={cases} costly={} created={} discarded={}",
        costly.len(),
        s.created,
        s.discarded
    );
    assert!(
        costly.is_empty(),
        "these failures cost the pool its connection: {costly:?}"
    );
    assert_eq!(s.discarded, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_write_after_a_dropped_transaction_is_kept() {
    let _group = groups::enter("turso");
    let dir = TempDir::new("rawkeep");
    let db = ConfigAndPool::turso(dir.path().join("t.db"))
        .max_size(2)
        .build()
        .await
        .unwrap();
    let mut c = db.get_connection().await.unwrap();
    c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        .await
        .unwrap();
    const ROUNDS: i64 = 10;
    let mut acknowledged = 0;
    for round in 1..=ROUNDS {
        {
            let mut tx = c.begin().await.unwrap();
            tx.query("INSERT INTO t VALUES ($1, 'dropped')")
                .params(&[(-round).into()])
                .dml()
                .await
                .unwrap();
            // dropped without commit
        }
        let n = c
            .turso_connection()
            .await
            .unwrap()
            .execute(format!("INSERT INTO t VALUES ({round}, 'raw')"), ())
            .await
            .unwrap();
        assert_eq!(n, 1);
        acknowledged += 1;
        // The middleware's next statement on the same connection.
        let _: (i64,) = c.query("SELECT count(*) FROM t").one().await.unwrap();
    }
    drop(c);
    let mut other = db.get_connection().await.unwrap();
    let (raw,): (i64,) = other
        .query("SELECT count(*) FROM t WHERE v = 'raw'")
        .one()
        .await
        .unwrap();
    let (dropped,): (i64,) = other
        .query("SELECT count(*) FROM t WHERE v = 'dropped'")
        .one()
        .await
        .unwrap();
    println!(
        "turso_raw_after_dropped_tx rounds={ROUNDS} acknowledged={acknowledged} found={raw} lost={} phantom={dropped}",
        acknowledged - raw
    );
    assert_eq!(raw, acknowledged, "an acknowledged raw write was lost");
    assert_eq!(dropped, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_transaction_releases_the_write_lock_at_once() {
    let _group = groups::enter("turso");
    let dir = TempDir::new("droplock");
    let db = ConfigAndPool::turso(dir.path().join("t.db"))
        .max_size(2)
        .busy_timeout(Duration::from_millis(300))
        .build()
        .await
        .unwrap();
    let mut a = db.get_connection().await.unwrap();
    a.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY)")
        .await
        .unwrap();
    let mut b = db.get_connection().await.unwrap();
    {
        let mut tx = a.begin().await.unwrap();
        tx.query("INSERT INTO t VALUES (1)").dml().await.unwrap();
        // dropped without commit; `a` is not used again before `b` writes
    }
    let t = std::time::Instant::now();
    let r = b.query("INSERT INTO t VALUES (2)").dml().await;
    let waited = t.elapsed();
    println!(
        "turso_dropped_tx_lock waited_ms={} ok={}",
        waited.as_millis(),
        r.is_ok()
    );
    assert_eq!(
        r.unwrap(),
        1,
        "the abandoned transaction still held the lock"
    );
    let (n,): (i64,) = b.query("SELECT count(*) FROM t").one().await.unwrap();
    assert_eq!(n, 1);
    drop(a);
}

/// Recycling times only the checks that can wait (a background rollback, a transaction to roll
/// back, a session to check), with the pool's recycle timeout. Under a timeout far too tight for
/// them, a connection given back dirty is cleaned in time or replaced, never handed out as it
/// was: the next borrower is outside any transaction, sees nothing of the abandoned writes, can
/// write at once, and has the pool's session. A connection given back clean is reused as it is,
/// whatever the timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recycling_under_a_tight_timeout_never_hands_out_a_dirty_connection() {
    let _group = groups::enter("turso");
    let dir = TempDir::new("recyclebound");
    let db = ConfigAndPool::turso(dir.path().join("t.db"))
        .max_size(1)
        .recycle_timeout(Duration::from_micros(1))
        .build()
        .await
        .unwrap();
    let mut c = db.get_connection().await.unwrap();
    c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY)")
        .await
        .unwrap();
    let (cache,): (i64,) = c.query("PRAGMA cache_size").one().await.unwrap();
    drop(c);

    let before = db.stats().created;
    for _ in 0..20 {
        let mut c = db.get_connection().await.unwrap();
        let (n,): (i64,) = c.query("SELECT count(*) FROM t").one().await.unwrap();
        assert_eq!(n, 0);
    }
    assert_eq!(
        db.stats().created - before,
        0,
        "a connection given back clean was not reused"
    );

    for i in 0..10_i64 {
        let mut c = db.get_connection().await.unwrap();
        if i % 2 == 0 {
            let mut tx = c.begin().await.unwrap();
            tx.query("INSERT INTO t VALUES ($1)")
                .params(&[i.into()])
                .dml()
                .await
                .unwrap();
            // dropped without commit
        } else {
            c.execute_batch(&format!("PRAGMA cache_size = {}", cache + 1 + i))
                .await
                .unwrap();
        }
        drop(c);
        let mut next = db.get_connection().await.unwrap();
        let (n,): (i64,) = next.query("SELECT count(*) FROM t").one().await.unwrap();
        assert_eq!(n, i / 2, "round {i}: an abandoned write is visible");
        let (now,): (i64,) = next.query("PRAGMA cache_size").one().await.unwrap();
        assert_eq!(now, cache, "round {i}: the session was handed out changed");
        let mut tx = next.begin().await.unwrap_or_else(|e| {
            panic!("round {i}: the connection was handed out inside a transaction: {e}")
        });
        tx.query("INSERT INTO t VALUES ($1)")
            .params(&[(1000 + i).into()])
            .dml()
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        if i % 2 == 1 {
            // Keep the count check simple: one committed row per odd round.
            next.query("INSERT INTO t VALUES ($1)")
                .params(&[(2000 + i).into()])
                .dml()
                .await
                .unwrap();
        }
    }
}

/// What a borrower can see of its session: the pragma values, attached databases, temporary
/// objects, and the session's sequence values.
async fn session_fingerprint(c: &mut MiddlewarePoolConnection) -> Vec<String> {
    const PRAGMAS: [&str; 19] = [
        "busy_timeout",
        "cache_size",
        "cache_spill",
        "count_changes",
        "foreign_keys",
        "ignore_check_constraints",
        "query_only",
        "require_where",
        "temp_store",
        "synchronous",
        "data_sync_retry",
        "full_column_names",
        "short_column_names",
        "fts_merge_threshold",
        "max_page_count",
        "capture_data_changes_conn",
        "encoding",
        "locking_mode",
        "journal_mode",
    ];
    async fn rows(raw: &turso::Connection, sql: &str) -> Vec<Vec<turso::Value>> {
        let mut out = Vec::new();
        match raw.query(sql, ()).await {
            Ok(mut rows) => loop {
                match rows.next().await {
                    Ok(Some(r)) => out.push(
                        (0..r.column_count())
                            .map(|i| r.get_value(i).unwrap())
                            .collect(),
                    ),
                    Ok(None) => break,
                    Err(e) => {
                        out.push(vec![turso::Value::Text(format!("error: {e}"))]);
                        break;
                    }
                }
            },
            Err(e) => out.push(vec![turso::Value::Text(format!("error: {e}"))]),
        }
        out
    }
    let raw = c.turso_connection().await.unwrap();
    let mut out = Vec::new();
    for p in PRAGMAS {
        out.push(format!("{p}={:?}", rows(raw, &format!("PRAGMA {p}")).await));
    }
    for db in rows(raw, "PRAGMA database_list").await {
        let name = match &db[1] {
            turso::Value::Text(t) => t.clone(),
            other => format!("{other:?}"),
        };
        match name.as_str() {
            "main" => {}
            "temp" => {
                for o in rows(
                    raw,
                    "SELECT type, name FROM temp.sqlite_schema ORDER BY name",
                )
                .await
                {
                    out.push(format!("temp object {o:?}"));
                }
            }
            other => out.push(format!("attached {other}")),
        }
    }
    out.push(format!(
        "currval(s)={:?}",
        rows(raw, "SELECT currval('s')").await
    ));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_borrower_gets_a_freshly_configured_session() {
    let _group = groups::enter("turso");
    let dir = TempDir::new("session");
    let db = one_connection_pool(&dir).await;
    {
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch(
            "CREATE TABLE base (a INTEGER); CREATE SEQUENCE s; \
             CREATE VIEW vs AS SELECT nextval('s') AS n; \
             CREATE TABLE fired (a INTEGER); \
             CREATE TRIGGER fire AFTER INSERT ON fired BEGIN SELECT nextval('s'); END",
        )
        .await
        .unwrap();
    }
    // A freshly configured connection of another pool on the same database.
    let fresh = {
        let other = ConfigAndPool::turso(dir.path().join("t.db"))
            .max_size(1)
            .build()
            .await
            .unwrap();
        let mut c = other.get_connection().await.unwrap();
        session_fingerprint(&mut c).await
    };
    let statements = [
        "PRAGMA foreign_keys = OFF",
        "/* c */ pragma MAIN.cache_size = 77",
        "PRAGMA query_only = 1",
        "PRAGMA cache_spill = 0",
        "PRAGMA count_changes = 1",
        "PRAGMA ignore_check_constraints = 1",
        "PRAGMA require_where = 1",
        "PRAGMA temp_store = 2",
        "PRAGMA synchronous = 0",
        "PRAGMA data_sync_retry = 1",
        "PRAGMA full_column_names = 1",
        "PRAGMA short_column_names = 0",
        "PRAGMA fts_merge_threshold = 7",
        "PRAGMA busy_timeout = 1234",
        "PRAGMA capture_data_changes_conn('full')",
        "EXPLAIN PRAGMA foreign_keys = OFF",
        "CREATE TEMP TABLE tt (a)",
        "create temporary table if not exists \"tt2\" (a)",
        "CREATE TABLE temp.tt3 (a)",
        "CREATE TABLE \"temp\".tt4 (a)",
        "CREATE TEMP VIEW tv AS SELECT 1",
        "CREATE VIEW temp.tv2 AS SELECT 1",
        "CREATE TEMP TRIGGER ttr AFTER INSERT ON base BEGIN SELECT 1; END",
        "CREATE TRIGGER temp.ttr2 AFTER INSERT ON base BEGIN SELECT 1; END",
        "CREATE TEMP TABLE ti_t (a); CREATE INDEX temp.ti ON ti_t (a)",
        "SELECT nextval('s')",
        "SELECT n FROM vs",
        "INSERT INTO fired VALUES (1)",
        "ATTACH 'other.db' AS o",
    ];
    #[derive(Debug, Clone, Copy)]
    enum Path {
        Dml,
        Select,
        Prepare,
        Batch,
        Raw,
        Tx,
        Savepoint,
        Pipeline,
        Stream,
    }
    async fn apply(c: &mut MiddlewarePoolConnection, path: Path, sql: &str) -> bool {
        let r: Result<(), SqlMiddlewareDbError> = async {
            match path {
                Path::Dml => c.query(sql).dml().await.map(drop),
                Path::Select => c.query(sql).select().await.map(drop),
                Path::Prepare => c.prepare(sql).await?.dml(&[]).await.map(drop),
                Path::Batch => c.execute_batch(sql).await,
                Path::Raw => {
                    let raw = c.turso_connection().await?;
                    let mut rows = raw.query(sql, ()).await?;
                    while rows.next().await?.is_some() {}
                    Ok(())
                }
                Path::Tx => {
                    let mut tx = c.begin().await?;
                    tx.query(sql).select().await?;
                    tx.commit().await
                }
                Path::Savepoint => {
                    let mut tx = c.begin().await?;
                    {
                        let mut sp = tx.savepoint().await?;
                        sp.query(sql).select().await?;
                        sp.commit().await?;
                    }
                    tx.commit().await
                }
                Path::Pipeline => c.pipeline(sql, &[&[]]).await.map(drop),
                Path::Stream => {
                    use futures::TryStreamExt;
                    c.query(sql)
                        .stream::<(i64,)>()
                        .try_collect::<Vec<_>>()
                        .await
                        .map(drop)
                }
            }
        }
        .await;
        r.is_ok()
    }
    let paths = [
        Path::Dml,
        Path::Select,
        Path::Prepare,
        Path::Batch,
        Path::Raw,
        Path::Tx,
        Path::Savepoint,
        Path::Pipeline,
        Path::Stream,
    ];
    let mut cases = 0;
    let mut ran = 0;
    let mut leaks = Vec::new();
    for sql in statements {
        for path in paths {
            cases += 1;
            {
                let mut c = db.get_connection().await.unwrap();
                if apply(&mut c, path, sql).await {
                    ran += 1;
                }
            }
            let mut next = db.get_connection().await.unwrap();
            let seen = session_fingerprint(&mut next).await;
            if seen != fresh {
                let diff: Vec<&String> = seen.iter().filter(|l| !fresh.contains(l)).collect();
                leaks.push(format!("{sql} via {path:?}: {diff:?}"));
            }
        }
    }
    let s = db.stats();
    println!(
        "turso_session cases={cases} ran={ran} leaked={} created={} discarded={}",
        leaks.len(),
        s.created,
        s.discarded
    );
    assert!(
        leaks.is_empty(),
        "the next borrower saw another session:\n{}",
        leaks.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pragma_takes_effect_every_time_it_runs() {
    let _group = groups::enter("turso");
    let (db, c) = one_connection_with_table(ConfigAndPool::turso_memory()).await;
    drop(c);
    let mut seen = Vec::new();
    for _ in 0..3 {
        let mut c = db.get_connection().await.unwrap();
        c.query("PRAGMA foreign_keys = OFF").dml().await.unwrap();
        let (fk,): (i64,) = c.query("PRAGMA foreign_keys").one().await.unwrap();
        seen.push(fk);
    }
    println!("turso_pragma_every_time runs=3 foreign_keys_after={seen:?}");
    assert_eq!(seen, [0, 0, 0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_snapshot_is_a_serialization_failure() {
    let _group = groups::enter("turso");
    let dir = TempDir::new("stale");
    let db = ConfigAndPool::turso(dir.path().join("t.db"))
        .max_size(2)
        .busy_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    let mut a = db.get_connection().await.unwrap();
    a.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY)")
        .await
        .unwrap();
    let mut b = db.get_connection().await.unwrap();
    // A deferred transaction reads, another connection commits, then the first one writes.
    a.execute_batch("BEGIN").await.unwrap();
    let _: (i64,) = a.query("SELECT count(*) FROM t").one().await.unwrap();
    b.query("INSERT INTO t VALUES (1)").dml().await.unwrap();
    let t = std::time::Instant::now();
    let e = a.query("INSERT INTO t VALUES (2)").dml().await.unwrap_err();
    let waited = t.elapsed();
    println!(
        "turso_stale_snapshot kind={:?} waited_ms={}",
        e.kind(),
        waited.as_millis()
    );
    assert_eq!(e.kind(), ErrorKind::SerializationFailure, "{e}");
    assert!(!e.to_string().contains("busy_timeout"), "{e}");
    assert!(waited < Duration::from_secs(1), "waited {waited:?}");
    a.execute_batch("ROLLBACK").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_of_the_same_connection_in_progress_is_no_lock_wait() {
    let _group = groups::enter("turso");
    let dir = TempDir::new("inprogress");
    let db = ConfigAndPool::turso(dir.path().join("t.db"))
        .max_size(1)
        .busy_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    let mut c = db.get_connection().await.unwrap();
    c.execute_batch("CREATE TABLE w (id INTEGER PRIMARY KEY); INSERT INTO w VALUES (1), (2), (3)")
        .await
        .unwrap();
    // A write left part-way through a clone of the raw connection.
    let raw = c.turso_connection().await.unwrap().clone();
    let mut rows = raw
        .query("INSERT INTO w SELECT id + 10 FROM w RETURNING id", ())
        .await
        .unwrap();
    let _first = rows.next().await.unwrap();
    let t = std::time::Instant::now();
    let e = c
        .query("INSERT INTO w VALUES (100)")
        .dml()
        .await
        .unwrap_err();
    let waited = t.elapsed();
    println!(
        "turso_in_progress kind={:?} waited_ms={}",
        e.kind(),
        waited.as_millis()
    );
    assert_ne!(e.kind(), ErrorKind::Busy, "{e}");
    assert!(!e.to_string().contains("busy_timeout"), "{e}");
    assert!(
        waited < Duration::from_secs(1),
        "waited {waited:?} for nothing"
    );
    drop(rows);
    drop(raw);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_writing_through_a_function_or_view_is_all_or_nothing() {
    let _group = groups::enter("turso");
    let dir = TempDir::new("pipewrite");
    let db = one_connection_pool(&dir).await;
    let mut c = db.get_connection().await.unwrap();
    c.execute_batch(
        "CREATE SEQUENCE s; CREATE SEQUENCE sv; CREATE VIEW vs AS SELECT nextval('sv') AS n",
    )
    .await
    .unwrap();
    // The last set overflows: nothing of the pipeline may stay.
    let bad = RowValues::Int(i64::MIN);
    let sets: [&[RowValues]; 3] = [&[RowValues::Int(1)], &[RowValues::Int(2)], &[bad]];
    let mut moved = Vec::new();
    for (seq, sql) in [
        ("s", "SELECT nextval('s'), abs($1)"),
        ("sv", "SELECT n, abs($1) FROM vs"),
    ] {
        assert!(c.pipeline(sql, &sets).await.is_err());
        let (next,): (i64,) = c
            .query(&format!("SELECT nextval('{seq}')"))
            .one()
            .await
            .unwrap();
        moved.push(next - 1);
    }
    println!("turso_pipeline_hidden_writes sets=3 kept_after_failure={moved:?}");
    assert_eq!(moved, [0, 0], "a failed pipeline left writes behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_of_pragmas_applies() {
    let _group = groups::enter("turso");
    let (_db, mut c) = one_connection_with_table(ConfigAndPool::turso_memory()).await;
    c.execute_batch("PRAGMA temp_store = MEMORY; PRAGMA cache_size = -3000;")
        .await
        .unwrap();
    let (temp_store,): (i64,) = c.query("PRAGMA temp_store").one().await.unwrap();
    let (cache_size,): (i64,) = c.query("PRAGMA cache_size").one().await.unwrap();
    println!("turso_pragma_script temp_store={temp_store} cache_size={cache_size}");
    assert_eq!((temp_store, cache_size), (2, -3000));
}

/// A new database file has its first page once the pool is built, so the first writes of the
/// pool's connections never race to create it (in Turso 0.8 that race trips an assertion in
/// the pager: a panic on the caller's task). Each round builds a pool on a new file or in
/// memory and has eight tasks create a table each at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_writes_of_many_connections_to_a_new_file() {
    let _group = groups::enter("turso");
    let rounds = 20;
    for round in 0..rounds {
        let dir = TempDir::new("first_page");
        // A new file, and every other round a database in memory.
        let builder = if round % 2 == 0 {
            ConfigAndPool::turso(dir.path().join("new.db"))
        } else {
            ConfigAndPool::turso_memory()
        };
        let pool = Arc::new(builder.max_size(8).build().await.unwrap());
        let mut c = pool.get_connection().await.unwrap();
        let (pages,): (i64,) = c.query("PRAGMA page_count").one().await.unwrap();
        assert!(
            pages >= 1,
            "round {round}: a new file has {pages} pages after build"
        );
        let (version,): (i64,) = c.query("PRAGMA user_version").one().await.unwrap();
        assert_eq!(version, 0, "round {round}: user_version");
        drop(c);
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let pool = Arc::clone(&pool);
                tokio::spawn(async move {
                    let mut c = pool.get_connection().await?;
                    c.execute_batch(&format!("CREATE TABLE t{i} (id INTEGER PRIMARY KEY)"))
                        .await
                })
            })
            .collect();
        for t in tasks {
            t.await
                .unwrap_or_else(|e| panic!("round {round}: a task panicked: {e}"))
                .unwrap_or_else(|e| panic!("round {round}: a first write failed: {e}"));
        }
    }
    println!("turso_first_page rounds={rounds} tasks=8");
}
