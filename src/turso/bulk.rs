//! Turso bulk loading: multi-row `INSERT … VALUES (…), (…)` statements from the connection's
//! statement cache, inside one transaction. Turso's API takes owned values, so each value is
//! converted once, straight into the statement's parameter list.

use std::sync::Arc;

use turso::Value;

use super::conn::TursoConn;
use super::error::map_err;
use super::params::to_value;
use super::stmt::TursoStmt;
use crate::contract::Wing;
use crate::error::Result;
use crate::sql::ident::BulkTarget;
use crate::translation::TranslationMode;
use crate::value::RowValues;

use crate::sqlite_family::bulk::rows_per_statement;

impl TursoConn {
    /// [`Wing::bulk_insert`] on Turso.
    pub(super) async fn bulk_load<I, R>(
        &mut self,
        target: &BulkTarget,
        rows: I,
        in_tx: bool,
        deadline: Option<std::time::Instant>,
    ) -> Result<u64>
    where
        I: Iterator<Item = R> + Send,
        R: AsRef<[RowValues]> + Send + Sync,
    {
        crate::deadline::check(deadline)?;
        if in_tx {
            // Inside the caller's transaction: a failure aborts it (the hall's rule).
            return self.load(target, rows, deadline).await;
        }
        // In a transaction of its own, begun and committed as `Tx` does. If this future is
        // dropped part-way, the hall's `recover` (or the return to the pool) rolls it back:
        // nothing of the load stays.
        self.begin(None).await?;
        match self.load(target, rows, deadline).await {
            Ok(n) => self.commit(None).await.map(|()| n),
            Err(e) => {
                self.rollback_if_open().await;
                Err(e)
            }
        }
    }

    async fn load<I, R>(
        &mut self,
        target: &BulkTarget,
        rows: I,
        deadline: Option<std::time::Instant>,
    ) -> Result<u64>
    where
        I: Iterator<Item = R> + Send,
        R: AsRef<[RowValues]> + Send + Sync,
    {
        let width = target.width();
        let per = rows_per_statement(width);
        let d = super::dialect::DIALECT;
        let full = self
            .prepare(&target.insert_sql(d, per), TranslationMode::Off, None)
            .await?;
        let mut values: Vec<Value> = Vec::with_capacity(per * width);
        let mut pending: usize = 0;
        let mut loaded: u64 = 0;
        for row in rows {
            let row = row.as_ref();
            if row.len() != width {
                return Err(target.wrong_width(loaded + pending as u64 + 1, row.len()));
            }
            for (k, v) in row.iter().enumerate() {
                values.push(to_value(k, v)?);
            }
            pending += 1;
            if pending == per {
                let full_set = std::mem::replace(&mut values, Vec::with_capacity(per * width));
                self.run_insert(&full, full_set).await?;
                loaded += per as u64;
                pending = 0;
                // A write is never cut short part-way; the limit is kept between statements.
                crate::deadline::check(deadline)?;
                tokio::task::coop::consume_budget().await;
            }
        }
        if pending > 0 {
            let one = self
                .prepare(&target.insert_sql(d, 1), TranslationMode::Off, None)
                .await?;
            let mut rest = values.into_iter();
            for _ in 0..pending {
                let row: Vec<Value> = rest.by_ref().take(width).collect();
                self.run_insert(&one, row).await?;
            }
            loaded += pending as u64;
        }
        Ok(loaded)
    }

    /// Runs one insert with its values (as `dml` does: a statement left mid-way by a dropped
    /// future is reset before the connection's next statement).
    async fn run_insert(&mut self, s: &Arc<TursoStmt>, values: Vec<Value>) -> Result<()> {
        self.in_flight = true;
        let mut st = s.stmt.clone();
        let r = st.execute(values).await.map(drop).map_err(map_err);
        self.finish(&st, r)
    }
}
