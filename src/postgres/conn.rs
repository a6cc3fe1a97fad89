//! PostgreSQL connection operations: the [`Wing`] contract on tokio-postgres. Every backend
//! folder has a `conn.rs` with the same operations.

use std::sync::Arc;
use std::time::Duration;

/// A pooled Postgres connection as deadpool hands it out.
type Obj = deadpool::managed::Object<super::config::PgManager>;

/// Whether an abandoned statement on `obj` is cancelled with a cancel request before the
/// connection is closed. Not in the unnamed (pooler) mode: a pooler routes cancel requests to
/// whatever server connection it maps them to, and PgBouncer 1.18 was seen to crash on them
/// (`disconnect_client(): bad client state`); the connection is closed instead, and the statement
/// runs to its end on the server.
fn cancels(obj: &Obj) -> bool {
    obj.opts.statement_cache == StatementCache::Named
}

/// Whether running `s` may commit a change by itself (outside a transaction): then a limit that
/// passes after it was sent leaves its outcome unknown.
#[inline]
fn writes(s: &PgStmt) -> bool {
    crate::contract::WingStmt::writes(s)
}

/// What a statement takes and returns, as the server described it.
struct Described {
    params: Vec<tokio_postgres::types::Type>,
    columns: crate::results::Columns,
}

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

use futures_util::{StreamExt, TryStreamExt, pin_mut};
use tokio_postgres::error::SqlState;

use super::error::map_err;
use super::params::PgParam;
use super::rows::{PgRow, collect, columns_of};
use super::stmt::{PgStmt, StatementCache, too_many_placeholders};
use crate::contract::Wing;
use crate::deadline::At;
use crate::decode::FromRow;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::ResultSet;
use super::effects::Session;
use crate::sql::ident::BulkTarget;
use crate::translation::{PlaceholderStyle, TranslationMode, translate_placeholders};
use crate::value::RowValues;

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

/// Runs `$call` with the statement `$s` (or the one prepared in its place, see
/// `PgStmt::current`) bound to `$v`; when the server refused the cached plan (see
/// `PgConn::replannable`), prepares the statement again and runs `$call` once more with it.
macro_rules! replanned {
    ($self:ident, $s:ident, |$v:ident| $call:expr) => {{
        let $v = PgStmt::current($s);
        let here;
        let $v = match $self.obj.as_ref() {
            // Prepared on a connection since replaced: prepared again on this one.
            Some(o) if $v.stmt.is_some() && $v.conn != o.id => {
                here = Box::pin($self.prepare_within(&$v.key, $v.mode)).await?;
                &here
            }
            _ => $v,
        };
        match $call.await {
            Err(e) if $self.replannable(&e) => {
                let fresh = Box::pin($self.replan($v)).await?;
                let $v = &fresh;
                $call.await
            }
            r => r,
        }
    }};
}

/// Runs `$call` (an expression that awaits the operation) within the call's time limit `$at`,
/// if any (see `timeout.rs`); the hot path without a limit is `$call` alone, after one flag
/// check. A connection given up by an earlier call is replaced first, within the limit.
/// `$writes`: the call may commit a change by itself (a write outside a transaction), so a
/// limit passing after it was sent leaves its outcome unknown.
macro_rules! limited {
    ($self:ident, $at:expr, $call:expr, $writes:expr) => {{
        let at: At = $at;
        if $self.in_flight || $self.obj.is_none() {
            Box::pin($self.replace(at)).await?;
        }
        match at {
            None => $call,
            Some(at) => {
                crate::deadline::check(Some(at))?;
                // Boxed: the limited path (a timer) would otherwise grow every future that
                // awaits a Postgres call, limited or not.
                match Box::pin(super::timeout::within(at, async { $call })).await {
                    Some(r) => r,
                    None => Err($self.after_limit($writes)),
                }
            }
        }
    }};
}

/// A checked-out Postgres connection and what the middleware knows about its state.
///
/// tokio-postgres does not expose the server's transaction status, so the middleware keeps it:
/// a dropped transaction, an abandoned query, or raw access mark the connection, and a marked
/// connection is cleaned (cancel + `ROLLBACK`) before reuse or discarded.
pub(crate) struct PgConnection {
    /// The pool, to replace a connection whose abandoned statement may still be running.
    pool: super::Pool,
    obj: Option<Obj>,
    pub(super) needs_rollback: bool,
    pub(super) in_flight: bool,
    unknown: bool,
    /// Inside a transaction begun through the middleware.
    pub(super) in_tx: bool,
    /// What this checkout may have changed in the session: anything but statements whose text
    /// proves them plain (see `crate::sql::pg_effects`), and raw access. The connection is
    /// reset on return (see [`RESET`]).
    session: Session,
    /// A statement of this checkout deallocated prepared statements (`DEALLOCATE`, `DISCARD
    /// ALL`), possibly the driver's own: the connection is not reused.
    deallocated: bool,
    /// Where a completed write is noted, when the pool routes readers to the primary after
    /// writes (`read_your_writes`).
    pub(super) write_clock: Option<Arc<super::replica::WriteClock>>,
}

