//! The table a bench target prints when it ends: each id it measured, its median per operation,
//! its ratio to the group's raw-driver control measured in the same run, and the committed
//! reference figure (`bench_results/<group>/<id>/<param>/reference/`) with the ratio to it.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sql_middleware_bench::dataset;

/// The raw-driver ids a group's ratios divide by, the first one the group has.
const CONTROLS: &[&str] = &[
    "rusqlite",
    "turso_raw",
    "tokio_postgres_raw",
    "deadpool_postgres_raw",
    "mysql_async_raw",
    "sqlite_raw",
    "postgres_copy_raw",
];

struct Row {
    group: String,
    function: String,
    param: String,
    per_op_ns: f64,
    reference_ns: Option<f64>,
}

/// Median per operation (ns) of the Criterion result folder `dir`, if it holds one.
fn per_op(dir: &Path) -> Option<f64> {
    let read = |f: &str| -> Option<serde_json::Value> {
        serde_json::from_slice(&std::fs::read(dir.join(f)).ok()?).ok()
    };
    let median = read("estimates.json")?["median"]["point_estimate"].as_f64()?;
    let elements = read("benchmark.json")
        .and_then(|b| b["throughput"]["Elements"].as_f64())
        .unwrap_or(1.0);
    Some(median / elements.max(1.0))
}

fn subdirs(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    out.sort();
    out
}

/// Every id under `home` whose `new/` result was written at or after `since`.
fn measured(home: &Path, reference: &Path, since: SystemTime) -> Vec<Row> {
    let fresh = |d: &Path| {
        std::fs::metadata(d.join("estimates.json"))
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= since)
    };
    let mut rows = Vec::new();
    for (group, gdir) in subdirs(home) {
        for (function, fdir) in subdirs(&gdir) {
            for (param, pdir) in subdirs(&fdir) {
                let new = pdir.join("new");
                if !fresh(&new) {
                    continue;
                }
                if let Some(per_op_ns) = per_op(&new) {
                    let reference_ns = per_op(
                        &reference
                            .join(&group)
                            .join(&function)
                            .join(&param)
                            .join("reference"),
                    );
                    rows.push(Row {
                        group: group.clone(),
                        function: function.clone(),
                        param,
                        per_op_ns,
                        reference_ns,
                    });
                }
            }
        }
    }
    rows
}

fn fmt_ns(ns: f64) -> String {
    match ns {
        n if n >= 1e9 => format!("{:.3} s", n / 1e9),
        n if n >= 1e6 => format!("{:.3} ms", n / 1e6),
        n if n >= 1e3 => format!("{:.3} µs", n / 1e3),
        n => format!("{n:.1} ns"),
    }
}

/// Prints the closing table for the ids measured since `since` (nothing when none was).
pub fn print(since: SystemTime) {
    let manifest = env!("CARGO_MANIFEST_DIR");
    let home = dataset::criterion_home(manifest);
    let reference = dataset::reference_home(manifest);
    let rows = measured(&home, &reference, since);
    if rows.is_empty() {
        return;
    }
    println!();
    println!(
        "Summary: medians per operation in {}; \"÷ control\" divides by the group's raw-driver id in this run, \"reference\" is the committed figure (bench_results/…/reference/, measured on the reference machine: compare ratios, not times, across machines).",
        home.display()
    );
    println!(
        "{:<62} {:>11} {:>22} {:>11} {:>12}",
        "id", "median/op", "÷ control", "reference", "÷ reference"
    );
    for r in &rows {
        let control = CONTROLS.iter().find_map(|c| {
            rows.iter()
                .find(|x| x.group == r.group && x.param == r.param && x.function == *c)
                .map(|x| (*c, x.per_op_ns))
        });
        let vs_control = match control {
            Some((c, ns)) if ns > 0.0 => format!("{:.2}× {c}", r.per_op_ns / ns),
            _ => "—".to_owned(),
        };
        let (reference, vs_reference) = match r.reference_ns {
            Some(ns) if ns > 0.0 => (fmt_ns(ns), format!("{:.2}×", r.per_op_ns / ns)),
            _ => ("—".to_owned(), "—".to_owned()),
        };
        println!(
            "{:<62} {:>11} {:>22} {:>11} {:>12}",
            format!("{}/{}/{}", r.group, r.function, r.param),
            fmt_ns(r.per_op_ns),
            vs_control,
            reference,
            vs_reference
        );
    }
}
