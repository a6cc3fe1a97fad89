//! Turso: a file database of its own per test (the crate's `TestDatabase`), with the SQLite
//! family's column types and SQL spellings (`super::sqlite`).

use std::future::Future;

use sql_middleware::prelude::*;
use sql_middleware::{DatabaseType, PoolBuilder};

use crate::common::backends::{Logical, TestDb};

use super::{Engine, Kind, Sql};

/// The Turso engine of the suites.
pub struct Turso;

/// A fresh Turso file database: the crate's `TestDatabase`.
pub async fn test_db() -> TestDb {
    TestDb::fresh_file(Kind::Turso, "turso::memory:").await
}

impl Engine for Turso {
    const DATABASE_TYPE: DatabaseType = DatabaseType::Turso;
    const SQL: Sql = super::sqlite::SQL;

    fn ty(l: Logical) -> &'static str {
        super::sqlite::ty(l)
    }

    async fn with_fresh_db<F, Fut>(body: F)
    where
        F: FnOnce(TestDb) -> Fut,
        Fut: Future<Output = ()>,
    {
        body(test_db().await).await;
    }

    fn builder(db: &TestDb) -> PoolBuilder {
        ConfigAndPool::turso(db.path().expect("a Turso test database is a file"))
    }

    fn base_url() -> String {
        "turso::memory:".to_owned()
    }

    fn base_builder() -> PoolBuilder {
        ConfigAndPool::turso_memory()
    }

    /// `is_autocommit()` on the raw connection.
    async fn outside_tx(conn: &mut MiddlewarePoolConnection) -> Result<(), String> {
        let auto = conn
            .turso_connection()
            .await
            .map_err(|e| format!("raw Turso access failed: {e:?}"))?
            .is_autocommit()
            .map_err(|e| format!("is_autocommit failed: {e:?}"))?;
        if !auto {
            return Err("Turso connection is inside a transaction".into());
        }
        Ok(())
    }

    /// None: Turso has no connection-local state the API can show.
    async fn conn_identity(_conn: &mut MiddlewarePoolConnection) -> Option<i64> {
        None
    }
}
