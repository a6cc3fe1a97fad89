//! SQLx as a contender of the Postgres and MySQL suites: the `sqlx_throughput` binary of the
//! SQLx harness crate (`bench-harnesses/sqlx_lookup`, which keeps SQLx out of this crate's
//! dependencies with a lockfile of its own), run once per round as the C clients are (see
//! `external.rs`).
//!
//! Build it with
//! `cargo build --release --manifest-path bench-harnesses/sqlx_lookup/Cargo.toml --bin sqlx_throughput`
//! and name it with `--sqlx PATH` (or `SQLX_THROUGHPUT=PATH`); `scripts/throughput.sh` does both.

use super::external::External;

/// Where the binary is named when `--sqlx` is not given.
const ENV: &str = "SQLX_THROUGHPUT";

/// The SQLx contender.
pub struct Sqlx(External);

impl Sqlx {
    /// The binary named by `--sqlx`, else by `SQLX_THROUGHPUT`. Without either, says on stderr
    /// that SQLx is not in this run and how to add it; a named binary that does not exist is
    /// an error.
    pub fn find(arg: Option<&str>, tag: &str) -> Option<Sqlx> {
        External::find(
            arg,
            ENV,
            tag,
            "SQLx is",
            "build bench-harnesses/sqlx_lookup's sqlx_throughput and pass --sqlx PATH \
             (scripts/throughput.sh does)",
        )
        .map(Sqlx)
    }

    /// The example's `contenders`, with `sqlx` last when the binary was found.
    pub fn joined(found: Option<&Sqlx>, contenders: &[&'static str]) -> Vec<&'static str> {
        External::joined(found.is_some(), contenders, &["sqlx"])
    }

    /// One run's transactions per second over `seconds`, after its one-second warm-up.
    pub fn tps(
        &self,
        engine: &str,
        url: &str,
        workload: &str,
        clients: usize,
        seconds: u64,
    ) -> f64 {
        let line = self.0.run(&[
            "--engine".into(),
            engine.into(),
            "--url".into(),
            url.into(),
            "--workload".into(),
            workload.into(),
            "--clients".into(),
            clients.to_string(),
            "--seconds".into(),
            seconds.to_string(),
        ]);
        External::tps(&line)
    }
}
