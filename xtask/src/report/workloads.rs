//! The "Side by side" section of `index.md`: one table and one bar chart per workload of the
//! catalog (raw driver, middleware and SQLx on the same operation).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::cells::{id_text, interval_text, ratio};
use crate::catalog::{self, Contender, Role, WORKLOADS, Workload};
use crate::criterion::Measurement;
use crate::results::Results;
use crate::svg;
use crate::util::{self, fmt_ns, fmt_ratio};

/// One computed row of a workload table.
#[derive(Debug, Clone)]
pub struct RowResult {
    /// The contender.
    pub contender: Contender,
    /// Its measurement, if its group ran.
    pub measurement: Option<Measurement>,
    /// Whether its group ran at all.
    pub group_ran: bool,
    /// Ratio to the raw driver.
    pub vs_raw: Option<f64>,
    /// Ratio to SQLx.
    pub vs_sqlx: Option<f64>,
}

/// Computes the rows of one workload.
pub fn workload_rows(results: &Results, w: &Workload) -> Vec<RowResult> {
    let ms: Vec<Option<&Measurement>> = w
        .contenders
        .iter()
        .map(|c| results.newest(c.group, c.function))
        .collect();
    w.contenders
        .iter()
        .enumerate()
        .map(|(i, c)| RowResult {
            contender: *c,
            measurement: ms[i].cloned(),
            group_ran: results.ran(c.group),
            vs_raw: c.raw.and_then(|r| ratio(ms[i], ms[r])),
            vs_sqlx: c.sqlx.and_then(|s| ratio(ms[i], ms[s])),
        })
        .collect()
}

fn color(role: Role) -> &'static str {
    match role {
        Role::Raw => svg::RAW,
        Role::Middleware => svg::MIDDLEWARE,
        Role::Sqlx => svg::SQLX,
        Role::Peer => svg::PEER,
    }
}

/// The markdown of one workload, and its chart (if anything was measured).
pub fn render_workload(w: &Workload, rows: &[RowResult], chart_link: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "### {}\n", w.title);
    let _ = writeln!(s, "One operation: {}.\n", w.operation);
    let suites = workload_suites(w);
    if rows.iter().all(|r| !r.group_ran) {
        let _ = writeln!(
            s,
            "**Not run.** Run it with `cargo xtask bench {}`, or `{}`.\n",
            suites.iter().map(|s| s.name).collect::<Vec<_>>().join(" "),
            suites
                .iter()
                .map(|s| s.cargo_command())
                .collect::<Vec<_>>()
                .join("` then `")
        );
        return s;
    }
    let _ = writeln!(
        s,
        "| contender | Criterion id | ops / iter | median / op | 95% interval | × raw driver | × {} |",
        second_reference(w)
    );
    s.push_str("|---|---|---:|---:|---|---:|---:|\n");
    for r in rows {
        let c = &r.contender;
        match &r.measurement {
            Some(m) => {
                let p = m.per_op();
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | **{}** | {} | {} | {} |",
                    c.label,
                    id_text(m),
                    m.elements,
                    fmt_ns(p.point),
                    interval_text(p),
                    r.vs_raw.map_or("—".into(), fmt_ratio),
                    r.vs_sqlx.map_or("—".into(), fmt_ratio),
                );
            }
            None => {
                let why = if r.group_ran {
                    format!("missing from `{}`", c.group)
                } else {
                    let cmd = catalog::suite_of_group(c.group)
                        .map(|s| s.xtask_command())
                        .unwrap_or_default();
                    format!("not run: `{cmd}`")
                };
                let _ = writeln!(
                    s,
                    "| {} | `{}/{}` | — | {why} | — | — | — |",
                    c.label, c.group, c.function
                );
            }
        }
    }
    let ns: Vec<u64> = rows
        .iter()
        .filter_map(|r| r.measurement.as_ref().map(|m| m.elements))
        .collect();
    if ns.windows(2).any(|p| p[0] != p[1]) {
        let _ = writeln!(
            s,
            "\n> ⚠ The rows were measured with different numbers of operations per iteration ({}); rerun them with the same `BENCH_LOOKUPS` / `BENCH_ROWS` before comparing.",
            ns.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
        );
    }
    let _ = writeln!(s, "\n{}\n", w.note);
    let _ = writeln!(s, "![{} chart]({chart_link})\n", w.title);
    s
}

/// The heading of the second ratio column: the label of the row the contenders' `sqlx` index
/// names when that row is not SQLx (the peer tables divide by sql-middleware), else "SQLx".
fn second_reference(w: &Workload) -> &'static str {
    match w.contenders.iter().find_map(|c| c.sqlx) {
        Some(i) if w.contenders[i].role != Role::Sqlx => w.contenders[i].label,
        _ => "SQLx",
    }
}

fn workload_suites(w: &Workload) -> Vec<&'static catalog::Suite> {
    let mut out: Vec<&'static catalog::Suite> = Vec::new();
    for c in w.contenders {
        if let Some(s) = catalog::suite_of_group(c.group)
            && !out.contains(&s)
        {
            out.push(s);
        }
    }
    out
}

/// The bar chart of one workload.
pub fn workload_chart(w: &Workload, rows: &[RowResult]) -> Option<String> {
    let bars: Vec<svg::Bar> = rows
        .iter()
        .filter_map(|r| {
            let m = r.measurement.as_ref()?;
            let p = m.per_op();
            Some(svg::Bar {
                label: r.contender.label.to_string(),
                value: p.point,
                lo: p.lo,
                hi: p.hi,
                color: color(r.contender.role),
            })
        })
        .collect();
    (!bars.is_empty()).then(|| svg::bar_chart(w.title, &bars))
}

/// The section's markdown, with the charts it links to (path, SVG).
pub fn section(results: &Results, out: &Path) -> (String, Vec<(PathBuf, String)>) {
    let mut s = String::from("## Side by side\n\n");
    let mut charts = Vec::new();
    for w in WORKLOADS {
        let rows = workload_rows(results, w);
        let chart_path = out.join(format!("{}.svg", w.key));
        s.push_str(&render_workload(
            w,
            &rows,
            &util::rel_link(out, &chart_path),
        ));
        if let Some(svg) = workload_chart(w, &rows) {
            charts.push((chart_path, svg));
        }
    }
    (s, charts)
}
