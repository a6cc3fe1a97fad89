//! The backend contract: the operations every wing (`sqlite/`, `postgres/`, `turso/`, `mysql/`)
//! implements, with the same names from the public method down to the engine call.
//!
//! | public API | hall (`pool.rs`) | wing ([`Wing`]) |
//! |---|---|---|
//! | `conn.prepare(sql)` | `prepare_handle` | [`Wing::prepare`] |
//! | `query(..).select()`, `stmt.select(..)` | `select_sql`, `select` | [`Wing::prepare`] then [`Wing::select`]; [`Wing::select`] |
//! | `query(..).dml()`, `stmt.dml(..)` | `dml_sql`, `dml` | [`Wing::prepare`] then [`Wing::dml`]; [`Wing::dml`] |
//! | `query(..).optional()` / `.one()`, `stmt.optional(..)` / `.one(..)` | `optional_sql`, `optional` | [`Wing::prepare`] then [`Wing::optional`]; [`Wing::optional`] |
//! | `query(..).all()`, `stmt.all(..)` | `all_sql`, `all` | [`Wing::prepare`] then [`Wing::all`]; [`Wing::all`] |
//! | `conn.pipeline(sql, sets)` | `pipeline` | [`Wing::pipeline`] |
//! | `query(..).stream()`, `stmt.stream(..)` | `RowStream` (`stream.rs`) | [`Wing::stream_open`], [`Wing::stream_next`], [`Wing::stream_close`] |
//! | `conn.execute_batch(sql)` | `execute_batch` | [`Wing::execute_batch`] |
//! | `conn.bulk_insert(table, columns, rows)` | `bulk_insert` | [`Wing::bulk_insert`] |
//! | `conn.begin()`, `tx.commit()`, `tx.rollback()` | `begin`, `tx_commit`, `tx_rollback` | [`Wing::begin`], [`Wing::commit`], [`Wing::rollback`] |
//! | dropping a `Tx` | `tx_abandon` | [`Wing::abandon_tx`] |
//! | a cancelled call | `enter` | [`Wing::recover`] |
//! | `statement_timeout`, `.timeout(d)` | `deadline` | the `at` argument of each limited operation |
//! | dropping the connection | `Drop` | [`Wing::on_return`], then [`Wing::flush_stats`] |
//! | `db.stats()` (per-call counts) | `stats` | [`Wing::counted`], [`Wing::cache_stats`], [`Wing::exec_stats`] |
//! | `postgres_client().await`, `turso_connection().await`, `mysql_connection().await` | — | [`Wing::raw`] |
//!
//! The trait is crate-private and uses native `async fn`: the hall calls it on concrete types
//! through one enum (`dispatch.rs`), so nothing is boxed and every future keeps its `Send`-ness.
//!
//! # Time limits
//!
//! Each operation the hall limits takes its limit as an argument, `at: Option<Instant>`
//! (`None`: no limit): `prepare`, `select`, `dml`, `optional`, `all`, `pipeline`,
//! `stream_open`, `execute_batch`, `bulk_insert`, `begin`, `commit` and `rollback` (and
//! SQLite's raw work). A limit belongs to the one call it is given to, so it never reaches a
//! later operation; a whole pipeline, and a whole stream, share the one limit of their call.
//! Past it the operation stops its statement the way the engine allows and fails with
//! [`ErrorKind::Timeout`](crate::ErrorKind::Timeout) (or
//! [`ErrorKind::OutcomeUnknown`](crate::ErrorKind::OutcomeUnknown) when a commit may have raced
//! the stop), leaving the connection usable, or marked to be replaced when the engine's state
//! is unknown. The wings that do not bound `begin`, `commit` and `rollback` ignore their limit.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use crate::decode::FromRow;
use crate::error::Result;
use crate::results::{Columns, ResultSet};
use crate::sql::ident::BulkTarget;
use crate::stats::{ExecStats, Flushed, Live};
use crate::stmt_cache::StatementCacheStats;
use crate::translation::TranslationMode;
use crate::value::RowValues;

/// A statement prepared by a wing.
pub(crate) trait WingStmt {
    /// The columns the statement returns, computed once at prepare time.
    fn columns(&self) -> &Arc<Columns>;

    /// Whether running the statement may change the database (so a failure part-way through
    /// several runs must be rolled back).
    fn writes(&self) -> bool;
}