impl PgConnection {
    pub(crate) fn new(pool: super::Pool, obj: Obj) -> Self {
        Self {
            pool,
            obj: Some(obj),
            needs_rollback: false,
            in_flight: false,
            unknown: false,
            in_tx: false,
            session: Session::Untouched,
            deallocated: false,
            write_clock: None,
        }
    }

    /// After a call's limit passed: the statement may still run, so the connection is given up
    /// now (cancelled and closed in the background, see `timeout.rs`) and the next call
    /// checks out a replacement within its own limit. Inside a transaction the hall treats the
    /// transaction as aborted (the server rolls it back as the connection closes). Returns the
    /// call's error: `OutcomeUnknown` when `writes` (the statement may have committed by
    /// itself before it was stopped), else `Timeout`.
    fn after_limit(&mut self, writes: bool) -> SqlMiddlewareDbError {
        self.give_up();
        if writes && !self.in_tx {
            crate::deadline::unknown_outcome()
        } else {
            crate::deadline::error()
        }
    }

    /// Gives the connection up at once: a statement of it may still run (see
    /// `timeout::abandon`). It is replaced before its next use.
    pub(super) fn give_up(&mut self) {
        self.in_flight = true;
        if let Some(old) = self.obj.take() {
            let cancel = cancels(&old);
            super::timeout::abandon(old, cancel, self.net_bound());
        }
    }

    /// Replaces a connection given up (or lost) by an earlier call, within `deadline`.
    async fn replace(&mut self, deadline: Option<std::time::Instant>) -> Result<()> {
        if self.in_flight {
            self.give_up();
        }
        if self.obj.is_none() {
            self.needs_rollback = false;
            self.unknown = false;
            self.in_tx = false;
            self.session = Session::Untouched;
            self.obj = Some(super::timeout::checkout(&self.pool, deadline).await?);
            self.in_flight = false;
        }
        Ok(())
    }

    /// Notes what SQL about to be sent does to the connection's state beyond its rows: session
    /// changes, and (outside a `Tx`) transaction control, after which the server's transaction
    /// status is no longer known and is checked or reset before the connection is reused.
    fn note_sql(&mut self, sql: &str) {
        let s = super::effects::session_change(sql);
        if s > self.session {
            self.session = s;
        }
        if s != Session::Untouched && super::effects::deallocates(sql) {
            self.deallocated = true;
        }
        if !self.in_tx && crate::sql::has_transaction_control(sql, super::dialect::DIALECT) {
            self.unknown = true;
        }
    }

    /// The pool prepares unnamed statements (a transaction-mode pooler sits in between).
    pub(super) fn unnamed(&self) -> bool {
        self.obj
            .as_ref()
            .is_some_and(|o| o.opts.statement_cache == StatementCache::Unnamed)
    }

    pub(super) fn client(&self) -> Result<&tokio_postgres::Client> {
        self.obj.as_ref().map(|o| &*o.client).ok_or_else(|| {
            SqlMiddlewareDbError::new(
                ErrorKind::ConnectionLost,
                "this connection was discarded after a cancelled statement and no replacement could be checked out",
            )
        })
    }

    /// How long cancelling a statement or cleaning a connection may take: the pool's recycle
    /// timeout. Past it the connection is given up (detached and closed), never waited for.
    fn net_bound(&self) -> Duration {
        net_bound(&self.pool)
    }

    fn is_closed(&self) -> bool {
        self.obj.as_ref().is_none_or(|o| o.client.is_closed())
    }

    /// Makes the connection usable again after an abandoned transaction or query.
    ///
    /// A dropped query future may have left its statement running on the server. A cancel
    /// request is sent, but Postgres acts on it asynchronously: it could land on a later,
    /// unrelated statement. So the connection is not reused at all: it is detached from the
    /// pool and closed, and a fresh one is checked out in its place.
    pub(super) async fn repair(&mut self) -> Result<()> {
        if self.in_flight || self.obj.is_none() {
            // The cancel runs in the background; the replacement is bounded by the pool's
            // wait timeout.
            self.replace(None).await?;
        }
        if self.needs_rollback {
            let bound = self.net_bound();
            match tokio::time::timeout(bound, self.client()?.batch_execute("ROLLBACK")).await {
                Ok(r) => r.map_err(map_err)?,
                Err(_) => {
                    // The rollback may still be running: the connection is given up on drop.
                    self.in_flight = true;
                    return Err(SqlMiddlewareDbError::new(
                        ErrorKind::ConnectionLost,
                        format!(
                            "the server did not confirm the rollback of an abandoned transaction within {bound:?}; the connection is discarded"
                        ),
                    ));
                }
            }
            self.needs_rollback = false;
        }
        Ok(())
    }

    /// Repairs what an abandoned call or transaction left, before a statement runs.
    pub(super) async fn ready(&mut self) -> Result<()> {
        if self.needs_rollback || self.in_flight {
            self.repair().await?;
        }
        Ok(())
    }

