//! Statement timeouts: a per-call `.timeout(..)`, a prepared statement's `timeout(..)`, the
//! pool's `statement_timeout` and a checkout's `set_statement_timeout`, on every API path. A
//! call past its limit fails with `Timeout` long before its statement would have ended, and
//! the connection is clean for the next call; inside a transaction the timeout aborts it.
//!
//! Turso cannot interrupt a statement mid-step: it stops a read between rows, and never cuts a
//! write short (TURSO DIFFERS BY DESIGN), so its slow statements here produce rows.

use std::time::{Duration, Instant};

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, Logical, TestDb, expect_kind};
use crate::helpers::*;

/// About a hundred million rows: minutes of work on every engine. `tag` names the test, so
/// [`end_abandoned`] finds its statements.
///
/// MySQL stops a recursive CTE after 1000 rounds (see `allow_deep_recursion`), so there the
/// rows are the cross join of nine ten-row tables: a billion rows, about two minutes of work.
fn slow_rows(kind: Kind, tag: &str) -> String {
    match kind {
        Kind::Mysql => format!(
            "/* timeout test {tag} */ {MYSQL_DIGITS} \
             SELECT a.x + 10 * b.x + 100 * c.x AS x FROM {MYSQL_NINE_JOINS}"
        ),
        Kind::Sqlite | Kind::Postgres | Kind::Turso => format!(
            "/* timeout test {tag} */ WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000000) SELECT x FROM c"
        ),
    }
}

/// The same work in one aggregate step (Turso cannot stop it; SQLite, Postgres and MySQL can).
fn slow_count(kind: Kind, tag: &str) -> String {
    match kind {
        Kind::Mysql => format!(
            "/* timeout test {tag} */ {MYSQL_DIGITS} SELECT count(*) FROM {MYSQL_NINE_JOINS}"
        ),
        Kind::Sqlite | Kind::Postgres | Kind::Turso => format!(
            "/* timeout test {tag} */ WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000000) SELECT count(*) FROM c"
        ),
    }
}

/// A ten-row table of the digits, for [`slow_rows`] on MySQL.
const MYSQL_DIGITS: &str = "WITH d(x) AS (SELECT 0 UNION ALL SELECT 1 UNION ALL SELECT 2 \
     UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 \
     UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)";

/// Nine copies of the digits, joined: 10^9 rows.
const MYSQL_NINE_JOINS: &str = "d a, d b, d c, d e, d f, d g, d h, d i, d j";

/// `$1 + 1` as a 64-bit integer, as `kind` casts.
fn plus_one_sql(kind: Kind) -> String {
    format!("SELECT {} + 1", kind.sql().cast_int("$1"))
}

/// Postgres in the unnamed (pooler) mode sends no cancel request: a statement past its limit
/// is abandoned with its connection and runs on until the server next writes to that closed
/// connection (see the README). Ends the ones this test left, so they do not hold the server.
async fn end_abandoned(db: &TestDb, tag: &str) {
    #[cfg(feature = "postgres")]
    if db.kind == Kind::Postgres {
        let c = crate::common::pg::raw_client(&crate::common::pg::base_url()).await;
        c.batch_execute(&format!(
            "SELECT pg_cancel_backend(pid) FROM pg_stat_activity \
             WHERE pid <> pg_backend_pid() AND query LIKE '/* timeout test {tag} */%'"
        ))
        .await
        .unwrap();
    }
    // MySQL's limits stop the server's work (`KILL QUERY`); a statement that outlived its
    // call anyway would go on for minutes, so it is ended here (its test has failed by then:
    // the next call on its connection would have waited for it).
    #[cfg(feature = "mysql")]
    if db.kind == Kind::Mysql {
        use mysql_async::prelude::Queryable;
        let mut c = crate::common::mysql::raw_conn(&crate::common::mysql::base_url()).await;
        let ids: Vec<u64> = c
            .exec(
                "SELECT id FROM information_schema.processlist \
                 WHERE id <> CONNECTION_ID() AND info LIKE ?",
                (format!("/* timeout test {tag} */%"),),
            )
            .await
            .unwrap();
        for id in ids {
            let _ = c.query_drop(format!("KILL QUERY {id}")).await;
        }
        let _ = c.disconnect().await;
    }
    let _ = (db, tag);
}
/// The limit the tests set.
const LIMIT: Duration = Duration::from_millis(100);
/// A stopped call must end within this (the slow statements run for minutes).
const BOUND: Duration = Duration::from_secs(15);

