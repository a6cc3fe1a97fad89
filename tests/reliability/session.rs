//! Reliability 13: what one borrower does to a connection's session never reaches the next, on
//! every backend and every API path (`query`, `prepare`, `execute_batch`, raw access).
//!
//! - A setting the pool configured (SQLite and Turso `foreign_keys`, Postgres
//!   `statement_timeout`) changed by a borrower is the pool's value again for the next one.
//!   (Found: `query("PRAGMA foreign_keys=OFF").dml()` went back to the pool with foreign keys
//!   off.)
//! - Temporary tables do not outlive the checkout that made them.
//! - Transaction control sent outside a `Tx` through any path (`query("BEGIN")`, a prepared
//!   `BEGIN`, a script with its own `BEGIN`) never hands the next borrower a connection inside
//!   that transaction, and the first borrower's uncommitted writes are lost, not committed by
//!   the next. (Found: on Postgres, `query("BEGIN").dml()` left the connection in the
//!   transaction, and the next borrower's `commit()` committed the first borrower's rows.)
//! - Statements that cannot work inside a transaction run from `execute_batch` as on the raw
//!   driver (found: `execute_batch("PRAGMA foreign_keys=OFF")` returned `Ok` and changed
//!   nothing; `VACUUM` failed), and inside a `Tx` are refused with `TransactionState` on every
//!   path.

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::backends::{Kind, TestDb};
use crate::common::groups;

/// The setting each test changes, how to read it, and the SQL that changes it.
fn setting(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Mysql => unreachable!("{}", crate::common::reliability::NOT_ON_MYSQL),
        Kind::Sqlite | Kind::Turso => ("PRAGMA foreign_keys", "PRAGMA foreign_keys = OFF"),
        Kind::Postgres => (
            "SELECT current_setting('statement_timeout')",
            "SET statement_timeout = '4321ms'",
        ),
    }
}

async fn read_setting(conn: &mut MiddlewarePoolConnection, kind: Kind) -> String {
    let (read, _) = setting(kind);
    let rs = conn.query(read).select().await.unwrap();
    let row = rs.iter().next().expect("a row");
    match kind {
        Kind::Mysql => unreachable!("{}", crate::common::reliability::NOT_ON_MYSQL),
        Kind::Postgres => row.try_get::<String>(0).unwrap(),
        Kind::Sqlite | Kind::Turso => row.try_get::<i64>(0).unwrap().to_string(),
    }
}

/// Changes the setting through API path `path`; false when the backend has no such path.
async fn change_setting(conn: &mut MiddlewarePoolConnection, kind: Kind, path: &str) -> bool {
    let (_, change) = setting(kind);
    match path {
        "query" => {
            conn.query(change).dml().await.unwrap();
        }
        "prepare" => {
            let mut st = conn.prepare(change).await.unwrap();
            st.dml(&[]).await.unwrap();
        }
        "execute_batch" => conn.execute_batch(change).await.unwrap(),
        "raw" => match kind {
            #[cfg(feature = "sqlite")]
            Kind::Sqlite => conn
                .with_blocking_sqlite(move |c| c.execute_batch(change))
                .await
                .unwrap(),
            #[cfg(feature = "postgres")]
            Kind::Postgres => conn
                .postgres_client()
                .await
                .unwrap()
                .batch_execute(change)
                .await
                .unwrap(),
            #[cfg(feature = "turso")]
            Kind::Turso => {
                conn.turso_connection()
                    .await
                    .unwrap()
                    .execute(change, ())
                    .await
                    .unwrap();
            }
            #[allow(unreachable_patterns)]
            _ => return false,
        },
        _ => unreachable!("unknown path {path}"),
    }
    true
}

