//! Benchmark support, behind the `bench` feature: the shared dataset and workloads used by every
//! bench target. Not part of the stable API.
//!
//! - [`dataset`]: the lookup rows, ids, knobs and file locations (std only; the SQLx harness
//!   includes that file by path).
//! - [`tasks`]: the spawned-task and fan-out timing loops, and the fan-out chunking (std and
//!   tokio only; the SQLx harness includes that file by path).
//! - [`workloads`]: backend-neutral pieces: the insert dataset covering every [`RowValues`] kind,
//!   the `BENCH_TRACE` split, the fan-out chunking.
//! - `sqlite`, `turso`, `postgres` (one per backend feature): building the databases and the
//!   internal hooks of the micro-benches, which call the backend's own crate-private code.
//!
//! [`RowValues`]: crate::RowValues

pub mod dataset;
pub mod tasks;
pub mod workloads;

#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(feature = "turso")]
pub mod turso;

pub use dataset::BenchRow;

/// `builder` as the benches' plain ids run it: with the `tracing` feature built in, spans off
/// for the pool (`.tracing(false)`, one branch per statement more than a build without the
/// feature), so that `middleware_tracing` beside them measures what spans cost.
pub fn plain(builder: crate::PoolBuilder) -> crate::PoolBuilder {
    #[cfg(feature = "tracing")]
    let builder = builder.tracing(false);
    builder
}

use crate::decode::{FromRow, SqlRow};

/// Decodes by position, as the raw drivers' baselines do (`row.get(0)` … `row.get(3)`).
impl FromRow for BenchRow {
    fn from_row<R: SqlRow>(row: &R) -> crate::error::Result<Self> {
        Ok(BenchRow {
            id: row.get(0)?,
            name: row.get(1)?,
            score: row.get(2)?,
            active: row.get(3)?,
        })
    }
}
