//! Streaming a statement's rows on MySQL: the statement runs once, and its rows are read from
//! the wire on the task that polls the stream, at most [`BATCH_ROWS`] per batch, so a long
//! result never sits in memory (the socket's buffers bound what the server has sent ahead).
//!
//! Dropped part-way between batches, the rest of the result stays on the wire: mysql_async
//! reads it off before the connection's next command, so the connection stays usable. Dropped
//! in the middle of reading a batch, the connection's state is unknown and it is given up.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::Arc;

use mysql_async::prelude::Queryable;
use mysql_async::{BinaryProtocol, QueryResult, Statement};

use super::conn::{MyConnection, statement_for};
use super::error::map_err;
use super::params::to_values;
use super::rows::{MyRow, columns_of};
use super::stmt::MyStmt;
use crate::contract::Wing;
use crate::decode::FromRow;
use crate::error::Result;
use crate::results::Columns;
use crate::value::RowValues;

/// The most rows read in one batch.
pub(crate) const BATCH_ROWS: usize = 256;

/// A MySQL statement being streamed.
pub(crate) struct MyCursor<T> {
    stmt: Arc<MyStmt>,
    /// A statement prepared for this run only, closed at the end.
    temporary: Option<Statement>,
    /// The result's own columns, when they differ from the statement's.
    fresh: Option<Arc<Columns>>,
    /// The time limit of the whole stream.
    stop_at: Option<std::time::Instant>,
    _rows: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for MyCursor<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MyCursor").finish_non_exhaustive()
    }
}

impl MyConnection {
    pub(super) async fn open_stream<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<MyStmt>,
        p: Vec<RowValues>,
    ) -> Result<MyCursor<T>> {
        let stop_at = self.take_deadline();
        crate::deadline::check(stop_at)?;
        self.ready(stop_at).await?;
        s.check(&p)?;
        let values = to_values(&p, s.order.as_deref())?;
        self.in_flight = true;
        let run = async {
            let c = self.client()?;
            let (st, temporary) = statement_for(c, s).await?;
            // The result's metadata is read here; its rows stay on the wire.
            c.conn.exec_iter(&st, values).await.map_err(map_err)?;
            Ok::<_, crate::SqlMiddlewareDbError>(temporary.then_some(st))
        };
        let temporary = match stop_at {
            None => run.await,
            Some(at) => match super::timeout::within(at, run).await {
                Some(r) => r,
                None => return Err(self.after_limit(s.writes)),
            },
        };
        let temporary = match temporary {
            Ok(t) => t,
            Err(e) => return self.finish(s, Err(e)),
        };
        self.in_flight = false;
        Ok(MyCursor {
            stmt: Arc::clone(s),
            temporary,
            fresh: None,
            stop_at,
            _rows: PhantomData,
        })
    }

    pub(super) async fn next_batch<T: FromRow + Send + 'static>(
        &mut self,
        k: &mut MyCursor<T>,
        out: &mut VecDeque<T>,
    ) -> Result<bool> {
        self.in_flight = true;
        let read = async {
            let c = self.client()?;
            for _ in 0..BATCH_ROWS {
                let mut qr: QueryResult<'_, 'static, BinaryProtocol> = QueryResult::new(&mut c.conn);
                let Some(row) = qr.next().await.map_err(map_err)? else {
                    return Ok(false);
                };
                let cols = if row.len() == k.stmt.columns.len() {
                    &k.stmt.columns
                } else {
                    k.fresh
                        .get_or_insert_with(|| Arc::new(columns_of(row.columns_ref())))
                };
                out.push_back(T::from_row(&MyRow {
                    row: &row,
                    columns: cols,
                })?);
            }
            Ok(true)
        };
        let more = match k.stop_at {
            None => read.await,
            Some(at) => match super::timeout::within(at, read).await {
                Some(r) => r,
                None => return Err(self.after_limit(k.stmt.writes)),
            },
        };
        match more {
            Ok(true) => {
                self.in_flight = false;
                Ok(true)
            }
            Ok(false) => {
                if let Some(st) = k.temporary.take() {
                    let c = self.client()?;
                    c.conn.close(st).await.map_err(map_err)?;
                }
                let s = Arc::clone(&k.stmt);
                self.finish(&s, Ok(false))
            }
            Err(e) => {
                let s = Arc::clone(&k.stmt);
                self.finish(&s, Err(e))
            }
        }
    }

    /// Closes a cursor. Between batches the connection is clean: the driver reads the rest
    /// of the result off before its next command (a statement prepared for the run stays on
    /// the server until the session is reset). In the middle of a batch it is not.
    pub(super) fn close_stream<T>(&mut self, k: MyCursor<T>, finished: bool) -> bool {
        if !finished {
            if let Some(c) = self.obj_mut() {
                if k.temporary.is_some() || !k.stmt.plain {
                    c.dirty = true;
                }
            }
        }
        !self.in_flight
    }
}
