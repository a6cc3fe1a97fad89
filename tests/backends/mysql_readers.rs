//! MySQL readers keep the promises Postgres readers keep: a reader's session is read-only (a
//! write through it fails with `ReadOnly`, MySQL's 1792), on the primary as on a replica, and
//! a writer checked out after it writes.
#![cfg(feature = "mysql")]

use std::time::Duration;

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::groups;
use crate::common::mysql;

async fn pool(url: &str) -> ConfigAndPool {
    ConfigAndPool::mysql(url)
        .max_size(2)
        .wait_timeout(Duration::from_secs(10))
        .build()
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", mysql::redact(url)))
}

#[tokio::test]
async fn a_reader_on_a_single_server_refuses_writes_and_writers_still_write() {
    let _group = groups::enter("mysql_readers");
    mysql::with_database(|url| async move {
        let db = pool(&url).await;
        let mut w = db.get_connection().await.expect("a writer");
        w.execute_batch("CREATE TABLE r (id INT PRIMARY KEY)")
            .await
            .expect("create");
        drop(w);
        for round in 0..3 {
            let mut r = db.reader().await.expect("a reader");
            let e = r
                .execute_batch(&format!("INSERT INTO r VALUES ({round})"))
                .await
                .expect_err("a reader's session is read-only");
            assert_eq!(e.kind(), ErrorKind::ReadOnly, "round {round}: {e}");
            // Reads still work, and the row was not written.
            let (n,): (i64,) = r
                .query("SELECT COUNT(*) FROM r WHERE id < 10")
                .one()
                .await
                .unwrap();
            assert_eq!(n, 0);
            // A transaction on a reader is read-only too.
            let mut tx = r.begin().await.expect("begin on a reader");
            let e = tx
                .execute_batch("UPDATE r SET id = id + 1")
                .await
                .expect_err("a reader's transaction is read-only");
            assert_eq!(e.kind(), ErrorKind::ReadOnly, "{e}");
            tx.rollback().await.expect("rollback");
            // A borrower that turns the session writable leaves it read-only for the next reader.
            r.execute_batch("SET SESSION TRANSACTION READ WRITE")
                .await
                .expect("set");
            drop(r);
            // A writer checked out after the reader writes.
            let mut w = db.get_connection().await.expect("a writer");
            let n = w
                .query(&format!("INSERT INTO r VALUES ({})", 10 + round))
                .dml()
                .await
                .expect("a writer writes");
            assert_eq!(n, 1);
            drop(w);
        }
        let mut w = db.get_connection().await.expect("a writer");
        let (n,): (i64,) = w.query("SELECT COUNT(*) FROM r").one().await.unwrap();
        assert_eq!(n, 3);
        db.close();
    })
    .await;
}

/// `url` with its host (and port) replaced by `host`.
fn on_host(url: &str, host: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (authority, tail) = rest.split_once('/').expect("a database");
    let user = authority.rsplit_once('@').map(|(u, _)| format!("{u}@"));
    format!("{scheme}://{}{host}/{tail}", user.unwrap_or_default())
}

/// A port that refuses connections (bound a moment ago, then closed).
fn refused() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    format!("127.0.0.1:{}", l.local_addr().expect("addr").port())
}

/// The database a reader's session is in; checks the session refuses a write.
async fn reader_database(db: &ConfigAndPool) -> String {
    let mut r = db.reader().await.expect("a reader");
    let (name,): (String,) = r.query("SELECT DATABASE()").one().await.unwrap();
    let e = r
        .query("CREATE TABLE w (id INT)")
        .dml()
        .await
        .expect_err("a reader's session is read-only");
    assert_eq!(e.kind(), ErrorKind::ReadOnly, "{name}: {e}");
    name
}

#[tokio::test]
async fn readers_go_round_robin_to_replicas_and_skip_one_that_is_down() {
    let _group = groups::enter("mysql_readers");
    let (a, b) = (
        mysql::MyDatabase::create().await,
        mysql::MyDatabase::create().await,
    );
    let names = (a.name.clone(), b.name.clone());
    let (a_url, b_url) = (a.url.clone(), b.url.clone());
    mysql::with_database(|url| async move {
        let down = on_host(&url, &refused());
        let db = ConfigAndPool::mysql(&url)
            .max_size(2)
            .replica(&a_url)
            .replica(&down)
            .replica(&b_url)
            .replica_retry_after(Duration::from_secs(60))
            .wait_timeout(Duration::from_secs(10))
            .build()
            .await
            .expect("build");
        let mut seen = Vec::new();
        for _ in 0..9 {
            seen.push(reader_database(&db).await);
        }
        let (on_a, on_b) = (
            seen.iter().filter(|n| **n == names.0).count(),
            seen.iter().filter(|n| **n == names.1).count(),
        );
        assert_eq!(on_a + on_b, 9, "readers stay on the replicas: {seen:?}");
        // The down replica's turns go to the next one: a and b take turns, a takes the
        // turns of the replica before b.
        assert!(on_b >= 3 && on_a >= 3, "round-robin: {seen:?}");
        // Writers stay on the primary.
        let mut w = db.get_connection().await.expect("a writer");
        let (name,): (String,) = w.query("SELECT DATABASE()").one().await.unwrap();
        assert_ne!(name, names.0);
        assert_ne!(name, names.1);
        w.query("CREATE TABLE w (id INT)")
            .dml()
            .await
            .expect("a writer writes");
        drop(w);
        db.close();
    })
    .await;
    a.drop_database().await;
    b.drop_database().await;
}

