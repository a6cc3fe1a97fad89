//! [`RowStream`]: a query's rows as a [`Stream`], fetched a bounded batch at a time, so a result
//! of any size is read in bounded memory.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::Stream;

use crate::connection::MiddlewarePoolConnection;
use crate::decode::FromRow;
use crate::dispatch::{CursorInner, StmtHandle};
use crate::error::Result;
use crate::translation::TranslationMode;
use crate::value::RowValues;

/// A query's rows, decoded as `T` one at a time: a [`Stream`] of `Result<T>`, from
/// `conn.query(sql).stream::<T>()` or [`PreparedStatement::stream`](crate::PreparedStatement::stream).
///
/// - **Lazy.** Nothing runs until the stream is first polled. It owns a copy of the SQL and
///   parameters, and holds the connection (or transaction) for as long as it lives.
/// - **Bounded memory.** Rows are fetched a bounded batch at a time, never all at once.
///   Postgres streams from the wire with backpressure: while the consumer is behind, the
///   connection stops reading and the server waits; inside a transaction a query runs as a
///   server-side cursor read with `FETCH` (16 rows at first, growing to 4,096 while batches stay
///   under about 1 MiB). SQLite steps the statement on a worker of tokio's blocking pool that
///   runs at most one batch (256 rows or about 1 MiB) ahead (a rusqlite statement cannot stay
///   open on the async task between polls); Turso steps it on the task, 256 rows at a time,
///   and yields between batches.
/// - **Errors are items.** A failure (a wrong parameter count, a value that does not decode, a
///   server error, the time limit) is yielded as an `Err` item and ends the stream. Inside a
///   transaction it aborts the transaction, like any failed statement.
/// - **Time limits.** The query's `.timeout(..)`, or the connection's `statement_timeout`,
///   covers the whole stream, from its first poll to its last row, time spent by the consumer
///   included (as Postgres' own `statement_timeout` does).
/// - **Dropping it part-way** never blocks (it waits for no lock, worker or server) and leaves
///   the connection clean: on SQLite and Turso the statement is reset (on SQLite by the worker
///   stepping it, told to stop: a lock wait ends at once, and the connection's next operation
///   takes the connection back first); on Postgres inside a transaction the batch in flight is
///   discarded and the transaction goes on (every query, parenthesised or not, runs as a
///   suspended cursor that closes with it); on Postgres outside one the statement is cancelled
///   and the connection replaced before its next use. A connection never goes back to the pool
///   with a statement running. A write streamed with `RETURNING` and dropped part-way counts as
///   a cancelled statement: inside a transaction it aborts it.
/// - **A stream that ends with `Timeout`** on Postgres stops its statement on the server at
///   once: the connection is given up (its statement cancelled) and replaced before its next
///   use, also while the caller still holds the stream.
///
/// ```
/// # use sql_middleware::prelude::*;
/// use futures_util::TryStreamExt;
/// # async fn demo(conn: &mut MiddlewarePoolConnection) -> Result<(), SqlMiddlewareDbError> {
/// let mut rows = conn.query("SELECT id, name FROM users").stream::<(i64, String)>();
/// while let Some((id, name)) = rows.try_next().await? {
///     println!("{id}: {name}");
/// }
/// # Ok(()) }
/// ```
#[must_use = "a stream does nothing until it is polled"]
pub struct RowStream<'c, T> {
    /// The batches, fetched by the wing.
    inner: Pin<Box<dyn Stream<Item = Result<VecDeque<T>>> + Send + 'c>>,
    /// The rows of the current batch not handed out yet.
    ready: VecDeque<T>,
    /// The statement's span and SQL (feature `tracing`), until the stream ends or is dropped.
    #[cfg(feature = "tracing")]
    trace: Option<(crate::telemetry::Started, Box<str>)>,
    /// Rows handed out so far.
    rows: usize,
    /// The kind of error that ended the stream, if any.
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    error: Option<crate::error::ErrorKind>,
    ended: bool,
}

impl<T> std::fmt::Debug for RowStream<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowStream")
            .field("rows", &self.rows)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

// The hall's side of streaming: the stream owns a copy of the SQL text and parameters, opens the
// statement at its first poll (through the same transaction bookkeeping as every other
// operation), then asks the wing for one batch at a time (`Wing::stream_next`) and hands its rows
// out one by one. Dropped part-way, it closes the wing's cursor at once (`Wing::stream_close`);
// when the wing cannot leave the connection clean that way, the operation counts as cancelled
// and the connection is repaired before its next use, as after any cancelled call.

/// What a stream runs: SQL to prepare at the first poll, or a prepared statement.
pub(crate) enum Source {
    Sql(Box<str>, TranslationMode),
    Handle(StmtHandle),
}

/// What the first poll needs to open the statement.
struct Start {
    source: Source,
    params: Vec<RowValues>,
    timeout: Option<Duration>,
}

/// The connection and the wing's cursor: dropped with the stream, it closes the cursor.
struct Guard<'c, T: FromRow + Send + 'static> {
    conn: &'c mut MiddlewarePoolConnection,
    cursor: Option<CursorInner<T>>,
    /// The statement may change the database (DML with `RETURNING`).
    writes: bool,
}

impl<T: FromRow + Send + 'static> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        let closed_clean = match self.cursor.take() {
            Some(c) => self.conn.inner.stream_close(c, false),
            None => false,
        };
        if closed_clean && !self.writes {
            // A read closed cleanly: nothing for the next operation to repair. A write dropped
            // part-way stays a cancelled call: whether all of it ran is not known, so inside a
            // transaction it aborts the transaction, as any cancelled statement does.
            self.conn.pending = false;
        }
    }
}

