//! The benchmarks' shared dataset, workloads and per-backend helpers, used by the bench targets,
//! the examples that time lookups, some tests and the xtask tooling of the `sql-middleware`
//! repository. Not published.
//!
//! - [`dataset`]: the lookup rows, ids, knobs and file locations (std only; the comparison
//!   harnesses in `bench-harnesses/` include that file by path).
//! - [`tasks`]: the spawned-task and fan-out timing loops, and the fan-out chunking (std and
//!   tokio only; the comparison harnesses include that file by path).
//! - [`workloads`]: backend-neutral pieces: the insert dataset covering every [`RowValues`] kind,
//!   the `BENCH_TRACE` split, the fan-out chunking.
//! - `sqlite`, `turso`, `postgres`, `mysql` (one per backend feature): building the databases, the raw
//!   drivers' baselines, and the micro-benches' timed loops over the crate's internal steps
//!   (reached through `sql_middleware::bench_hooks`).
//!
//! The backend features follow the main crate's: each of its backend features (and `tracing`)
//! enables the one of this crate with the same name.
//!
//! [`RowValues`]: sql_middleware::RowValues
#![forbid(unsafe_code)]
#![warn(missing_docs, rust_2018_idioms)]

pub mod dataset;
pub mod tasks;
pub mod workloads;

#[cfg(feature = "mysql")]
pub mod mysql;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(feature = "turso")]
pub mod turso;

pub use dataset::BenchRow;

use sql_middleware::{FromRow, SqlRow};

/// `builder` as the benches' plain ids run it: with the `tracing` feature built in, spans off
/// for the pool (`.tracing(false)`, one branch per statement more than a build without the
/// feature), so that `middleware_tracing` beside them measures what spans cost.
pub fn plain(builder: sql_middleware::PoolBuilder) -> sql_middleware::PoolBuilder {
    #[cfg(feature = "tracing")]
    let builder = builder.tracing(false);
    builder
}

/// Decodes by position, as the raw drivers' baselines do (`row.get(0)` … `row.get(3)`).
impl FromRow for BenchRow {
    fn from_row<R: SqlRow>(row: &R) -> sql_middleware::Result<Self> {
        Ok(BenchRow {
            id: row.get(0)?,
            name: row.get(1)?,
            score: row.get(2)?,
            active: row.get(3)?,
        })
    }
}

/// A raw driver's error during a bench's setup (building a database, a baseline's connection),
/// as the crate's error type with the driver's message. The setup only reports it.
#[cfg(any(
    feature = "sqlite",
    feature = "turso",
    feature = "postgres",
    feature = "mysql"
))]
pub(crate) fn driver_err(e: impl std::fmt::Display) -> sql_middleware::Error {
    sql_middleware::Error::new(sql_middleware::ErrorKind::Other, e.to_string())
}

/// Checks that a per-run `what` (a schema, a database) named `name` is a plain identifier
/// (lower-case ASCII letters, digits and `_`), as the benches splice it into SQL.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn check_ident(what: &str, name: &str) -> sql_middleware::Result<()> {
    if !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        Ok(())
    } else {
        Err(sql_middleware::Error::new(
            sql_middleware::ErrorKind::InvalidInput,
            format!("{what} name {name:?} must be lower-case ASCII letters, digits and _"),
        ))
    }
}
