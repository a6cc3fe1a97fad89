//! Live statistics of a pool ([`PoolStats`], from `db.stats()`), kept with relaxed atomics and
//! no dependency. Per-call counts (statement cache, SQLite execution) are kept per connection
//! without atomics and added to the pool's totals when the connection goes back to the pool
//! (`Wing::flush_stats`, one flush for every engine), so the hot path pays nothing for them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::stmt_cache::StatementCacheStats;

/// Upper bounds of the checkout-wait histogram buckets; the last bucket has no bound.
pub const WAIT_BUCKET_BOUNDS: [Duration; 7] = [
    Duration::from_micros(10),
    Duration::from_micros(100),
    Duration::from_millis(1),
    Duration::from_millis(10),
    Duration::from_millis(100),
    Duration::from_secs(1),
    Duration::from_secs(10),
];

/// How SQLite ran a connection's calls (see the README's "SQLite: how calls leave the async
/// thread"). Zero on other backends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecStats {
    /// Calls that ran on the calling task, within the inline budget.
    pub inline: u64,
    /// Calls sent to the blocking pool by policy: the `Offload` model, a statement known to be
    /// slow, a commit that waits for the disk, raw access.
    pub offloaded_by_policy: u64,
    /// Calls interrupted inline and run again on the blocking pool: a read that overran the
    /// inline budget (a write is never re-run), or a statement that met a lock, which is never
    /// waited for on the async thread.
    pub rerun_after_interrupt: u64,
}

impl ExecStats {
    fn minus(self, earlier: ExecStats) -> ExecStats {
        ExecStats {
            inline: self.inline.saturating_sub(earlier.inline),
            offloaded_by_policy: self
                .offloaded_by_policy
                .saturating_sub(earlier.offloaded_by_policy),
            rerun_after_interrupt: self
                .rerun_after_interrupt
                .saturating_sub(earlier.rerun_after_interrupt),
        }
    }
}

/// Checkout waits: how long `get_connection` (and `reader`) took to hand out a connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WaitStats {
    /// Checkouts that succeeded.
    pub count: u64,
    /// Their total wait.
    pub total: Duration,
    /// The longest wait.
    pub max: Duration,
    /// Checkouts per bucket: bucket `i` counts waits up to [`WAIT_BUCKET_BOUNDS`]`[i]` (and over
    /// the previous bound); the last counts the rest.
    pub buckets: [u64; 8],
}

impl WaitStats {
    /// The mean wait (zero before the first checkout).
    pub fn mean(&self) -> Duration {
        u32::try_from(self.count)
            .ok()
            .filter(|n| *n > 0)
            .map_or(Duration::ZERO, |n| self.total / n)
    }
}

/// A snapshot of a pool: its connections, its checkouts, and what its connections did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// The configured maximum of open connections.
    pub max_size: usize,
    /// Connections open now (checked out or idle).
    pub size: usize,
    /// Idle connections ready for checkout.
    pub idle: usize,
    /// Connections checked out now.
    pub in_use: usize,
    /// Tasks waiting for a connection now.
    pub waiters: usize,
    /// Checkout waits since the pool was built.
    pub checkout_wait: WaitStats,
    /// Connections opened since the pool was built.
    pub created: u64,
    /// Connections closed for reaching `max_lifetime`.
    pub retired_max_lifetime: u64,
    /// Connections closed for being idle longer than `idle_timeout`.
    pub retired_idle: u64,
    /// Connections discarded for any other reason: found closed or broken at a health check,
    /// returned inside a transaction or with a session that could not be restored, or lost by
    /// a cancelled or panicked call. (Every connection created is open, retired or discarded.)
    pub discarded: u64,
    /// Statement cache hits, misses and evictions of every connection, counted as each
    /// checkout ended (`cached` and `capacity` are zero here; see
    /// `conn.statement_cache_stats()` for one connection's cache).
    pub statement_cache: StatementCacheStats,
    /// How SQLite ran the calls of every checkout that ended (zero on other backends).
    pub sqlite: ExecStats,
    /// Retrying transactions (`db.transaction(&policy, ..)`): calls, retries, attempts.
    pub retry: RetryStats,
}

/// What the retrying transactions of a pool did (see [`crate::RetryPolicy`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryStats {
    /// Retrying calls that ended (committed or not).
    pub calls: u64,
    /// Calls that needed more than one attempt.
    pub retried: u64,
    /// Attempts of every call (at least one per call).
    pub attempts: u64,
    /// Calls that ended on a transient error: out of attempts, or out of time.
    pub given_up: u64,
}

/// The pool-wide counters behind [`PoolStats`].
#[derive(Debug, Default)]
pub(crate) struct Live {
    /// Checkouts per wait bucket; their sum is the number of checkouts.
    wait_nanos: AtomicU64,
    wait_max_nanos: AtomicU64,
    wait_buckets: [AtomicU64; 8],
    cache: [AtomicU64; 3],
    exec: [AtomicU64; 3],
    /// [`RetryStats`]: calls, retried, attempts, given up.
    retry: [AtomicU64; 4],
}

impl Live {
    /// Counts a checkout that waited `waited`.
    pub(crate) fn checkout(&self, waited: Duration) {
        let n = crate::deadline::nanos(waited);
        // Most checkouts find a connection idle: nothing to add to the total or the maximum,
        // and two fewer writes to counters every task of the pool shares.
        if n != 0 {
            self.wait_nanos.fetch_add(n, Ordering::Relaxed);
            self.wait_max_nanos.fetch_max(n, Ordering::Relaxed);
        }
        let bucket = WAIT_BUCKET_BOUNDS
            .iter()
            .position(|b| waited <= *b)
            .unwrap_or(WAIT_BUCKET_BOUNDS.len());
        self.wait_buckets[bucket].fetch_add(1, Ordering::Relaxed);
    }

