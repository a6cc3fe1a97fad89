//! Reliability 10: the fuzz harnesses on stable Rust, and column lookup by name.
//!
//! - The functions the `cargo fuzz` targets call (`tests/common/fuzz_harness.rs`, shared with
//!   `fuzz/fuzz_targets/*.rs`) run here under proptest with a fixed seed, so CI exercises them
//!   without nightly. Run the real fuzzers with the commands in `reports/Reliability.md`.
//! - Random column names in random orders: a row's `get(name)` always returns its own result's
//!   column, on every backend, also when two result sets with the same names in other orders
//!   come from the same connection (statement cache, prepared statements).

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use sql_middleware::prelude::*;

use crate::common;
use crate::common::backends::TestDb;
use crate::common::fuzz_harness;
use crate::common::reliability::{knob_usize, seed_for};

fn config(name: &str, cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed_for(name)),
        source_file: Some(file!()),
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "proptest-regressions/reliability_props.txt",
            ),
        )),
        ..Config::default()
    }
}

/// Bytes that look like SQL around placeholders more often than uniform bytes would.
fn sqlish() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => "[ -~]{0,4}".prop_map(String::into_bytes),
        2 => (0..40u32).prop_map(|n| format!("${n}").into_bytes()),
        2 => (0..40u32).prop_map(|n| format!("?{n}").into_bytes()),
        1 => Just(b"$$".to_vec()),
        1 => Just(b"$tag$".to_vec()),
        1 => Just(b"'".to_vec()),
        1 => Just(b"E'".to_vec()),
        1 => Just(b"\\".to_vec()),
        1 => Just(b"\"".to_vec()),
        1 => Just(b"`".to_vec()),
        1 => Just(b"[".to_vec()),
        1 => Just(b"]".to_vec()),
        1 => Just(b"--".to_vec()),
        1 => Just(b"\n".to_vec()),
        1 => Just(b"/*".to_vec()),
        1 => Just(b"*/".to_vec()),
        1 => Just("é€".as_bytes().to_vec()),
        1 => any::<u8>().prop_map(|b| vec![b]),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}

#[test]
fn fuzz_harness_placeholder_translation() {
    let _group = common::groups::enter("props");
    let cases = knob_usize("RELIABILITY_PROP_CASES", 4000) as u32;
    let mut runner = TestRunner::new(config("props/translation", cases));
    let strategy = prop_oneof![sqlish(), prop::collection::vec(any::<u8>(), 0..128)];
    let r = runner.run(&strategy, |data| {
        fuzz_harness::translation_case(&data);
        Ok(())
    });
    println!(
        "fuzz_harness_translation cases={cases} result={}",
        if r.is_ok() { "ok" } else { "FAILED" }
    );
    r.unwrap();
}

#[test]
fn fuzz_harness_value_conversion_pure() {
    let _group = common::groups::enter("props");
    let cases = knob_usize("RELIABILITY_PROP_CASES", 4000) as u32;
    let mut runner = TestRunner::new(config("props/value_pure", cases));
    let r = runner.run(&prop::collection::vec(any::<u8>(), 0..96), |data| {
        fuzz_harness::value_case_pure(&data);
        Ok(())
    });
    println!(
        "fuzz_harness_value_pure cases={cases} result={}",
        if r.is_ok() { "ok" } else { "FAILED" }
    );
    r.unwrap();
}