/// One checked-out connection of a backend: what the hall needs from every engine.
///
/// Transaction bookkeeping that the engines share (aborted transactions, cancelled calls,
/// refusing transaction control inside a `Tx`) lives in the hall; a wing keeps only what its
/// engine needs to be left clean.
pub(crate) trait Wing {
    /// The wing's prepared statement.
    type Stmt: WingStmt;
    /// The engine's own connection type, for raw access.
    type Raw: ?Sized;
    /// What the connection's statement cache has done since the connection opened.
    fn cache_stats(&self) -> StatementCacheStats;

    /// The SQL of the connection's session, as the hall's readers must follow it (blank text,
    /// transaction control inside a `Tx`, migration scripts): the engine's dialect, except
    /// where a session setting changes how the engine reads quotes (MySQL's `sql_mode`).
    fn dialect(&self) -> crate::sql::Dialect;

    /// Makes [`Self::dialect`] sure before the hall reads a script with it: a connection that
    /// cannot know how its session reads quotes now (after raw access, say) asks the session.
    /// The engines whose reading never changes have nothing to ask. `at`: the call's time
    /// limit, for a connection that must be replaced first.
    async fn settle_dialect(&mut self, _at: Option<Instant>) -> Result<()> {
        Ok(())
    }

    /// Where a script must be cut so that each part is read as the session reads text when
    /// the part runs: the end of its first statement that may change how text reads (its
    /// quotes, its character set), when a statement follows it. `None` (the default) where a
    /// script is read whole with the rules it found: PostgreSQL parses a simple query whole
    /// before it runs any of it, and the rules of SQLite and Turso never change.
    fn reading_changes_at(&self, _sql: &str) -> Option<usize> {
        None
    }

    /// The pooled connection's id, unique in the process (for spans).
    #[cfg(feature = "tracing")]
    fn connection_id(&self) -> u64;

    /// The host and port the connection reached, when the wing has a server (for spans: a
    /// URL may list several hosts).
    #[cfg(feature = "tracing")]
    fn server_host(&self) -> Option<(std::sync::Arc<str>, u16)> {
        None
    }

    /// The statement for `sql` under `mode` when the connection's statement cache holds it and
    /// it can run as it is: the half of [`Wing::prepare`] that awaits nothing, so that a
    /// per-call query whose statement is cached builds no `prepare` future. `None` sends the
    /// call to `prepare`, which the wings without such a half always do.
    #[inline]
    fn cached(&mut self, _sql: &str, _mode: TranslationMode) -> Option<Arc<Self::Stmt>> {
        None
    }

    /// Prepares `sql` (or finds it in the connection's statement cache), translating
    /// placeholders under `mode`, within `at`.
    async fn prepare(
        &mut self,
        sql: &str,
        mode: TranslationMode,
        at: Option<Instant>,
    ) -> Result<Arc<Self::Stmt>>;

    /// Runs the statement and materialises every row.
    async fn select(
        &mut self,
        s: &Arc<Self::Stmt>,
        p: &[RowValues],
        at: Option<Instant>,
    ) -> Result<ResultSet>;

    /// Runs the statement and returns the rows it changed (0 for statements other than DML).
    async fn dml(
        &mut self,
        s: &Arc<Self::Stmt>,
        p: &[RowValues],
        at: Option<Instant>,
    ) -> Result<u64>;

