//! MySQL/MariaDB procedures:
//! - a `CALL` that returns several result sets gives all of them or an error, through every
//!   path that reads rows (`select`, `one`, `optional`, `all`, `stream`, a prepared statement,
//!   `pipeline`) and through `dml`: never silently only the first;
//! - a procedure that commits or rolls back inside a `Tx` (`COMMIT`, `ROLLBACK`, `COMMIT` then
//!   `START TRANSACTION`, a statement with an implicit commit) is reported as
//!   `TransactionState` on every path, and the `Tx`'s `commit` never claims success afterwards.
//!
//! Prints `mysql_procedures multi_set_cases=N silent=S tx_cases=T undetected=U`.
#![cfg(feature = "mysql")]

use futures::TryStreamExt;
use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::groups;
use crate::common::mysql;

const SETUP: &str = "
CREATE TABLE pr (id INT PRIMARY KEY, v INT);
INSERT INTO pr VALUES (1, 10), (2, 20);
CREATE PROCEDURE two_sets() BEGIN SELECT 1 AS a; SELECT 2 AS a, 3 AS b; END;
CREATE PROCEDURE one_set() BEGIN SELECT v AS a FROM pr ORDER BY id; END;
CREATE PROCEDURE p_commit() BEGIN UPDATE pr SET v = v + 1 WHERE id = 1; COMMIT; END;
CREATE PROCEDURE p_rollback() BEGIN ROLLBACK; END;
CREATE PROCEDURE p_restart() BEGIN COMMIT; START TRANSACTION; END;
CREATE PROCEDURE p_ddl() BEGIN CREATE TABLE IF NOT EXISTS pr_made (a INT); END;
";

#[derive(Debug, Clone, Copy)]
enum Read {
    Select,
    One,
    Optional,
    All,
    Stream,
    Prepared,
    Pipeline,
    Dml,
}

const READS: [Read; 8] = [
    Read::Select,
    Read::One,
    Read::Optional,
    Read::All,
    Read::Stream,
    Read::Prepared,
    Read::Pipeline,
    Read::Dml,
];

/// Runs `sql` through `path`; `Ok(n)` is the number of result sets the caller saw.
async fn read(
    conn: &mut MiddlewarePoolConnection,
    path: Read,
    sql: &str,
) -> Result<usize, SqlMiddlewareDbError> {
    match path {
        Read::Select => conn.query(sql).select().await.map(|_| 1),
        Read::One => conn.query(sql).one::<(i64,)>().await.map(|_| 1),
        Read::Optional => conn.query(sql).optional::<(i64,)>().await.map(|_| 1),
        Read::All => conn.query(sql).all::<(i64,)>().await.map(|_| 1),
        Read::Stream => {
            let rows: Vec<(i64,)> = conn.query(sql).stream::<(i64,)>().try_collect().await?;
            let _ = rows;
            Ok(1)
        }
        Read::Prepared => {
            let mut s = conn.prepare(sql).await?;
            s.select(&[]).await.map(|_| 1)
        }
        Read::Pipeline => conn.pipeline(sql, &[&[]]).await.map(|v| v.len()),
        Read::Dml => conn.query(sql).dml().await.map(|_| 1),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn procedures_give_every_result_set_or_an_error_and_their_commits_are_seen() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        let db = ConfigAndPool::mysql(&url)
            .max_size(2)
            .build()
            .await
            .expect("pool");
        let mut conn = db.get_connection().await.expect("checkout");
        for stmt in SETUP.split(";\n").map(str::trim).filter(|s| !s.is_empty()) {
            conn.execute_batch(stmt)
                .await
                .unwrap_or_else(|e| panic!("{stmt}: {e}"));
        }
        let mut silent = Vec::new();
        let mut multi = 0;
        for path in READS {
            multi += 1;
            // Two result sets: all of them, or an error that says so.
            match read(&mut conn, path, "CALL two_sets()").await {
                Err(e)
                    if e.kind() == ErrorKind::Unsupported
                        || e.kind() == ErrorKind::InvalidInput => {}
                // `dml` returns a count and reads every result set off, as it does for any
                // statement that returns rows.
                Ok(_) if matches!(path, Read::Dml) => {}
                Err(e) => silent.push(format!(
                    "{path:?}: two result sets gave {:?}: {e}",
                    e.kind()
                )),
                Ok(n) => silent.push(format!("{path:?}: two result sets, the caller saw {n}")),
            }
            // The connection is usable afterwards.
            let (one,): (i64,) = conn.query("SELECT 1").one().await.expect("usable");
            assert_eq!(one, 1);
            // One result set is fine on every reading path.
            if !matches!(path, Read::One | Read::Optional) {
                if let Err(e) = read(&mut conn, path, "CALL one_set()").await {
                    silent.push(format!("{path:?}: one result set failed: {e}"));
                }
            }
        }

        let mut undetected = Vec::new();
        let mut tx_cases = 0;
        for proc in ["p_commit", "p_rollback", "p_restart", "p_ddl"] {
            for path in [
                "query.dml",
                "query.select",
                "prepare",
                "execute_batch",
                "pipeline",
            ] {
                tx_cases += 1;
                let sql = format!("CALL {proc}()");
                let mut tx = conn.begin().await.expect("begin");
                tx.query("UPDATE pr SET v = v + 100 WHERE id = 2")
                    .dml()
                    .await
                    .expect("work");
                let r = match path {
                    "query.dml" => tx.query(&sql).dml().await.map(drop),
                    "query.select" => tx.query(&sql).select().await.map(drop),
                    "prepare" => match tx.prepare(&sql).await {
                        Ok(mut s) => s.dml(&[]).await.map(drop),
                        Err(e) => Err(e),
                    },
                    "execute_batch" => tx.execute_batch(&sql).await,
                    _ => tx.pipeline(&sql, &[&[]]).await.map(drop),
                };
                let what = format!("{proc} via {path}");
                match r {
                    Err(e) if e.kind() == ErrorKind::TransactionState => {}
                    other => undetected.push(format!(
                        "{what}: {:?}",
                        other.map_err(|e| format!("{:?}: {e}", e.kind()))
                    )),
                }
                if tx.commit().await.is_ok() {
                    undetected.push(format!("{what}: commit claimed success"));
                }
                // The connection is outside any transaction again (MariaDB reports it; MySQL
                // has no such variable).
                if let Ok((n,)) = conn.query("SELECT @@in_transaction").one::<(i64,)>().await {
                    if n == 0 {
                        continue;
                    }
                    undetected.push(format!(
                        "{what}: the connection is still inside a transaction"
                    ));
                    let _ = conn.execute_batch("ROLLBACK").await;
                }
            }
        }
        println!(
            "mysql_procedures multi_set_cases={multi} silent={} tx_cases={tx_cases} undetected={}",
            silent.len(),
            undetected.len()
        );
        assert!(
            silent.is_empty() && undetected.is_empty(),
            "result sets lost:\n  {}\nprocedure commits not reported:\n  {}",
            silent.join("\n  "),
            undetected.join("\n  ")
        );
    })
    .await;
}
