//! Running statements on a PostgreSQL connection: `select`, `dml`, `optional`, `all`, the
//! pipeline and scripts, each without its time limit (the [`Wing`](crate::contract::Wing)
//! operations in `conn.rs` add it).

use std::sync::Arc;

use futures_util::{StreamExt, TryStreamExt, pin_mut};

use super::conn::PgConnection;
use super::error::map_err;
use super::params::PgParam;
use super::rows::{PgRow, collect};
use super::stmt::PgStmt;
use crate::decode::FromRow;
use crate::error::Result;
use crate::results::ResultSet;
use crate::value::RowValues;

/// Runs `s` with `p`: the named statement, or (unnamed mode) the text with the described
/// parameter types, in one round trip.
pub(super) async fn rows_of(
    client: &tokio_postgres::Client,
    s: &PgStmt,
    p: &[RowValues],
) -> std::result::Result<tokio_postgres::RowStream, tokio_postgres::Error> {
    match &s.stmt {
        Some(st) => client.query_raw(st, p.iter().map(PgParam)).await,
        None => {
            client
                .query_typed_raw(
                    &s.text,
                    p.iter().map(PgParam).zip(s.param_types.iter().cloned()),
                )
                .await
        }
    }
}

/// The unnamed mode's `execute`: runs `s` and returns the rows it changed.
async fn count_rows(
    client: &tokio_postgres::Client,
    s: &PgStmt,
    p: &[RowValues],
) -> std::result::Result<u64, tokio_postgres::Error> {
    let stream = rows_of(client, s, p).await?;
    pin_mut!(stream);
    while stream.try_next().await?.is_some() {}
    Ok(stream.rows_affected().unwrap_or(0))
}

/// How many executions of a `pipeline()` are in flight at once (see `pipeline_within`).
const PIPELINE_WINDOW: usize = 128;

/// One execution of a `pipeline()`: its rows, collected.
async fn one_set(
    client: &tokio_postgres::Client,
    s: &PgStmt,
    p: &[RowValues],
) -> Result<ResultSet> {
    let rows: Vec<tokio_postgres::Row> = rows_of(client, s, p)
        .await
        .map_err(map_err)?
        .try_collect()
        .await
        .map_err(map_err)?;
    collect(&rows, &s.columns)
}

impl PgConnection {
    pub(super) async fn select_once(
        &mut self,
        s: &Arc<PgStmt>,
        p: &[RowValues],
    ) -> Result<ResultSet> {
        s.check(p)?;
        self.in_flight = true;
        let r = async {
            let stream = rows_of(self.client()?, s, p).await.map_err(map_err)?;
            pin_mut!(stream);
            let mut rows = Vec::new();
            while let Some(row) = stream.try_next().await.map_err(map_err)? {
                rows.push(row);
            }
            let mut rs = collect(&rows, &s.columns)?;
            if s.dml {
                rs.rows_affected = stream.rows_affected().unwrap_or(0);
            }
            Ok(rs)
        }
        .await;
        self.in_flight = false;
        r
    }

    pub(super) async fn dml_once(&mut self, s: &Arc<PgStmt>, p: &[RowValues]) -> Result<u64> {
        s.check(p)?;
        self.in_flight = true;
        let r = match &s.stmt {
            Some(st) => self.client()?.execute_raw(st, p.iter().map(PgParam)).await,
            None => count_rows(self.client()?, s, p).await,
        };
        self.in_flight = false;
        let n = r.map_err(map_err)?;
        Ok(if s.dml { n } else { 0 })
    }

