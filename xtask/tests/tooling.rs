//! The parsing, ratio and verdict logic, on the hand-made Criterion folders in `fixtures/`:
//!
//! - `report/`: a complete `sqlite_single_row_lookup` group and its SQLx twin, plus
//!   `alloc_per_op.json`; nothing else ran.
//! - `partial/`: the lookup group with ids missing and one `estimates.json` gone.
//! - `nightly/`: two nightly baselines of a few ids, built so each verdict occurs once.
//! - `nightly-env/`: pairs of nightly baselines with their run records (`nightly-runs.json`):
//!   02-01 → 02-02 moves from an Intel to an AMD machine (raw and middleware both about twice as
//!   slow); 03-01 → 03-02 is the same machine with the middleware lookup +30% and the raw
//!   lookup steady; 03-03-slowdown is a `--slowdown` run (middleware +20%); 04-01 → 04-02 is the
//!   same machine with raw and middleware both +25%; 01-15 is an older record with no machine.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use xtask::criterion::{baselines, load_measurement, scan_group};
use xtask::environment::Environment;
use xtask::nightly::{self, History, Verdict};
use xtask::report::{self, ReportOptions, Results};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn env() -> Environment {
    Environment {
        cpu: "Test CPU".into(),
        cores: 2,
        crates: vec![("rusqlite".into(), "0.40.2".into())],
        commit: "abcdef012345".into(),
        date: "2026-01-01 00:00 UTC".into(),
    }
}

fn build(home: &Path, allow_partial: bool) -> xtask::util::Result<report::Files> {
    report::build(&ReportOptions {
        home: home.to_path_buf(),
        out: PathBuf::from("/out"),
        allow_partial,
        environment: Some(env()),
    })
}

#[test]
fn parses_one_measurement_per_operation() {
    let dir = fixture("report/sqlite_single_row_lookup/middleware/1000/new");
    let m = load_measurement(&dir).expect("readable");
    assert_eq!(m.group, "sqlite_single_row_lookup");
    assert_eq!(m.function, "middleware");
    assert_eq!(m.param, "1000");
    assert_eq!(m.elements, 1000);
    let p = m.per_op();
    assert!((p.point - 2_600.0).abs() < 1e-9, "{p:?}");
    assert!((p.lo - 2_548.0).abs() < 1e-9 && (p.hi - 2_652.0).abs() < 1e-9);
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let dir = fixture("partial/sqlite_single_row_lookup/middleware/1000/new");
    let e = load_measurement(&dir).expect_err("estimates.json is gone");
    assert!(
        e.0.contains("missing") && e.0.contains("estimates.json"),
        "{e}"
    );
}

