//! Reading Criterion's output folders.
//!
//! Criterion 0.8 writes, under CRITERION_HOME,
//! `<group>/<function>/<param>/{new,base,<baseline>}/{benchmark,estimates,sample,tukey}.json`.
//! Only `benchmark.json` (the ids and the throughput) and `estimates.json` (the statistics and
//! their 95% intervals) are read. Every id of this repository declares `Throughput::Elements(N)`
//! with N operations per iteration, so time per operation = estimate / N.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Deserialize;

use crate::util::{Error, Result, read_to_string};

/// `benchmark.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct BenchmarkFile {
    /// The Criterion group.
    pub group_id: String,
    /// The function (our "id").
    pub function_id: Option<String>,
    /// The parameter (`N`, `C` or `R`), as text.
    pub value_str: Option<String>,
    /// `{"Elements": N}` for every id of this repository.
    pub throughput: Option<serde_json::Value>,
    /// `group/function/param`.
    pub full_id: String,
}

/// One confidence interval of `estimates.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct ConfidenceInterval {
    /// 0.95 unless configured otherwise.
    pub confidence_level: f64,
    /// Lower bound, ns per iteration.
    pub lower_bound: f64,
    /// Upper bound, ns per iteration.
    pub upper_bound: f64,
}

/// One statistic of `estimates.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct EstimateFile {
    /// Its confidence interval.
    pub confidence_interval: ConfidenceInterval,
    /// The point estimate, ns per iteration.
    pub point_estimate: f64,
}

/// `estimates.json` (the statistics this tool reads; the others are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct EstimatesFile {
    /// Mean of the per-iteration times.
    pub mean: EstimateFile,
    /// Median of the per-iteration times.
    pub median: EstimateFile,
}

/// A point estimate with its interval, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// The point estimate.
    pub point: f64,
    /// Lower bound of the confidence interval.
    pub lo: f64,
    /// Upper bound of the confidence interval.
    pub hi: f64,
}

impl Interval {
    /// Every field divided by `by`.
    pub fn per(self, by: f64) -> Interval {
        Interval {
            point: self.point / by,
            lo: self.lo / by,
            hi: self.hi / by,
        }
    }

    fn of(e: &EstimateFile) -> Interval {
        Interval {
            point: e.point_estimate,
            lo: e.confidence_interval.lower_bound,
            hi: e.confidence_interval.upper_bound,
        }
    }
}

/// One id's result in one Criterion folder (`new` or a baseline).
#[derive(Debug, Clone)]
pub struct Measurement {
    /// Criterion group.
    pub group: String,
    /// Function id.
    pub function: String,
    /// Parameter (`value_str`), empty when the id has none.
    pub param: String,
    /// Operations per iteration (`Throughput::Elements`).
    pub elements: u64,
    /// Median time per iteration with its interval, ns.
    pub median: Interval,
    /// Mean time per iteration with its interval, ns.
    pub mean: Interval,
    /// Confidence level of the intervals.
    pub confidence: f64,
    /// When `estimates.json` was written.
    pub modified: SystemTime,
    /// The folder the files were read from.
    pub dir: PathBuf,
}

impl Measurement {
    /// Median time per operation, ns, with its interval.
    pub fn per_op(&self) -> Interval {
        self.median.per(self.elements as f64)
    }

    /// `group/function/param`.
    pub fn key(&self) -> IdKey {
        IdKey {
            group: self.group.clone(),
            function: self.function.clone(),
            param: self.param.clone(),
        }
    }
}

/// `group/function/param`, ordered.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IdKey {
    /// Group.
    pub group: String,
    /// Function.
    pub function: String,
    /// Parameter ("" when none).
    pub param: String,
}

impl std::fmt::Display for IdKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.param.is_empty() {
            write!(f, "{}/{}", self.group, self.function)
        } else {
            write!(f, "{}/{}/{}", self.group, self.function, self.param)
        }
    }
}

fn parse_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T> {
    let text = read_to_string(path)?;
    serde_json::from_str(&text).map_err(|e| Error(format!("{}: invalid: {e}", path.display())))
}