    /// Runs the statement and decodes its first row, if any.
    async fn optional<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<Self::Stmt>,
        p: &[RowValues],
        at: Option<Instant>,
    ) -> Result<Option<T>>;

    /// Runs the statement and decodes every row.
    async fn all<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<Self::Stmt>,
        p: &[RowValues],
        at: Option<Instant>,
    ) -> Result<Vec<T>>;

    /// Runs the statement once per parameter set (pipelined where the engine can; by default,
    /// one after another, as the in-process engines do), all within `at`.
    async fn pipeline(
        &mut self,
        s: &Arc<Self::Stmt>,
        sets: &[&[RowValues]],
        at: Option<Instant>,
    ) -> Result<Vec<ResultSet>> {
        let mut out = Vec::with_capacity(sets.len());
        for p in sets {
            out.push(self.select(s, p, at).await?);
        }
        Ok(out)
    }

    /// A statement being streamed: what the wing needs to fetch its next rows, decoded as `T`.
    type Cursor<T: FromRow + Send + 'static>: Send;

    /// Starts streaming the statement's rows; `at` covers the whole stream. Nothing is
    /// materialised: rows are fetched a bounded batch at a time by [`Self::stream_next`].
    async fn stream_open<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<Self::Stmt>,
        p: Vec<RowValues>,
        at: Option<Instant>,
    ) -> Result<Self::Cursor<T>>;

    /// Appends the next bounded batch of rows to `out`; `Ok(false)` when the statement has
    /// ended (`out` may still have received its last rows). After an error, or after
    /// `Ok(false)`, the cursor is only closed.
    async fn stream_next<T: FromRow + Send + 'static>(
        &mut self,
        c: &mut Self::Cursor<T>,
        out: &mut VecDeque<T>,
    ) -> Result<bool>;

    /// Closes a cursor, at its end (`finished`) or part-way (the stream was dropped, or failed).
    /// Never blocks on the network and never panics. Returns whether the connection is clean
    /// now (the statement reset, the portal closed); `false` leaves it to the hall's repair of
    /// a cancelled call.
    fn stream_close<T: FromRow + Send + 'static>(
        &mut self,
        c: Self::Cursor<T>,
        finished: bool,
    ) -> bool;

    /// Runs a script without parameters. `in_tx`: inside a transaction of the middleware.
    async fn execute_batch(&mut self, sql: &str, in_tx: bool, at: Option<Instant>) -> Result<()>;

    /// Runs one of the hall's own savepoint statements (`SAVEPOINT`, `RELEASE SAVEPOINT`,
    /// `ROLLBACK TO SAVEPOINT … ; RELEASE SAVEPOINT …`) inside an open transaction, without a
    /// time limit. An engine whose scripts leave the task may run these in place: they wait for
    /// no lock and no disk.
    async fn savepoint_stmt(&mut self, sql: &str) -> Result<()> {
        self.execute_batch(sql, true, None).await
    }

    /// Loads `rows` into `target` the fastest safe way the engine has (Postgres: binary
    /// `COPY`; SQLite and Turso: multi-row `INSERT`s), all or nothing: outside a transaction
    /// (`in_tx` false) inside one of its own; inside one, a failure leaves the rows already
    /// written to the transaction, which the hall then treats as aborted. Every row must hold
    /// `target.width()` values. Returns the number of rows loaded.
    async fn bulk_insert<I, R>(
        &mut self,
        target: &BulkTarget,
        rows: I,
        in_tx: bool,
        at: Option<Instant>,
    ) -> Result<u64>
    where
        I: Iterator<Item = R> + Send,
        R: AsRef<[RowValues]> + Send + Sync;

    /// Begins a transaction (within `at`, on the wings that bound transaction control).
    async fn begin(&mut self, at: Option<Instant>) -> Result<()>;

    /// Commits the open transaction; on failure the connection is left outside any transaction.
    async fn commit(&mut self, at: Option<Instant>) -> Result<()>;

    /// Rolls the open transaction back.
    async fn rollback(&mut self, at: Option<Instant>) -> Result<()>;

    /// Repairs what a cancelled call left behind, outside a transaction.
    async fn recover(&mut self) -> Result<()>;

    /// A transaction was dropped without commit or rollback: roll it back or mark the
    /// connection. Never blocks on the network, never panics.
    fn abandon_tx(&mut self);

    /// Whether the engine ended the open transaction by itself after a statement of it failed
    /// (MySQL rolls the whole transaction back on a deadlock; SQLite on a trigger's
    /// `RAISE(ROLLBACK)`): its savepoints are gone too, so the hall refuses every later call
    /// of the `Tx` with `TransactionAborted` instead of sending them.
    fn tx_ended(&self) -> bool {
        false
    }

    /// A write through this connection completed (a wing whose pool routes reads by the time of
    /// the last write notes it).
    fn wrote(&self) {}

    /// An operation failed with `ConnectionLost`: the connection must not be reused (it is
    /// replaced before the next operation, or discarded when it goes back). In-process engines
    /// never lose their connection this way.
    fn lost(&mut self) {}

    /// An operation failed with `ReadOnly`: a server-backed wing whose pool wants a writable
    /// server stops using the connection (its server may have turned read-only).
    fn refused_write(&mut self) {}

    /// The connection goes back to the pool (the hall then calls [`Self::flush_stats`]). Never
    /// blocks on the network, never panics. By default nothing is left to do: the server
    /// engines clean their connections in their `Drop`.
    fn on_return(&mut self) {}

    /// What the connection has already added to its pool's statistics (and its id), with the
    /// pool's live counters it adds to; `None` while it holds no engine connection (one given
    /// up after a time limit and not replaced yet).
    fn counted(&mut self) -> Option<(&mut Flushed, &Live)>;

    /// How SQLite ran the connection's calls, cumulative; zero on the other engines.
    fn exec_stats(&self) -> ExecStats {
        ExecStats::default()
    }

    /// Adds what the connection did since the last flush (its statement cache counts, and
    /// SQLite's execution counts) to its pool's totals: the hall calls it as the connection goes
    /// back to the pool, after [`Self::on_return`]. The same for every engine.
    fn flush_stats(&mut self) {
        let (cache, exec) = (self.cache_stats(), self.exec_stats());
        if let Some((flushed, live)) = self.counted() {
            flushed.flush(live, cache, exec);
        }
    }

    /// The engine's connection, for raw access. The wing first settles what an abandoned call or
    /// transaction left (so raw statements never run inside a transaction nobody will commit),
    /// then records that raw access happened, so it no longer trusts what it knew about the
    /// connection's state.
    #[allow(
        dead_code,
        reason = "an engine whose raw access needs the connection mutably has its own method"
    )]
    async fn raw(&mut self) -> Result<&Self::Raw>;
}

