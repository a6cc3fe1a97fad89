//! The committed reference figures: `save_reference` copies each id's latest run to its
//! `reference/` folder, and a group with no run falls back to them.

use std::path::{Path, PathBuf};

use xtask::criterion::{REFERENCE, save_reference, scan_group, scan_group_latest};

const GROUP: &str = "sqlite_single_row_lookup";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report")
}

/// Copies the fixture group's `new/` folders into a fresh temporary CRITERION_HOME.
fn home_with_runs(name: &str) -> PathBuf {
    let home = std::env::temp_dir().join(format!("xtask-reference-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let src = fixture().join(GROUP);
    for f in std::fs::read_dir(&src).unwrap().flatten() {
        for p in std::fs::read_dir(f.path()).unwrap().flatten() {
            let new = p.path().join("new");
            if !new.is_dir() {
                continue;
            }
            let to = home
                .join(GROUP)
                .join(f.file_name())
                .join(p.file_name())
                .join("new");
            std::fs::create_dir_all(&to).unwrap();
            for file in std::fs::read_dir(&new).unwrap().flatten() {
                std::fs::copy(file.path(), to.join(file.file_name())).unwrap();
            }
        }
    }
    home
}

#[test]
fn saved_reference_figures_are_what_a_fresh_clone_reads() {
    let home = home_with_runs("fresh");
    let runs = scan_group(&home, GROUP, "new");
    assert!(!runs.is_empty(), "the fixture has runs");
    assert!(scan_group(&home, GROUP, REFERENCE).is_empty());

    let copied = save_reference(&home).unwrap();
    let ids: usize = runs.functions.values().map(|p| p.len()).sum();
    assert_eq!(copied, ids, "one reference per id with a run");

    // A fresh clone: the run folders are git-ignored, only reference/ is there.
    for f in std::fs::read_dir(home.join(GROUP)).unwrap().flatten() {
        for p in std::fs::read_dir(f.path()).unwrap().flatten() {
            std::fs::remove_dir_all(p.path().join("new")).unwrap();
        }
    }
    let latest = scan_group_latest(&home, GROUP);
    assert_eq!(
        latest.functions.keys().collect::<Vec<_>>(),
        runs.functions.keys().collect::<Vec<_>>()
    );
    for (function, params) in &runs.functions {
        for (param, m) in params {
            let before = m.as_ref().unwrap().per_op().point;
            let after = latest.functions[function][param]
                .as_ref()
                .unwrap()
                .per_op()
                .point;
            assert_eq!(before, after, "{function}/{param}");
        }
    }
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn a_group_with_a_run_is_read_from_the_run_not_the_reference() {
    let home = home_with_runs("run");
    save_reference(&home).unwrap();
    // The reference now differs from the run: the run wins.
    let id = home.join(GROUP).join("rusqlite").join("1000");
    let est = id.join(REFERENCE).join("estimates.json");
    let text = std::fs::read_to_string(&est).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["median"]["point_estimate"] = serde_json::json!(1.0);
    std::fs::write(&est, v.to_string()).unwrap();
    let latest = scan_group_latest(&home, GROUP);
    let run = scan_group(&home, GROUP, "new");
    assert_eq!(
        latest.functions["rusqlite"]["1000"]
            .as_ref()
            .unwrap()
            .per_op()
            .point,
        run.functions["rusqlite"]["1000"]
            .as_ref()
            .unwrap()
            .per_op()
            .point
    );
    std::fs::remove_dir_all(&home).unwrap();
}
