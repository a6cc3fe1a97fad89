//! The pool: [`MiddlewarePool`], the same type whichever engine it was built for. Its
//! connections ([`MiddlewarePoolConnection`], in `connection.rs`) go back to it when they are
//! dropped, and only in a clean state: never inside a transaction, with a statement still
//! running, or with session changes left behind.

use std::time::{Duration, Instant};

use crate::dispatch::{ConnInner, PoolInner, Settings};
use crate::engine::DatabaseType;
use crate::error::Result;
use crate::pooling::PoolOptions;
use crate::translation::TranslationMode;

pub use crate::connection::MiddlewarePoolConnection;
pub use crate::pooling::PoolStatus;

/// A connection pool for one database. Cheap to clone; clones share the pool.
#[derive(Clone)]
pub struct MiddlewarePool {
    pub(crate) inner: PoolInner,
    translation: TranslationMode,
    statement_timeout: Option<Duration>,
    pub(crate) counters: std::sync::Arc<crate::pooling::Counters>,
    /// Tracing settings (feature `tracing`; empty without it).
    pub(crate) trace: crate::telemetry::PoolTrace,
    /// The writer's queue, in the single-writer mode of an embedded engine.
    #[cfg(feature = "_embedded")]
    group: Option<std::sync::Arc<crate::group_commit::GroupCommit>>,
}

impl std::fmt::Debug for MiddlewarePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiddlewarePool")
            .field("backend", &self.database_type())
            .field("status", &self.status())
            .finish()
    }
}

/// Awaits a checkout, timing only the part that waited: a checkout ready at its first poll (an
/// idle connection, recycled in place) reads no clock and waited zero; one that had to wait
/// for a connection, or for one to open, is timed from its first poll.
///
/// The checkout is pinned by the caller and borrowed here: moving it in by value copied the
/// whole checkout future (deadpool's get and what it may await) once more per checkout.
async fn timed<F: std::future::Future>(
    mut checkout: std::pin::Pin<&mut F>,
) -> (F::Output, Duration) {
    let mut started: Option<Instant> = None;
    let out = std::future::poll_fn(|cx| {
        let r = checkout.as_mut().poll(cx);
        if r.is_pending() && started.is_none() {
            started = Some(Instant::now());
        }
        r
    })
    .await;
    (out, started.map_or(Duration::ZERO, |s| s.elapsed()))
}

impl MiddlewarePool {
    /// Builds the pool of `settings`' engine with the shared settings `pool`.
    pub(crate) async fn build(
        settings: Settings,
        pool: &PoolOptions,
        translation: TranslationMode,
        trace: &crate::telemetry::TraceOptions,
    ) -> Result<Self> {
        let server = settings.server();
        #[cfg(feature = "_embedded")]
        let (settings, group) = {
            let mut s = settings;
            let group = s.knobs().single_writer_mode().then(Default::default);
            (s, group)
        };
        let inner = settings.build(pool).await?;
        // `db.system` as the OpenTelemetry conventions name the engines.
        let trace =
            crate::telemetry::PoolTrace::new(trace, inner.system(), inner.dialect(), server);
        Ok(Self {
            inner,
            translation,
            statement_timeout: pool.statement_timeout,
            counters: std::sync::Arc::clone(&pool.counters),
            trace,
            #[cfg(feature = "_embedded")]
            group,
        })
    }

    /// Checks out a connection, waiting at most the wait timeout.
    pub async fn get(&self) -> Result<MiddlewarePoolConnection> {
        let span = self.trace.checkout_span();
        #[cfg(feature = "tracing")]
        let checkout = std::pin::pin!(tracing::Instrument::instrument(
            self.inner.checkout(),
            span.clone(),
        ));
        #[cfg(not(feature = "tracing"))]
        let checkout = std::pin::pin!(self.inner.checkout());
        let (inner, wait) = timed(checkout).await;
        Ok(self.connection(inner?, wait, &span))
    }

    /// A checkout that waited `wait` got `inner`.
    fn connection(
        &self,
        inner: ConnInner,
        wait: Duration,
        span: &crate::telemetry::CheckoutSpan,
    ) -> MiddlewarePoolConnection {
        self.counters.live.checkout(wait);
        #[cfg(feature = "tracing")]
        let trace = self
            .trace
            .checkout(span, wait, inner.connection_id())
            .at(inner.server_host());
        #[cfg(not(feature = "tracing"))]
        let trace = self.trace.checkout(span, wait, 0);
        MiddlewarePoolConnection::new(inner, trace, self.translation, self.statement_timeout)
    }

