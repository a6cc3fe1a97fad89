//! Many statements at once: scripts (`execute_batch`, also with their own transaction control),
//! pipelines, and prepared statements run many times.

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Logical, TestDb, expect_kind};
use crate::helpers::*;

// ---------------------------------------------------------------------------------------------
// execute_batch
// ---------------------------------------------------------------------------------------------

async fn t_execute_batch(db: &TestDb) {
    let k = db.kind.name();
    let int = db.ty(Logical::Int);
    let text = db.ty(Logical::Text);
    let mut conn = db.conn().await;
    batch(
        &mut conn,
        &format!(
            "CREATE TABLE b1 (id {int} PRIMARY KEY, v {text});
             INSERT INTO b1 (id, v) VALUES (1, 'a; not a separator');
             INSERT INTO b1 (id, v) VALUES (2, 'b');
             -- a comment; with a semicolon
             UPDATE b1 SET v = v || '!' WHERE id = 2;"
        ),
    )
    .await;
    let rs = select(&mut conn, "SELECT v FROM b1 ORDER BY id", &[]).await;
    let vs: Vec<String> = rs.iter().map(|r| r.try_get("v").unwrap()).collect();
    assert_eq!(
        vs,
        ["a; not a separator", "b!"],
        "[{k}] multi-statement script"
    );

    // A failing script leaves nothing behind: not the new table, not the rows before the error.
    let e = expect_kind(
        &format!("[{k}] failing script"),
        conn.execute_batch(&format!(
            "CREATE TABLE b2 (id {int} PRIMARY KEY);
             INSERT INTO b2 (id) VALUES (1);
             INSERT INTO b1 (id, v) VALUES (3, 'c');
             INSERT INTO b1 (id, v) VALUES (1, 'duplicate');
             INSERT INTO b1 (id, v) VALUES (4, 'd');"
        ))
        .await,
        ErrorKind::UniqueViolation,
    );
    assert!(e.driver_code().is_some(), "[{k}] {e:?}");
    assert_eq!(
        count(&mut conn, "b1").await,
        2,
        "[{k}] rows of the failed script"
    );
    // The table the failed script created is gone: creating it again works.
    conn.execute_batch(&format!("CREATE TABLE b2 (id {int} PRIMARY KEY)"))
        .await
        .unwrap_or_else(|e| panic!("[{k}] table b2 of the failed script still exists: {e:?}"));
    let mut other = db.conn().await;
    assert_eq!(count(&mut other, "b1").await, 2, "[{k}] other connection");
    drop(other);

    // A script with its own transaction control runs as written.
    batch(
        &mut conn,
        "BEGIN;
         INSERT INTO b1 (id, v) VALUES (10, 'x');
         INSERT INTO b1 (id, v) VALUES (11, 'y');
         COMMIT;",
    )
    .await;
    assert_eq!(count(&mut conn, "b1").await, 4, "[{k}] own BEGIN/COMMIT");
    let mut other = db.conn().await;
    assert_eq!(
        count(&mut other, "b1").await,
        4,
        "[{k}] own BEGIN/COMMIT, other conn"
    );

    // Inside a Tx the script is part of the transaction.
    let mut tx = conn.begin().await.unwrap();
    tx.execute_batch(
        "INSERT INTO b1 (id, v) VALUES (20, 'p'); INSERT INTO b1 (id, v) VALUES (21, 'q')",
    )
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(
        count(&mut other, "b1").await,
        4,
        "[{k}] script inside a rolled-back tx"
    );
}

