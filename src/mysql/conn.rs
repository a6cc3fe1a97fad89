//! MySQL connection operations: the [`Wing`] contract on mysql_async. Every backend folder has
//! a `conn.rs` with the same operations.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{BinaryProtocol, QueryResult, Statement, Value};

use super::config::MyClient;
use super::counts::CountRule;
use super::error::map_err;
use super::params::to_values;
use super::rows::{MyRow, columns_of, row_values};
use super::stmt::{Effects, MyStmt};
use crate::contract::Wing;
use crate::deadline::At;
use crate::decode::FromRow;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::{Columns, ResultSet};
use crate::server::StatementCache;
use crate::sql::Dialect;
use crate::sql::ident::BulkTarget;
use crate::translation::TranslationMode;
use crate::value::RowValues;

/// A pooled MySQL connection as deadpool hands it out.
pub(super) type Obj = deadpool::managed::Object<super::config::MyManager>;

const D: Dialect = super::dialect::DIALECT;

/// Whether the server reported an open transaction in its last answer. Only right after a
/// statement ran to its end: mysql_async keeps a prepare's answer as its "last OK packet" too,
/// whose status bits mean nothing.
#[inline]
pub(crate) fn in_transaction(conn: &mysql_async::Conn) -> bool {
    conn.last_ok_packet().is_some_and(|ok| {
        ok.status_flags()
            .contains(mysql_async::consts::StatusFlags::SERVER_STATUS_IN_TRANS)
    })
}

/// Runs `$call` (an expression that awaits the operation) within the call's time limit `$at`,
/// if any (see `timeout.rs`); without a limit it is `$call` alone, after a few flag
/// checks. A connection given up by an earlier call is replaced first, within the limit, a
/// transaction dropped earlier is rolled back, and what an earlier call left to do is done (see
/// [`MyConnection::ready`]). `$writes`: the call may commit a change by itself (a write outside
/// a transaction), so a limit passing after it was sent leaves its outcome unknown.
///
/// The first call on a connection that sat idle in the pool meets a connection the server may
/// have closed meanwhile (see `liveness.rs`): a call that writes checks it first; one that does
/// not runs at once, and runs again on another connection when the server had closed it.
macro_rules! limited {
    // A call that writes, and so never runs twice (its inputs may be consumed).
    (@writes $self:ident, $at:expr, $call:expr) => {{
        let at: At = $at;
        if $self.in_flight
            || $self.obj.is_none()
            || $self.needs_rollback
            || $self.raw
            || $self.followup
            || $self.unverified
        {
            Box::pin($self.ready(at, true)).await?;
        }
        match at {
            None => $call,
            Some(at) => {
                crate::deadline::check(Some(at))?;
                match Box::pin(super::timeout::within(at, async { $call })).await {
                    Some(r) => r,
                    None => Err($self.after_limit(true)),
                }
            }
        }
    }};
    ($self:ident, $at:expr, $call:expr, $writes:expr) => {{
        let at: At = $at;
        let mut replays = 0usize;
        loop {
            if $self.in_flight
                || $self.obj.is_none()
                || $self.needs_rollback
                || $self.raw
                || $self.followup
                || ($self.unverified && $writes)
            {
                Box::pin($self.ready(at, $writes)).await?;
            }
            let replayable = $self.unverified && !$writes;
            let r = match at {
                None => $call,
                Some(at) => {
                    crate::deadline::check(Some(at))?;
                    // Boxed: the limited path (a timer) would otherwise grow every future.
                    match Box::pin(super::timeout::within(at, async { $call })).await {
                        Some(r) => r,
                        None => Err($self.after_limit($writes)),
                    }
                }
            };
            match r {
                Err(e)
                    if replayable
                        && e.kind() == ErrorKind::ConnectionLost
                        && replays < $self.replay_limit() =>
                {
                    replays += 1;
                    $self.discard();
                }
                r => {
                    $self.unverified = false;
                    break r;
                }
            }
        }
    }};
}