/// How one engine keeps a migration run safe (feature `migrate`): each wing's `migrate.rs` gives
/// its one value, and the shared runner (`src/migrate/`) follows it.
#[cfg(feature = "migrate")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct MigrateRules {
    /// Whether the engine rolls back DDL with its transaction: when not, a migration runs
    /// statement by statement and a failure leaves it recorded as dirty.
    pub(crate) transactional_ddl: bool,
    /// How concurrent runners are kept apart.
    pub(crate) lock: MigrateLock,
    /// The engine's names in migration file names (`0003_x.<suffix>.sql`), preferred first.
    pub(crate) suffixes: &'static [&'static str],
}

/// How an engine makes test databases (feature `testing`; `src/testing/`): each wing has a
/// `testdb::RULES`. In every SQL text `{name}` stands for a database's name (letters, digits and
/// `_` only, so it is never quoted wrongly).
#[cfg(feature = "testing")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct TestDbRules {
    /// `None` for an in-process engine: a test gets a file of its own.
    pub(crate) server: Option<TestDbSql>,
    /// The scheme of a URL naming a file (in-process engines).
    pub(crate) file_scheme: &'static str,
}

/// The statements of [`TestDbRules`] on an engine behind a server.
#[cfg(feature = "testing")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct TestDbSql {
    /// Creates database `{name}`.
    pub(crate) create: &'static str,
    /// Where the engine can copy a database: the migrations are applied once, to a template.
    pub(crate) template: Option<TestDbTemplate>,
    /// Drops database `{name}`, ending the sessions still in it where the statement can.
    pub(crate) drop: &'static str,
    /// The ids (`BIGINT`) of other sessions in database `{name}`, to end with `kill` (`{id}`)
    /// before `drop`, where the drop cannot end them itself.
    pub(crate) sessions: Option<(&'static str, &'static str)>,
    /// The test databases (`sqlmw_t_…`) not marked kept, one name a row.
    pub(crate) list: &'static str,
    /// Marks database `{name}` kept: run on the server's own database, or inside `{name}`.
    pub(crate) mark_kept: (&'static str, bool),
    /// The connections (`BIGINT`) the server still allows others than test databases.
    pub(crate) free_connections: &'static str,
}

/// The statements of a template of migrations; see [`TestDbSql::template`].
#[cfg(feature = "testing")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct TestDbTemplate {
    /// Creates database `{name}` as a copy of `{template}`.
    pub(crate) create_from: &'static str,
    /// A row when database `{name}` exists.
    pub(crate) exists: &'static str,
    /// Takes and releases the session lock that one builder of a template holds.
    pub(crate) lock: (&'static str, &'static str),
    /// Renames database `{name}` to `{template}`.
    pub(crate) rename: &'static str,
}

/// The lock of a migration run; see [`MigrateRules`]. A build with some engines only uses some
/// of the kinds.
#[cfg(feature = "migrate")]
#[derive(Debug, Clone, Copy)]
#[allow(
    dead_code,
    reason = "each engine builds one variant: a build without every engine leaves some unbuilt"
)]
pub(crate) enum MigrateLock {
    /// Each migration's own transaction takes a transaction-scoped lock first: `try_sql` (one
    /// `$1` key parameter) answers true once the lock is held, and the commit releases it.
    InTransaction { try_sql: &'static str },
    /// The write transaction itself (`BEGIN IMMEDIATE`) keeps runners apart.
    WriteTransaction,
    /// A lock held by the session for the whole run: `acquire_sql` takes the lock's name and
    /// the wait in seconds and answers 1 once held; `release_sql` takes the name. Where named
    /// locks are per node of a cluster (`cluster_sql` answers 1), a lock table replaces them.
    Session {
        acquire_sql: &'static str,
        release_sql: &'static str,
        cluster_sql: &'static str,
    },
}
