//! The MySQL connection: what the middleware knows of a checked-out mysql_async connection, its
//! [`Wing`] contract (whose operations run in `exec.rs`, `tx.rs` and `stmt.rs`), and what
//! happens when it goes back to the pool. Every backend folder has a `conn.rs`.

use std::sync::Arc;
use std::time::Duration;

use super::config::MyClient;
use super::stmt::MyStmt;
use crate::contract::Wing;
use crate::deadline::At;
use crate::decode::FromRow;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::ResultSet;
use crate::sql::ident::BulkTarget;
use crate::translation::TranslationMode;
use crate::value::RowValues;

/// A pooled MySQL connection as deadpool hands it out.
pub(super) type Obj = deadpool::managed::Object<super::config::MyManager>;

/// Runs `$call` (an expression that awaits the operation) within the call's time limit `$at`,
/// if any (see `deadline.rs`); without a limit it is `$call` alone, after a few flag
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
                match Box::pin(super::deadline::within(at, async { $call })).await {
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
                    match Box::pin(super::deadline::within(at, async { $call })).await {
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

pub(super) use limited;

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
    pub(super) raw: bool,
    /// A stream was closed before its end: rows may still be on the wire.
    pub(super) unread: bool,
    /// Outside a `Tx`, SQL ran that may have opened a transaction (transaction control, a
    /// routine, raw access): asked of the server before `begin`, rolled back on return.
    pub(super) unknown: bool,
    /// The connection came back from the pool and has not answered in this checkout yet: the
    /// server may have closed it while it sat idle (see `liveness.rs`).
    pub(super) unverified: bool,
    /// Something an earlier call left is done before the next one: statements to close, or
    /// autocommit to turn back on after a transaction.
    pub(super) followup: bool,
    /// The server ended the transaction by itself (a deadlock, say): every later call in the
    /// `Tx` is refused until it is rolled back.
    pub(super) tx_ended: bool,
    /// A savepoint guards the running statement of a transaction (a `CALL`): a routine that
    /// commits or rolls back is seen when it is gone.
    pub(super) canary: bool,
}

impl std::fmt::Debug for MyConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MyConnection")
            .field("in_tx", &self.in_tx)
            .finish_non_exhaustive()
    }
}

impl MyConnection {
    pub(crate) fn new(pool: super::Pool, obj: Obj) -> Self {
        Self {
            pool,
            unverified: crate::server::held::reused(&obj),
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
        crate::server::held::net_bound(&self.pool)
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
        // Read in the session's dialect each time: a replacement connection's may differ.
        limited!(
            self,
            at,
            self.execute_batch_within(sql, in_tx).await,
            super::session::writes(sql, self.dialect())
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
        self.begin_tx(at).await
    }

    async fn commit(&mut self, at: At) -> Result<()> {
        self.commit_tx(at).await
    }

    async fn rollback(&mut self, at: At) -> Result<()> {
        self.rollback_tx(at).await
    }

    /// After an operation of the middleware was cancelled outside a transaction: the
    /// connection is given up when a call was left mid-way, and an open transaction is rolled
    /// back.
    async fn recover(&mut self) -> Result<()> {
        // No `Tx` of the caller is open here: a transaction the cancelled call began for itself
        // (a pipeline's) is over, whatever it left, and is not the caller's to fail.
        self.in_tx = false;
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
        self.abandon();
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
        self.obj.as_ref().map(|o| (Arc::clone(&o.host.0), o.host.1))
    }

    /// As the session's `sql_mode` reads quotes (see `check.rs`); MySQL's default when the
    /// connection is gone (nothing is then sent to read it for).
    fn dialect(&self) -> crate::sql::Dialect {
        self.obj
            .as_ref()
            .map_or(super::dialect::DIALECT, |o| o.facts.dialect())
    }

    /// After raw access the session (its `sql_mode` among the rest) is checked now, as the next
    /// operation would check it (see `recover::ready`).
    async fn settle_dialect(&mut self, at: At) -> Result<()> {
        if self.raw {
            Box::pin(self.ready(at, false)).await?;
        }
        Ok(())
    }

    /// MySQL reads a multi-statement text one statement at a time, so the statements after one
    /// that changes `sql_mode` or the client's character set are read with what it sets (see
    /// `session::reading_changes_at`).
    fn reading_changes_at(&self, sql: &str) -> Option<usize> {
        super::session::reading_changes_at(sql, self.dialect())
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
        super::stmt::schema_changed(c);
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
            super::deadline::abandon(obj, bound);
            return;
        }
        let open = self.needs_rollback || self.in_tx || self.unknown;
        let unread = self.unread;
        if !(open || obj.dirty || unread) {
            return;
        }
        super::session::clean(obj, open, unread, bound);
    }
}
