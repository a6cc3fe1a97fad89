//! SQLx as a contender of the Postgres and MySQL suites: the `sqlx_throughput` binary of the
//! SQLx harness crate (`bench-harnesses/sqlx_lookup`, which keeps SQLx out of this crate's
//! dependencies with a lockfile of its own), run once per round as the C clients are (see
//! `external.rs`).
//!
//! Build it with
//! `cargo build --release --manifest-path bench-harnesses/sqlx_lookup/Cargo.toml --bin sqlx_throughput`
//! and name it with `--sqlx PATH` (or `SQLX_THROUGHPUT=PATH`); `scripts/throughput.sh` does both.

use super::external::{Contender, External, Harness};

/// The SQLx contender.
pub struct Sqlx(External);

impl Contender for Sqlx {
    /// SQLx's harness: `SQLX_THROUGHPUT` names the binary when `--sqlx` does not.
    const HARNESS: Harness = Harness {
        env: "SQLX_THROUGHPUT",
        what: "SQLx is",
        hint: "build bench-harnesses/sqlx_lookup's sqlx_throughput and pass --sqlx PATH \
               (scripts/throughput.sh does)",
        names: &["sqlx"],
    };

    fn wrap(bin: External) -> Self {
        Sqlx(bin)
    }
}

impl Sqlx {
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
