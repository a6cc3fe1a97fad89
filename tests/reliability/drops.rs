//! Reliability 18: dropping never blocks. Dropping a stream part-way returns at once (within
//! 1 ms), on any runtime flavour, whatever lock its statement waits on, and the connection's
//! next statement then runs without waiting for the lock the dropped statement was waiting on.
//! (The Postgres side, a stream dropped inside a `Tx` for every shape of query, is in
//! `deadlines.rs`.)

#[cfg(feature = "sqlite")]
use std::time::{Duration, Instant};

#[cfg(feature = "sqlite")]
use sql_middleware::prelude::*;

#[cfg(feature = "sqlite")]
use crate::common::groups;

/// SQLite: a write stream (`INSERT … RETURNING`) whose statement waits for the write lock
/// another connection holds, dropped while it waits.
#[cfg(feature = "sqlite")]
async fn sqlite_write_stream_dropped_while_waiting_for_a_lock(flavour: &str) {
    use futures_util::StreamExt;
    let dir = crate::common::backends::TempDir::new("drops");
    let busy = Duration::from_secs(3);
    let pool = ConfigAndPool::sqlite(dir.path().join("test.db"))
        .max_size(2)
        .busy_timeout(busy)
        .build()
        .await
        .expect("pool");
    let mut holder = pool.get_connection().await.expect("checkout");
    holder
        .execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)")
        .await
        .expect("table");
    let mut conn = pool.get_connection().await.expect("second checkout");
    conn.query("SELECT count(*) FROM t")
        .select()
        .await
        .expect("warm");

    let tx = holder.begin().await.expect("the write lock");
    let started = Instant::now();
    let mut stream = conn
        .query("INSERT INTO t (v) VALUES (1), (2), (3) RETURNING id")
        .stream::<(i64,)>();
    // The statement starts and waits for the lock.
    let first = tokio::time::timeout(Duration::from_millis(200), stream.next()).await;
    assert!(
        first.is_err(),
        "[{flavour}] the write did not wait: {first:?}"
    );
    let waited = started.elapsed();
    let t = Instant::now();
    drop(stream);
    let dropped = t.elapsed();
    tx.rollback().await.expect("release the lock");

    let t = Instant::now();
    let r = tokio::time::timeout(
        Duration::from_secs(30),
        conn.query("INSERT INTO t (v) VALUES (9)").dml(),
    )
    .await
    .unwrap_or_else(|_| panic!("[{flavour}] the next statement hung"));
    let next = t.elapsed();
    let n = r.unwrap_or_else(|e| panic!("[{flavour}] the next statement failed: {e:?}"));
    assert_eq!(n, 1);
    println!(
        "drops_sqlite_write_stream flavour={flavour} busy_ms={} waited_ms={} drop_us={} next_ms={}",
        busy.as_millis(),
        waited.as_millis(),
        dropped.as_micros(),
        next.as_millis()
    );
    assert!(
        dropped <= Duration::from_millis(1),
        "[{flavour}] dropping the stream blocked the async thread for {dropped:?}"
    );
    assert!(
        next < Duration::from_millis(500),
        "[{flavour}] the next statement waited {next:?}"
    );
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_write_stream_dropped_while_waiting_for_a_lock_multi_thread() {
    let _group = groups::enter("drops");
    sqlite_write_stream_dropped_while_waiting_for_a_lock("multi_thread").await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "current_thread")]
async fn sqlite_write_stream_dropped_while_waiting_for_a_lock_current_thread() {
    let _group = groups::enter("drops");
    sqlite_write_stream_dropped_while_waiting_for_a_lock("current_thread").await;
}
