//! The PostgreSQL connection: what the middleware knows of a checked-out tokio-postgres client,
//! its [`Wing`] contract (whose operations run in `exec.rs`, `tx.rs` and `stmt.rs`), and what
//! happens when it goes back to the pool. Every backend folder has a `conn.rs`.

use std::sync::Arc;
use std::time::Duration;

use super::effects::Session;
use super::stmt::{PgStmt, StatementCache};
use crate::contract::Wing;
use crate::deadline::At;
use crate::decode::FromRow;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::ResultSet;
use crate::sql::ident::BulkTarget;
use crate::translation::TranslationMode;
use crate::value::RowValues;

/// A pooled Postgres connection as deadpool hands it out.
pub(super) type Obj = deadpool::managed::Object<super::config::PgManager>;

/// Whether running `s` may commit a change by itself (outside a transaction): then a limit that
/// passes after it was sent leaves its outcome unknown.
#[inline]
fn writes(s: &PgStmt) -> bool {
    crate::contract::WingStmt::writes(s)
}

/// Runs `$call` with the statement `$s` (or the one prepared in its place, see
/// `PgStmt::current`) bound to `$v`; when the server refused the cached plan (see
/// `PgConn::replannable`), prepares the statement again and runs `$call` once more with it.
macro_rules! replanned {
    ($self:ident, $s:ident, |$v:ident| $call:expr) => {{
        let $v = PgStmt::current($s);
        // Prepared on a connection since replaced, or read under other quote rules than the
        // session's now (the unnamed mode): prepared again here. No `?`: an error is the call's
        // result, so that a first call that meets a closed connection runs again (`limited!`).
        let again = if $self.stale_now($v) == Some(false) {
            Ok(None)
        } else {
            Box::pin($self.prepared_again($v)).await
        };
        match again {
            Err(e) => Err(e),
            Ok(again) => {
                let $v = again.as_ref().unwrap_or($v);
                match $call.await {
                    Err(e) if $self.replannable(&e) => match Box::pin($self.replan($v)).await {
                        Ok(fresh) => {
                            let $v = &fresh;
                            $call.await
                        }
                        Err(e) => Err(e),
                    },
                    r => r,
                }
            }
        }
    }};
}

/// Runs `$call` (an expression that awaits the operation) within the call's time limit `$at`,
/// if any (see `deadline.rs`); the hot path without a limit is `$call` alone, after one flag
/// check. A connection given up by an earlier call is replaced first, within the limit.
/// `$writes`: the call may commit a change by itself (a write outside a transaction), so a
/// limit passing after it was sent leaves its outcome unknown. After a call whose statement
/// may have changed how the session reads quotes, the session's setting is read again (see
/// `session::reread_strings`).
///
/// The first call on a connection that sat idle in the pool meets a connection the server may
/// have closed meanwhile (see `liveness.rs`): when it fails for that, it runs again on another
/// connection if it does not write, or if nothing of it reached the server (see
/// `liveness::first_call`); `$call` is then evaluated again.
macro_rules! limited {
    ($self:ident, $at:expr, quotes kept, $call:expr, $writes:expr) => {{
        let at: At = $at;
        limited!(@replayed $self, at, (), $call, $writes, false)
    }};
    // `$note`: what the call notes of its statement before it runs.
    ($self:ident, $at:expr, note: $note:expr, $call:expr, $writes:expr) => {{
        let at: At = $at;
        let r = limited!(@replayed $self, at, $note, $call, $writes, true);
        if $self.strings_unsure {
            // A `client_encoding` the call set fails it (put back to UTF-8).
            let reread = Box::pin($self.reread_strings()).await;
            r.and_then(|v| reread.map(|()| v))
        } else {
            r
        }
    }};
    (@replayed $self:ident, $at:ident, $note:expr, $call:expr, $writes:expr, $answers:expr) => {
        super::liveness::first_call!($self, $writes, $answers, {
            limited!(@ready $self, $at);
            $note;
            limited!(@run $self, $at, $call, $writes)
        })
    };
    // Before the call: a connection given up is replaced, and a session left unsure (raw
    // access, a read that could not run) is read first, so that no statement runs with a
    // `client_encoding` other than UTF-8.
    (@ready $self:ident, $at:ident) => {
        if $self.in_flight || $self.obj.is_none() {
            Box::pin($self.replace($at)).await?;
        }
        if $self.strings_unsure {
            Box::pin($self.reread_strings()).await?;
        }
    };
    (@run $self:ident, $at:ident, $call:expr, $writes:expr) => {
        match $at {
            None => $call,
            Some(at) => {
                crate::deadline::check(Some(at))?;
                // Boxed: the limited path (a timer) would otherwise grow every future that
                // awaits a Postgres call, limited or not.
                match Box::pin(super::deadline::within(at, async { $call })).await {
                    Some(r) => r,
                    None => Err($self.after_limit($writes)),
                }
            }
        }
    };
    ($self:ident, $at:expr, $call:expr, $writes:expr) => {
        limited!($self, $at, note: (), $call, $writes)
    };
}