    async fn select_once(&mut self, s: &Arc<PgStmt>, p: &[RowValues]) -> Result<ResultSet> {
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

    async fn dml_once(&mut self, s: &Arc<PgStmt>, p: &[RowValues]) -> Result<u64> {
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

    async fn optional_once<T: FromRow + Send + 'static>(
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
                Some(row) => T::from_row(&PgRow {
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

    async fn all_once<T: FromRow + Send + 'static>(
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
                out.push(T::from_row(&PgRow {
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

    /// The unnamed mode's prepare: learns the statement's parameter types and columns from a
    /// named statement that lives only inside a transaction (its own when none is open), which
    /// a transaction-mode pooler keeps on one server connection; the statement is closed before
    /// the transaction ends, so nothing is left on the server.
    ///
    /// The driver's type lookups happen here too, and only here: for a user-defined type (enum,
    /// domain, composite, arrays of them) tokio-postgres runs named statements of its own,
    /// which it prepares once and keeps for the life of the client. Behind a pooler the next
    /// describe may run on another server connection, where they do not exist. So they live
    /// only inside the describe's transaction as well: the first time the client prepares
    /// them, the describe learns their names and text from the server, and deallocates them
    /// before the transaction ends; every later describe prepares them again under the same
    /// names first. The types the driver learned stay in its cache, where running a statement
    /// finds its result types (after it was sent, when no lookup could be repaired).
    async fn describe(&mut self, sql: &str) -> Result<Described> {
        let own_tx = !self.in_tx;
        let Some(obj) = self.obj.as_mut() else {
            return Err(self.client().err().unwrap_or_else(|| {
                SqlMiddlewareDbError::new(ErrorKind::ConnectionLost, "no connection")
            }));
        };
        let c: &mut super::config::PgClient = obj;
        let (client, type_lookups) = (&c.client, &mut c.type_lookups);
        let mut open = String::from(if own_tx { "BEGIN; " } else { "" });
        open.push_str("SAVEPOINT sqlmw_describe");
        for (name, text) in type_lookups.iter() {
            open.push_str("; PREPARE \"");
            open.push_str(name);
            open.push_str("\" AS ");
            open.push_str(text);
        }
        if let Err(e) = client.batch_execute(&open).await {
            if own_tx {
                let _ = client.batch_execute("ROLLBACK").await;
            }
            return Err(map_err(e));
        }
        let prepared = client.prepare(sql).await;
        let failed = prepared.is_err();
        let mut close = String::new();
        if failed {
            // The savepoint keeps the transaction usable for the learning and deallocation.
            close.push_str("ROLLBACK TO SAVEPOINT sqlmw_describe; ");
        }
        let learn = type_lookups.len() < 3
            && match &prepared {
                Ok(st) => st
                    .params()
                    .iter()
                    .chain(st.columns().iter().map(|c| c.type_()))
                    .any(|t| tokio_postgres::types::Type::from_oid(t.oid()).is_none()),
                Err(_) => true,
            };
        // The statement is dropped here (its Close sent before anything that follows).
        let described = prepared
            .map(|st| Described {
                params: st.params().to_vec(),
                columns: columns_of(&st),
            })
            .map_err(map_err);
        let r = async {
            if failed {
                client.batch_execute(&close).await?;
                close.clear();
            }
            if learn {
                // Named statements the client prepared in this transaction and kept (the one
                // described is closed): its type lookups.
                let found = client
                    .simple_query(
                        "SELECT name, statement FROM pg_prepared_statements \
                         WHERE NOT from_sql AND prepare_time >= now()",
                    )
                    .await?;
                for m in found {
                    if let tokio_postgres::SimpleQueryMessage::Row(row) = m {
                        if let (Some(name), Some(text)) = (row.get(0), row.get(1)) {
                            let known = type_lookups.iter().any(|(n, _)| n == name);
                            let plain = name.bytes().all(|b| b.is_ascii_alphanumeric());
                            if !known && plain {
                                type_lookups.push((name.to_owned(), text.to_owned()));
                            }
                        }
                    }
                }
            }
            Ok::<_, tokio_postgres::Error>(())
        }
        .await;
        // The lookups go before the transaction ends.
        for (name, _) in type_lookups.iter() {
            close.push_str("DEALLOCATE \"");
            close.push_str(name);
            close.push_str("\"; ");
        }
        close.push_str(match (own_tx, described.is_ok() && r.is_ok()) {
            (true, true) => "COMMIT",
            (true, false) => "ROLLBACK",
            (false, _) => "RELEASE SAVEPOINT sqlmw_describe",
        });
        let end = client.batch_execute(&close).await;
        if let Err(e) = end {
            if own_tx {
                let _ = client.batch_execute("ROLLBACK").await;
            }
            return Err(map_err(e));
        }
        r.map_err(map_err)?;
        described
    }

    /// After a schema change the server refuses a cached statement whose result type changed
    /// (`0A000 cached plan must not change result type`). Outside a transaction the statement is
    /// prepared again and the call retried once; inside one the error stands (the transaction is
    /// aborted on the server).
    pub(super) fn replannable(&self, e: &SqlMiddlewareDbError) -> bool {
        !self.in_tx && e.driver_code() == Some("0A000") && e.message().contains("cached plan")
    }

    pub(super) async fn replan(&mut self, s: &PgStmt) -> Result<Arc<PgStmt>> {
        if let Some(o) = self.obj.as_mut() {
            o.stmts.remove(&s.key, s.mode);
        }
        let fresh = self.prepare(&s.key, s.mode, None).await?;
        // A handle that still holds `s` runs `fresh` from now on.
        let _ = s.successor.set(Arc::clone(&fresh));
        Ok(fresh)
    }

    /// Notes what a statement about to run does beyond its rows (see [`Self::note_sql`]).
    #[inline]
    pub(super) fn note_stmt(&mut self, s: &PgStmt) {
        if s.session > self.session {
            self.session = s.session;
        }
        if s.deallocates {
            self.deallocated = true;
        }
        if s.tx_control && !self.in_tx {
            self.unknown = true;
        }
    }

    /// [`Self::simple`] within `at`, if any: past it the connection is given up (see
    /// [`Self::give_up`]) and the call fails with `late`.
    async fn simple_limited(
        &mut self,
        sql: &str,
        at: At,
        late: fn() -> SqlMiddlewareDbError,
    ) -> Result<()> {
        match at {
            None => self.simple(sql).await,
            Some(at) => {
                crate::deadline::check(Some(at))?;
                match Box::pin(super::timeout::within(at, self.simple(sql))).await {
                    Some(r) => r,
                    None => {
                        self.give_up();
                        Err(late())
                    }
                }
            }
        }
    }

    async fn simple(&mut self, sql: &str) -> Result<()> {
        self.in_flight = true;
        let r = self.client()?.batch_execute(sql).await;
        self.in_flight = false;
        r.map_err(map_err)
    }

    /// [`Wing::prepare`] without its time limit.
    async fn prepare_within(&mut self, sql: &str, mode: TranslationMode) -> Result<Arc<PgStmt>> {
        if self.needs_rollback || self.in_flight {
            self.repair().await?;
        }
        let cached = match self.obj.as_mut() {
            Some(o) => o.stmts.get(sql, mode).cloned(),
            None => None,
        };
        if let Some(s) = cached {
            self.note_stmt(&s);
            return Ok(s);
        }
        crate::sql::reject_nul(sql)?;
        too_many_placeholders(sql)?;
        let translated = match mode {
            TranslationMode::On => translate_placeholders(sql, PlaceholderStyle::Postgres),
            TranslationMode::Off => std::borrow::Cow::Borrowed(sql),
        };
        const PG: crate::sql::Dialect = super::dialect::DIALECT;
        let session = super::effects::session_change(&translated);
        let tx_control = crate::sql::has_transaction_control(&translated, PG);
        let deallocates =
            session != Session::Untouched && super::effects::deallocates(&translated);
        // Parsed in the session the pool configured (not after a `SET search_path`, which a
        // prepared statement keeps), so it stays valid across a reset.
        let clean = self.session == Session::Untouched;
        // Noted before it reaches the server: a cancelled prepare may still have run.
        if session > self.session {
            self.session = session;
        }
        self.deallocated |= deallocates;
        if tx_control && !self.in_tx {
            self.unknown = true;
        }
        let unnamed = self
            .obj
            .as_ref()
            .is_some_and(|o| o.opts.statement_cache == StatementCache::Unnamed);
        self.in_flight = true;
        let r = if unnamed {
            self.describe(&translated).await.map(|d| (d, None))
        } else {
            self.client()?
                .prepare(&translated)
                .await
                .map(|st| {
                    let d = Described {
                        params: st.params().to_vec(),
                        columns: columns_of(&st),
                    };
                    (d, Some(st))
                })
                .map_err(map_err)
        };
        self.in_flight = false;
        // A failed prepare is not cached.
        let (described, stmt) = r?;
        let s = Arc::new(PgStmt {
            key: sql.into(),
            mode,
            text: translated.as_ref().into(),
            param_types: described.params,
            columns: Arc::new(described.columns),
            dml: crate::sql::is_dml(&translated, PG),
            session,
            clean,
            deallocates,
            tx_control,
            stmt,
            successor: std::sync::OnceLock::new(),
            conn: self.obj.as_ref().map_or(0, |o| o.id),
        });
        if let Some(o) = self.obj.as_mut() {
            let capacity = o.opts.statement_cache_capacity;
            o.stmts.insert(sql, mode, Arc::clone(&s), capacity);
        }
        Ok(s)
    }

    /// `s` as it runs on this connection: prepared again when it was prepared on a connection
    /// since replaced (named statements only exist on the connection that prepared them).
    pub(super) async fn here(&mut self, s: &Arc<PgStmt>) -> Result<Arc<PgStmt>> {
        let s = PgStmt::current(s);
        match self.obj.as_ref() {
            Some(o) if s.stmt.is_some() && s.conn != o.id => {
                Box::pin(self.prepare_within(&s.key, s.mode)).await
            }
            _ => Ok(Arc::clone(s)),
        }
    }

    /// [`Wing::pipeline`] without its time limit.
    async fn pipeline_within(
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
        let r = loop {
            while running.len() < PIPELINE_WINDOW {
                match next.next() {
                    Some(p) => running.push_back(one_set(client, s, p)),
                    None => break,
                }
            }
            match running.next().await {
                Some(Ok(set)) => out.push(set),
                Some(Err(e)) => break Err(e),
                None => break Ok(out),
            }
        };
        drop(running);
        self.in_flight = false;
        r
    }

    /// [`Wing::execute_batch`] without its time limit.
    async fn execute_batch_within(&mut self, sql: &str, in_tx: bool) -> Result<()> {
        if self.needs_rollback || self.in_flight {
            self.repair().await?;
        }
        crate::sql::reject_nul(sql)?;
        self.note_sql(sql);
        let own_tx =
            !in_tx && crate::sql::has_transaction_control(sql, super::dialect::DIALECT);
        if own_tx {
            self.unknown = true;
        }
        // After a `DEALLOCATE` or `DISCARD ALL` the cached statements may be gone on the server.
        if self.deallocated || crate::sql::script::changes_schema(sql, super::dialect::DIALECT) {
            // Plans cached on this connection may describe tables the script changes; a stale
            // one would fail ("cached plan must not change result type") and, inside a
            // transaction, abort it. Prepare them again instead.
            if let Some(o) = self.obj.as_mut() {
                o.stmts.clear();
            }
        }
        let r = if in_tx || own_tx {
            self.simple(sql).await
        } else {
            // Each run of ordinary statements is one implicit transaction; a statement that
            // cannot run inside one (`VACUUM`, `CREATE INDEX CONCURRENTLY`, …) runs on its own.
            let mut r = Ok(());
            for (part, _) in crate::sql::segments(sql, super::dialect::DIALECT) {
                if !crate::sql::is_blank(part, super::dialect::DIALECT) {
                    r = self.simple(part).await;
                    if r.is_err() {
                        break;
                    }
                }
            }
            r
        };
        if r.is_err() && own_tx && !self.is_closed() {
            // A failed script must not leave its own (now aborted) transaction open.
            let _ = self.simple("ROLLBACK").await;
        }
        r
    }
}

impl Wing for PgConnection {
    type Stmt = PgStmt;
    type Raw = tokio_postgres::Client;

    /// After an operation of the middleware was cancelled outside a transaction: whatever it
    /// left (a running statement, an open `BEGIN`) is cleaned before the next one.
    async fn recover(&mut self) -> Result<()> {
        if self.in_flight {
            // Given up now; the next call replaces it within its own limit.
            self.give_up();
            return Ok(());
        }
        self.repair().await?;
        self.simple("ROLLBACK").await?;
        Ok(())
    }

    async fn prepare(&mut self, sql: &str, mode: TranslationMode, at: At) -> Result<Arc<PgStmt>> {
        limited!(self, at, self.prepare_within(sql, mode).await, false)
    }

    async fn select(&mut self, s: &Arc<PgStmt>, p: &[RowValues], at: At) -> Result<ResultSet> {
        limited!(
            self,
            at,
            replanned!(self, s, |s| self.select_once(s, p)),
            writes(s)
        )
    }

    async fn dml(&mut self, s: &Arc<PgStmt>, p: &[RowValues], at: At) -> Result<u64> {
        limited!(
            self,
            at,
            replanned!(self, s, |s| self.dml_once(s, p)),
            writes(s)
        )
    }

    async fn optional<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<PgStmt>,
        p: &[RowValues],
        at: At,
    ) -> Result<Option<T>> {
        limited!(
            self,
            at,
            replanned!(self, s, |s| self.optional_once::<T>(s, p)),
            writes(s)
        )
    }

    async fn all<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<PgStmt>,
        p: &[RowValues],
        at: At,
    ) -> Result<Vec<T>> {
        limited!(
            self,
            at,
            replanned!(self, s, |s| self.all_once::<T>(s, p)),
            writes(s)
        )
    }

    /// Sends every execution before awaiting any answer; tokio-postgres pipelines them.
    async fn pipeline(
        &mut self,
        s: &Arc<PgStmt>,
        sets: &[&[RowValues]],
        at: At,
    ) -> Result<Vec<ResultSet>> {
        limited!(
            self,
            at,
            {
                let s = self.here(s).await?;
                self.pipeline_within(&s, sets).await
            },
            writes(s)
        )
    }

    type Cursor<T: FromRow + Send + 'static> = super::stream::PgCursor<T>;

    /// Streams the rows from the wire, with backpressure (see `stream.rs`).
    async fn stream_open<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<PgStmt>,
        p: Vec<RowValues>,
        at: At,
    ) -> Result<Self::Cursor<T>> {
        self.open_stream(s, p, at).await
    }

    async fn stream_next<T: FromRow + Send + 'static>(
        &mut self,
        c: &mut Self::Cursor<T>,
        out: &mut std::collections::VecDeque<T>,
    ) -> Result<bool> {
        self.next_batch(c, out).await
    }

    fn stream_close<T: FromRow + Send + 'static>(
        &mut self,
        c: Self::Cursor<T>,
        finished: bool,
    ) -> bool {
        self.close_stream(c, finished)
    }

    /// Runs a script with the simple-query protocol. Postgres runs a multi-statement script as
    /// one implicit transaction unless it contains its own transaction control.
    async fn execute_batch(&mut self, sql: &str, in_tx: bool, at: At) -> Result<()> {
        limited!(
            self,
            at,
            self.execute_batch_within(sql, in_tx).await,
            super::timeout::script_writes(sql)
        )
    }

    /// One `COPY … FROM STDIN (FORMAT binary)`; see `bulk.rs`.
    async fn bulk_insert<I, R>(
        &mut self,
        target: &BulkTarget,
        rows: I,
        in_tx: bool,
        at: At,
    ) -> Result<u64>
    where
        I: Iterator<Item = R> + Send,
        R: AsRef<[RowValues]> + Send + Sync,
    {
        limited!(self, at, self.bulk_load(target, rows, in_tx).await, true)
    }

    async fn begin(&mut self, at: At) -> Result<()> {
        if self.in_flight {
            // A connection given up earlier: replaced within this call's limit.
            Box::pin(self.replace(at)).await?;
        }
        if self.needs_rollback {
            // The rollback of an abandoned transaction, within this call's limit.
            match at {
                None => self.repair().await?,
                Some(at) => match Box::pin(super::timeout::within(at, self.repair())).await {
                    Some(r) => r?,
                    None => {
                        self.give_up();
                        return Err(crate::deadline::error());
                    }
                },
            }
        }
        if self.unknown {
            // Raw SQL may have opened a transaction: in one, now() is the transaction's start.
            // (Simple protocol: with the extended one, each message moves statement_timestamp.)
            let msgs = self
                .client()?
                .simple_query("SELECT now() = statement_timestamp()")
                .await
                .map_err(map_err)?;
            let idle = msgs.iter().any(|m| {
                matches!(m, tokio_postgres::SimpleQueryMessage::Row(r) if r.get(0) == Some("t"))
            });
            if !idle {
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::TransactionState,
                    "a transaction begun by raw SQL is still open on this connection; commit or roll it back first",
                ));
            }
        }
        // If this future is dropped after BEGIN went out, the flag makes the next user roll back.
        self.needs_rollback = true;
        self.simple_limited("BEGIN", at, crate::deadline::error).await?;
        self.needs_rollback = false;
        self.in_tx = true;
        Ok(())
    }