/// A script with its own BEGIN that fails before its COMMIT must not leave the connection inside
/// that transaction: later statements on the same connection must autocommit as usual.
async fn t_execute_batch_own_tx_failure(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "ob", &[("v", Logical::Int)]).await;
    expect_kind(
        &format!("[{k}] failing script with its own BEGIN"),
        conn.execute_batch(
            "BEGIN;
             INSERT INTO ob (id, v) VALUES (1, 1);
             INSERT INTO ob (id, v) VALUES (1, 2);
             COMMIT;",
        )
        .await,
        ErrorKind::UniqueViolation,
    );
    let n = conn
        .query("INSERT INTO ob (id, v) VALUES (2, 2)")
        .dml()
        .await
        .unwrap_or_else(|e| panic!("[{k}] insert after the failed script: {e:?}"));
    assert_eq!(n, 1);
    let mut other = db.conn().await;
    let rs = select(&mut other, "SELECT id FROM ob ORDER BY id", &[]).await;
    let ids: Vec<i64> = rs.iter().map(|r| r.try_get("id").unwrap()).collect();
    assert_eq!(
        ids,
        [2],
        "[{k}] after a failed script with its own BEGIN, a later autocommit insert on the same \
         connection must be visible to others (and nothing of the failed script)"
    );
    drop(conn);
    let mut again = db.conn().await;
    assert_eq!(
        count(&mut again, "ob").await,
        1,
        "[{k}] after the connection was returned"
    );
}

async fn t_pipeline(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "pl", &[("v", Logical::Text)]).await;
    dml(
        &mut conn,
        "INSERT INTO pl (id, v) VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        &[],
    )
    .await;
    let sets: [&[RowValues]; 4] = [&[3.into()], &[1.into()], &[9.into()], &[2.into()]];
    let out = conn
        .pipeline("SELECT v FROM pl WHERE id = $1", &sets)
        .await
        .unwrap();
    let got: Vec<Option<RowValues>> = out
        .iter()
        .map(|rs| rs.results.first().and_then(|r| r.get("v").cloned()))
        .collect();
    assert_eq!(
        got,
        [
            Some(RowValues::Text("c".into())),
            Some(RowValues::Text("a".into())),
            None,
            Some(RowValues::Text("b".into())),
        ],
        "[{k}] pipeline results in order"
    );
}

/// `pipeline()` is all or nothing on every backend: outside a transaction a failing set leaves
/// no set applied; inside a `Tx` it aborts the transaction, and nothing is committed.
async fn t_pipeline_failure_is_atomic(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "pa", &[("v", Logical::Text)]).await;
    dml(&mut conn, "INSERT INTO pa (id, v) VALUES (1, 'a')", &[]).await;
    let insert = "INSERT INTO pa (id, v) VALUES ($1, $2)";
    // Outside a transaction: the duplicate in the middle fails the whole pipeline.
    let sets: [&[RowValues]; 3] = [
        &[10.into(), "x".into()],
        &[1.into(), "dup".into()],
        &[11.into(), "y".into()],
    ];
    let e = conn
        .pipeline(insert, &sets)
        .await
        .expect_err("a duplicate key fails the pipeline");
    assert_eq!(e.kind(), ErrorKind::UniqueViolation, "[{k}] {e}");
    let (n,): (i64,) = conn.query("SELECT count(*) FROM pa").one().await.unwrap();
    assert_eq!(n, 1, "[{k}] a failed pipeline left {} of its rows", n - 1);
    // The connection goes on outside any transaction, and a good pipeline applies.
    let good: [&[RowValues]; 2] = [&[20.into(), "p".into()], &[21.into(), "q".into()]];
    conn.pipeline(insert, &good).await.unwrap();
    let (n,): (i64,) = conn.query("SELECT count(*) FROM pa").one().await.unwrap();
    assert_eq!(n, 3, "[{k}] a good pipeline applies every set");
    // Inside a Tx: the failure aborts it, and commit saves nothing.
    let mut tx = conn.begin().await.unwrap();
    dml_tx(&mut tx, "INSERT INTO pa (id, v) VALUES (30, 'before')").await;
    let e = tx
        .pipeline(insert, &sets)
        .await
        .expect_err("a duplicate key fails the pipeline in a Tx");
    assert_eq!(e.kind(), ErrorKind::UniqueViolation, "[{k}] {e}");
    let later = tx.query("SELECT count(*) FROM pa").select().await;
    assert_eq!(
        later.map(drop).unwrap_err().kind(),
        ErrorKind::TransactionAborted,
        "[{k}] the Tx is aborted after a failed pipeline"
    );
    assert!(
        tx.commit().await.is_err(),
        "[{k}] commit after a failed pipeline"
    );
    let (n,): (i64,) = conn.query("SELECT count(*) FROM pa").one().await.unwrap();
    assert_eq!(n, 3, "[{k}] nothing of the aborted Tx was committed");
}