#[cfg(feature = "sqlite")]
#[test]
fn fuzz_harness_value_conversion_sqlite_round_trip() {
    let _group = common::groups::enter("props");
    let cases = (knob_usize("RELIABILITY_PROP_CASES", 4000) / 4) as u32;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let db = rt.block_on(async {
        let db = ConfigAndPool::sqlite_memory()
            .max_size(1)
            .build()
            .await
            .expect("pool");
        let mut c = db.get_connection().await.expect("conn");
        c.execute_batch(fuzz_harness::VALUE_TABLE)
            .await
            .expect("table");
        db
    });
    let conn = std::cell::RefCell::new(rt.block_on(db.get_connection()).expect("conn"));
    let key = std::cell::Cell::new(0_i64);
    let mut runner = TestRunner::new(config("props/value_sqlite", cases));
    let r = runner.run(&prop::collection::vec(any::<u8>(), 0..96), |data| {
        key.set(key.get() + 1);
        let mut c = conn.borrow_mut();
        rt.block_on(fuzz_harness::value_case_sqlite(&mut c, key.get(), &data))
            .map_err(TestCaseError::fail)
    });
    println!(
        "fuzz_harness_value_sqlite cases={cases} result={}",
        if r.is_ok() { "ok" } else { "FAILED" }
    );
    r.unwrap();
}

// ---- column lookup by name -------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Shape {
    names: Vec<String>,
    /// A permutation of the column indexes for the second query.
    order: Vec<usize>,
}

fn shape() -> impl Strategy<Value = Shape> {
    prop::collection::btree_set("[a-zA-Z_][a-zA-Z0-9_ ]{0,10}", 1..7)
        .prop_map(|set: BTreeSet<String>| set.into_iter().collect::<Vec<_>>())
        .prop_flat_map(|names| {
            let n = names.len();
            (Just(names), Just((0..n).collect::<Vec<_>>()).prop_shuffle())
        })
        .prop_map(|(names, order)| Shape { names, order })
}

fn select_sql(names: &[String], order: &[usize], base: i64) -> String {
    let cols: Vec<String> = order
        .iter()
        .map(|&i| format!("{} AS \"{}\"", base + i as i64, names[i]))
        .collect();
    format!("SELECT {}", cols.join(", "))
}

async fn check_shape(conn: &mut MiddlewarePoolConnection, s: &Shape) -> Result<(), String> {
    let natural: Vec<usize> = (0..s.names.len()).collect();
    let q1 = select_sql(&s.names, &natural, 100);
    let q2 = select_sql(&s.names, &s.order, 200);
    let check = |rs: &ResultSet, base: i64, what: &str| -> Result<(), String> {
        let row = rs.results.first().ok_or(format!("{what}: no row"))?;
        for (i, name) in s.names.iter().enumerate() {
            let want = RowValues::Int(base + i as i64);
            match row.get(name) {
                Some(v) if *v == want => {}
                other => {
                    return Err(format!(
                        "{what}: get({name:?}) gave {other:?}, expected {want:?} (columns {:?})",
                        row.column_names().collect::<Vec<_>>()
                    ));
                }
            }
            match row.try_get::<i64>(name.as_str()) {
                Ok(v) if v == base + i as i64 => {}
                other => return Err(format!("{what}: try_get({name:?}) gave {other:?}")),
            }
        }
        Ok(())
    };
    let a = conn
        .query(&q1)
        .select()
        .await
        .map_err(|e| format!("{q1}: {e}"))?;
    let b = conn
        .query(&q2)
        .select()
        .await
        .map_err(|e| format!("{q2}: {e}"))?;
    let c = conn
        .query(&q1)
        .select()
        .await
        .map_err(|e| format!("{q1}: {e}"))?;
    check(&a, 100, "first query")?;
    check(&b, 200, "second query (other order)")?;
    check(&c, 100, "first query again")?;
    // Rows from both result sets side by side still answer for their own columns.
    check(&a, 100, "first result after the second")?;
    let mut p = conn
        .prepare(&q2)
        .await
        .map_err(|e| format!("prepare: {e}"))?;
    let d = p.select(&[]).await.map_err(|e| format!("prepared: {e}"))?;
    check(&d, 200, "prepared second query")?;
    Ok(())
}

