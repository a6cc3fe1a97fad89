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

/// How long a thread that only sleeps in short ticks is kept from running when its ticks end:
/// time in which the machine (another process, the hypervisor) ran no waiting thread of this
/// process. A timing bound that the code under test must meet is widened by this much, and by
/// nothing else: a call that blocks its own thread or overruns its limit still fails the bound.
#[derive(Debug)]
pub struct StallMeter {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<Duration>>,
}

impl StallMeter {
    /// How long each tick sleeps.
    const TICK: Duration = Duration::from_millis(2);
    /// A tick that wakes later than this past its end counts in full (below it: timer jitter).
    const NOISE: Duration = Duration::from_millis(1);

    /// Starts measuring on a thread of its own.
    pub fn start() -> Self {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut stalled = Duration::ZERO;
            while !flag.load(Ordering::Relaxed) {
                let before = Instant::now();
                std::thread::sleep(Self::TICK);
                let late = before.elapsed().saturating_sub(Self::TICK);
                if late > Self::NOISE {
                    stalled += late;
                }
            }
            stalled
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops measuring; the stalls seen since [`StallMeter::start`].
    pub fn finish(mut self) -> Duration {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for StallMeter {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}
