//! MySQL/MariaDB: the middleware's promises hold whatever the server's own defaults are.
//!
//! A private server is set up against the middleware: `autocommit = 0`, `completion_type =
//! CHAIN`, `sql_mode = ''` (not strict) and `latin1` as the client character set, all as global
//! defaults, so every new session and every session reset (`COM_RESET_CONNECTION` puts the
//! global values back) starts with them. Through fresh and reset connections alike:
//! - an `Ok` write (query, prepared statement, script, bulk load, pipeline, a `Tx`'s commit) is
//!   committed and visible to another connection at once, and stays after the connection goes
//!   back;
//! - a value that does not fit its column is refused, not stored changed;
//! - text outside latin1 (4-byte UTF-8 included) is stored and read back as bound.
//!
//! Prints `mysql_server_defaults sessions=S writes=W visible=V refused=R`.
#![cfg(feature = "mysql")]

use mysql_async::prelude::Queryable;
use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::groups;
use crate::common::mysql;

/// The private server's URL with a database of the test's own; the server's global defaults
/// set against the middleware.
async fn hostile_server() -> String {
    let base = tokio::task::spawn_blocking(mysql::start_private_server)
        .await
        .expect("start task")
        .unwrap_or_else(|e| panic!("a private MariaDB/MySQL server is needed for this test: {e}"));
    let mut admin = mysql::raw_conn(&base).await;
    admin
        .query_drop(
            "CREATE DATABASE hostile CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
             SET GLOBAL autocommit = 0;
             SET GLOBAL completion_type = 'CHAIN';
             SET GLOBAL sql_mode = '';
             SET GLOBAL character_set_client = latin1;
             SET GLOBAL character_set_results = latin1;
             SET GLOBAL character_set_connection = latin1",
        )
        .await
        .expect("server defaults");
    let _ = admin.disconnect().await;
    mysql::url_with_database(&base, "hostile")
}

async fn visible(observer: &ConfigAndPool, id: i64) -> bool {
    let mut c = observer.get_connection().await.expect("observer");
    let r: Option<(i64,)> = c
        .query("SELECT id FROM hd WHERE id = $1")
        .params(&[RowValues::Int(id)])
        .optional()
        .await
        .expect("observer read");
    r.is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_defaults_never_break_the_middlewares_promises() {
    let _group = groups::enter("mysql");
    let url = hostile_server().await;
    let pool = ConfigAndPool::mysql(&url)
        .max_size(1)
        .build()
        .await
        .expect("pool");
    let observer = ConfigAndPool::mysql(&url)
        .max_size(1)
        .build()
        .await
        .expect("observer");
    let mut setup = pool.get_connection().await.expect("checkout");
    setup
        .execute_batch(
            "CREATE TABLE hd (id BIGINT PRIMARY KEY, t VARCHAR(40) CHARACTER SET utf8mb4, n TINYINT)",
        )
        .await
        .expect("table");
    drop(setup);
    let mut failures = Vec::new();
    let (mut writes, mut seen, mut refused, mut sessions) = (0, 0, 0, 0);
    let mut id = 0i64;
    // Each round starts from a fresh session (round 0) or a reset one (a variable set before
    // makes the connection go through COM_RESET_CONNECTION when it goes back).
    for round in 0..3 {
        sessions += 1;
        let mut conn = pool.get_connection().await.expect("checkout");
        let mut wrote = Vec::new();
        id += 10;
        let p = |i: i64| {
            vec![
                RowValues::Int(i),
                RowValues::Text("é 😀 ü".into()),
                RowValues::Int(1),
            ]
        };
        let ins = "INSERT INTO hd (id, t, n) VALUES ($1, $2, $3)";
        match conn.query(ins).params(&p(id)).dml().await {
            Ok(_) => wrote.push(id),
            Err(e) => failures.push(format!("round {round}: query dml: {e}")),
        }
        match conn.prepare(ins).await {
            Ok(mut s) => match s.dml(&p(id + 1)).await {
                Ok(_) => wrote.push(id + 1),
                Err(e) => failures.push(format!("round {round}: prepared dml: {e}")),
            },
            Err(e) => failures.push(format!("round {round}: prepare: {e}")),
        }
        match conn
            .execute_batch(&format!(
                "INSERT INTO hd (id, t, n) VALUES ({}, 'x', 2)",
                id + 2
            ))
            .await
        {
            Ok(()) => wrote.push(id + 2),
            Err(e) => failures.push(format!("round {round}: execute_batch: {e}")),
        }
        match conn.bulk_insert("hd", &["id", "t", "n"], [p(id + 3)]).await {
            Ok(_) => wrote.push(id + 3),
            Err(e) => failures.push(format!("round {round}: bulk_insert: {e}")),
        }
        let (a, b) = (p(id + 4), p(id + 5));
        match conn.pipeline(ins, &[&a, &b]).await {
            Ok(_) => wrote.extend([id + 4, id + 5]),
            Err(e) => failures.push(format!("round {round}: pipeline: {e}")),
        }
        // A committed transaction, then a write after it (a chained COMMIT would swallow it).
        let tx = async {
            let mut tx = conn.begin().await?;
            tx.query(ins).params(&p(id + 6)).dml().await?;
            tx.commit().await
        };
        match tx.await {
            Ok(()) => wrote.push(id + 6),
            Err(e) => failures.push(format!("round {round}: tx: {e}")),
        }
        match conn.query(ins).params(&p(id + 7)).dml().await {
            Ok(_) => wrote.push(id + 7),
            Err(e) => failures.push(format!("round {round}: write after a Tx: {e}")),
        }
        // Not strict by default: a value too large for TINYINT must still be refused.
        match conn
            .query(ins)
            .params(&[
                RowValues::Int(id + 8),
                RowValues::Text("big".into()),
                RowValues::Int(1000),
            ])
            .dml()
            .await
        {
            Err(e) if e.kind() == ErrorKind::ParameterType => refused += 1,
            other => failures.push(format!("round {round}: TINYINT <- 1000 gave {other:?}")),
        }
        for w in &wrote {
            writes += 1;
            if visible(&observer, *w).await {
                seen += 1;
            } else {
                failures.push(format!(
                    "round {round}: row {w} was acknowledged but is not visible"
                ));
            }
        }
        // The text came back as bound.
        let (t,): (String,) = conn
            .query("SELECT t FROM hd WHERE id = $1")
            .params(&[RowValues::Int(id)])
            .one()
            .await
            .unwrap_or_else(|e| panic!("round {round}: read back: {e}"));
        if t != "é 😀 ü" {
            failures.push(format!("round {round}: text read back as {t:?}"));
        }
        // Make the session dirty, so it is reset before the next round.
        conn.execute_batch("SET @dirty = 1").await.expect("dirty");
        drop(conn);
        for w in &wrote {
            if !visible(&observer, *w).await {
                failures.push(format!(
                    "round {round}: row {w} is gone after the connection went back"
                ));
            }
        }
    }
    println!(
        "mysql_server_defaults sessions={sessions} writes={writes} visible={seen} refused={refused}"
    );
    assert!(
        failures.is_empty(),
        "{} failure(s):\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}