fn run_columns(db: &TestDb, handle: &tokio::runtime::Handle) {
    let cases = knob_usize("RELIABILITY_COLUMN_CASES", 48) as u32;
    let mut runner = TestRunner::new(config(&format!("props/columns/{}", db.kind.name()), cases));
    let conn = std::cell::RefCell::new(handle.block_on(db.db.get_connection()).expect("conn"));
    let r = runner.run(&shape(), |s| {
        let mut c = conn.borrow_mut();
        handle
            .block_on(check_shape(&mut c, &s))
            .map_err(TestCaseError::fail)
    });
    println!(
        "columns_by_name backend={} cases={cases} result={}",
        db.kind.name(),
        if r.is_ok() { "ok" } else { "FAILED" }
    );
    r.unwrap();
}

#[cfg(feature = "sqlite")]
#[test]
fn get_by_name_returns_its_own_column_sqlite() {
    let _group = common::groups::enter("props");
    let rt = common::reliability::runtime();
    let db = rt.block_on(common::engines::sqlite::test_db());
    run_columns(&db, rt.handle());
}

#[cfg(feature = "turso")]
#[test]
fn get_by_name_returns_its_own_column_turso() {
    let _group = common::groups::enter("props");
    let rt = common::reliability::runtime();
    let db = rt.block_on(common::engines::turso::test_db());
    run_columns(&db, rt.handle());
}

#[cfg(feature = "postgres")]
#[test]
fn get_by_name_returns_its_own_column_postgres() {
    let _group = common::groups::enter("props");
    let rt = common::reliability::runtime();
    rt.block_on(common::pg::with_schema(|url| async move {
        let db = common::engines::postgres::test_db(&url).await;
        let handle = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || run_columns(&db, &handle))
            .await
            .expect("columns thread");
    }));
}

/// Bytes for the configuration cases: mostly a few choices of head, keys and values (see
/// `fuzz_harness::config_url`), sometimes anything.
fn config_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 0..16),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

#[test]
fn fuzz_harness_config() {
    let _group = common::groups::enter("props");
    let cases = (knob_usize("RELIABILITY_PROP_CASES", 4000) / 2) as u32;
    let mut runner = TestRunner::new(config("props/config", cases));
    let r = runner.run(&config_bytes(), |data| {
        fuzz_harness::config_case(&data);
        Ok(())
    });
    println!(
        "fuzz_harness_config cases={cases} result={}",
        if r.is_ok() { "ok" } else { "FAILED" }
    );
    r.unwrap();
}

/// `from_env` reads `DATABASE_URL`, and a test must not change the environment of a process
/// whose other threads read it: each case runs this test again in a child process with its own
/// `DATABASE_URL` (a URL from `fuzz_harness::config_url`, or none), where it checks that one.
#[test]
fn fuzz_harness_config_from_env() {
    if std::env::var_os("SQLMW_FROM_ENV_CASE").is_some() {
        fuzz_harness::env_case();
        return;
    }
    let _group = common::groups::enter("props");
    let cases = (knob_usize("RELIABILITY_PROP_CASES", 4000) / 160).max(4);
    let exe = std::env::current_exe().expect("test binary");
    let mut rng = common::reliability::Rng::new(seed_for("props/config_from_env"));
    let mut failed = Vec::new();
    for i in 0..cases {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args([
            "--exact",
            "props::fuzz_harness_config_from_env",
            "--test-threads=1",
            "--nocapture",
        ])
        .env("SQLMW_FROM_ENV_CASE", "1");
        let url = if i == 0 {
            cmd.env_remove("DATABASE_URL");
            None
        } else {
            let len = 2 + rng.below(14) as usize;
            let data: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
            let url = fuzz_harness::config_url(&data).replace('\0', "");
            cmd.env("DATABASE_URL", &url);
            Some(url)
        };
        let out = cmd.output().expect("run the test binary");
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !text.contains("1 passed") {
            failed.push(format!(
                "{url:?}: {}{}",
                text,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    println!(
        "fuzz_harness_config_from_env cases={cases} failed={}",
        failed.len()
    );
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