    /// Commits. A `COMMIT` that the server turns into a rollback (the transaction had failed)
    /// is reported as an error: the middleware checks, when it cannot know, with a probe.
    async fn commit(&mut self, at: At) -> Result<()> {
        self.in_tx = false;
        if self.unknown {
            // Raw access happened inside this transaction: make sure it is not aborted.
            if let Err(e) = self.simple("SELECT 1").await {
                let _ = self.simple("ROLLBACK").await;
                return Err(e.with_kind(ErrorKind::TransactionAborted));
            }
        }
        // Past the limit the COMMIT may have raced the stop: its outcome is unknown.
        match self
            .simple_limited("COMMIT", at, crate::deadline::unknown_outcome)
            .await
        {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::OutcomeUnknown => Err(e),
            Err(e) => {
                if !self.is_closed() {
                    let _ = self.simple("ROLLBACK").await;
                }
                Err(e)
            }
        }
    }

    async fn rollback(&mut self, at: At) -> Result<()> {
        self.needs_rollback = false;
        self.in_tx = false;
        if self.in_flight {
            // A statement of the transaction was left running (a call past its time limit):
            // the connection is given up, which ends the transaction on the server, and the
            // next call checks out a fresh one within its own limit.
            self.give_up();
            return Ok(());
        }
        // Past the limit the connection is given up, which rolls the transaction back.
        match self
            .simple_limited("ROLLBACK", at, crate::deadline::error)
            .await
        {
            Err(e) if e.kind() == ErrorKind::Timeout && self.in_flight => Ok(()),
            r => r,
        }
    }

