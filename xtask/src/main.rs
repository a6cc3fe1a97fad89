//! Project automation. Run as `cargo xtask <command>`; `cargo xtask help` lists the commands.

use std::path::PathBuf;
use std::process::ExitCode;

use xtask::catalog::{self, SUITES, Suite};
use xtask::environment::{Environment, Machine};
use xtask::nightly::{self, RunInfo, Verdict};
use xtask::report::{self, ReportOptions};
use xtask::runner::{self, QUICK_ARGS, RunOptions};
use xtask::util::{self, Error, Result};

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  bench-report [--out DIR] [--allow-partial]
      Regenerate bench_results/index.md, bench_results/micro/*.md and the SVG charts from
      the Criterion results in CRITERION_HOME ($CRITERION_HOME, else <repo>/bench_results).

  bench [--quick] [--sweep] [--features F,..] [--slowdown] [--no-report] [SUITE...] [-- CRITERION_ARGS...]
      Build and run suites (default: every suite but `sweeps`, then `alloc`), recording each
      suite's peak RSS and CPU seconds in <CRITERION_HOME>/resources.json; then bench-report.
      --quick   = -- --warm-up-time 1 --measurement-time 2 --sample-size 10
      --sweep   adds the `sweeps` suite with BENCH_SWEEP=1

  nightly [--against NAME] [--threshold PCT] [--confirm N] [--history K] [--quick]
          [--suite SUITE]...
          [--tag TAG] [--date YYYY-MM-DD] [--features F,..] [--slowdown] [--compare-only] [--out DIR]
          [-- CRITERION_ARGS...]
      Run the suites (default: all but sweeps, the SQLx harness included) with
      --save-baseline nightly-<YYYY-MM-DD>[-TAG], compare with the previous nightly baseline
      (or NAME) and with the median of the last K (default 5) nightly baselines, rerun every
      flagged id N times (default 2) in fresh processes to confirm it, write
      bench_results/nightly/<YYYY-MM-DD>[-TAG].md; exit 1 on a confirmed regression.
      Each id is judged by its ratio to the raw driver measured in the same run; a reference
      from another machine, or raw controls that moved, are reported as an environment change.
      --threshold defaults to 10 (percent). --compare-only skips the main run.
      --slowdown builds with --cfg sqlmw_bench_slowdown (every fifth SQLite lookup runs its
      query twice, ~20% slower): an experiment, never used as a reference.

  save-reference
      Copy every id's latest run in CRITERION_HOME (<id>/<param>/new/) to its reference/
      folder: the figures committed with the repository, which the benches' closing summary
      compares with and bench-report falls back to. Run it after `cargo xtask bench` to update
      the committed figures; nothing else writes reference/.

  reliability
      Run the reliability suite once (`cargo test --all-features --test reliability --
      --nocapture --test-threads=1`) and write reports/Reliability.md from that run: the
      notes in docs/dev/ReliabilityNotes.md, each topic file's documentation, and every
      test's result and figures. Exit 1 when a test failed (the page shows it).

suites: ";

fn suites_help() -> String {
    let names: Vec<&str> = SUITES.iter().map(|s| s.name).collect();
    format!("{}, alloc (tests/alloc_per_op.rs)", names.join(", "))
}

struct Args {
    items: Vec<String>,
    /// Everything after `--`.
    passthrough: Vec<String>,
}

impl Args {
    fn new(raw: Vec<String>) -> Args {
        let mut items = Vec::new();
        let mut passthrough = Vec::new();
        let mut it = raw.into_iter();
        for a in it.by_ref() {
            if a == "--" {
                break;
            }
            items.push(a);
        }
        passthrough.extend(it);
        Args { items, passthrough }
    }

    fn flag(&mut self, name: &str) -> bool {
        let before = self.items.len();
        self.items.retain(|a| a != name);
        self.items.len() != before
    }

    fn values(&mut self, name: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.items.len() {
            if self.items[i] == name {
                if i + 1 >= self.items.len() {
                    return Err(Error(format!("{name} needs a value")));
                }
                out.push(self.items.remove(i + 1));
                self.items.remove(i);
            } else if let Some(v) = self.items[i].strip_prefix(&format!("{name}=")) {
                out.push(v.to_string());
                self.items.remove(i);
            } else {
                i += 1;
            }
        }
        Ok(out)
    }

    fn value(&mut self, name: &str) -> Result<Option<String>> {
        let mut v = self.values(name)?;
        if v.len() > 1 {
            return Err(Error(format!("{name} given more than once")));
        }
        Ok(v.pop())
    }

    fn rest(&mut self) -> Result<Vec<String>> {
        if let Some(bad) = self.items.iter().find(|a| a.starts_with('-')) {
            return Err(Error(format!(
                "unknown option {bad}\n\n{USAGE}{}",
                suites_help()
            )));
        }
        Ok(std::mem::take(&mut self.items))
    }
}

fn parse_suites(
    names: &[String],
    sweep: bool,
    default_alloc: bool,
) -> Result<(Vec<&'static Suite>, bool)> {
    if names.is_empty() {
        let mut v: Vec<&'static Suite> = SUITES.iter().filter(|s| !s.sweep).collect();
        if sweep {
            v.extend(SUITES.iter().filter(|s| s.sweep));
        }
        return Ok((v, default_alloc));
    }
    let mut v = Vec::new();
    let mut alloc = false;
    for n in names {
        if n == "alloc" {
            alloc = true;
            continue;
        }
        let s = catalog::suite(n)
            .ok_or_else(|| Error(format!("unknown suite `{n}`; suites: {}", suites_help())))?;
        if !v.contains(&s) {
            v.push(s);
        }
    }
    Ok((v, alloc))
}

/// `--features F,..` plus `--slowdown` (the build variant [`runner::SLOWDOWN`]).
fn features(args: &mut Args) -> Result<Vec<String>> {
    let mut out: Vec<String> = args
        .values("--features")?
        .iter()
        .flat_map(|f| f.split(','))
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(String::from)
        .collect();
    if args.flag("--slowdown") {
        out.push(runner::SLOWDOWN.to_string());
    }
    Ok(out)
}

fn criterion_args(quick: bool, passthrough: &[String]) -> Vec<String> {
    let mut a: Vec<String> = vec!["--noplot".into()];
    if quick {
        a.extend(QUICK_ARGS.iter().map(|s| s.to_string()));
    }
    a.extend(passthrough.iter().cloned());
    a
}

fn out_dir(args: &mut Args, root: &std::path::Path) -> Result<PathBuf> {
    Ok(args
        .value("--out")?
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("bench_results")))
}

fn cmd_report(mut args: Args) -> Result<ExitCode> {
    let root = util::repo_root();
    let allow_partial = args.flag("--allow-partial");
    let out = out_dir(&mut args, &root)?;
    args.rest()?;
    let home = util::criterion_home(&root);
    let files = report::build(&ReportOptions {
        home: home.clone(),
        out: out.clone(),
        allow_partial,
        environment: None,
    })?;
    let n = report::write_files(&files)?;
    eprintln!(
        "xtask: wrote {n} files under {} from {}",
        out.display(),
        home.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn cmd_reliability(mut args: Args) -> Result<ExitCode> {
    args.rest()?;
    let passed = xtask::reliability::generate(&util::repo_root())?;
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn cmd_bench(mut args: Args) -> Result<ExitCode> {
    let root = util::repo_root();
    let quick = args.flag("--quick");
    let sweep = args.flag("--sweep");
    let no_report = args.flag("--no-report");
    let features = features(&mut args)?;
    let names = args.rest()?;
    let (suites, alloc) = parse_suites(&names, sweep, true)?;
    let home = util::criterion_home(&root);
    let mut failures = Vec::new();
    if !suites.is_empty() {
        let outcomes = runner::run_suites(&RunOptions {
            root: root.clone(),
            home: home.clone(),
            suites,
            criterion_args: criterion_args(quick, &args.passthrough),
            features,
            filters: Default::default(),
            record: true,
        })?;
        failures.extend(outcomes.into_iter().filter_map(|o| o.failure));
    }
    if alloc && let Err(e) = runner::run_alloc(&root, &home) {
        failures.push(e.0);
    }
    if !no_report {
        match report::build(&ReportOptions {
            home,
            out: root.join("bench_results"),
            // A run of some suites reports the others as not run instead of failing.
            allow_partial: !failures.is_empty() || !names.is_empty(),
            environment: None,
        })
        .and_then(|f| report::write_files(&f))
        {
            Ok(n) => eprintln!("xtask: report regenerated ({n} files)"),
            Err(e) => failures.push(format!("report: {e}")),
        }
    }
    if failures.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        for f in &failures {
            eprintln!("xtask: FAILED: {f}");
        }
        Ok(ExitCode::FAILURE)
    }
}

fn cmd_nightly(mut args: Args) -> Result<ExitCode> {
    let root = util::repo_root();
    let quick = args.flag("--quick");
    let compare_only = args.flag("--compare-only");
    let against = args.value("--against")?;
    let threshold = match args.value("--threshold")? {
        Some(t) => {
            let pct: f64 = t
                .trim_end_matches('%')
                .parse()
                .map_err(|_| Error(format!("--threshold {t}: not a number of percent")))?;
            if !(pct > 0.0 && pct < 1000.0) {
                xtask::bail!("--threshold {t}: out of range");
            }
            pct / 100.0
        }
        None => nightly::DEFAULT_THRESHOLD,
    };
    let count = |v: Option<String>, name: &str, default: usize| -> Result<usize> {
        match v {
            Some(n) => n
                .parse()
                .map_err(|_| Error(format!("{name} {n}: not a count"))),
            None => Ok(default),
        }
    };
    let confirm_runs = count(args.value("--confirm")?, "--confirm", 2)?;
    let history_len = count(args.value("--history")?, "--history", 5)?;
    let tag = args.value("--tag")?;
    let date = args.value("--date")?.unwrap_or_else(util::today);
    let suite_names = args.values("--suite")?;
    let features = features(&mut args)?;
    let out = out_dir(&mut args, &root)?;
    args.rest()?;
    let stem = match &tag {
        Some(t) => format!("{date}-{t}"),
        None => date.clone(),
    };
    let current = format!("{}{stem}", nightly::PREFIX);
    let home = util::criterion_home(&root);
    let (suites, _) = parse_suites(&suite_names, false, false)?;
    let mut cargs = criterion_args(quick, &args.passthrough);
    cargs.extend(["--save-baseline".to_string(), current.clone()]);
    let mut info = RunInfo {
        current: current.clone(),
        previous: None,
        threshold,
        suites: suites.iter().map(|s| s.name.to_string()).collect(),
        criterion_args: cargs.clone(),
        features: features.clone(),
        failures: Vec::new(),
        environment: Environment::detect(&root).line(),
        load: Vec::new(),
        confirm_runs,
        first_flags: Vec::new(),
        history: Vec::new(),
        environment_change: Default::default(),
    };
    let machine = Machine::detect();
    if compare_only {
        info.suites.clear();
        info.criterion_args.clear();
    } else {
        info.load.push(loadavg());
        let outcomes = runner::run_suites(&RunOptions {
            root: root.clone(),
            home: home.clone(),
            suites: suites.clone(),
            criterion_args: cargs.clone(),
            features: features.clone(),
            filters: Default::default(),
            record: true,
        })?;
        info.failures = outcomes.into_iter().filter_map(|o| o.failure).collect();
        info.load.push(loadavg());
        nightly::record_run(
            &home,
            &current,
            nightly::RunRecord {
                features: features.clone(),
                criterion_args: cargs,
                suites: info.suites.clone(),
                unix: util::unix_now(),
                machine: Some(machine.clone()),
            },
        )?;
    }
    let candidates = nightly::reference_candidates(&home, &current)?;
    info.previous = against.or_else(|| candidates.first().cloned());
    info.history = candidates.into_iter().take(history_len).collect();
    let history = nightly::load_history(&home, &info.history);
    let mut rows = match &info.previous {
        Some(prev) => {
            let e = nightly::evaluate(
                &home,
                prev,
                &current,
                threshold,
                &history,
                Some(machine.clone()),
            )?;
            info.environment_change = e.environment;
            e.rows
        }
        None => {
            info.environment_change.tonight =
                nightly::machine_of(&nightly::load_runs(&home)?, &current)
                    .or(Some(machine.clone()));
            Vec::new()
        }
    };
    info.first_flags = rows
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Regressed | Verdict::Improved))
        .map(|r| (r.key.clone(), r.verdict))
        .collect();
    for round in 1..=confirm_runs {
        let Some(prev) = info.previous.clone() else {
            break;
        };
        let flagged = nightly::flagged(&rows);
        if flagged.is_empty() {
            break;
        }
        // Rerun only the flagged ids and their controls, each suite once, in fresh processes.
        let mut by_suite: std::collections::BTreeMap<&'static str, Vec<String>> =
            Default::default();
        for k in &flagged {
            if let Some(s) = catalog::suite_of_group(&k.group) {
                by_suite.entry(s.name).or_default().push(k.to_string());
            }
        }
        let rerun_name = format!("confirm-{stem}-{round}");
        eprintln!(
            "xtask: confirmation rerun {round}: {} flagged id(s) and control(s) in {} suite(s)",
            flagged.len(),
            by_suite.len()
        );
        let filters = by_suite
            .iter()
            .map(|(n, ids)| {
                (
                    n.to_string(),
                    runner::exact_filter(ids.iter().map(String::as_str)),
                )
            })
            .collect();
        let mut rargs = criterion_args(quick, &args.passthrough);
        rargs.extend(["--save-baseline".to_string(), rerun_name.clone()]);
        let outcomes = runner::run_suites(&RunOptions {
            root: root.clone(),
            home: home.clone(),
            suites: by_suite.keys().filter_map(|n| catalog::suite(n)).collect(),
            criterion_args: rargs,
            features: features.clone(),
            filters,
            record: false,
        })?;
        info.failures
            .extend(outcomes.into_iter().filter_map(|o| o.failure));
        let (before, _) = xtask::criterion::load_all(&home, &prev);
        let (after, _) = xtask::criterion::load_all(&home, &rerun_name);
        nightly::apply_rerun(
            &mut rows,
            &nightly::compare(&before, &after, threshold, &history),
            threshold,
        );
        // The rerun's figures live on in the page; its scratch baseline goes.
        nightly::remove_baseline(&home, &rerun_name);
    }
    let page = out.join("nightly").join(format!("{stem}.md"));
    util::write(&page, &nightly::render(&info, &rows))?;
    let counts = nightly::counts(&rows);
    let n = |v: Verdict| counts.get(&v).copied().unwrap_or(0);
    eprintln!(
        "xtask: {} vs {}: {} regressed, {} improved, {} noise, {} environment change, {} other ({} flagged before the reruns); wrote {}",
        current,
        info.previous.as_deref().unwrap_or("(nothing)"),
        n(Verdict::Regressed),
        n(Verdict::Improved),
        n(Verdict::Noise),
        n(Verdict::Environment),
        n(Verdict::New) + n(Verdict::NotRun),
        info.first_flags.len(),
        page.display()
    );
    if let Some(st) = info.environment_change.statement(threshold) {
        eprintln!("xtask: {}", st.replace("**", ""));
    }
    for f in &info.failures {
        eprintln!("xtask: FAILED: {f}");
    }
    if nightly::fails(&rows, &info.failures) {
        Ok(ExitCode::FAILURE)
    } else {
        Ok(ExitCode::SUCCESS)
    }
}

/// The 1, 5 and 15 minute load averages.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn main() -> ExitCode {
    let mut raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.is_empty() {
        eprintln!("{USAGE}{}", suites_help());
        return ExitCode::from(2);
    }
    let cmd = raw.remove(0);
    let args = Args::new(raw);
    let r = match cmd.as_str() {
        "bench-report" | "report" => cmd_report(args),
        "bench" => cmd_bench(args),
        "nightly" => cmd_nightly(args),
        "reliability" => cmd_reliability(args),
        "save-reference" => {
            let home = util::criterion_home(&util::repo_root());
            xtask::criterion::save_reference(&home).map(|n| {
                println!(
                    "copied {n} ids' latest runs to their reference/ folders under {}",
                    home.display()
                );
                ExitCode::SUCCESS
            })
        }
        "help" | "--help" | "-h" => {
            println!("{USAGE}{}", suites_help());
            Ok(ExitCode::SUCCESS)
        }
        other => Err(Error(format!(
            "unknown command `{other}`\n\n{USAGE}{}",
            suites_help()
        ))),
    };
    match r {
        Ok(c) => c,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}
