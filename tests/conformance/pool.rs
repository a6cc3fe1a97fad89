//! The pool: checkout timeouts, a connection returned inside a transaction is rolled back,
//! concurrent writers lose nothing, and raw driver access shares the pooled connection.

use std::time::{Duration, Instant};

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, Logical, TestDb, expect_kind};
use crate::helpers::*;

// ---------------------------------------------------------------------------------------------
// pool
// ---------------------------------------------------------------------------------------------

async fn t_pool_timeout(db: &TestDb) {
    let k = db.kind.name();
    let small = db
        .builder()
        .max_size(1)
        .wait_timeout(Duration::from_millis(100))
        .build()
        .await
        .unwrap();
    let mut held = small.get_connection().await.unwrap();
    let start = Instant::now();
    let r = tokio::time::timeout(Duration::from_secs(5), small.get_connection())
        .await
        .unwrap_or_else(|_| panic!("[{k}] get_connection did not time out within 5 s"));
    let waited = start.elapsed();
    expect_kind(&format!("[{k}] exhausted pool"), r, ErrorKind::PoolTimeout);
    assert!(waited < Duration::from_secs(1), "[{k}] waited {waited:?}");
    assert!(
        waited >= Duration::from_millis(80),
        "[{k}] gave up after only {waited:?}"
    );
    // The held connection still works, and once returned the pool hands it out again.
    let (one,): (i64,) = held.query("SELECT 1").one().await.unwrap();
    assert_eq!(one, 1);
    drop(held);
    let mut again = small.get_connection().await.unwrap();
    let (two,): (i64,) = again.query("SELECT 2").one().await.unwrap();
    assert_eq!(two, 2);
    let status = small.status();
    assert_eq!((status.max_size, status.size), (1, 1), "[{k}] {status:?}");
}

/// A connection goes back to the pool outside any transaction: a script that began one and
/// never ended it is rolled back on return, so the idle connection holds no lock and its write
/// is gone. Another connection then writes the same row at once (SQLite and Turso would report
/// `Busy` after the 200 ms busy timeout; Postgres would wait on the row lock forever, MySQL
/// for its lock wait timeout, 50 s by default).
async fn t_return_rolls_back_open_tx(db: &TestDb) {
    let k = db.kind.name();
    let mut builder = db.builder().max_size(2);
    if matches!(db.kind, Kind::Sqlite | Kind::Turso) {
        builder = builder.busy_timeout(Duration::from_millis(200));
    }
    let pool = builder.build().await.unwrap();
    let mut a = pool.get_connection().await.unwrap();
    let mut b = pool.get_connection().await.unwrap();
    batch(
        &mut a,
        "CREATE TABLE ret (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)",
    )
    .await;
    for round in 0..3_i64 {
        batch(
            &mut a,
            &format!("BEGIN; INSERT INTO ret (id, v) VALUES ({round}, 1)"),
        )
        .await;
        drop(a);
        let r = tokio::time::timeout(
            Duration::from_secs(5),
            b.query("INSERT INTO ret (id, v) VALUES ($1, 2)")
                .params(&[round.into()])
                .dml(),
        )
        .await
        .unwrap_or_else(|_| {
            panic!("[{k}] round {round}: the returned connection still holds its lock")
        });
        assert_eq!(
            r.unwrap_or_else(|e| panic!("[{k}] round {round}: write after return failed: {e:?}")),
            1
        );
        a = pool.get_connection().await.unwrap();
    }
    let rows = select(&mut a, "SELECT v FROM ret ORDER BY id", &[]).await;
    let vs: Vec<Option<&RowValues>> = rows.results.iter().map(|r| r.get("v")).collect();
    assert_eq!(
        vs,
        [Some(&RowValues::Int(2)); 3],
        "[{k}] only the second writer's rows exist"
    );
}

/// Several connections writing at once, in autocommit and in transactions: no error, nothing lost.
async fn t_concurrent_writers(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "cw", &[("w", Logical::Int)]).await;
    drop(conn);
    let mut tasks = Vec::new();
    for w in 0..4_i64 {
        let pool = db.db.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = pool.get_connection().await?;
            for i in 0..25 {
                c.query("INSERT INTO cw (id, w) VALUES ($1, $2)")
                    .params(&[(w * 1000 + i).into(), w.into()])
                    .dml()
                    .await?;
            }
            for t in 0..5 {
                let mut tx = c.begin().await?;
                for i in 0..5 {
                    tx.query("INSERT INTO cw (id, w) VALUES ($1, $2)")
                        .params(&[(w * 1000 + 100 + t * 10 + i).into(), w.into()])
                        .dml()
                        .await?;
                }
                tx.commit().await?;
            }
            Ok::<_, SqlMiddlewareDbError>(())
        }));
    }
    for (w, t) in tasks.into_iter().enumerate() {
        t.await
            .unwrap()
            .unwrap_or_else(|e| panic!("[{k}] writer {w}: {e:?}"));
    }
    let mut conn = db.conn().await;
    assert_eq!(
        count(&mut conn, "cw").await,
        200,
        "[{k}] rows written by 4 writers"
    );
}

