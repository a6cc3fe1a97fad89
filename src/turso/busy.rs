//! How Turso statements wait for a lock held by another connection.
//!
//! Turso's own busy handler asks its caller to sleep, but the `turso` crate turns that request
//! into a future that wakes itself at once, so a writer waiting for the lock keeps an executor
//! thread spinning until the lock is free or the timeout passes (with two writers waiting on a
//! two-thread runtime, nothing else runs). The pool's connections therefore run with Turso's
//! handler off: a statement that meets a lock fails at once with `Busy`, and is retried here
//! after a sleep on the runtime's timer, with SQLite's default backoff schedule, until the
//! configured busy timeout has passed. The waiting task holds no thread.
//!
//! A retry is only made where Turso's own handler would have retried: the statement failed
//! with `Busy` (not `BusySnapshot`) and changed nothing. The pauses follow the SQLite family's
//! schedule ([`crate::sqlite_family::busy`]).

use std::time::{Duration, Instant};

use crate::sqlite_family::busy;

/// The backoff state of one statement that met a lock.
#[derive(Debug)]
pub(crate) struct BusyWait {
    deadline: Instant,
    attempt: usize,
}

impl BusyWait {
    /// Starts waiting now, for at most `timeout`.
    pub(crate) fn new(timeout: Duration) -> Self {
        let now = Instant::now();
        Self {
            // A timeout too large for `Instant` waits, in effect, for ever.
            deadline: now
                .checked_add(timeout)
                .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365)),
            attempt: 0,
        }
    }

    /// Sleeps until the next attempt is due and returns `true`, or returns `false` once the
    /// busy timeout has passed (the caller then reports `Busy`).
    pub(crate) async fn pause(&mut self) -> bool {
        let now = Instant::now();
        let Some(left) = self
            .deadline
            .checked_duration_since(now)
            .filter(|d| !d.is_zero())
        else {
            return false;
        };
        let delay = busy::delay(self.attempt);
        self.attempt += 1;
        tokio::time::sleep(delay.min(left)).await;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_zero_timeout_never_waits() {
        let mut w = BusyWait::new(Duration::ZERO);
        assert!(!w.pause().await);
    }

    #[tokio::test]
    async fn the_total_wait_stays_within_the_timeout() {
        let t = Instant::now();
        let mut w = BusyWait::new(Duration::from_millis(30));
        let mut delays = Vec::new();
        loop {
            let before = Instant::now();
            if !w.pause().await {
                break;
            }
            delays.push(before.elapsed());
        }
        let total = t.elapsed();
        assert!(
            total >= Duration::from_millis(30),
            "gave up early: {total:?}"
        );
        assert!(
            total < Duration::from_millis(30 + 200),
            "waited too long: {total:?}"
        );
        // 1, 2, 5, 10, 12 (capped by the deadline): the first sleeps follow the schedule.
        assert!(delays[0] >= Duration::from_millis(1));
        assert!(delays.len() >= 4, "{delays:?}");
    }
}
