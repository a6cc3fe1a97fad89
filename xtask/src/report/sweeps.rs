//! The "Scaling sweeps" section of `index.md`: per sweep, a table over the parameter and a
//! log–log line chart of rusqlite and the middleware.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::cells::ratio;
use crate::catalog::{self, SWEEPS};
use crate::criterion::Measurement;
use crate::results::Results;
use crate::svg;
use crate::util::{self, fmt_ns, fmt_ratio};

/// The section's markdown, with the charts it links to (path, SVG).
pub fn section(results: &Results, out: &Path) -> (String, Vec<(PathBuf, String)>) {
    let mut s = String::from("## Scaling sweeps\n\n");
    let mut charts = Vec::new();
    s.push_str("Run with `BENCH_SWEEP=1` only (`cargo xtask bench --sweep sweeps`); normal runs skip them.\n\n");
    for sw in SWEEPS {
        let (md, chart) = render_sweep(sw, results, out);
        s.push_str(&md);
        if let Some((p, svg)) = chart {
            charts.push((p, svg));
        }
    }
    (s, charts)
}

/// One sweep's table, and its chart (path, SVG) when the sweep ran.
fn render_sweep(
    sw: &catalog::Sweep,
    results: &Results,
    out: &Path,
) -> (String, Option<(PathBuf, String)>) {
    let mut s = String::new();
    let _ = writeln!(s, "### {} (`{}`)\n", sw.title, sw.group);
    if !results.ran(sw.group) {
        let _ = writeln!(
            s,
            "**Not run.** Run it with `cargo xtask bench --sweep sweeps` (or `BENCH_SWEEP=1 cargo bench --features {} --bench scaling_sweeps`).\n",
            catalog::MAIN_FEATURES
        );
        return (s, None);
    }
    let contenders = [
        ("rusqlite (raw)", "rusqlite", svg::RAW),
        ("sql-middleware", "middleware", svg::MIDDLEWARE),
    ];
    let by_param = |f: &str| -> BTreeMap<u64, Measurement> {
        results
            .all(sw.group, f)
            .into_iter()
            .filter_map(|m| Some((m.param.parse::<u64>().ok()?, m.clone())))
            .collect()
    };
    let raw = by_param("rusqlite");
    let mw = by_param("middleware");
    let _ = writeln!(
        s,
        "| {} | rusqlite median / op | sql-middleware median / op | middleware ÷ rusqlite | ops / iter |\n|---:|---:|---:|---:|---:|",
        sw.param
    );
    let mut params: Vec<u64> = raw.keys().chain(mw.keys()).copied().collect();
    params.sort_unstable();
    params.dedup();
    for p in &params {
        let (r, m) = (raw.get(p), mw.get(p));
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            svg::fmt_param(*p as f64),
            r.map_or("—".into(), |m| fmt_ns(m.per_op().point)),
            m.map_or("—".into(), |m| fmt_ns(m.per_op().point)),
            ratio(m, r).map_or("—".into(), fmt_ratio),
            m.or(r).map_or("—".into(), |m| m.elements.to_string()),
        );
    }
    let series: Vec<svg::Series> = contenders
        .iter()
        .map(|(label, f, col)| svg::Series {
            label: label.to_string(),
            points: by_param(f)
                .iter()
                .map(|(p, m)| (*p as f64, m.per_op().point))
                .collect(),
            color: col,
        })
        .collect();
    let path = out.join(format!("{}.svg", sw.group));
    let _ = writeln!(
        s,
        "\n![{} chart]({})\n",
        sw.title,
        util::rel_link(out, &path)
    );
    let chart = svg::line_chart(sw.title, sw.param, &series);
    (s, Some((path, chart)))
}
