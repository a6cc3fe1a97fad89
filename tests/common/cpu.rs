//! How long code held a thread, as distinct from how long the machine kept the thread waiting:
//! on a shared machine another process can preempt any code for milliseconds, which is not time
//! the code under test blocked.

use std::time::{Duration, Instant};

/// Time spent by this thread waiting for a CPU (the second field of Linux's
/// `/proc/thread-self/schedstat`), when the kernel reports it.
pub fn runqueue_wait() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// A point from which [`Mark::held_since`] measures wall-clock time less this thread's wait
/// for a CPU.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    at: Instant,
    queued: Option<Duration>,
    thread: std::thread::ThreadId,
}

impl Mark {
    /// Now, on this thread.
    pub fn now() -> Self {
        Self {
            queued: runqueue_wait(),
            at: Instant::now(),
            thread: std::thread::current().id(),
        }
    }

    /// The time since the mark, less the time this thread waited for a CPU meanwhile. When the
    /// caller has moved to another thread (a multi-threaded runtime), or the kernel reports no
    /// wait times, the full wall-clock time.
    pub fn held_since(&self) -> Duration {
        let wall = self.at.elapsed();
        if std::thread::current().id() != self.thread {
            return wall;
        }
        match (self.queued, runqueue_wait()) {
            (Some(a), Some(b)) => wall.saturating_sub(b.saturating_sub(a)),
            _ => wall,
        }
    }
}

/// How long `f` held the calling thread: the wall-clock time of the call, less the time the
/// thread spent waiting for a CPU meanwhile. A call that waits for a lock, sleeps or does work
/// counts in full.
pub fn held(f: impl FnOnce()) -> Duration {
    let mark = Mark::now();
    f();
    mark.held_since()
}
