//! Comparing two baselines id by id: the rows of the nightly table, the ids flagged for a
//! confirmation rerun, and how a rerun's rows confirm or drop a verdict.
//!
//! An id with an in-run control ([`control_key`]) measured in both baselines is judged by its
//! ratio to that control; a raw-driver control itself is judged by the absolute rule, and a move
//! beyond the threshold is an environment change; any other id keeps the absolute rule.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::history::{History, control_key, history_median};
use super::verdict::{Change, Verdict, judge, ratio, rerun_agrees};
use crate::catalog;
use crate::criterion::{IdKey, Interval, Measurement, load_all};
use crate::util::{Error, Result};

/// What a row's verdict is judged on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Basis {
    /// The id is a raw-driver control: its absolute change measures the environment.
    Control,
    /// The id's ratio to this control, measured in the same run.
    Ratio(IdKey),
    /// The absolute change (no control, or the control is missing from a baseline).
    Absolute,
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
    /// What the verdict is judged on.
    pub basis: Basis,
    /// The absolute change of the median per operation.
    pub absolute: Option<Change>,
    /// The ratio to the control before and after (for [`Basis::Ratio`]).
    pub ratios: Option<(Interval, Interval)>,
    /// The judged change and its verdict: of the ratio for [`Basis::Ratio`], else absolute.
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
            let same_n = |b: &Measurement, a: &Measurement| b.elements == a.elements;
            let absolute = match (b, a) {
                (Some(b), Some(a)) if same_n(b, a) => Some(judge(
                    b.per_op(),
                    a.per_op(),
                    threshold,
                    history_median(&history.absolute, k, a.elements),
                )),
                _ => None,
            };
            let control = control_key(k).and_then(|c| {
                let (cb, ca) = (before.get(&c)?, after.get(&c)?);
                same_n(cb, ca).then_some((c, cb, ca))
            });
            let (basis, ratios, change) = match (b, a, control) {
                _ if catalog::is_control(&k.group, &k.function) => (Basis::Control, None, absolute),
                (Some(b), Some(a), Some((c, cb, ca))) if same_n(b, a) => {
                    let (rb, ra) = (
                        ratio(b.per_op(), cb.per_op()),
                        ratio(a.per_op(), ca.per_op()),
                    );
                    let h = history_median(&history.ratio, k, a.elements);
                    (
                        Basis::Ratio(c),
                        Some((rb, ra)),
                        Some(judge(rb, ra, threshold, h)),
                    )
                }
                _ => (Basis::Absolute, None, absolute),
            };
            let verdict = match (b, a, change) {
                (_, _, Some(c))
                    if basis == Basis::Control
                        && matches!(c.verdict, Verdict::Regressed | Verdict::Improved) =>
                {
                    Verdict::Environment
                }
                (_, _, Some(c)) => c.verdict,
                (_, Some(_), None) => Verdict::New,
                _ => Verdict::NotRun,
            };
            Row {
                key: k.clone(),
                elements: a.or(b).map_or(0, |m| m.elements),
                before: b.map(Measurement::per_op),
                after: a.map(Measurement::per_op),
                basis,
                absolute,
                ratios,
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

/// The ids a confirmation rerun must measure again: those called regressed or improved, each
/// followed by its control when it is judged by its ratio (the rerun measures both in the same
/// fresh process, so the ratio can be judged again). No id is listed twice.
pub fn flagged(rows: &[Row]) -> Vec<&IdKey> {
    let mut out: Vec<&IdKey> = Vec::new();
    for r in rows
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Regressed | Verdict::Improved))
    {
        let control = match &r.basis {
            Basis::Ratio(c) => Some(c),
            _ => None,
        };
        for k in std::iter::once(&r.key).chain(control) {
            if !out.contains(&k) {
                out.push(k);
            }
        }
    }
    out
}

/// Applies one confirmation rerun: a flagged id keeps its verdict only when the rerun, compared
/// with the same reference and history, changes the same way beyond the threshold
/// ([`rerun_agrees`]); otherwise it becomes noise. An id the rerun did not measure keeps its
/// verdict (a failed rerun never hides a regression), and so does an id judged by its ratio
/// whose control the rerun did not measure.
pub fn apply_rerun(rows: &mut [Row], rerun: &[Row], threshold: f64) {
    for r in rows.iter_mut() {
        if !matches!(r.verdict, Verdict::Regressed | Verdict::Improved) {
            continue;
        }
        let Some(c) = rerun
            .iter()
            .find(|x| x.key == r.key && x.basis == r.basis)
            .and_then(|x| x.change)
        else {
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
