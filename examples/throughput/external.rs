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

/// How an example finds and names an external contender.
pub struct Harness {
    /// The environment variable that names the binary when the example's flag does not.
    pub env: &'static str,
    /// The contender, as the notice of its absence speaks of it ("SQLx is").
    pub what: &'static str,
    /// How to add it to a run.
    pub hint: &'static str,
    /// Its contenders, as the binary's flags and the report name them.
    pub names: &'static [&'static str],
}

/// An external contender of the examples: its harness, and its own type around the binary.
pub trait Contender: Sized {
    /// How it is found and named.
    const HARNESS: Harness;

    /// The contender around its binary.
    fn wrap(bin: External) -> Self;

    /// The binary named by the example's flag (`arg`), else by the harness's environment
    /// variable. Without either, says on stderr that the contender is not in this run and how
    /// to add it; a named binary that does not exist is an error.
    fn find(arg: Option<&str>, tag: &str) -> Option<Self> {
        External::find(&Self::HARNESS, arg, tag).map(Self::wrap)
    }

    /// The example's `contenders`, with this one's names after them when its binary was found.
    fn joined(found: Option<&Self>, contenders: &[&'static str]) -> Vec<&'static str> {
        let mut all = contenders.to_vec();
        if found.is_some() {
            all.extend_from_slice(Self::HARNESS.names);
        }
        all
    }
}

impl External {
    /// See [`Contender::find`].
    fn find(h: &Harness, arg: Option<&str>, tag: &str) -> Option<External> {
        let named = arg
            .map(str::to_owned)
            .or_else(|| std::env::var(h.env).ok().filter(|v| !v.is_empty()));
        let Some(bin) = named.map(PathBuf::from) else {
            eprintln!("[{tag}] {} not a contender of this run: {}", h.what, h.hint);
            return None;
        };
        if !bin.is_file() {
            eprintln!("[{tag}] {}: no such file", bin.display());
            std::process::exit(2);
        }
        Some(External { bin })
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
