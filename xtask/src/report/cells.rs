//! The cells every table of the report shares: ratios of medians per operation, Criterion ids
//! and 95% intervals as text.

use crate::criterion::{Interval, Measurement};
use crate::util::fmt_ns;

/// The ratio of two medians per operation, when both exist.
pub fn ratio(num: Option<&Measurement>, den: Option<&Measurement>) -> Option<f64> {
    let (n, d) = (num?.per_op().point, den?.per_op().point);
    (d > 0.0).then(|| n / d)
}

/// A 95% interval as text: `lo – hi`.
pub fn interval_text(i: Interval) -> String {
    format!("{} – {}", fmt_ns(i.lo), fmt_ns(i.hi))
}

/// A measurement's full Criterion id, as code.
pub fn id_text(m: &Measurement) -> String {
    format!("`{}`", m.key())
}
