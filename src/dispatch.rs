//! The hall's one dispatch over the wings: [`wings!`] generates the enums that hold a pool, a
//! connection and a prepared statement of whichever backend a pool was built for, and one
//! method per operation of the [`Wing`] contract that forwards to that backend. Adding a
//! backend is one line in the `wings!` call at the bottom.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use crate::contract::{Wing, WingStmt};
use crate::decode::FromRow;
use crate::engine::DatabaseType;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::knobs::Knobs;
use crate::pooling::{self, PoolStatus};
use crate::results::{Columns, ResultSet};
use crate::sql::Dialect;
use crate::sql::ident::BulkTarget;
use crate::stmt_cache::StatementCacheStats;
use crate::translation::TranslationMode;
use crate::url_text::PoolParam;
use crate::value::RowValues;

fn other_backend() -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::InvalidInput,
        "this statement was prepared on a connection of another backend",
    )
}

/// One per-call statement as the runners of SQL take it (the connection's runners, then
/// [`ConnInner`]'s): by reference, so that each layer of the call keeps one pointer in its
/// future instead of copying the parts in twice (about 10 instructions per layer and call).
pub(crate) struct Call<'q> {
    /// The SQL, as written.
    pub(crate) sql: &'q str,
    /// Whether `$n` placeholders are translated.
    pub(crate) mode: TranslationMode,
    /// One value per placeholder.
    pub(crate) params: &'q [RowValues],
    /// When the call must have finished, if ever.
    pub(crate) deadline: Option<Instant>,
}

/// One per-call runner of `ConnInner` (inside [`wings!`], which passes its engine list):
/// `$sql_name` runs the wing's `prepare`, then its `$op`, and also returns whether the
/// statement writes. A call site of each wing operation apart from the prepared path's, so that
/// the optimiser inlines the operation into both.
macro_rules! per_call {
    ($sql_name:ident, $op:ident $(<$t:ident>)?, $out:ty, [$($feature:literal, $name:ident;)+]) => {
        pub(crate) async fn $sql_name$(<$t: FromRow + Send + 'static>)?(
            &mut self,
            call: &Call<'_>,
        ) -> Result<($out, bool)> {
            match self {
                $(#[cfg(feature = $feature)]
                ConnInner::$name(c) => {
                    let s = match c.cached(call.sql, call.mode) {
                        Some(s) => s,
                        None => c.prepare(call.sql, call.mode, call.deadline).await?,
                    };
                    // `T`, where there is one, is inferred from the return type.
                    let r = c.$op(&s, call.params, call.deadline).await?;
                    Ok((r, s.writes()))
                })+
            }
        }
    };
}

