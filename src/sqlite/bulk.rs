//! SQLite bulk loading: multi-row `INSERT … VALUES (…), (…)` statements from rusqlite's
//! statement cache, bound straight from the caller's rows, inside one transaction.
//!
//! The rows go in batches, each one unit of work of the execution model (`offload.rs`). Under
//! the adaptive model a batch is sized from the previous one's time to take about half the
//! inline budget, so a load of any size holds the async thread no longer than one ordinary
//! statement may, and spends tokio's cooperative budget between batches. A slow batch makes
//! the next one smaller; when even one statement's worth of rows runs past the whole budget
//! twice in a row, the rest of the load moves to the blocking pool (as an owned copy of each
//! batch, the only copy ever made).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rusqlite::{Connection, Statement};

use super::config::SqliteExecModel;
use super::conn::SqliteConn;
use super::error::map_err;
use super::offload::Run;
use super::params::SqliteParam;
use crate::contract::Wing;
use crate::error::Result;
use crate::sql::ident::BulkTarget;
use crate::sqlite_family::bulk::rows_per_statement;
use crate::sqlite_family::storable::check_storable;
use crate::sqlite_family::text_form::write_text_form;
use crate::value::RowValues;

/// The largest batch under the adaptive model.
const MAX_BATCH_ROWS: usize = 16_384;
/// The batch under the inline and offload models (one unit of work, or one hop, each).
const FIXED_BATCH_ROWS: usize = 4_096;

/// The two statements of a load: `per` rows at a time, and one row for the rest.
struct Statements {
    full: Box<str>,
    one: Box<str>,
    per: usize,
}

/// Binds `rows` in order. Values stored as text made from the value (timestamps, UUIDs, …)
/// are written into `scratch` and bound from it (SQLite copies bound text), so binding
/// allocates nothing.
fn bind_rows<R: AsRef<[RowValues]>>(
    st: &mut Statement<'_>,
    rows: &[R],
    scratch: &mut String,
) -> Result<()> {
    let mut i = 1;
    for row in rows {
        for (k, v) in row.as_ref().iter().enumerate() {
            check_storable(k, v)?;
            if write_text_form(scratch, v) {
                st.raw_bind_parameter(i, scratch.as_str())
            } else {
                st.raw_bind_parameter(i, SqliteParam(v))
            }
            .map_err(map_err)?;
            i += 1;
        }
    }
    Ok(())
}

/// Inserts `rows` (each of the target's width): full statements, then one row at a time.
fn insert_rows<R: AsRef<[RowValues]>>(
    c: &mut Connection,
    s: &Statements,
    rows: &[R],
) -> Result<()> {
    let mut scratch = String::with_capacity(64);
    let mut chunks = rows.chunks_exact(s.per);
    if chunks.len() > 0 {
        let mut st = c.prepare_cached(&s.full).map_err(map_err)?;
        for chunk in &mut chunks {
            bind_rows(&mut st, chunk, &mut scratch)?;
            st.raw_execute().map_err(map_err)?;
        }
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut st = c.prepare_cached(&s.one).map_err(map_err)?;
        for row in rest.chunks(1) {
            bind_rows(&mut st, row, &mut scratch)?;
            st.raw_execute().map_err(map_err)?;
        }
    }
    Ok(())
}

impl SqliteConn {
    /// [`Wing::bulk_insert`] on SQLite.
    pub(super) async fn bulk_load<I, R>(
        &mut self,
        target: &BulkTarget,
        rows: I,
        in_tx: bool,
        deadline: Option<Instant>,
    ) -> Result<u64>
    where
        I: Iterator<Item = R> + Send,
        R: AsRef<[RowValues]> + Send + Sync,
    {
        let per = rows_per_statement(target.width());
        let d = super::dialect::DIALECT;
        let stmts = Arc::new(Statements {
            full: target.insert_sql(d, per).into(),
            one: target.insert_sql(d, 1).into(),
            per,
        });
        if in_tx {
            // Inside the caller's transaction: a failure aborts it (the hall's rule).
            return self.load(target, &stmts, rows, deadline).await;
        }
        // In a transaction of its own, begun and committed as `Tx` does. If this future is
        // dropped part-way, the hall's `recover` (or the return to the pool) rolls it back:
        // nothing of the load stays.
        self.begin(None).await?;
        match self.load(target, &stmts, rows, deadline).await {
            Ok(n) => self.commit(None).await.map(|()| n),
            Err(e) => {
                self.rollback_if_open();
                Err(e)
            }
        }
    }