/// Reads one Criterion result folder (`.../<id>/new`, `.../<id>/<baseline>`).
pub fn load_measurement(dir: &Path) -> Result<Measurement> {
    let bench_path = dir.join("benchmark.json");
    let est_path = dir.join("estimates.json");
    for p in [&bench_path, &est_path] {
        if !p.is_file() {
            return Err(Error(format!("missing {}", p.display())));
        }
    }
    let b: BenchmarkFile = parse_json(&bench_path)?;
    let e: EstimatesFile = parse_json(&est_path)?;
    let elements = match b.throughput.as_ref().and_then(|t| t.get("Elements")) {
        Some(v) => v.as_u64().filter(|n| *n > 0).ok_or_else(|| {
            Error(format!(
                "{}: throughput Elements is not a positive integer",
                bench_path.display()
            ))
        })?,
        None => {
            return Err(Error(format!(
                "{}: no `Throughput::Elements(N)` (every id must declare one; see docs/dev/Benchmarks.md)",
                bench_path.display()
            )));
        }
    };
    let function = b
        .function_id
        .clone()
        .ok_or_else(|| Error(format!("{}: no function_id", bench_path.display())))?;
    for (name, est) in [("median", &e.median), ("mean", &e.mean)] {
        if !(est.point_estimate.is_finite() && est.point_estimate > 0.0) {
            return Err(Error(format!(
                "{}: {name} point estimate is {} (not a positive time)",
                est_path.display(),
                est.point_estimate
            )));
        }
    }
    let modified = std::fs::metadata(&est_path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH);
    Ok(Measurement {
        group: b.group_id,
        function,
        param: b.value_str.unwrap_or_default(),
        elements,
        median: Interval::of(&e.median),
        mean: Interval::of(&e.mean),
        confidence: e.median.confidence_interval.confidence_level,
        modified,
        dir: dir.to_path_buf(),
    })
}

/// Everything found under one group folder for one result kind (`new` or a baseline name).
#[derive(Debug, Default)]
pub struct GroupScan {
    /// Function folder name → parameter folder name → the measurement or why it is unreadable.
    /// The parameter is "" for ids without one.
    pub functions: BTreeMap<String, BTreeMap<String, Result<Measurement>>>,
}

impl GroupScan {
    /// Whether any folder of this kind was found.
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    /// The readable measurements of `function`.
    pub fn ok(&self, function: &str) -> Vec<&Measurement> {
        self.functions
            .get(function)
            .map(|m| m.values().filter_map(|r| r.as_ref().ok()).collect())
            .unwrap_or_default()
    }

    /// The newest readable measurement of `function` (by the time its estimates were written).
    pub fn newest(&self, function: &str) -> Option<&Measurement> {
        self.ok(function).into_iter().max_by_key(|m| m.modified)
    }

    /// Every unreadable folder, as messages.
    pub fn errors(&self) -> Vec<String> {
        self.functions
            .values()
            .flat_map(|m| m.values())
            .filter_map(|r| r.as_ref().err().map(|e| e.0.clone()))
            .collect()
    }
}

fn subdirs(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    out.sort();
    out
}

/// The committed figures of each id: a Criterion baseline of this name (written by
/// `cargo xtask save-reference`, or by a suite run with `--save-baseline reference`). Criterion's
/// own `new`, `base` and `change` folders are rewritten by every run and are not committed.
pub const REFERENCE: &str = "reference";

/// Folder names Criterion uses for its own purposes (and the committed reference), never an id,
/// a parameter or a nightly baseline.
const RESERVED: &[&str] = &["new", "base", "change", "report", REFERENCE];

/// A result folder is one holding Criterion's JSON files.
fn is_result_dir(p: &Path) -> bool {
    p.join("estimates.json").is_file() || p.join("benchmark.json").is_file()
}

