//! `cargo xtask bench-report`: `bench_results/index.md`, the micro-bench pair pages, the
//! sweep tables and the SVG charts, from whatever Criterion left in CRITERION_HOME.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::catalog::{self, Contender, GROUPS, MICRO_PAIRS, Role, SWEEPS, WORKLOADS, Workload};
use crate::criterion::{GroupScan, Interval, Measurement, scan_group};
use crate::environment::Environment;
use crate::svg;
use crate::util::{self, Error, Result, fmt_ns, fmt_ratio};

/// Options of `bench-report`.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Where Criterion wrote (CRITERION_HOME).
    pub home: PathBuf,
    /// Where the pages go (`<repo>/bench_results`).
    pub out: PathBuf,
    /// Render partial groups (with their missing ids marked) instead of failing.
    pub allow_partial: bool,
    /// The environment line (None: detect).
    pub environment: Option<Environment>,
}

/// The state of one group in CRITERION_HOME.
#[derive(Debug)]
pub enum GroupState {
    /// No folder at all: the suite was never run.
    NotRun,
    /// Every expected id is readable.
    Complete(GroupScan),
    /// Some ids are missing or unreadable (the messages say which).
    Partial(GroupScan, Vec<String>),
}

/// Every known group, loaded.
#[derive(Debug)]
pub struct Results {
    /// Group name → state.
    pub groups: BTreeMap<&'static str, GroupState>,
}

impl Results {
    /// Scans every group of the catalog under `home` (the `new` folders).
    pub fn load(home: &Path) -> Results {
        let mut groups = BTreeMap::new();
        for g in GROUPS {
            let scan = scan_group(home, g.name, "new");
            let state = if scan.is_empty() {
                GroupState::NotRun
            } else {
                let mut problems = scan.errors();
                let missing: Vec<&str> = g
                    .ids
                    .iter()
                    .copied()
                    .filter(|id| scan.ok(id).is_empty())
                    .collect();
                if !missing.is_empty() {
                    problems.push(format!(
                        "group `{}` is partial: no readable result for {}",
                        g.name,
                        missing
                            .iter()
                            .map(|m| format!("`{m}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                if let Some(sweep) = SWEEPS.iter().find(|s| s.group == g.name) {
                    for id in g.ids {
                        let have: Vec<u64> = scan
                            .ok(id)
                            .iter()
                            .filter_map(|m| m.param.parse().ok())
                            .collect();
                        let lacking: Vec<String> = sweep
                            .values
                            .iter()
                            .filter(|v| !have.contains(v))
                            .map(u64::to_string)
                            .collect();
                        if !scan.ok(id).is_empty() && !lacking.is_empty() {
                            problems.push(format!(
                                "sweep `{}` is partial: `{id}` lacks the point(s) {}",
                                g.name,
                                lacking.join(", ")
                            ));
                        }
                    }
                }
                if problems.is_empty() {
                    GroupState::Complete(scan)
                } else {
                    GroupState::Partial(scan, problems)
                }
            };
            groups.insert(g.name, state);
        }
        Results { groups }
    }

    /// Every problem found, each with the command that reruns its suite: partial groups, and
    /// groups of the default suites that did not run at all (the sweeps are optional).
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (name, state) in &self.groups {
            let fix = catalog::suite_of_group(name)
                .map(|s| format!(" (run it: `{}`)", s.xtask_command()))
                .unwrap_or_default();
            match state {
                GroupState::Partial(_, problems) => {
                    for p in problems {
                        out.push(format!("{p}{fix}"));
                    }
                }
                GroupState::NotRun if !SWEEPS.iter().any(|s| s.group == *name) => {
                    out.push(format!("group `{name}` has no results{fix}"));
                }
                _ => {}
            }
        }
        out
    }

    fn scan(&self, group: &str) -> Option<&GroupScan> {
        match self.groups.get(group)? {
            GroupState::NotRun => None,
            GroupState::Complete(s) | GroupState::Partial(s, _) => Some(s),
        }
    }

    /// Whether the group has any result.
    pub fn ran(&self, group: &str) -> bool {
        self.scan(group).is_some()
    }

    /// The newest result of `group/function` (the parameter of the latest run).
    pub fn newest(&self, group: &str, function: &str) -> Option<&Measurement> {
        self.scan(group)?.newest(function)
    }

    /// Every result of `group/function`, any parameter.
    pub fn all(&self, group: &str, function: &str) -> Vec<&Measurement> {
        self.scan(group).map(|s| s.ok(function)).unwrap_or_default()
    }
}

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

/// The ratio of two medians per operation, when both exist.
pub fn ratio(num: Option<&Measurement>, den: Option<&Measurement>) -> Option<f64> {
    let (n, d) = (num?.per_op().point, den?.per_op().point);
    (d > 0.0).then(|| n / d)
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
    }
}

fn interval_text(i: Interval) -> String {
    format!("{} – {}", fmt_ns(i.lo), fmt_ns(i.hi))
}

fn id_text(m: &Measurement) -> String {
    format!("`{}`", m.key())
}

/// `bench_results/alloc_per_op.json`, written by `tests/alloc_per_op.rs`.
#[derive(Debug, Clone, Deserialize)]
pub struct AllocFile {
    /// Lookups measured per path.
    pub lookups: u64,
    /// Path name → figures.
    pub paths: BTreeMap<String, AllocPath>,
}

/// One path of [`AllocFile`].
#[derive(Debug, Clone, Deserialize)]
pub struct AllocPath {
    /// Heap allocations per operation.
    pub allocs_per_op: f64,
    /// Bytes allocated per operation.
    pub bytes_per_op: Option<f64>,
}

/// `<CRITERION_HOME>/resources.json`, written by `cargo xtask bench`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ResourcesFile {
    /// Suite name → its last recorded run.
    pub suites: BTreeMap<String, SuiteResources>,
}

/// Resources of one suite process (and anything it spawned).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SuiteResources {
    /// Bench target.
    pub target: String,
    /// Peak resident set size, KiB.
    pub max_rss_kib: u64,
    /// User CPU seconds.
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
    /// Wall seconds.
    pub wall_s: f64,
    /// Exit code (None: killed by a signal).
    pub exit_code: Option<i32>,
    /// Arguments given to the bench binary.
    pub args: Vec<String>,
    /// Knobs in force (`BENCH_*`).
    pub knobs: BTreeMap<String, String>,
    /// When it ran (Unix seconds).
    pub recorded_unix: i64,
}

