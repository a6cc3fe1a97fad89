//! A PostgreSQL connection being opened, as the pool's `after_connect` hook drives it.

use std::sync::Arc;

use futures_util::TryStreamExt;
use tokio_postgres::error::SqlState;

use super::error::map_err;
use super::params::PgParam;
use super::rows::{collect, columns_of};
use crate::error::Result;
use crate::results::ResultSet;
use crate::translation::{PlaceholderStyle, translate_placeholders};
use crate::value::RowValues;

/// A Postgres connection being opened (pooled, a reader's or a `Listener`'s), as the pool's
/// `after_connect` hook drives it: straight on the client, with statements prepared for the
/// call and closed after it (the connection has no statement cache yet).
pub(crate) struct PgSetup<'a>(pub(crate) &'a tokio_postgres::Client);

impl PgSetup<'_> {
    /// Runs `hook` on the connection (see `setup.rs`).
    pub(crate) async fn run(mut self, hook: &crate::setup::AfterConnect) -> Result<()> {
        hook.set_up(&mut self).await.map(drop)
    }

    async fn prepared(&self, sql: &str) -> Result<tokio_postgres::Statement> {
        crate::sql::reject_nul(sql)?;
        let sql = translate_placeholders(sql, PlaceholderStyle::Postgres);
        self.0.prepare(&sql).await.map_err(map_err)
    }
}

impl crate::setup::Setup for PgSetup<'_> {
    fn execute_batch<'a>(&'a mut self, sql: &'a str) -> crate::setup::BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            crate::sql::reject_nul(sql)?;
            self.0.batch_execute(sql).await.map_err(map_err)
        })
    }

    fn dml<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [RowValues],
    ) -> crate::setup::BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let st = self.prepared(sql).await?;
            self.0
                .execute_raw(&st, params.iter().map(PgParam))
                .await
                .map_err(map_err)
        })
    }

    fn select<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [RowValues],
    ) -> crate::setup::BoxFuture<'a, Result<ResultSet>> {
        Box::pin(async move {
            let st = self.prepared(sql).await?;
            let rows: Vec<tokio_postgres::Row> = self
                .0
                .query_raw(&st, params.iter().map(PgParam))
                .await
                .map_err(map_err)?
                .try_collect()
                .await
                .map_err(map_err)?;
            collect(&rows, &Arc::new(columns_of(&st)))
        })
    }

    /// A `SAVEPOINT` is refused outside a transaction (with `25P01`): the probe.
    fn in_transaction(&mut self) -> crate::setup::BoxFuture<'_, Result<bool>> {
        Box::pin(async move {
            match self.0.simple_query("SAVEPOINT sqlmw_after_connect").await {
                Err(e) if e.code() == Some(&SqlState::NO_ACTIVE_SQL_TRANSACTION) => Ok(false),
                Err(e) => Err(map_err(e)),
                Ok(_) => Ok(true),
            }
        })
    }

    /// The hook ran outside the statement cache: nothing to skip.
    fn skip_stats(&mut self) {}
}
