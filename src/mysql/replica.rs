//! MySQL readers: every reader session is read-only (`SET SESSION TRANSACTION READ ONLY`, set
//! when a connection opens and again after each session reset; see `open::set_up`), so a write
//! sent through a reader fails with `ReadOnly` (1792) instead of succeeding. Readers come from
//! pools of their own (never the writers'), so a read-only session is never handed to a
//! writer, nor a writable one to a reader: on replicas (round-robin among the healthy ones,
//! each replica URL's hosts picked with the node health rules of `hosts.rs`) when the pool has
//! some, else (or as the fallback) from a read-only pool on the pool's own hosts.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::config::{MyOptions, MyTarget, Settings, build_pool, checkout};
use super::conn::MyConnection;
use super::hosts::{HostBook, Hosts};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::pooling::PoolOptions;
use crate::replica_health::{Health, unreachable};

/// How a MySQL pool with replicas routes its readers.
#[derive(Debug, Clone)]
pub(crate) struct ReplicaOptions {
    /// Each replica's server (its URL's first host) and hosts, and the `sslmode` it named.
    pub(crate) replicas: Vec<(MyTarget, Hosts, Option<crate::SslMode>)>,
    /// How long a replica that failed is skipped before it is tried again.
    pub(crate) retry_after: Duration,
    /// With no healthy replica, readers go to the primary (read-only) instead of failing.
    pub(crate) fallback_to_primary: bool,
}

impl Default for ReplicaOptions {
    fn default() -> Self {
        Self {
            replicas: Vec::new(),
            retry_after: Duration::from_secs(5),
            fallback_to_primary: true,
        }
    }
}

/// One replica and what the pool knows of its health.
struct Replica {
    pool: super::Pool,
    health: Health,
}

/// The reader side of a pool: a read-only pool on its own hosts, and its replicas'.
pub(crate) struct Readers {
    primary: super::Pool,
    replicas: Vec<Replica>,
    next: AtomicUsize,
    retry_after: Duration,
    fallback_to_primary: bool,
}

impl std::fmt::Debug for Readers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readers")
            .field("replicas", &self.replicas.len())
            .finish_non_exhaustive()
    }
}

/// The pool's settings for readers: read-only sessions.
fn reader_opts(opts: &MyOptions) -> MyOptions {
    let mut opts = opts.clone();
    opts.reader = true;
    opts
}

impl Readers {
    /// Builds the read-only pool on the pool's hosts (sharing their `book`) and a pool per
    /// replica, each with the pool's settings (its TLS never weaker than the strictest mode
    /// the pool or the replica's URL named).
    pub(crate) fn build(s: &Settings, pool: &PoolOptions, book: &Arc<HostBook>) -> Result<Self> {
        let opts = reader_opts(&s.options);
        let replicas = s
            .replicas
            .replicas
            .iter()
            .map(|(target, hosts, ssl)| {
                let mut my = opts.clone();
                my.hosts = hosts.clone();
                my.tls.mode = my.tls.mode.max(*ssl);
                let book = Arc::new(HostBook::new(hosts.list.len()));
                Ok(Replica {
                    pool: build_pool((*target.0).clone(), my, pool, book, None)?,
                    health: Health::default(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            primary: build_pool(
                (*s.target.0).clone(),
                opts,
                &pool.on_demand(),
                Arc::clone(book),
                None,
            )?,
            replicas,
            next: AtomicUsize::new(0),
            retry_after: s.replicas.retry_after,
            fallback_to_primary: s.replicas.fallback_to_primary,
        })
    }

    /// A reader connection: on the next healthy replica (round-robin), else on the primary
    /// (read-only) or an error when readers do not fall back.
    async fn checkout(&self) -> Result<MyConnection> {
        let n = self.replicas.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let mut last = None;
        for i in 0..n {
            let r = &self.replicas[(start + i) % n];
            if !r.health.available() {
                continue;
            }
            match Box::pin(checkout(&r.pool)).await {
                Ok(c) => {
                    r.health.mark_up();
                    return Ok(c);
                }
                // A wait timeout means busy, not down (every connection in use).
                Err(e) if e.kind() != ErrorKind::PoolTimeout && unreachable(&e) => {
                    r.health.mark_down(self.retry_after);
                    last = Some(e);
                }
                // Refused for a reason another replica would give too.
                Err(e) => return Err(e),
            }
        }
        if n == 0 || self.fallback_to_primary {
            return Box::pin(checkout(&self.primary)).await;
        }
        Err(SqlMiddlewareDbError::new(
            ErrorKind::ConnectionLost,
            match last {
                Some(e) => format!("no replica is reachable (last error: {e}); readers do not fall back to the primary"),
                None => "every replica failed recently and is not tried again yet; readers do not fall back to the primary".to_owned(),
            },
        ))
    }

    /// Closes the read-only pool and every replica's pool.
    pub(crate) fn close(&self) {
        self.primary.close();
        for r in &self.replicas {
            r.pool.close();
        }
    }
}

/// A connection for reads, in a read-only session (see the module docs).
pub(crate) async fn checkout_reader(pool: &super::Pool) -> Result<MyConnection> {
    match &pool.manager().readers {
        Some(r) => r.checkout().await,
        // A reader pool's own manager has no readers; the pool's always has.
        None => checkout(pool).await,
    }
}
