//! The "Performance targets" section of `index.md`: each target of [`crate::targets`] with its
//! figure, its bound and its verdict (met, missed by how much, or not measured).

use std::fmt::Write as _;

use crate::results::Results;
use crate::side_files::{AllocFile, CallgrindFile};
use crate::targets::{Outcome, Source, TARGETS, Target, evaluate};
use crate::util::fmt_ratio;

fn figure_text(t: &Target, v: f64) -> String {
    match t.source {
        Source::Allocs(_) => format!("{v:.2}"),
        _ => fmt_ratio(v),
    }
}

/// The "Targets" section of `index.md`.
pub fn render(
    results: &Results,
    alloc: Option<&AllocFile>,
    callgrind: Option<&CallgrindFile>,
) -> String {
    let mut s = String::from("## Performance targets\n\n");
    s.push_str("Each target is evaluated from the figures on this page (ratios of medians per operation from one run; allocations from `alloc_per_op.json`; instructions from `callgrind_lookup.json`). What each one means: [docs/dev/Benchmarks.md](../docs/dev/Benchmarks.md#performance-targets); the measured rounds, and why a missed one misses: [reports/](../reports/README.md).\n\n");
    s.push_str("| target | measure | figure | bound | verdict |\n|---|---|---:|---:|---|\n");
    for t in TARGETS {
        let (fig, verdict) = match evaluate(t, results, alloc, callgrind) {
            Outcome::Measured(v, note) => {
                let verdict = match t.bound.miss(v) {
                    None => "met".to_string(),
                    Some(m) => format!("**missed** by {:.0}%", m * 100.0),
                };
                let verdict = match note {
                    Some(n) => format!("{verdict} ({n})"),
                    None => verdict,
                };
                (figure_text(t, v), verdict)
            }
            Outcome::NotMeasured(why) => ("—".into(), format!("not measured: {why}")),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            t.id,
            t.what,
            fig,
            t.bound.text(),
            verdict
        );
    }
    s.push('\n');
    s
}
