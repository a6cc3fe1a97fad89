//! A checked-out connection, [`MiddlewarePoolConnection`]: the bookkeeping every public
//! operation goes through (transaction state, cancelled calls, time limits, the cooperative
//! budget) before one forwarding to the engine. The builders of queries, prepared statements
//! and transactions are made by methods in their own files (`query.rs`, `statement.rs`,
//! `transaction.rs`).

use std::time::{Duration, Instant};

use crate::decode::FromRow;
use crate::dispatch::{Call, ConnInner, StmtHandle};
use crate::engine::DatabaseType;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::ResultSet;
use crate::telemetry::traced;
use crate::translation::TranslationMode;
use crate::value::RowValues;

/// The runners of the hall for one wing operation: `$name` runs a prepared statement's handle,
/// `$sql_name` runs SQL, finding the statement in the connection's cache (or preparing it) as
/// part of the same operation, so that a per-call query is one operation (started once, noted
/// once), not two. `writes` notes a write when the statement writes; `always` on any success.
macro_rules! runner {
    ($(#[$doc:meta])* $name:ident, $sql_name:ident $(<$t:ident>)?, $out:ty, $wrote:ident) => {
        $(#[$doc])*
        pub(crate) async fn $name$(<$t: FromRow + Send + 'static>)?(
            &mut self,
            h: &StmtHandle,
            p: &[RowValues],
            deadline: Option<Instant>,
        ) -> Result<$out> {
            if !self.enter_now()? {
                self.enter().await?;
            }
            let r = self.inner.$name$(::<$t>)?(h, p, deadline).await;
            if r.is_ok() {
                runner!(@wrote $wrote, self, h.writes());
            }
            self.note(r)
        }

        $(#[$doc])*
        ///
        /// The statement is `sql`'s, from the connection's cache or prepared now.
        pub(crate) async fn $sql_name$(<$t: FromRow + Send + 'static>)?(
            &mut self,
            call: &Call<'_>,
        ) -> Result<$out> {
            if !self.enter_now()? {
                self.enter().await?;
            }
            if let Err(e) = self.check_sql(call.sql) {
                return self.note(Err(e));
            }
            let r = match self.inner.$sql_name$(::<$t>)?(call).await {
                Ok((r, writes)) => {
                    runner!(@wrote $wrote, self, writes);
                    Ok(r)
                }
                Err(e) => Err(e),
            };
            self.note(r)
        }
    };
    // After a successful run: `writes` notes a write when the statement writes, `always` on
    // any success.
    (@wrote writes, $self:ident, $writes:expr) => {
        if $writes {
            $self.wrote();
        }
    };
    (@wrote always, $self:ident, $writes:expr) => {
        let _ = $writes;
        $self.wrote();
    };
}

/// Transaction state of a checked-out connection, as seen through the public API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TxFlag {
    None,
    Active,
    /// A statement inside the transaction failed: only rollback is allowed now.
    Aborted,
}

/// A checked-out connection. Dropping it returns it to the pool, clean: a connection is never
/// handed to the next user inside a transaction or while a statement still runs.
pub struct MiddlewarePoolConnection {
    pub(crate) inner: ConnInner,
    /// Tracing state of this checkout (feature `tracing`; empty without it).
    pub(crate) trace: crate::telemetry::ConnTrace,
    pub(crate) tx: TxFlag,
    pub(crate) translation: TranslationMode,
    /// The time limit of each statement (the pool's `statement_timeout` until changed).
    timeout: Option<Duration>,
    /// Set while an operation awaits its backend; still set afterwards means its future was
    /// dropped mid-way (cancelled), and the connection's state must be repaired first.
    pub(crate) pending: bool,
    /// The outermost savepoint dropped unfinished, to roll back to before the next operation.
    pub(crate) sp_pending: Option<u32>,
    /// Operations started on this checkout, for [`BUDGET_EVERY`].
    calls: u32,
    /// The kind of the error that last aborted a transaction on this checkout (set on the
    /// error path only), for the retrying transaction to tell a transient cause.
    pub(crate) abort_cause: Option<ErrorKind>,
}

/// Every this many operations, one unit of tokio's cooperative budget is spent (see
/// [`MiddlewarePoolConnection::enter`]).
const BUDGET_EVERY: u32 = 4;

impl std::fmt::Debug for MiddlewarePoolConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiddlewarePoolConnection")
            .field("backend", &self.database_type())
            .field("tx", &self.tx)
            .finish()
    }
}

