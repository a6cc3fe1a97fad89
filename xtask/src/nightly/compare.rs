//! Comparing two baselines id by id: the rows of the nightly table, the ids flagged for a
//! confirmation rerun, and how a rerun's rows confirm or drop a verdict.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::history::{History, history_median};
use super::verdict::{Change, Verdict, judge, rerun_agrees};
use crate::criterion::{IdKey, Interval, Measurement, load_all};
use crate::util::{Error, Result};

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

/// The ids a confirmation rerun must measure again: those called regressed or improved.
pub fn flagged(rows: &[Row]) -> Vec<&IdKey> {
    rows.iter()
        .filter(|r| matches!(r.verdict, Verdict::Regressed | Verdict::Improved))
        .map(|r| &r.key)
        .collect()
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