/// Checks that `r` is a `Timeout` that came soon after the limit.
fn timed_out<T: std::fmt::Debug>(what: &str, started: Instant, r: Result<T, SqlMiddlewareDbError>) {
    let took = started.elapsed();
    expect_kind(what, r, ErrorKind::Timeout);
    assert!(
        took >= LIMIT && took < BOUND,
        "{what}: stopped after {took:?} (limit {LIMIT:?})"
    );
}

/// The connection answers correctly, several times (a late cancel request would fail one).
/// Each call has a generous limit of its own: behind a transaction-mode pooler, a statement
/// the unnamed mode abandoned keeps its server connection busy until it ends, so the next call
/// may wait for another one longer than the tests' short limit.
async fn still_fine(kind: Kind, what: &str, conn: &mut Conn) {
    for i in 0..20_i64 {
        let (n,): (i64,) = conn
            .query(&plus_one_sql(kind))
            .params(&[RowValues::Int(i)])
            .timeout(Duration::from_secs(30))
            .one()
            .await
            .unwrap_or_else(|e| panic!("{what}: the next call failed: {e:?}"));
        assert_eq!(n, i + 1, "{what}");
    }
    // Outside any transaction: a new one can begin.
    let tx = conn
        .begin()
        .await
        .unwrap_or_else(|e| panic!("{what}: begin after the timeout: {e:?}"));
    tx.rollback().await.unwrap();
}

/// Every terminal of the query builder and of a prepared statement stops at its own limit.
async fn t_per_call_timeout_stops_every_terminal(db: &TestDb) {
    let k = db.kind.name();
    let (rows, count) = (
        slow_rows(db.kind, "per call"),
        slow_count(db.kind, "per call"),
    );
    let mut conn = db.conn().await;

    let t = Instant::now();
    let r = conn.query(&rows).timeout(LIMIT).select().await;
    timed_out(&format!("[{k}] select"), t, r.map(|rs| rs.len()));
    still_fine(db.kind, &format!("[{k}] after select"), &mut conn).await;

    let t = Instant::now();
    let r = conn.query(&rows).timeout(LIMIT).all::<(i64,)>().await;
    timed_out(&format!("[{k}] all"), t, r.map(|v| v.len()));
    still_fine(db.kind, &format!("[{k}] after all"), &mut conn).await;

    if db.kind != Kind::Turso {
        let t = Instant::now();
        let r = conn.query(&count).timeout(LIMIT).one::<(i64,)>().await;
        timed_out(&format!("[{k}] one"), t, r);
        still_fine(db.kind, &format!("[{k}] after one"), &mut conn).await;

        let t = Instant::now();
        let r = conn.query(&count).timeout(LIMIT).optional::<(i64,)>().await;
        timed_out(&format!("[{k}] optional"), t, r);
        still_fine(db.kind, &format!("[{k}] after optional"), &mut conn).await;
    }

    {
        let mut stmt = conn.prepare(&rows).await.unwrap();
        stmt.timeout(LIMIT);
        let t = Instant::now();
        let r = stmt.all::<(i64,)>(&[]).await;
        timed_out(&format!("[{k}] prepared all"), t, r.map(|v| v.len()));
        let t = Instant::now();
        let r = stmt.select(&[]).await;
        timed_out(&format!("[{k}] prepared select"), t, r.map(|rs| rs.len()));
    }
    still_fine(
        db.kind,
        &format!("[{k}] after the prepared statement"),
        &mut conn,
    )
    .await;

    // A limit that is not reached changes nothing.
    let (n,): (i64,) = conn
        .query("SELECT 41 + 1")
        .timeout(Duration::from_secs(30))
        .one()
        .await
        .unwrap();
    assert_eq!(n, 42, "[{k}]");
    end_abandoned(db, "per call").await;
}