async fn dml_tx(tx: &mut Tx<'_>, sql: &str) {
    tx.query(sql)
        .dml()
        .await
        .unwrap_or_else(|e| panic!("dml({sql}) in a Tx failed: {e:?}"));
}

// ---------------------------------------------------------------------------------------------
// prepared statements
// ---------------------------------------------------------------------------------------------

async fn t_prepared_reuse(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(
        db,
        &mut conn,
        "ps",
        &[("name", Logical::Text), ("score", Logical::Float)],
    )
    .await;
    {
        let mut ins = conn
            .prepare("INSERT INTO ps (id, name, score) VALUES ($1, $2, $3)")
            .await
            .unwrap();
        assert!(
            ins.columns().is_empty(),
            "[{k}] INSERT has no result columns"
        );
        for i in 0..100_i64 {
            let n = ins
                .dml(&[
                    i.into(),
                    format!("name-{i}").into(),
                    (i as f64 * 0.5).into(),
                ])
                .await
                .unwrap();
            assert_eq!(n, 1, "[{k}] insert {i}");
        }
    }
    let mut get = conn
        .prepare("SELECT id, name, score FROM ps WHERE id = $1")
        .await
        .unwrap();
    assert_eq!(
        get.columns().names().collect::<Vec<_>>(),
        ["id", "name", "score"],
        "[{k}] columns()"
    );
    for i in (0..100_i64).rev() {
        let rs = get.select(&[i.into()]).await.unwrap();
        assert_eq!(rs.len(), 1, "[{k}] id {i}");
        let r = &rs.results[0];
        assert_eq!(r.get("id"), Some(&RowValues::Int(i)));
        assert_eq!(r.get("name"), Some(&RowValues::Text(format!("name-{i}"))));
        assert_eq!(r.get("score"), Some(&RowValues::Float(i as f64 * 0.5)));
        let (id, name, score): (i64, String, f64) = get.one(&[i.into()]).await.unwrap();
        assert_eq!((id, name, score), (i, format!("name-{i}"), i as f64 * 0.5));
    }
    assert!(
        get.optional::<(i64,)>(&[1000.into()])
            .await
            .unwrap()
            .is_none()
    );
    expect_kind(
        &format!("[{k}] prepared one() without a row"),
        get.one::<(i64,)>(&[1000.into()]).await,
        ErrorKind::NoRows,
    );
    drop(get);
    let mut range = conn
        .prepare("SELECT id FROM ps WHERE id >= $1 AND id < $2 ORDER BY id")
        .await
        .unwrap();
    let ids: Vec<(i64,)> = range.all(&[10.into(), 15.into()]).await.unwrap();
    assert_eq!(ids, [(10,), (11,), (12,), (13,), (14,)]);
    let ids: Vec<(i64,)> = range.all(&[98.into(), 1000.into()]).await.unwrap();
    assert_eq!(ids, [(98,), (99,)]);
    drop(range);
    let mut upd = conn
        .prepare("UPDATE ps SET score = score + 1 WHERE id < $1")
        .await
        .unwrap();
    assert_eq!(upd.dml(&[10.into()]).await.unwrap(), 10);
    assert_eq!(upd.dml(&[0.into()]).await.unwrap(), 0);
}

backend_tests! {
    async fn execute_batch(db) { t_execute_batch(&db).await }
    async fn execute_batch_own_tx_failure(db) { t_execute_batch_own_tx_failure(&db).await }
    async fn pipeline(db) { t_pipeline(&db).await }
    async fn pipeline_failure_is_atomic(db) { t_pipeline_failure_is_atomic(&db).await }
    async fn prepared_reuse(db) { t_prepared_reuse(&db).await }
}