    fn abandon_tx(&mut self) {
        self.needs_rollback = true;
        self.in_tx = false;
    }

    /// The server or the network ended the session: replace the connection before the next
    /// operation, or discard it when it goes back (the same path as an abandoned statement).
    fn wrote(&self) {
        if let Some(c) = &self.write_clock {
            c.wrote();
        }
    }

    fn lost(&mut self) {
        self.in_flight = true;
    }

    /// An operation failed with `ReadOnly` (SQLSTATE 25006): in a pool that wants a writable
    /// server, the server may have turned read-only or into a standby, so the connection is
    /// closed: at once outside a transaction (the next operation checks out another, from a
    /// host that passes the `target_session_attrs` check), else when it goes back.
    fn refused_write(&mut self) {
        if !self.pool.manager().attrs.wants_writable() {
            return;
        }
        if self.in_tx || self.needs_rollback || self.in_flight {
            self.deallocated = true;
        } else if let Some(obj) = self.obj.take() {
            drop(deadpool::managed::Object::take(obj));
        }
    }

    /// The statistics live with the pooled client. (Cleaning a Postgres connection needs a
    /// round trip, so [`PgConnection`]'s `Drop` spawns it, or detaches the connection.)
    fn counted(&mut self) -> Option<(&mut crate::stats::Flushed, &crate::stats::Live)> {
        let c: &mut super::config::PgClient = self.obj.as_mut()?;
        Some((&mut c.flushed, &c.opts.counters.live))
    }

