//! Benchmark tooling of sql-middleware: the results report, the suite runner with resource
//! recording, and the nightly baseline comparison. See docs/dev/BenchTooling.md.
//!
//! Run it as `cargo xtask <command>`; this library exists so the parsing, ratio and verdict
//! logic can be tested on fixture Criterion folders (`tests/fixtures/`).
//!
//! # Layers
//!
//! The modules form layers, lowest first. A module imports only modules of lower layers, never
//! one of its own layer or above, so there is no import cycle (`tests/layering.rs` checks it):
//!
//! 1. `util`: the error type, file reading and writing, dates, number formats.
//! 2. `catalog` (what exists: suites, groups, workloads, micro pairs, sweeps), `criterion`
//!    (reading Criterion's folders), `environment` (the environment line), `side_files` (the
//!    other JSON files in CRITERION_HOME) and `svg` (charts).
//! 3. `results`: every catalog group as found in CRITERION_HOME.
//! 4. `targets`: the performance targets, evaluated on the results.
//! 5. The commands: `report` (`bench-report`), `runner` (`bench`), `nightly` and
//!    `reliability` (the generated `reports/Reliability.md`); none uses another.
//!
//! The binary (`main.rs`) parses the command line and calls the commands. Inside the folder
//! modules (`catalog/`, `nightly/`, `report/`), `mod.rs` sits above its files, and a file
//! imports only sibling files of a lower layer (listed in `tests/layering.rs`), never `mod.rs`.

#[macro_use]
pub mod util;
pub mod catalog;
pub mod criterion;
pub mod environment;
pub mod nightly;
pub mod reliability;
pub mod report;
pub mod results;
pub mod runner;
pub mod side_files;
pub mod svg;
pub mod targets;
