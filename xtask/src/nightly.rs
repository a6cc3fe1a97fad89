//! `cargo xtask nightly`: compare tonight's Criterion baseline with the previous one and give
//! every id a verdict.
//!
//! # The verdict rule
//!
//! For one id, with medians per operation `before` and `after` and their 95% intervals
//! `[b_lo, b_hi]` and `[a_lo, a_hi]` (Criterion's `estimates.json`):
//!
//! - change = after / before − 1;
//! - the change's interval is the widest one the two intervals allow:
//!   `[a_lo / b_hi − 1, a_hi / b_lo − 1]`;
//! - **regressed** when change > +threshold **and** the interval lies wholly above 0 (the two
//!   intervals do not overlap);
//! - **improved** when change < −threshold **and** the interval lies wholly below 0;
//! - **noise** otherwise;
//! - when earlier nightly baselines exist (the last 5 reference runs, `--history`), a verdict
//!   also needs tonight's median to be beyond the threshold from their median, in the same
//!   direction;
//! - a flagged id is measured again in fresh processes (`--confirm`, 2 by default) and keeps
//!   its verdict only if every rerun changes the same way beyond the threshold, against the
//!   reference and the history median (the intervals are not asked again).
//!
//! The intervals alone are not enough on this machine: each is computed inside one process,
//! while a whole process can run 10–15% faster or slower than the next one (frequency, the
//! other processes' load, where the scheduler puts the threads), and ids that park and wake threads
//! can even switch between a fast and a slow regime (2–5×) from one process to the next. The
//! threshold covers the drift; the interval test keeps a noisy id with a large point change
//! from being called; and a **confirmation rerun** handles the regime switches: every id
//! flagged by the first comparison is measured again in a fresh process and keeps its verdict
//! only if the rerun, compared with the same previous baseline, reaches the same verdict.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use crate::criterion::baselines;
use crate::criterion::{IdKey, Interval, Measurement, load_all};
use crate::util::{Error, Result, fmt_ns, fmt_pct};

/// Default threshold, as a fraction (see docs/BenchTooling.md for how it was chosen).
pub const DEFAULT_THRESHOLD: f64 = 0.10;

/// Prefix of every nightly baseline name.
pub const PREFIX: &str = "nightly-";

/// The verdict on one id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Slower beyond the threshold and the intervals.
    Regressed,
    /// Faster beyond the threshold and the intervals.
    Improved,
    /// Within the threshold, or the intervals overlap.
    Noise,
    /// Measured tonight, not in the previous baseline.
    New,
    /// In the previous baseline, not measured tonight.
    NotRun,
}

impl Verdict {
    /// The word in the table.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Regressed => "**regressed**",
            Verdict::Improved => "improved",
            Verdict::Noise => "noise",
            Verdict::New => "new",
            Verdict::NotRun => "not run tonight",
        }
    }
}

/// The change between two measurements of one id.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    /// after / before − 1.
    pub change: f64,
    /// Lower bound of the change's interval.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
    /// after / (median of the recent nightly baselines) − 1, when there is a history.
    pub vs_history: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

/// Applies the verdict rule to two medians per operation with their intervals, and, when there
/// is one, the median of the recent nightly baselines (`history`, ns per operation): a verdict
/// also needs tonight's median to differ from that history by more than the threshold, in the
/// same direction, so one unusually fast or slow previous night cannot cause it.
pub fn judge(before: Interval, after: Interval, threshold: f64, history: Option<f64>) -> Change {
    let change = after.point / before.point - 1.0;
    let lo = after.lo / before.hi - 1.0;
    let hi = after.hi / before.lo - 1.0;
    let vs_history = history.filter(|h| *h > 0.0).map(|h| after.point / h - 1.0);
    let verdict = if change > threshold && lo > 0.0 && vs_history.is_none_or(|v| v > threshold) {
        Verdict::Regressed
    } else if change < -threshold && hi < 0.0 && vs_history.is_none_or(|v| v < -threshold) {
        Verdict::Improved
    } else {
        Verdict::Noise
    };
    Change {
        change,
        lo,
        hi,
        vs_history,
        verdict,
    }
}

/// Per id, the medians per operation of the recent nightly baselines, with their N.
pub type History = BTreeMap<IdKey, Vec<(u64, f64)>>;

/// Loads the history: every id's median per operation in each of `names`.
pub fn load_history(home: &Path, names: &[String]) -> History {
    let mut h = History::new();
    for n in names {
        let (ms, _) = load_all(home, n);
        for (k, m) in ms {
            h.entry(k).or_default().push((m.elements, m.per_op().point));
        }
    }
    h
}

