//! Transactions: commit is visible to others, rollback and drop undo, an error aborts.

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Logical, TestDb, expect_kind};
use crate::helpers::*;

// ---------------------------------------------------------------------------------------------
// transactions
// ---------------------------------------------------------------------------------------------

async fn tx_table(db: &TestDb, conn: &mut Conn) {
    create_table(db, conn, "tx", &[("v", Logical::Text)]).await;
}

async fn t_tx_commit_visible(db: &TestDb) {
    let k = db.kind.name();
    let mut a = db.conn().await;
    let mut b = db.conn().await;
    tx_table(db, &mut a).await;
    let mut tx = a.begin().await.unwrap();
    let n = tx
        .query("INSERT INTO tx (id, v) VALUES ($1, $2)")
        .params(&[1.into(), "one".into()])
        .dml()
        .await
        .unwrap();
    assert_eq!(n, 1);
    let mut st = tx
        .prepare("INSERT INTO tx (id, v) VALUES ($1, $2)")
        .await
        .unwrap();
    assert_eq!(st.dml(&[2.into(), "two".into()]).await.unwrap(), 1);
    drop(st);
    tx.execute_batch("INSERT INTO tx (id, v) VALUES (3, 'three')")
        .await
        .unwrap();
    let (inside,): (i64,) = tx.query("SELECT COUNT(*) FROM tx").one().await.unwrap();
    assert_eq!(inside, 3, "[{k}] the tx sees its own rows");
    assert_eq!(
        count(&mut b, "tx").await,
        0,
        "[{k}] not visible before commit"
    );
    tx.commit().await.unwrap();
    assert_eq!(count(&mut b, "tx").await, 3, "[{k}] visible after commit");
    assert_eq!(count(&mut a, "tx").await, 3);
    // A fresh connection from the pool sees it too.
    drop(b);
    let mut c = db.conn().await;
    assert_eq!(count(&mut c, "tx").await, 3);
}

async fn t_tx_rollback(db: &TestDb) {
    let k = db.kind.name();
    let mut a = db.conn().await;
    let mut b = db.conn().await;
    tx_table(db, &mut a).await;
    dml(&mut a, "INSERT INTO tx (id, v) VALUES (1, 'kept')", &[]).await;
    let mut tx = a.begin().await.unwrap();
    tx.query("INSERT INTO tx (id, v) VALUES (2, 'gone')")
        .dml()
        .await
        .unwrap();
    tx.query("UPDATE tx SET v = 'changed' WHERE id = 1")
        .dml()
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    for (who, conn) in [("same", &mut a), ("other", &mut b)] {
        let rs = select(conn, "SELECT id, v FROM tx ORDER BY id", &[]).await;
        assert_eq!(rs.len(), 1, "[{k}] {who} connection after rollback");
        assert_eq!(
            rs.results[0].get("v"),
            Some(&RowValues::Text("kept".into())),
            "[{k}] {who}"
        );
    }
}

async fn t_tx_drop_rolls_back(db: &TestDb) {
    let k = db.kind.name();
    let mut a = db.conn().await;
    let mut b = db.conn().await;
    tx_table(db, &mut a).await;
    {
        let mut tx = a.begin().await.unwrap();
        tx.query("INSERT INTO tx (id, v) VALUES (1, 'dropped')")
            .dml()
            .await
            .unwrap();
        // dropped here without commit
    }
    assert_eq!(
        count(&mut a, "tx").await,
        0,
        "[{k}] same connection after drop"
    );
    assert_eq!(
        count(&mut b, "tx").await,
        0,
        "[{k}] other connection after drop"
    );
    // The same connection is outside any transaction: its next write autocommits.
    dml(
        &mut a,
        "INSERT INTO tx (id, v) VALUES (2, 'autocommit')",
        &[],
    )
    .await;
    assert_eq!(
        count(&mut b, "tx").await,
        1,
        "[{k}] autocommit after a dropped tx"
    );

    // A tx dropped on a connection that then goes back to the pool: the next user of any
    // connection sees nothing of it.
    {
        let mut c = db.conn().await;
        let mut tx = c.begin().await.unwrap();
        tx.query("INSERT INTO tx (id, v) VALUES (3, 'dropped with conn')")
            .dml()
            .await
            .unwrap();
        drop(tx);
        drop(c);
    }
    drop(a);
    drop(b);
    let mut conns = Vec::new();
    for _ in 0..4 {
        conns.push(db.conn().await);
    }
    for c in &mut conns {
        assert_eq!(
            count(c, "tx").await,
            1,
            "[{k}] pooled connection after dropped tx"
        );
        let tx = c.begin().await.unwrap();
        tx.rollback().await.unwrap();
    }
}

async fn t_tx_error_aborts(db: &TestDb) {
    let k = db.kind.name();
    let mut a = db.conn().await;
    let mut b = db.conn().await;
    tx_table(db, &mut a).await;
    let mut tx = a.begin().await.unwrap();
    tx.query("INSERT INTO tx (id, v) VALUES (1, 'first')")
        .dml()
        .await
        .unwrap();
    expect_kind(
        &format!("[{k}] duplicate key in tx"),
        tx.query("INSERT INTO tx (id, v) VALUES (1, 'dup')")
            .dml()
            .await,
        ErrorKind::UniqueViolation,
    );
    expect_kind(
        &format!("[{k}] select after error"),
        tx.query("SELECT 1").select().await,
        ErrorKind::TransactionAborted,
    );
    expect_kind(
        &format!("[{k}] insert after error"),
        tx.query("INSERT INTO tx (id, v) VALUES (2, 'second')")
            .dml()
            .await,
        ErrorKind::TransactionAborted,
    );
    expect_kind(
        &format!("[{k}] prepare after error"),
        tx.prepare("SELECT 2").await.map(|_| ()),
        ErrorKind::TransactionAborted,
    );
    expect_kind(
        &format!("[{k}] execute_batch after error"),
        tx.execute_batch("INSERT INTO tx (id, v) VALUES (3, 'third')")
            .await,
        ErrorKind::TransactionAborted,
    );
    expect_kind(
        &format!("[{k}] commit after error"),
        tx.commit().await,
        ErrorKind::TransactionAborted,
    );
    assert_eq!(
        count(&mut a, "tx").await,
        0,
        "[{k}] nothing saved (same connection)"
    );
    assert_eq!(
        count(&mut b, "tx").await,
        0,
        "[{k}] nothing saved (other connection)"
    );
    // The connection works normally again, including a new transaction.
    let mut tx = a.begin().await.unwrap();
    tx.query("INSERT INTO tx (id, v) VALUES (1, 'again')")
        .dml()
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(count(&mut b, "tx").await, 1);
}

backend_tests! {
    async fn tx_commit_visible(db) { t_tx_commit_visible(&db).await }
    async fn tx_rollback(db) { t_tx_rollback(&db).await }
    async fn tx_drop_rolls_back(db) { t_tx_drop_rolls_back(&db).await }
    async fn tx_error_aborts(db) { t_tx_error_aborts(&db).await }
}
