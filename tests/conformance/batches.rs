//! Many statements at once: scripts (`execute_batch`, also with their own transaction control),
//! pipelines, and prepared statements run many times.

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, Logical, TestDb, expect_kind};
use crate::helpers::*;

// ---------------------------------------------------------------------------------------------
// execute_batch
// ---------------------------------------------------------------------------------------------

async fn t_execute_batch(db: &TestDb) {
    let k = db.kind.name();
    let int = db.ty(Logical::Int);
    let text = db.ty(Logical::Text);
    let mut conn = db.conn().await;
    // MySQL's `||` is a logical OR: it concatenates with CONCAT().
    let bang = db.sql().concat("v", "'!'");
    batch(
        &mut conn,
        &format!(
            "CREATE TABLE b1 (id {int} PRIMARY KEY, v {text});
             INSERT INTO b1 (id, v) VALUES (1, 'a; not a separator');
             INSERT INTO b1 (id, v) VALUES (2, 'b');
             -- a comment; with a semicolon
             UPDATE b1 SET v = {bang} WHERE id = 2;"
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
    match db.kind {
        // MySQL commits implicitly around DDL, so a script runs its `CREATE TABLE` on its own
        // and the statements after it as one atomic run: the table stays, empty.
        Kind::Mysql => assert_eq!(
            count(&mut conn, "b2").await,
            0,
            "[{k}] the failed script's table keeps none of its rows"
        ),
        // The table the failed script created is gone: creating it again works.
        Kind::Sqlite | Kind::Postgres | Kind::Turso => conn
            .execute_batch(&format!("CREATE TABLE b2 (id {int} PRIMARY KEY)"))
            .await
            .unwrap_or_else(|e| panic!("[{k}] table b2 of the failed script still exists: {e:?}")),
    }
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

// ---------------------------------------------------------------------------------------------
// procedural bodies and quoted keywords in scripts
// ---------------------------------------------------------------------------------------------

/// A script that defines procedural code: a function and `DO` blocks on Postgres (dollar-quoted,
/// with and without tags, nested), a trigger with a `BEGIN … END` body on the SQLite family, a
/// trigger and a procedure with `BEGIN … END` bodies (holding `IF … END IF;`) on MySQL. MySQL
/// commits implicitly around `CREATE TRIGGER`/`PROCEDURE`, so the script run inside a
/// transaction there calls the procedure and fires the trigger instead of creating them.
fn procedural_script(db: &TestDb) -> (&'static str, &'static str) {
    match db.kind {
        Kind::Postgres => (
            "CREATE TABLE pb (id int PRIMARY KEY, v text);
             CREATE TABLE pb_log (n int);
             CREATE FUNCTION pb_add(n int) RETURNS int AS $$
               BEGIN INSERT INTO pb VALUES (n, 'fn; body'); RETURN n; END;
             $$ LANGUAGE plpgsql;
             DO $$ BEGIN PERFORM pb_add(1); INSERT INTO pb_log VALUES (1); END $$;
             DO $tag$ BEGIN INSERT INTO pb VALUES (2, $$COMMIT; not control$$); END $tag$;",
            "DO $$ BEGIN INSERT INTO pb VALUES (3, 'in; tx'); INSERT INTO pb_log VALUES (3); END $$;
             SELECT pb_add(4);",
        ),
        Kind::Sqlite | Kind::Turso => (
            "CREATE TABLE pb (id INTEGER PRIMARY KEY, v TEXT);
             CREATE TABLE pb_log (n INTEGER);
             CREATE TRIGGER pb_t AFTER INSERT ON pb WHEN NEW.id = 1 BEGIN
               INSERT INTO pb_log VALUES (NEW.id);
               UPDATE pb SET v = 'fn; body' WHERE id = NEW.id;
             END;
             INSERT INTO pb VALUES (1, 'a');
             INSERT INTO pb VALUES (2, 'COMMIT; not control');",
            "CREATE TRIGGER pb_t3 AFTER INSERT ON pb WHEN NEW.id = 3 BEGIN
               INSERT INTO pb_log VALUES (NEW.id);
             END;
             INSERT INTO pb VALUES (3, 'in; tx');
             INSERT INTO pb VALUES (4, 'fn; body');",
        ),
        Kind::Mysql => (
            "CREATE TABLE pb (id BIGINT PRIMARY KEY, v TEXT);
             CREATE TABLE pb_log (n BIGINT);
             CREATE TRIGGER pb_t BEFORE INSERT ON pb FOR EACH ROW BEGIN
               IF NEW.id IN (1, 3) THEN
                 INSERT INTO pb_log VALUES (NEW.id);
               END IF;
               IF NEW.id = 1 THEN SET NEW.v = 'fn; body'; END IF;
             END;
             CREATE PROCEDURE pb_add(n BIGINT) BEGIN
               INSERT INTO pb VALUES (n, 'fn; body');
             END;
             INSERT INTO pb VALUES (1, 'a');
             INSERT INTO pb VALUES (2, 'COMMIT; not control');",
            "INSERT INTO pb VALUES (3, 'in; tx');
             CALL pb_add(4);",
        ),
    }
}

async fn t_procedural_bodies(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    let (setup, in_tx) = procedural_script(db);
    batch(&mut conn, setup).await;
    let rs = select(&mut conn, "SELECT id, v FROM pb ORDER BY id", &[]).await;
    let rows: Vec<(i64, String)> = rs
        .iter()
        .map(|r| (r.try_get("id").unwrap(), r.try_get("v").unwrap()))
        .collect();
    assert_eq!(
        rows,
        [
            (1, "fn; body".to_owned()),
            (2, "COMMIT; not control".to_owned())
        ],
        "[{k}] procedural script"
    );
    assert_eq!(count(&mut conn, "pb_log").await, 1, "[{k}] body ran once");

    // The same kind of body inside a transaction: it runs, and a rollback takes it back.
    let mut tx = conn.begin().await.unwrap();
    tx.execute_batch(in_tx)
        .await
        .unwrap_or_else(|e| panic!("[{k}] procedural script in a tx: {e:?}"));
    let (n,): (i64,) = tx.query("SELECT COUNT(*) FROM pb").one().await.unwrap();
    assert_eq!(n, 4, "[{k}] rows inside the tx");
    tx.rollback().await.unwrap();
    assert_eq!(count(&mut conn, "pb").await, 2, "[{k}] rolled back");
    assert_eq!(count(&mut conn, "pb_log").await, 1, "[{k}] rolled back log");

    let mut tx = conn.begin().await.unwrap();
    tx.execute_batch(in_tx).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(count(&mut conn, "pb").await, 4, "[{k}] committed");
    assert_eq!(count(&mut conn, "pb_log").await, 2, "[{k}] committed log");
}

/// Transaction keywords inside literals, identifiers and comments are data: such a script still
/// runs atomically outside a transaction and is accepted inside one, while real transaction
/// control in any casing, after any comment, is refused inside a transaction.
async fn t_quoted_keywords_are_data(db: &TestDb) {
    let k = db.kind.name();
    let int = db.ty(Logical::Int);
    let text = db.ty(Logical::Text);
    let mut conn = db.conn().await;
    // The column is named `commit`, quoted as each engine quotes identifiers (MySQL reads
    // double quotes as a string), and concatenated as each engine does (MySQL's `||` is OR).
    let q = db.sql().quote("commit");
    let concat = db.sql().concat(&q, "';'");
    batch(
        &mut conn,
        &format!("CREATE TABLE qk (id {int} PRIMARY KEY, {q} {text})"),
    )
    .await;

    // Comments as each engine reads them: PostgreSQL's nest, SQLite's and MySQL's end at the
    // first `*/`.
    let comment = match db.kind {
        Kind::Postgres => "/* COMMIT; /* nested */ BEGIN; */",
        Kind::Sqlite | Kind::Turso | Kind::Mysql => "/* COMMIT; /* BEGIN; */",
    };
    // Outside a transaction: the script is wrapped, so the failure at its end undoes its start,
    // even though its text is full of keywords that a naive scanner reads as control.
    expect_kind(
        &format!("[{k}] failing script with quoted keywords"),
        conn.execute_batch(&format!(
            "INSERT INTO qk (id, {q}) VALUES (1, 'BEGIN; COMMIT');
             -- ROLLBACK; END;
             {comment}
             INSERT INTO qk (id, {q}) VALUES (1, 'duplicate');"
        ))
        .await,
        ErrorKind::UniqueViolation,
    );
    assert_eq!(count(&mut conn, "qk").await, 0, "[{k}] script was atomic");

    // Inside a transaction: data, not control.
    let mut tx = conn.begin().await.unwrap();
    tx.execute_batch(&format!(
        "INSERT INTO qk (id, {q}) VALUES (2, 'END TRANSACTION; ROLLBACK');
         -- COMMIT
         /* BEGIN */ UPDATE qk SET {q} = {concat} WHERE id = 2"
    ))
    .await
    .unwrap_or_else(|e| panic!("[{k}] quoted keywords in a tx: {e:?}"));
    tx.commit().await.unwrap();
    let (v,): (String,) = conn
        .query(&format!("SELECT {q} FROM qk WHERE id = 2"))
        .one()
        .await
        .unwrap();
    assert_eq!(v, "END TRANSACTION; ROLLBACK;", "[{k}] committed data");

    // Real control, however it is spelled, is refused inside a transaction and commits nothing;
    // so is control that only a lexer of the wrong dialect would read as a comment or literal.
    // MySQL runs the text of an executable comment (`/*! … */`) as code.
    let disguised = match db.kind {
        Kind::Postgres => "SELECT ARRAY[']']; COMMIT; SELECT ']'",
        Kind::Sqlite | Kind::Turso => "/* a /* b */ COMMIT",
        Kind::Mysql => "/*! COMMIT */",
    };
    for control in [
        "COMMIT",
        "commit;",
        "/* c */ CoMmIt",
        "-- note\nEND",
        "SELECT 1; ROLLBACK",
        "begin",
        disguised,
    ] {
        let mut tx = conn.begin().await.unwrap();
        tx.query(&format!("INSERT INTO qk (id, {q}) VALUES (3, 'x')"))
            .dml()
            .await
            .unwrap();
        expect_kind(
            &format!("[{k}] {control:?} inside a tx"),
            tx.execute_batch(control).await,
            ErrorKind::TransactionState,
        );
        let _ = tx.rollback().await;
        assert_eq!(
            count(&mut conn, "qk").await,
            1,
            "[{k}] {control:?} committed nothing"
        );
    }
}

backend_tests! {
    async fn execute_batch(db) { t_execute_batch(&db).await }
    async fn execute_batch_own_tx_failure(db) { t_execute_batch_own_tx_failure(&db).await }
    async fn pipeline(db) { t_pipeline(&db).await }
    async fn pipeline_failure_is_atomic(db) { t_pipeline_failure_is_atomic(&db).await }
    async fn prepared_reuse(db) { t_prepared_reuse(&db).await }
    async fn procedural_bodies(db) { t_procedural_bodies(&db).await }
    async fn quoted_keywords_are_data(db) { t_quoted_keywords_are_data(&db).await }
}
