//! The "Throughput at saturation" section of `index.md`, from the JSON the throughput examples
//! (`examples/pg_throughput.rs`, `mysql_throughput.rs`, `sqlite_throughput.rs`) write to
//! `<CRITERION_HOME>/throughput/<engine>.json`: per engine, each workload and client count with
//! every contender's median transactions per second and the crate's ratio to each.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;

use crate::util::{Error, Result};

/// One engine's file.
#[derive(Debug, Clone, Deserialize)]
pub struct ThroughputFile {
    /// `postgres`, `mysql`, `sqlite`.
    pub engine: String,
    /// The server's (or the database's) settings, as the example printed them.
    pub server: String,
    /// One line per workload and client count.
    pub lines: Vec<ThroughputLine>,
}

/// One workload at one client count.
#[derive(Debug, Clone, Deserialize)]
pub struct ThroughputLine {
    /// The workload's name (`select`, `tpcb`, `point_select`, `read_write`, `lookup`, `mixed`).
    pub workload: String,
    /// Concurrent clients (tasks).
    pub clients: u64,
    /// Rounds the medians are taken over.
    pub rounds: u64,
    /// The contenders in the example's order (older files lack it: then the keys of `tps`).
    #[serde(default)]
    pub contenders: Vec<String>,
    /// Median transactions per second per contender.
    pub tps: BTreeMap<String, f64>,
    /// Median over the rounds of the crate's tps ÷ the contender's, per contender.
    pub middleware_ratio: BTreeMap<String, f64>,
    /// Counts per contender summed over the rounds, by kind (`busy`, `retried`).
    #[serde(flatten)]
    pub counts: BTreeMap<String, BTreeMap<String, u64>>,
}

impl ThroughputLine {
    /// The contenders in display order.
    fn order(&self) -> Vec<&str> {
        if self.contenders.is_empty() {
            self.tps.keys().map(String::as_str).collect()
        } else {
            self.contenders.iter().map(String::as_str).collect()
        }
    }
}

/// Parses one engine's file, checking that every contender has a figure.
pub fn parse(text: &str) -> Result<ThroughputFile> {
    let f: ThroughputFile =
        serde_json::from_str(text).map_err(|e| Error(format!("invalid: {e}")))?;
    for l in &f.lines {
        for c in l.order() {
            if !l.tps.contains_key(c) || !l.middleware_ratio.contains_key(c) {
                return Err(Error(format!(
                    "{} {} C={}: no figure for contender `{c}`",
                    f.engine, l.workload, l.clients
                )));
            }
        }
    }
    Ok(f)
}

/// Reads `<home>/throughput/*.json`: Postgres, MySQL, SQLite first, then any other engine.
pub fn load(home: &Path) -> Result<Vec<ThroughputFile>> {
    let dir = home.join("throughput");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut files = Vec::new();
    for e in entries {
        let path = e
            .map_err(|e| Error(format!("{}: {e}", dir.display())))?
            .path();
        if path.extension().is_some_and(|x| x == "json") {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| Error(format!("{}: {e}", path.display())))?;
            files.push(parse(&text).map_err(|e| Error(format!("{}: {}", path.display(), e.0)))?);
        }
    }
    let rank = |engine: &str| match engine {
        "postgres" => 0,
        "mysql" => 1,
        "sqlite" => 2,
        _ => 3,
    };
    files.sort_by(|a, b| (rank(&a.engine), &a.engine).cmp(&(rank(&b.engine), &b.engine)));
    Ok(files)
}

fn engine_title(engine: &str) -> &str {
    match engine {
        "postgres" => "Postgres",
        "mysql" => "MySQL/MariaDB",
        "sqlite" => "SQLite",
        other => other,
    }
}

