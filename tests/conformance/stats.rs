//! Live statistics (`db.stats()`): their content after known work, on every backend.

use std::time::Duration;

use crate::backend_tests;
use crate::common::backends::{Kind, TestDb};

/// Checkouts, waits, statement cache counts and (SQLite) execution counts follow the work done.
async fn t_stats_count_what_happened(db: &TestDb) {
    let k = db.kind.name();
    let pool = db.builder().max_size(2).build().await.unwrap();
    let before = pool.stats();
    assert_eq!(before.checkout_wait.count, 0, "[{k}] {before:?}");
    {
        let mut c = pool.get_connection().await.unwrap();
        for _ in 0..3 {
            let (n,): (i64,) = c.query("SELECT 40 + 2").one().await.unwrap();
            assert_eq!(n, 42);
        }
        let during = pool.stats();
        assert_eq!(during.in_use, 1, "[{k}] {during:?}");
        assert_eq!(during.checkout_wait.count, 1, "[{k}] {during:?}");
    }
    let after = pool.stats();
    assert_eq!(after.in_use, 0, "[{k}] {after:?}");
    assert_eq!(after.idle, after.size, "[{k}] {after:?}");
    assert!(after.created >= 1, "[{k}] {after:?}");
    // The statement was prepared once and found twice (the counts join as the checkout ends).
    assert!(after.statement_cache.misses >= 1, "[{k}] {after:?}");
    assert!(after.statement_cache.hits >= 2, "[{k}] {after:?}");
    match db.kind {
        Kind::Sqlite => assert!(
            after.sqlite.inline
                + after.sqlite.offloaded_by_policy
                + after.sqlite.rerun_after_interrupt
                >= 3,
            "[{k}] every SQLite call is counted: {after:?}"
        ),
        _ => assert_eq!(after.sqlite, Default::default(), "[{k}]"),
    }

    // A task that waits for a connection is a waiter, and its wait is measured.
    let a = pool.get_connection().await.unwrap();
    let b = pool.get_connection().await.unwrap();
    let p2 = pool.clone();
    let waiter = tokio::spawn(async move { p2.get_connection().await.map(drop) });
    let mut seen = false;
    for _ in 0..200 {
        if pool.stats().waiters == 1 {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(seen, "[{k}] the waiting task shows as a waiter");
    tokio::time::sleep(Duration::from_millis(50)).await;
    drop(a);
    waiter.await.unwrap().unwrap();
    drop(b);
    let s = pool.stats();
    assert_eq!(s.waiters, 0, "[{k}] {s:?}");
    assert!(
        s.checkout_wait.max >= Duration::from_millis(50),
        "[{k}] the waiter's wait is the longest: {s:?}"
    );
    assert_eq!(
        s.checkout_wait.buckets.iter().sum::<u64>(),
        s.checkout_wait.count,
        "[{k}] every checkout is in one bucket"
    );
    assert_eq!(s.checkout_wait.count, 4, "[{k}] {s:?}");

    // A connection that cannot be reused is discarded, and counted so.
    let mut c = pool.get_connection().await.unwrap();
    match db.kind {
        // The server ends the session: the connection is found closed and dropped.
        Kind::Postgres => {
            let _ = c
                .query("SELECT pg_terminate_backend(pg_backend_pid())")
                .select()
                .await;
        }
        // The session ends itself (MySQL's reset would undo a temporary table): the
        // connection is found closed and dropped.
        Kind::Mysql => {
            let (id,): (i64,) = c.query("SELECT CONNECTION_ID()").one().await.unwrap();
            let _ = c.execute_batch(&format!("KILL {id}")).await;
        }
        // A temporary table cannot be undone on return: the connection is discarded.
        Kind::Sqlite | Kind::Turso => c
            .execute_batch("CREATE TEMP TABLE scratch (x INTEGER)")
            .await
            .unwrap(),
    }
    drop(c);
    // The next checkout recycles (and so discards) it.
    let c = pool.get_connection().await.unwrap();
    drop(c);
    let _c1 = pool.get_connection().await.unwrap();
    let _c2 = pool.get_connection().await.unwrap();
    let s = pool.stats();
    assert!(s.discarded >= 1, "[{k}] {s:?}");
}

backend_tests! {
    async fn stats_count_what_happened(db) { t_stats_count_what_happened(&db).await }
}
