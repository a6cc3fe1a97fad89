//! Streaming a statement's rows on Postgres.
//!
//! - **Outside a transaction** (and for DML with `RETURNING` anywhere), from the wire:
//!   tokio-postgres hands rows over a channel of one message batch and stops reading the socket
//!   while it is full, so a consumer that falls behind holds the server back (TCP
//!   backpressure) instead of filling memory. Dropped part-way, the statement is abandoned the
//!   way a cancelled call is: a cancel request goes out and the connection is replaced before
//!   its next use (a late cancel could otherwise hit the next statement).
//! - **Inside a transaction**, a query runs as a server-side cursor (`DECLARE … NO SCROLL
//!   CURSOR`), read with `FETCH` a batch at a time. Dropped part-way, only the batch in flight
//!   is read and discarded; the cursor, suspended, is closed by the transaction's end, and the
//!   transaction goes on at once. (Read from the wire instead, a dropped stream would make the
//!   transaction's next statement wait for every remaining row: 0.6 s after 1 of 1,000,000.)

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::{FutureExt, TryStreamExt};

use super::conn::PgConnection;
use super::error::map_err;
use super::exec::rows_of;
use super::params::PgParam;
use super::rows::PgRow;
use super::stmt::PgStmt;
use crate::decode::FromRow;
use crate::error::Result;
use crate::value::RowValues;

/// The most rows handed out in one batch (fewer when no more have arrived yet).
pub(crate) const BATCH_ROWS: usize = 256;

/// A cursor's first `FETCH` asks for this many rows; while batches stay under
/// [`CURSOR_BATCH_BYTES`], each next one asks for four times as many, up to [`CURSOR_MAX_ROWS`]
/// (each `FETCH` is a round trip, so small rows are read in larger batches).
const CURSOR_FIRST_ROWS: usize = 16;
/// The most rows one `FETCH` asks for.
const CURSOR_MAX_ROWS: usize = 4096;
/// About how many bytes of values a cursor's batch may hold.
const CURSOR_BATCH_BYTES: usize = 1 << 20;

/// Where a stream's rows come from.
enum Rows {
    /// The statement's rows, from the wire.
    Wire(Pin<Box<tokio_postgres::RowStream>>),
    /// A server-side cursor of the open transaction: its name, and how many rows the next
    /// `FETCH` asks for.
    Cursor(Box<str>, usize),
}