/// A checked-out Postgres connection and what the middleware knows about its state.
///
/// tokio-postgres does not expose the server's transaction status, so the middleware keeps it:
/// a dropped transaction, an abandoned query, or raw access mark the connection, and a marked
/// connection is cleaned (cancel + `ROLLBACK`) before reuse or discarded.
pub(crate) struct PgConnection {
    /// The pool, to replace a connection whose abandoned statement may still be running.
    pub(super) pool: super::Pool,
    pub(super) obj: Option<Obj>,
    pub(super) needs_rollback: bool,
    pub(super) in_flight: bool,
    pub(super) unknown: bool,
    /// Inside a transaction begun through the middleware.
    pub(super) in_tx: bool,
    /// What this checkout may have changed in the session: anything but statements whose text
    /// proves them plain (see `crate::sql::pg_effects`), and raw access. The connection is
    /// reset on return (see [`RESET`](super::session::RESET)).
    pub(super) session: Session,
    /// A statement of this checkout deallocated prepared statements (`DEALLOCATE`, `DISCARD
    /// ALL`), possibly the driver's own: the connection is not reused.
    pub(super) deallocated: bool,
    /// Where a completed write is noted, when the pool routes readers to the primary after
    /// writes (`read_your_writes`).
    pub(super) write_clock: Option<Arc<super::replica::WriteClock>>,
    /// The session's `standard_conforming_strings` is off: a backslash escapes in a plain
    /// `'…'` string, and the SQL readers follow that (see [`dialect::of_session`]).
    ///
    /// [`dialect::of_session`]: super::dialect::of_session
    pub(super) backslash_strings: bool,
    /// A statement of this checkout may have changed `standard_conforming_strings` (a `SET`, a
    /// function, the end of a transaction that set it): it is read again after the call (see
    /// `session::reread_strings`).
    pub(super) strings_unsure: bool,
    /// A statement of this checkout may have set `standard_conforming_strings` for its
    /// transaction, which the transaction's end then undoes.
    pub(super) strings_touched: bool,
    /// The connection came back from the pool and has not answered in this checkout yet: the
    /// server may have closed it while it sat idle (see `liveness.rs`).
    pub(super) unverified: bool,
}

impl PgConnection {
    #[inline]
    pub(crate) fn new(pool: super::Pool, obj: Obj) -> Self {
        let backslash_strings = obj.backslash_strings;
        Self {
            unverified: super::liveness::unverified(&obj),
            pool,
            backslash_strings,
            strings_unsure: false,
            strings_touched: false,
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
    pub(super) fn net_bound(&self) -> Duration {
        crate::server::held::net_bound(&self.pool)
    }

    pub(super) fn is_closed(&self) -> bool {
        self.obj.as_ref().is_none_or(|o| o.client.is_closed())
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
        // Runs nothing of the caller's: how the session reads quotes cannot change.
        limited!(self, at, quotes kept, self.prepare_within(sql, mode).await, false)
    }

    /// The statement from this connection's cache, when nothing is to be done first that
    /// `prepare` would do: a connection to replace or repair, a session whose quoting is to be
    /// read again. A hit reaches no server, so it answers nothing of the connection's health
    /// (`prepare` does not either) and needs no time limit (the call that runs it has one). A
    /// hit is counted here; on a miss `prepare` looks again, and counts that.
    #[inline]
    fn cached(&mut self, sql: &str, mode: TranslationMode) -> Option<Arc<PgStmt>> {
        if self.in_flight || self.needs_rollback || self.strings_unsure {
            return None;
        }
        let stmts = &mut self.obj.as_mut()?.stmts;
        let s = Arc::clone(stmts.find(sql, mode)?);
        stmts.count(true);
        self.note_stmt(&s);
        Some(s)
    }

    async fn select(&mut self, s: &Arc<PgStmt>, p: &[RowValues], at: At) -> Result<ResultSet> {
        limited!(
            self,
            at,
            note: self.note_strings(s),
            replanned!(self, s, |s| self.select_once(s, p)),
            writes(s)
        )
    }

    async fn dml(&mut self, s: &Arc<PgStmt>, p: &[RowValues], at: At) -> Result<u64> {
        limited!(
            self,
            at,
            note: self.note_strings(s),
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
            note: self.note_strings(s),
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
            note: self.note_strings(s),
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
            note: self.note_strings(s),
            // No `?`: a first call that meets a closed connection here runs again.
            match self.here(s).await {
                Ok(s) => self.pipeline_within(&s, sets).await,
                Err(e) => Err(e),
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
        // The dialect is taken when the limit is hit: as the hall settled it before the script
        // (a reread that follows the script's own change comes after).
        limited!(
            self,
            at,
            self.execute_batch_within(sql, in_tx).await,
            super::deadline::script_writes(sql, self.dialect())
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
        // The rows are taken only once the load is prepared (see `bulk.rs`): until then the
        // call writes nothing, and may run again (see `liveness.rs`).
        let mut rows = Some(rows);
        limited!(
            self,
            at,
            self.bulk_load(target, &mut rows, in_tx).await,
            rows.is_none()
        )
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

    fn abandon_tx(&mut self) {
        self.abandon();
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

    #[inline]
    fn dialect(&self) -> crate::sql::Dialect {
        super::dialect::of_session(self.backslash_strings)
    }

    /// Reads `standard_conforming_strings` again when it is unsure (see
    /// `session::reread_strings`).
    async fn settle_dialect(&mut self, _at: At) -> Result<()> {
        if self.strings_unsure {
            Box::pin(self.reread_strings()).await?;
        }
        Ok(())
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
        // What the caller runs on it cannot be run again elsewhere (see `liveness.rs`).
        self.unverified = false;
        self.session = Session::State;
        // Raw statements may change how the session reads quotes: read again before the next
        // call (which cannot be sure the raw ones are done before it).
        self.strings_touched = true;
        self.strings_unsure = true;
        self.client()
    }
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
            let cancel = super::recover::cancels(&obj);
            super::deadline::abandon(obj, cancel, bound);
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
        super::session::clean(obj, reset, bound);
    }
}
