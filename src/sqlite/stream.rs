//! Streaming a statement's rows on SQLite, a bounded batch at a time.
//!
//! A rusqlite statement borrows its connection and is not `Send`, so a statement that stays
//! open between two polls cannot live on the task that polls the stream (the stream would no
//! longer be `Send`). For its lifetime the connection moves to a worker on tokio's blocking pool
//! (a thread of its own outside a runtime), the same hop an offloaded call makes. The worker
//! steps the statement, decodes up to [`BATCH_ROWS`] rows (or about [`BATCH_BYTES`] of values)
//! into one batch, and hands it over a channel of capacity one: it runs at most one batch
//! ahead of the consumer and then waits, so memory stays bounded whatever the result's size.
//!
//! At the end, or when the stream is dropped part-way, the statement is reset on the worker
//! and the connection comes back. A dropped stream stops a read at once (the progress handler
//! interrupts it); the worker notices a dropped stream before every row.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rusqlite::Connection;

use super::busy::{BusyScope, CancelScope};
use super::conn::SqliteConn;
use super::error::map_err;
use super::offload::{broken, panicked};
use super::params::bind_all;
use super::rows::SqliteRow;
use super::stmt::SqliteStmt;
use crate::decode::FromRow;
use crate::error::Result;
use crate::sqlite_family::columns::Described;
use crate::value::RowValues;

/// The most rows in one batch.
pub(crate) const BATCH_ROWS: usize = 256;
/// A batch ends early once its text and blobs reach about this many bytes.
pub(crate) const BATCH_BYTES: usize = 1 << 20;

/// A SQLite statement being streamed: the worker's batches, and the way the connection comes
/// back from it.
pub(crate) struct SqliteCursor<T> {
    batches: tokio::sync::mpsc::Receiver<Result<Vec<T>>>,
    /// The connection, sent back by the worker before it closes `batches`; `true` when a panic
    /// in user code left it to be discarded.
    back: Returning,
    /// Set when the stream is dropped part-way: the worker's lock wait ends at once.
    stop: Arc<AtomicBool>,
    deadline: Option<Instant>,
    readonly: bool,
    /// Inside a transaction when the stream started.
    in_tx: bool,
}

impl<T> std::fmt::Debug for SqliteCursor<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteCursor").finish_non_exhaustive()
    }
}

/// Where a stream's worker sends the connection back: with `true` when a panic in user code
/// left it to be discarded.
pub(crate) type Returning = tokio::sync::oneshot::Receiver<(Connection, bool)>;

/// Steps `s` and sends its rows, decoded as `T`, in bounded batches until the statement ends
/// or the receiver is gone. The statement is reset when its rows are dropped, here.
fn produce<T: FromRow>(
    c: &mut Connection,
    s: &SqliteStmt,
    p: &[RowValues],
    tx: &tokio::sync::mpsc::Sender<Result<Vec<T>>>,
) -> Result<()> {
    let mut st = c.prepare_cached(&s.sql).map_err(map_err)?;
    bind_all(&mut st, p)?;
    let mut rows = st.raw_query();
    let mut fresh: Option<Option<Arc<Described>>> = None;
    let mut batch = Vec::new();
    let mut bytes = 0usize;
    loop {
        if tx.is_closed() {
            return Ok(());
        }
        let Some(row) = rows.next().map_err(map_err)? else {
            break;
        };
        let d = fresh.get_or_insert_with(|| s.columns_now(row.as_ref()));
        let desc = d.as_deref().unwrap_or(&s.desc);
        for idx in 0..desc.len() {
            bytes += match row.get_ref(idx) {
                Ok(rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t)) => {
                    t.len()
                }
                _ => 8,
            };
        }
        batch.push(crate::decode::decode_taking::<T, _>(SqliteRow {
            row,
            desc,
        })?);
        if batch.len() >= BATCH_ROWS || bytes >= BATCH_BYTES {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_ROWS));
            bytes = 0;
            if tx.blocking_send(Ok(full)).is_err() {
                return Ok(());
            }
        }
    }
    drop(rows);
    drop(st);
    if !batch.is_empty() {
        let _ = tx.blocking_send(Ok(batch));
    }
    Ok(())
}

