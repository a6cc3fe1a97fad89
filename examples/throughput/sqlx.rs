//! SQLx as a contender of the Postgres and MySQL suites: the `sqlx_throughput` binary of the
//! SQLx harness crate (`bench-harnesses/sqlx_lookup`, which keeps SQLx out of this crate's
//! dependencies with a lockfile of its own), run once per round as the C clients are. It warms
//! up for a second, as the Rust contenders do, then counts the window and prints one JSON line.
//!
//! Build it with
//! `cargo build --release --manifest-path bench-harnesses/sqlx_lookup/Cargo.toml --bin sqlx_throughput`
//! and name it with `--sqlx PATH` (or `SQLX_THROUGHPUT=PATH`); `scripts/throughput.sh` does both.

use std::path::PathBuf;
use std::process::Command;

/// Where the binary is named when `--sqlx` is not given.
const ENV: &str = "SQLX_THROUGHPUT";

/// The SQLx contender.
pub struct Sqlx {
    bin: PathBuf,
}

impl Sqlx {
    /// The binary named by `--sqlx`, else by `SQLX_THROUGHPUT`. Without either, says on stderr
    /// that SQLx is not in this run and how to add it; a named binary that does not exist is
    /// an error.
    pub fn find(arg: Option<&str>, tag: &str) -> Option<Sqlx> {
        let named = arg
            .map(str::to_owned)
            .or_else(|| std::env::var(ENV).ok().filter(|v| !v.is_empty()));
        let Some(bin) = named.map(PathBuf::from) else {
            eprintln!(
                "[{tag}] SQLx is not a contender of this run: build bench-harnesses/sqlx_lookup's \
                 sqlx_throughput and pass --sqlx PATH (scripts/throughput.sh does)"
            );
            return None;
        };
        if !bin.is_file() {
            eprintln!("[{tag}] --sqlx {}: no such file", bin.display());
            std::process::exit(2);
        }
        Some(Sqlx { bin })
    }

    /// The example's `contenders`, with `sqlx` last when the binary was found.
    pub fn joined(found: Option<&Sqlx>, contenders: &[&'static str]) -> Vec<&'static str> {
        let mut all = contenders.to_vec();
        if found.is_some() {
            all.push("sqlx");
        }
        all
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
        let out = Command::new(&self.bin)
            .args(["--engine", engine, "--url", url, "--workload", workload])
            .args([
                "--clients",
                &clients.to_string(),
                "--seconds",
                &seconds.to_string(),
            ])
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.bin.display()));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "sqlx_throughput failed: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line: serde_json::Value = text
            .lines()
            .last()
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("no JSON line in sqlx_throughput's output: {text}"));
        let errors = line["errors"].as_u64().unwrap_or(0);
        assert_eq!(
            errors, 0,
            "sqlx_throughput counted failed transactions: {line}"
        );
        line["tps"]
            .as_f64()
            .unwrap_or_else(|| panic!("no tps in sqlx_throughput's output: {line}"))
    }
}