/// Generates [`PoolInner`], [`ConnInner`] and [`StmtHandle`] and their dispatching methods from
/// one list of `feature, Variant => wing module`. Each wing module provides `Pool`, `Conn`,
/// `Stmt`, `checkout` and a `Conn` that is (or derefs to) a [`Wing`].
macro_rules! wings {
    ($($feature:literal, $name:ident => $wing:ident;)+) => {
        /// What a pool of one backend is built from (each wing's `Settings`).
        #[derive(Debug)]
        pub(crate) enum Settings {
            $(#[cfg(feature = $feature)] $name(crate::$wing::Settings),)+
        }

        impl Settings {
            /// The settings every engine may have, to set or refuse.
            pub(crate) fn knobs(&mut self) -> &mut dyn Knobs {
                match self {
                    $(#[cfg(feature = $feature)] Settings::$name(s) => s,)+
                }
            }

            /// Checks the engine's settings against their ranges.
            pub(crate) fn check(&self) -> Result<()> {
                match self {
                    $(#[cfg(feature = $feature)] Settings::$name(s) => Knobs::check(s),)+
                }
            }

            /// The engine these settings are for.
            pub(crate) fn database_type(&self) -> DatabaseType {
                match self {
                    $(#[cfg(feature = $feature)] Settings::$name(_) => DatabaseType::$name,)+
                }
            }

            /// Where spans say the database is.
            pub(crate) fn server(&self) -> crate::telemetry::Server {
                match self {
                    $(#[cfg(feature = $feature)] Settings::$name(s) => crate::$wing::server(s),)+
                }
            }

            /// How the engine makes test databases.
            #[cfg(feature = "testing")]
            pub(crate) fn testdb_rules(&self) -> crate::contract::TestDbRules {
                match self {
                    $(#[cfg(feature = $feature)] Settings::$name(_) => crate::$wing::testdb::RULES,)+
                }
            }

            /// Builds the pool.
            pub(crate) async fn build(self, pool: &pooling::PoolOptions) -> Result<PoolInner> {
                Ok(match self {
                    $(#[cfg(feature = $feature)]
                    Settings::$name(s) => PoolInner::$name(crate::$wing::build(s, pool).await?),)+
                })
            }

            /// The settings of a URL whose scheme an engine of this build takes (`None` when no
            /// engine takes it), with the pool's parameters in it.
            pub(crate) fn from_url(
                scheme: &str,
                rest: &str,
                query: &str,
            ) -> Option<Result<(Settings, Vec<PoolParam>)>> {
                $(#[cfg(feature = $feature)]
                if crate::$wing::url::SCHEMES.contains(&scheme) {
                    return Some(
                        crate::$wing::url::parse(scheme, rest, query)
                            .map(|(s, p)| (Settings::$name(s), p)),
                    );
                })+
                None
            }

            /// The URL schemes this build takes, for messages.
            pub(crate) fn known_schemes() -> String {
                let shown: &[&str] = &[$(#[cfg(feature = $feature)] crate::$wing::url::SCHEMES_SHOWN,)+];
                shown.join(", ")
            }
        }

        /// A pool of one backend.
        #[derive(Clone)]
        pub(crate) enum PoolInner {
            $(#[cfg(feature = $feature)] $name(crate::$wing::Pool),)+
        }

        /// A checked-out connection of one backend.
        pub(crate) enum ConnInner {
            $(#[cfg(feature = $feature)] $name(crate::$wing::Conn),)+
        }

        /// A statement of one backend being streamed, its rows decoded as `T`.
        pub(crate) enum CursorInner<T: FromRow + Send + 'static> {
            $(#[cfg(feature = $feature)] $name(crate::$wing::Cursor<T>),)+
        }

        /// A prepared statement of one backend.
        #[derive(Clone)]
        pub(crate) enum StmtHandle {
            $(#[cfg(feature = $feature)] $name(Arc<crate::$wing::Stmt>),)+
        }

        impl PoolInner {
            pub(crate) async fn checkout(&self) -> Result<ConnInner> {
                match self {
                    $(#[cfg(feature = $feature)]
                    PoolInner::$name(p) => crate::$wing::checkout(p).await.map(ConnInner::$name),)+
                }
            }

            pub(crate) fn status(&self, counters: &pooling::Counters) -> PoolStatus {
                match self {
                    $(#[cfg(feature = $feature)] PoolInner::$name(p) => crate::$wing::status(p, counters),)+
                }
            }

            pub(crate) fn close(&self) {
                match self {
                    $(#[cfg(feature = $feature)] PoolInner::$name(p) => crate::$wing::close(p),)+
                }
            }

            /// A connection for reads (on a replica, where the engine has them).
            pub(crate) async fn checkout_reader(&self) -> Result<ConnInner> {
                match self {
                    $(#[cfg(feature = $feature)]
                    PoolInner::$name(p) => crate::$wing::checkout_reader(p).await.map(ConnInner::$name),)+
                }
            }

            pub(crate) fn database_type(&self) -> DatabaseType {
                match self {
                    $(#[cfg(feature = $feature)] PoolInner::$name(_) => DatabaseType::$name,)+
                }
            }

            /// The engine's name as the OpenTelemetry conventions give it (`db.system`).
            pub(crate) fn system(&self) -> &'static str {
                match self {
                    $(#[cfg(feature = $feature)] PoolInner::$name(_) => crate::$wing::SYSTEM,)+
                }
            }

            /// The engine's SQL dialect.
            pub(crate) fn dialect(&self) -> Dialect {
                match self {
                    $(#[cfg(feature = $feature)] PoolInner::$name(_) => crate::$wing::DIALECT,)+
                }
            }
        }

        impl StmtHandle {
            pub(crate) fn columns(&self) -> &Arc<Columns> {
                match self {
                    $(#[cfg(feature = $feature)] StmtHandle::$name(s) => s.columns(),)+
                }
            }

            pub(crate) fn writes(&self) -> bool {
                match self {
                    $(#[cfg(feature = $feature)] StmtHandle::$name(s) => s.writes(),)+
                }
            }
        }

        impl ConnInner {
            pub(crate) fn database_type(&self) -> DatabaseType {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(_) => DatabaseType::$name,)+
                }
            }

            pub(crate) async fn prepare(
                &mut self,
                sql: &str,
                mode: TranslationMode,
                at: Option<Instant>,
            ) -> Result<StmtHandle> {
                match self {
                    $(#[cfg(feature = $feature)]
                    ConnInner::$name(c) => c.prepare(sql, mode, at).await.map(StmtHandle::$name),)+
                }
            }

            pub(crate) async fn select(
                &mut self,
                h: &StmtHandle,
                p: &[RowValues],
                at: Option<Instant>,
            ) -> Result<ResultSet> {
                match (self, h) {
                    $(#[cfg(feature = $feature)]
                    (ConnInner::$name(c), StmtHandle::$name(s)) => c.select(s, p, at).await,)+
                    #[allow(unreachable_patterns)]
                    _ => Err(other_backend()),
                }
            }

            pub(crate) async fn dml(
                &mut self,
                h: &StmtHandle,
                p: &[RowValues],
                at: Option<Instant>,
            ) -> Result<u64> {
                match (self, h) {
                    $(#[cfg(feature = $feature)]
                    (ConnInner::$name(c), StmtHandle::$name(s)) => c.dml(s, p, at).await,)+
                    #[allow(unreachable_patterns)]
                    _ => Err(other_backend()),
                }
            }

            pub(crate) async fn optional<T: FromRow + Send + 'static>(
                &mut self,
                h: &StmtHandle,
                p: &[RowValues],
                at: Option<Instant>,
            ) -> Result<Option<T>> {
                match (self, h) {
                    $(#[cfg(feature = $feature)]
                    (ConnInner::$name(c), StmtHandle::$name(s)) => c.optional::<T>(s, p, at).await,)+
                    #[allow(unreachable_patterns)]
                    _ => Err(other_backend()),
                }
            }

            pub(crate) async fn all<T: FromRow + Send + 'static>(
                &mut self,
                h: &StmtHandle,
                p: &[RowValues],
                at: Option<Instant>,
            ) -> Result<Vec<T>> {
                match (self, h) {
                    $(#[cfg(feature = $feature)]
                    (ConnInner::$name(c), StmtHandle::$name(s)) => c.all::<T>(s, p, at).await,)+
                    #[allow(unreachable_patterns)]
                    _ => Err(other_backend()),
                }
            }

            per_call!(select_sql, select, ResultSet, [$($feature, $name;)+]);
            per_call!(dml_sql, dml, u64, [$($feature, $name;)+]);
            per_call!(optional_sql, optional<T>, Option<T>, [$($feature, $name;)+]);
            per_call!(all_sql, all<T>, Vec<T>, [$($feature, $name;)+]);

            pub(crate) async fn pipeline(
                &mut self,
                h: &StmtHandle,
                sets: &[&[RowValues]],
                at: Option<Instant>,
            ) -> Result<Vec<ResultSet>> {
                match (self, h) {
                    $(#[cfg(feature = $feature)]
                    (ConnInner::$name(c), StmtHandle::$name(s)) => c.pipeline(s, sets, at).await,)+
                    #[allow(unreachable_patterns)]
                    _ => Err(other_backend()),
                }
            }

            pub(crate) async fn stream_open<T: FromRow + Send + 'static>(
                &mut self,
                h: &StmtHandle,
                p: Vec<RowValues>,
                at: Option<Instant>,
            ) -> Result<CursorInner<T>> {
                match (self, h) {
                    $(#[cfg(feature = $feature)]
                    (ConnInner::$name(c), StmtHandle::$name(s)) => {
                        c.stream_open::<T>(s, p, at).await.map(CursorInner::$name)
                    })+
                    #[allow(unreachable_patterns)]
                    _ => Err(other_backend()),
                }
            }

            pub(crate) async fn stream_next<T: FromRow + Send + 'static>(
                &mut self,
                cursor: &mut CursorInner<T>,
                out: &mut VecDeque<T>,
            ) -> Result<bool> {
                match (self, cursor) {
                    $(#[cfg(feature = $feature)]
                    (ConnInner::$name(c), CursorInner::$name(k)) => c.stream_next(k, out).await,)+
                    #[allow(unreachable_patterns)]
                    _ => Err(other_backend()),
                }
            }

            pub(crate) fn stream_close<T: FromRow + Send + 'static>(
                &mut self,
                cursor: CursorInner<T>,
                finished: bool,
            ) -> bool {
                match (self, cursor) {
                    $(#[cfg(feature = $feature)]
                    (ConnInner::$name(c), CursorInner::$name(k)) => c.stream_close(k, finished),)+
                    #[allow(unreachable_patterns)]
                    _ => false,
                }
            }

            pub(crate) async fn execute_batch(
                &mut self,
                sql: &str,
                in_tx: bool,
                at: Option<Instant>,
            ) -> Result<()> {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.execute_batch(sql, in_tx, at).await,)+
                }
            }

            /// One of the hall's savepoint statements (see `Wing::savepoint_stmt`).
            pub(crate) async fn savepoint_stmt(&mut self, sql: &str) -> Result<()> {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.savepoint_stmt(sql).await,)+
                }
            }

            pub(crate) async fn bulk_insert<I, R>(
                &mut self,
                target: &BulkTarget,
                rows: I,
                in_tx: bool,
                at: Option<Instant>,
            ) -> Result<u64>
            where
                I: Iterator<Item = R> + Send,
                R: AsRef<[RowValues]> + Send + Sync,
            {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.bulk_insert(target, rows, in_tx, at).await,)+
                }
            }

            pub(crate) async fn begin(&mut self, at: Option<Instant>) -> Result<()> {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.begin(at).await,)+
                }
            }

            pub(crate) async fn commit(&mut self, at: Option<Instant>) -> Result<()> {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.commit(at).await,)+
                }
            }

            pub(crate) async fn rollback(&mut self, at: Option<Instant>) -> Result<()> {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.rollback(at).await,)+
                }
            }

            pub(crate) async fn settle_dialect(&mut self, at: Option<Instant>) -> Result<()> {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.settle_dialect(at).await,)+
                }
            }

            pub(crate) fn reading_changes_at(&self, sql: &str) -> Option<usize> {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.reading_changes_at(sql),)+
                }
            }

            pub(crate) async fn recover(&mut self) -> Result<()> {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.recover().await,)+
                }
            }

            pub(crate) fn lost(&mut self) {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.lost(),)+
                }
            }

            pub(crate) fn wrote(&self) {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.wrote(),)+
                }
            }

            pub(crate) fn refused_write(&mut self) {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.refused_write(),)+
                }
            }

            pub(crate) fn abandon_tx(&mut self) {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.abandon_tx(),)+
                }
            }

            pub(crate) fn tx_ended(&self) -> bool {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.tx_ended(),)+
                }
            }

            /// How the connection's engine keeps a migration run safe.
            #[cfg(feature = "migrate")]
            pub(crate) fn migrate_rules(&self) -> crate::contract::MigrateRules {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(_) => crate::$wing::migrate::MIGRATE,)+
                }
            }

            /// The SQL dialect of the connection's session, for reading text as its engine
            /// will (MySQL's follows the session's `sql_mode`).
            #[inline]
            pub(crate) fn dialect(&self) -> Dialect {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.dialect(),)+
                }
            }

            #[cfg(feature = "tracing")]
            pub(crate) fn server_host(&self) -> Option<(std::sync::Arc<str>, u16)> {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.server_host(),)+
                }
            }

            #[cfg(feature = "tracing")]
            pub(crate) fn connection_id(&self) -> u64 {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.connection_id(),)+
                }
            }

            pub(crate) fn cache_stats(&self) -> StatementCacheStats {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => c.cache_stats(),)+
                }
            }

            /// The connection goes back to the pool: the wing's own work, then its statistics.
            pub(crate) fn on_return(&mut self) {
                match self {
                    $(#[cfg(feature = $feature)] ConnInner::$name(c) => {
                        c.on_return();
                        c.flush_stats();
                    })+
                }
            }
        }
    };
}

wings! {
    "postgres", Postgres => postgres;
    "sqlite", Sqlite => sqlite;
    "turso", Turso => turso;
    "mysql", Mysql => mysql;
}
