//! `db.dml(sql, params)`: one autocommit write on a connection of the pool, on every engine.
//! In the single-writer mode of SQLite and Turso, concurrent calls share commits (group
//! commit); on every engine and in every mode each call keeps the outcome its own autocommit
//! statement would have: `Ok` only once its work is committed and visible to a new connection,
//! its own error and nobody else's, nothing lost, nothing reported committed that was not.

use std::sync::Arc;
use std::time::Duration;

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, TestDb, expect_kind};

const SCHEMA: &str = "CREATE TABLE gc (id INTEGER PRIMARY KEY, v TEXT NOT NULL)";
const INSERT: &str = "INSERT INTO gc (id, v) VALUES ($1, $2)";

fn embedded(kind: Kind) -> bool {
    matches!(kind, Kind::Sqlite | Kind::Turso)
}

/// The pool the test writes through: the single-writer mode on SQLite and Turso (where
/// `dml` groups), the test's own pool on the server engines (where it does not).
async fn writer_pool(db: &TestDb) -> ConfigAndPool {
    let pool = if embedded(db.kind) {
        db.builder()
            .single_writer(2)
            .build()
            .await
            .unwrap_or_else(|e| panic!("[{}] single_writer pool: {e:?}", db.kind.name()))
    } else {
        db.db.clone()
    };
    pool.dml(SCHEMA, &[]).await.unwrap();
    pool
}

/// The ids in `gc`, read on a connection of a new pool (so only committed work shows).
async fn committed_ids(db: &TestDb) -> Vec<i64> {
    let fresh = db.builder().max_size(1).build().await.unwrap();
    let mut c = fresh.get_connection().await.unwrap();
    let rows: Vec<(i64,)> = c
        .query("SELECT id FROM gc ORDER BY id")
        .all()
        .await
        .unwrap();
    drop(c);
    fresh.close();
    rows.into_iter().map(|r| r.0).collect()
}

fn row(id: i64) -> Vec<RowValues> {
    vec![RowValues::Int(id), RowValues::Text(format!("v{id}"))]
}

/// The outcomes `dml` gives are the connection's: rows changed, typed errors for bad input,
/// `PoolClosed` after `close`.
async fn t_dml_is_an_autocommit_write(db: &TestDb) {
    let k = db.kind.name();
    let pool = writer_pool(db).await;
    for id in 1..=3 {
        assert_eq!(pool.dml(INSERT, &row(id)).await.unwrap(), 1, "[{k}] insert");
    }
    assert_eq!(
        pool.dml(
            "UPDATE gc SET v = $1 WHERE id >= $2",
            &[RowValues::Text("u".into()), RowValues::Int(2)]
        )
        .await
        .unwrap(),
        2,
        "[{k}] update"
    );
    assert_eq!(
        pool.dml("DELETE FROM gc WHERE id = $1", &[RowValues::Int(99)])
            .await
            .unwrap(),
        0,
        "[{k}] delete of nothing"
    );
    assert_eq!(committed_ids(db).await, [1, 2, 3], "[{k}] committed");
    expect_kind(
        &format!("[{k}] duplicate key"),
        pool.dml(INSERT, &row(1)).await,
        ErrorKind::UniqueViolation,
    );
    expect_kind(
        &format!("[{k}] a parameter too few"),
        pool.dml(INSERT, &[RowValues::Int(7)]).await,
        ErrorKind::ParameterCount,
    );
    let e = pool
        .dml("INSERT INTO no_such_table (id) VALUES (1)", &[])
        .await;
    assert!(e.is_err(), "[{k}] missing table: {e:?}");
    // Every statement kind, not only the grouped ones: DDL and two statements in one text
    // give what the connection's own `dml` gives.
    assert_eq!(
        pool.dml("CREATE TABLE gc2 (id INTEGER PRIMARY KEY)", &[])
            .await
            .unwrap(),
        0,
        "[{k}] DDL"
    );
    let two = "INSERT INTO gc2 (id) VALUES (1); INSERT INTO gc2 (id) VALUES (2)";
    let mut c = pool.get_connection().await.unwrap();
    let direct = c.query(two).dml().await.map_err(|e| e.kind());
    drop(c);
    let pooled = pool.dml(two, &[]).await.map_err(|e| e.kind());
    assert_eq!(
        pooled.is_ok(),
        direct.is_ok(),
        "[{k}] two statements: {pooled:?} vs {direct:?}"
    );
    if let (Err(p), Err(d)) = (pooled, direct) {
        assert_eq!(p, d, "[{k}] two statements");
    }
    assert_eq!(committed_ids(db).await, [1, 2, 3], "[{k}] nothing else");
    pool.close();
    expect_kind(
        &format!("[{k}] dml after close"),
        pool.dml(INSERT, &row(50)).await,
        ErrorKind::PoolClosed,
    );
}