#[test]
fn report_tables_ratios_and_not_run() {
    // Only the SQLite lookup and its SQLx twin ran: without --allow-partial the report refuses,
    // naming every group that has no results and the command that runs it.
    let e = build(&fixture("report"), false).expect_err("groups missing");
    assert!(
        e.0.contains(
            "group `database_inserts` has no results (run it: `cargo xtask bench inserts`)"
        ),
        "{e}"
    );
    assert!(
        !e.0.contains("sweep_lookup_rows"),
        "the sweeps are optional: {e}"
    );
    let files = build(&fixture("report"), true).expect("complete groups report");
    let index = &files[Path::new("/out/index.md")];
    // rusqlite 2.00 µs, middleware 2.60 µs, SQLx 25.0 µs per lookup.
    assert!(
        index.contains("| sql-middleware | `sqlite_single_row_lookup/middleware/1000` | 1000 | **2.60 µs** | 2.55 µs – 2.65 µs | 1.30× | 0.10× |"),
        "{index}"
    );
    assert!(index.contains("| rusqlite (raw) | `sqlite_single_row_lookup/rusqlite/1000` | 1000 | **2.00 µs** | 1.96 µs – 2.04 µs | 1.00× | 0.080× |"));
    assert!(index.contains("| SQLx | `sqlite_single_row_lookup_sqlx/sqlx/1000` | 1000 | **25.0 µs** | 24.5 µs – 25.5 µs | 12.5× | 1.00× |"));
    // Workloads that never ran say so, with the command, and show no numbers.
    assert!(index.contains("### Inserts (R rows in one transaction)\n\nOne operation: one row inserted with a prepared statement, R rows per transaction.\n\n**Not run.** Run it with `cargo xtask bench inserts`"));
    assert!(
        index.contains("**Not run.** Run it with `cargo xtask bench sqlite-fanout sqlx-fanout`")
    );
    assert!(index.contains("**Not run.** Run it with `cargo xtask bench --sweep sweeps`"));
    // Micro pairs: middleware_decode 50 ns against sqlx_decode 250 ns.
    assert!(index.contains("| Decode into `BenchRow` | `middleware_decode` | 50.0 ns | `sqlx_decode` | 250 ns | 0.20× | [decode](micro/decode.md) |"), "{index}");
    assert!(index.contains("| Pool checkout under fan-out | `middleware_pool_checkout` | not run | `sqlx_pool_checkout` | not run | — |"));
    // Allocation figures from alloc_per_op.json; no resources.json yet.
    assert!(
        index.contains("| `sqlite/prepared_one` | 2.00 | 58 |")
            || index.contains("| `sqlite/prepared_one` | 2.00 | 57 |")
    );
    assert!(index.contains("Not recorded. `cargo xtask bench` records them"));
    // The targets section: figures from the same results, verdicts, and what was not run.
    assert!(
        index.contains("| P2 | SQLite lookup: SQLx ÷ middleware | 9.62× | ≥ 5 | met |"),
        "{index}"
    );
    assert!(index.contains("| P7 | Heap allocations per SQLite lookup through the API (prepared `one`) | 2.00 | ≤ 3 | met |"));
    assert!(index.contains(
        "| P4a | Postgres lookup: middleware ÷ tokio_postgres_raw | — | ≤ 1.05 | not measured: `postgres_single_row_lookup/middleware` not run |"
    ));
    assert!(index.contains("| P8 | Instructions per SQLite lookup: middleware ÷ rusqlite (callgrind) | — | ≤ 1.5 | not measured: run `scripts/callgrind-lookup.sh` |"));
    assert!(index.contains("Test CPU × 2 logical CPUs"));
    // Pages and charts.
    let decode = &files[Path::new("/out/micro/decode.md")];
    assert!(decode.contains("![Decode into `BenchRow` chart](../micro_decode.svg)"));
    assert!(files.contains_key(Path::new("/out/micro_decode.svg")));
    assert!(files.contains_key(Path::new("/out/sqlite_lookup.svg")));
    assert!(
        !files.contains_key(Path::new("/out/inserts.svg")),
        "no chart of zeros"
    );
}

#[test]
fn a_partial_group_fails_and_names_what_is_missing() {
    let e = build(&fixture("partial"), false).expect_err("partial group");
    for needle in [
        "estimates.json",
        "group `sqlite_single_row_lookup` is partial",
        "`middleware`",
        "`pool_acquire`",
        "`middleware_param_convert`",
        "cargo xtask bench sqlite-lookup",
    ] {
        assert!(e.0.contains(needle), "`{needle}` not in: {e}");
    }
    // With --allow-partial it renders, marks the gap and still prints no zero.
    let files = build(&fixture("partial"), true).expect("allowed");
    let index = &files[Path::new("/out/index.md")];
    assert!(index.contains("Partial results rendered with `--allow-partial`"));
    assert!(index.contains(
        "| sql-middleware | `sqlite_single_row_lookup/middleware` | — | missing from `sqlite_single_row_lookup` |"
    ));
    assert!(!index.contains("0 ns"));
}

#[test]
fn an_invalid_alloc_file_fails() {
    let dir = tempdir("alloc");
    copy_tree(&fixture("report"), &dir);
    std::fs::write(dir.join("alloc_per_op.json"), "{\"lookups\": 1}").unwrap();
    let e = build(&dir, true).expect_err("invalid");
    assert!(e.0.contains("alloc_per_op.json"), "{e}");
}

