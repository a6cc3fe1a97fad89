//! The JSON files written beside Criterion's folders in CRITERION_HOME by other tools:
//! allocations per operation, callgrind instruction counts and each suite's resources.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `bench_results/alloc_per_op.json`, written by `tests/alloc_per_op.rs`.
#[derive(Debug, Clone, Deserialize)]
pub struct AllocFile {
    /// Lookups measured per path.
    pub lookups: u64,
    /// Path name → figures.
    pub paths: BTreeMap<String, AllocPath>,
}

/// One path of [`AllocFile`].
#[derive(Debug, Clone, Deserialize)]
pub struct AllocPath {
    /// Heap allocations per operation.
    pub allocs_per_op: f64,
    /// Bytes allocated per operation.
    pub bytes_per_op: Option<f64>,
}

/// `<CRITERION_HOME>/resources.json`, written by `cargo xtask bench`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ResourcesFile {
    /// Suite name → its last recorded run.
    pub suites: BTreeMap<String, SuiteResources>,
}

/// Resources of one suite process (and anything it spawned).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SuiteResources {
    /// Bench target.
    pub target: String,
    /// Peak resident set size, KiB.
    pub max_rss_kib: u64,
    /// User CPU seconds.
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
    /// Wall seconds.
    pub wall_s: f64,
    /// Exit code (None: killed by a signal).
    pub exit_code: Option<i32>,
    /// Arguments given to the bench binary.
    pub args: Vec<String>,
    /// Knobs in force (`BENCH_*`).
    pub knobs: BTreeMap<String, String>,
    /// When it ran (Unix seconds).
    pub recorded_unix: i64,
}

/// `<CRITERION_HOME>/callgrind_lookup.json`, written by `scripts/callgrind-lookup.sh`.
#[derive(Debug, Clone, Deserialize)]
pub struct CallgrindFile {
    /// Instructions per raw rusqlite lookup.
    pub raw_per_lookup: f64,
    /// Instructions per middleware lookup.
    pub middleware_per_lookup: f64,
    /// The two run lengths whose difference was taken.
    pub short: u64,
    /// See `short`.
    pub long: u64,
}