/// The median of the history of `key` with `elements` operations per iteration.
pub fn history_median(h: &History, key: &IdKey, elements: u64) -> Option<f64> {
    let mut v: Vec<f64> = h
        .get(key)?
        .iter()
        .filter(|(n, _)| *n == elements)
        .map(|(_, p)| *p)
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

/// One row of the nightly table.
#[derive(Debug, Clone)]
pub struct Row {
    /// The id.
    pub key: IdKey,
    /// Operations per iteration (tonight's, else the baseline's).
    pub elements: u64,
    /// Before, per operation.
    pub before: Option<Interval>,
    /// After, per operation.
    pub after: Option<Interval>,
    /// The change and its verdict.
    pub change: Option<Change>,
    /// The verdict (also for rows without a change).
    pub verdict: Verdict,
    /// The changes measured by the confirmation reruns of a flagged id, in order.
    pub reruns: Vec<Change>,
    /// The verdict of the first comparison.
    pub first: Verdict,
}

/// Compares two sets of measurements id by id.
pub fn compare(
    before: &BTreeMap<IdKey, Measurement>,
    after: &BTreeMap<IdKey, Measurement>,
    threshold: f64,
    history: &History,
) -> Vec<Row> {
    let keys: BTreeSet<&IdKey> = before.keys().chain(after.keys()).collect();
    keys.into_iter()
        .map(|k| {
            let (b, a) = (before.get(k), after.get(k));
            let change = match (b, a) {
                (Some(b), Some(a)) if b.elements == a.elements => Some(judge(
                    b.per_op(),
                    a.per_op(),
                    threshold,
                    history_median(history, k, a.elements),
                )),
                _ => None,
            };
            let verdict = match (b, a, change) {
                (_, _, Some(c)) => c.verdict,
                (_, Some(_), None) => Verdict::New,
                _ => Verdict::NotRun,
            };
            Row {
                key: k.clone(),
                elements: a.or(b).map_or(0, |m| m.elements),
                before: b.map(Measurement::per_op),
                after: a.map(Measurement::per_op),
                change,
                verdict,
                reruns: Vec::new(),
                first: verdict,
            }
        })
        .collect()
}

/// The ids a confirmation rerun must measure again: those called regressed or improved.
pub fn flagged(rows: &[Row]) -> Vec<&IdKey> {
    rows.iter()
        .filter(|r| matches!(r.verdict, Verdict::Regressed | Verdict::Improved))
        .map(|r| &r.key)
        .collect()
}

/// Whether a rerun's change points the same way as `verdict`, beyond the threshold, against
/// both the reference and (when there is one) the history median. The intervals are not asked
/// again: the first measurement passed that test, and a rerun only has to show the change again.
pub fn rerun_agrees(c: &Change, verdict: Verdict, threshold: f64) -> bool {
    match verdict {
        Verdict::Regressed => c.change > threshold && c.vs_history.is_none_or(|v| v > threshold),
        Verdict::Improved => c.change < -threshold && c.vs_history.is_none_or(|v| v < -threshold),
        _ => false,
    }
}

/// Applies one confirmation rerun: a flagged id keeps its verdict only when the rerun, compared
/// with the same reference and history, changes the same way beyond the threshold
/// ([`rerun_agrees`]); otherwise it becomes noise. An id the rerun did not measure keeps its
/// verdict (a failed rerun never hides a regression).
pub fn apply_rerun(rows: &mut [Row], rerun: &[Row], threshold: f64) {
    for r in rows.iter_mut() {
        if !matches!(r.verdict, Verdict::Regressed | Verdict::Improved) {
            continue;
        }
        let Some(c) = rerun.iter().find(|x| x.key == r.key).and_then(|x| x.change) else {
            continue;
        };
        r.reruns.push(c);
        if !rerun_agrees(&c, r.verdict, threshold) {
            r.verdict = Verdict::Noise;
        }
    }
}

/// Counts of each verdict.
pub fn counts(rows: &[Row]) -> BTreeMap<Verdict, usize> {
    let mut m = BTreeMap::new();
    for r in rows {
        *m.entry(r.verdict).or_insert(0) += 1;
    }
    m
}

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
}

/// Records how the baseline `name` was made.
pub fn record_run(home: &Path, name: &str, record: RunRecord) -> Result<()> {
    let path = home.join("nightly-runs.json");
    let mut f: RunsFile = crate::report::read_optional_json(&path)?.unwrap_or_default();
    f.runs.insert(name.to_string(), record);
    let text = serde_json::to_string_pretty(&f)
        .map_err(|e| Error(format!("cannot serialise {}: {e}", path.display())))?;
    crate::util::write(&path, &(text + "\n"))
}

