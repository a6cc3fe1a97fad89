//! The history: each id's medians per operation in the recent nightly baselines (and, for an
//! id with an in-run control, its ratios to that control), and their median, which a verdict
//! must also clear. Also the in-run control of an id.

use std::collections::BTreeMap;
use std::path::Path;

use crate::catalog;
use crate::criterion::{IdKey, load_all};

/// Per id, values of the recent nightly baselines with their N (operations per iteration).
pub type Series = BTreeMap<IdKey, Vec<(u64, f64)>>;

/// The recent nightly baselines, id by id.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Medians per operation.
    pub absolute: Series,
    /// Ratios of the median per operation to the control's in the same baseline.
    pub ratio: Series,
}

impl History {
    /// No history.
    pub fn new() -> History {
        History::default()
    }
}

/// The in-run control of `key` ([`catalog::control_of`]), with the same parameter.
pub fn control_key(key: &IdKey) -> Option<IdKey> {
    let (group, function) = catalog::control_of(&key.group, &key.function)?;
    Some(IdKey {
        group: group.into(),
        function: function.into(),
        param: key.param.clone(),
    })
}

/// Loads the history: every id's median per operation in each of `names`, and its ratio to its
/// control where that baseline holds the control too.
pub fn load_history(home: &Path, names: &[String]) -> History {
    let mut h = History::new();
    for n in names {
        let (ms, _) = load_all(home, n);
        for (k, m) in &ms {
            let p = m.per_op().point;
            h.absolute
                .entry(k.clone())
                .or_default()
                .push((m.elements, p));
            if let Some(c) = control_key(k).and_then(|c| ms.get(&c)) {
                h.ratio
                    .entry(k.clone())
                    .or_default()
                    .push((m.elements, p / c.per_op().point));
            }
        }
    }
    h
}

/// The median of the values of `key` with `elements` operations per iteration.
pub fn history_median(h: &Series, key: &IdKey, elements: u64) -> Option<f64> {
    let mut v: Vec<f64> = h
        .get(key)?
        .iter()
        .filter(|(n, p)| *n == elements && p.is_finite())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_median_matches_n() {
        let k = IdKey {
            group: "g".into(),
            function: "f".into(),
            param: "1".into(),
        };
        let mut h = Series::new();
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