/// A statement that times out inside a transaction aborts it: nothing of it is committed, and
/// the connection is clean afterwards.
async fn t_timeout_in_a_transaction_aborts_it(db: &TestDb) {
    let k = db.kind.name();
    let rows = slow_rows(db.kind, "in a transaction");
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "tmo", &[("v", Logical::Int)]).await;
    let mut tx = conn.begin().await.unwrap();
    tx.query("INSERT INTO tmo (id, v) VALUES (1, 1)")
        .dml()
        .await
        .unwrap();
    let t = Instant::now();
    let r = tx.query(&rows).timeout(LIMIT).all::<(i64,)>().await;
    timed_out(&format!("[{k}] in a transaction"), t, r.map(|v| v.len()));
    expect_kind(
        &format!("[{k}] the next statement of the transaction"),
        tx.query("INSERT INTO tmo (id, v) VALUES (2, 2)")
            .dml()
            .await,
        ErrorKind::TransactionAborted,
    );
    expect_kind(
        &format!("[{k}] commit"),
        tx.commit().await,
        ErrorKind::TransactionAborted,
    );
    assert_eq!(count(&mut conn, "tmo").await, 0, "[{k}] nothing committed");
    still_fine(
        db.kind,
        &format!("[{k}] after the aborted transaction"),
        &mut conn,
    )
    .await;
    // The same with an explicit rollback.
    let mut tx = conn.begin().await.unwrap();
    let r = tx.query(&rows).timeout(LIMIT).select().await;
    expect_kind(
        &format!("[{k}] select in a transaction"),
        r.map(|rs| rs.len()),
        ErrorKind::Timeout,
    );
    tx.rollback().await.unwrap();
    still_fine(db.kind, &format!("[{k}] after the rollback"), &mut conn).await;
    end_abandoned(db, "in a transaction").await;
}

/// The pool's `statement_timeout` bounds every path (query, prepared statement, pipeline,
/// script, raw SQLite work); a checkout can change it, and a call's own limit wins.
async fn t_pool_statement_timeout(db: &TestDb) {
    let k = db.kind.name();
    let (rows, count) = (slow_rows(db.kind, "pool"), slow_count(db.kind, "pool"));
    let pool = db.builder().statement_timeout(LIMIT).build().await.unwrap();
    let mut conn = pool.get_connection().await.unwrap();
    assert_eq!(conn.statement_timeout(), Some(LIMIT), "[{k}]");

    let t = Instant::now();
    let r = conn.query(&rows).all::<(i64,)>().await;
    timed_out(&format!("[{k}] pool limit, query"), t, r.map(|v| v.len()));

    let t = Instant::now();
    let r = conn.pipeline(&rows, &[&[], &[]]).await;
    timed_out(
        &format!("[{k}] pool limit, pipeline"),
        t,
        r.map(|v| v.len()),
    );
    still_fine(db.kind, &format!("[{k}] after the pipeline"), &mut conn).await;

    if db.kind != Kind::Turso {
        let t = Instant::now();
        let r = conn.execute_batch(&format!("{count}; SELECT 1")).await;
        timed_out(&format!("[{k}] pool limit, execute_batch"), t, r);
        still_fine(db.kind, &format!("[{k}] after execute_batch"), &mut conn).await;
    }

    #[cfg(feature = "sqlite")]
    if db.kind == Kind::Sqlite {
        let t = Instant::now();
        let r = conn
            .with_blocking_sqlite(move |c| c.query_row(&count, [], |r| r.get::<_, i64>(0)))
            .await;
        timed_out(&format!("[{k}] pool limit, raw SQLite"), t, r);
        still_fine(db.kind, &format!("[{k}] after raw SQLite"), &mut conn).await;
    }

    // A call's own limit wins over the pool's: a generous one lets a quick call through even
    // when the checkout's limit is tiny.
    conn.set_statement_timeout(Some(Duration::from_nanos(1)));
    let (n,): (i64,) = conn
        .query("SELECT 1")
        .timeout(Duration::from_secs(30))
        .one()
        .await
        .unwrap();
    assert_eq!(n, 1, "[{k}]");
    expect_kind(
        &format!("[{k}] an expired checkout limit"),
        conn.query("SELECT 1").one::<(i64,)>().await,
        ErrorKind::Timeout,
    );
    conn.set_statement_timeout(None);
    assert_eq!(conn.statement_timeout(), None, "[{k}]");
    still_fine(db.kind, &format!("[{k}] without a limit"), &mut conn).await;
    drop(conn);

    // The limit belongs to the checkout: the next one starts with the pool's again.
    let conn = pool.get_connection().await.unwrap();
    assert_eq!(conn.statement_timeout(), Some(LIMIT), "[{k}]");
    end_abandoned(db, "pool").await;
}

backend_tests! {
    async fn per_call_timeout_stops_every_terminal(db) { t_per_call_timeout_stops_every_terminal(&db).await }
    async fn timeout_in_a_transaction_aborts_it(db) { t_timeout_in_a_transaction_aborts_it(&db).await }
    async fn pool_statement_timeout(db) { t_pool_statement_timeout(&db).await }
}