#[test]
fn the_newest_parameter_wins() {
    let dir = tempdir("newest");
    copy_tree(&fixture("report"), &dir);
    // An older run with N = 200 sits beside the N = 1000 one.
    let old = dir.join("sqlite_single_row_lookup/middleware/200/new");
    copy_tree(
        &dir.join("sqlite_single_row_lookup/middleware/1000/new"),
        &old,
    );
    let text = std::fs::read_to_string(old.join("benchmark.json")).unwrap();
    std::fs::write(
        old.join("benchmark.json"),
        text.replace("\"1000\"", "\"200\"")
            .replace("{\"Elements\": 1000}", "{\"Elements\": 200}"),
    )
    .unwrap();
    let set = |p: &Path, t: SystemTime| {
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(t)
            .unwrap();
    };
    let now = SystemTime::now();
    set(&old.join("estimates.json"), now - Duration::from_secs(3600));
    set(
        &dir.join("sqlite_single_row_lookup/middleware/1000/new/estimates.json"),
        now,
    );
    let r = Results::load(&dir);
    assert_eq!(
        r.newest("sqlite_single_row_lookup", "middleware")
            .unwrap()
            .param,
        "1000"
    );
    assert_eq!(r.all("sqlite_single_row_lookup", "middleware").len(), 2);
    // The other way round, the N = 200 run is the one reported, and the mismatch is flagged.
    set(&old.join("estimates.json"), now + Duration::from_secs(3600));
    let index = &build(&dir, true).unwrap()[Path::new("/out/index.md")];
    assert!(index.contains("`sqlite_single_row_lookup/middleware/200` | 200 |"));
    assert!(index.contains("different numbers of operations per iteration (1000, 200, 1000)"));
}

#[test]
fn scanning_sees_baselines() {
    let home = fixture("nightly");
    let names: Vec<String> = baselines(&home).into_keys().collect();
    assert_eq!(names, vec!["nightly-2026-01-01", "nightly-2026-01-02"]);
    assert!(scan_group(&home, "sqlite_single_row_lookup", "new").is_empty());
    assert_eq!(
        nightly::previous_baseline(&home, "nightly-2026-01-02")
            .unwrap()
            .as_deref(),
        Some("nightly-2026-01-01")
    );
}

#[test]
fn nightly_verdicts() {
    let rows = nightly::compare_baselines(
        &fixture("nightly"),
        "nightly-2026-01-01",
        "nightly-2026-01-02",
        0.10,
        &History::new(),
    )
    .expect("comparable");
    let verdict = |f: &str| {
        rows.iter()
            .find(|r| r.key.function == f)
            .unwrap_or_else(|| panic!("{f}"))
            .verdict
    };
    assert_eq!(verdict("rusqlite"), Verdict::Noise);
    assert_eq!(verdict("middleware"), Verdict::Regressed);
    assert_eq!(verdict("pool_acquire"), Verdict::Improved);
    assert_eq!(verdict("middleware_decode"), Verdict::Noise);
    assert_eq!(verdict("middleware_prepare"), Verdict::New);
    assert_eq!(verdict("middleware_interact"), Verdict::NotRun);
    let mw = rows
        .iter()
        .find(|r| r.key.function == "middleware")
        .unwrap();
    // Judged by its ratio to `rusqlite` (+5% tonight): 1.25 → 1.43, +14.3%; +20% absolute.
    assert_eq!(
        mw.basis,
        nightly::Basis::Ratio(key("sqlite_single_row_lookup", "rusqlite"))
    );
    let c = mw.change.unwrap();
    assert!((c.change - (3.0 / 2.1 / 1.25 - 1.0)).abs() < 1e-9);
    assert!(c.lo > 0.0 && c.hi > c.change);
    assert!((mw.absolute.unwrap().change - 0.20).abs() < 1e-9);
    // A threshold above the change turns the regression into noise.
    let lax = nightly::compare_baselines(
        &fixture("nightly"),
        "nightly-2026-01-01",
        "nightly-2026-01-02",
        0.25,
        &History::new(),
    )
    .unwrap();
    assert!(lax.iter().all(|r| r.verdict != Verdict::Regressed));
    // The page lists the regression first and every id in the table.
    let page = nightly::render(
        &nightly::RunInfo {
            current: "nightly-2026-01-02".into(),
            previous: Some("nightly-2026-01-01".into()),
            threshold: 0.10,
            ..Default::default()
        },
        &rows,
    );
    assert!(page.contains(
        "**Summary:** 1 regressed, 1 improved, 2 noise, 0 environment change, 1 new, 1 not run tonight (6 ids)."
    ), "{page}");
    assert!(page.contains(
        "- `sqlite_single_row_lookup/middleware/1000`: +14.3% in its ratio to `rusqlite` (absolute +20.0%)"
    ), "{page}");
    assert!(page.contains(
        "| `sqlite_single_row_lookup/middleware/1000` | 1000 | 2.50 µs | 3.00 µs | +20.0% | ÷ `rusqlite` (1.250 → 1.429) | +14.3% |"
    ), "{page}");
    assert!(page.contains(
        "| `sqlite_single_row_lookup/rusqlite/1000` | 1000 | 2.00 µs | 2.10 µs | +5.0% | control (raw driver) | +5.0% |"
    ), "{page}");
    assert!(!page.contains("Environment change"), "{page}");
}