/// The section's markdown; without files, how to make them.
pub fn section(files: &[ThroughputFile]) -> String {
    let mut s = String::from("## Throughput at saturation\n\n");
    if files.is_empty() {
        s.push_str("Not measured. Run `cargo run --release --features postgres --example pg_throughput`, and the `mysql_throughput` (feature `mysql`) and `sqlite_throughput` (feature `sqlite`) examples, with the same CRITERION_HOME (docs/dev/Benchmarks.md, \"Throughput at saturation\").\n\n");
        return s;
    }
    s.push_str("Each contender's median transactions per second over interleaved rounds, and the median of the per-round ratios of the crate (`middleware`) to each contender (above 1 the crate is faster).\n\n");
    for f in files {
        let _ = writeln!(s, "### {}\n\n`{}`\n", engine_title(&f.engine), f.server);
        s.push_str("| workload | clients | rounds | median tps | middleware ÷ | counts |\n|---|---:|---:|---|---|---|\n");
        for l in &f.lines {
            let order = l.order();
            let tps: Vec<String> = order
                .iter()
                .map(|c| format!("{c} {:.0}", l.tps[*c]))
                .collect();
            let ratios: Vec<String> = order
                .iter()
                .filter(|c| **c != "middleware")
                .map(|c| format!("{c} {:.3}×", l.middleware_ratio[*c]))
                .collect();
            let counts: Vec<String> = l
                .counts
                .iter()
                .map(|(kind, per)| {
                    let each: Vec<String> = order
                        .iter()
                        .filter_map(|c| per.get(*c).map(|n| format!("{c} {n}")))
                        .collect();
                    format!("{kind}: {}", each.join(", "))
                })
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                l.workload,
                l.clients,
                l.rounds,
                tps.join(" · "),
                ratios.join(" · "),
                if counts.is_empty() {
                    "—".to_owned()
                } else {
                    counts.join("; ")
                }
            );
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As `examples/throughput/report.rs` writes it.
    const SQLITE: &str = r#"{"engine": "sqlite", "server": "journal_mode=wal synchronous=FULL", "lines": [
  {"workload": "lookup", "clients": 8, "rounds": 3, "contenders": ["raw", "middleware"], "tps": {"raw": 41000.5, "middleware": 39000.0}, "middleware_ratio": {"raw": 0.9512, "middleware": 1.0000}, "busy": {"raw": 0, "middleware": 0}},
  {"workload": "mixed", "clients": 64, "rounds": 3, "contenders": ["raw", "middleware", "single_writer"], "tps": {"raw": 20000.0, "middleware": 18000.0, "single_writer": 21000.0}, "middleware_ratio": {"raw": 0.9000, "middleware": 1.0000, "single_writer": 0.8571}, "busy": {"raw": 2, "middleware": 1, "single_writer": 0}}
]}
"#;

    #[test]
    fn parses_and_renders_a_file_the_examples_write() {
        let f = parse(SQLITE).expect("parses");
        assert_eq!(f.engine, "sqlite");
        assert_eq!(f.lines.len(), 2);
        let mixed = &f.lines[1];
        assert_eq!(mixed.clients, 64);
        assert_eq!(mixed.order(), ["raw", "middleware", "single_writer"]);
        assert_eq!(mixed.tps["single_writer"], 21000.0);
        assert_eq!(mixed.middleware_ratio["raw"], 0.9);
        assert_eq!(mixed.counts["busy"]["single_writer"], 0);
        assert_eq!(mixed.counts["busy"]["raw"], 2);
        let md = section(&[f]);
        assert!(md.contains("### SQLite"), "{md}");
        assert!(
            md.contains("| mixed | 64 | 3 | raw 20000 · middleware 18000 · single_writer 21000 | raw 0.900× · single_writer 0.857× | busy: raw 2, middleware 1, single_writer 0 |"),
            "{md}"
        );
        assert!(
            md.contains("| lookup | 8 | 3 | raw 41000 · middleware 39000 | raw 0.951× |"),
            "{md}"
        );
    }

    #[test]
    fn a_contender_without_a_figure_is_an_error() {
        let broken = SQLITE.replace(r#""single_writer": 21000.0"#, r#""other": 1.0"#);
        let e = parse(&broken).expect_err("single_writer has no tps");
        assert!(e.0.contains("single_writer"), "{}", e.0);
        assert!(parse("{\"engine\": \"sqlite\"}").is_err());
    }

    #[test]
    fn no_files_says_how_to_make_them() {
        assert!(section(&[]).contains("pg_throughput"));
        let dir = std::env::temp_dir().join(format!("xtask-throughput-{}", std::process::id()));
        assert!(load(&dir).expect("no directory is no files").is_empty());
    }
}
