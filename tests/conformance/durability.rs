//! An acknowledged write is durable: outside a `Tx`, `Ok` from `dml()` (through a query and
//! through a prepared statement), `execute_batch`, `bulk_insert`, `pipeline()` and a
//! `select()` of a writing statement means the write is committed and visible to another
//! connection at once, and stays so after the connection goes back to the pool. That holds
//! whatever a borrower did to the session's transaction settings before (MySQL:
//! `SET autocommit = 0`, `completion_type = CHAIN`, a transaction left open by raw SQL) and
//! whatever an `after_connect` hook did; and no borrower receives a connection inside a
//! transaction that someone else opened.
//!
//! A setting the middleware cannot honour may be refused (`TransactionState`), but it may
//! never make an `Ok` write disappear.
//!
//! Prints `durability backend=X sessions=S writes=W visible=V refused=R`.

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, Logical, TestDb};
use crate::helpers::*;

/// What the borrower before the writer did to the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Before {
    Nothing,
    /// A previous borrower opened a transaction with raw SQL and returned the connection.
    LeftOpen,
    /// MySQL: the writer itself turned autocommit off first.
    AutocommitOff,
    /// MySQL: the writer turned autocommit off in a script.
    AutocommitOffScript,
    /// MySQL: the writer made `COMMIT` chain a new transaction, and committed a `Tx`.
    ChainedCommit,
    /// MySQL: a previous borrower turned autocommit off and returned the connection.
    LeftAutocommitOff,
}

fn sessions(kind: Kind) -> Vec<Before> {
    let mut v = vec![Before::Nothing, Before::LeftOpen];
    if kind == Kind::Mysql {
        v.extend([
            Before::AutocommitOff,
            Before::AutocommitOffScript,
            Before::ChainedCommit,
            Before::LeftAutocommitOff,
        ]);
    }
    v
}

/// The write paths.
#[derive(Debug, Clone, Copy)]
enum Path {
    QueryDml,
    PreparedDml,
    ExecuteBatch,
    BulkInsert,
    Pipeline,
    SelectReturning,
}

const PATHS: [Path; 6] = [
    Path::QueryDml,
    Path::PreparedDml,
    Path::ExecuteBatch,
    Path::BulkInsert,
    Path::Pipeline,
    Path::SelectReturning,
];

/// Writes row `id` (and `id + 1` for the paths that write two) through `path`.
async fn write(
    db: &TestDb,
    conn: &mut Conn,
    path: Path,
    id: i64,
) -> Result<Vec<i64>, SqlMiddlewareDbError> {
    let ins = "INSERT INTO dur (id, v) VALUES ($1, $2)";
    let p = |i: i64| vec![RowValues::Int(i), RowValues::Text(format!("v{i}"))];
    match path {
        Path::QueryDml => conn.query(ins).params(&p(id)).dml().await.map(|_| vec![id]),
        Path::PreparedDml => {
            let mut s = conn.prepare(ins).await?;
            s.dml(&p(id)).await.map(|_| vec![id])
        }
        Path::ExecuteBatch => conn
            .execute_batch(&format!(
                "INSERT INTO dur (id, v) VALUES ({id}, 'a'); INSERT INTO dur (id, v) VALUES ({}, 'b')",
                id + 1
            ))
            .await
            .map(|()| vec![id, id + 1]),
        Path::BulkInsert => conn
            .bulk_insert("dur", &["id", "v"], [p(id), p(id + 1)])
            .await
            .map(|_| vec![id, id + 1]),
        Path::Pipeline => {
            let (a, b) = (p(id), p(id + 1));
            conn.pipeline(ins, &[&a, &b]).await.map(|_| vec![id, id + 1])
        }
        Path::SelectReturning => {
            if db.kind == Kind::Mysql && !db.is_mariadb().await {
                // MySQL has no `INSERT … RETURNING`: a plain INSERT through `select()`.
                conn.query(ins).params(&p(id)).select().await.map(|_| vec![id])
            } else {
                conn.query("INSERT INTO dur (id, v) VALUES ($1, $2) RETURNING id")
                    .params(&p(id))
                    .select()
                    .await
                    .map(|_| vec![id])
            }
        }
    }
}

