//! The history: each id's medians per operation in the recent nightly baselines, and their
//! median, which a verdict must also clear.

use std::collections::BTreeMap;
use std::path::Path;

use crate::criterion::{IdKey, load_all};

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
