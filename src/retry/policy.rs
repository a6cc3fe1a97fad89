//! [`RetryPolicy`]: how many attempts, how long to wait between them, how long in all, and
//! whether a commit of unknown outcome may be run again.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How a retrying transaction ([`crate::MiddlewarePool::transaction`]) retries.
///
/// - **Attempts** ([`Self::max_attempts`], 5 by default): the closure runs at most this often.
/// - **Backoff** ([`Self::backoff`], 5 ms doubling up to 500 ms by default) with full jitter:
///   before attempt `n + 1` the call sleeps a random time between zero and
///   `min(max, base × 2ⁿ⁻¹)`, so that writers that collided do not collide again in step.
/// - **Deadline** ([`Self::deadline`], none by default): the whole call (checkouts, the
///   attempts' statements, their commits and the waits between them) ends by then. A statement
///   still running when it passes is stopped; a wait that would end after it is not started.
/// - **Idempotent** ([`Self::idempotent`], `false` by default): whether a commit whose outcome
///   is unknown ([`crate::ErrorKind::OutcomeUnknown`]) may be run again. Only declare it for
///   work that applying twice does not change.
///
/// ```
/// use std::time::Duration;
/// use sql_middleware::RetryPolicy;
///
/// let policy = RetryPolicy::new()
///     .max_attempts(8)
///     .backoff(Duration::from_millis(2), Duration::from_millis(200))
///     .deadline(Duration::from_secs(5));
/// assert_eq!(policy.attempts(), 8);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    pub(crate) max_attempts: u32,
    pub(crate) base: Duration,
    pub(crate) max: Duration,
    pub(crate) deadline: Option<Duration>,
    pub(crate) idempotent: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base: Duration::from_millis(5),
            max: Duration::from_millis(500),
            deadline: None,
            idempotent: false,
        }
    }
}

impl RetryPolicy {
    /// The default policy: 5 attempts, 5 ms to 500 ms of jittered backoff, no deadline, not
    /// idempotent.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `n` attempts (`0` is taken as `1`: the closure always runs once).
    #[must_use]
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }

    /// The backoff before attempt `n + 1` is a random time in `[0, min(max, base × 2ⁿ⁻¹)]`.
    #[must_use]
    pub fn backoff(mut self, base: Duration, max: Duration) -> Self {
        self.base = base;
        self.max = max.max(base);
        self
    }

    /// The whole call ends within `total`, waits included (see [`RetryPolicy`]).
    #[must_use]
    pub fn deadline(mut self, total: Duration) -> Self {
        self.deadline = Some(total);
        self
    }

    /// Declares the closure's work idempotent: a commit whose outcome is unknown is then
    /// retried too.
    #[must_use]
    pub fn idempotent(mut self, yes: bool) -> Self {
        self.idempotent = yes;
        self
    }

    /// The most attempts a call makes.
    pub fn attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The longest backoff before attempt `attempt + 1`: `min(max, base × 2^(attempt-1))`.
    pub(crate) fn cap(&self, attempt: u32) -> Duration {
        let shift = attempt.saturating_sub(1).min(31);
        self.base
            .checked_mul(1u32 << shift)
            .map_or(self.max, |d| d.min(self.max))
    }

    /// The backoff before attempt `attempt + 1`, given a random `r`: `cap × r / 2⁶⁴`.
    pub(crate) fn delay(&self, attempt: u32, r: u64) -> Duration {
        let cap = self.cap(attempt).as_nanos();
        let nanos = (cap * u128::from(r)) >> 64;
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// A random number for the jitter (no dependency: a randomly keyed hash of a counter).
pub(crate) fn random() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    std::collections::hash_map::RandomState::new().hash_one(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn cap_doubles_up_to_the_max() {
        let p = RetryPolicy::new().backoff(ms(5), ms(100));
        let caps: Vec<_> = (1..=7).map(|n| p.cap(n)).collect();
        assert_eq!(
            caps,
            [ms(5), ms(10), ms(20), ms(40), ms(80), ms(100), ms(100)]
        );
        assert_eq!(p.cap(u32::MAX), ms(100), "no overflow at huge attempts");
    }

    #[test]
    fn jitter_stays_within_zero_and_the_cap() {
        let p = RetryPolicy::new().backoff(ms(3), ms(250));
        for attempt in 1..40 {
            let cap = p.cap(attempt);
            assert_eq!(p.delay(attempt, 0), Duration::ZERO);
            let top = p.delay(attempt, u64::MAX);
            assert!(
                top <= cap && cap - top < Duration::from_nanos(2),
                "{top:?} {cap:?}"
            );
            for _ in 0..200 {
                assert!(p.delay(attempt, random()) <= cap);
            }
        }
    }

    #[test]
    fn jitter_spreads_over_the_range() {
        let p = RetryPolicy::new().backoff(ms(100), ms(100));
        let draws: Vec<_> = (0..2000).map(|_| p.delay(1, random())).collect();
        let low = draws.iter().filter(|d| **d < ms(25)).count();
        let high = draws.iter().filter(|d| **d > ms(75)).count();
        // Uniform on [0, 100 ms]: about 500 in each quarter; far from that is no jitter.
        assert!((300..700).contains(&low), "low quarter: {low}");
        assert!((300..700).contains(&high), "high quarter: {high}");
    }

    #[test]
    fn builder_bounds() {
        let p = RetryPolicy::new().max_attempts(0).backoff(ms(10), ms(1));
        assert_eq!(p.attempts(), 1);
        assert_eq!(p.max, ms(10), "max is at least base");
        assert!(!p.idempotent);
        assert!(RetryPolicy::new().idempotent(true).idempotent);
        assert_eq!(RetryPolicy::new().deadline(ms(7)).deadline, Some(ms(7)));
    }
}
