//! Streaming a statement's rows on Postgres, from the wire: tokio-postgres hands rows over a
//! channel of one message batch, and stops reading the socket while it is full, so a consumer
//! that falls behind holds the server back (TCP backpressure) instead of filling memory.
//!
//! Dropped part-way:
//! - inside a transaction, the rest of the rows are read and discarded by the connection as
//!   they arrive, and the transaction goes on (its next statement waits for them);
//! - outside one, the statement is abandoned the way a cancelled call is: a cancel request goes
//!   out and the connection is replaced before its next use (a late cancel could otherwise hit
//!   the next statement). Either way no row is kept and nothing leaks into the next checkout.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use futures_util::{FutureExt, TryStreamExt};

use super::conn::{PgConnection, rows_of};
use super::error::map_err;
use super::rows::PgRow;
use super::stmt::PgStmt;
use crate::contract::Wing;
use crate::decode::FromRow;
use crate::error::Result;
use crate::value::RowValues;

/// The most rows handed out in one batch (fewer when no more have arrived yet).
pub(crate) const BATCH_ROWS: usize = 256;

/// A Postgres statement being streamed.
pub(crate) struct PgCursor<T> {
    rows: Option<Pin<Box<tokio_postgres::RowStream>>>,
    stmt: Arc<PgStmt>,
    deadline: Option<Instant>,
    /// The stream stopped at its time limit: the statement may still run on the server.
    timed_out: bool,
    _rows: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for PgCursor<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgCursor")
            .field("open", &self.rows.is_some())
            .finish_non_exhaustive()
    }
}

impl PgConnection {
    pub(super) async fn open_stream<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<PgStmt>,
        p: Vec<RowValues>,
    ) -> Result<PgCursor<T>> {
        let deadline = self.take_deadline();
        crate::deadline::check(deadline)?;
        self.ready().await?;
        s.check(&p)?;
        self.note_stmt(s);
        let (rows, s) = match self.start_rows(s, &p, deadline).await {
            // A schema change outside a transaction: prepared again and started once more, as
            // every other call does (see `PgConnection::replannable`).
            Err(e) if self.replannable(&e) => {
                let fresh = self.replan(s).await?;
                let rows = self.start_rows(&fresh, &p, deadline).await?;
                (rows, fresh)
            }
            r => (r?, Arc::clone(s)),
        };
        Ok(PgCursor {
            rows: Some(Box::pin(rows)),
            stmt: s,
            deadline,
            timed_out: false,
            _rows: PhantomData,
        })
    }

    /// Sends the statement; its rows follow on the returned stream.
    async fn start_rows(
        &mut self,
        s: &Arc<PgStmt>,
        p: &[RowValues],
        deadline: Option<Instant>,
    ) -> Result<tokio_postgres::RowStream> {
        self.in_flight = true;
        let started = rows_of(self.client()?, s, p);
        let r = match deadline {
            None => started.await,
            Some(at) => match tokio::time::timeout_at(at.into(), started).await {
                Ok(r) => r,
                // `in_flight` stays set: the connection is replaced before its next use.
                Err(_) => return Err(crate::deadline::error()),
            },
        };
        r.map_err(|e| {
            self.in_flight = false;
            map_err(e)
        })
    }

    pub(super) async fn next_batch<T: FromRow + Send + 'static>(
        &mut self,
        c: &mut PgCursor<T>,
        out: &mut VecDeque<T>,
    ) -> Result<bool> {
        let Some(rows) = c.rows.as_mut() else {
            return Ok(false);
        };
        // The first row of the batch is waited for; then only rows already received are taken.
        let first = match c.deadline {
            None => rows.as_mut().try_next().await,
            Some(at) => match tokio::time::timeout_at(at.into(), rows.as_mut().try_next()).await {
                Ok(r) => r,
                Err(_) => {
                    c.timed_out = true;
                    return Err(crate::deadline::error());
                }
            },
        };
        let mut next = first;
        let mut taken = 0;
        loop {
            match next {
                Ok(Some(row)) => {
                    out.push_back(T::from_row(&PgRow {
                        row: &row,
                        columns: &c.stmt.columns,
                    })?);
                    taken += 1;
                }
                Ok(None) => {
                    c.rows = None;
                    self.in_flight = false;
                    return Ok(false);
                }
                Err(e) => {
                    // The server ended the statement (or the connection ended).
                    c.rows = None;
                    self.in_flight = false;
                    return Err(map_err(e));
                }
            }
            if taken >= BATCH_ROWS {
                return Ok(true);
            }
            match rows.as_mut().try_next().now_or_never() {
                Some(r) => next = r,
                None => return Ok(true),
            }
        }
    }

    /// See the module's notes. `false`: the statement was abandoned, and the hall repairs the
    /// connection (cancel and replace) before its next use.
    pub(super) fn close_stream<T>(&mut self, mut c: PgCursor<T>, finished: bool) -> bool {
        let Some(rows) = c.rows.take() else {
            return true;
        };
        drop(rows);
        if finished || (self.in_tx && !c.timed_out) {
            self.in_flight = false;
            return true;
        }
        false
    }
}