/// The stream's state between polls.
struct Run<'c, T: FromRow + Send + 'static> {
    guard: Guard<'c, T>,
    start: Option<Start>,
    /// The error that ended the stream, handed out after the rows fetched before it.
    failed: Option<crate::error::SqlMiddlewareDbError>,
    done: bool,
}

impl<T: FromRow + Send + 'static> Run<'_, T> {
    /// The next batch of rows (never empty), or the error that ends the stream (after the
    /// rows fetched before it).
    async fn next(&mut self) -> Option<Result<VecDeque<T>>> {
        loop {
            if let Some(e) = self.failed.take() {
                return Some(Err(e));
            }
            if self.done {
                return None;
            }
            if let Some(start) = self.start.take() {
                if let Err(e) = self.open(start).await {
                    self.done = true;
                    return Some(Err(e));
                }
                continue;
            }
            let Some(cursor) = self.guard.cursor.as_mut() else {
                self.done = true;
                return None;
            };
            let mut batch = VecDeque::new();
            match self.guard.conn.inner.stream_next(cursor, &mut batch).await {
                Ok(true) => {}
                Ok(false) => {
                    let _ = self.finish(Ok(()), true);
                }
                Err(e) => {
                    if let Err(e) = self.finish(Err(e), false) {
                        self.failed = Some(e);
                    }
                }
            }
            if !batch.is_empty() {
                return Some(Ok(batch));
            }
        }
    }

    async fn open(&mut self, start: Start) -> Result<()> {
        let conn = &mut *self.guard.conn;
        let deadline = conn.deadline(start.timeout);
        let handle = match start.source {
            Source::Sql(sql, mode) => conn.prepare_handle(&sql, mode, deadline).await?,
            Source::Handle(h) => h,
        };
        self.guard.writes = handle.writes();
        conn.enter().await?;
        match conn
            .inner
            .stream_open::<T>(&handle, start.params, deadline)
            .await
        {
            Ok(c) => {
                self.guard.cursor = Some(c);
                Ok(())
            }
            Err(e) => conn.note(Err(e)),
        }
    }

    /// Ends the operation: closes the cursor and settles the transaction bookkeeping.
    fn finish(&mut self, r: Result<()>, finished: bool) -> Result<()> {
        self.done = true;
        let conn = &mut *self.guard.conn;
        let clean = match self.guard.cursor.take() {
            Some(c) => conn.inner.stream_close(c, finished),
            None => true,
        };
        let r = conn.note(r);
        if r.is_ok() && self.guard.writes {
            conn.wrote();
        }
        if !clean {
            // Left as a cancelled call: repaired before the connection's next use.
            conn.pending = true;
        }
        r
    }
}

impl<'c, T: FromRow + Send + 'static> RowStream<'c, T> {
    pub(crate) fn new(
        conn: &'c mut MiddlewarePoolConnection,
        source: Source,
        params: Vec<RowValues>,
        timeout: Option<Duration>,
        #[cfg_attr(not(feature = "tracing"), allow(unused_variables))] sql: &str,
    ) -> Self {
        #[cfg(feature = "tracing")]
        let trace = Some((conn.trace.start(sql, None), Box::<str>::from(sql)));
        let run = Run {
            guard: Guard {
                conn,
                cursor: None,
                writes: false,
            },
            start: Some(Start {
                source,
                params,
                timeout,
            }),
            failed: None,
            done: false,
        };
        let inner = futures_util::stream::unfold(run, |mut run| async move {
            let item = run.next().await?;
            Some((item, run))
        });
        RowStream {
            inner: Box::pin(inner),
            ready: VecDeque::new(),
            #[cfg(feature = "tracing")]
            trace,
            rows: 0,
            error: None,
            ended: false,
        }
    }

    /// Records the rows (or the error) on the statement's span, once.
    fn end(&mut self) {
        self.ended = true;
        #[cfg(feature = "tracing")]
        if let Some((started, sql)) = self.trace.take() {
            let r = match self.error.take() {
                Some(kind) => Err(crate::error::SqlMiddlewareDbError::new(kind, "")),
                None => Ok(self.rows),
            };
            let _ = started.finish(&sql, r, |n: &usize| crate::telemetry::Rows::Returned(*n));
        }
    }
}

impl<T: FromRow + Send + 'static> Stream for RowStream<'_, T> {
    type Item = Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T>>> {
        let this = self.get_mut();
        loop {
            if let Some(v) = this.ready.pop_front() {
                this.rows += 1;
                return Poll::Ready(Some(Ok(v)));
            }
            if this.ended {
                return Poll::Ready(None);
            }
            let r = {
                #[cfg(feature = "tracing")]
                let _entered = this.trace.as_ref().map(|(s, _)| s.enter());
                this.inner.as_mut().poll_next(cx)
            };
            match r {
                Poll::Ready(Some(Ok(batch))) => this.ready = batch,
                Poll::Ready(Some(Err(e))) => {
                    this.error = Some(e.kind());
                    this.end();
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => {
                    this.end();
                    return Poll::Ready(None);
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

// The rows waiting in `ready` are never pinned: moving the stream moves them like any value.
impl<T> Unpin for RowStream<'_, T> {}

impl<T> Drop for RowStream<'_, T> {
    fn drop(&mut self) {
        #[cfg(feature = "tracing")]
        if let Some((started, sql)) = self.trace.take() {
            // Dropped before its end: the rows handed out so far.
            let r: Result<usize> = match self.error.take() {
                Some(kind) => Err(crate::error::SqlMiddlewareDbError::new(kind, "")),
                None => Ok(self.rows),
            };
            let _ = started.finish(&sql, r, |n: &usize| crate::telemetry::Rows::Returned(*n));
        }
    }
}
