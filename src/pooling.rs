//! The neutral pool layer, below the wings and above the core: the pool settings every backend
//! shares, the one deadpool builder, the mapping of deadpool's errors, and [`PoolStatus`].
//!
//! The wings import this module and the core only; the hall (`pool.rs`, `config.rs`) imports the
//! wings. deadpool is one release in the lockfile (deadpool-postgres re-exports the same
//! `deadpool::managed` types), so every function here is generic over the manager.

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use deadpool::managed::{Hook, HookError, Manager, Metrics, Object, Pool, PoolError, TimeoutType};

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// Pool settings shared by every backend.
#[derive(Debug, Clone)]
pub(crate) struct PoolOptions {
    pub(crate) max_size: usize,
    pub(crate) wait_timeout: Duration,
    pub(crate) create_timeout: Duration,
    pub(crate) recycle_timeout: Duration,
    /// Retire a connection this old (less up to a fifth, spread per connection).
    pub(crate) max_lifetime: Option<Duration>,
    /// Retire a connection idle this long.
    pub(crate) idle_timeout: Option<Duration>,
    /// Keep at least this many connections open.
    pub(crate) min_idle: usize,
    /// The default bound on each statement of the pool's connections.
    pub(crate) statement_timeout: Option<Duration>,
    /// What the pool did with its connections; shared with the built pool.
    pub(crate) counters: Arc<Counters>,
    /// Run on each connection the pool opens (see `setup.rs`).
    pub(crate) after_connect: crate::setup::AfterConnect,
}

#[cfg(feature = "_server")]
impl PoolOptions {
    /// These settings for the read-only pool on a pool's own server, which serves `reader()`
    /// where there is no replica to go to: it keeps no connection open in advance (`min_idle`
    /// 0). `min_idle` is the pool's own; kept for this pool too, a pool whose readers are never
    /// asked for would hold twice its `min_idle` sessions on the server.
    pub(crate) fn on_demand(&self) -> PoolOptions {
        PoolOptions {
            min_idle: 0,
            ..self.clone()
        }
    }
}

/// Counts of what a pool did with its connections (reported in [`PoolStatus`]).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    created: AtomicU64,
    retired_lifetime: AtomicU64,
    retired_idle: AtomicU64,
    /// The pool retires idle connections: each connection notes when it goes back.
    idle_tracked: AtomicBool,
    /// Checkouts and what the connections did (see `stats.rs`).
    pub(crate) live: crate::stats::Live,
    /// Notified when the pool is closed: its upkeep tasks end at once.
    pub(crate) closed: tokio::sync::Notify,
}

/// A pooled connection that knows when it last went back to the pool.
pub(crate) trait Pooled {
    /// When the connection was last returned (`None` before its first use ended).
    fn returned_at(&self) -> Option<Instant>;
}

/// A boxed connection (the pool moves a pointer instead of the connection's state).
impl<T: Pooled> Pooled for Box<T> {
    fn returned_at(&self) -> Option<Instant> {
        (**self).returned_at()
    }
}

/// Why a connection is retired.
enum Retire {
    Lifetime,
    Idle,
}

/// The lifecycle limits, as the hooks and the reaper apply them.
#[derive(Debug, Clone, Copy)]
struct Limits {
    max_lifetime: Option<Duration>,
    idle_timeout: Option<Duration>,
}

impl Limits {
    /// Whether the connection created at `metrics.created` and last returned at `returned` is
    /// past a limit. The lifetime is shortened by up to a fifth, by an amount fixed per
    /// connection (from its creation instant), so a fleet of pools started together does not
    /// reconnect at once.
    fn check(&self, returned: Option<Instant>, metrics: &Metrics) -> Option<Retire> {
        if let Some(max) = self.max_lifetime {
            if metrics.age() >= max.saturating_sub(jitter(max, metrics.created)) {
                return Some(Retire::Lifetime);
            }
        }
        match (self.idle_timeout, returned) {
            (Some(idle), Some(at)) if at.elapsed() >= idle => Some(Retire::Idle),
            _ => None,
        }
    }
}

/// How much earlier than `max` the connection created at `created` retires: up to a fifth of
/// `max`, fixed per connection.
fn jitter(max: Duration, created: Instant) -> Duration {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    created.hash(&mut h);
    let fifth = u64::try_from((max / 5).as_nanos())
        .unwrap_or(u64::MAX)
        .max(1);
    Duration::from_nanos(h.finish() % fifth)
}