    pub(super) async fn optional_once<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<PgStmt>,
        p: &[RowValues],
    ) -> Result<Option<T>> {
        s.check(p)?;
        self.in_flight = true;
        let r = async {
            let stream = rows_of(self.client()?, s, p).await.map_err(map_err)?;
            pin_mut!(stream);
            let first = stream.try_next().await.map_err(map_err)?;
            if first.is_some() {
                // Drain the rest so the request is complete before the connection is reused
                // (a finished stream must not be polled again).
                while stream.try_next().await.map_err(map_err)?.is_some() {}
            }
            match first {
                Some(row) => crate::decode::decode_taking::<T, _>(PgRow {
                    row: &row,
                    columns: &s.columns,
                })
                .map(Some),
                None => Ok(None),
            }
        }
        .await;
        self.in_flight = false;
        r
    }

    pub(super) async fn all_once<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<PgStmt>,
        p: &[RowValues],
    ) -> Result<Vec<T>> {
        s.check(p)?;
        self.in_flight = true;
        let r = async {
            let stream = rows_of(self.client()?, s, p).await.map_err(map_err)?;
            pin_mut!(stream);
            let mut out = Vec::new();
            while let Some(row) = stream.try_next().await.map_err(map_err)? {
                out.push(crate::decode::decode_taking::<T, _>(PgRow {
                    row: &row,
                    columns: &s.columns,
                })?);
            }
            Ok(out)
        }
        .await;
        self.in_flight = false;
        r
    }

    pub(super) async fn simple(&mut self, sql: &str) -> Result<()> {
        self.in_flight = true;
        let r = self.client()?.batch_execute(sql).await;
        self.in_flight = false;
        if r.is_ok() {
            // The server answered: the connection is alive (see `liveness.rs`).
            self.unverified = false;
        }
        r.map_err(map_err)
    }

    /// [`Wing::pipeline`](crate::contract::Wing::pipeline) without its time limit.
    pub(super) async fn pipeline_within(
        &mut self,
        s: &Arc<PgStmt>,
        sets: &[&[RowValues]],
    ) -> Result<Vec<ResultSet>> {
        for p in sets {
            s.check(p)?;
        }
        self.in_flight = true;
        let client = self.client()?;
        // At most `PIPELINE_WINDOW` executions in flight: enough to keep the connection busy,
        // and few enough that dropping the call (each in-flight execution holds its response
        // channel) takes microseconds, not the milliseconds thousands of them would.
        let mut out = Vec::with_capacity(sets.len());
        let mut running = futures_util::stream::FuturesOrdered::new();
        let mut next = sets.iter();
        let mut ran = false;
        let r = loop {
            while running.len() < PIPELINE_WINDOW {
                match next.next() {
                    Some(p) => running.push_back(one_set(client, s, p)),
                    None => break,
                }
            }
            match running.next().await {
                Some(Ok(set)) => {
                    ran = true;
                    out.push(set);
                }
                Some(Err(e)) => break Err(e),
                None => break Ok(out),
            }
        };
        drop(running);
        self.in_flight = false;
        if ran {
            // An execution ran: the call can no longer run again (see `liveness.rs`).
            self.unverified = false;
        }
        r
    }

    /// [`Wing::execute_batch`](crate::contract::Wing::execute_batch) without its time limit.
    pub(super) async fn execute_batch_within(&mut self, sql: &str, in_tx: bool) -> Result<()> {
        if self.needs_rollback || self.in_flight {
            self.repair().await?;
        }
        crate::sql::reject_nul(sql)?;
        // Read as the session reads it, before the script may change that (the hall settled an
        // unsure setting first, see `Wing::settle_dialect`).
        let d = super::dialect::of_session(self.backslash_strings);
        self.note_sql(sql);
        let own_tx = !in_tx && crate::sql::has_transaction_control(sql, d);
        if own_tx {
            self.unknown = true;
        }
        // After a `DEALLOCATE` or `DISCARD ALL` the cached statements may be gone on the server.
        if self.deallocated || crate::sql::script::changes_schema(sql, d) {
            // Plans cached on this connection may describe tables the script changes; a stale
            // one would fail ("cached plan must not change result type") and, inside a
            // transaction, abort it. Prepare them again instead.
            if let Some(o) = self.obj.as_mut() {
                o.stmts.clear();
            }
        }
        let r = if in_tx || own_tx {
            // One query: the server parses it whole, with the setting it found.
            self.simple(sql).await
        } else {
            self.run_segments(sql).await
        };
        if r.is_err() && own_tx && !self.is_closed() {
            // A failed script must not leave its own (now aborted) transaction open.
            let _ = self.simple("ROLLBACK").await;
        }
        r
    }

    /// A script outside a transaction, segment by segment: each run of ordinary statements is
    /// one implicit transaction, and a statement that cannot run inside one (`VACUUM`, `CREATE
    /// INDEX CONCURRENTLY`, …) runs on its own. Each segment is a query of its own, which the
    /// server parses with `standard_conforming_strings` as it is then: after a segment that may
    /// have changed it, the setting is read again, and the rest is read anew with it (and noted
    /// as so read).
    async fn run_segments(&mut self, sql: &str) -> Result<()> {
        let mut rest = sql;
        'script: loop {
            let d = super::dialect::of_session(self.backslash_strings);
            let mut at = 0;
            for (part, _) in crate::sql::segments(rest, d) {
                at += part.len();
                if crate::sql::is_blank(part, d) {
                    continue;
                }
                self.simple(part).await?;
                let changes = super::effects::session_change(part, d);
                if at < rest.len() && super::effects::may_change_strings(part, changes, d) {
                    Box::pin(self.reread_strings()).await?;
                    rest = &rest[at..];
                    self.note_sql(rest);
                    continue 'script;
                }
            }
            return Ok(());
        }
    }
}