impl MiddlewarePoolConnection {
    /// A checkout of `inner`, with the pool's translation mode and statement time limit.
    pub(crate) fn new(
        inner: ConnInner,
        trace: crate::telemetry::ConnTrace,
        translation: TranslationMode,
        timeout: Option<Duration>,
    ) -> Self {
        Self {
            inner,
            trace,
            tx: TxFlag::None,
            translation,
            timeout,
            pending: false,
            sp_pending: None,
            calls: 0,
            abort_cause: None,
        }
    }

    /// The engine behind this connection.
    pub fn database_type(&self) -> DatabaseType {
        self.inner.database_type()
    }

    /// How this connection's engine keeps a migration run safe.
    #[cfg(feature = "migrate")]
    pub(crate) fn migrate_rules(&self) -> crate::contract::MigrateRules {
        self.inner.migrate_rules()
    }

    /// The connection's SQL dialect, for splitting a script as its engine reads it.
    #[cfg(feature = "migrate")]
    pub(crate) fn dialect(&self) -> crate::sql::Dialect {
        self.inner.dialect()
    }

    /// Sets the time limit of each statement run on this checkout (`None`: no limit), in place
    /// of the pool's `statement_timeout`; a query's own `.timeout(..)` still wins. A statement
    /// still running when it passes is stopped and its call fails with [`ErrorKind::Timeout`].
    /// On Postgres it bounds `begin`, `commit` and `rollback` too (a `commit` past it fails with
    /// [`ErrorKind::OutcomeUnknown`]); on SQLite and Turso they are never cut short.
    pub fn set_statement_timeout(&mut self, limit: Option<Duration>) {
        self.timeout = limit;
    }

    /// The time limit of each statement run on this checkout (see
    /// [`Self::set_statement_timeout`]).
    pub fn statement_timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// What this connection's statement cache has done since the connection was opened: hits,
    /// misses, evictions (least recently used first), and its size and capacity. Every backend
    /// keeps at most `statement_cache_capacity` prepared statements per connection.
    pub fn statement_cache_stats(&self) -> crate::StatementCacheStats {
        self.inner.cache_stats()
    }

    /// Runs a script of `;`-separated statements without parameters.
    ///
    /// Outside a transaction the script is atomic on every backend: it applies entirely or not at
    /// all. A script that contains its own `BEGIN`/`COMMIT` runs as written, under its own control.
    pub async fn execute_batch(&mut self, sql: &str) -> Result<()> {
        traced!(self, sql, None, self.execute_batch_inner(sql), |_: &()| {
            crate::telemetry::Rows::Unknown
        })
    }

    async fn execute_batch_inner(&mut self, sql: &str) -> Result<()> {
        self.enter().await?;
        let in_tx = self.tx != TxFlag::None;
        let deadline = self.deadline(None);
        // Read as the session reads quotes now: raw access may have changed that.
        if let Err(e) = self.inner.settle_dialect(deadline).await {
            return self.note(Err(e));
        }
        // Run in parts where the engine may start to read quotes otherwise part-way (see
        // `Wing::reading_changes_at`): each part is read, and checked, as the session reads it
        // when it runs.
        let mut rest = sql;
        loop {
            let (part, next) = match self.inner.reading_changes_at(rest) {
                Some(end) => rest.split_at(end),
                None => (rest, ""),
            };
            if in_tx {
                if let Err(e) = refuse_in_tx(part, self.inner.dialect()) {
                    return self.note(Err(e));
                }
            }
            let r = self.inner.execute_batch(part, in_tx, deadline).await;
            if r.is_ok() {
                self.wrote();
            }
            if r.is_err() || next.is_empty() {
                return self.note(r);
            }
            rest = next;
        }
    }

    /// Runs one parameterised statement for each parameter set and returns the results in order.
    ///
    /// On Postgres the statements are pipelined on this connection (all sent before the first
    /// answer arrives), which turns N round trips into about one. On SQLite and Turso they run
    /// one after another.
    ///
    /// **All or nothing, on every backend.** When one parameter set fails, the error of the
    /// first failing set is returned and no set takes effect:
    /// - outside a transaction, a statement that writes runs inside a transaction of its own
    ///   (`BEGIN` … `COMMIT`, rolled back on the first failure); a read-only statement needs none;
    /// - inside a [`Tx`](crate::Tx), the failure aborts the transaction like any failed statement: later
    ///   statements fail with [`ErrorKind::TransactionAborted`] and `commit` rolls back.
    pub async fn pipeline(
        &mut self,
        sql: &str,
        param_sets: &[&[RowValues]],
    ) -> Result<Vec<ResultSet>> {
        traced!(
            self,
            sql,
            Some(param_sets.len()),
            self.pipeline_inner(sql, param_sets),
            |sets: &Vec<ResultSet>| {
                crate::telemetry::Rows::Returned(sets.iter().map(ResultSet::len).sum())
            }
        )
    }