impl Counters {
    /// The instant a connection goes back to the pool, when the pool has an `idle_timeout`
    /// (nothing else reads it, so without one no clock is read per return).
    pub(crate) fn returned_now(&self) -> Option<Instant> {
        self.idle_tracked.load(Ordering::Relaxed).then(Instant::now)
    }

    fn retire(&self, why: &Retire) {
        match why {
            Retire::Lifetime => &self.retired_lifetime,
            Retire::Idle => &self.retired_idle,
        }
        .fetch_add(1, Ordering::Relaxed);
    }
}

impl Default for PoolOptions {
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(2, usize::from);
        Self {
            max_size: (cpus * 2).max(4),
            wait_timeout: Duration::from_secs(10),
            create_timeout: Duration::from_secs(10),
            recycle_timeout: Duration::from_secs(5),
            max_lifetime: None,
            idle_timeout: None,
            min_idle: 0,
            statement_timeout: None,
            counters: Arc::default(),
            after_connect: Default::default(),
        }
    }
}

/// A snapshot of a pool's size, and what it has done with its connections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStatus {
    /// The configured maximum.
    pub max_size: usize,
    /// Connections currently open (checked out or idle).
    pub size: usize,
    /// Idle connections ready for checkout.
    pub available: usize,
    /// Tasks waiting for a connection.
    pub waiting: usize,
    /// Connections opened since the pool was built.
    pub created: u64,
    /// Connections closed for reaching `max_lifetime`.
    pub retired_max_lifetime: u64,
    /// Connections closed for being idle longer than `idle_timeout`.
    pub retired_idle: u64,
}

/// Builds a deadpool pool for `manager` with the shared settings and tokio's timers: counts
/// the connections it opens, retires those past `max_lifetime` or `idle_timeout` at checkout,
/// and (with a runtime) starts the background upkeep (see [`upkeep`]).
///
/// `recycle_waits` says whether the manager's recycle can wait (a network round trip): when it
/// cannot (SQLite's is a synchronous local check), or bounds its own rare waits (MySQL's network
/// work, Turso's rollbacks and session checks), no recycle timer is armed per checkout.
pub(crate) fn build<M>(manager: M, opts: &PoolOptions, recycle_waits: bool) -> Result<Pool<M>>
where
    M: Manager + 'static,
    M::Type: Pooled,
{
    let limits = Limits {
        max_lifetime: opts.max_lifetime,
        idle_timeout: opts.idle_timeout,
    };
    opts.counters
        .idle_tracked
        .store(opts.idle_timeout.is_some(), Ordering::Relaxed);
    let (created, retiring) = (Arc::clone(&opts.counters), Arc::clone(&opts.counters));
    let mut builder = Pool::builder(manager)
        .max_size(opts.max_size)
        .wait_timeout(Some(opts.wait_timeout))
        .create_timeout(Some(opts.create_timeout))
        .recycle_timeout(recycle_waits.then_some(opts.recycle_timeout))
        .runtime(deadpool::Runtime::Tokio1)
        .post_create(Hook::sync_fn(move |_, _| {
            created.created.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }));
    let limited = limits.max_lifetime.is_some() || limits.idle_timeout.is_some();
    // Only a pool with a limit checks it at checkout: the hook runs on every checkout, and
    // without a limit it could only answer "keep".
    if limited {
        builder = builder.pre_recycle(Hook::sync_fn(
            move |c: &mut M::Type, m: &Metrics| match limits.check(c.returned_at(), m) {
                None => Ok(()),
                Some(why) => {
                    retiring.retire(&why);
                    Err(HookError::Message(
                        "the connection reached a lifecycle limit".into(),
                    ))
                }
            },
        ));
    }
    let pool = builder
        .build()
        .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Config, e.to_string()))?;
    if limited || opts.min_idle > 0 {
        upkeep(&pool, limits, opts.min_idle, Arc::clone(&opts.counters));
    }
    Ok(pool)
}

