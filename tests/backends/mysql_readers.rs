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