    async fn pipeline_inner(
        &mut self,
        sql: &str,
        param_sets: &[&[RowValues]],
    ) -> Result<Vec<ResultSet>> {
        let mode = self.translation;
        let deadline = self.deadline(None);
        let handle = self.prepare_handle(sql, mode, deadline).await?;
        let own_tx = self.tx == TxFlag::None && handle.writes() && param_sets.len() > 1;
        self.enter().await?;
        if !own_tx {
            let r = self.inner.pipeline(&handle, param_sets, deadline).await;
            if r.is_ok() && handle.writes() {
                self.wrote();
            }
            return self.note(r);
        }
        // If this future is dropped part-way, `pending` stays set and the next operation
        // recovers the connection: the open transaction is rolled back.
        // The limit covers the statements; the pipeline's own `BEGIN`, `COMMIT` and `ROLLBACK`
        // run without one.
        let r = async {
            self.inner.begin(None).await?;
            match self.inner.pipeline(&handle, param_sets, deadline).await {
                Ok(sets) => self.inner.commit(None).await.map(|()| sets),
                Err(e) => {
                    let _ = self.inner.rollback(None).await;
                    Err(e)
                }
            }
        }
        .await;
        if r.is_ok() {
            self.wrote();
        }
        self.note(r)
    }

    // ---- the internal operations every public type goes through ----

    /// When a call that starts now must end: its own limit, else this checkout's.
    #[inline]
    pub(crate) fn deadline(&self, own: Option<Duration>) -> Option<Instant> {
        own.or(self.timeout)
            .and_then(|d| Instant::now().checked_add(d))
    }

    /// Notes that a write completed (for read-your-writes routing).
    #[inline]
    pub(crate) fn wrote(&self) {
        self.inner.wrote();
    }

    /// Starts an operation: repairs what a cancelled earlier operation left behind, refuses work
    /// in an aborted transaction, and marks the operation as pending until [`Self::note`].
    ///
    /// Every fourth operation first spends one unit of tokio's cooperative budget (a channel
    /// receive spends one per call). SQLite (inline) and Turso calls usually complete without
    /// ever returning `Pending`, so without this a task looping over them would keep its worker
    /// thread, and the timers and I/O of every other task on it, for as long as the loop runs.
    /// When the budget (128 units) is spent the task yields here, before anything has started:
    /// about every 512 operations. A yield costs a thread wake-up on a multi-thread runtime,
    /// which is why a short in-process call spends only a quarter unit.
    pub(crate) async fn enter(&mut self) -> Result<()> {
        self.calls = self.calls.wrapping_add(1);
        if self.calls % BUDGET_EVERY == 0 {
            tokio::task::coop::consume_budget().await;
        }
        if self.sp_pending.is_some() {
            self.settle_savepoints().await?;
        }
        if self.pending {
            self.pending = false;
            match self.tx {
                // A statement of this transaction was cancelled mid-way: whether it ran is
                // unknown, so the transaction can only be rolled back.
                TxFlag::Active => self.tx = TxFlag::Aborted,
                TxFlag::Aborted => {}
                TxFlag::None => self.inner.recover().await?,
            }
        }
        if self.tx == TxFlag::Aborted {
            return Err(aborted());
        }
        self.pending = true;
        Ok(())
    }

    /// [`Self::enter`] without a future in the usual case, where nothing is to be settled or
    /// yielded for: `Ok(true)` when it started the operation (as `enter` would have),
    /// `Ok(false)` when the caller must await `enter` (nothing was changed).
    #[inline]
    fn enter_now(&mut self) -> Result<bool> {
        let calls = self.calls.wrapping_add(1);
        if calls % BUDGET_EVERY == 0 || self.sp_pending.is_some() || self.pending {
            return Ok(false);
        }
        self.calls = calls;
        if self.tx == TxFlag::Aborted {
            return Err(aborted());
        }
        self.pending = true;
        Ok(true)
    }

    /// Ends an operation started by [`Self::enter`]; a failure aborts the open transaction.
    pub(crate) fn note<T>(&mut self, r: Result<T>) -> Result<T> {
        self.pending = false;
        if let Err(e) = &r {
            if self.tx == TxFlag::Active {
                self.tx = TxFlag::Aborted;
                self.abort_cause = Some(e.kind());
            }
            if e.kind() == ErrorKind::ConnectionLost {
                self.inner.lost();
            } else if e.kind() == ErrorKind::ReadOnly {
                self.inner.refused_write();
            }
        }
        r
    }

    pub(crate) async fn prepare_handle(
        &mut self,
        sql: &str,
        mode: TranslationMode,
        deadline: Option<Instant>,
    ) -> Result<StmtHandle> {
        if !self.enter_now()? {
            self.enter().await?;
        }
        let r = match self.check_sql(sql) {
            Ok(()) => self.inner.prepare(sql, mode, deadline).await,
            Err(e) => Err(e),
        };
        self.note(r)
    }