impl SqliteConn {
    /// Moves the connection to a worker that streams `s` (see the module's notes).
    pub(super) fn open_stream<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<SqliteStmt>,
        p: Vec<RowValues>,
        deadline: Option<Instant>,
    ) -> Result<SqliteCursor<T>> {
        let in_tx = !self.conn_mut()?.is_autocommit();
        self.start_limit(deadline)?;
        let busy = self.busy_ms();
        let Some(mut conn) = self.conn.take() else {
            return Err(broken());
        };
        let (tx, batches) = tokio::sync::mpsc::channel(1);
        let (back_tx, back) = tokio::sync::oneshot::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let stmt = Arc::clone(s);
        let work = move || {
            let _scope = BusyScope::set(busy);
            let _cancel = CancelScope::set(stopped);
            let r = catch_unwind(AssertUnwindSafe(|| produce::<T>(&mut conn, &stmt, &p, &tx)));
            let (lost, error) = match r {
                Ok(Ok(())) => (false, None),
                Ok(Err(e)) => (false, Some(e)),
                Err(_) => {
                    // User code (a `FromRow`) panicked mid-statement: release the write lock;
                    // the connection is discarded when returned.
                    if !conn.is_autocommit() {
                        let _ = conn.execute_batch("ROLLBACK");
                    }
                    let e = panicked("user code run inside the statement (a FromRow or FromValue)");
                    (true, Some(e))
                }
            };
            // The connection goes back before the error is sent and the channel closes, so the
            // stream finds it there without waiting.
            let _ = back_tx.send((conn, lost));
            if let Some(e) = error {
                let _ = tx.blocking_send(Err(e));
            }
            drop(tx);
        };
        let spawned = match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                drop(h.spawn_blocking(work));
                true
            }
            Err(_) => std::thread::Builder::new()
                .name("sqlmw-sqlite-stream".into())
                .spawn(work)
                .is_ok(),
        };
        if !spawned {
            self.broken = true;
            return Err(broken());
        }
        let before = self.exec_mark();
        self.exec.offloaded_by_policy += 1;
        // On the stream's span: it ran on the blocking pool.
        super::offload::record_exec(before, self.exec);
        Ok(SqliteCursor {
            batches,
            back,
            stop,
            deadline,
            readonly: s.readonly,
            in_tx,
        })
    }

    /// Takes the connection back from the worker (it is there: the worker sends it before its
    /// error, and before the channel closes).
    fn reclaim<T>(&mut self, c: &mut SqliteCursor<T>) {
        if self.conn.is_some() {
            return;
        }
        match c.back.try_recv() {
            Ok((conn, lost)) => {
                self.conn = Some(conn);
                if lost {
                    self.broken = true;
                }
            }
            Err(_) => self.broken = true,
        }
    }

    /// Takes back the connection of a stream dropped while its worker was still running
    /// (see [`Self::close_stream`]): waits for the worker, which was told to stop.
    ///
    /// Cancel-safe: the receiver stays in `self.returning` while it is awaited, so a caller
    /// dropped meanwhile leaves the connection to come back to the next operation.
    pub(super) async fn settle_stream(&mut self) {
        if let Some(back) = self.returning.as_mut() {
            let r = back.await;
            self.returning = None;
            match r {
                Ok((conn, lost)) => {
                    self.conn = Some(conn);
                    self.broken |= lost;
                }
                Err(_) => self.broken = true,
            }
            self.back_from_stream();
        }
    }

    /// The connection is back from a dropped stream's worker: its stop is disarmed, and a
    /// transaction abandoned meanwhile is rolled back.
    fn back_from_stream(&mut self) {
        self.stop_at = None;
        self.progress.disarm_stop();
        if std::mem::take(&mut self.abandoned) {
            self.rollback_if_open();
        }
    }

    /// [`Self::settle_stream`] without waiting: the connection is taken back if the worker has
    /// sent it; otherwise it stays away (and the pool discards this connection).
    pub(super) fn stream_returned(&mut self) {
        if let Some(mut back) = self.returning.take() {
            match back.try_recv() {
                Ok((conn, lost)) => {
                    self.conn = Some(conn);
                    self.broken |= lost;
                    self.back_from_stream();
                }
                Err(tokio::sync::oneshot::error::TryRecvError::Empty) => {
                    self.returning = Some(back);
                }
                Err(tokio::sync::oneshot::error::TryRecvError::Closed) => self.broken = true,
            }
        }
    }

    pub(super) async fn next_batch<T: FromRow + Send + 'static>(
        &mut self,
        c: &mut SqliteCursor<T>,
        out: &mut VecDeque<T>,
    ) -> Result<bool> {
        match c.batches.recv().await {
            Some(Ok(batch)) => {
                out.extend(batch);
                Ok(true)
            }
            Some(Err(e)) => {
                self.reclaim(c);
                self.end_limit(c.deadline, Err(e))
            }
            None => {
                self.reclaim(c);
                self.end_limit(c.deadline, Ok(()))?;
                if self.broken {
                    return Err(broken());
                }
                Ok(false)
            }
        }
    }

    /// Stops the worker (a read is interrupted at once; a write finishes its current row, or
    /// gives up the lock it waits for), and takes the connection back if the worker has sent
    /// it already. Never waits: a worker still finishing sends the connection to
    /// `self.returning`, taken back before the connection's next operation (`settle_stream`).
    pub(super) fn close_stream<T>(&mut self, mut c: SqliteCursor<T>, finished: bool) -> bool {
        if !finished && self.conn.is_none() {
            c.stop.store(true, Ordering::Relaxed);
            if c.readonly {
                // The progress handler stops the statement at its next check, even one the
                // worker has not started yet (an interrupt would be forgotten by then).
                self.progress.arm_stop(Instant::now());
                self.interrupt.interrupt();
            }
            c.batches.close();
            while c.batches.try_recv().is_ok() {}
            if self.conn.is_none() {
                match c.back.try_recv() {
                    Ok((conn, lost)) => {
                        self.conn = Some(conn);
                        self.broken |= lost;
                    }
                    Err(tokio::sync::oneshot::error::TryRecvError::Empty) => {
                        // Still stepping, or waiting for a lock: not waited for here. The
                        // connection's next operation takes it back first (`settle_stream`);
                        // the stop stays armed until then. A read leaves nothing to repair; a
                        // write dropped part-way counts as a cancelled call.
                        self.returning = Some(c.back);
                        return c.readonly;
                    }
                    Err(tokio::sync::oneshot::error::TryRecvError::Closed) => self.broken = true,
                }
            }
        }
        self.reclaim(&mut c);
        self.stop_at = None;
        self.progress.disarm_stop();
        if self.broken {
            return false;
        }
        // A transaction the engine rolled back by itself must not be taken for still open.
        match self.conn.as_ref() {
            Some(conn) => !(c.in_tx && conn.is_autocommit()),
            None => false,
        }
    }
}