/// Sets the session up as `before` says, on `conn` (the writer's own checkout). `Err` when the
/// middleware refused the setting.
async fn prepare_session(conn: &mut Conn, before: Before) -> Result<(), SqlMiddlewareDbError> {
    match before {
        Before::Nothing | Before::LeftOpen | Before::LeftAutocommitOff => Ok(()),
        Before::AutocommitOff => conn.query("SET autocommit = 0").dml().await.map(drop),
        Before::AutocommitOffScript => {
            conn.execute_batch("SET @x = 1; SET SESSION autocommit = OFF")
                .await
        }
        Before::ChainedCommit => {
            conn.query("SET completion_type = 'CHAIN'").dml().await?;
            let mut tx = conn.begin().await?;
            tx.query("SELECT 1").select().await?;
            tx.commit().await
        }
    }
}

/// What a previous borrower leaves on the pool's only connection.
async fn previous_borrower(db: &TestDb, pool: &ConfigAndPool, before: Before) {
    let mut c = pool.get_connection().await.expect("checkout");
    match before {
        Before::LeftOpen => {
            c.execute_batch(db.sql().begin).await.expect("raw begin");
            c.query("INSERT INTO dur (id, v) VALUES ($1, 'left open')")
                .params(&[RowValues::Int(-1)])
                .dml()
                .await
                .expect("write in the open transaction");
        }
        Before::LeftAutocommitOff => {
            if let Ok(()) = c.execute_batch("SET autocommit = 0").await {
                let _ = c
                    .query("INSERT INTO dur (id, v) VALUES ($1, 'autocommit off')")
                    .params(&[RowValues::Int(-2)])
                    .dml()
                    .await;
            }
        }
        _ => {}
    }
}

async fn visible(observer: &ConfigAndPool, ids: &[i64]) -> usize {
    let mut c = observer.get_connection().await.expect("observer checkout");
    let mut n = 0;
    for id in ids {
        let r: Option<(i64,)> = c
            .query("SELECT id FROM dur WHERE id = $1")
            .params(&[RowValues::Int(*id)])
            .optional()
            .await
            .expect("observer read");
        n += usize::from(r.is_some());
    }
    n
}