/// Background upkeep, on the runtime the pool was built on, for as long as the pool lives:
/// idle connections past a limit are closed without waiting for a checkout, and at least
/// `min_idle` connections are kept open (warm) for the next checkouts.
fn upkeep<M>(pool: &Pool<M>, limits: Limits, min_idle: usize, counters: Arc<Counters>)
where
    M: Manager + 'static,
    M::Type: Pooled,
{
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let every = [limits.max_lifetime, limits.idle_timeout]
        .into_iter()
        .flatten()
        .min()
        .map_or(Duration::from_secs(1), |d| d / 4)
        .clamp(Duration::from_millis(25), Duration::from_secs(30));
    let weak = pool.weak();
    handle.spawn(async move {
        loop {
            // Registered before the pool is looked at, so a close from then on is seen.
            let closed = counters.closed.notified();
            tokio::pin!(closed);
            closed.as_mut().enable();
            if weak.upgrade().is_none_or(|p| p.is_closed()) {
                return;
            }
            let sleep = std::pin::pin!(tokio::time::sleep(every));
            if let futures_util::future::Either::Right(_) =
                futures_util::future::select(sleep, closed).await
            {
                return;
            }
            let Some(pool) = weak.upgrade() else { return };
            if pool.is_closed() {
                return;
            }
            pool.retain(|c, m| match limits.check(c.returned_at(), &m) {
                None => true,
                Some(why) => {
                    counters.retire(&why);
                    false
                }
            });
            let s = pool.status();
            let want = min_idle.min(s.max_size);
            if s.size < want {
                // The pool opens a connection only for a checkout that finds none idle: the
                // idle ones are taken out while the openings of the missing ones start, and go
                // back as soon as they have (one scheduler pass), never for as long as the
                // openings take. Each opened connection goes back to the pool at once.
                let mut idle = Vec::with_capacity(s.available);
                for _ in 0..s.available {
                    match pool.timeout_get(&no_wait(&pool)).await {
                        Ok(c) => idle.push(c),
                        Err(_) => break,
                    }
                }
                let missing = want - s.size;
                let opening: Vec<_> = (0..missing)
                    .map(|_| {
                        let pool = pool.clone();
                        tokio::spawn(async move { drop(pool.get().await) })
                    })
                    .collect();
                // Until every opening has started (its checkout is counted, with no
                // connection to show for it yet), or a few passes at most.
                for _ in 0..8 {
                    if idle.is_empty() || pool.status().waiting >= missing {
                        break;
                    }
                    tokio::task::yield_now().await;
                }
                drop(idle);
                drop(pool);
                for o in opening {
                    let _ = o.await;
                }
            }
        }
    });
}

/// The pool's timeouts with no wait for a free slot.
fn no_wait<M: Manager>(pool: &Pool<M>) -> deadpool::managed::Timeouts {
    let mut t = pool.timeouts();
    t.wait = Some(Duration::ZERO);
    t
}

/// The size and availability of `pool` (with `readers`, a pool of read-only connections beside
/// it, counted in), with `counters`.
pub(crate) fn status<M: Manager>(
    pool: &Pool<M>,
    readers: Option<&Pool<M>>,
    counters: &Counters,
) -> PoolStatus {
    let s = pool.status();
    let r = readers.map(Pool::status);
    let add = |f: fn(&deadpool::Status) -> usize| f(&s) + r.as_ref().map_or(0, f);
    PoolStatus {
        max_size: add(|s| s.max_size),
        size: add(|s| s.size),
        available: add(|s| s.available),
        waiting: add(|s| s.waiting),
        created: counters.created.load(Ordering::Relaxed),
        retired_max_lifetime: counters.retired_lifetime.load(Ordering::Relaxed),
        retired_idle: counters.retired_idle.load(Ordering::Relaxed),
    }
}

/// Checks out a connection. The first attempt does not wait: when a connection is idle (or one
/// may be opened) it arms no timer, which would cost clock reads and a timer handle on every
/// checkout. Only when every connection is in use does it wait, for up to the pool's wait
/// timeout.
pub(crate) async fn get<M: Manager>(pool: &Pool<M>) -> Result<Object<M>>
where
    M::Error: std::fmt::Display,
    SqlMiddlewareDbError: From<M::Error>,
{
    let mut now = pool.timeouts();
    now.wait = Some(Duration::ZERO);
    match pool.timeout_get(&now).await {
        Err(PoolError::Timeout(TimeoutType::Wait)) => pool.get().await.map_err(pool_error),
        r => r.map_err(pool_error),
    }
}

/// Runs `work` until `deadline`: `None` when the limit passed first (`work` is then dropped).
#[cfg(feature = "_server")]
#[inline]
pub(crate) async fn within<T>(
    deadline: Instant,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    tokio::time::timeout_at(tokio::time::Instant::from_std(deadline), work)
        .await
        .ok()
}

