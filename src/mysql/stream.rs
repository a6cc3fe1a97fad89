//! Streaming a statement's rows on MySQL: the statement runs once, and its rows are read from
//! the wire on the task that polls the stream, at most [`BATCH_ROWS`] per batch, so a long
//! result never sits in memory (the socket's buffers bound what the server has sent ahead).
//!
//! Dropped part-way, the rest of the result stays on the wire: mysql_async reads it off before
//! the connection's next command (reading a row is cancel-safe), so the connection stays usable;
//! a connection going back to the pool with rows unread is drained first, in the background.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::Arc;

use mysql_async::prelude::Queryable;
use mysql_async::{BinaryProtocol, QueryResult, Statement};

use super::conn::MyConnection;
use super::error::map_err;
use super::exec::{current_columns, statement_for};
use super::params::to_values;
use super::rows::MyRow;
use super::stmt::MyStmt;
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
    /// The result's columns, decided at its first row (see `exec::current_columns`).
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
        stop_at: crate::deadline::At,
    ) -> Result<MyCursor<T>> {
        crate::deadline::check(stop_at)?;
        s.check(&p)?;
        let mut s = Arc::clone(s);
        let mut replays = 0;
        let temporary = loop {
            self.ready(stop_at, s.fx.writes).await?;
            if let Some(now) = self.read_now(&s).await? {
                now.check(&p)?;
                s = now;
            }
            let values = to_values(&p, s.order.as_deref(), self.client()?.facts.utc)?;
            // A first read on a connection that sat idle runs again on another one when the
            // server had closed it (see `liveness.rs`).
            let replayable = self.unverified && !s.fx.writes;
            self.in_flight = true;
            let run = async {
                let c = self.client()?;
                let (st, temporary) = statement_for(c, &s).await?;
                // The result's metadata is read here; its rows stay on the wire.
                c.conn.exec_iter(&st, values).await.map_err(map_err)?;
                Ok::<_, crate::SqlMiddlewareDbError>(temporary.then_some(st))
            };
            let r = match stop_at {
                None => run.await,
                Some(at) => match super::deadline::within(at, run).await {
                    Some(r) => r,
                    None => return Err(self.after_limit(s.fx.writes)),
                },
            };
            match r {
                Err(e)
                    if replayable
                        && e.kind() == crate::ErrorKind::ConnectionLost
                        && replays < self.replay_limit() =>
                {
                    replays += 1;
                    self.discard();
                }
                Err(e) => return self.finish(s.fx, Err(e)).await,
                Ok(t) => {
                    self.unverified = false;
                    break t;
                }
            }
        };
        self.in_flight = false;
        Ok(MyCursor {
            stmt: s,
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
        // Reading rows is cancel-safe: a read dropped part-way leaves the rest of the result on
        // the wire, which mysql_async reads off before the connection's next command. So the
        // call is not marked as running (a stream dropped inside a `Tx` does not abort it).
        let read = async {
            let c = self.client()?;
            for _ in 0..BATCH_ROWS {
                let mut qr: QueryResult<'_, 'static, BinaryProtocol> =
                    QueryResult::new(&mut c.conn);
                let Some(mut row) = qr.next().await.map_err(map_err)? else {
                    super::sets::no_more(&mut qr).await?;
                    return Ok(false);
                };
                let cols = current_columns(&row, &k.stmt.columns, &mut k.fresh);
                out.push_back(crate::decode::decode_taking::<T, _>(MyRow {
                    row: &mut row,
                    columns: cols,
                })?);
            }
            Ok(true)
        };
        let more = match k.stop_at {
            None => read.await,
            Some(at) => match super::deadline::within(at, read).await {
                Some(r) => r,
                None => return Err(self.after_limit(k.stmt.fx.writes)),
            },
        };
        match more {
            Ok(true) => Ok(true),
            Ok(false) => {
                if let Some(st) = k.temporary.take() {
                    self.in_flight = true;
                    let c = self.client()?;
                    c.conn.close(st).await.map_err(map_err)?;
                }
                self.finish(k.stmt.fx, Ok(false)).await
            }
            Err(e) => self.finish(k.stmt.fx, Err(e)).await,
        }
    }

    /// Closes a cursor. Between batches the connection is clean: the driver reads the rest
    /// of the result off before its next command, and a statement prepared for the run is
    /// closed before the next one too. In the middle of a batch it is not.
    pub(super) fn close_stream<T>(&mut self, k: MyCursor<T>, finished: bool) -> bool {
        if !finished {
            // The rest of the result is read off before the next command, or before the
            // connection rejoins the pool.
            self.unread = true;
            let plain = k.stmt.fx.plain;
            if let Some(c) = self.obj_mut() {
                if let Some(st) = k.temporary {
                    c.pending_close.push(st);
                }
                if !plain {
                    c.dirty = true;
                }
            }
            self.followup = true;
        }
        !self.in_flight
    }
}
