//! A transaction the engine ended is ended: after the engine aborts or rolls back a whole
//! transaction by itself (a deadlock on Postgres and MySQL/MariaDB, which MySQL answers by
//! rolling the whole transaction back; a trigger's `RAISE(ROLLBACK)` on SQLite), every later
//! call in that `Tx` reports it with one kind, `TransactionAborted`: a statement, a prepare, a
//! script, a savepoint opened or rolled back, and `commit`, which never claims success. None of
//! them reports a secondary error of another kind (such as "SAVEPOINT does not exist"), nothing
//! of the transaction is left committed, and the connection goes back clean.
//!
//! The abort happens both directly in the transaction and inside a savepoint (except on
//! Postgres, where a deadlock inside a savepoint ends only the savepoint). Prints
//! `server_ended backend=X cases=N wrong=W`.

use std::sync::Arc;
use std::time::Duration;

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, TestDb};
use crate::helpers::*;

/// The call made after the engine ended the transaction.
#[derive(Debug, Clone, Copy)]
enum Later {
    Statement,
    Prepare,
    Script,
    SavepointOpen,
    SavepointRollback,
    Commit,
}

const LATER: [Later; 6] = [
    Later::Statement,
    Later::Prepare,
    Later::Script,
    Later::SavepointOpen,
    Later::SavepointRollback,
    Later::Commit,
];

/// What one side of the deadlock saw: `None` if it won (and committed).
type Seen = Option<Vec<String>>;

fn check(what: &str, r: Result<(), SqlMiddlewareDbError>, wrong: &mut Vec<String>) {
    match r {
        Err(e) if e.kind() == ErrorKind::TransactionAborted => {}
        other => wrong.push(format!(
            "{what} gave {:?}",
            other.map_err(|e| format!("{:?}: {e}", e.kind()))
        )),
    }
}

/// A later call that leaves `target` open.
async fn call(target: &mut Tx<'_>, later: Later) -> Result<(), SqlMiddlewareDbError> {
    match later {
        Later::Statement => target
            .query("SELECT COUNT(*) FROM se")
            .select()
            .await
            .map(drop),
        Later::Prepare => target
            .prepare("SELECT id FROM se WHERE id = $1")
            .await
            .map(drop),
        Later::Script => {
            target
                .execute_batch("UPDATE se SET v = v + 100 WHERE id = 3")
                .await
        }
        Later::SavepointOpen => target.savepoint().await.map(drop),
        Later::SavepointRollback => match target.savepoint().await {
            Ok(s) => s.rollback().await,
            Err(e) => Err(e),
        },
        Later::Commit => Ok(()),
    }
}

/// Runs the transaction's second statement (`second`) directly or inside a savepoint; when the
/// engine ends the transaction there, makes the later call and commits. `None` when the
/// statement succeeded (and the transaction committed).
async fn second_then_later(
    tx: &mut Tx<'_>,
    in_savepoint: bool,
    second: &str,
    later: Later,
) -> Option<Vec<String>> {
    let mut wrong = Vec::new();
    if in_savepoint {
        let mut sp = tx.savepoint().await.expect("savepoint");
        match sp.query(second).dml().await {
            Ok(_) => {
                sp.commit().await.expect("savepoint commit");
                return None;
            }
            Err(e) => {
                let cause = format!("after {:?}", e.kind());
                match later {
                    Later::SavepointRollback => check(
                        &format!("{cause}: the savepoint's rollback"),
                        sp.rollback().await,
                        &mut wrong,
                    ),
                    Later::Commit => check(
                        &format!("{cause}: the savepoint's commit"),
                        sp.commit().await,
                        &mut wrong,
                    ),
                    other => {
                        check(
                            &format!("{cause}: {other:?} in the savepoint"),
                            call(&mut sp, other).await,
                            &mut wrong,
                        );
                        let _ = sp.rollback().await;
                    }
                }
            }
        }
    } else {
        match tx.query(second).dml().await {
            Ok(_) => return None,
            Err(e) => {
                let cause = format!("after {:?}", e.kind());
                if !matches!(later, Later::Commit) {
                    check(
                        &format!("{cause}: {later:?}"),
                        call(tx, later).await,
                        &mut wrong,
                    );
                }
            }
        }
    }
    Some(wrong)
}

/// One side of a two-connection deadlock on the server engines.
async fn side(
    pool: ConfigAndPool,
    first: i64,
    second: i64,
    in_savepoint: bool,
    later: Later,
    barrier: Arc<tokio::sync::Barrier>,
    delay: Duration,
) -> Seen {
    let mut conn = pool.get_connection().await.expect("checkout");
    let mut tx = conn.begin().await.expect("begin");
    tx.query("UPDATE se SET v = v + 1 WHERE id = $1")
        .params(&[RowValues::Int(first)])
        .dml()
        .await
        .expect("first lock");
    barrier.wait().await;
    tokio::time::sleep(delay).await;
    let sql = format!("UPDATE se SET v = v + 1 WHERE id = {second}");
    match second_then_later(&mut tx, in_savepoint, &sql, later).await {
        None => {
            tx.commit().await.expect("winner's commit");
            None
        }
        Some(mut wrong) => {
            check("commit", tx.commit().await, &mut wrong);
            // The connection goes back outside any transaction.
            if let Err(e) = conn.query("SELECT COUNT(*) FROM se").one::<(i64,)>().await {
                wrong.push(format!("the connection after the Tx: {e}"));
            }
            Some(wrong)
        }
    }
}