/// Scans `<home>/<group>` for result folders named `kind` (`new`, or a baseline name).
///
/// Layouts: `<function>/<param>/<kind>/` and, for ids without a parameter, `<function>/<kind>/`.
/// A folder `<kind>` that exists but lacks `benchmark.json` or `estimates.json` is recorded as
/// an error, so a partial run is never read as zeros.
pub fn scan_group(home: &Path, group: &str, kind: &str) -> GroupScan {
    let mut scan = GroupScan::default();
    for (fname, fdir) in subdirs(&home.join(group)) {
        if RESERVED.contains(&fname.as_str()) {
            continue;
        }
        let mut params = BTreeMap::new();
        let direct = fdir.join(kind);
        if direct.is_dir() && is_result_dir(&direct) {
            params.insert(String::new(), load_measurement(&direct));
        }
        for (pname, pdir) in subdirs(&fdir) {
            if RESERVED.contains(&pname.as_str()) || pname == kind || is_result_dir(&pdir) {
                continue;
            }
            let d = pdir.join(kind);
            if d.is_dir() {
                params.insert(pname, load_measurement(&d));
            }
        }
        if !params.is_empty() {
            scan.functions.insert(fname, params);
        }
    }
    scan
}

/// Scans `<home>/<group>` for the latest run (`new`), or, when no run of the group is there (a
/// fresh clone), for the committed reference figures.
pub fn scan_group_latest(home: &Path, group: &str) -> GroupScan {
    let scan = scan_group(home, group, "new");
    if scan.is_empty() {
        scan_group(home, group, REFERENCE)
    } else {
        scan
    }
}

/// Copies every id's latest run (`new/`) under `home` to its `reference/` folder, the committed
/// figures; returns how many ids it copied.
pub fn save_reference(home: &Path) -> crate::util::Result<usize> {
    const FILES: &[&str] = &["benchmark.json", "estimates.json", "tukey.json"];
    let mut copied = 0;
    let mut copy = |new: &Path| -> crate::util::Result<()> {
        let to = new.with_file_name(REFERENCE);
        std::fs::create_dir_all(&to)
            .map_err(|e| crate::util::Error(format!("create {}: {e}", to.display())))?;
        for f in FILES {
            let from = new.join(f);
            if from.is_file() {
                std::fs::copy(&from, to.join(f))
                    .map_err(|e| crate::util::Error(format!("copy {}: {e}", from.display())))?;
            }
        }
        copied += 1;
        Ok(())
    };
    for (_, gdir) in subdirs(home) {
        for (fname, fdir) in subdirs(&gdir) {
            if RESERVED.contains(&fname.as_str()) {
                continue;
            }
            let direct = fdir.join("new");
            if is_result_dir(&direct) {
                copy(&direct)?;
            }
            for (pname, pdir) in subdirs(&fdir) {
                let new = pdir.join("new");
                if !RESERVED.contains(&pname.as_str()) && is_result_dir(&new) {
                    copy(&new)?;
                }
            }
        }
    }
    Ok(copied)
}

/// Every baseline name found under `home`, with the newest time any of its files was written.
/// (`new`, `base` and `change` are not baselines in this sense.)
pub fn baselines(home: &Path) -> BTreeMap<String, SystemTime> {
    let mut out: BTreeMap<String, SystemTime> = BTreeMap::new();
    let mut note = |name: &str, dir: &Path| {
        let t = std::fs::metadata(dir.join("estimates.json"))
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let e = out.entry(name.to_string()).or_insert(t);
        if t > *e {
            *e = t;
        }
    };
    for (_, gdir) in subdirs(home) {
        for (_, fdir) in subdirs(&gdir) {
            for (name, d) in subdirs(&fdir) {
                if is_result_dir(&d) {
                    if !RESERVED.contains(&name.as_str()) {
                        note(&name, &d);
                    }
                } else {
                    for (name, d2) in subdirs(&d) {
                        if !RESERVED.contains(&name.as_str()) && is_result_dir(&d2) {
                            note(&name, &d2);
                        }
                    }
                }
            }
        }
    }
    out
}

/// Every readable measurement of one baseline (or `new`) under `home`, keyed by id, with the
/// unreadable folders as messages.
pub fn load_all(home: &Path, kind: &str) -> (BTreeMap<IdKey, Measurement>, Vec<String>) {
    let mut out = BTreeMap::new();
    let mut errors = Vec::new();
    for (gname, _) in subdirs(home) {
        let scan = scan_group(home, &gname, kind);
        errors.extend(scan.errors());
        for params in scan.functions.into_values() {
            for m in params.into_values().flatten() {
                out.insert(m.key(), m);
            }
        }
    }
    (out, errors)
}