    async fn load<I, R>(
        &mut self,
        target: &BulkTarget,
        stmts: &Arc<Statements>,
        mut rows: I,
        deadline: Option<Instant>,
    ) -> Result<u64>
    where
        I: Iterator<Item = R> + Send,
        R: AsRef<[RowValues]> + Send + Sync,
    {
        let per = stmts.per;
        let (mut size, aim) = match self.opts.exec_model {
            SqliteExecModel::Adaptive { inline_budget } => (per * 4, Some(inline_budget / 2)),
            _ => (FIXED_BATCH_ROWS.max(per), None),
        };
        // Set once the smallest batch ran past the whole budget twice in a row: the rest of
        // the load goes to the blocking pool (the statement is genuinely slow, not preempted).
        let offload = AtomicBool::new(aim.is_none());
        let mut strikes = 0;
        let mut batch: Vec<R> = Vec::with_capacity(size);
        let mut loaded: u64 = 0;
        loop {
            batch.clear();
            for row in rows.by_ref().take(size) {
                let got = row.as_ref().len();
                if got != target.width() {
                    return Err(target.wrong_width(loaded + batch.len() as u64 + 1, got));
                }
                batch.push(row);
            }
            if batch.is_empty() {
                return Ok(loaded);
            }
            let started = Instant::now();
            let before = self.exec_mark();
            let (b, s) = (&batch, &**stmts);
            // Under the adaptive model `offload` decides (the batch size keeps each inline run
            // near half the budget); under the others the model does.
            let r = self
                .dispatch(
                    deadline,
                    Run::Write,
                    false,
                    aim.map(|_| &offload),
                    |c| insert_rows(c, s, b),
                    || {
                        let owned: Vec<Vec<RowValues>> =
                            b.iter().map(|r| r.as_ref().to_vec()).collect();
                        let s = Arc::clone(stmts);
                        move |c: &mut Connection| insert_rows(c, &s, &owned)
                    },
                )
                .await;
            super::offload::record_exec(before, self.exec);
            r?;
            loaded += batch.len() as u64;
            if batch.len() < size {
                return Ok(loaded);
            }
            if let Some(aim) = aim {
                let took = started.elapsed();
                // The model clears the flag after a quick offloaded run; keep the decision.
                if strikes >= 2 {
                    offload.store(true, Ordering::Relaxed);
                } else {
                    offload.store(false, Ordering::Relaxed);
                    strikes = if size == per && took > aim * 2 {
                        strikes + 1
                    } else {
                        0
                    };
                    size = next_size(size, per, aim, took);
                }
            }
            tokio::task::coop::consume_budget().await;
        }
    }
}

/// The next batch size under the adaptive model: what takes about `aim`, judging by the last
/// batch of `size` rows that took `took`, at least one full statement.
fn next_size(size: usize, per: usize, aim: Duration, took: Duration) -> usize {
    let per_row = (took.as_nanos() / size as u128).max(1);
    let next = usize::try_from(aim.as_nanos() / per_row).unwrap_or(MAX_BATCH_ROWS);
    (next.clamp(per, MAX_BATCH_ROWS) / per) * per
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_match_the_row_by_row_binding() {
        use rusqlite::ToSql;
        use rusqlite::types::{ToSqlOutput, Value};
        let ts = chrono::NaiveDate::from_ymd_opt(2024, 2, 29)
            .unwrap()
            .and_hms_micro_opt(23, 59, 58, 123_456)
            .unwrap();
        let far = chrono::NaiveDate::from_ymd_opt(12_345, 1, 1)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap();
        let values = [
            RowValues::Timestamp(ts),
            RowValues::Timestamp(far),
            RowValues::TimestampTz(ts.and_utc()),
            RowValues::TimestampTz(far.and_utc()),
            RowValues::Date(ts.date()),
            RowValues::Date(far.date()),
            RowValues::Time(ts.time()),
            RowValues::Uuid(uuid::Uuid::from_u128(
                0x1234_5678_9abc_def0_1234_5678_9abc_def0,
            )),
            RowValues::Numeric("-12.3400".parse().unwrap()),
            RowValues::JSON(serde_json::json!({"a": [1, 2.5, "x"], "b": null})),
            RowValues::Interval(crate::Interval {
                months: 14,
                days: -3,
                microseconds: 4_500_000,
            }),
            RowValues::Array(vec![RowValues::Int(1), RowValues::Text("t".into())]),
        ];
        let mut scratch = String::new();
        for v in &values {
            assert!(write_text_form(&mut scratch, v), "{v:?}");
            match SqliteParam(v).to_sql().unwrap() {
                ToSqlOutput::Owned(Value::Text(t)) => assert_eq!(scratch, t, "{v:?}"),
                other => panic!("{v:?} binds as {other:?}"),
            }
        }
        for v in [
            RowValues::Null,
            RowValues::Int(1),
            RowValues::Float(1.5),
            RowValues::Text("x".into()),
            RowValues::Bool(true),
            RowValues::Blob(vec![1]),
        ] {
            assert!(!write_text_form(&mut scratch, &v), "{v:?}");
        }
    }

    #[test]
    fn batches_aim_at_half_the_budget() {
        let aim = Duration::from_micros(500);
        // 128 rows in 1 ms: 64 rows take 500 µs.
        assert_eq!(next_size(128, 32, aim, Duration::from_millis(1)), 64);
        // Fast rows grow the batch, up to the cap; slow ones shrink it to one statement.
        assert_eq!(
            next_size(128, 32, aim, Duration::from_nanos(1)),
            MAX_BATCH_ROWS
        );
        assert_eq!(next_size(256, 32, aim, Duration::from_millis(50)), 32);
    }
}