async fn t_settings_never_reach_the_next_borrower(db: &TestDb) {
    let k = db.kind.name();
    // One connection: the next borrower gets the same one back unless it was discarded.
    let pool = db.builder().max_size(1).build().await.unwrap();
    let configured = read_setting(&mut pool.get_connection().await.unwrap(), db.kind).await;
    let mut leaked = Vec::new();
    for path in ["query", "prepare", "execute_batch", "raw"] {
        let mut conn = pool.get_connection().await.unwrap();
        if !change_setting(&mut conn, db.kind, path).await {
            continue;
        }
        let changed = read_setting(&mut conn, db.kind).await;
        assert_ne!(
            changed, configured,
            "[{k}] {path}: the change took no effect, so this case checks nothing"
        );
        drop(conn);
        let mut next = pool.get_connection().await.unwrap();
        let seen = read_setting(&mut next, db.kind).await;
        if seen != configured {
            leaked.push(format!("{path}: {seen} (configured {configured})"));
        }
    }
    println!(
        "session_settings backend={k} paths=4 leaked={}",
        leaked.len()
    );
    assert!(leaked.is_empty(), "[{k}] settings leaked: {leaked:?}");
}

async fn t_temporary_tables_stay_with_their_checkout(db: &TestDb) {
    let k = db.kind.name();
    let pool = db.builder().max_size(1).build().await.unwrap();
    let mut conn = pool.get_connection().await.unwrap();
    conn.query("CREATE TEMP TABLE scratch (a INTEGER)")
        .dml()
        .await
        .unwrap();
    conn.query("INSERT INTO scratch (a) VALUES (1)")
        .dml()
        .await
        .unwrap();
    drop(conn);
    let mut next = pool.get_connection().await.unwrap();
    let r = next.query("SELECT count(*) FROM scratch").select().await;
    assert!(
        r.is_err(),
        "[{k}] the next borrower sees the previous one's temporary table: {r:?}"
    );
}

async fn t_transaction_control_outside_a_tx_is_tracked(db: &TestDb) {
    let k = db.kind.name();
    let pool = db.builder().max_size(1).build().await.unwrap();
    let mut conn = pool.get_connection().await.unwrap();
    conn.execute_batch("CREATE TABLE ledger (id INTEGER PRIMARY KEY)")
        .await
        .unwrap();
    drop(conn);
    let mut survivors = Vec::new();
    for (id, path) in [(1, "query"), (2, "prepare"), (3, "execute_batch")] {
        let mut conn = pool.get_connection().await.unwrap();
        match path {
            "query" => {
                conn.query("BEGIN").dml().await.unwrap();
            }
            "prepare" => {
                let mut st = conn.prepare("begin").await.unwrap();
                st.dml(&[]).await.unwrap();
            }
            _ => conn.execute_batch("/* own */ BEGIN").await.unwrap(),
        }
        conn.query("INSERT INTO ledger (id) VALUES ($1)")
            .params(&[RowValues::Int(id)])
            .dml()
            .await
            .unwrap();
        // Dropped without COMMIT: the write must be lost.
        drop(conn);
        let mut next = pool.get_connection().await.unwrap();
        let mut tx = next
            .begin()
            .await
            .unwrap_or_else(|e| panic!("[{k}] {path}: the next borrower cannot begin: {e:?}"));
        tx.query("INSERT INTO ledger (id) VALUES ($1)")
            .params(&[RowValues::Int(100 + id)])
            .dml()
            .await
            .unwrap();
        tx.commit().await.unwrap();
        drop(next);
        let mut check = pool.get_connection().await.unwrap();
        let (n,): (i64,) = check
            .query("SELECT count(*) FROM ledger WHERE id = $1")
            .params(&[RowValues::Int(id)])
            .one()
            .await
            .unwrap();
        if n != 0 {
            survivors.push(path);
        }
    }
    println!(
        "tx_control_tracked backend={k} paths=3 committed_by_next={}",
        survivors.len()
    );
    assert!(
        survivors.is_empty(),
        "[{k}] uncommitted rows committed by the next borrower via {survivors:?}"
    );
}

