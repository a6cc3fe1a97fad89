//! MySQL or MariaDB through mysql_async: a database of its own per test on the server
//! `common::mysql` finds or starts.

use std::future::Future;

use sql_middleware::prelude::*;
use sql_middleware::{DatabaseType, PoolBuilder};

use crate::common::backends::{Logical, TestDb};
use crate::common::mysql;

use super::{Engine, Kind, Placeholder, Sql};

/// The MySQL engine of the suites.
pub struct Mysql;

/// A MySQL pool builder for `url`, in the statement mode `SQL_MIDDLEWARE_MYSQL_STATEMENT_CACHE`
/// names (`named`, the default, or `unnamed`): the whole suite runs in either mode.
pub fn builder(url: &str) -> PoolBuilder {
    let b = ConfigAndPool::mysql(url);
    match std::env::var("SQL_MIDDLEWARE_MYSQL_STATEMENT_CACHE").as_deref() {
        Ok("unnamed") => b.statement_cache(sql_middleware::StatementCache::Unnamed),
        Ok("named") | Ok("") | Err(_) => b,
        Ok(other) => {
            panic!("SQL_MIDDLEWARE_MYSQL_STATEMENT_CACHE must be named or unnamed, not {other}")
        }
    }
}

/// A pool on the database URL given by [`mysql::with_database`].
pub async fn test_db(url: &str) -> TestDb {
    let db = builder(url)
        .max_size(4)
        .build()
        .await
        .unwrap_or_else(|e| panic!("cannot build the MySQL pool: {e:?}"));
    TestDb::on_url(db, Kind::Mysql, url)
}

impl Engine for Mysql {
    const DATABASE_TYPE: DatabaseType = DatabaseType::Mysql;

    const SQL: Sql = Sql {
        temp: "TEMPORARY",
        cast_int: "SIGNED",
        quote: '`',
        pipes_concat: false,
        placeholder: Placeholder::Question,
        begin: "START TRANSACTION",
    };

    /// `TEXT` cannot be a key without a prefix length: `KeyText` is `VARCHAR(255)`. `BOOLEAN` is
    /// `TINYINT(1)` and reads back as `Int`. The session time zone is UTC, so `DATETIME(6)`
    /// holds a `TimestampTz` as UTC.
    fn ty(l: Logical) -> &'static str {
        match l {
            Logical::Int => "BIGINT",
            Logical::Float => "DOUBLE",
            Logical::Text => "TEXT",
            Logical::KeyText => "VARCHAR(255)",
            Logical::Bool => "BOOLEAN",
            Logical::Blob => "LONGBLOB",
            Logical::Timestamp => "DATETIME(6)",
            Logical::TimestampTz => "DATETIME(6)",
            Logical::Date => "DATE",
            Logical::Uuid => "CHAR(36)",
            Logical::Numeric => "DECIMAL(38,10)",
            Logical::Json => "JSON",
            Logical::Time => "TIME(6)",
            Logical::Interval => "TIME(6)",
            // MySQL has no arrays: binding one is a `ParameterType` error. The column is text
            // so that tables listing every logical type can still be created.
            Logical::IntArray | Logical::TextArray => "TEXT",
        }
    }

    async fn with_fresh_db<F, Fut>(body: F)
    where
        F: FnOnce(TestDb) -> Fut,
        Fut: Future<Output = ()>,
    {
        mysql::with_database(|url| async move { body(test_db(&url).await).await }).await;
    }

    fn builder(db: &TestDb) -> PoolBuilder {
        builder(db.url().expect("a MySQL test database has a URL"))
    }

    fn base_url() -> String {
        mysql::base_url()
    }

    fn base_builder() -> PoolBuilder {
        ConfigAndPool::mysql(&mysql::base_url())
    }

    /// `@@in_transaction` (MariaDB 10.3+, MySQL 5.7+) is 0.
    async fn outside_tx(conn: &mut MiddlewarePoolConnection) -> Result<(), String> {
        match conn.query("SELECT @@in_transaction").one::<(i64,)>().await {
            Ok((0,)) => Ok(()),
            Ok((n,)) => Err(format!(
                "MySQL connection is inside a transaction (@@in_transaction = {n})"
            )),
            Err(e) => Err(format!("idle probe failed: {e:?}")),
        }
    }

    /// The connection id.
    async fn conn_identity(conn: &mut MiddlewarePoolConnection) -> Option<i64> {
        conn.query("SELECT CONNECTION_ID()")
            .one::<(i64,)>()
            .await
            .ok()
            .map(|r| r.0)
    }
}