/// A checked-out MySQL connection and what the middleware knows about its state.
pub(crate) struct MyConnection {
    /// The pool, to replace a connection given up after an abandoned statement.
    pub(super) pool: super::Pool,
    pub(super) obj: Option<Obj>,
    /// A call was abandoned mid-way (its future dropped, or its limit passed): the protocol
    /// state is unknown and the statement may still run. The connection is given up.
    pub(super) in_flight: bool,
    /// A transaction was dropped without commit or rollback: rolled back before the next use.
    pub(super) needs_rollback: bool,
    /// Inside a transaction begun through the middleware.
    pub(super) in_tx: bool,
    /// The raw connection was handed out: a call of the caller's on it may have been dropped
    /// part-way (checked before the next operation).
    raw: bool,
    /// A stream was closed before its end: rows may still be on the wire.
    pub(super) unread: bool,
    /// Outside a `Tx`, SQL ran that may have opened a transaction (transaction control, a
    /// routine, raw access): asked of the server before `begin`, rolled back on return.
    unknown: bool,
    /// The connection came back from the pool and has not answered in this checkout yet: the
    /// server may have closed it while it sat idle (see `liveness.rs`).
    pub(super) unverified: bool,
    /// Something an earlier call left is done before the next one: statements to close, or
    /// autocommit to turn back on after a transaction.
    pub(super) followup: bool,
    /// The server ended the transaction by itself (a deadlock, say): every later call in the
    /// `Tx` is refused until it is rolled back.
    tx_ended: bool,
    /// A savepoint guards the running statement of a transaction (a `CALL`): a routine that
    /// commits or rolls back is seen when it is gone.
    canary: bool,
}

impl std::fmt::Debug for MyConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MyConnection")
            .field("in_tx", &self.in_tx)
            .finish_non_exhaustive()
    }
}

/// Runs the pool's `after_connect` hook on a connection being opened (and again after a session
/// reset; see `setup.rs`), then MySQL's own checks. What the hook leaves is the session the next
/// reset goes back to, then runs the hook again.
pub(crate) async fn set_up(c: &mut MyClient) -> Result<()> {
    let hook = c.opts.after_connect.clone();
    let ran = hook.set_up(&mut MySetup(c)).await?;
    // What the session now is (the checks after statements that may change it compare with
    // it), and what the hook may not change.
    let found = super::check::session(c, false).await?;
    if found.autocommit_was_off {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::TransactionState,
            "the after_connect hook turned autocommit off, or completion_type to chain or release; the middleware commits every statement outside a Tx, so the connection is closed",
        ));
    }
    if let Some(was) = found.charset_was {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::Config,
            format!(
                "the after_connect hook set the character set to {was}; the middleware binds and reads text as UTF-8, so the connection is closed"
            ),
        ));
    }
    if ran {
        // The hook's statements were closed after it; nothing it did is left to reset.
        c.dirty = false;
    }
    Ok(())
}

