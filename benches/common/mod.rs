//! Shared wiring of the bench targets: the Criterion configuration (results home, defaults that
//! finish in minutes) and the runtime helpers. Included with `mod common;`.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use criterion::Criterion;
use sql_middleware::bench_support::dataset;
use tokio::runtime::Runtime;

/// Criterion writing into `$CRITERION_HOME`, else `<repo>/bench_results/`.
///
/// Defaults: 20 samples, 2 s warm-up, 5 s measurement. Command-line flags (`--sample-size`,
/// `--warm-up-time`, `--measurement-time`, `--quick`, `--profile-time`, filters, baselines)
/// override them.
pub fn criterion() -> Criterion {
    Criterion::default()
        .output_directory(&dataset::criterion_home(env!("CARGO_MANIFEST_DIR")))
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args()
}

/// The runtime every async id runs on: tokio's multi-thread scheduler with its default worker
/// count (one per core).
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("build the tokio runtime")
}

/// Runs `fut` as one spawned task (as a request handler would run) and returns its output.
/// The task measures its own timed loop and returns the elapsed time.
pub fn in_task<T, Fut>(rt: &Runtime, fut: Fut) -> T
where
    T: Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    rt.block_on(async move { tokio::spawn(fut).await.expect("the bench task panicked") })
}

/// `main` of a bench target: runs the given functions with [`criterion`], then the summary.
#[macro_export]
macro_rules! bench_main {
    ($($f:path),+ $(,)?) => {
        fn main() {
            let mut c = common::criterion();
            $($f(&mut c);)+
            c.final_summary();
        }
    };
}
