//! MySQL/MariaDB-only promises: a statement stopped by its time limit, or by dropping its
//! future, stops on the server too (`KILL QUERY` from a second connection), with its locks, and
//! neither the same checkout nor the next borrower waits for it.
#![cfg(feature = "mysql")]

use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::groups;
use crate::common::mysql;

/// How long a stopped statement may still show on the server.
const GONE_WITHIN: Duration = Duration::from_secs(3);
/// The limit the tests set.
const LIMIT: Duration = Duration::from_millis(150);

async fn pool(url: &str, max: usize) -> ConfigAndPool {
    ConfigAndPool::mysql(url)
        .max_size(max)
        .wait_timeout(Duration::from_secs(5))
        .build()
        .await
        .expect("pool")
}

/// The sessions running a statement whose text starts with `/* tag */`.
async fn running(admin: &mut mysql_async::Conn, tag: &str) -> Vec<u64> {
    admin
        .exec(
            "SELECT ID FROM information_schema.PROCESSLIST \
             WHERE ID <> CONNECTION_ID() AND INFO LIKE ?",
            (format!("/* {tag} */%"),),
        )
        .await
        .expect("processlist")
}

/// Waits until no session runs the tagged statement; how long that took, or `None` past
/// [`GONE_WITHIN`] (the statements are then ended here, so they do not hold the server).
async fn gone(admin: &mut mysql_async::Conn, tag: &str) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < GONE_WITHIN {
        if running(admin, tag).await.is_empty() {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for id in running(admin, tag).await {
        let _ = admin.query_drop(format!("KILL {id}")).await;
    }
    None
}

/// A statement past its limit (`.timeout`, `Timeout`) or whose future is dropped stops on the
/// server, in autocommit mode and inside a transaction; the same checkout and the next
/// borrower get answers at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_statements_stop_on_the_server() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        let db = pool(&url, 1).await;
        let mut admin = mysql::raw_conn(&mysql::base_url()).await;
        let mut problems = Vec::new();
        let mut worst_gone = Duration::ZERO;
        let mut worst_next = Duration::ZERO;
        for (i, how) in ["limit", "dropped"].into_iter().enumerate() {
            for in_tx in [false, true] {
                let tag = format!("stop {i} {in_tx} {}", crate::common::backends::unique_hex());
                let sql = format!("/* {tag} */ SELECT SLEEP(60) AS s");
                let what = format!("{how}, in_tx={in_tx}");
                let mut c = db.get_connection().await.expect("checkout");
                let started = Instant::now();
                if in_tx {
                    let mut tx = c.begin().await.expect("begin");
                    let r = match how {
                        "limit" => tx.query(&sql).timeout(LIMIT).select().await.map(drop),
                        _ => tokio::time::timeout(LIMIT, tx.query(&sql).select())
                            .await
                            .unwrap_or(Err(SqlMiddlewareDbError::new(
                                ErrorKind::Timeout,
                                "dropped by the test",
                            )))
                            .map(drop),
                    };
                    match r {
                        Err(e) if e.kind() == ErrorKind::Timeout => {}
                        other => problems.push(format!("{what}: the call gave {other:?}")),
                    }
                    drop(tx);
                } else {
                    let r = match how {
                        "limit" => c.query(&sql).timeout(LIMIT).select().await.map(drop),
                        _ => tokio::time::timeout(LIMIT, c.query(&sql).select())
                            .await
                            .unwrap_or(Err(SqlMiddlewareDbError::new(
                                ErrorKind::Timeout,
                                "dropped by the test",
                            )))
                            .map(drop),
                    };
                    // A read: its limit passing is a plain Timeout, never OutcomeUnknown.
                    match r {
                        Err(e) if e.kind() == ErrorKind::Timeout => {}
                        other => problems.push(format!("{what}: the call gave {other:?}")),
                    }
                }
                let took = started.elapsed();
                if took > LIMIT + Duration::from_secs(1) {
                    problems.push(format!("{what}: the call ended after {took:?}"));
                }
                // The same checkout answers at once.
                let t = Instant::now();
                match c.query("SELECT 1").one::<(i64,)>().await {
                    Ok((1,)) => {}
                    other => problems.push(format!("{what}: same checkout: {other:?}")),
                }
                worst_next = worst_next.max(t.elapsed());
                drop(c);
                // The next borrower too.
                let t = Instant::now();
                let mut next = db.get_connection().await.expect("next checkout");
                match next.query("SELECT 1").one::<(i64,)>().await {
                    Ok((1,)) => {}
                    other => problems.push(format!("{what}: next borrower: {other:?}")),
                }
                worst_next = worst_next.max(t.elapsed());
                drop(next);
                match gone(&mut admin, &tag).await {
                    Some(d) => worst_gone = worst_gone.max(d),
                    None => problems.push(format!(
                        "{what}: the statement still ran on the server {GONE_WITHIN:?} later"
                    )),
                }
            }
        }
        let _ = admin.disconnect().await;
        println!(
            "mysql_stop_on_server cases=4 worst_gone_ms={} worst_next_call_ms={} problems={}",
            worst_gone.as_millis(),
            worst_next.as_millis(),
            problems.len()
        );
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        assert!(worst_next < Duration::from_secs(1), "{worst_next:?}");
    })
    .await;
}

