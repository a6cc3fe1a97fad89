//! Running statements on a MySQL connection: `select`, `dml`, `optional`, `all` and scripts,
//! each without its time limit (the [`Wing`](crate::contract::Wing) operations in `conn.rs`
//! add it), and what a statement left, checked when it ends.

use std::sync::Arc;

use mysql_async::prelude::Queryable;
use mysql_async::{BinaryProtocol, QueryResult, Statement, Value};

use super::config::MyClient;
use super::conn::MyConnection;
use super::counts::CountRule;
use super::error::map_err;
use super::params::to_values;
use super::rows::{MyRow, columns_of, row_values};
use super::stmt::{Effects, MyStmt};
use super::tx::{CANARY, implicit_commit, in_transaction};
use crate::decode::FromRow;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::{Columns, ResultSet};
use crate::value::RowValues;

/// The statement to run `s` with on `c`: its own (named mode), or a fresh one that the caller
/// closes after the run (unnamed mode, or `s` prepared on another connection or before a
/// reset).
pub(super) async fn statement_for(c: &mut MyClient, s: &MyStmt) -> Result<(Statement, bool)> {
    match &s.stmt {
        Some(st) if s.conn == (c.id, c.generation) => Ok((st.clone(), false)),
        _ => {
            let st = c.conn.prep(&*s.text).await.map_err(map_err)?;
            Ok((st, true))
        }
    }
}