/// The nightly baselines that may serve as references, newest first: every `nightly-*`
/// baseline on disk except `current` and except those made with extra cargo features
/// (experiments such as `--slowdown`).
pub fn reference_candidates(home: &Path, current: &str) -> Result<Vec<String>> {
    let runs: RunsFile =
        crate::report::read_optional_json(&home.join("nightly-runs.json"))?.unwrap_or_default();
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

/// What the page says about how the run was made.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// Tonight's baseline name.
    pub current: String,
    /// The baseline compared against (None: nothing to compare).
    pub previous: Option<String>,
    /// The threshold, as a fraction.
    pub threshold: f64,
    /// Suites run.
    pub suites: Vec<String>,
    /// Criterion arguments.
    pub criterion_args: Vec<String>,
    /// Extra cargo features and `cfg:` build flags.
    pub features: Vec<String>,
    /// Suites that failed to build or run.
    pub failures: Vec<String>,
    /// The environment line.
    pub environment: String,
    /// `/proc/loadavg` before and after the run (other work on the machine adds noise).
    pub load: Vec<String>,
    /// Confirmation reruns allowed for a flagged id.
    pub confirm_runs: usize,
    /// Ids flagged by the first comparison, before the reruns.
    pub first_flags: Vec<(IdKey, Verdict)>,
    /// The nightly baselines whose median forms the history.
    pub history: Vec<String>,
}

/// Loads `before` and `after` baselines from `home` and compares them. Fails when `after` holds
/// no result at all, or when a folder of either is unreadable.
pub fn compare_baselines(
    home: &Path,
    before: &str,
    after: &str,
    threshold: f64,
    history: &History,
) -> Result<Vec<Row>> {
    let (b, be) = load_all(home, before);
    let (a, ae) = load_all(home, after);
    let errors: Vec<String> = be.into_iter().chain(ae).collect();
    if !errors.is_empty() {
        return Err(Error(format!(
            "unreadable baseline folders:\n  - {}",
            errors.join("\n  - ")
        )));
    }
    if a.is_empty() {
        return Err(Error(format!(
            "no result saved as baseline `{after}` under {}",
            home.display()
        )));
    }
    if b.is_empty() {
        return Err(Error(format!(
            "no result saved as baseline `{before}` under {}",
            home.display()
        )));
    }
    Ok(compare(&b, &a, threshold, history))
}