    #[cfg(feature = "tracing")]
    fn connection_id(&self) -> u64 {
        self.obj.as_ref().map_or(0, |o| o.flushed.id())
    }

    #[cfg(feature = "tracing")]
    fn server_host(&self) -> Option<(Arc<str>, u16)> {
        self.obj
            .as_ref()
            .map(|o| (Arc::clone(&o.host.address), o.host.port))
    }

    fn cache_stats(&self) -> crate::StatementCacheStats {
        self.obj.as_ref().map_or_else(Default::default, |o| {
            o.stmts.stats(o.opts.statement_cache_capacity)
        })
    }

    async fn raw(&mut self) -> Result<&tokio_postgres::Client> {
        // An abandoned transaction or call is repaired first: raw statements must not run
        // inside a transaction that is about to be rolled back.
        self.ready().await?;
        self.unknown = true;
        self.session = Session::State;
        self.client()
    }
}

/// A Postgres connection being opened (pooled, a reader's or a `Listener`'s), as the pool's
/// `after_connect` hook drives it: straight on the client, with statements prepared for the
/// call and closed after it (the connection has no statement cache yet).
pub(crate) struct PgSetup<'a>(pub(crate) &'a tokio_postgres::Client);

impl PgSetup<'_> {
    /// Runs `hook` on the connection (see `setup.rs`).
    pub(crate) async fn run(mut self, hook: &crate::setup::AfterConnect) -> Result<()> {
        hook.set_up(&mut self).await.map(drop)
    }

    async fn prepared(&self, sql: &str) -> Result<tokio_postgres::Statement> {
        crate::sql::reject_nul(sql)?;
        let sql = translate_placeholders(sql, PlaceholderStyle::Postgres);
        self.0.prepare(&sql).await.map_err(map_err)
    }
}