/// Reads a JSON file if it exists; a file that exists but does not parse is an error.
pub fn read_optional_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>> {
    if !path.exists() {
        return Ok(None);
    }
    let text = util::read_to_string(path)?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| Error(format!("{}: invalid: {e}", path.display())))
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
    s.push_str("| contender | Criterion id | ops / iter | median / op | 95% interval | × raw driver | × SQLx |\n");
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

/// Generated files: path → contents.
pub type Files = BTreeMap<PathBuf, String>;

/// Builds every page and chart (without writing them).
pub fn build(opts: &ReportOptions) -> Result<Files> {
    let results = Results::load(&opts.home);
    let problems = results.problems();
    if !problems.is_empty() && !opts.allow_partial {
        return Err(Error(format!(
            "CRITERION_HOME {} holds partial results; refusing to report them as numbers:\n  - {}\n(pass --allow-partial to render them with the gaps marked)",
            opts.home.display(),
            problems.join("\n  - ")
        )));
    }
    let alloc: Option<AllocFile> = read_optional_json(&opts.home.join("alloc_per_op.json"))?;
    let resources: Option<ResourcesFile> = read_optional_json(&opts.home.join("resources.json"))?;
    let callgrind: Option<crate::targets::CallgrindFile> =
        read_optional_json(&opts.home.join("callgrind_lookup.json"))?;
    let env = opts
        .environment
        .clone()
        .unwrap_or_else(|| Environment::detect(&util::repo_root()));
    let out = &opts.out;
    let mut files = Files::new();

    let mut s = String::new();
    s.push_str("# sql-middleware benchmark results\n\n");
    s.push_str("Generated by `cargo xtask bench-report` from the Criterion results in CRITERION_HOME; do not edit by hand. How the numbers are produced and how to read them: [docs/BenchTooling.md](../docs/BenchTooling.md).\n\n");
    let _ = writeln!(s, "{}\n", env.line());
    s.push_str("Every figure is Criterion's **median time per iteration divided by the N operations of the iteration** (`Throughput::Elements(N)`), with its 95% bootstrap interval. Ratios divide medians per operation. On this kind of machine (a 2-vCPU VM) a single figure moves by about ±12% from one run to the next, so read a ratio as a band: only differences well beyond that are real.\n\n");
    if !problems.is_empty() {
        s.push_str("> ⚠ **Partial results rendered with `--allow-partial`:**\n");
        for p in &problems {
            let _ = writeln!(s, "> - {p}");
        }
        s.push('\n');
    }

    s.push_str(&crate::targets::render(
        &results,
        alloc.as_ref(),
        callgrind.as_ref(),
    ));

    s.push_str("## Side by side\n\n");
    for w in WORKLOADS {
        let rows = workload_rows(&results, w);
        let chart_path = out.join(format!("{}.svg", w.key));
        s.push_str(&render_workload(
            w,
            &rows,
            &util::rel_link(out, &chart_path),
        ));
        if let Some(svg) = workload_chart(w, &rows) {
            files.insert(chart_path, svg);
        }
    }

    s.push_str("## Micro-bench pairs (middleware beside SQLx)\n\n");
    s.push_str("| step | middleware id | median / op | SQLx id | median / op | middleware ÷ SQLx | page |\n");
    s.push_str("|---|---|---:|---|---:|---:|---|\n");
    for p in MICRO_PAIRS {
        let m = results.newest(p.middleware.0, p.middleware.1);
        let x = results.newest(p.sqlx.0, p.sqlx.1);
        let cell = |o: Option<&Measurement>, g: &str| match o {
            Some(m) => fmt_ns(m.per_op().point),
            None if results.ran(g) => "missing".into(),
            None => "not run".into(),
        };
        let page = out.join("micro").join(format!("{}.md", p.key));
        let _ = writeln!(
            s,
            "| {} | `{}` | {} | `{}` | {} | {} | [{}]({}) |",
            p.title,
            p.middleware.1,
            cell(m, p.middleware.0),
            p.sqlx.1,
            cell(x, p.sqlx.0),
            ratio(m, x).map_or("—".into(), fmt_ratio),
            p.key,
            util::rel_link(out, &page)
        );
        let (md, chart) = render_micro(p, &results, out);
        files.insert(page, md);
        if let Some((path, svg)) = chart {
            files.insert(path, svg);
        }
    }
    s.push('\n');

    s.push_str("## Resources\n\n");
    s.push_str(&render_alloc(alloc.as_ref()));
    s.push_str(&render_resources(resources.as_ref()));

    s.push_str("## Scaling sweeps\n\n");
    s.push_str("Run with `BENCH_SWEEP=1` only (`cargo xtask bench --sweep sweeps`); normal runs skip them.\n\n");
    for sw in SWEEPS {
        let (md, chart) = render_sweep(sw, &results, out);
        s.push_str(&md);
        if let Some((p, svg)) = chart {
            files.insert(p, svg);
        }
    }
    s.push_str(&render_nightly_links(out));
    files.insert(out.join("index.md"), s);
    Ok(files)
}

