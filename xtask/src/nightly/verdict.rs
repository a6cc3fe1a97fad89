//! The verdict rule on one id (see the module documentation of `nightly`): the change between
//! two medians per operation, its interval, the history test, and whether a confirmation rerun
//! agrees.

use crate::criterion::Interval;

/// Default threshold, as a fraction (see docs/dev/BenchTooling.md for how it was chosen).
pub const DEFAULT_THRESHOLD: f64 = 0.10;

/// The verdict on one id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Slower beyond the threshold and the intervals.
    Regressed,
    /// Faster beyond the threshold and the intervals.
    Improved,
    /// Within the threshold, or the intervals overlap.
    Noise,
    /// Moved beyond the threshold with the machine, not with the crate: a raw-driver control
    /// (the floor the crate is judged against), or an id without a control while the
    /// environment changed. Never a regression.
    Environment,
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
            Verdict::Environment => "environment change",
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

/// The ratio of an id to its control in one run, with the widest interval the two intervals
/// allow: `[id_lo / control_hi, id_hi / control_lo]`.
pub fn ratio(id: Interval, control: Interval) -> Interval {
    Interval {
        point: id.point / control.point,
        lo: id.lo / control.hi,
        hi: id.hi / control.lo,
    }
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
    fn ratio_rule() {
        let by_ratio = |id: (f64, f64), ctl: (f64, f64)| {
            judge(
                ratio(iv(id.0, 1.0), iv(ctl.0, 1.0)),
                ratio(iv(id.1, 1.0), iv(ctl.1, 1.0)),
                0.10,
                None,
            )
        };
        // Id and control both twice as slow (another machine): the ratio holds, noise.
        let c = by_ratio((250.0, 500.0), (200.0, 400.0));
        assert_eq!(c.verdict, Verdict::Noise);
        assert!(c.change.abs() < 1e-12);
        // Control steady, id +30%: regressed by the ratio.
        let c = by_ratio((250.0, 325.0), (200.0, 200.0));
        assert_eq!(c.verdict, Verdict::Regressed);
        assert!((c.change - 0.30).abs() < 1e-12);
        // Both +25%: noise, although the id alone moved beyond the threshold.
        assert_eq!(
            by_ratio((250.0, 312.5), (200.0, 250.0)).verdict,
            Verdict::Noise
        );
        assert_eq!(
            judge(iv(250.0, 1.0), iv(312.5, 1.0), 0.10, None).verdict,
            Verdict::Regressed
        );
        // The control +25%, the id steady: improved by the ratio.
        assert_eq!(
            by_ratio((250.0, 250.0), (200.0, 250.0)).verdict,
            Verdict::Improved
        );
        // The ratio's interval: the widest the two allow.
        let r = ratio(iv(300.0, 30.0), iv(200.0, 20.0));
        assert!((r.point - 1.5).abs() < 1e-12);
        assert!((r.lo - 270.0 / 220.0).abs() < 1e-12 && (r.hi - 330.0 / 180.0).abs() < 1e-12);
    }
}