    /// A connection for reads: on a replica (round-robin among the healthy ones) when the pool
    /// has replicas (Postgres, MySQL), else on the pool's own server as [`Self::get`] would
    /// reach it. On Postgres and MySQL reader sessions are read-only, on a replica as on the
    /// primary (a write fails with [`ErrorKind::ReadOnly`](crate::ErrorKind::ReadOnly)), and
    /// come from pools of their own: a writer from [`Self::get`] never gets a reader's session.
    /// SQLite and Turso readers are connections as [`Self::get`] gives, except in the
    /// single-writer mode, where they are read-only connections of their own pool, which never
    /// wait for the writer. See [`crate::PoolBuilder::replica`] and
    /// [`crate::PoolBuilder::single_writer`].
    pub async fn reader(&self) -> Result<MiddlewarePoolConnection> {
        let span = self.trace.checkout_span();
        #[cfg(feature = "tracing")]
        let checkout = std::pin::pin!(tracing::Instrument::instrument(
            self.inner.checkout_reader(),
            span.clone(),
        ));
        #[cfg(not(feature = "tracing"))]
        let checkout = std::pin::pin!(self.inner.checkout_reader());
        let (inner, wait) = timed(checkout).await;
        Ok(self.connection(inner?, wait, &span))
    }

    /// Runs one write statement in autocommit on a connection of the pool (checked out for it
    /// and given back), and returns the rows it changed: what `get()` then
    /// `query(sql).params(params).dml()` does, on every engine.
    ///
    /// In the single-writer mode of SQLite and Turso ([`crate::PoolBuilder::single_writer`])
    /// concurrent calls share commits (group commit): while the writer is busy, plain writes
    /// (one `INSERT`, `UPDATE`, `DELETE` or `REPLACE`) queue, and the next round runs up to 256
    /// of them in one transaction, each in a savepoint of its own, so one commit, and one
    /// flush of the log, makes them all durable. Each call still has its own outcome:
    /// - `Ok` only once the commit holding its work has returned;
    /// - a failed statement fails alone (its savepoint is rolled back, the others go on), and
    ///   a failed commit fails every statement of the round;
    /// - a statement that makes the engine roll the whole transaction back (a trigger's
    ///   `RAISE(ROLLBACK)`) fails alone, and the rest of its round runs again;
    /// - any other statement runs alone on the writer, in autocommit.
    ///
    /// The round runs on the writer as any checkout would: a task that holds the writer (from
    /// [`Self::get`]) and waits for `dml` waits until the pool's wait timeout. A call dropped
    /// before its round starts is left out of it.
    ///
    /// ```
    /// # async fn demo(db: &sql_middleware::MiddlewarePool) -> Result<(), sql_middleware::SqlMiddlewareDbError> {
    /// use sql_middleware::RowValues;
    /// let changed = db
    ///     .dml("UPDATE accounts SET balance = balance + $1 WHERE id = $2", &[RowValues::Int(5), RowValues::Int(1)])
    ///     .await?;
    /// # let _ = changed; Ok(()) }
    /// ```
    pub async fn dml(&self, sql: &str, params: &[crate::value::RowValues]) -> Result<u64> {
        #[cfg(feature = "_embedded")]
        if let Some(group) = &self.group {
            if crate::sql::effects::plain_write(sql, self.inner.dialect()) {
                let checkout = || {
                    let pool = self.clone();
                    move || {
                        let pool = pool.clone();
                        async move { pool.get().await }
                    }
                };
                return group.submit(checkout, sql, params).await;
            }
        }
        self.get().await?.query(sql).params(params).dml().await
    }

    /// The engine behind this pool.
    pub fn database_type(&self) -> DatabaseType {
        self.inner.database_type()
    }

    /// Pool size and availability.
    pub fn status(&self) -> PoolStatus {
        self.inner.status(&self.counters)
    }

    /// A snapshot of the pool's live statistics: connections, checkout waits (with a
    /// histogram), connections created, retired and discarded, statement cache hits, misses
    /// and evictions, and how SQLite ran its calls. Per-call counts join when a checkout ends.
    pub fn stats(&self) -> crate::PoolStats {
        let status = self.status();
        let live = &self.counters.live;
        let retired = status.retired_max_lifetime + status.retired_idle;
        crate::PoolStats {
            max_size: status.max_size,
            size: status.size,
            idle: status.available,
            in_use: status.size.saturating_sub(status.available),
            waiters: status.waiting,
            checkout_wait: live.waits(),
            created: status.created,
            retired_max_lifetime: status.retired_max_lifetime,
            retired_idle: status.retired_idle,
            discarded: status.created.saturating_sub(status.size as u64 + retired),
            statement_cache: live.cache(),
            sqlite: live.exec(),
            retry: live.retry(),
        }
    }

    /// Closes the pool and everything it owns: its connections as they come back, its
    /// readers' pools (replicas and the primary's read-only pool), its `Listener`s (their
    /// connections close; `recv` returns `None`) and its background upkeep. Later checkouts,
    /// readers and listeners fail with [`ErrorKind::PoolClosed`](crate::ErrorKind::PoolClosed).
    pub fn close(&self) {
        self.inner.close();
        // The upkeep of the pool (and of its readers' pools, which share the counters).
        self.counters.closed.notify_waiters();
    }
}
