//! How the benches run their timed loops on tokio (one spawned task per loop, and the fan-out
//! of C tasks over contiguous shares of the ids) and the per-row statistics of `BENCH_TRACE`.
//! Depends on std and tokio only, so the SQLx harness includes this file by path and both
//! harnesses time and summarise their loops the same way.

use std::future::Future;
use std::ops::Range;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

/// Runs `fut` as one spawned task (as a request handler would run) and returns its output.
/// The task measures its own timed loop and returns the elapsed time.
pub fn in_task<T, Fut>(rt: &Runtime, fut: Fut) -> T
where
    T: Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    rt.block_on(async move { tokio::spawn(fut).await.expect("the bench task panicked") })
}

/// Runs `task` for each range of ids as its own spawned task, all at once, `iters` times over,
/// and returns the wall time (the fan-out groups' timed loop).
pub fn fan_out<F, Fut>(rt: &Runtime, iters: u64, ranges: &[Range<usize>], task: F) -> Duration
where
    F: Fn(Range<usize>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    rt.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            let handles: Vec<_> = ranges
                .iter()
                .map(|r| tokio::spawn(task(r.clone())))
                .collect();
            for h in handles {
                h.await.expect("a fan-out task panicked");
            }
        }
        start.elapsed()
    })
}

/// Splits `0..n` into `c` contiguous ranges whose lengths differ by at most one.
pub fn chunks(n: usize, c: usize) -> Vec<Range<usize>> {
    let c = c.max(1);
    let (q, r) = (n / c, n % c);
    let mut start = 0;
    (0..c)
        .map(|i| {
            let len = q + usize::from(i < r);
            let range = start..start + len;
            start += len;
            range
        })
        .collect()
}

/// Per-row time statistics of a `BENCH_TRACE` pass (mean, median, 99th percentile).
#[derive(Debug, Clone, Copy, Default)]
pub struct SplitStats {
    /// Mean.
    pub mean: Duration,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
}

impl SplitStats {
    /// Statistics of `samples`.
    pub fn of(mut samples: Vec<Duration>) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        samples.sort_unstable();
        let total: Duration = samples.iter().sum();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Self {
            mean: total / samples.len() as u32,
            p50: at(0.5),
            p99: at(0.99),
        }
    }
}

impl std::fmt::Display for SplitStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "mean {:>7.0} ns  p50 {:>7.0} ns  p99 {:>7.0} ns",
            self.mean.as_nanos() as f64,
            self.p50.as_nanos() as f64,
            self.p99.as_nanos() as f64
        )
    }
}