/// Raw driver access sees the same database and leaves the connection usable.
async fn t_raw_access(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "raw", &[("v", Logical::Text)]).await;
    dml(
        &mut conn,
        "INSERT INTO raw (id, v) VALUES (1, 'middleware')",
        &[],
    )
    .await;
    let seen: String = match db.kind {
        #[cfg(feature = "sqlite")]
        Kind::Sqlite => conn
            .with_blocking_sqlite(|c| {
                c.execute("INSERT INTO raw (id, v) VALUES (2, 'raw')", [])?;
                c.query_row("SELECT v FROM raw WHERE id = 1", [], |r| r.get(0))
            })
            .await
            .unwrap(),
        #[cfg(feature = "postgres")]
        Kind::Postgres => {
            let client = conn.postgres_client().await.unwrap();
            client
                .execute("INSERT INTO raw (id, v) VALUES (2, 'raw')", &[])
                .await
                .unwrap();
            client
                .query_one("SELECT v FROM raw WHERE id = 1", &[])
                .await
                .unwrap()
                .get(0)
        }
        #[cfg(feature = "turso")]
        Kind::Turso => {
            let c = conn.turso_connection().await.unwrap();
            c.execute("INSERT INTO raw (id, v) VALUES (2, 'raw')", ())
                .await
                .unwrap();
            let mut rows = c.query("SELECT v FROM raw WHERE id = 1", ()).await.unwrap();
            let row = rows.next().await.unwrap().expect("one row");
            match row.get_value(0).unwrap() {
                sql_middleware::drivers::turso::Value::Text(t) => t,
                other => panic!("[{k}] raw read gave {other:?}"),
            }
        }
        #[cfg(feature = "mysql")]
        Kind::Mysql => {
            use sql_middleware::drivers::mysql_async::prelude::Queryable;
            let c = conn.mysql_connection().await.unwrap();
            c.query_drop("INSERT INTO raw (id, v) VALUES (2, 'raw')")
                .await
                .unwrap();
            c.query_first::<String, _>("SELECT v FROM raw WHERE id = 1")
                .await
                .unwrap()
                .expect("one row")
        }
        #[allow(unreachable_patterns)]
        other => panic!("no raw access for {other:?} in this build"),
    };
    assert_eq!(seen, "middleware", "[{k}] raw read of a middleware write");
    let (v,): (String,) = conn
        .query("SELECT v FROM raw WHERE id = $1")
        .params(&[2.into()])
        .one()
        .await
        .unwrap();
    assert_eq!(v, "raw", "[{k}] middleware read of a raw write");
    drop(conn);
    let mut other = db.conn().await;
    assert_eq!(
        count(&mut other, "raw").await,
        2,
        "[{k}] from another connection"
    );
}

async fn one_query(db: &ConfigAndPool) {
    let mut c = db.get_connection().await.unwrap();
    let (n,): (i64,) = c.query("SELECT 1").one().await.unwrap();
    assert_eq!(n, 1);
}

/// Connections are retired at `max_lifetime` (the next checkout gets a new one) and after
/// `idle_timeout` (in the background, without a checkout); `min_idle` keeps some open; the
/// status counts all of it.
async fn t_lifecycle(db: &TestDb) {
    let k = db.kind.name();
    let old = db
        .builder()
        .max_size(1)
        .max_lifetime(Duration::from_millis(150))
        .build()
        .await
        .unwrap();
    one_query(&old).await;
    tokio::time::sleep(Duration::from_millis(250)).await;
    one_query(&old).await;
    let st = old.status();
    assert!(
        st.created >= 2 && st.retired_max_lifetime >= 1,
        "[{k}] max_lifetime: {st:?}"
    );

    let idle = db
        .builder()
        .max_size(2)
        .idle_timeout(Duration::from_millis(100))
        .build()
        .await
        .unwrap();
    one_query(&idle).await;
    assert_eq!(idle.status().size, 1, "[{k}]");
    let st = status_until(&idle, |s| s.size == 0).await;
    assert!(
        st.size == 0 && st.retired_idle == 1,
        "[{k}] idle_timeout: {st:?}"
    );

    let warm = db.builder().max_size(4).min_idle(2).build().await.unwrap();
    // `size` counts a connection from the moment its opening starts, and `created` once it is
    // open; the upkeep may still hold the connections it opened (and the idle ones it took out
    // while opening them) for a few scheduler passes. Only idle ones are warm for a checkout.
    let st = status_until(&warm, |s| s.available >= 2 && s.created >= 2).await;
    assert!(
        st.available >= 2 && st.created >= 2,
        "[{k}] min_idle: {st:?}"
    );
    one_query(&warm).await;
    let after = warm.status();
    assert_eq!(
        after.created, st.created,
        "[{k}] the checkout used a warm one (before it: {st:?}; after: {after:?})"
    );
}

backend_tests! {
    async fn pool_timeout(db) { t_pool_timeout(&db).await }
    async fn return_rolls_back_open_tx(db) { t_return_rolls_back_open_tx(&db).await }
    async fn concurrent_writers(db) { t_concurrent_writers(&db).await }
    async fn raw_access(db) { t_raw_access(&db).await }
    async fn lifecycle(db) { t_lifecycle(&db).await }
}