/// Many concurrent writes, some of them bound to fail: each call gets its own outcome, and
/// exactly the writes that returned `Ok` are committed.
async fn t_concurrent_writes_keep_their_own_outcomes(db: &TestDb) {
    let k = db.kind.name();
    let pool = writer_pool(db).await;
    pool.dml(INSERT, &row(1000)).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..64i64 {
        let pool = pool.clone();
        // Every eighth write repeats the existing key 1000: a unique violation.
        let id = if i % 8 == 7 { 1000 } else { i };
        tasks.push(tokio::spawn(async move {
            (id, pool.dml(INSERT, &row(id)).await)
        }));
    }
    let mut ok = vec![1000];
    for t in tasks {
        let (id, r) = t.await.unwrap();
        match r {
            Ok(n) => {
                assert_eq!(n, 1, "[{k}] write {id}");
                ok.push(id);
            }
            Err(e) => {
                assert_eq!(id, 1000, "[{k}] write {id} failed: {e:?}");
                assert_eq!(e.kind(), ErrorKind::UniqueViolation, "[{k}] {e:?}");
            }
        }
    }
    ok.sort_unstable();
    assert_eq!(ok.len(), 57, "[{k}] 56 new rows and the first");
    assert_eq!(
        committed_ids(db).await,
        ok,
        "[{k}] exactly the writes that returned Ok"
    );
}

/// Writers that each send a stream of writes, one after another: rounds start and end all the
/// time, and a write that arrives as a round task ends is never lost or failed.
async fn t_streams_of_writes_all_land(db: &TestDb) {
    let k = db.kind.name();
    let pool = writer_pool(db).await;
    let tasks: Vec<_> = (0..8i64)
        .map(|t| {
            let pool = pool.clone();
            tokio::spawn(async move {
                for i in 0..60i64 {
                    let id = t * 1000 + i;
                    let n = pool.dml(INSERT, &row(id)).await;
                    assert_eq!(n.as_ref().ok(), Some(&1), "write {id}: {n:?}");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap_or_else(|e| panic!("[{k}] {e}"));
    }
    let want: Vec<i64> = (0..8i64)
        .flat_map(|t| (0..60).map(move |i| t * 1000 + i))
        .collect();
    let mut want = want;
    want.sort_unstable();
    assert_eq!(committed_ids(db).await, want, "[{k}]");
}

/// Writes that queue while the writer is held run as one round (one checkout of the writer,
/// one commit) once it is free, and a caller that stopped waiting before its round started
/// is left out. On the server engines `dml` never groups: a checkout per call.
async fn t_a_round_shares_one_commit(db: &TestDb) {
    let k = db.kind.name();
    let pool = writer_pool(db).await;
    if !embedded(db.kind) {
        let before = pool.stats().checkout_wait.count;
        for id in 1..=5 {
            pool.dml(INSERT, &row(id)).await.unwrap();
        }
        assert_eq!(
            pool.stats().checkout_wait.count - before,
            5,
            "[{k}] a checkout per call"
        );
        return;
    }
    let held = pool.get_connection().await.unwrap();
    let before = pool.stats().checkout_wait.count;
    let mut tasks = Vec::new();
    for id in 1..=20i64 {
        let pool = pool.clone();
        tasks.push(tokio::spawn(
            async move { pool.dml(INSERT, &row(id)).await },
        ));
    }
    let abandoned = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.dml(INSERT, &row(99)).await })
    };
    wait_for(
        || pool.stats().waiters >= 1,
        &format!("[{k}] the round waits for the writer"),
    )
    .await;
    // Give every spawned call time to queue, then let the abandoned one go.
    tokio::time::sleep(Duration::from_millis(200)).await;
    abandoned.abort();
    let _ = abandoned.await;
    drop(held);
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap(), 1, "[{k}]");
    }
    let checkouts = pool.stats().checkout_wait.count - before;
    assert_eq!(
        checkouts, 1,
        "[{k}] 20 queued writes, one round on the writer"
    );
    assert_eq!(
        committed_ids(db).await,
        (1..=20).collect::<Vec<_>>(),
        "[{k}] the abandoned write was left out"
    );
}