    fn add(&self, cache: StatementCacheStats, exec: ExecStats) {
        // Written out, not a chained iterator: this runs at every checkout's end, and only the
        // counters that moved are touched (usually two).
        let add = |c: &AtomicU64, v: u64| {
            if v != 0 {
                c.fetch_add(v, Ordering::Relaxed);
            }
        };
        add(&self.cache[0], cache.hits);
        add(&self.cache[1], cache.misses);
        add(&self.cache[2], cache.evictions);
        add(&self.exec[0], exec.inline);
        add(&self.exec[1], exec.offloaded_by_policy);
        add(&self.exec[2], exec.rerun_after_interrupt);
    }

    /// Counts a retrying call that ended after `attempts` attempts (`gave_up`: on a transient
    /// error).
    pub(crate) fn retry_call(&self, attempts: u32, gave_up: bool) {
        let add = |i: usize, v: u64| self.retry[i].fetch_add(v, Ordering::Relaxed);
        add(0, 1);
        add(1, u64::from(attempts > 1));
        add(2, u64::from(attempts));
        add(3, u64::from(gave_up));
    }

    /// The retrying calls so far.
    pub(crate) fn retry(&self) -> RetryStats {
        let load = |i: usize| self.retry[i].load(Ordering::Relaxed);
        RetryStats {
            calls: load(0),
            retried: load(1),
            attempts: load(2),
            given_up: load(3),
        }
    }

    /// The checkout waits so far.
    pub(crate) fn waits(&self) -> WaitStats {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        WaitStats {
            count: self.wait_buckets.iter().map(load).sum(),
            total: Duration::from_nanos(load(&self.wait_nanos)),
            max: Duration::from_nanos(load(&self.wait_max_nanos)),
            buckets: std::array::from_fn(|i| load(&self.wait_buckets[i])),
        }
    }

    /// The statement cache counts of the checkouts that ended.
    pub(crate) fn cache(&self) -> StatementCacheStats {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StatementCacheStats {
            hits: load(&self.cache[0]),
            misses: load(&self.cache[1]),
            evictions: load(&self.cache[2]),
            ..Default::default()
        }
    }

    /// The SQLite execution counts of the checkouts that ended.
    pub(crate) fn exec(&self) -> ExecStats {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ExecStats {
            inline: load(&self.exec[0]),
            offloaded_by_policy: load(&self.exec[1]),
            rerun_after_interrupt: load(&self.exec[2]),
        }
    }
}

/// What one connection has already added to its pool's totals, and (feature `tracing`) the
/// connection's id for spans.
#[derive(Debug)]
pub(crate) struct Flushed {
    cache: StatementCacheStats,
    exec: ExecStats,
    #[cfg(feature = "tracing")]
    id: u64,
}

#[cfg_attr(not(feature = "tracing"), allow(clippy::derivable_impls))]
impl Default for Flushed {
    fn default() -> Self {
        #[cfg(feature = "tracing")]
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Flushed {
            cache: StatementCacheStats::default(),
            exec: ExecStats::default(),
            #[cfg(feature = "tracing")]
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }
}

impl Flushed {
    /// The connection's id: unique in the process, in the order connections were opened.
    #[cfg(feature = "tracing")]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Takes what the connection did so far as already added: the pool's own work on a new
    /// connection (its `after_connect` hook) stays out of the totals. (Postgres runs its hook
    /// outside the statement cache, with nothing to skip.)
    #[allow(
        dead_code,
        reason = "an engine that runs its hook outside its cache has nothing to skip"
    )]
    pub(crate) fn skip(&mut self, cache: StatementCacheStats, exec: ExecStats) {
        self.cache = cache;
        self.exec = exec;
    }

    /// Adds what the connection did since the last flush (its counters are cumulative) to
    /// `live`.
    pub(crate) fn flush(&mut self, live: &Live, cache: StatementCacheStats, exec: ExecStats) {
        let d_cache = StatementCacheStats {
            hits: cache.hits.saturating_sub(self.cache.hits),
            misses: cache.misses.saturating_sub(self.cache.misses),
            evictions: cache.evictions.saturating_sub(self.cache.evictions),
            ..Default::default()
        };
        live.add(d_cache, exec.minus(self.exec));
        self.cache = cache;
        self.exec = exec;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_fall_into_their_buckets() {
        let live = Live::default();
        for w in [
            Duration::from_micros(5),
            Duration::from_micros(10),
            Duration::from_micros(11),
            Duration::from_millis(50),
            Duration::from_secs(60),
        ] {
            live.checkout(w);
        }
        let w = live.waits();
        assert_eq!(w.count, 5);
        assert_eq!(w.buckets, [2, 1, 0, 0, 1, 0, 0, 1]);
        assert_eq!(w.max, Duration::from_secs(60));
    }

    #[test]
    fn flushes_add_only_what_is_new() {
        let live = Live::default();
        let mut f = Flushed::default();
        let cache = |h, m| StatementCacheStats {
            hits: h,
            misses: m,
            ..Default::default()
        };
        f.flush(&live, cache(3, 1), ExecStats::default());
        f.flush(&live, cache(5, 1), ExecStats::default());
        let c = live.cache();
        assert_eq!((c.hits, c.misses), (5, 1));
    }
}
