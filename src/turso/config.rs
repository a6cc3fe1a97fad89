//! Turso settings and the pool manager: one `turso::Database` per pool, connections pooled by
//! deadpool, so a connection is only ever used by the task that checked it out (`open.rs`
//! opens and sets up each one).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use deadpool::managed::{Manager, Metrics, RecycleError, RecycleResult};

use super::conn::TursoConn;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::knobs::SingleWriter;
use crate::pooling::{self, PoolOptions};

/// Turso-specific settings.
#[derive(Debug, Clone)]
pub(crate) struct TursoOptions {
    pub(crate) busy_timeout: Duration,
    pub(crate) statement_cache_capacity: usize,
    /// Bumped by every schema change made through the pool (shared by its connections): Turso
    /// statements keep the columns they were prepared with, and the `turso` crate shows no
    /// re-prepare, so a connection whose epoch is behind forgets its cached statements.
    pub(crate) schema_epoch: Arc<AtomicU64>,
    /// The pool's counters, which each connection adds its statistics to when it goes back.
    pub(crate) counters: Arc<crate::pooling::Counters>,
    /// The session settings of a freshly configured connection, read from the pool's first one:
    /// what a returned connection's settings are checked against (see `session.rs`).
    pub(crate) baseline: std::sync::OnceLock<super::session::Settings>,
    /// Run on each connection the pool opens.
    pub(crate) after_connect: crate::setup::AfterConnect,
    /// The connections are the single-writer mode's readers: each is set `query_only`, and a
    /// statement that sets `query_only` is refused.
    pub(crate) read_only: bool,
    /// The bound on a recycle that has to wait (a rollback, a session check).
    pub(crate) recycle_timeout: Duration,
}

impl Default for TursoOptions {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(5),
            statement_cache_capacity: 128,
            schema_epoch: Arc::new(AtomicU64::new(0)),
            counters: Arc::default(),
            baseline: std::sync::OnceLock::new(),
            after_connect: Default::default(),
            read_only: false,
            recycle_timeout: Duration::from_secs(5),
        }
    }
}

/// Where the database lives.
#[derive(Debug, Clone)]
pub(crate) enum TursoTarget {
    File(PathBuf),
    Memory,
}

pub(crate) struct TursoManager {
    pub(super) db: turso::Database,
    pub(super) opts: Arc<TursoOptions>,
    /// The readers' pool of the single-writer mode (this manager's pool is then the writer's).
    pub(super) readers: Option<super::Pool>,
}

impl std::fmt::Debug for TursoManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TursoManager").finish()
    }
}

impl Manager for TursoManager {
    /// Boxed: the pool moves its objects on every checkout and return, and a pointer is
    /// cheaper to move than the connection's state.
    type Type = Box<TursoConn>;
    type Error = SqlMiddlewareDbError;

    async fn create(&self) -> Result<Box<TursoConn>> {
        self.open_conn().await
    }

    /// Bounds its own waits: a connection that comes back clean (the usual case) is checked
    /// by its flags, ready at once, with no timer; one with a rollback under way, a transaction
    /// to roll back or a session to check is cleaned within the recycle timeout, or discarded.
    async fn recycle(
        &self,
        conn: &mut Box<TursoConn>,
        _: &Metrics,
    ) -> RecycleResult<SqlMiddlewareDbError> {
        if !conn.clean_may_wait() {
            return conn.make_clean().await.map_err(RecycleError::Backend);
        }
        let bound = self.opts.recycle_timeout;
        match tokio::time::timeout(bound, conn.make_clean()).await {
            Ok(r) => r.map_err(RecycleError::Backend),
            Err(_) => Err(RecycleError::Backend(SqlMiddlewareDbError::new(
                ErrorKind::Timeout,
                format!(
                    "cleaning the Turso connection took longer than the recycle timeout ({bound:?}); it is discarded"
                ),
            ))),
        }
    }
}

/// What a Turso pool is built from: where the database is, and how connections use it.
pub(crate) type Settings = crate::knobs::Embedded<TursoTarget, TursoOptions>;

impl crate::knobs::EmbeddedOptions for TursoOptions {
    fn busy_timeout_mut(&mut self) -> &mut Duration {
        &mut self.busy_timeout
    }

    fn statement_cache_capacity_mut(&mut self) -> &mut usize {
        &mut self.statement_cache_capacity
    }

    fn knobs(&self) -> (Duration, usize) {
        (self.busy_timeout, self.statement_cache_capacity)
    }
}

/// Where spans say the database is: Turso here has no server.
#[allow(clippy::default_constructed_unit_structs)]
pub(crate) fn server(_: &Settings) -> crate::telemetry::Server {
    crate::telemetry::Server::default()
}

/// Opens the database and builds the Turso wing's pool (in the single-writer mode, the
/// writer's pool, which holds the readers' pool).
pub(crate) async fn build(s: Settings, pool: &PoolOptions) -> Result<super::Pool> {
    let (target, mut opts) = (s.target, s.options);
    if s.readers.is_some() && matches!(target, TursoTarget::Memory) {
        return Err(SingleWriter::in_memory());
    }
    opts.counters = Arc::clone(&pool.counters);
    opts.after_connect = pool.after_connect.clone();
    opts.recycle_timeout = pool.recycle_timeout;
    let path = match &target {
        TursoTarget::File(p) => p
            .to_str()
            .ok_or_else(|| {
                SqlMiddlewareDbError::new(ErrorKind::Config, "the Turso path is not valid UTF-8")
            })?
            .to_owned(),
        TursoTarget::Memory => ":memory:".to_owned(),
    };
    // A database that cannot be opened at all (a missing directory, no permission) is a
    // configuration error, as SQLite's `CANTOPEN` is.
    let db = turso::Builder::new_local(&path)
        .build()
        .await
        .map_err(|e| match e {
            turso::Error::IoError(..) => super::error::map_err(e).with_kind(ErrorKind::Config),
            e => super::error::map_err(e),
        })?;
    // The pool's connections share the database, in memory too.
    super::open::first_page(&db).await?;
    let Some(readers) = s.readers else {
        let manager = TursoManager {
            db,
            opts: Arc::new(opts),
            readers: None,
        };
        return pooling::build(manager, pool, false);
    };
    let (writer_pool, reader_pool) = SingleWriter::split(pool, readers);
    // The readers share the database and its schema epoch; their session settings are their
    // own (`query_only` on).
    let reader = TursoManager {
        db: db.clone(),
        opts: Arc::new(TursoOptions {
            baseline: std::sync::OnceLock::new(),
            read_only: true,
            ..opts.clone()
        }),
        readers: None,
    };
    let writer = TursoManager {
        db,
        opts: Arc::new(opts),
        readers: Some(pooling::build(reader, &reader_pool, false)?),
    };
    pooling::build(writer, &writer_pool, false)
}

impl crate::readers_pool::WithReaders for TursoManager {
    fn readers(&self) -> Option<&super::Pool> {
        self.readers.as_ref()
    }
}