#[test]
fn history_and_experiments() {
    let dir = tempdir("history");
    copy_tree(&fixture("nightly"), &dir);
    // The history holds only 2026-01-02's figures: tonight (the same figures) is level with it,
    // so the +20% against 2026-01-01 is not called a regression.
    let history = nightly::load_history(&dir, &["nightly-2026-01-02".to_string()]);
    let rows = nightly::compare_baselines(
        &dir,
        "nightly-2026-01-01",
        "nightly-2026-01-02",
        0.15,
        &history,
    )
    .unwrap();
    assert!(rows.iter().all(|r| r.verdict != Verdict::Regressed));
    let mw = rows
        .iter()
        .find(|r| r.key.function == "middleware")
        .unwrap();
    assert_eq!(mw.change.unwrap().vs_history, Some(0.0));
    // A baseline made with extra features is an experiment: never a reference.
    nightly::record_run(
        &dir,
        "nightly-2026-01-01",
        nightly::RunRecord {
            features: vec!["cfg:sqlmw_bench_slowdown".into()],
            criterion_args: vec![],
            suites: vec![],
            unix: 0,
            machine: None,
        },
    )
    .unwrap();
    assert_eq!(
        nightly::previous_baseline(&dir, "nightly-2026-01-02").unwrap(),
        None
    );
    assert_eq!(
        nightly::reference_candidates(&dir, "nightly-2099-01-01").unwrap(),
        vec!["nightly-2026-01-02".to_string()]
    );
    // Scratch baselines can be removed.
    assert_eq!(nightly::remove_baseline(&dir, "nightly-2026-01-01"), 5);
    assert!(!nightly::baselines(&dir).contains_key("nightly-2026-01-01"));
}

#[test]
fn confirmation_reruns() {
    let home = fixture("nightly");
    let (a, _) = xtask::criterion::load_all(&home, "nightly-2026-01-01");
    let (b, _) = xtask::criterion::load_all(&home, "nightly-2026-01-02");
    let none = History::new();
    let first = nightly::compare(&a, &b, 0.10, &none);
    // A rerun that measures the same figures again confirms both flags.
    let mut rows = first.clone();
    nightly::apply_rerun(&mut rows, &nightly::compare(&a, &b, 0.10, &none), 0.10);
    let v =
        |rows: &[nightly::Row], f: &str| rows.iter().find(|r| r.key.function == f).unwrap().verdict;
    assert_eq!(v(&rows, "middleware"), Verdict::Regressed);
    assert_eq!(v(&rows, "pool_acquire"), Verdict::Improved);
    assert_eq!(
        rows.iter()
            .find(|r| r.key.function == "middleware")
            .unwrap()
            .reruns
            .len(),
        1
    );
    // A rerun back at the old figures (no change) clears them; unflagged ids are untouched.
    let mut rows = first.clone();
    nightly::apply_rerun(&mut rows, &nightly::compare(&a, &a, 0.10, &none), 0.10);
    assert_eq!(v(&rows, "middleware"), Verdict::Noise);
    assert_eq!(v(&rows, "pool_acquire"), Verdict::Noise);
    assert_eq!(v(&rows, "middleware_prepare"), Verdict::New);
    assert!(
        rows.iter()
            .find(|r| r.key.function == "rusqlite")
            .unwrap()
            .reruns
            .is_empty()
    );
    // A rerun that measured nothing keeps the flags.
    let mut rows = first.clone();
    nightly::apply_rerun(&mut rows, &[], 0.10);
    assert_eq!(v(&rows, "middleware"), Verdict::Regressed);
    // Agreement asks for the threshold against the reference and the history, not the intervals.
    let c = nightly::judge(
        xtask::criterion::Interval {
            point: 100.0,
            lo: 90.0,
            hi: 110.0,
        },
        xtask::criterion::Interval {
            point: 114.0,
            lo: 100.0,
            hi: 130.0,
        },
        0.10,
        Some(100.0),
    );
    assert_eq!(c.verdict, Verdict::Noise);
    assert!(nightly::rerun_agrees(&c, Verdict::Regressed, 0.10));
    let c = nightly::judge(
        xtask::criterion::Interval {
            point: 100.0,
            lo: 99.0,
            hi: 101.0,
        },
        xtask::criterion::Interval {
            point: 114.0,
            lo: 113.0,
            hi: 115.0,
        },
        0.10,
        Some(110.0),
    );
    assert!(
        !nightly::rerun_agrees(&c, Verdict::Regressed, 0.10),
        "level with history"
    );
}

