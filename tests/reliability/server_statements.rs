//! Server resources stay bounded: the statements the crate keeps prepared on a server never
//! exceed its per-connection cache capacity, on every path, over many cycles on one long
//! checkout, counted by what the server says it holds.
//!
//! Each cycle prepares more distinct statements than the cache holds (evictions), and in turn
//! changes the schema (through a script and through a query), uses raw access, fails (a
//! statement the server refuses to prepare, one that fails when it runs), drops a stream after
//! its first row, and runs a statement prepared on another connection. After every cycle the
//! session's own count of prepared statements must be at most the capacity:
//! - Postgres: `pg_prepared_statements` of the session, minus those made with SQL `PREPARE`;
//! - MySQL/MariaDB: the server's `Prepared_stmt_count`, on a server of the test's own (the
//!   count is server-wide), which then holds the test's two connections only.
//!
//! Prints `server_statements backend=X cycles=N capacity=C max_held=M`.

use futures::StreamExt;
use sql_middleware::prelude::*;

use crate::common;

const CAPACITY: usize = 4;
const CYCLES: usize = 40;

/// How many statements the session holds now, as the server counts them.
async fn held(conn: &mut MiddlewarePoolConnection) -> i64 {
    match conn.database_type() {
        #[cfg(feature = "postgres")]
        DatabaseType::Postgres => {
            let c = conn.postgres_client().await.expect("raw");
            let rows = c
                .simple_query("SELECT count(*) FROM pg_prepared_statements WHERE NOT from_sql")
                .await
                .expect("pg_prepared_statements");
            rows.iter()
                .find_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => {
                        r.get(0).map(|s| s.parse::<i64>().expect("count"))
                    }
                    _ => None,
                })
                .expect("a row")
        }
        #[cfg(feature = "mysql")]
        DatabaseType::Mysql => {
            use mysql_async::prelude::Queryable;
            let c = conn.mysql_connection().await.expect("raw");
            let rows: Vec<(String, i64)> = c
                .query("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'")
                .await
                .expect("status");
            rows.first().map_or(0, |(_, v)| *v)
        }
        other => panic!("no server statement count for {other:?}"),
    }
}

async fn cycles(builder: PoolBuilder, backend: &str) {
    let db = builder
        .max_size(2)
        .statement_cache_capacity(CAPACITY)
        .build()
        .await
        .expect("pool");
    let mut other = db.get_connection().await.expect("second checkout");
    let mut conn = db.get_connection().await.expect("checkout");
    conn.execute_batch("CREATE TABLE ss (id BIGINT PRIMARY KEY, v BIGINT)")
        .await
        .expect("table");
    for i in 0..20_i64 {
        conn.query("INSERT INTO ss (id, v) VALUES ($1, $1)")
            .params(&[RowValues::Int(i)])
            .dml()
            .await
            .expect("row");
    }
    // What the two connections hold before the cycles (the other one's statement comes later).
    let base = held(&mut conn).await;
    let mut max_held = 0;
    let mut over = Vec::new();
    for cycle in 0..CYCLES {
        // More distinct statements than the cache holds.
        for k in 0..(CAPACITY + 2) {
            let sql = format!("SELECT v + {k} FROM ss WHERE id = $1");
            let _: Option<(i64,)> = conn
                .query(&sql)
                .params(&[RowValues::Int(k as i64)])
                .optional()
                .await
                .expect("lookup");
        }
        match cycle % 6 {
            0 => conn
                .execute_batch(&format!(
                    "CREATE TABLE ss_{cycle} (a BIGINT); DROP TABLE ss_{cycle}"
                ))
                .await
                .expect("ddl script"),
            1 => {
                conn.query(&format!("CREATE TABLE ss_q{cycle} (a BIGINT)"))
                    .dml()
                    .await
                    .expect("ddl");
                conn.query(&format!("DROP TABLE ss_q{cycle}"))
                    .dml()
                    .await
                    .expect("drop");
            }
            2 => {
                let _ = held(&mut conn).await;
            }
            3 => {
                assert!(conn.query("SELECT nope FROM ss").select().await.is_err());
                assert!(
                    conn.query("INSERT INTO ss (id, v) VALUES ($1, 0)")
                        .params(&[RowValues::Int(1)])
                        .dml()
                        .await
                        .is_err()
                );
            }
            4 => {
                let mut s = conn
                    .query("SELECT id FROM ss ORDER BY id")
                    .stream::<(i64,)>();
                let _ = s.next().await;
            }
            _ => {
                // A statement prepared on the other connection runs here.
                let mut p = other
                    .prepare("SELECT COUNT(*) FROM ss")
                    .await
                    .expect("prepare");
                let _: (i64,) = p.one(&[]).await.expect("run");
                drop(p);
                let _: (i64,) = conn
                    .query("SELECT COUNT(*) FROM ss")
                    .one()
                    .await
                    .expect("same sql");
            }
        }
        let now = held(&mut conn).await - base;
        max_held = max_held.max(now);
        // The other connection holds one statement of its own.
        if now > CAPACITY as i64 + 1 {
            over.push(format!(
                "cycle {cycle} (step {}): {now} statements held",
                cycle % 6
            ));
        }
    }
    println!(
        "server_statements backend={backend} cycles={CYCLES} capacity={CAPACITY} max_held={max_held}"
    );
    assert!(
        over.is_empty(),
        "[{backend}] the server held more statements than the cache capacity {CAPACITY}:\n  {}",
        over.join("\n  ")
    );
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_prepared_statements_stay_within_the_cache() {
    let _group = common::groups::enter("server_statements");
    common::pg::with_schema(|url| async move {
        cycles(ConfigAndPool::postgres(&url), "postgres").await;
    })
    .await;
}

#[cfg(feature = "mysql")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_prepared_statements_stay_within_the_cache() {
    use mysql_async::prelude::Queryable;
    let _group = common::groups::enter("server_statements");
    // A server of the test's own: `Prepared_stmt_count` counts every session's statements.
    let base = tokio::task::spawn_blocking(common::mysql::start_private_server)
        .await
        .expect("start task")
        .unwrap_or_else(|e| panic!("a private MariaDB/MySQL server is needed for this test: {e}"));
    let mut admin = common::mysql::raw_conn(&base).await;
    admin
        .query_drop("CREATE DATABASE ss")
        .await
        .expect("database");
    let _ = admin.disconnect().await;
    let url = common::mysql::url_with_database(&base, "ss");
    cycles(ConfigAndPool::mysql(&url), "mysql").await;
}