/// While a user's transaction holds the writer, grouped writes wait for it and commit after
/// it; its rollback takes none of theirs.
async fn t_rounds_and_transactions_take_turns(db: &TestDb) {
    let k = db.kind.name();
    let pool = writer_pool(db).await;
    let mut w = pool.get_connection().await.unwrap();
    let mut tx = w.begin().await.unwrap();
    tx.query(INSERT).params(&row(500)).dml().await.unwrap();
    let tasks: Vec<_> = (1..=8i64)
        .map(|id| {
            let pool = pool.clone();
            tokio::spawn(async move { pool.dml(INSERT, &row(id)).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    if embedded(db.kind) {
        assert!(
            tasks.iter().all(|t| !t.is_finished()),
            "[{k}] the writes wait for the writer"
        );
    }
    tx.rollback().await.unwrap();
    drop(w);
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap(), 1, "[{k}]");
    }
    assert_eq!(
        committed_ids(db).await,
        (1..=8).collect::<Vec<_>>(),
        "[{k}]"
    );
}

async fn wait_for(cond: impl Fn() -> bool, what: &str) {
    for _ in 0..500 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what}: not within 5 s");
}

backend_tests! {
    async fn dml_is_an_autocommit_write(db) { t_dml_is_an_autocommit_write(&db).await }
    async fn concurrent_writes_keep_their_own_outcomes(db) {
        t_concurrent_writes_keep_their_own_outcomes(&db).await
    }
    async fn a_round_shares_one_commit(db) { t_a_round_shares_one_commit(&db).await }
    async fn streams_of_writes_all_land(db) { t_streams_of_writes_all_land(&db).await }
    async fn rounds_and_transactions_take_turns(db) {
        t_rounds_and_transactions_take_turns(&db).await
    }
}

/// A statement that makes SQLite roll the whole transaction back (a trigger's
/// `RAISE(ROLLBACK)`) fails alone: the writes of its round that ran before it lost their work
/// with the transaction, and run again, so each of them is committed exactly once.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_that_ends_the_transaction_fails_alone() {
    let db = TestDb::fresh_file(Kind::Sqlite, "sqlite::memory:").await;
    let pool = writer_pool(&db).await;
    pool.dml(
        "CREATE TRIGGER gc_boom BEFORE INSERT ON gc WHEN NEW.v = 'boom' BEGIN SELECT RAISE(ROLLBACK, 'boom'); END",
        &[],
    )
    .await
    .unwrap();
    let held = pool.get_connection().await.unwrap();
    let pool = Arc::new(pool);
    let tasks: Vec<_> = (1..=10i64)
        .map(|id| {
            let pool = Arc::clone(&pool);
            let v = if id == 5 {
                "boom".to_owned()
            } else {
                format!("v{id}")
            };
            tokio::spawn(async move {
                (
                    id,
                    pool.dml(INSERT, &[RowValues::Int(id), RowValues::Text(v)])
                        .await,
                )
            })
        })
        .collect();
    wait_for(
        || pool.stats().waiters >= 1,
        "the round waits for the writer",
    )
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(held);
    for t in tasks {
        let (id, r) = t.await.unwrap();
        if id == 5 {
            let e = r.expect_err("the trigger's write fails");
            let text = e.unredacted_message().unwrap_or_default();
            assert!(text.contains("boom"), "{e:?}: {text}");
        } else {
            assert_eq!(r.unwrap(), 1, "write {id}");
        }
    }
    let mut want: Vec<i64> = (1..=10).collect();
    want.retain(|&id| id != 5);
    assert_eq!(committed_ids(&db).await, want);
}