impl MyConnection {
    /// Ends a call whose statement ran (`r` is its outcome): what it left in the session, a
    /// value the server changed with only a warning, and a transaction the server ended or
    /// committed by itself (a statement with an implicit commit that reached the server some way
    /// the middleware could not see, as through a stored procedure; a deadlock). The common
    /// case, a plain statement that went well, sends nothing.
    pub(super) async fn finish<R>(&mut self, s: Effects, r: Result<R>) -> Result<R> {
        self.in_flight = false;
        let in_tx = self.in_tx;
        if !s.plain {
            self.unknown |= !in_tx;
        }
        let Some(c) = self.obj.as_mut() else {
            return r;
        };
        if !s.plain {
            c.dirty = true;
        }
        if s.ddl {
            super::stmt::schema_changed(c);
        }
        let canary = std::mem::take(&mut self.canary);
        if let Err(e) = &r {
            self.node_error(e);
            if in_tx
                && e.backend() == crate::Backend::Mysql
                && e.kind() != ErrorKind::ConnectionLost
            {
                // Did the server end the whole transaction (a deadlock does)? `DO 1` answers
                // with the transaction status.
                self.in_flight = true;
                let open = {
                    let c = self.client()?;
                    c.conn.query_drop("DO 1").await.map_err(map_err)?;
                    in_transaction(&c.conn)
                };
                self.in_flight = false;
                self.tx_ended |= !open;
            }
            return r;
        }
        if canary {
            self.in_flight = true;
            let c = self.client()?;
            let released = c
                .conn
                .query_drop(format!("RELEASE SAVEPOINT {CANARY}"))
                .await;
            self.in_flight = false;
            if let Err(e) = released {
                let e = map_err(e);
                if e.driver_code() == Some("1305") {
                    self.tx_ended = true;
                    return Err(implicit_commit());
                }
                return Err(e);
            }
        }
        if !s.plain {
            self.in_flight = true;
            let (found, off) = {
                let c = self.client()?;
                let found = super::check::session(c, in_tx).await?;
                (found, c.autocommit_off)
            };
            self.followup |= off;
            self.in_flight = false;
            if let Some(e) = found.error() {
                return Err(e);
            }
        }
        if s.writes {
            self.in_flight = true;
            let changed = {
                let c = self.client()?;
                super::warnings::changed_value(c, in_tx).await?
            };
            self.in_flight = false;
            if let Some(e) = changed {
                return Err(e);
            }
        }
        let open = in_transaction(&self.client()?.conn);
        if in_tx && !open {
            self.tx_ended = true;
            return Err(implicit_commit());
        }
        if !in_tx && s.writes && !self.unknown && open {
            // A write outside a transaction that the server did not commit: autocommit was off
            // some way no check saw. Nothing uncommitted is acknowledged.
            self.in_flight = true;
            super::check::restore_autocommit(self.client()?).await?;
            self.in_flight = false;
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::TransactionState,
                "the server left this write inside a transaction it did not commit (autocommit was off); it was rolled back and autocommit turned back on: run it again",
            ));
        }
        r
    }

    /// Converts the parameters and marks the call as running: what every statement call does
    /// before it goes to the server.
    #[inline]
    pub(super) fn start(
        &mut self,
        s: &MyStmt,
        p: &[RowValues],
    ) -> Result<(&mut MyClient, Vec<Value>)> {
        s.check(p)?;
        let utc = self.client()?.facts.utc;
        let values = to_values(p, s.order.as_deref(), utc)?;
        let c = self.client()?;
        check_size(c, &values)?;
        self.in_flight = true;
        Ok((self.client()?, values))
    }

    pub(super) async fn select_once(&mut self, s: &MyStmt, p: &[RowValues]) -> Result<ResultSet> {
        let now = self.read_now(s).await?;
        let s = now.as_deref().unwrap_or(s);
        self.guard(s.fx).await?;
        let (c, values) = self.start(s, p)?;
        let r = select_rows(c, s, values).await;
        self.finish(s.fx, r).await
    }

    pub(super) async fn dml_once(&mut self, s: &MyStmt, p: &[RowValues]) -> Result<u64> {
        let now = self.read_now(s).await?;
        let s = now.as_deref().unwrap_or(s);
        self.guard(s.fx).await?;
        let (c, values) = self.start(s, p)?;
        let r = count_rows(c, s, values).await;
        self.finish(s.fx, r).await
    }

    pub(super) async fn optional_once<T: FromRow + Send + 'static>(
        &mut self,
        s: &MyStmt,
        p: &[RowValues],
    ) -> Result<Option<T>> {
        let now = self.read_now(s).await?;
        let s = now.as_deref().unwrap_or(s);
        self.guard(s.fx).await?;
        let (c, values) = self.start(s, p)?;
        let r = async {
            let temp = execute(c, s, values).await?;
            let r = async {
                let mut qr = QueryResult::<BinaryProtocol>::new(&mut c.conn);
                let first = qr.next().await.map_err(map_err)?;
                if first.is_some() {
                    // The rest is read before the connection is used again.
                    while qr.next().await.map_err(map_err)?.is_some() {}
                }
                super::sets::no_more(&mut qr).await?;
                let Some(mut row) = first else {
                    return Ok(None);
                };
                let mut fresh = None;
                let cols = current_columns(&row, &s.columns, &mut fresh);
                crate::decode::decode_taking::<T, _>(MyRow {
                    row: &mut row,
                    columns: cols,
                })
                .map(Some)
            }
            .await;
            close_temporary(c, temp).await?;
            r
        }
        .await;
        self.finish(s.fx, r).await
    }

    pub(super) async fn all_once<T: FromRow + Send + 'static>(
        &mut self,
        s: &MyStmt,
        p: &[RowValues],
    ) -> Result<Vec<T>> {
        let now = self.read_now(s).await?;
        let s = now.as_deref().unwrap_or(s);
        self.guard(s.fx).await?;
        let (c, values) = self.start(s, p)?;
        let r = async {
            let temp = execute(c, s, values).await?;
            let r = async {
                let mut qr = QueryResult::<BinaryProtocol>::new(&mut c.conn);
                let mut out = Vec::new();
                let mut fresh = None;
                while let Some(mut row) = qr.next().await.map_err(map_err)? {
                    let cols = current_columns(&row, &s.columns, &mut fresh);
                    out.push(crate::decode::decode_taking::<T, _>(MyRow {
                        row: &mut row,
                        columns: cols,
                    })?);
                }
                super::sets::no_more(&mut qr).await?;
                Ok(out)
            }
            .await;
            close_temporary(c, temp).await?;
            r
        }
        .await;
        self.finish(s.fx, r).await
    }

    /// Runs SQL without parameters (transaction control, scripts) in the text protocol.
    pub(super) async fn simple(&mut self, sql: &str) -> Result<()> {
        self.in_flight = true;
        let c = self.client()?;
        let r = c.conn.query_drop(sql).await.map_err(map_err);
        self.in_flight = false;
        if let Err(e) = &r {
            self.node_error(e);
        }
        r
    }

    /// [`Wing::execute_batch`](crate::contract::Wing::execute_batch) without its time limit. Inside a transaction, or when the script
    /// has transaction control of its own, it runs as one multi-statement text. Otherwise each
    /// run of ordinary statements runs inside a transaction of its own, so it applies whole or
    /// not at all, and each statement MySQL commits implicitly (DDL) runs on its own between
    /// them.
    pub(super) async fn execute_batch_within(&mut self, sql: &str, in_tx: bool) -> Result<()> {
        crate::sql::reject_nul(sql)?;
        let d = self.client()?.facts.dialect();
        // A script binds no values: its literals are left to strict mode (see `warnings.rs`).
        let fx = Effects {
            writes: false,
            ..Effects::of(sql, d)
        };
        let own_tx = !in_tx && crate::sql::has_transaction_control(sql, d);
        self.unknown |= !in_tx && (own_tx || !fx.plain);
        self.guard(fx).await?;
        let r = if in_tx || own_tx {
            self.simple(sql).await
        } else {
            let mut r = Ok(());
            for (part, alone) in crate::sql::segments(sql, d) {
                if crate::sql::is_blank(part, d) {
                    continue;
                }
                r = if alone {
                    self.simple(part).await
                } else {
                    self.atomic(part).await
                };
                if r.is_err() {
                    break;
                }
            }
            r
        };
        if r.is_err() && own_tx {
            // A failed script must not leave its own transaction open (the server's status is
            // not known after an error part-way through a script: roll back in any case).
            let _ = self.simple("ROLLBACK").await;
        }
        self.finish(fx, r).await
    }

    /// Runs a script of ordinary statements inside `START TRANSACTION … COMMIT`.
    pub(super) async fn atomic(&mut self, part: &str) -> Result<()> {
        self.simple("START TRANSACTION").await?;
        match self.simple(part).await {
            Ok(()) => self.simple("COMMIT").await,
            Err(e) => {
                let _ = self.simple("ROLLBACK").await;
                Err(e)
            }
        }
    }
}