async fn acknowledged_writes(db: &TestDb) {
    create_table(db, &mut db.conn().await, "dur", &[("v", Logical::Text)]).await;
    let observer = db
        .builder()
        .max_size(1)
        .build()
        .await
        .expect("observer pool");
    let mut failures = Vec::new();
    let (mut writes, mut seen, mut refused, mut n_sessions) = (0usize, 0usize, 0usize, 0usize);
    let mut id = 0i64;
    for before in sessions(db.kind) {
        n_sessions += 1;
        // A pool of one connection: the writer gets the connection the previous borrower had.
        let pool = db.builder().max_size(1).build().await.expect("pool");
        for path in PATHS {
            previous_borrower(db, &pool, before).await;
            let mut conn = pool.get_connection().await.expect("checkout");
            if let Err(e) = prepare_session(&mut conn, before).await {
                refused += 1;
                if e.kind() != ErrorKind::TransactionState {
                    failures.push(format!(
                        "{before:?}: the setting was refused with {:?}: {e}",
                        e.kind()
                    ));
                }
            }
            id += 10;
            let what = format!("{before:?} / {path:?}");
            match write(db, &mut conn, path, id).await {
                Ok(ids) => {
                    writes += ids.len();
                    let now = visible(&observer, &ids).await;
                    if now != ids.len() {
                        failures.push(format!(
                            "{what}: Ok, but only {now} of {} row(s) visible to another connection",
                            ids.len()
                        ));
                    }
                    seen += now;
                    // A second write on the same checkout, then the connection goes back.
                    let again = id + 5;
                    match conn
                        .query("INSERT INTO dur (id, v) VALUES ($1, 'again')")
                        .params(&[RowValues::Int(again)])
                        .dml()
                        .await
                    {
                        Ok(_) => {
                            if visible(&observer, &[again]).await != 1 {
                                failures.push(format!("{what}: a second Ok write is not visible"));
                            }
                        }
                        Err(e) => failures.push(format!("{what}: the second write failed: {e}")),
                    }
                    drop(conn);
                    let after = visible(&observer, &ids).await;
                    if after != ids.len() {
                        failures.push(format!(
                            "{what}: {after} of {} row(s) left after the connection went back",
                            ids.len()
                        ));
                    }
                    // The next borrower: its own write is committed too.
                    let mut next = pool.get_connection().await.expect("next checkout");
                    let nid = id + 7;
                    match next
                        .query("INSERT INTO dur (id, v) VALUES ($1, 'next')")
                        .params(&[RowValues::Int(nid)])
                        .dml()
                        .await
                    {
                        Ok(_) => {
                            if visible(&observer, &[nid]).await != 1 {
                                failures.push(format!(
                                    "{what}: the next borrower's Ok write is not visible"
                                ));
                            }
                        }
                        Err(e) => {
                            failures.push(format!("{what}: the next borrower's write failed: {e}"))
                        }
                    }
                    drop(next);
                }
                Err(e) => {
                    refused += 1;
                    if e.kind() != ErrorKind::TransactionState {
                        failures.push(format!("{what}: the write failed with {:?}: {e}", e.kind()));
                    }
                }
            }
            // Rows a previous borrower wrote in a transaction it never committed stay unwritten.
            if visible(&observer, &[-1]).await != 0 {
                failures.push(format!(
                    "{what}: a previous borrower's uncommitted write became visible"
                ));
            }
        }
    }
    println!(
        "durability backend={} sessions={n_sessions} writes={writes} visible={seen} refused={refused}",
        db.kind.name()
    );
    assert!(
        failures.is_empty(),
        "[{}] {} failure(s):\n  {}",
        db.kind.name(),
        failures.len(),
        failures.join("\n  ")
    );
}

/// A hook that turns autocommit off (MySQL) or leaves the session as the engine has it: the
/// pool's writes are still committed, or the pool refuses the connection.
async fn hook_settings(db: &TestDb) {
    create_table(db, &mut db.conn().await, "dur", &[("v", Logical::Text)]).await;
    let script = match db.kind {
        Kind::Mysql => "SET autocommit = 0",
        Kind::Postgres => "SET default_transaction_isolation = 'serializable'",
        Kind::Sqlite | Kind::Turso => "PRAGMA cache_size = 100",
    };
    let pool = db
        .builder()
        .max_size(1)
        .after_connect(move |c| Box::pin(async move { c.execute_batch(script).await }))
        .build()
        .await
        .expect("pool");
    let observer = db.builder().max_size(1).build().await.expect("observer");
    match pool.get_connection().await {
        Err(e) => assert_eq!(
            e.kind(),
            ErrorKind::TransactionState,
            "[{}] a hook's `{script}` may be refused, with TransactionState: {e}",
            db.kind.name()
        ),
        Ok(mut c) => {
            for id in [1_i64, 2, 3] {
                c.query("INSERT INTO dur (id, v) VALUES ($1, 'h')")
                    .params(&[RowValues::Int(id)])
                    .dml()
                    .await
                    .unwrap_or_else(|e| panic!("[{}] write after the hook: {e}", db.kind.name()));
                assert_eq!(
                    visible(&observer, &[id]).await,
                    1,
                    "[{}] an Ok write after the hook's `{script}` is not visible to another connection",
                    db.kind.name()
                );
            }
        }
    }
}

backend_tests! {
    async fn acknowledged_writes_are_committed_and_visible(db) {
        acknowledged_writes(&db).await;
    }

    async fn a_hooks_settings_never_hide_an_acknowledged_write(db) {
        hook_settings(&db).await;
    }
}