/// Resets the session (`COM_RESET_CONNECTION`: user and session variables, temporary tables,
/// named locks, prepared statements and handlers are gone; mysql_async then runs the pool's
/// session settings again), forgets the statements the server dropped, and runs the
/// `after_connect` hook again.
pub(crate) async fn reset(c: &mut MyClient) -> Result<()> {
    let supported = c.conn.reset().await.map_err(map_err)?;
    if !supported {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::Unsupported,
            "this server cannot reset a session (COM_RESET_CONNECTION needs MySQL 5.7.3 or MariaDB 10.2.4); the connection is closed",
        ));
    }
    c.stmts.clear();
    c.pending_close.clear();
    c.generation += 1;
    // The reset keeps the current database: put back the pool's (a `USE` of a borrower's), or
    // refuse the connection when the pool names none and a borrower chose one.
    match c.endpoint.opts.db_name() {
        Some(db) => {
            let db = db.replace('`', "``");
            c.conn
                .query_drop(format!("USE `{db}`"))
                .await
                .map_err(map_err)?;
        }
        None => {
            let current: Option<Option<String>> =
                c.conn.query_first("SELECT DATABASE()").await.map_err(map_err)?;
            if current.flatten().is_some() {
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::ConnectionLost,
                    "a borrower chose a database with USE on a pool that names none, and a reset cannot undo it; the connection is closed",
                ));
            }
        }
    }
    c.dirty = false;
    set_up(c).await
}

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
    pub(crate) fn new(pool: super::Pool, obj: Obj) -> Self {
        Self {
            pool,
            unverified: super::liveness::reused(&obj),
            followup: false,
            tx_ended: false,
            canary: false,
            obj: Some(obj),
            in_flight: false,
            needs_rollback: false,
            in_tx: false,
            raw: false,
            unread: false,
            unknown: false,
        }
    }

    pub(super) fn client(&mut self) -> Result<&mut MyClient> {
        match self.obj.as_mut() {
            Some(o) => Ok(&mut **o),
            None => Err(SqlMiddlewareDbError::new(
                ErrorKind::ConnectionLost,
                "this connection was discarded after a cancelled statement and no replacement could be checked out",
            )),
        }
    }

    pub(super) fn obj_mut(&mut self) -> Option<&mut MyClient> {
        self.obj.as_mut().map(|o| &mut ***o)
    }

    /// How long cleaning a connection may take: the pool's recycle timeout.
    pub(super) fn net_bound(&self) -> Duration {
        self.pool
            .timeouts()
            .recycle
            .unwrap_or(Duration::from_secs(5))
    }

    /// After a call's limit passed: the statement may still run, so the connection is given up
    /// now (its statement stopped with `KILL QUERY` in the background) and the next call checks
    /// out a replacement. Returns the call's error: `OutcomeUnknown` when `writes` outside a
    /// transaction, else `Timeout`.
    pub(super) fn after_limit(&mut self, writes: bool) -> SqlMiddlewareDbError {
        self.give_up();
        if writes && !self.in_tx {
            crate::deadline::unknown_outcome()
        } else {
            crate::deadline::error()
        }
    }

    /// Gives the connection up at once (see `timeout::abandon`).
    pub(super) fn give_up(&mut self) {
        self.in_flight = true;
        if let Some(old) = self.obj.take() {
            super::timeout::abandon(old, self.net_bound());
        }
    }

    /// Before an operation: replaces a connection given up by an earlier call (within
    /// `deadline`), rolls back a transaction dropped earlier, settles what raw access or an
    /// earlier call left (statements to close, the session to check, autocommit to turn back
    /// on), and, for a call that `writes`, makes sure a connection that sat idle in the pool
    /// is still open (see `liveness.rs`).
    pub(super) async fn ready(
        &mut self,
        deadline: Option<std::time::Instant>,
        writes: bool,
    ) -> Result<()> {
        let raw = std::mem::take(&mut self.raw);
        if raw {
            // mysql_async marks a connection whose command was dropped part-way as
            // disconnected: its protocol state is unknown.
            if self.obj.as_ref().is_some_and(|o| o.conn.is_disconnected()) {
                self.in_flight = true;
            }
        }
        if self.in_flight {
            self.give_up();
        }
        if self.obj.is_none() {
            self.replace(deadline).await?;
        }
        if self.needs_rollback {
            let bound = self.net_bound();
            self.in_flight = true;
            let c = self.client()?;
            let r = tokio::time::timeout(bound, c.conn.query_drop("ROLLBACK")).await;
            match r {
                Ok(r) => r.map_err(map_err)?,
                Err(_) => {
                    return Err(SqlMiddlewareDbError::new(
                        ErrorKind::ConnectionLost,
                        format!(
                            "the server did not confirm the rollback of an abandoned transaction within {bound:?}; the connection is discarded"
                        ),
                    ));
                }
            }
            self.in_flight = false;
            self.needs_rollback = false;
        }
        if raw && self.obj.is_some() {
            // Raw SQL may have changed the session (the database, the character set,
            // autocommit) or dropped the server's statements: the cached ones are closed and
            // the session checked, as after any statement the middleware cannot read.
            let in_tx = self.in_tx;
            self.in_flight = true;
            let c = self.client()?;
            forget_statements(c).await;
            let found = super::check::session(c, in_tx).await?;
            self.followup |= c.autocommit_off;
            self.in_flight = false;
            self.unverified = false;
            if let Some(e) = found.error() {
                return Err(e);
            }
        }
        if std::mem::take(&mut self.followup) {
            self.settle().await?;
        }
        if writes && self.unverified {
            self.verify(deadline).await?;
        }
        Ok(())
    }

    /// What an earlier call left to do: close the statements of abandoned streams, and turn
    /// autocommit back on once no transaction is open.
    async fn settle(&mut self) -> Result<()> {
        let in_tx = self.in_tx;
        self.in_flight = true;
        let c = self.client()?;
        for st in std::mem::take(&mut c.pending_close) {
            c.conn.close(st).await.map_err(map_err)?;
        }
        if c.autocommit_off {
            if in_tx {
                self.followup = true;
            } else {
                super::check::restore_autocommit(c).await?;
            }
        }
        self.in_flight = false;
        Ok(())
    }

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
            schema_changed(c);
        }
        let canary = std::mem::take(&mut self.canary);
        if let Err(e) = &r {
            if in_tx && e.backend() == crate::Backend::Mysql && e.kind() != ErrorKind::ConnectionLost
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
            let released = c.conn.query_drop(format!("RELEASE SAVEPOINT {CANARY}")).await;
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

    /// After a transaction of the middleware ended: autocommit turned back on if a statement of
    /// it turned it off, and a transaction that `COMMIT` chained (a `completion_type` the
    /// middleware did not see) rolled back.
    async fn after_tx(&mut self) -> Result<()> {
        let c = self.client()?;
        if c.autocommit_off || in_transaction(&c.conn) {
            self.in_flight = true;
            super::check::restore_autocommit(self.client()?).await?;
            self.in_flight = false;
        }
        Ok(())
    }

    /// Before a statement that may run a routine inside a transaction: a savepoint, whose
    /// disappearance afterwards shows that the routine committed or rolled back.
    async fn guard(&mut self, s: Effects) -> Result<()> {
        if self.in_tx && s.routine {
            self.simple(&format!("SAVEPOINT {CANARY}")).await?;
            self.canary = true;
        }
        Ok(())
    }

    /// Converts the parameters and marks the call as running: what every statement call does
    /// before it goes to the server.
    #[inline]
    fn start(&mut self, s: &MyStmt, p: &[RowValues]) -> Result<(&mut MyClient, Vec<Value>)> {
        s.check(p)?;
        let utc = self.client()?.facts.utc;
        let values = to_values(p, s.order.as_deref(), utc)?;
        let c = self.client()?;
        check_size(c, &values)?;
        self.in_flight = true;
        Ok((self.client()?, values))
    }

    async fn select_once(&mut self, s: &MyStmt, p: &[RowValues]) -> Result<ResultSet> {
        self.guard(s.fx).await?;
        let (c, values) = self.start(s, p)?;
        let r = select_rows(c, s, values).await;
        self.finish(s.fx, r).await
    }

    async fn dml_once(&mut self, s: &MyStmt, p: &[RowValues]) -> Result<u64> {
        self.guard(s.fx).await?;
        let (c, values) = self.start(s, p)?;
        let r = count_rows(c, s, values).await;
        self.finish(s.fx, r).await
    }

    async fn optional_once<T: FromRow + Send + 'static>(
        &mut self,
        s: &MyStmt,
        p: &[RowValues],
    ) -> Result<Option<T>> {
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
                let Some(row) = first else {
                    return Ok(None);
                };
                let mut fresh = None;
                let cols = current_columns(&row, &s.columns, &mut fresh);
                T::from_row(&MyRow {
                    row: &row,
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

    async fn all_once<T: FromRow + Send + 'static>(
        &mut self,
        s: &MyStmt,
        p: &[RowValues],
    ) -> Result<Vec<T>> {
        self.guard(s.fx).await?;
        let (c, values) = self.start(s, p)?;
        let r = async {
            let temp = execute(c, s, values).await?;
            let r = async {
                let mut qr = QueryResult::<BinaryProtocol>::new(&mut c.conn);
                let mut out = Vec::new();
                let mut fresh = None;
                while let Some(row) = qr.next().await.map_err(map_err)? {
                    let cols = current_columns(&row, &s.columns, &mut fresh);
                    out.push(T::from_row(&MyRow {
                        row: &row,
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

    /// [`Wing::prepare`] without its time limit.
    pub(super) async fn prepare_within(
        &mut self,
        sql: &str,
        mode: TranslationMode,
    ) -> Result<Arc<MyStmt>> {
        let c = self.client()?;
        let epoch = c.opts.schema_epoch.load(Ordering::Acquire);
        if epoch == c.epoch {
            if let Some(s) = c.stmts.get(sql, mode) {
                return Ok(Arc::clone(s));
            }
        }
        self.in_flight = true;
        let r = self.prepare_new(sql, mode, epoch).await;
        self.in_flight = false;
        r
    }

    /// Prepares a statement the cache does not hold (the call is marked as running: dropped
    /// part-way, the connection is given up).
    async fn prepare_new(
        &mut self,
        sql: &str,
        mode: TranslationMode,
        epoch: u64,
    ) -> Result<Arc<MyStmt>> {
        let c = self.client()?;
        if epoch != c.epoch {
            // The schema changed through another connection of the pool: statements cached
            // here may describe tables as they were.
            forget_statements(c).await;
            c.epoch = epoch;
            if let Some(s) = c.stmts.get(sql, mode) {
                return Ok(Arc::clone(s));
            }
        }
        crate::sql::reject_nul(sql)?;
        if crate::sql::is_blank(sql, D) {
            return Err(SqlMiddlewareDbError::blank_sql());
        }
        if crate::sql::script::statements(sql, D)
            .filter(|s| !crate::sql::is_blank(s, D))
            .nth(1)
            .is_some()
        {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::InvalidInput,
                "the SQL text holds more than one statement; run scripts with execute_batch",
            ));
        }
        let super::dialect::MysqlText {
            text,
            order,
            params,
        } = match mode {
            TranslationMode::On => super::dialect::to_mysql(sql)?,
            TranslationMode::Off => super::dialect::MysqlText {
                text: Cow::Borrowed(sql),
                order: None,
                params: usize::MAX,
            },
        };
        let st = c.conn.prep(text.as_ref()).await.map_err(map_err)?;
        let server = usize::from(st.num_params());
        let params = if params == usize::MAX {
            server
        } else {
            // The `?`s this translation wrote must be the ones the server counts.
            let written = order.as_ref().map_or(params, |o| o.len());
            if written != server {
                let _ = c.conn.close(st).await;
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "the statement has {server} placeholders as MySQL reads it, but {written} as the middleware reads it; write placeholders as $1, $2, …"
                    ),
                ));
            }
            params
        };
        let columns = Arc::new(columns_of(&st.columns()));
        let named = c.opts.statement_cache == StatementCache::Named;
        let stmt = if named {
            Some(st)
        } else {
            // Unnamed: nothing is left on the server between runs.
            c.conn.close(st).await.map_err(map_err)?;
            None
        };
        let s = Arc::new(MyStmt {
            stmt,
            fx: Effects::of(&text),
            count: CountRule::of(&text),
            dml: crate::sql::is_dml(&text, D),
            text: text.into(),
            columns,
            order,
            params,
            conn: (c.id, c.generation),
        });
        let evicted = c.stmts.insert(
            sql,
            mode,
            Arc::clone(&s),
            c.opts.statement_cache_capacity,
        );
        if let Some(old) = evicted {
            // Closed on the server, unless a reset since dropped it there already.
            if let (Some(st), true) = (old.stmt.clone(), old.conn == (c.id, c.generation)) {
                c.conn.close(st).await.map_err(map_err)?;
            }
        }
        Ok(s)
    }

    /// Runs SQL without parameters (transaction control, scripts) in the text protocol.
    pub(super) async fn simple(&mut self, sql: &str) -> Result<()> {
        self.in_flight = true;
        let c = self.client()?;
        let r = c.conn.query_drop(sql).await.map_err(map_err);
        self.in_flight = false;
        r
    }

    /// [`Wing::execute_batch`] without its time limit. Inside a transaction, or when the script
    /// has transaction control of its own, it runs as one multi-statement text. Otherwise each
    /// run of ordinary statements runs inside a transaction of its own, so it applies whole or
    /// not at all, and each statement MySQL commits implicitly (DDL) runs on its own between
    /// them.
    async fn execute_batch_within(&mut self, sql: &str, in_tx: bool) -> Result<()> {
        crate::sql::reject_nul(sql)?;
        // A script binds no values: its literals are left to strict mode (see `warnings.rs`).
        let fx = Effects {
            writes: false,
            ..Effects::of(sql)
        };
        let own_tx = !in_tx && crate::sql::has_transaction_control(sql, D);
        self.unknown |= !in_tx && (own_tx || !fx.plain);
        self.guard(fx).await?;
        let r = if in_tx || own_tx {
            self.simple(sql).await
        } else {
            let mut r = Ok(());
            for (part, alone) in crate::sql::segments(sql, D) {
                if crate::sql::is_blank(part, D) {
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
    async fn atomic(&mut self, part: &str) -> Result<()> {
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

/// The savepoint that guards a routine's run inside a transaction (see `MyConnection::guard`).
const CANARY: &str = "sqlmw_routine_guard";

/// A call in a transaction the server already ended.
fn ended() -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::TransactionAborted,
        "the server ended this transaction by itself (a deadlock, a lock wait, a conflict) and rolled it back; nothing of it was committed: start it again",
    )
}

/// A statement that ended the middleware's transaction by itself.
fn implicit_commit() -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::TransactionState,
        "MySQL committed the transaction implicitly (a statement such as DDL, LOCK TABLES or one inside a routine ends it); what ran before it is committed and the Tx is over",
    )
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
async fn select_rows(c: &mut MyClient, s: &MyStmt, values: Vec<Value>) -> Result<ResultSet> {
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

/// The schema changed through `c`: every connection of the pool, this one included, closes
/// its cached statements before it prepares the next one (their columns may have changed).
fn schema_changed(c: &mut MyClient) {
    c.opts.schema_epoch.fetch_add(1, Ordering::AcqRel);
}

/// Closes and forgets every cached statement (a statement still held by a caller is prepared
/// again for its next run).
pub(super) async fn forget_statements(c: &mut MyClient) {
    let all: Vec<Statement> = c.stmts.values().filter_map(|s| s.stmt.clone()).collect();
    c.stmts.clear();
    c.generation += 1;
    for st in all {
        let _ = c.conn.close(st).await;
    }
}

impl Wing for MyConnection {
    type Stmt = MyStmt;
    type Raw = mysql_async::Conn;

    async fn prepare(&mut self, sql: &str, mode: TranslationMode, at: At) -> Result<Arc<MyStmt>> {
        limited!(self, at, self.prepare_within(sql, mode).await, false)
    }

    async fn select(&mut self, s: &Arc<MyStmt>, p: &[RowValues], at: At) -> Result<ResultSet> {
        limited!(self, at, self.select_once(s, p).await, s.fx.writes)
    }

    async fn dml(&mut self, s: &Arc<MyStmt>, p: &[RowValues], at: At) -> Result<u64> {
        limited!(self, at, self.dml_once(s, p).await, s.fx.writes)
    }

    async fn optional<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<MyStmt>,
        p: &[RowValues],
        at: At,
    ) -> Result<Option<T>> {
        limited!(self, at, self.optional_once::<T>(s, p).await, s.fx.writes)
    }

    async fn all<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<MyStmt>,
        p: &[RowValues],
        at: At,
    ) -> Result<Vec<T>> {
        limited!(self, at, self.all_once::<T>(s, p).await, s.fx.writes)
    }

    type Cursor<T: FromRow + Send + 'static> = super::stream::MyCursor<T>;

    /// Reads rows from the wire a bounded batch at a time (see `stream.rs`).
    async fn stream_open<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<MyStmt>,
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

    async fn execute_batch(&mut self, sql: &str, in_tx: bool, at: At) -> Result<()> {
        limited!(
            self,
            at,
            self.execute_batch_within(sql, in_tx).await,
            super::session::writes(sql)
        )
    }

    /// Multi-row `INSERT`s (see `bulk.rs`).
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
        limited!(@writes self, at, self.bulk_load(target, rows, in_tx).await)
    }

    async fn begin(&mut self, at: At) -> Result<()> {
        self.ready(at, false).await?;
        self.tx_ended = false;
        if self.unknown {
            // Ask the server: `DO 1` answers with its transaction status.
            self.simple("DO 1").await?;
            if in_transaction(&self.client()?.conn) {
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::TransactionState,
                    "a transaction begun by raw SQL is still open on this connection; commit or roll it back first",
                ));
            }
            self.unknown = false;
        }
        // If this future is dropped after the statement went out, the flag rolls it back.
        limited!(
            self,
            at,
            {
                self.needs_rollback = true;
                self.simple("START TRANSACTION").await
            },
            false
        )?;
        self.needs_rollback = false;
        self.in_tx = true;
        Ok(())
    }

    /// Commits. Past the limit the `COMMIT` may have raced the stop: its outcome is unknown.
    async fn commit(&mut self, at: At) -> Result<()> {
        self.in_tx = false;
        if std::mem::take(&mut self.tx_ended) {
            // The server ended the transaction; a `COMMIT` now would commit nothing and say Ok.
            return Err(ended());
        }
        let r = limited!(self, at, self.simple("COMMIT").await, true);
        match r {
            Ok(()) => self.after_tx().await,
            // Past the limit after `COMMIT` was sent: its outcome is unknown (limited! says so);
            // before it was sent: a `Timeout`, and the transaction is rolled back on return.
            Err(e) if matches!(e.kind(), ErrorKind::OutcomeUnknown | ErrorKind::Timeout) => Err(e),
            Err(e) => {
                if self.obj.is_some() && !self.in_flight {
                    let _ = self.simple("ROLLBACK").await;
                }
                Err(e)
            }
        }
    }

    async fn rollback(&mut self, at: At) -> Result<()> {
        self.needs_rollback = false;
        self.in_tx = false;
        self.tx_ended = false;
        if self.in_flight {
            // A statement of the transaction was left running: the connection is given up,
            // which ends the transaction on the server.
            self.give_up();
            return Ok(());
        }
        match limited!(self, at, self.simple("ROLLBACK").await, false) {
            Ok(()) => self.after_tx().await,
            Err(e) if e.kind() == ErrorKind::Timeout && self.in_flight => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// After an operation of the middleware was cancelled outside a transaction: the
    /// connection is given up when a call was left mid-way, and an open transaction is rolled
    /// back.
    async fn recover(&mut self) -> Result<()> {
        if self.in_flight {
            self.give_up();
            return Ok(());
        }
        self.ready(None, false).await?;
        // Whatever the cancelled call began is rolled back (harmless when nothing is open).
        self.simple("ROLLBACK").await?;
        self.unknown = false;
        Ok(())
    }

    fn tx_ended(&self) -> bool {
        self.tx_ended
    }

    fn abandon_tx(&mut self) {
        self.needs_rollback = true;
        self.in_tx = false;
        self.tx_ended = false;
    }

    /// The server or the network ended the session: replace the connection before the next
    /// operation, or discard it when it goes back.
    fn lost(&mut self) {
        self.in_flight = true;
    }

    /// The statistics live with the pooled client (cleaning is `Drop`'s).
    fn counted(&mut self) -> Option<(&mut crate::stats::Flushed, &crate::stats::Live)> {
        let c: &mut MyClient = self.obj.as_mut()?;
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
            .map(|o| (Arc::clone(&o.host.0), o.host.1))
    }

    fn cache_stats(&self) -> crate::StatementCacheStats {
        self.obj.as_ref().map_or_else(Default::default, |o| {
            o.stmts.stats(o.opts.statement_cache_capacity)
        })
    }

    /// The raw connection, after an abandoned call or transaction was settled; the session is
    /// reset before the next borrower.
    async fn raw(&mut self) -> Result<&mysql_async::Conn> {
        Ok(&*self.raw_mut().await?)
    }
}

impl MyConnection {
    /// The raw connection, mutable (mysql_async's calls take `&mut`); see [`Wing::raw`].
    pub(crate) async fn raw_mut(&mut self) -> Result<&mut mysql_async::Conn> {
        // The caller may write at once: a connection that sat idle is checked first (raw
        // access has no time limit).
        self.ready(None, true).await?;
        self.raw = true;
        self.unknown = true;
        let c = self.client()?;
        // Raw SQL may change the session and the schema: the session is checked and the
        // cached statements closed before the next operation (see `ready`), and the pool's
        // other connections prepare theirs again.
        c.dirty = true;
        schema_changed(c);
        Ok(&mut c.conn)
    }
}

/// A connection going back to the pool: a transaction left open (a dropped `Tx`, raw SQL) is
/// rolled back and a touched session reset in a task of its own, bounded by the recycle
/// timeout, before the connection rejoins the pool; one whose call was abandoned mid-way is
/// detached and its statement stopped.
impl Drop for MyConnection {
    fn drop(&mut self) {
        let Some(mut obj) = self.obj.take() else {
            return;
        };
        obj.returned_at = obj.opts.counters.returned_now();
        let bound = self.net_bound();
        if self.in_flight {
            super::timeout::abandon(obj, bound);
            return;
        }
        let open = self.needs_rollback || self.in_tx || self.unknown;
        let unread = self.unread;
        if !(open || obj.dirty || unread) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            drop(deadpool::managed::Object::take(obj));
            return;
        };
        let mut guard = Cleaning(Some(obj));
        handle.spawn(async move {
            let Some(obj) = guard.0.as_mut() else {
                return;
            };
            let clean = async {
                if unread {
                    // The rows of a stream closed early: read off (a no-op when none are left).
                    QueryResult::<BinaryProtocol>::new(&mut obj.conn)
                        .drop_result()
                        .await
                        .map_err(map_err)?;
                }
                if open {
                    obj.conn.query_drop("ROLLBACK").await.map_err(map_err)?;
                }
                if obj.dirty {
                    reset(obj).await?;
                }
                Ok::<(), SqlMiddlewareDbError>(())
            };
            if let Ok(Ok(())) = tokio::time::timeout(bound, clean).await {
                // Clean: back to the pool.
                drop(guard.0.take());
            }
        });
    }
}

/// A connection being cleaned in the background: if the cleaning does not finish (an error, the
/// bound, the runtime shutting down), the connection is detached from the pool and closed.
struct Cleaning(Option<Obj>);

impl Drop for Cleaning {
    fn drop(&mut self) {
        if let Some(mut obj) = self.0.take() {
            obj.broken = true;
            drop(deadpool::managed::Object::take(obj));
        }
    }
}

/// A connection being opened, as the pool's `after_connect` hook drives it: statements are
/// prepared for the call and closed after it.
pub(crate) struct MySetup<'a>(&'a mut MyClient);

impl MySetup<'_> {
    /// The statement for `sql`, described for one run (closed again at once: each run prepares
    /// its own, as the unnamed mode does).
    async fn statement(&mut self, sql: &str, params: &[RowValues]) -> Result<(MyStmt, Vec<Value>)> {
        crate::sql::reject_nul(sql)?;
        let super::dialect::MysqlText {
            text,
            order,
            params: n,
        } = super::dialect::to_mysql(sql)?;
        let c = &mut *self.0;
        let st = c.conn.prep(text.as_ref()).await.map_err(map_err)?;
        let s = MyStmt {
            stmt: None,
            text: text.as_ref().into(),
            columns: Arc::new(columns_of(&st.columns())),
            order,
            params: if n == 0 { usize::from(st.num_params()) } else { n },
            dml: crate::sql::is_dml(&text, D),
            fx: Effects {
                writes: true,
                plain: true,
                ddl: false,
                routine: false,
            },
            count: CountRule::of(&text),
            conn: (0, 0),
        };
        c.conn.close(st).await.map_err(map_err)?;
        s.check(params)?;
        let values = to_values(params, s.order.as_deref(), self.0.facts.utc)?;
        Ok((s, values))
    }
}

impl crate::setup::Setup for MySetup<'_> {
    fn execute_batch<'a>(&'a mut self, sql: &'a str) -> crate::setup::BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            crate::sql::reject_nul(sql)?;
            self.0.conn.query_drop(sql).await.map_err(map_err)
        })
    }

    fn dml<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [RowValues],
    ) -> crate::setup::BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let (s, values) = self.statement(sql, params).await?;
            count_rows(self.0, &s, values).await
        })
    }

    fn select<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [RowValues],
    ) -> crate::setup::BoxFuture<'a, Result<ResultSet>> {
        Box::pin(async move {
            let (s, values) = self.statement(sql, params).await?;
            select_rows(self.0, &s, values).await
        })
    }

    fn in_transaction(&mut self) -> crate::setup::BoxFuture<'_, Result<bool>> {
        Box::pin(async move { Ok(in_transaction(&self.0.conn)) })
    }

    fn skip_stats(&mut self) {
        let c = &mut *self.0;
        let cache = c.stmts.stats(c.opts.statement_cache_capacity);
        c.flushed.skip(cache, Default::default());
    }
}
