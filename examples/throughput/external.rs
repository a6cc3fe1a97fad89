//! The external contenders of the throughput examples: a binary of a harness crate that keeps its
//! library out of this crate's dependencies with a lockfile of its own (SQLx's `sqlx_throughput`,
//! the async-SQLite peers' `peers_throughput`), run once per round as the C clients are. Each
//! warms up for a second, as the Rust contenders do, then counts its window and prints one JSON
//! line: `{"transactions": T, "seconds": S, "tps": X, "errors": E, ..}`.

use std::path::PathBuf;
use std::process::Command;

/// An external contender's binary.
pub struct External {
    bin: PathBuf,
}

impl External {
    /// The binary named by the example's flag (`arg`), else by the environment variable `env`.
    /// Without either, says on stderr that `what` is not in this run and how to add it (`hint`);
    /// a named binary that does not exist is an error.
    pub fn find(
        arg: Option<&str>,
        env: &str,
        tag: &str,
        what: &str,
        hint: &str,
    ) -> Option<External> {
        let named = arg
            .map(str::to_owned)
            .or_else(|| std::env::var(env).ok().filter(|v| !v.is_empty()));
        let Some(bin) = named.map(PathBuf::from) else {
            eprintln!("[{tag}] {what} not a contender of this run: {hint}");
            return None;
        };
        if !bin.is_file() {
            eprintln!("[{tag}] {}: no such file", bin.display());
            std::process::exit(2);
        }
        Some(External { bin })
    }

    /// The example's `contenders`, with `names` after them when the binary was found.
    pub fn joined(
        found: bool,
        contenders: &[&'static str],
        names: &[&'static str],
    ) -> Vec<&'static str> {
        let mut all = contenders.to_vec();
        if found {
            all.extend_from_slice(names);
        }
        all
    }

    /// Runs the binary with `args` and returns its JSON line, after checking that it succeeded
    /// and counted no failed transaction.
    pub fn run(&self, args: &[String]) -> serde_json::Value {
        let name = self.bin.file_name().map_or_else(
            || self.bin.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let out = Command::new(&self.bin)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.bin.display()));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name} failed: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line: serde_json::Value = text
            .lines()
            .last()
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("no JSON line in {name}'s output: {text}"));
        let errors = line["errors"].as_u64().unwrap_or(0);
        assert_eq!(errors, 0, "{name} counted failed transactions: {line}");
        line
    }

    /// The transactions per second of a JSON line of [`External::run`].
    pub fn tps(line: &serde_json::Value) -> f64 {
        line["tps"]
            .as_f64()
            .unwrap_or_else(|| panic!("no tps in the contender's output: {line}"))
    }
}