impl crate::setup::Setup for PgSetup<'_> {
    fn execute_batch<'a>(&'a mut self, sql: &'a str) -> crate::setup::BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            crate::sql::reject_nul(sql)?;
            self.0.batch_execute(sql).await.map_err(map_err)
        })
    }

    fn dml<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [RowValues],
    ) -> crate::setup::BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let st = self.prepared(sql).await?;
            self.0
                .execute_raw(&st, params.iter().map(PgParam))
                .await
                .map_err(map_err)
        })
    }

    fn select<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [RowValues],
    ) -> crate::setup::BoxFuture<'a, Result<ResultSet>> {
        Box::pin(async move {
            let st = self.prepared(sql).await?;
            let rows: Vec<tokio_postgres::Row> = self
                .0
                .query_raw(&st, params.iter().map(PgParam))
                .await
                .map_err(map_err)?
                .try_collect()
                .await
                .map_err(map_err)?;
            collect(&rows, &Arc::new(columns_of(&st)))
        })
    }

    /// A `SAVEPOINT` is refused outside a transaction (with `25P01`): the probe.
    fn in_transaction(&mut self) -> crate::setup::BoxFuture<'_, Result<bool>> {
        Box::pin(async move {
            match self.0.simple_query("SAVEPOINT sqlmw_after_connect").await {
                Err(e) if e.code() == Some(&SqlState::NO_ACTIVE_SQL_TRANSACTION) => Ok(false),
                Err(e) => Err(map_err(e)),
                Ok(_) => Ok(true),
            }
        })
    }

    /// The hook ran outside the statement cache: nothing to skip.
    fn skip_stats(&mut self) {}
}

/// Back to the session the pool opened, as `DISCARD ALL` does, except that the statements
/// prepared through the protocol stay: tokio-postgres keeps the named statements of its type
/// lookups for the life of the client, and `DEALLOCATE ALL` would leave it running statements
/// that no longer exist (`26000`) on every later lookup. Settings and role, cursors, listeners,
/// advisory locks, cached plans, temporary objects and sequence state are reset; the query
/// ends by listing the `PREPARE`d statements (deallocated by name next, when there are any)
/// and counting the settings (see [`reset_session`]). No procedural code: a `DO` block would load
/// PL/pgSQL, whose settings a fresh session does not have.
pub(super) const RESET: &str = "CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET ALL; \
UNLISTEN *; SELECT pg_advisory_unlock_all(); DISCARD PLANS; DISCARD TEMP; DISCARD SEQUENCES; \
SELECT name AS prepared FROM pg_prepared_statements WHERE from_sql; \
SELECT count(*) AS settings FROM pg_settings";

