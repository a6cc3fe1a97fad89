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
