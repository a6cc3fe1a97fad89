//! SQLite through rusqlite: a file database (WAL, the default) of its own per test, made by the
//! crate's `TestDatabase`. The column types and SQL spellings here are the SQLite family's: Turso's are
//! the same.

use crate::common::backends::Logical;

use super::{Placeholder, Sql};

/// The SQLite family's column type for `l`.
///
/// SQLite and Turso widen results by the declared type (`BOOLEAN`, `TIMESTAMP`, `UUID`, ...),
/// so these names matter there as much as on Postgres.
pub fn ty(l: Logical) -> &'static str {
    match l {
        Logical::Int => "INTEGER",
        Logical::Float => "REAL",
        Logical::Text | Logical::KeyText => "TEXT",
        Logical::Bool => "BOOLEAN",
        Logical::Blob => "BLOB",
        Logical::Timestamp => "TIMESTAMP",
        Logical::TimestampTz => "TIMESTAMPTZ",
        Logical::Date => "DATE",
        Logical::Uuid => "UUID",
        // SQLite has no exact decimal type: `NUMERIC` has numeric affinity and stores
        // number-like text as INTEGER or REAL (15 significant digits). A declared type
        // containing TEXT keeps the text as written, and its DECIMAL prefix tells the
        // middleware to read it back as `RowValues::Numeric` (see the README).
        Logical::Numeric => "DECIMAL_TEXT",
        Logical::Json => "JSON",
        // Stored as text (see `RowValues`); the declared type reads them back. Turso
        // reserves `T[]` for its own arrays in STRICT tables, so arrays are `ARRAY` here.
        Logical::Time => "TIME",
        Logical::Interval => "INTERVAL",
        Logical::IntArray | Logical::TextArray => "ARRAY",
    }
}

/// The SQLite family's spellings.
pub const SQL: Sql = Sql {
    temp: "TEMP",
    cast_int: "BIGINT",
    quote: '"',
    pipes_concat: true,
    placeholder: Placeholder::QuestionNumbered,
    begin: "BEGIN",
};

#[cfg(feature = "sqlite")]
pub use engine::*;

#[cfg(feature = "sqlite")]
mod engine {
    use std::future::Future;
    use std::sync::atomic::{AtomicI64, Ordering};

    use sql_middleware::prelude::*;
    use sql_middleware::{DatabaseType, PoolBuilder};

    use crate::common::backends::{Logical, TestDb};
    use crate::common::engines::{Engine, Kind, Sql};

    /// The SQLite engine of the suites.
    pub struct Sqlite;

    /// A fresh SQLite file database (WAL, the default): the crate's `TestDatabase`.
    pub async fn test_db() -> TestDb {
        TestDb::fresh_file(Kind::Sqlite, "sqlite::memory:").await
    }

    impl Engine for Sqlite {
        const DATABASE_TYPE: DatabaseType = DatabaseType::Sqlite;
        const SQL: Sql = super::SQL;

        fn ty(l: Logical) -> &'static str {
            super::ty(l)
        }

        async fn with_fresh_db<F, Fut>(body: F)
        where
            F: FnOnce(TestDb) -> Fut,
            Fut: Future<Output = ()>,
        {
            body(test_db().await).await;
        }

        fn builder(db: &TestDb) -> PoolBuilder {
            ConfigAndPool::sqlite(db.path().expect("a SQLite test database is a file"))
        }

        fn base_url() -> String {
            "sqlite::memory:".to_owned()
        }

        fn base_builder() -> PoolBuilder {
            ConfigAndPool::sqlite_memory()
        }

        /// `is_autocommit()` through raw access.
        async fn outside_tx(conn: &mut MiddlewarePoolConnection) -> Result<(), String> {
            let auto = conn
                .with_blocking_sqlite(|c| Ok(c.is_autocommit()))
                .await
                .map_err(|e| format!("raw access for is_autocommit failed: {e:?}"))?;
            if !auto {
                return Err("SQLite connection is inside a transaction".into());
            }
            Ok(())
        }

        /// A mark in the connection's prepared-statement cache, which the pool keeps (it is no
        /// part of the session: a fresh connection's cache differs only in speed). The
        /// statement is run N times when first prepared on a connection, N unique in the
        /// process; its run count then names the connection. (Settings are no mark: the pool
        /// puts every one back, and discards a connection holding temporary objects.)
        async fn conn_identity(conn: &mut MiddlewarePoolConnection) -> Option<i64> {
            static NEXT: AtomicI64 = AtomicI64::new(1);
            conn.with_blocking_sqlite(|raw| {
                use sql_middleware::drivers::rusqlite::StatementStatus;
                let mut st = raw.prepare_cached("SELECT 'sqlmw-connection-identity'")?;
                let runs = i64::from(st.get_status(StatementStatus::Run));
                if runs > 0 {
                    return Ok(runs);
                }
                let v = NEXT.fetch_add(1, Ordering::Relaxed);
                for _ in 0..v {
                    st.query_row([], |_| Ok(()))?;
                }
                Ok(v)
            })
            .await
            .ok()
        }
    }
}