/// Renders the nightly page.
pub fn render(info: &RunInfo, rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Nightly benchmark comparison: `{}`\n", info.current);
    s.push_str("Generated by `cargo xtask nightly`; the verdict rule is in [docs/BenchTooling.md](../../docs/BenchTooling.md#the-verdict-rule).\n\n");
    let _ = writeln!(s, "{}\n", info.environment);
    let _ = writeln!(
        s,
        "- Suites: {}\n- Criterion arguments: `{}`\n- Build variant (extra features, `cfg:` flags): {}\n- Threshold: ±{:.0}% on the median per operation, and the two 95% intervals must not overlap",
        if info.suites.is_empty() {
            "—".into()
        } else {
            info.suites.join(", ")
        },
        info.criterion_args.join(" "),
        if info.features.is_empty() {
            "none".into()
        } else {
            format!("`{}`", info.features.join(","))
        },
        info.threshold * 100.0
    );
    let _ = writeln!(
        s,
        "- Confirmation: {}",
        if info.confirm_runs == 0 {
            "none (`--confirm 0`)".to_string()
        } else {
            format!(
                "every id flagged by the first comparison is measured again in a fresh process, {} time(s), and keeps its verdict only if every rerun changes the same way beyond the threshold (against the reference and the history median)",
                info.confirm_runs
            )
        }
    );
    if !info.load.is_empty() {
        let _ = writeln!(
            s,
            "- Load average (1, 5, 15 min): {}",
            info.load.join(" → ")
        );
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let busy = info.load.first().and_then(|l| {
        l.split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
    });
    if let Some(load) = busy.filter(|l| *l > cpus) {
        let _ = writeln!(
            s,
            "\n> ⚠ **The machine was busy before the run started** (1-minute load {load:.2} on {cpus:.0} CPUs): other work competed with the benchmarks, and whole suites can shift by far more than the threshold. Treat the verdicts below with suspicion and rerun on a quiet machine.\n"
        );
    }
    if !info.history.is_empty() {
        let _ = writeln!(
            s,
            "- History (a verdict must also hold against the median of these): {}",
            info.history
                .iter()
                .map(|h| format!("`{h}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    match &info.previous {
        Some(p) => {
            let _ = writeln!(s, "- Compared against: `{p}`\n");
        }
        None => {
            s.push_str("- Compared against: nothing (no earlier nightly baseline on disk); this run is the first baseline.\n\n");
        }
    }
    for f in &info.failures {
        let _ = writeln!(s, "> ⚠ **{f}**");
    }
    if !info.failures.is_empty() {
        s.push('\n');
    }
    if info.previous.is_none() {
        return s;
    }
    let c = counts(rows);
    let n = |v: Verdict| c.get(&v).copied().unwrap_or(0);
    let _ = writeln!(
        s,
        "**Summary:** {} regressed, {} improved, {} noise, {} new, {} not run tonight ({} ids).\n",
        n(Verdict::Regressed),
        n(Verdict::Improved),
        n(Verdict::Noise),
        n(Verdict::New),
        n(Verdict::NotRun),
        rows.len()
    );
    if !info.first_flags.is_empty() {
        let kept = info
            .first_flags
            .iter()
            .filter(|(k, v)| rows.iter().any(|r| &r.key == k && r.verdict == *v))
            .count();
        let _ = writeln!(
            s,
            "The first comparison flagged {} id(s); {} kept their verdict after the confirmation rerun(s), {} did not reproduce and are counted as noise.\n",
            info.first_flags.len(),
            kept,
            info.first_flags.len() - kept
        );
    }
    let regressed: Vec<&Row> = rows
        .iter()
        .filter(|r| r.verdict == Verdict::Regressed)
        .collect();
    if !regressed.is_empty() {
        s.push_str("Regressed:\n");
        for r in regressed {
            let _ = writeln!(
                s,
                "- `{}`: {}",
                r.key,
                r.change.map_or("—".into(), |c| fmt_pct(c.change))
            );
        }
        s.push('\n');
    }
    s.push_str("| id | ops / iter | before (median / op) | after (median / op) | change | change interval | vs history median | rerun change | verdict |\n|---|---:|---:|---:|---:|---|---:|---|---|\n");
    for r in rows {
        let reruns = if r.reruns.is_empty() {
            "—".to_string()
        } else {
            r.reruns
                .iter()
                .map(|c| {
                    let agrees = rerun_agrees(c, r.first, info.threshold);
                    format!(
                        "{} ({})",
                        fmt_pct(c.change),
                        if agrees { "agrees" } else { "does not agree" }
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} | {} | {reruns} | {} |",
            r.key,
            r.elements,
            r.before.map_or("—".into(), |i| fmt_ns(i.point)),
            r.after.map_or("—".into(), |i| fmt_ns(i.point)),
            r.change.map_or("—".into(), |c| fmt_pct(c.change)),
            r.change.map_or("—".into(), |c| format!(
                "{} … {}",
                fmt_pct(c.lo),
                fmt_pct(c.hi)
            )),
            r.change
                .and_then(|c| c.vs_history)
                .map_or("—".into(), fmt_pct),
            r.verdict.word()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(point: f64, half: f64) -> Interval {
        Interval {
            point,
            lo: point - half,
            hi: point + half,
        }
    }

    #[test]
    fn rule() {
        // +20% with tight intervals: regressed.
        assert_eq!(
            judge(iv(100.0, 2.0), iv(120.0, 2.0), 0.15, None).verdict,
            Verdict::Regressed
        );
        // +20% but the intervals overlap: noise.
        assert_eq!(
            judge(iv(100.0, 15.0), iv(120.0, 10.0), 0.15, None).verdict,
            Verdict::Noise
        );
        // +10% with tight intervals, under the threshold: noise.
        assert_eq!(
            judge(iv(100.0, 1.0), iv(110.0, 1.0), 0.15, None).verdict,
            Verdict::Noise
        );
        // −30%: improved.
        assert_eq!(
            judge(iv(100.0, 2.0), iv(70.0, 2.0), 0.15, None).verdict,
            Verdict::Improved
        );
        // +20% against a fast previous night, but level with the recent history: noise.
        let c = judge(iv(100.0, 2.0), iv(120.0, 2.0), 0.15, Some(118.0));
        assert_eq!(c.verdict, Verdict::Noise);
        assert!((c.vs_history.unwrap() - (120.0 / 118.0 - 1.0)).abs() < 1e-12);
        // … and beyond the history too: regressed.
        assert_eq!(
            judge(iv(100.0, 2.0), iv(120.0, 2.0), 0.15, Some(101.0)).verdict,
            Verdict::Regressed
        );
    }

    #[test]
    fn history_median_matches_n() {
        let k = IdKey {
            group: "g".into(),
            function: "f".into(),
            param: "1".into(),
        };
        let mut h = History::new();
        h.insert(
            k.clone(),
            vec![
                (1000, 3.0),
                (1000, 1.0),
                (200, 50.0),
                (1000, 2.0),
                (1000, 10.0),
            ],
        );
        assert_eq!(history_median(&h, &k, 1000), Some(2.5));
        assert_eq!(history_median(&h, &k, 200), Some(50.0));
        assert_eq!(history_median(&h, &k, 7), None);
    }
}