/// Refuses parameters the server would refuse by closing the connection: a value, or all of
/// them together, larger than its `max_allowed_packet`.
#[inline]
pub(super) fn check_size(c: &MyClient, values: &[Value]) -> Result<()> {
    let mut total = 0u64;
    for v in values {
        if let Value::Bytes(b) = v {
            total += b.len() as u64;
        }
    }
    if total < c.max_packet {
        return Ok(());
    }
    Err(SqlMiddlewareDbError::new(
        ErrorKind::InvalidInput,
        format!(
            "the parameters hold {total} bytes; the server takes at most its max_allowed_packet ({} bytes) in one statement: raise it on the server, or send the value in parts",
            c.max_packet
        ),
    ))
}

/// The columns of a result, decided at its first row: the statement's, unless the result's
/// metadata names other columns (the table changed since the statement was prepared, or the
/// server did not describe the result at prepare time), then the result's own.
#[inline]
pub(super) fn current_columns<'a>(
    row: &mysql_async::Row,
    cols: &Arc<Columns>,
    decided: &'a mut Option<Arc<Columns>>,
) -> &'a Arc<Columns> {
    decided.get_or_insert_with(|| {
        let meta = row.columns_ref();
        let same = meta.len() == cols.len()
            && meta
                .iter()
                .zip(cols.names())
                .all(|(m, n)| m.name_ref() == n.as_bytes());
        if same {
            Arc::clone(cols)
        } else {
            Arc::new(columns_of(meta))
        }
    })
}

/// Runs `s` with `values` on `c`, leaving its result on the wire for the caller to read (and
/// mysql_async to read off before the connection's next command, if the caller stops early).
/// Returns the statement prepared for this run only, which the caller closes after reading.
pub(super) async fn execute(
    c: &mut MyClient,
    s: &MyStmt,
    values: Vec<Value>,
) -> Result<Option<Statement>> {
    let (st, temporary) = statement_for(c, s).await?;
    if let Err(e) = c.conn.exec_iter(&st, values).await {
        if temporary {
            let _ = c.conn.close(st).await;
        }
        return Err(map_err(e));
    }
    Ok(temporary.then_some(st))
}

/// Closes a statement prepared for one run.
pub(super) async fn close_temporary(c: &mut MyClient, st: Option<Statement>) -> Result<()> {
    match st {
        Some(st) => c.conn.close(st).await.map_err(map_err),
        None => Ok(()),
    }
}

/// Runs `s` and materialises its rows.
pub(super) async fn select_rows(
    c: &mut MyClient,
    s: &MyStmt,
    values: Vec<Value>,
) -> Result<ResultSet> {
    let temp = execute(c, s, values).await?;
    let r = async {
        let mut qr = QueryResult::<BinaryProtocol>::new(&mut c.conn);
        let mut rs: Option<ResultSet> = None;
        let mut fresh: Option<Arc<Columns>> = None;
        while let Some(row) = qr.next().await.map_err(map_err)? {
            let cols = current_columns(&row, &s.columns, &mut fresh);
            let rs = rs.get_or_insert_with(|| ResultSet::with_capacity(Arc::clone(cols), 1));
            rs.push_values(row_values(row, cols)?);
        }
        super::sets::no_more(&mut qr).await?;
        Ok::<_, SqlMiddlewareDbError>(rs)
    }
    .await;
    close_temporary(c, temp).await?;
    let mut rs = r?.unwrap_or_else(|| ResultSet::with_capacity(Arc::clone(&s.columns), 0));
    if s.dml {
        rs.rows_affected = changed(c, s, rs.results.len() as u64);
    }
    Ok(rs)
}

/// Runs `s`, reads off any rows, and returns the rows it changed (0 unless it is DML).
pub(super) async fn count_rows(c: &mut MyClient, s: &MyStmt, values: Vec<Value>) -> Result<u64> {
    let temp = execute(c, s, values).await?;
    let r = async {
        let mut qr = QueryResult::<BinaryProtocol>::new(&mut c.conn);
        let mut rows = 0u64;
        while qr.next().await.map_err(map_err)?.is_some() {
            rows += 1;
        }
        Ok::<u64, SqlMiddlewareDbError>(rows)
    }
    .await;
    close_temporary(c, temp).await?;
    let rows = r?;
    Ok(if s.dml { changed(c, s, rows) } else { 0 })
}

/// The rows a DML statement changed, with the meaning the count has on every engine (see
/// `counts.rs`): the server's count, or, for `… RETURNING` (whose result set ends without
/// one; MariaDB does not describe its columns at prepare time either), the rows it returned.
#[inline]
fn changed(c: &MyClient, s: &MyStmt, returned: u64) -> u64 {
    if returned != 0 {
        return returned;
    }
    match s.count {
        CountRule::AsReported => c.conn.affected_rows(),
        rule => rule.count(c.conn.affected_rows(), &c.conn.info()),
    }
}