/// Checks out a connection of a server engine within `deadline` (when given) and the pool's
/// wait timeout, as a whole. A connection that has to be opened for it is opened in a task of
/// its own: if the caller gives up first, it joins the pool when it is ready (bounded by the
/// pool's create timeout), for a later checkout.
#[cfg(feature = "_server")]
pub(crate) async fn checkout_within<M>(
    pool: &Pool<M>,
    deadline: Option<Instant>,
) -> Result<Object<M>>
where
    M: Manager + 'static,
    M::Error: std::fmt::Display,
    SqlMiddlewareDbError: From<M::Error>,
    Object<M>: Send,
{
    let status = pool.status();
    if deadline.is_none() && (status.available > 0 || status.size >= status.max_size) {
        // An idle connection, or a full pool whose next free connection is one going back:
        // no connect to bound, and the pool's own wait timeout bounds the wait (no task, no
        // extra timer).
        return get(pool).await;
    }
    // Boxed: the timers and the task of the bounded path would make every checkout's future
    // larger (and the pool's checkout future, shared by every engine, with it).
    Box::pin(checkout_bounded(pool, deadline, status)).await
}

/// [`checkout_within`] with a deadline, or with a connect on the way.
#[cfg(feature = "_server")]
async fn checkout_bounded<M>(
    pool: &Pool<M>,
    deadline: Option<Instant>,
    status: deadpool::Status,
) -> Result<Object<M>>
where
    M: Manager + 'static,
    M::Error: std::fmt::Display,
    SqlMiddlewareDbError: From<M::Error>,
    Object<M>: Send,
{
    let wait = pool.timeouts().wait.unwrap_or(Duration::from_secs(10));
    let by_wait = Instant::now() + wait;
    let at = deadline.map_or(by_wait, |d| d.min(by_wait));
    let late = || match deadline {
        Some(d) if d <= by_wait => crate::deadline::error(),
        _ => SqlMiddlewareDbError::new(
            ErrorKind::PoolTimeout,
            "no connection could be checked out within the pool's wait timeout (the server did not answer in time); raise wait_timeout, or check the server",
        ),
    };
    if status.available > 0 || status.size >= status.max_size {
        // No connect on the way: the pool's wait, cut to the deadline.
        return within(at, get(pool)).await.unwrap_or_else(|| Err(late()));
    }
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return within(at, get(pool)).await.unwrap_or_else(|| Err(late()));
    };
    let p = pool.clone();
    let task = handle.spawn(async move { get(&p).await });
    match within(at, task).await {
        Some(Ok(r)) => r,
        Some(Err(e)) => Err(SqlMiddlewareDbError::new(
            ErrorKind::ConnectionLost,
            format!("opening a connection failed: {e}"),
        )),
        None => Err(late()),
    }
}

/// Maps a deadpool checkout error: the backend's own error keeps its kind; timeouts and a closed
/// pool get theirs, with a message that says what to change.
pub(crate) fn pool_error<E>(e: PoolError<E>) -> SqlMiddlewareDbError
where
    E: std::fmt::Display,
    SqlMiddlewareDbError: From<E>,
{
    match e {
        PoolError::Backend(e) => SqlMiddlewareDbError::from(e),
        PoolError::Timeout(TimeoutType::Wait) => SqlMiddlewareDbError::new(
            ErrorKind::PoolTimeout,
            "no pooled connection became free within the wait timeout; raise max_size or wait_timeout, or hold connections for less time",
        ),
        PoolError::Timeout(t) => SqlMiddlewareDbError::new(
            ErrorKind::PoolTimeout,
            format!(
                "the pool timed out while {} a connection",
                if matches!(t, TimeoutType::Create) {
                    "creating"
                } else {
                    "recycling"
                }
            ),
        ),
        PoolError::Closed => SqlMiddlewareDbError::new(ErrorKind::PoolClosed, "the pool is closed"),
        other => SqlMiddlewareDbError::new(ErrorKind::Config, other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes_are_spread_over_a_fifth() {
        let max = Duration::from_secs(100);
        let base = Instant::now();
        let js: Vec<Duration> = (0..50)
            .map(|i| jitter(max, base + Duration::from_nanos(i)))
            .collect();
        assert!(js.iter().all(|j| *j < max / 5), "{js:?}");
        let distinct: std::collections::BTreeSet<_> = js.iter().collect();
        assert!(
            distinct.len() > 40,
            "connections made together get different lifetimes"
        );
        assert_eq!(jitter(max, base), jitter(max, base), "fixed per connection");
    }
}