/// Statements that cannot do their work inside a transaction, per engine, and a script that
/// uses one between ordinary statements.
fn outside_tx_statements(kind: Kind) -> (&'static [&'static str], &'static str) {
    match kind {
        Kind::Mysql => unreachable!("{}", crate::common::reliability::NOT_ON_MYSQL),
        Kind::Sqlite => (
            &[
                "VACUUM",
                "PRAGMA foreign_keys = OFF",
                "PRAGMA synchronous = OFF",
                "ATTACH ':memory:' AS other",
            ],
            "CREATE TABLE v (a INTEGER); INSERT INTO v VALUES (1); VACUUM; INSERT INTO v VALUES (2)",
        ),
        Kind::Turso => (
            &["PRAGMA foreign_keys = OFF", "VACUUM"],
            "CREATE TABLE v (a INTEGER); INSERT INTO v VALUES (1); PRAGMA foreign_keys = OFF; INSERT INTO v VALUES (2); PRAGMA foreign_keys = ON",
        ),
        Kind::Postgres => (
            &[
                "VACUUM",
                "CREATE INDEX CONCURRENTLY nx ON nowhere (a)",
                "ALTER SYSTEM SET work_mem = '4MB'",
            ],
            "CREATE TABLE v (a int); INSERT INTO v VALUES (1); VACUUM v; INSERT INTO v VALUES (2)",
        ),
    }
}

async fn t_statements_that_need_no_transaction(db: &TestDb) {
    let k = db.kind.name();
    let pool = db.builder().max_size(1).build().await.unwrap();
    let mut conn = pool.get_connection().await.unwrap();
    let (stmts, script) = outside_tx_statements(db.kind);

    // From execute_batch, they do their work.
    conn.execute_batch(script)
        .await
        .unwrap_or_else(|e| panic!("[{k}] {script}: {e:?}"));
    let (n,): (i64,) = conn.query("SELECT count(*) FROM v").one().await.unwrap();
    assert_eq!(n, 2, "[{k}] rows of the script");
    if db.kind != Kind::Postgres {
        conn.execute_batch("PRAGMA foreign_keys = OFF")
            .await
            .unwrap();
        let (fk,): (i64,) = conn.query("PRAGMA foreign_keys").one().await.unwrap();
        assert_eq!(
            fk, 0,
            "[{k}] execute_batch(PRAGMA foreign_keys = OFF) changed nothing"
        );
    }
    drop(conn);

    // Inside a Tx they are refused on every path, before they reach the engine.
    let mut refused = 0;
    for sql in stmts {
        for path in ["execute_batch", "query", "prepare"] {
            let mut conn = pool.get_connection().await.unwrap();
            let mut tx = conn.begin().await.unwrap();
            let r = match path {
                "execute_batch" => tx.execute_batch(sql).await,
                "query" => tx.query(sql).dml().await.map(drop),
                _ => tx.prepare(sql).await.map(drop),
            };
            match r {
                Err(e) if e.kind() == ErrorKind::TransactionState => refused += 1,
                other => panic!("[{k}] {path}({sql}) inside a Tx: {other:?}"),
            }
            let _ = tx.rollback().await;
        }
    }
    println!(
        "no_tx_statements backend={k} refused_in_tx={refused}/{}",
        stmts.len() * 3
    );
}

crate::backend_tests! {
    let _group = groups::enter("session");
    async fn settings_never_reach_the_next_borrower(db) {
        t_settings_never_reach_the_next_borrower(&db).await
    }
    async fn temporary_tables_stay_with_their_checkout(db) {
        t_temporary_tables_stay_with_their_checkout(&db).await
    }
    async fn transaction_control_outside_a_tx_is_tracked(db) {
        t_transaction_control_outside_a_tx_is_tracked(&db).await
    }
    async fn statements_that_need_no_transaction(db) {
        t_statements_that_need_no_transaction(&db).await
    }
}
