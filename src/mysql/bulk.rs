//! MySQL bulk loading: multi-row `INSERT … VALUES (?, …), (…)` statements from the connection's
//! statement cache, inside one transaction (the caller's, or one of its own). `LOAD DATA LOCAL
//! INFILE` is not used: it needs `local_infile` enabled on the server, a setting that also lets
//! a hostile server read client files.

use mysql_async::Value;

use super::conn::MyConnection;
use super::exec::count_rows;
use super::params::to_value;
use crate::error::Result;
use crate::sql::ident::BulkTarget;
use crate::translation::TranslationMode;
use crate::value::RowValues;

/// The most rows in one `INSERT`: MySQL takes at most 65,535 placeholders per statement (and
/// `load` also keeps each statement's values under half the server's `max_allowed_packet`).
fn rows_per_statement(width: usize) -> usize {
    (65_535 / width.max(1)).clamp(1, 1000)
}

impl MyConnection {
    /// [`crate::contract::Wing::bulk_insert`] on MySQL (the limit is applied by the caller).
    pub(super) async fn bulk_load<I, R>(
        &mut self,
        target: &BulkTarget,
        rows: I,
        in_tx: bool,
    ) -> Result<u64>
    where
        I: Iterator<Item = R> + Send,
        R: AsRef<[RowValues]> + Send + Sync,
    {
        if in_tx {
            // Inside the caller's transaction: a failure aborts it (the hall's rule).
            return self.load(target, rows).await;
        }
        self.simple("START TRANSACTION").await?;
        // Inside a transaction of its own: each INSERT is checked as one of a transaction.
        self.in_tx = true;
        let r = self.load(target, rows).await;
        self.in_tx = false;
        match r {
            Ok(n) => self.simple("COMMIT").await.map(|()| n),
            Err(e) => {
                let _ = self.simple("ROLLBACK").await;
                Err(e)
            }
        }
    }

    async fn load<I, R>(&mut self, target: &BulkTarget, rows: I) -> Result<u64>
    where
        I: Iterator<Item = R> + Send,
        R: AsRef<[RowValues]> + Send + Sync,
    {
        let width = target.width();
        let per = rows_per_statement(width);
        // An `INSERT` also stays well under the server's packet limit.
        let max_bytes = self.client()?.max_packet / 2;
        let utc = self.client()?.facts.utc;
        let mut values: Vec<Value> = Vec::with_capacity(per * width);
        let mut pending = 0usize;
        let mut bytes = 0u64;
        let mut loaded = 0u64;
        for row in rows {
            let row = row.as_ref();
            if row.len() != width {
                return Err(target.wrong_width(loaded + pending as u64 + 1, row.len()));
            }
            let mut row_bytes = 0u64;
            for (k, v) in row.iter().enumerate() {
                let v = to_value(k, v, utc)?;
                if let Value::Bytes(b) = &v {
                    row_bytes += b.len() as u64;
                }
                values.push(v);
            }
            if pending > 0 && bytes + row_bytes > max_bytes {
                // This row goes into the next statement.
                let tail = values.split_off(values.len() - width);
                let batch = std::mem::replace(&mut values, tail);
                self.insert(target, pending, batch).await?;
                loaded += pending as u64;
                pending = 0;
                bytes = 0;
            }
            bytes += row_bytes;
            pending += 1;
            if pending == per {
                let batch = std::mem::replace(&mut values, Vec::with_capacity(per * width));
                self.insert(target, per, batch).await?;
                loaded += per as u64;
                pending = 0;
                bytes = 0;
            }
        }
        if pending > 0 {
            self.insert(target, pending, values).await?;
            loaded += pending as u64;
        }
        Ok(loaded)
    }

    /// Runs one `INSERT` of `rows` rows.
    async fn insert(&mut self, target: &BulkTarget, rows: usize, values: Vec<Value>) -> Result<()> {
        let s = self
            .prepare_within(
                &target.insert_sql(super::dialect::DIALECT, rows),
                TranslationMode::Off,
            )
            .await?;
        super::exec::check_size(self.client()?, &values)?;
        self.in_flight = true;
        let c = self.client()?;
        let r = count_rows(c, &s, values).await.map(drop);
        self.finish(s.fx, r).await
    }
}
