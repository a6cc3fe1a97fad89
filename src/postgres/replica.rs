//! Read replicas: reader connections routed round-robin to healthy replicas, with the primary
//! as the fallback, and every reader session read-only so that a write sent to one fails
//! instead of succeeding on the wrong server.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use super::attrs::SessionAttrs;
use super::config::{PgOptions, build_pool};
use super::conn::PgConnection;
use crate::deadline::{nanos, now_nanos};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::pooling::{PoolOptions, pool_error};
use crate::replica_health::{Health, unreachable};
use deadpool::managed::{PoolError, TimeoutType};

/// How a pool with replicas routes its readers.
#[derive(Debug, Clone)]
pub(crate) struct ReplicaOptions {
    /// The replicas' connection settings, and their `target_session_attrs` when the URL gave
    /// one (tokio-postgres does not know every value).
    pub(crate) replicas: Vec<(tokio_postgres::Config, Option<SessionAttrs>)>,
    /// How long a replica that failed is skipped before it is tried again.
    pub(crate) retry_after: Duration,
    /// With no healthy replica, readers go to the primary (read-only) instead of failing.
    pub(crate) fallback_to_primary: bool,
    /// After a write through the pool, readers go to the primary for this long.
    pub(crate) read_your_writes: Option<Duration>,
}

impl Default for ReplicaOptions {
    fn default() -> Self {
        Self {
            replicas: Vec::new(),
            retry_after: Duration::from_secs(5),
            fallback_to_primary: true,
            read_your_writes: None,
        }
    }
}

/// When the pool's primary connections last wrote; shared with them.
#[derive(Debug, Default)]
pub(crate) struct WriteClock(AtomicU64);

impl WriteClock {
    /// Notes a write that just completed.
    #[inline]
    pub(crate) fn wrote(&self) {
        self.0.store(now_nanos(), Ordering::Relaxed);
    }

    /// Whether a write completed within the last `window`.
    fn within(&self, window: Duration) -> bool {
        let at = self.0.load(Ordering::Relaxed);
        at != 0 && now_nanos().saturating_sub(at) < nanos(window)
    }
}

/// One replica and what the pool knows of its health.
struct Replica {
    pool: super::Pool,
    /// `host:port,…/db`, for status reports (never the password).
    target: String,
    /// The database name, for the target of the host a status report reached.
    dbname: String,
    /// Whether readers skip it for now.
    health: Health,
}

/// The reader side of a pool: its replicas, and a read-only pool on the primary.
pub(crate) struct Readers {
    replicas: Vec<Replica>,
    primary: super::Pool,
    next: AtomicUsize,
    retry_after: Duration,
    fallback_to_primary: bool,
    read_your_writes: Option<Duration>,
    clock: Arc<WriteClock>,
}