/// A transaction whose statement passed its limit holds no lock afterwards: another session
/// updates the same row at once, and the stopped transaction's write is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_transaction_releases_its_locks() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        let db = pool(&url, 2).await;
        let mut c = db.get_connection().await.expect("checkout");
        c.execute_batch(
            "CREATE TABLE lk (id BIGINT PRIMARY KEY, v BIGINT NOT NULL); \
             INSERT INTO lk (id, v) VALUES (1, 0)",
        )
        .await
        .expect("setup");
        let tag = format!("lock {}", crate::common::backends::unique_hex());
        let mut tx = c.begin().await.expect("begin");
        tx.query("UPDATE lk SET v = 100 WHERE id = 1")
            .dml()
            .await
            .expect("update in the transaction");
        let r = tx
            .query(&format!("/* {tag} */ SELECT SLEEP(60) AS s"))
            .timeout(LIMIT)
            .select()
            .await;
        assert_eq!(
            r.as_ref().map_err(|e| e.kind()).err(),
            Some(ErrorKind::Timeout),
            "{r:?}"
        );
        drop(tx);
        drop(c);
        // Another session: the row lock must be free (a held lock would make this wait the
        // 2 s lock wait timeout and fail).
        let mut other = mysql::raw_conn(&url).await;
        other
            .query_drop("SET SESSION innodb_lock_wait_timeout = 2")
            .await
            .expect("lock wait timeout");
        let t = Instant::now();
        other
            .query_drop("UPDATE lk SET v = v + 1 WHERE id = 1")
            .await
            .expect("the row is still locked by the stopped transaction");
        let waited = t.elapsed();
        let v: Option<i64> = other
            .query_first("SELECT v FROM lk WHERE id = 1")
            .await
            .expect("read");
        let _ = other.disconnect().await;
        let mut admin = mysql::raw_conn(&mysql::base_url()).await;
        let gone_after = gone(&mut admin, &tag).await;
        let _ = admin.disconnect().await;
        println!(
            "mysql_stopped_tx_locks waited_ms={} value={v:?} statement_gone_ms={:?}",
            waited.as_millis(),
            gone_after.map(|d| d.as_millis())
        );
        assert!(waited < Duration::from_secs(1), "waited {waited:?}");
        assert_eq!(
            v,
            Some(1),
            "the stopped transaction's write must be rolled back"
        );
        assert!(gone_after.is_some(), "the stopped statement still runs");
    })
    .await;
}

/// An autocommit write past its limit is stopped on the server and rolled back there, and the
/// call says its outcome is unknown (it may have committed before the stop).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_past_its_limit_is_outcome_unknown_and_stopped() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        let db = pool(&url, 1).await;
        let mut c = db.get_connection().await.expect("checkout");
        c.execute_batch(
            "CREATE TABLE w (id BIGINT PRIMARY KEY, v BIGINT NOT NULL); \
             INSERT INTO w (id, v) VALUES (1, 0)",
        )
        .await
        .expect("setup");
        let tag = format!("write {}", crate::common::backends::unique_hex());
        let r = c
            .query(&format!(
                "/* {tag} */ UPDATE w SET v = v + 1 WHERE id = 1 AND SLEEP(60) = 0"
            ))
            .timeout(LIMIT)
            .dml()
            .await;
        let kind = r.as_ref().map_err(|e| e.kind()).err();
        let mut admin = mysql::raw_conn(&mysql::base_url()).await;
        let gone_after = gone(&mut admin, &tag).await;
        let _ = admin.disconnect().await;
        let (v,): (i64,) = c
            .query("SELECT v FROM w WHERE id = 1")
            .one()
            .await
            .expect("read after the stopped write");
        println!(
            "mysql_write_past_limit kind={kind:?} value={v} statement_gone_ms={:?}",
            gone_after.map(|d| d.as_millis())
        );
        assert_eq!(kind, Some(ErrorKind::OutcomeUnknown), "{r:?}");
        assert!(gone_after.is_some(), "the stopped write still runs");
        // KILL QUERY rolls the statement back: nothing changed.
        assert_eq!(v, 0);
    })
    .await;
}
