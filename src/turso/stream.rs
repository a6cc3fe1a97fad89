//! Streaming a statement's rows on Turso: the statement is stepped on the task that polls the
//! stream, at most [`BATCH_ROWS`] rows per batch, and the task yields between batches, so a
//! long result neither fills memory nor keeps the worker thread from other tasks.
//!
//! Dropped part-way, the statement is reset at once (it is the connection's cached statement;
//! Turso requires a reset before it runs again).

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::Arc;

use super::busy::BusyWait;
use super::conn::TursoConn;
use super::error::map_err;
use super::params::to_values;
use super::rows::{TursoRow, fill_row_values};
use super::stmt::TursoStmt;
use crate::decode::FromRow;
use crate::error::{ErrorKind, Result};
use crate::sqlite_family::columns::Described;
use crate::value::RowValues;

/// The most rows stepped in one batch.
pub(crate) const BATCH_ROWS: usize = 256;

/// A Turso statement being streamed.
pub(crate) struct TursoCursor<T> {
    stmt: Arc<TursoStmt>,
    st: turso::Statement,
    rows: Option<turso::Rows>,
    /// The columns to read rows with, when the schema changed since the statement was prepared.
    fresh: Option<Option<Arc<Described>>>,
    /// A batch was handed out: the task yields before stepping the next one.
    yielded: bool,
    /// The parameters, kept until the first row: a statement that found the database locked
    /// before its first row changed nothing, and runs again after a pause.
    values: Option<Vec<turso::Value>>,
    /// The first row (or the end), stepped before the first batch.
    first: Option<Option<turso::Row>>,
    _rows: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for TursoCursor<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TursoCursor")
            .field("open", &self.rows.is_some())
            .finish_non_exhaustive()
    }
}

impl TursoConn {
    pub(super) async fn open_stream<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<TursoStmt>,
        p: Vec<RowValues>,
        at: crate::deadline::At,
    ) -> Result<TursoCursor<T>> {
        self.start_limit(at)?;
        s.check(&p)?;
        if self.unsettled() {
            self.settle().await?;
        }
        if self.native_busy {
            self.set_native_busy(false)?;
        }
        let values = to_values(&p)?;
        self.in_flight = true;
        let mut st = s.stmt.clone();
        let rows = match st.query(values.clone()).await {
            Ok(rows) => rows,
            Err(e) => {
                let _ = st.reset();
                self.in_flight = false;
                return Err(map_err(e));
            }
        };
        Ok(TursoCursor {
            stmt: Arc::clone(s),
            st,
            rows: Some(rows),
            fresh: None,
            yielded: false,
            values: Some(values),
            first: None,
            _rows: PhantomData,
        })
    }

    pub(super) async fn next_batch<T: FromRow + Send + 'static>(
        &mut self,
        c: &mut TursoCursor<T>,
        out: &mut VecDeque<T>,
    ) -> Result<bool> {
        if c.yielded {
            // Between batches, always: Turso's steps usually complete without ever waiting.
            tokio::task::yield_now().await;
        }
        if c.values.is_some() {
            self.first_row(c).await?;
        }
        let Some(rows) = c.rows.as_mut() else {
            return Ok(false);
        };
        let mut ended = false;
        for _ in 0..BATCH_ROWS {
            if self.must_stop(&c.stmt) {
                return Err(crate::deadline::error());
            }
            let next = match c.first.take() {
                Some(first) => first,
                None => rows.next().await.map_err(map_err)?,
            };
            let Some(row) = next else {
                ended = true;
                break;
            };
            let desc = c
                .fresh
                .get_or_insert_with(|| self.desc_now(&c.stmt, &c.st))
                .as_ref()
                .unwrap_or(&c.stmt.desc);
            fill_row_values(&row, desc, &mut self.row_buf)?;
            let decoded = crate::decode::decode_taking::<T, _>(TursoRow {
                values: &self.row_buf,
                columns: &desc.columns,
            });
            self.row_buf.clear();
            out.push_back(decoded?);
        }
        if ended {
            c.rows = None;
            let _ = c.st.reset();
            self.in_flight = false;
            return Ok(false);
        }
        c.yielded = true;
        Ok(true)
    }

    /// Steps the first row; while the database is locked (`Busy`, before any row, so nothing
    /// changed), pauses on the runtime's timer and runs the statement again, up to the busy
    /// timeout, as every other call does.
    async fn first_row<T>(&mut self, c: &mut TursoCursor<T>) -> Result<()> {
        let Some(values) = c.values.take() else {
            return Ok(());
        };
        let mut wait: Option<BusyWait> = None;
        loop {
            let Some(rows) = c.rows.as_mut() else {
                return Ok(());
            };
            match rows.next().await.map_err(map_err) {
                Err(e) if e.kind() == ErrorKind::Busy => {
                    let w = wait.get_or_insert_with(|| BusyWait::new(self.busy_allowance()));
                    c.rows = None;
                    let _ = c.st.reset();
                    if !w.pause().await {
                        return Err(if self.stop_at_passed() {
                            crate::deadline::error()
                        } else {
                            e
                        });
                    }
                    c.rows = Some(c.st.query(values.clone()).await.map_err(map_err)?);
                }
                Err(e) => return Err(e),
                Ok(first) => {
                    c.first = Some(first);
                    return Ok(());
                }
            }
        }
    }

    /// Resets the statement: the connection is ready for its next one, inside a transaction
    /// or not. A statement that cannot be reset is forgotten, with the rest of the cache.
    pub(super) fn close_stream<T>(&mut self, mut c: TursoCursor<T>, _finished: bool) -> bool {
        self.row_buf.clear();
        if c.rows.take().is_some() && c.st.reset().is_err() {
            self.forget_statements();
        }
        self.in_flight = false;
        true
    }
}
