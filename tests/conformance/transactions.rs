//! Transactions: commit is visible to others, rollback and drop undo, an error aborts.

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, Logical, TestDb, expect_kind};
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

/// DDL inside a `Tx`. SQLite, Postgres and Turso run it as part of the transaction. MySQL
/// commits implicitly before and after DDL (and `LOCK TABLES`, `TRUNCATE`, …), which would end
/// the `Tx` half-way: such a statement is refused with `TransactionState` before it reaches
/// the server, on every path (query, script, prepare), the `Tx` is aborted, and nothing of it
/// (nor of the refused statement) happens. Temporary tables are no schema change there and are
/// allowed.
async fn t_tx_ddl(db: &TestDb) {
    let k = db.kind.name();
    let mut a = db.conn().await;
    tx_table(db, &mut a).await;
    dml(&mut a, "INSERT INTO tx (id, v) VALUES (1, 'kept')", &[]).await;
    let int = db.ty(Logical::Int);
    if db.kind != Kind::Mysql {
        let mut tx = a.begin().await.unwrap();
        tx.query("INSERT INTO tx (id, v) VALUES (2, 'in tx')")
            .dml()
            .await
            .unwrap();
        tx.execute_batch(&format!("CREATE TABLE tx_ddl (x {int})"))
            .await
            .unwrap_or_else(|e| panic!("[{k}] DDL inside a Tx: {e:?}"));
        tx.query("INSERT INTO tx_ddl (x) VALUES (1)")
            .dml()
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(count(&mut a, "tx").await, 2, "[{k}]");
        assert_eq!(count(&mut a, "tx_ddl").await, 1, "[{k}]");
        return;
    }
    let statements = [
        format!("CREATE TABLE tx_ddl (x {int})"),
        "DROP TABLE tx".to_owned(),
        format!("ALTER TABLE tx ADD COLUMN y {int}"),
        "TRUNCATE TABLE tx".to_owned(),
        "RENAME TABLE tx TO tx_renamed".to_owned(),
        "CREATE INDEX tx_v ON tx (id, v(10))".to_owned(),
        "LOCK TABLES tx WRITE".to_owned(),
        "/* a comment */ create table tx_ddl2 (x int)".to_owned(),
    ];
    for stmt in &statements {
        for path in ["query", "script", "prepare"] {
            let mut tx = a.begin().await.unwrap();
            tx.query("INSERT INTO tx (id, v) VALUES (2, 'in tx')")
                .dml()
                .await
                .unwrap();
            let what = format!("[{k}] {stmt:?} via {path} inside a Tx");
            match path {
                "query" => {
                    expect_kind(
                        &what,
                        tx.query(stmt).dml().await,
                        ErrorKind::TransactionState,
                    );
                }
                "script" => {
                    let script = format!("INSERT INTO tx (id, v) VALUES (3, 'script'); {stmt}");
                    expect_kind(
                        &what,
                        tx.execute_batch(&script).await,
                        ErrorKind::TransactionState,
                    );
                }
                _ => {
                    expect_kind(
                        &what,
                        tx.prepare(stmt).await.map(drop),
                        ErrorKind::TransactionState,
                    );
                }
            }
            expect_kind(
                &format!("{what}: the Tx afterwards"),
                tx.query("SELECT 1").select().await,
                ErrorKind::TransactionAborted,
            );
            tx.rollback().await.unwrap();
            // Nothing happened: the table is there, with its one row and its columns, under
            // its name, and no other table appeared.
            let rs = select(&mut a, "SELECT * FROM tx ORDER BY id", &[]).await;
            assert_eq!(rs.len(), 1, "{what}: rows of tx");
            assert_eq!(
                rs.column_names().collect::<Vec<_>>(),
                ["id", "v"],
                "{what}: columns of tx"
            );
            let (tables,): (i64,) = a
                .query(
                    "SELECT COUNT(*) FROM information_schema.tables \
                     WHERE table_schema = DATABASE()",
                )
                .one()
                .await
                .unwrap();
            assert_eq!(tables, 1, "{what}: tables in the database");
            let (indexes,): (i64,) = a
                .query(
                    "SELECT COUNT(DISTINCT index_name) FROM information_schema.statistics \
                     WHERE table_schema = DATABASE() AND table_name = 'tx'",
                )
                .one()
                .await
                .unwrap();
            assert_eq!(indexes, 1, "{what}: only the primary key");
        }
    }
    // Outside a Tx the same DDL runs.
    batch(&mut a, &statements[0]).await;
    assert_eq!(count(&mut a, "tx_ddl").await, 0, "[{k}] DDL outside a Tx");
    // A temporary table is no schema change: it stays inside the transaction.
    let mut tx = a.begin().await.unwrap();
    tx.execute_batch(&format!(
        "CREATE TEMPORARY TABLE tx_tmp (x {int}); INSERT INTO tx_tmp (x) VALUES (1)"
    ))
    .await
    .unwrap_or_else(|e| panic!("[{k}] a temporary table inside a Tx: {e:?}"));
    tx.query("INSERT INTO tx (id, v) VALUES (2, 'with tmp')")
        .dml()
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(
        count(&mut a, "tx").await,
        1,
        "[{k}] rolled back with the tmp"
    );
}

backend_tests! {
    async fn tx_ddl(db) { t_tx_ddl(&db).await }
    async fn tx_commit_visible(db) { t_tx_commit_visible(&db).await }
    async fn tx_rollback(db) { t_tx_rollback(&db).await }
    async fn tx_drop_rolls_back(db) { t_tx_drop_rolls_back(&db).await }
    async fn tx_error_aborts(db) { t_tx_error_aborts(&db).await }
}
