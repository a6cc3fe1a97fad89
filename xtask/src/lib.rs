//! Benchmark tooling of sql-middleware: the results report, the suite runner with resource
//! recording, and the nightly baseline comparison. See docs/BenchTooling.md.
//!
//! Run it as `cargo xtask <command>`; this library exists so the parsing, ratio and verdict
//! logic can be tested on fixture Criterion folders (`tests/fixtures/`).

#[macro_use]
pub mod util;
pub mod catalog;
pub mod criterion;
pub mod environment;
pub mod nightly;
pub mod report;
pub mod runner;
pub mod svg;
pub mod targets;