/// Writes the files; returns how many.
pub fn write_files(files: &Files) -> Result<usize> {
    for (p, c) in files {
        util::write(p, c)?;
    }
    Ok(files.len())
}

fn render_micro(
    p: &catalog::MicroPair,
    results: &Results,
    out: &Path,
) -> (String, Option<(PathBuf, String)>) {
    let page_dir = out.join("micro");
    let mut s = String::new();
    let _ = writeln!(s, "# Micro-bench pair: {}\n", p.title);
    s.push_str("Generated by `cargo xtask bench-report`; see [the index](../index.md).\n\n");
    let _ = writeln!(
        s,
        "- **`{}/{}`**: one operation = {}.\n- **`{}/{}`**: one operation = {}.\n",
        p.middleware.0, p.middleware.1, p.middleware_op, p.sqlx.0, p.sqlx.1, p.sqlx_op
    );
    s.push_str("| side | Criterion id | ops / iter | median / op | 95% interval | ÷ SQLx |\n|---|---|---:|---:|---|---:|\n");
    let m = results.newest(p.middleware.0, p.middleware.1);
    let x = results.newest(p.sqlx.0, p.sqlx.1);
    let mut bars = Vec::new();
    let mut row =
        |label: &str, g: &str, f: &str, o: Option<&Measurement>, col: &'static str| match o {
            Some(mm) => {
                let pp = mm.per_op();
                let _ = writeln!(
                    s,
                    "| {label} | {} | {} | **{}** | {} | {} |",
                    id_text(mm),
                    mm.elements,
                    fmt_ns(pp.point),
                    interval_text(pp),
                    ratio(Some(mm), x).map_or("—".into(), fmt_ratio)
                );
                bars.push(svg::Bar {
                    label: label.to_string(),
                    value: pp.point,
                    lo: pp.lo,
                    hi: pp.hi,
                    color: col,
                });
            }
            None => {
                let why = if results.ran(g) {
                    "missing".to_string()
                } else {
                    format!(
                        "not run: `{}`",
                        catalog::suite_of_group(g)
                            .map(|s| s.xtask_command())
                            .unwrap_or_default()
                    )
                };
                let _ = writeln!(s, "| {label} | `{g}/{f}` | — | {why} | — | — |");
            }
        };
    row(
        "sql-middleware (SQLite)",
        p.middleware.0,
        p.middleware.1,
        m,
        svg::MIDDLEWARE,
    );
    row("SQLx (SQLite)", p.sqlx.0, p.sqlx.1, x, svg::SQLX);
    for (backend, g, f) in p.also {
        let o = results.newest(g, f);
        if o.is_some() {
            row(
                &format!("sql-middleware ({backend}, for context)"),
                g,
                f,
                o,
                svg::RAW,
            );
        }
    }
    let chart = (!bars.is_empty()).then(|| {
        let path = out.join(format!("micro_{}.svg", p.key));
        (path, svg::bar_chart(p.title, &bars))
    });
    if let Some((path, _)) = &chart {
        let _ = writeln!(
            s,
            "\n![{} chart]({})",
            p.title,
            util::rel_link(&page_dir, path)
        );
    }
    (s, chart)
}