async fn server_ended(db: &TestDb) {
    let mut conn = db.conn().await;
    batch(
        &mut conn,
        "CREATE TABLE se (id BIGINT PRIMARY KEY, v BIGINT)",
    )
    .await;
    batch(
        &mut conn,
        "INSERT INTO se (id, v) VALUES (1, 0), (2, 0), (3, 0)",
    )
    .await;
    let mut wrong = Vec::new();
    let mut cases = 0;
    for in_savepoint in [false, true] {
        for later in LATER {
            if in_savepoint && db.kind == Kind::Postgres {
                // Postgres ends only the savepoint's subtransaction on a deadlock inside it
                // (rolling the savepoint back recovers): the whole transaction is not ended.
                continue;
            }
            if db.kind == Kind::Turso {
                // Turso has no RAISE(ROLLBACK) and no deadlocks: it never ends a transaction by
                // itself this way, so there is nothing to observe.
                continue;
            }
            cases += 1;
            let what = format!("{later:?} (in a savepoint: {in_savepoint})");
            let before: Vec<(i64, i64)> = conn
                .query("SELECT id, v FROM se ORDER BY id")
                .all()
                .await
                .expect("before");
            let lost = match db.kind {
                Kind::Postgres | Kind::Mysql => {
                    let b = db.builder().max_size(2);
                    let b = if db.kind == Kind::Postgres {
                        // The default deadlock check waits a second.
                        b.after_connect(|c| {
                            Box::pin(async move {
                                c.execute_batch("SET deadlock_timeout = '100ms'").await
                            })
                        })
                    } else {
                        b
                    };
                    let pool = b.build().await.expect("pool");
                    let barrier = Arc::new(tokio::sync::Barrier::new(2));
                    let a = tokio::spawn(side(
                        pool.clone(),
                        1,
                        2,
                        in_savepoint,
                        later,
                        Arc::clone(&barrier),
                        Duration::ZERO,
                    ));
                    let b = tokio::spawn(side(
                        pool.clone(),
                        2,
                        1,
                        in_savepoint,
                        later,
                        barrier,
                        Duration::from_millis(150),
                    ));
                    let (a, b) = (a.await.expect("side a"), b.await.expect("side b"));
                    match (a, b) {
                        (Some(w), None) | (None, Some(w)) => w,
                        (None, None) => vec!["no deadlock happened".to_owned()],
                        (Some(x), Some(y)) => x.into_iter().chain(y).collect(),
                    }
                }
                Kind::Sqlite | Kind::Turso => {
                    batch(
                        &mut conn,
                        "CREATE TRIGGER IF NOT EXISTS se_end BEFORE UPDATE ON se WHEN NEW.v > 1000 \
                         BEGIN SELECT RAISE(ROLLBACK, 'ended by the engine'); END",
                    )
                    .await;
                    let mut tx = conn.begin().await.expect("begin");
                    tx.query("UPDATE se SET v = v + 1 WHERE id = 1")
                        .dml()
                        .await
                        .expect("first");
                    match second_then_later(
                        &mut tx,
                        in_savepoint,
                        "UPDATE se SET v = 5000 WHERE id = 2",
                        later,
                    )
                    .await
                    {
                        None => {
                            let _ = tx.rollback().await;
                            vec!["the trigger did not end the transaction".to_owned()]
                        }
                        Some(mut wrong) => {
                            check("commit", tx.commit().await, &mut wrong);
                            wrong
                        }
                    }
                }
            };
            for w in lost {
                wrong.push(format!("{what}: {w}"));
            }
            // The loser's work is gone (the winner's is committed on the server engines).
            let after: Vec<(i64, i64)> = conn
                .query("SELECT id, v FROM se ORDER BY id")
                .all()
                .await
                .expect("after");
            let changed: i64 = before.iter().zip(&after).map(|(b, a)| a.1 - b.1).sum();
            let expected = if matches!(db.kind, Kind::Postgres | Kind::Mysql) {
                2
            } else {
                0
            };
            if changed != expected {
                wrong.push(format!("{what}: the table changed by {changed}, expected {expected} (the winner's two updates only)"));
            }
        }
    }
    println!(
        "server_ended backend={} cases={cases} wrong={}",
        db.kind.name(),
        wrong.len()
    );
    assert!(
        wrong.is_empty(),
        "[{}] {} wrong answer(s) after the engine ended a transaction:\n  {}",
        db.kind.name(),
        wrong.len(),
        wrong.join("\n  ")
    );
}

backend_tests! {
    async fn a_transaction_the_engine_ended_stays_ended(db) {
        server_ended(&db).await;
    }
}
