//! PostgreSQL through tokio-postgres: a schema of its own per test on the server `common::pg`
//! finds or starts (a database of its own behind PgBouncer, see `pg::pgbouncer`).

use std::future::Future;

use sql_middleware::prelude::*;
use sql_middleware::{DatabaseType, PoolBuilder};

use crate::common::backends::{Logical, TestDb};
use crate::common::pg;

use super::{Engine, Kind, Placeholder, Sql};

/// The Postgres engine of the suites.
pub struct Postgres;

/// A Postgres pool builder for `url`, in the statement mode `SQL_MIDDLEWARE_PG_STATEMENT_CACHE`
/// names (`named`, the default, or `unnamed`): the whole suite runs in either mode.
pub fn builder(url: &str) -> PoolBuilder {
    let b = ConfigAndPool::postgres(url);
    match std::env::var("SQL_MIDDLEWARE_PG_STATEMENT_CACHE").as_deref() {
        Ok("unnamed") => b.statement_cache(sql_middleware::StatementCache::Unnamed),
        Ok("named") | Ok("") | Err(_) => b,
        Ok(other) => {
            panic!("SQL_MIDDLEWARE_PG_STATEMENT_CACHE must be named or unnamed, not {other}")
        }
    }
}

/// A pool on the schema URL given by [`pg::with_schema`].
pub async fn test_db(url: &str) -> TestDb {
    let db = builder(url)
        .max_size(4)
        .build()
        .await
        .unwrap_or_else(|e| panic!("cannot build the Postgres pool: {e:?}"));
    if std::env::var(pg::PG_TLS_ENV).is_ok_and(|v| v == "1") {
        // The TLS mode must really be TLS: the server's view of the session.
        let mut c = db.get_connection().await.expect("checkout");
        let (ssl,): (bool,) = c
            .query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .one()
            .await
            .expect("pg_stat_ssl");
        assert!(
            ssl,
            "SQL_MIDDLEWARE_PG_TLS=1, but the session is not encrypted"
        );
    }
    TestDb::on_url(db, Kind::Postgres, url)
}

impl Engine for Postgres {
    const DATABASE_TYPE: DatabaseType = DatabaseType::Postgres;

    const SQL: Sql = Sql {
        temp: "TEMP",
        cast_int: "BIGINT",
        quote: '"',
        pipes_concat: true,
        placeholder: Placeholder::Dollar,
        begin: "BEGIN",
    };

    fn ty(l: Logical) -> &'static str {
        match l {
            Logical::Int => "BIGINT",
            Logical::Float => "DOUBLE PRECISION",
            Logical::Text | Logical::KeyText => "TEXT",
            Logical::Bool => "BOOLEAN",
            Logical::Blob => "BYTEA",
            Logical::Timestamp => "TIMESTAMP",
            Logical::TimestampTz => "TIMESTAMPTZ",
            Logical::Date => "DATE",
            Logical::Uuid => "UUID",
            Logical::Numeric => "NUMERIC",
            Logical::Json => "JSONB",
            Logical::Time => "TIME",
            Logical::Interval => "INTERVAL",
            Logical::IntArray => "BIGINT[]",
            Logical::TextArray => "TEXT[]",
        }
    }

    async fn with_fresh_db<F, Fut>(body: F)
    where
        F: FnOnce(TestDb) -> Fut,
        Fut: Future<Output = ()>,
    {
        pg::with_schema(|url| async move { body(test_db(&url).await).await }).await;
    }

    fn builder(db: &TestDb) -> PoolBuilder {
        builder(db.url().expect("a Postgres test database has a URL"))
    }

    fn base_url() -> String {
        pg::base_url()
    }

    fn base_builder() -> PoolBuilder {
        ConfigAndPool::postgres(&pg::base_url())
    }

    /// No transaction id is assigned, two consecutive statements run in two different
    /// transactions (their virtual transaction ids differ: inside an open transaction they
    /// would share one), and the statements succeed (an aborted transaction fails them with
    /// 25P02). This uses the middleware's query API only: raw client access would mark the
    /// connection.
    async fn outside_tx(conn: &mut MiddlewarePoolConnection) -> Result<(), String> {
        const VXID: &str = "SELECT virtualtransaction FROM pg_locks \
             WHERE locktype = 'virtualxid' AND pid = pg_backend_pid() LIMIT 1";
        let a = conn.query(VXID).one::<(String,)>().await;
        let b = conn.query(VXID).one::<(String,)>().await;
        let xid = conn
            .query("SELECT txid_current_if_assigned()::text::int8")
            .one::<(Option<i64>,)>()
            .await;
        match (a, b, xid) {
            (Ok((a,)), Ok((b,)), Ok((None,))) if a != b => Ok(()),
            (Ok((a,)), Ok((b,)), Ok((None,))) => Err(format!(
                "two statements ran in one transaction ({a} == {b}): the connection is inside an open transaction"
            )),
            (_, _, Ok((Some(x),))) => Err(format!(
                "the connection is inside a transaction that holds transaction id {x}"
            )),
            (a, b, x) => Err(format!("idle probes failed: {a:?} / {b:?} / {x:?}")),
        }
    }

    /// The backend pid.
    async fn conn_identity(conn: &mut MiddlewarePoolConnection) -> Option<i64> {
        conn.query("SELECT pg_backend_pid()::int8")
            .one::<(i64,)>()
            .await
            .ok()
            .map(|r| r.0)
    }
}