#[test]
fn a_missing_baseline_is_an_error() {
    let e = nightly::compare_baselines(
        &fixture("nightly"),
        "nightly-1999-01-01",
        "nightly-2026-01-02",
        0.15,
        &History::new(),
    )
    .expect_err("no such baseline");
    assert!(e.0.contains("nightly-1999-01-01"), "{e}");
}

/// The first comparison of `current` against `previous` in `nightly-env/` at 10%, and its page.
fn evaluate_env(previous: &str, current: &str) -> (nightly::Evaluation, String) {
    let e = nightly::evaluate(
        &fixture("nightly-env"),
        previous,
        current,
        0.10,
        &History::new(),
        None,
    )
    .expect("comparable");
    let page = nightly::render(
        &nightly::RunInfo {
            current: current.into(),
            previous: Some(previous.into()),
            threshold: 0.10,
            environment_change: e.environment.clone(),
            ..Default::default()
        },
        &e.rows,
    );
    (e, page)
}

fn row<'a>(rows: &'a [nightly::Row], group: &str, function: &str) -> &'a nightly::Row {
    rows.iter()
        .find(|r| r.key == key(group, function))
        .unwrap_or_else(|| panic!("{group}/{function}"))
}

const LOOKUP: &str = "sqlite_single_row_lookup";

#[test]
fn another_machine_is_an_environment_change_not_a_regression() {
    let (e, page) = evaluate_env("nightly-2026-02-01", "nightly-2026-02-02");
    let v = |g: &str, f: &str| row(&e.rows, g, f).verdict;
    // Raw +103%, middleware +94%: by the old absolute rule a regression …
    let mw = row(&e.rows, LOOKUP, "middleware");
    assert_eq!(mw.absolute.unwrap().verdict, Verdict::Regressed);
    // … by the ratio to the raw lookup measured tonight (1.25 → 1.19), noise.
    assert_eq!(v(LOOKUP, "middleware"), Verdict::Noise);
    assert!((mw.change.unwrap().change - (4850.0 / 4060.0 / 1.25 - 1.0)).abs() < 1e-9);
    assert_eq!(v(LOOKUP, "middleware_query_one"), Verdict::Noise);
    // The raw controls moved with the machine; an id without a control cannot be told apart.
    assert_eq!(v(LOOKUP, "rusqlite"), Verdict::Environment);
    assert_eq!(v(LOOKUP, "rusqlite_prepare_cached"), Verdict::Environment);
    assert_eq!(v("postgres_connect", "connect_plain"), Verdict::Environment);
    assert_eq!(
        row(&e.rows, "postgres_connect", "connect_plain").basis,
        nightly::Basis::Absolute
    );
    assert!(e.environment.machine_changed());
    assert!(nightly::flagged(&e.rows).is_empty());
    assert!(!nightly::fails(&e.rows, &[]), "exit code 0");
    assert!(nightly::fails(&e.rows, &["suite failed".to_string()]));
    assert!(page.contains(
        "**Summary:** 0 regressed, 0 improved, 2 noise, 3 environment change, 0 new, 0 not run tonight (5 ids)."
    ), "{page}");
    assert!(page.contains(
        "**Environment change:** the reference was measured on Intel(R) Xeon(R) Processor × 2 logical CPUs, Linux 6.1.0, tonight runs on AMD EPYC 7B13 × 2 logical CPUs, Linux 6.8.0; raw controls moved beyond ±10%: `sqlite_single_row_lookup/rusqlite/1000` +103.0%, `sqlite_single_row_lookup/rusqlite_prepare_cached/1000` +100.0%; 2 id(s) moved beyond the threshold in absolute time while their ratio to the control did not; ids are judged by their ratio to the control measured tonight"
    ), "{page}");
    assert!(page.contains("- Machine tonight: AMD EPYC 7B13 × 2 logical CPUs, Linux 6.8.0"));
    assert!(page.contains(
        "- Machine of the reference: Intel(R) Xeon(R) Processor × 2 logical CPUs, Linux 6.1.0"
    ));
    assert!(!page.contains("Regressed:"), "{page}");
}