#[tokio::test]
async fn readers_fall_back_to_the_primary_read_only_or_fail_as_asked() {
    let _group = groups::enter("mysql_readers");
    mysql::with_database(|url| async move {
        let down = on_host(&url, &refused());
        let primary = {
            let mut c = mysql::raw_conn(&url).await;
            use mysql_async::prelude::Queryable;
            let name: Option<String> = c.query_first("SELECT DATABASE()").await.unwrap();
            let _ = c.disconnect().await;
            name.expect("a database")
        };
        let falls_back = ConfigAndPool::mysql(&url)
            .replica(&down)
            .wait_timeout(Duration::from_secs(10))
            .build()
            .await
            .expect("build");
        for _ in 0..2 {
            assert_eq!(reader_database(&falls_back).await, primary);
        }
        falls_back.close();
        let fails = ConfigAndPool::mysql(&url)
            .replica(&down)
            .replica_fallback(false)
            .replica_retry_after(Duration::from_millis(300))
            .wait_timeout(Duration::from_secs(10))
            .build()
            .await
            .expect("build");
        // Unreachable, then skipped, then tried again after `replica_retry_after`.
        for pause in [0, 0, 400] {
            tokio::time::sleep(Duration::from_millis(pause)).await;
            let Err(e) = fails.reader().await else {
                panic!("no replica, no fallback");
            };
            assert_eq!(e.kind(), ErrorKind::ConnectionLost, "{e}");
        }
        // Writers are unaffected.
        let mut w = fails.get_connection().await.expect("a writer");
        w.query("CREATE TABLE w (id INT)")
            .dml()
            .await
            .expect("a writer writes");
        drop(w);
        fails.close();
    })
    .await;
}

#[tokio::test]
async fn a_replica_of_another_engine_is_a_config_error() {
    let Err(e) = ConfigAndPool::mysql("mysql://root@127.0.0.1:1/db")
        .replica("postgres://app@127.0.0.1:1/db")
        .build()
        .await
    else {
        panic!("a Postgres replica on a MySQL pool");
    };
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    let Err(e) = ConfigAndPool::mysql("mysql://root@127.0.0.1:1/db")
        .replica("mysql://root@h1:notaport/db")
        .build()
        .await
    else {
        panic!("a bad replica URL");
    };
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    #[cfg(feature = "postgres")]
    {
        let Err(e) = ConfigAndPool::from_url("postgres://app@127.0.0.1:1/db")
            .expect("a Postgres URL")
            .replica("mysql://root@127.0.0.1:1/db")
            .build()
            .await
        else {
            panic!("a MySQL replica on a Postgres pool");
        };
        assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    }
}

/// On the Galera cluster: node 1 the primary, nodes 2 and 3 the replicas; readers take turns
/// on the two, each in a read-only session, and writers stay on node 1.
#[cfg(unix)]
#[tokio::test]
async fn readers_take_turns_on_galera_nodes() {
    let _group = groups::enter("mysql_readers");
    let c = tokio::task::spawn_blocking(crate::common::galera::cluster)
        .await
        .expect("the cluster");
    let ports = c.ports();
    let db = ConfigAndPool::mysql(&c.url(0, "mysql"))
        .replica(&c.url(1, "mysql"))
        .replica(&c.multi_url(&[2, 1], "mysql", ""))
        .wait_timeout(Duration::from_secs(10))
        .build()
        .await
        .expect("build");
    let mut seen = Vec::new();
    for _ in 0..4 {
        let mut r = db.reader().await.expect("a reader");
        let (port,): (i64,) = r.query("SELECT @@port").one().await.unwrap();
        let e = r
            .query("CREATE TABLE readers_galera (id INT)")
            .dml()
            .await
            .expect_err("read-only");
        assert_eq!(e.kind(), ErrorKind::ReadOnly, "{e}");
        seen.push(u16::try_from(port).unwrap());
    }
    assert_eq!(
        seen,
        vec![ports[1], ports[2], ports[1], ports[2]],
        "round-robin across the replicas' nodes"
    );
    let mut w = db.get_connection().await.expect("a writer");
    let (port,): (i64,) = w.query("SELECT @@port").one().await.unwrap();
    assert_eq!(u16::try_from(port).unwrap(), ports[0]);
    drop(w);
    db.close();
}