/// The latest nightly comparison pages found in `<out>/nightly/`, newest first.
fn render_nightly_links(out: &Path) -> String {
    let mut pages: Vec<(std::time::SystemTime, String)> = std::fs::read_dir(out.join("nightly"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let t = e.metadata().and_then(|m| m.modified()).ok()?;
                    name.ends_with(".md").then_some((t, name))
                })
                .collect()
        })
        .unwrap_or_default();
    pages.sort_by(|a, b| b.cmp(a));
    let mut s = String::from("## Nightly comparisons\n\n");
    if pages.is_empty() {
        s.push_str("None yet: `cargo xtask nightly` writes them to `bench_results/nightly/`.\n");
        return s;
    }
    s.push_str(
        "Newest first (`cargo xtask nightly`; the verdict rule is in docs/BenchTooling.md):\n\n",
    );
    for (_, name) in pages.iter().take(10) {
        let _ = writeln!(s, "- [{}](nightly/{name})", name.trim_end_matches(".md"));
    }
    s
}

fn render_alloc(alloc: Option<&AllocFile>) -> String {
    let mut s = String::from("### Allocations per operation\n\n");
    match alloc {
        None => s.push_str("Not measured. Run `cargo xtask bench alloc` (it runs `tests/alloc_per_op.rs` with `ALLOC_PER_OP_JSON=<CRITERION_HOME>/alloc_per_op.json`).\n\n"),
        Some(a) => {
            let _ = writeln!(
                s,
                "Counted with a counting allocator (dhat) over {} operations per path, from `alloc_per_op.json`.\n",
                a.lookups
            );
            s.push_str("| path | allocations / op | bytes / op |\n|---|---:|---:|\n");
            for (name, p) in &a.paths {
                let _ = writeln!(
                    s,
                    "| `{name}` | {:.2} | {} |",
                    p.allocs_per_op,
                    p.bytes_per_op.map_or("—".into(), |b| format!("{b:.0}"))
                );
            }
            s.push('\n');
        }
    }
    s
}

fn render_resources(r: Option<&ResourcesFile>) -> String {
    let mut s = String::from("### Peak memory and CPU time of each suite\n\n");
    match r {
        None => s.push_str("Not recorded. `cargo xtask bench` records them in `<CRITERION_HOME>/resources.json`.\n\n"),
        Some(r) if r.suites.is_empty() => s.push_str("Not recorded yet.\n\n"),
        Some(r) => {
            s.push_str("`getrusage` of each suite's bench process and its children, recorded by `cargo xtask bench` (Criterion's own analysis is included; the build is not).\n\n");
            s.push_str("| suite | bench target | peak RSS | user CPU | system CPU | wall | CPU / wall | Criterion args | knobs | recorded |\n|---|---|---:|---:|---:|---:|---:|---|---|---|\n");
            for (name, x) in &r.suites {
                let cpu = x.user_s + x.sys_s;
                let knobs: Vec<String> = x.knobs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let _ = writeln!(
                    s,
                    "| {name}{} | `{}` | {:.1} MiB | {:.1} s | {:.1} s | {:.1} s | {:.2} | `{}` | {} | {} |",
                    if x.exit_code == Some(0) { "" } else { " (failed)" },
                    x.target,
                    x.max_rss_kib as f64 / 1024.0,
                    x.user_s,
                    x.sys_s,
                    x.wall_s,
                    if x.wall_s > 0.0 { cpu / x.wall_s } else { 0.0 },
                    x.args.join(" "),
                    if knobs.is_empty() { "defaults".into() } else { format!("`{}`", knobs.join(" ")) },
                    util::datetime_of(x.recorded_unix)
                );
            }
            s.push('\n');
        }
    }
    s
}

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