    /// What is refused before `sql` reaches the engine: blank text, and transaction control
    /// inside a transaction.
    #[inline]
    fn check_sql(&self, sql: &str) -> Result<()> {
        if crate::sql::is_blank(sql, self.inner.dialect()) {
            return Err(SqlMiddlewareDbError::blank_sql());
        }
        if self.tx != TxFlag::None {
            refuse_in_tx(sql, self.inner.dialect())?;
        }
        Ok(())
    }

    runner!(
        /// Runs the statement and materialises every row.
        select, select_sql, ResultSet, writes
    );
    runner!(
        /// Runs a data-changing statement; any success counts as a write.
        dml, dml_sql, u64, always
    );
    runner!(
        /// Runs the statement and decodes the first row, if any.
        optional, optional_sql<T>, Option<T>, writes
    );
    runner!(
        /// Runs the statement and decodes every row.
        all, all_sql<T>, Vec<T>, writes
    );

    pub(crate) async fn tx_commit(&mut self) -> Result<()> {
        if self.settle_savepoints().await.is_err() {
            self.tx = TxFlag::Aborted;
        }
        if self.pending {
            // A statement of this transaction was cancelled mid-way.
            self.pending = false;
            self.tx = TxFlag::Aborted;
        }
        if self.tx == TxFlag::Aborted {
            let _ = self.inner.rollback(None).await;
            self.tx = TxFlag::None;
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::TransactionAborted,
                "the transaction was rolled back because an earlier statement in it failed; nothing was committed",
            ));
        }
        self.pending = true;
        let r = self.inner.commit(self.deadline(None)).await;
        if r.is_ok() {
            self.wrote();
        }
        self.pending = false;
        self.tx = TxFlag::None;
        r
    }

    pub(crate) async fn tx_rollback(&mut self) -> Result<()> {
        self.sp_pending = None;
        self.pending = true;
        let r = self.inner.rollback(self.deadline(None)).await;
        self.pending = false;
        self.tx = TxFlag::None;
        r
    }

    /// A transaction was dropped without commit or rollback (also when its `commit` or
    /// `rollback` future was dropped mid-way): the backend rolls it back or marks the connection.
    pub(crate) fn tx_abandon(&mut self) {
        self.sp_pending = None;
        self.inner.abandon_tx();
        self.tx = TxFlag::None;
        self.pending = false;
    }
}

/// A connection goes back to the pool outside any transaction: SQLite and Turso roll back what a
/// raw `BEGIN` (or a cancelled call) left open, here, in process, so an idle pooled connection
/// never holds the write lock; Postgres connections clean themselves on drop (a spawned
/// `ROLLBACK`, or the connection is detached). Recycling checks the engine's state again.
impl Drop for MiddlewarePoolConnection {
    fn drop(&mut self) {
        self.inner.on_return();
    }
}

/// The error of an operation started in an aborted transaction.
fn aborted() -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::TransactionAborted,
        "an earlier statement of this transaction failed or was cancelled; roll it back (or drop it) and start again",
    )
}

/// Inside a `Tx`: SQL that would begin or end the transaction, and statements that cannot do
/// their work inside one (SQLite ignores `PRAGMA foreign_keys` there; `VACUUM` and others are
/// refused by the engines), are refused with `TransactionState` before they reach the engine.
#[inline]
fn refuse_in_tx(sql: &str, d: crate::sql::Dialect) -> Result<()> {
    if crate::sql::plain_dml_at_a_glance(sql) {
        return Ok(());
    }
    refuse_in_tx_scanned(sql, d)
}

/// [`refuse_in_tx`] for text not seen as plain DML at a glance: the scans decide.
#[inline(never)]
fn refuse_in_tx_scanned(sql: &str, d: crate::sql::Dialect) -> Result<()> {
    if crate::sql::ends_or_starts_transaction(sql, d) {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::TransactionState,
            "this SQL begins or ends a transaction inside a Tx; use Tx::commit / Tx::rollback (savepoints are fine)",
        ));
    }
    if let Some(what) = crate::sql::first_outside_tx_only(sql, d) {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::TransactionState,
            format!(
                "{what} cannot do its work inside a transaction; run it outside the Tx (execute_batch runs it on its own)"
            ),
        ));
    }
    Ok(())
}

/// The error of an engine's own method called on a connection of another engine.
pub(crate) fn wrong_backend(what: &str, actual: DatabaseType) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::Unsupported,
        format!("{what} is not available on a {actual:?} connection"),
    )
}