#[test]
fn a_slower_middleware_on_the_same_machine_regresses_by_its_ratio() {
    let (e, page) = evaluate_env("nightly-2026-03-01", "nightly-2026-03-02");
    let mw = row(&e.rows, LOOKUP, "middleware");
    assert_eq!(mw.verdict, Verdict::Regressed);
    assert_eq!(mw.basis, nightly::Basis::Ratio(key(LOOKUP, "rusqlite")));
    assert!((mw.change.unwrap().change - (3250.0 / 2010.0 / 1.25 - 1.0)).abs() < 1e-9);
    assert_eq!(row(&e.rows, LOOKUP, "rusqlite").verdict, Verdict::Noise);
    assert_eq!(
        row(&e.rows, LOOKUP, "middleware_query_one").verdict,
        Verdict::Noise
    );
    assert!(!e.environment.changed());
    assert!(nightly::fails(&e.rows, &[]), "exit code 1");
    assert!(!page.contains("Environment change"), "{page}");
    assert!(page.contains(
        "- `sqlite_single_row_lookup/middleware/1000`: +29.4% in its ratio to `rusqlite` (absolute +30.0%)"
    ), "{page}");
    assert!(page.contains(
        "- Machine of the reference: the same (Intel(R) Xeon(R) Processor × 2 logical CPUs, Linux 6.1.0)"
    ), "{page}");
    // The confirmation rerun measures the flagged id and its control.
    assert_eq!(
        nightly::flagged(&e.rows),
        vec![&key(LOOKUP, "middleware"), &key(LOOKUP, "rusqlite")]
    );
    let home = fixture("nightly-env");
    let (reference, _) = xtask::criterion::load_all(&home, "nightly-2026-03-01");
    let (tonight, _) = xtask::criterion::load_all(&home, "nightly-2026-03-02");
    // A rerun: both ids of tonight scaled by `mw` and `raw`.
    let rerun = |mw: f64, raw: Option<f64>| {
        let mut m = std::collections::BTreeMap::new();
        for (f, by) in [("middleware", Some(mw)), ("rusqlite", raw)] {
            let (Some(by), Some(x)) = (by, tonight.get(&key(LOOKUP, f))) else {
                continue;
            };
            let mut x = x.clone();
            x.median = x.median.per(1.0 / by);
            m.insert(key(LOOKUP, f), x);
        }
        nightly::compare(&reference, &m, 0.10, &History::new())
    };
    let after = |mw: f64, raw: Option<f64>| {
        let mut rows = e.rows.clone();
        nightly::apply_rerun(&mut rows, &rerun(mw, raw), 0.10);
        let r = row(&rows, LOOKUP, "middleware").clone();
        (r.verdict, r.reruns.len())
    };
    // A rerun process 30% slower throughout: the ratio still shows the regression.
    assert_eq!(after(1.3, Some(1.3)), (Verdict::Regressed, 1));
    // The middleware as slow, but its control as slow too: the ratio is back, noise.
    assert_eq!(after(1.0, Some(1.25)), (Verdict::Noise, 1));
    // A rerun without the control cannot judge the ratio: the verdict stands, unconfirmed.
    assert_eq!(after(1.0, None), (Verdict::Regressed, 0));
}

#[test]
fn raw_and_middleware_moving_together_is_an_environment_change() {
    let (e, page) = evaluate_env("nightly-2026-04-01", "nightly-2026-04-02");
    let mw = row(&e.rows, LOOKUP, "middleware");
    assert_eq!(
        mw.absolute.unwrap().verdict,
        Verdict::Regressed,
        "+25% absolute"
    );
    assert_eq!(mw.verdict, Verdict::Noise);
    assert!(mw.change.unwrap().change.abs() < 1e-9);
    assert_eq!(
        row(&e.rows, LOOKUP, "rusqlite").verdict,
        Verdict::Environment
    );
    assert!(!e.environment.machine_changed());
    assert!(e.environment.changed());
    assert!(!nightly::fails(&e.rows, &[]), "exit code 0");
    assert!(page.contains(
        "**Environment change:** the reference was measured on the same machine (Intel(R) Xeon(R) Processor × 2 logical CPUs, Linux 6.1.0); raw controls moved beyond ±10%: `sqlite_single_row_lookup/rusqlite/1000` +25.0%; 1 id(s) moved beyond the threshold in absolute time while their ratio to the control did not;"
    ), "{page}");
    assert!(page.contains(
        "**Summary:** 0 regressed, 0 improved, 1 noise, 1 environment change, 0 new, 0 not run tonight (2 ids)."
    ), "{page}");
}