/// A Postgres statement being streamed.
pub(crate) struct PgCursor<T> {
    rows: Option<Rows>,
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
        deadline: Option<Instant>,
    ) -> Result<PgCursor<T>> {
        let writes = crate::contract::WingStmt::writes(&**s);
        // A first call on a connection the server closed while it sat idle runs again on
        // another one (see `liveness.rs`).
        super::liveness::first_call!(
            self,
            writes,
            true,
            self.open_stream_once(s, &p, deadline).await
        )
    }

    async fn open_stream_once<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<PgStmt>,
        p: &[RowValues],
        deadline: Option<Instant>,
    ) -> Result<PgCursor<T>> {
        crate::deadline::check(deadline)?;
        self.ready().await?;
        if self.strings_unsure {
            Box::pin(self.reread_strings()).await?;
        }
        let s = &self.here(s).await?;
        s.check(p)?;
        self.note_stmt(s);
        self.note_strings(s);
        if self.in_tx && cursor_query(s) {
            return self.declare(s, p, deadline).await.map(|name| PgCursor {
                rows: Some(Rows::Cursor(name, CURSOR_FIRST_ROWS)),
                stmt: Arc::clone(s),
                deadline,
                timed_out: false,
                _rows: PhantomData,
            });
        }
        let (rows, s) = match self.start_rows(s, p, deadline).await {
            // A schema change outside a transaction: prepared again and started once more, as
            // every other call does (see `PgConnection::replannable`).
            Err(e) if self.replannable(&e) => {
                let fresh = self.replan(s).await?;
                let rows = self.start_rows(&fresh, p, deadline).await?;
                (rows, fresh)
            }
            r => (r?, Arc::clone(s)),
        };
        Ok(PgCursor {
            rows: Some(Rows::Wire(Box::pin(rows))),
            stmt: s,
            deadline,
            timed_out: false,
            _rows: PhantomData,
        })
    }

    /// Declares a cursor for `s` with `p` in the open transaction; returns its name.
    async fn declare(
        &mut self,
        s: &PgStmt,
        p: &[RowValues],
        deadline: Option<Instant>,
    ) -> Result<Box<str>> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let name = format!("sqlmw_stream_{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let sql = format!("DECLARE {name} NO SCROLL CURSOR FOR {}", s.text);
        let params = p.iter().map(PgParam).zip(s.param_types.iter().cloned());
        self.in_flight = true;
        let client = self.client()?;
        let declared = async {
            let rows: Vec<tokio_postgres::Row> = client
                .query_typed_raw(&sql, params)
                .await?
                .try_collect()
                .await?;
            drop(rows);
            Ok::<(), tokio_postgres::Error>(())
        };
        // Past the limit the connection is given up at once (its statement cancelled), which
        // ends the transaction on the server.
        let Ok(r) = within(deadline, declared).await else {
            self.give_up();
            return Err(crate::deadline::error());
        };
        self.in_flight = false;
        r.map_err(map_err)?;
        Ok(name.into())
    }

    /// Fetches the cursor's next batch of up to `*size` rows into `out`, and sizes the next
    /// one; `false` when the cursor is exhausted (then closed).
    async fn fetch<T: FromRow>(
        &mut self,
        name: &str,
        size: &mut usize,
        columns: &crate::results::Columns,
        deadline: Option<Instant>,
        out: &mut VecDeque<T>,
    ) -> Result<std::result::Result<bool, ()>> {
        let asked = *size;
        let sql = format!("FETCH {asked} FROM {name}");
        self.in_flight = true;
        let client = self.client()?;
        let Ok(r) = within(deadline, client.query_typed(&sql, &[])).await else {
            // The FETCH would run on: the connection is given up at once (its statement
            // cancelled), which ends the transaction on the server.
            self.give_up();
            return Ok(Err(()));
        };
        self.in_flight = false;
        let rows = r.map_err(map_err)?;
        // The batch's bytes, estimated from its first row.
        let bytes = rows.first().map_or(0, row_bytes).saturating_mul(rows.len());
        for row in &rows {
            out.push_back(crate::decode::decode_taking::<T, _>(PgRow {
                row,
                columns,
            })?);
        }
        if rows.len() == asked {
            if bytes.saturating_mul(4) <= CURSOR_BATCH_BYTES {
                *size = (asked * 4).min(CURSOR_MAX_ROWS);
            } else if bytes > CURSOR_BATCH_BYTES {
                *size = (asked / 2).max(1);
            }
            return Ok(Ok(true));
        }
        self.in_flight = true;
        let closed = self.client()?.batch_execute(&format!("CLOSE {name}")).await;
        self.in_flight = false;
        closed.map_err(map_err)?;
        Ok(Ok(false))
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
                // Given up at once (its statement cancelled); replaced before its next use.
                Err(_) => {
                    self.give_up();
                    return Err(crate::deadline::stopped(
                        crate::contract::WingStmt::writes(&**s),
                        self.in_tx,
                    ));
                }
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
        let rows = match c.rows.as_mut() {
            None => return Ok(false),
            Some(Rows::Cursor(name, size)) => {
                let name = name.clone();
                let mut next = *size;
                let r = self
                    .fetch(&name, &mut next, &c.stmt.columns, c.deadline, out)
                    .await;
                if let Some(Rows::Cursor(_, size)) = c.rows.as_mut() {
                    *size = next;
                }
                return match r {
                    Ok(Ok(true)) => Ok(true),
                    Ok(Ok(false)) => {
                        c.rows = None;
                        Ok(false)
                    }
                    Ok(Err(())) => {
                        c.timed_out = true;
                        Err(crate::deadline::error())
                    }
                    Err(e) => {
                        if !self.in_flight {
                            // The server answered: its error ended the cursor's transaction
                            // work; nothing is left running.
                            c.rows = None;
                        }
                        Err(e)
                    }
                };
            }
            Some(Rows::Wire(rows)) => rows,
        };
        // The first row of the batch is waited for; then only rows already received are taken.
        let first = match c.deadline {
            None => rows.as_mut().try_next().await,
            Some(at) => match tokio::time::timeout_at(at.into(), rows.as_mut().try_next()).await {
                Ok(r) => r,
                Err(_) => {
                    // The statement stops now, not at the connection's next operation: the
                    // connection is given up (its statement cancelled in the background) and
                    // replaced before its next use.
                    c.timed_out = true;
                    c.rows = None;
                    self.give_up();
                    return Err(crate::deadline::stopped(
                        crate::contract::WingStmt::writes(&*c.stmt),
                        self.in_tx,
                    ));
                }
            },
        };
        let mut next = first;
        let mut taken = 0;
        loop {
            match next {
                Ok(Some(row)) => {
                    out.push_back(crate::decode::decode_taking::<T, _>(PgRow {
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
        match rows {
            // A dropped FETCH is read to its end by the connection (one batch at most); the
            // cursor stays, suspended, until the transaction ends.
            Rows::Cursor(..) if !c.timed_out => {
                self.in_flight = false;
                true
            }
            Rows::Cursor(..) => false,
            Rows::Wire(rows) => {
                drop(rows);
                if finished || (self.in_tx && !c.timed_out) {
                    self.in_flight = false;
                    return true;
                }
                false
            }
        }
    }
}

/// Whether `s` can run as a cursor: a query (`SELECT`, `VALUES`, `TABLE`, or `WITH` without a
/// data-changing part, also in parentheses); `DECLARE` accepts nothing else. Every shape of
/// query runs as a cursor: one that did not would make a dropped stream hold the
/// transaction's next statement until the rest of its rows had crossed the network.
fn cursor_query(s: &PgStmt) -> bool {
    use crate::sql::scanner::{Kind, tokens};
    if s.dml {
        return false;
    }
    let text = &*s.text;
    tokens(text, super::dialect::DIALECT)
        .find(|t| !(t.kind.is_blank() || (t.kind == Kind::Punct && &text[t.start..t.end] == "(")))
        .filter(|t| t.kind == Kind::Word)
        .is_some_and(|t| {
            let w = &text[t.start..t.end];
            ["SELECT", "VALUES", "TABLE", "WITH"]
                .iter()
                .any(|k| w.eq_ignore_ascii_case(k))
        })
}

/// Runs `work` until `deadline`, if any: `Err(())` when the limit passed first.
async fn within<F: std::future::Future>(
    deadline: Option<Instant>,
    work: F,
) -> std::result::Result<F::Output, ()> {
    match deadline {
        None => Ok(work.await),
        Some(at) => tokio::time::timeout_at(at.into(), work).await.map_err(drop),
    }
}

/// The size of one row's values on the wire.
fn row_bytes(row: &tokio_postgres::Row) -> usize {
    (0..row.len())
        .map(|i| row.try_get::<_, RawLen>(i).map_or(0, |l| l.0))
        .sum()
}

/// The length of any value's wire form.
struct RawLen(usize);

impl<'a> postgres_types::FromSql<'a> for RawLen {
    fn from_sql(
        _: &postgres_types::Type,
        raw: &'a [u8],
    ) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawLen(raw.len()))
    }

    fn from_sql_null(
        _: &postgres_types::Type,
    ) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawLen(0))
    }

    fn accepts(_: &postgres_types::Type) -> bool {
        true
    }
}
