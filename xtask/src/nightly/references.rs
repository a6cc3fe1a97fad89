//! The nightly baselines on disk: how each was made (`nightly-runs.json`), which may serve as
//! the reference, and the removal of the confirmation reruns' scratch baselines.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::criterion::baselines;
use crate::environment::Machine;
use crate::util::{self, Error, Result};

/// Prefix of every nightly baseline name.
pub const PREFIX: &str = "nightly-";

/// `<CRITERION_HOME>/nightly-runs.json`: how each nightly baseline was made.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunsFile {
    /// Baseline name → how it was made.
    pub runs: BTreeMap<String, RunRecord>,
}

/// How one nightly baseline was made.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// Extra cargo features and `cfg:` build flags (non-empty: an experiment, never a reference).
    pub features: Vec<String>,
    /// Criterion arguments.
    pub criterion_args: Vec<String>,
    /// Suites run.
    pub suites: Vec<String>,
    /// When (Unix seconds).
    pub unix: i64,
    /// The machine it was measured on (absent in records written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<Machine>,
}

/// Reads `<home>/nightly-runs.json` (empty when there is none).
pub fn load_runs(home: &Path) -> Result<RunsFile> {
    Ok(util::read_optional_json(&home.join("nightly-runs.json"))?.unwrap_or_default())
}

/// The machine the baseline `name` was measured on, when its run record states one.
pub fn machine_of(runs: &RunsFile, name: &str) -> Option<Machine> {
    runs.runs.get(name).and_then(|r| r.machine.clone())
}

/// Records how the baseline `name` was made.
pub fn record_run(home: &Path, name: &str, record: RunRecord) -> Result<()> {
    let path = home.join("nightly-runs.json");
    let mut f: RunsFile = util::read_optional_json(&path)?.unwrap_or_default();
    f.runs.insert(name.to_string(), record);
    let text = serde_json::to_string_pretty(&f)
        .map_err(|e| Error(format!("cannot serialise {}: {e}", path.display())))?;
    util::write(&path, &(text + "\n"))
}

/// The nightly baselines that may serve as references, newest first: every `nightly-*`
/// baseline on disk except `current` and except those made with extra cargo features
/// (experiments such as `--slowdown`).
pub fn reference_candidates(home: &Path, current: &str) -> Result<Vec<String>> {
    let runs = load_runs(home)?;
    let mut v: Vec<(String, std::time::SystemTime)> = baselines(home)
        .into_iter()
        .filter(|(n, _)| n.starts_with(PREFIX) && n != current)
        .filter(|(n, _)| runs.runs.get(n).is_none_or(|r| r.features.is_empty()))
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
    Ok(v.into_iter().map(|(n, _)| n).collect())
}

/// The previous nightly baseline on disk: the newest reference candidate.
pub fn previous_baseline(home: &Path, current: &str) -> Result<Option<String>> {
    Ok(reference_candidates(home, current)?.into_iter().next())
}

/// Deletes every folder of the baseline `name` under `home` (the confirmation reruns' scratch
/// baselines). Returns how many were removed.
pub fn remove_baseline(home: &Path, name: &str) -> usize {
    let mut n = 0;
    let mut stack = vec![home.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if e.file_name() == name {
                if std::fs::remove_dir_all(e.path()).is_ok() {
                    n += 1;
                }
            } else {
                stack.push(e.path());
            }
        }
    }
    n
}