#[test]
fn the_deliberate_slowdown_is_still_caught() {
    let (e, page) = evaluate_env("nightly-2026-03-01", "nightly-2026-03-03-slowdown");
    let mw = row(&e.rows, LOOKUP, "middleware");
    assert_eq!(mw.verdict, Verdict::Regressed);
    assert!((mw.change.unwrap().change - (3000.0 / 2020.0 / 1.25 - 1.0)).abs() < 1e-9);
    for f in [
        "rusqlite",
        "rusqlite_prepare_cached",
        "middleware_query_one",
    ] {
        assert_eq!(row(&e.rows, LOOKUP, f).verdict, Verdict::Noise, "{f}");
    }
    assert!(nightly::fails(&e.rows, &[]));
    assert!(page.contains("**Summary:** 1 regressed, 0 improved, 3 noise, 0 environment change"));
    // The slowdown run is an experiment, never a reference.
    let candidates =
        nightly::reference_candidates(&fixture("nightly-env"), "nightly-2099-01-01").unwrap();
    assert!(
        !candidates.iter().any(|c| c.contains("slowdown")),
        "{candidates:?}"
    );
    assert_eq!(candidates.len(), 6);
}

#[test]
fn run_records_without_a_machine_still_load() {
    let home = fixture("nightly-env");
    let runs = nightly::load_runs(&home).expect("loads");
    let old = &runs.runs["nightly-2026-01-15"];
    assert!(old.machine.is_none());
    assert_eq!(old.suites, vec!["sqlite-lookup".to_string()]);
    assert_eq!(nightly::machine_of(&runs, "nightly-2026-01-15"), None);
    assert_eq!(
        nightly::machine_of(&runs, "nightly-2026-02-02").map(|m| m.cpu),
        Some("AMD EPYC 7B13".to_string())
    );
    // Writing a new record keeps the old one and adds the machine to the new one only.
    let dir = tempdir("records");
    std::fs::copy(
        home.join("nightly-runs.json"),
        dir.join("nightly-runs.json"),
    )
    .unwrap();
    let machine = xtask::environment::Machine {
        cpu: "Test CPU".into(),
        cores: 4,
        kernel: None,
    };
    nightly::record_run(
        &dir,
        "nightly-2026-05-01",
        nightly::RunRecord {
            features: vec![],
            criterion_args: vec![],
            suites: vec![],
            unix: 1,
            machine: Some(machine.clone()),
        },
    )
    .unwrap();
    let runs = nightly::load_runs(&dir).unwrap();
    assert_eq!(
        nightly::machine_of(&runs, "nightly-2026-05-01"),
        Some(machine)
    );
    assert_eq!(nightly::machine_of(&runs, "nightly-2026-01-15"), None);
    // A home without any record (the `nightly/` fixture): the reference's machine is unknown.
    let e = nightly::evaluate(
        &fixture("nightly"),
        "nightly-2026-01-01",
        "nightly-2026-01-02",
        0.10,
        &History::new(),
        None,
    )
    .unwrap();
    assert!(e.environment.reference.is_none() && !e.environment.changed());
    let page = nightly::render(
        &nightly::RunInfo {
            current: "nightly-2026-01-02".into(),
            previous: Some("nightly-2026-01-01".into()),
            threshold: 0.10,
            environment_change: e.environment.clone(),
            ..Default::default()
        },
        &e.rows,
    );
    assert!(
        page.contains("- Machine of the reference: not recorded"),
        "{page}"
    );
}

fn key(group: &str, function: &str) -> xtask::criterion::IdKey {
    xtask::criterion::IdKey {
        group: group.into(),
        function: function.into(),
        param: "1000".into(),
    }
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xtask-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}