impl std::fmt::Debug for Readers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readers")
            .field(
                "replicas",
                &self.replicas.iter().map(|r| &r.target).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// `host:port,…/db` of a configuration (every host), for reports.
fn target_of(cfg: &tokio_postgres::Config) -> String {
    let n = cfg.get_hosts().len().max(cfg.get_hostaddrs().len()).max(1);
    let hosts: Vec<String> = (0..n)
        .map(|i| super::hosts::host_name(cfg, i).to_string())
        .collect();
    format!("{}/{}", hosts.join(","), cfg.get_dbname().unwrap_or(""))
}

/// The pool settings of a reader pool on `cfg`: the reader form of its `target_session_attrs`
/// (`read-write` asks for the primary, since every reader session is read-only by setting).
fn reader_opts(
    opts: &PgOptions,
    cfg: &tokio_postgres::Config,
    attrs: Option<SessionAttrs>,
) -> PgOptions {
    let mut opts = opts.clone();
    let attrs = attrs.unwrap_or_else(|| SessionAttrs::of_driver(cfg));
    opts.attrs = Some(attrs.for_readers());
    opts.reader = true;
    opts
}

/// The same settings, with every transaction of the session read-only: a write sent to a
/// reader fails with `ReadOnly` on the primary as on a replica.
fn read_only(cfg: &tokio_postgres::Config) -> tokio_postgres::Config {
    let mut cfg = cfg.clone();
    let options = match cfg.get_options() {
        Some(o) if !o.is_empty() => format!("{o} -c default_transaction_read_only=on"),
        _ => "-c default_transaction_read_only=on".to_owned(),
    };
    cfg.options(options);
    cfg
}

impl Readers {
    /// Builds a pool per replica and a read-only pool on the primary, with the primary's
    /// settings.
    pub(crate) fn build(
        primary: &tokio_postgres::Config,
        opts: &PgOptions,
        pool: &PoolOptions,
        replicas: ReplicaOptions,
    ) -> Result<Self> {
        let built = replicas
            .replicas
            .iter()
            .map(|(cfg, attrs)| {
                Ok(Replica {
                    pool: build_pool(read_only(cfg), reader_opts(opts, cfg, *attrs), pool, None)?,
                    target: target_of(cfg),
                    dbname: cfg.get_dbname().unwrap_or("").to_owned(),
                    health: Health::default(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            replicas: built,
            primary: build_pool(
                read_only(primary),
                reader_opts(opts, primary, opts.attrs),
                &pool.on_demand(),
                None,
            )?,
            next: AtomicUsize::new(0),
            retry_after: replicas.retry_after,
            fallback_to_primary: replicas.fallback_to_primary,
            read_your_writes: replicas.read_your_writes,
            clock: Arc::default(),
        })
    }

    /// The clock the pool's primary connections stamp their writes on, when read-your-writes
    /// routing needs it.
    pub(crate) fn clock(&self) -> Option<Arc<WriteClock>> {
        self.read_your_writes.map(|_| Arc::clone(&self.clock))
    }

    /// A reader connection: on the primary while a recent write must stay visible, else on the
    /// next healthy replica (round-robin), else on the primary or an error.
    pub(crate) async fn checkout(&self) -> Result<PgConnection> {
        if self.read_your_writes.is_some_and(|w| self.clock.within(w)) {
            return super::checkout(&self.primary).await;
        }
        let n = self.replicas.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let mut last = None;
        for i in 0..n {
            let r = &self.replicas[(start + i) % n];
            if !r.health.available() {
                continue;
            }
            match r.pool.get().await {
                Ok(obj) => {
                    r.health.mark_up();
                    return Ok(PgConnection::new(r.pool.clone(), obj));
                }
                // Busy, not down: every connection is in use, so the reader waited the wait
                // timeout like any checkout, and the replica stays in the rotation.
                Err(e @ PoolError::Timeout(TimeoutType::Wait)) => return Err(pool_error(e)),
                Err(e) => {
                    let e = pool_error(e);
                    if !unreachable(&e) {
                        return Err(e);
                    }
                    r.health.mark_down(self.retry_after);
                    last = Some(e);
                }
            }
        }
        if self.fallback_to_primary {
            return super::checkout(&self.primary).await;
        }
        Err(SqlMiddlewareDbError::new(
            ErrorKind::ConnectionLost,
            match last {
                Some(e) => format!("no replica is reachable (last error: {e}); readers do not fall back to the primary"),
                None => "every replica failed recently and is not tried again yet; readers do not fall back to the primary".to_owned(),
            },
        ))
    }

    /// Closes every replica's pool and the primary's read-only pool.
    pub(crate) fn close(&self) {
        for r in &self.replicas {
            r.pool.close();
        }
        self.primary.close();
    }

    /// Each replica's state, measured now.
    pub(crate) async fn status(&self, primary: &super::Pool) -> Vec<ReplicaStatus> {
        let primary_lsn = match primary.get().await {
            Ok(obj) => obj
                .client
                .query_one("SELECT pg_current_wal_lsn()::text", &[])
                .await
                .ok()
                .map(|row| row.get::<_, String>(0)),
            Err(_) => None,
        };
        let mut out = Vec::with_capacity(self.replicas.len());
        for r in &self.replicas {
            out.push(r.status(primary_lsn.as_deref(), self.retry_after).await);
        }
        out
    }
}

impl Replica {
    async fn status(&self, primary_lsn: Option<&str>, retry_after: Duration) -> ReplicaStatus {
        let mut st = ReplicaStatus {
            target: self.target.clone(),
            reachable: false,
            in_recovery: None,
            lag_bytes: None,
            replay_delay: None,
        };
        let obj = match self.pool.get().await {
            Ok(obj) => obj,
            Err(_) => {
                self.health.mark_down(retry_after);
                return st;
            }
        };
        st.reachable = true;
        // The host this connection reached, of the replica's hosts.
        st.target = format!("{}/{}", obj.host, self.dbname);
        // Bytes of WAL the replica has not replayed yet, and how long ago the last replayed
        // transaction committed on the primary (0 when the replica has replayed all it got).
        let row = obj
            .client
            .query_one(
                "SELECT pg_is_in_recovery(), \
                 CASE WHEN $1::text IS NULL OR NOT pg_is_in_recovery() THEN NULL \
                      ELSE pg_wal_lsn_diff($1::text::pg_lsn, pg_last_wal_replay_lsn())::float8 END, \
                 CASE WHEN NOT pg_is_in_recovery() THEN NULL \
                      WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0::float8 \
                      ELSE EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())::float8 END",
                &[&primary_lsn],
            )
            .await;
        if let Ok(row) = row {
            st.in_recovery = row.get::<_, Option<bool>>(0);
            st.lag_bytes = row
                .get::<_, Option<f64>>(1)
                .map(|b| if b > 0.0 { b as u64 } else { 0 });
            st.replay_delay = row
                .get::<_, Option<f64>>(2)
                .map(|s| Duration::from_secs_f64(s.max(0.0)));
        }
        st
    }
}

/// One replica's state, from [`crate::MiddlewarePool::replica_status`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReplicaStatus {
    /// `host:port/database` of the host the report reached (every host of the replica's URL,
    /// comma-separated, when none could be reached).
    pub target: String,
    /// Whether a connection could be had just now.
    pub reachable: bool,
    /// The server's `pg_is_in_recovery()`: `true` for a standby.
    pub in_recovery: Option<bool>,
    /// Bytes of the primary's WAL the replica has not replayed yet (`None` when unknown).
    pub lag_bytes: Option<u64>,
    /// How far behind the replica's replay is in time: zero when it has replayed everything it
    /// received, else the age of the last transaction it replayed (`None` when unknown).
    pub replay_delay: Option<Duration>,
}

/// Each replica's state, measured now (empty without replicas).
pub(crate) async fn status(pool: &super::Pool) -> Vec<crate::ReplicaStatus> {
    match &pool.manager().readers {
        Some(r) => r.status(pool).await,
        None => Vec::new(),
    }
}
