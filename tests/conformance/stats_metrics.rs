//! The live statistics exported through the `metrics` facade (feature `metrics`), checked with
//! a recording backend, on every backend.

use crate::backend_tests;
use crate::common::backends::TestDb;

/// The snapshot, exported through the `metrics` facade, carries the same numbers.
async fn t_stats_export_through_metrics(db: &TestDb) {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    let k = db.kind.name();
    let pool = db.builder().max_size(3).build().await.unwrap();
    {
        let mut c = pool.get_connection().await.unwrap();
        let _: (i64,) = c.query("SELECT 1").one().await.unwrap();
        let _: (i64,) = c.query("SELECT 1").one().await.unwrap();
    }
    let s = pool.stats();
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || s.export_metrics("main"));
    let got = snapshotter.snapshot().into_vec();
    let find = |name: &str, label: Option<(&str, &str)>| {
        got.iter()
            .find(|(key, _, _, _)| {
                let key = key.key();
                key.name() == name
                    && key
                        .labels()
                        .any(|l| l.key() == "pool" && l.value() == "main")
                    && label
                        .is_none_or(|(k, v)| key.labels().any(|l| l.key() == k && l.value() == v))
            })
            .map(|(_, _, _, v)| match v {
                DebugValue::Counter(c) => *c as f64,
                DebugValue::Gauge(g) => g.into_inner(),
                other => panic!("[{k}] {name} is a histogram: {other:?}"),
            })
            .unwrap_or_else(|| panic!("[{k}] no series {name} {label:?}"))
    };
    assert_eq!(find("sql_middleware.pool.size", None), s.size as f64);
    assert_eq!(find("sql_middleware.pool.checkouts", None), 1.0);
    assert_eq!(
        find("sql_middleware.statement_cache.hits", None),
        s.statement_cache.hits as f64
    );
    assert!(s.statement_cache.hits >= 1, "[{k}] {s:?}");
    assert_eq!(
        find(
            "sql_middleware.pool.checkout_wait_bucket",
            Some(("le", "+Inf"))
        ),
        s.checkout_wait.buckets[7] as f64
    );
    assert_eq!(
        find("sql_middleware.sqlite.calls", Some(("how", "inline"))),
        s.sqlite.inline as f64
    );
}

backend_tests! {
    async fn stats_export_through_metrics(db) { t_stats_export_through_metrics(&db).await }
}