/// Runs [`RESET`] (and deallocates what it listed). Returns whether the session is now as the
/// pool opened it: not when the borrower loaded a library (PL/pgSQL is loaded when the
/// connection opens, see `config.rs`), which adds settings nothing can remove; the connection
/// is then closed instead of reused.
async fn reset_session(obj: &Obj) -> bool {
    let Ok(msgs) = obj.client.simple_query(RESET).await else {
        return false;
    };
    let mut deallocate = String::new();
    let mut settings = None;
    for m in &msgs {
        if let tokio_postgres::SimpleQueryMessage::Row(row) = m {
            match row.columns().first().map(|c| c.name()) {
                Some("prepared") => {
                    if let Some(name) = row.get(0) {
                        deallocate.push_str("DEALLOCATE \"");
                        deallocate.push_str(&name.replace('"', "\"\""));
                        deallocate.push_str("\"; ");
                    }
                }
                Some("settings") => settings = row.get(0).and_then(|n| n.parse::<u64>().ok()),
                _ => {}
            }
        }
    }
    if !deallocate.is_empty() && obj.client.batch_execute(&deallocate).await.is_err() {
        return false;
    }
    obj.settings.is_none_or(|opened| settings == Some(opened))
}

/// Before [`RESET`]: the statement cache drops what was prepared after the session changed
/// (parsed under a changed `search_path`, which a prepared statement keeps for life); what
/// was prepared in the configured session stays, so the next borrower does not prepare it
/// again. Named mode also forgets the driver's cached types (its lookup statements stay valid,
/// and every cached statement carries its own types); the unnamed mode keeps them, since its
/// statements find their result types there (see `describe`).
fn forget_changed_session(obj: &mut Obj) {
    let stale: Vec<(Box<str>, crate::translation::TranslationMode)> = obj
        .stmts
        .values()
        .filter(|s| !s.clean)
        .map(|s| (s.key.clone(), s.mode))
        .collect();
    for (key, mode) in stale {
        obj.stmts.remove(&key, mode);
    }
    if obj.opts.statement_cache == StatementCache::Named {
        obj.client.clear_type_cache();
    }
}

/// Holds a connection while it is cleaned; if cleaning does not finish (error, cancelled task,
/// runtime shutdown), the connection is detached from the pool and closed instead of returned.
struct Cleaning(Option<Obj>, bool);

impl Cleaning {
    fn cleaned(&mut self, ok: bool) {
        self.1 = ok;
    }
}

impl Drop for Cleaning {
    fn drop(&mut self) {
        if let (Some(obj), false) = (self.0.take(), self.1) {
            drop(deadpool::managed::Object::take(obj));
        }
    }
}

/// The pool's recycle timeout, the bound on cancelling and cleaning (5 s when unset).
fn net_bound(pool: &super::Pool) -> Duration {
    pool.timeouts().recycle.unwrap_or(Duration::from_secs(5))
}

impl Drop for PgConnection {
    fn drop(&mut self) {
        let Some(mut obj) = self.obj.take() else {
            return;
        };
        obj.returned_at = obj.opts.counters.returned_now();
        let bound = self.net_bound();
        if self.in_flight {
            // A statement may still run: cancel it (until the connection answers, as after a
            // time limit) and close the connection (never reuse it, since a late cancel could
            // hit the next user's statement).
            let cancel = cancels(&obj);
            super::timeout::abandon(obj, cancel, bound);
            return;
        }
        if self.deallocated {
            // The driver's own statements (its type lookups) may be gone: the connection is
            // closed rather than reused.
            drop(deadpool::managed::Object::take(obj));
            return;
        }
        let reset = self.session != Session::Untouched;
        if !(self.needs_rollback || self.unknown || reset) {
            return;
        }
        let mut guard = Cleaning(Some(obj), false);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    let Some(obj) = guard.0.as_mut() else {
                        return;
                    };
                    let clean = async {
                        let mut ok = obj.client.batch_execute("ROLLBACK").await.is_ok();
                        if ok && reset {
                            forget_changed_session(obj);
                            ok = reset_session(obj).await;
                            // The reset undid the `after_connect` hook's work too: it runs again.
                            if ok {
                                let hook = &obj.opts.after_connect;
                                ok = PgSetup(&obj.client).run(hook).await.is_ok();
                            }
                        }
                        ok
                    };
                    // Past the bound the connection is detached (the guard's drop), so a
                    // server that stopped answering never holds a pool slot.
                    let ok = tokio::time::timeout(bound, clean).await.unwrap_or(false);
                    guard.cleaned(ok);
                });
            }
            Err(_) => drop(guard),
        }
    }
}
