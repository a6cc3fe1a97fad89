//! Savepoints: nested transactions with the rules of a `Tx`, at any depth, on every backend.

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Logical, TestDb, expect_kind};
use crate::helpers::*;

async fn ids(conn: &mut Conn) -> Vec<i64> {
    let rows: Vec<(i64,)> = conn
        .query("SELECT id FROM sp ORDER BY id")
        .all()
        .await
        .unwrap();
    rows.into_iter().map(|r| r.0).collect()
}

async fn ins(tx: &mut Tx<'_>, id: i64) -> Result<u64, SqlMiddlewareDbError> {
    tx.query("INSERT INTO sp (id, v) VALUES ($1, 'x')")
        .params(&[RowValues::Int(id)])
        .dml()
        .await
}

async fn setup(db: &TestDb) -> Conn {
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "sp", &[("v", Logical::Text)]).await;
    conn
}

/// Commit keeps a savepoint's work, rollback and drop undo only it, at any depth.
async fn t_savepoints_nest(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = setup(db).await;
    let mut tx = conn.begin().await.unwrap();
    ins(&mut tx, 1).await.unwrap();
    {
        let mut sp = tx.savepoint().await.unwrap();
        ins(&mut sp, 2).await.unwrap();
        sp.rollback().await.unwrap();
    }
    {
        let mut sp = tx.savepoint().await.unwrap();
        ins(&mut sp, 3).await.unwrap();
        {
            let mut inner = sp.savepoint().await.unwrap();
            ins(&mut inner, 4).await.unwrap();
            // Dropped: rolled back before the next operation.
        }
        {
            let mut inner = sp.savepoint().await.unwrap();
            ins(&mut inner, 5).await.unwrap();
            inner.commit().await.unwrap();
        }
        sp.commit().await.unwrap();
    }
    {
        let mut sp = tx.savepoint().await.unwrap();
        ins(&mut sp, 6).await.unwrap();
        // Dropped, and the transaction commits next.
    }
    tx.commit().await.unwrap();
    assert_eq!(ids(&mut conn).await, [1, 3, 5], "[{k}] committed rows");
}

/// An error inside a savepoint aborts the transaction until the savepoint is rolled back; then
/// the transaction goes on (on Postgres too). Committing an aborted savepoint rolls it back.
async fn t_savepoint_recovers_from_an_error(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = setup(db).await;
    let mut tx = conn.begin().await.unwrap();
    ins(&mut tx, 1).await.unwrap();

    let mut sp = tx.savepoint().await.unwrap();
    ins(&mut sp, 2).await.unwrap();
    expect_kind(
        &format!("[{k}] duplicate in a savepoint"),
        ins(&mut sp, 1).await,
        ErrorKind::UniqueViolation,
    );
    expect_kind(
        &format!("[{k}] statement after the error"),
        ins(&mut sp, 3).await,
        ErrorKind::TransactionAborted,
    );
    sp.rollback().await.unwrap();
    ins(&mut tx, 4).await.unwrap();

    let mut sp = tx.savepoint().await.unwrap();
    ins(&mut sp, 5).await.unwrap();
    let _ = ins(&mut sp, 4).await;
    expect_kind(
        &format!("[{k}] commit of an aborted savepoint"),
        sp.commit().await,
        ErrorKind::TransactionAborted,
    );
    ins(&mut tx, 6).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(ids(&mut conn).await, [1, 4, 6], "[{k}] committed rows");
}

/// A savepoint dropped after an error is rolled back before the next statement, which then
/// runs in a usable transaction; a savepoint cannot be opened in an aborted transaction.
async fn t_dropped_savepoint_after_an_error(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = setup(db).await;
    let mut tx = conn.begin().await.unwrap();
    ins(&mut tx, 1).await.unwrap();
    {
        let mut sp = tx.savepoint().await.unwrap();
        let _ = ins(&mut sp, 1).await;
    }
    ins(&mut tx, 2).await.unwrap();
    let _ = ins(&mut tx, 2).await;
    expect_kind(
        &format!("[{k}] savepoint in an aborted transaction"),
        tx.savepoint().await.map(drop),
        ErrorKind::TransactionAborted,
    );
    expect_kind(
        &format!("[{k}] commit of the aborted transaction"),
        tx.commit().await,
        ErrorKind::TransactionAborted,
    );
    assert!(ids(&mut conn).await.is_empty(), "[{k}] nothing committed");
    // The connection is clean: a new transaction works.
    let mut tx = conn.begin().await.unwrap();
    ins(&mut tx, 7).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(ids(&mut conn).await, [7], "[{k}] after");
}

backend_tests! {
    async fn savepoints_nest(db) { t_savepoints_nest(&db).await }
    async fn savepoint_recovers_from_an_error(db) { t_savepoint_recovers_from_an_error(&db).await }
    async fn dropped_savepoint_after_an_error(db) { t_dropped_savepoint_after_an_error(&db).await }
}
