//! `TestDatabase` and `run_test` on each engine (one module per engine, the same tests).

macro_rules! api_tests {
    ($($module:ident => $engine:expr;)*) => {$(
        mod $module {
            use std::panic::{AssertUnwindSafe, catch_unwind};
            use std::sync::{Arc, Mutex};
            use std::time::Instant;

            use sql_middleware::prelude::*;
            use sql_middleware::testing::{TestDatabase, run_test};

            use crate::support::{self, Engine};

            const ENGINE: Engine = $engine;

            /// Panics with `message` (a function returning `()`, so a test body ending in it
            /// is a `()` future).
            fn fail(message: &'static str) {
                std::panic::panic_any(message);
            }

            async fn count(db: &ConfigAndPool, table: &str) -> i64 {
                let mut conn = db.get_connection().await.unwrap();
                let sql = format!("SELECT COUNT(*) FROM {table}");
                let (n,): (i64,) = conn.query(&sql).one().await.unwrap();
                n
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn fresh_migrated_isolated_and_dropped() {
                let a = support::builder(ENGINE).build().await.unwrap();
                let b = support::builder(ENGINE).build().await.unwrap();
                assert_ne!(a.name(), b.name());
                // Both migrated, both with the fixture's rows; a write to one is not in the other.
                assert_eq!(count(a.pool(), "items").await, 3);
                assert_eq!(count(a.pool(), "tags").await, 0);
                let mut conn = a.pool().get_connection().await.unwrap();
                conn.execute_batch("INSERT INTO items (id, label) VALUES (4, 'four')").await.unwrap();
                drop(conn);
                assert_eq!(count(a.pool(), "items").await, 4);
                assert_eq!(count(b.pool(), "items").await, 3);
                let (la, lb) = (
                    support::location_of(ENGINE, a.pool()).await,
                    support::location_of(ENGINE, b.pool()).await,
                );
                assert!(la.ends_with(&a.location()) || la == a.location(), "{la} {}", a.location());
                assert!(support::exists(ENGINE, &la).await);
                a.close().await.unwrap();
                assert!(!support::exists(ENGINE, &la).await, "closed: {la} is gone");
                assert!(support::exists(ENGINE, &lb).await, "the other one stays");
                // Dropped without close: removed all the same.
                drop(b);
                assert!(!support::exists(ENGINE, &lb).await, "dropped: {lb} is gone");
            }

            #[tokio::test]
            async fn without_migrations_the_database_is_empty() {
                let db = TestDatabase::builder().url(support::url(ENGINE)).build().await.unwrap();
                let mut conn = db.pool().get_connection().await.unwrap();
                assert!(conn.query("SELECT COUNT(*) FROM items").select().await.is_err());
                drop(conn);
                db.close().await.unwrap();
            }

            #[tokio::test]
            async fn a_failing_fixture_fails_the_build_and_leaves_nothing() {
                let err = support::builder(ENGINE)
                    .fixture("broken.sql", "INSERT INTO no_such_table VALUES (1)")
                    .build()
                    .await
                    .unwrap_err();
                assert!(err.to_string().contains("broken.sql"), "{err}");
                assert_eq!(err.kind(), ErrorKind::Config);
            }

            /// A panicking test: the panic reaches the harness with its message, and the
            /// database is gone.
            #[test]
            fn a_panic_drops_the_database_and_is_raised_again() {
                let seen = Arc::new(Mutex::new(String::new()));
                let s = Arc::clone(&seen);
                let caught = catch_unwind(AssertUnwindSafe(|| {
                    run_test(support::builder(ENGINE).keep_on_failure(false), |db| async move {
                        *s.lock().unwrap() = support::location_of(ENGINE, &db).await;
                        fail("boom in the test");
                    })
                }))
                .unwrap_err();
                assert_eq!(caught.downcast_ref::<&str>(), Some(&"boom in the test"));
                let location = seen.lock().unwrap().clone();
                assert!(!location.is_empty());
                let rt = tokio::runtime::Runtime::new().unwrap();
                assert!(!rt.block_on(support::exists(ENGINE, &location)), "{location} is gone");
            }

            /// A test returning `Err` fails, and its database is gone; one returning `Ok`
            /// passes.
            #[test]
            fn an_error_fails_the_test() {
                run_test(support::builder(ENGINE), |db| async move {
                    assert_eq!(count(&db, "items").await, 3);
                    Ok::<(), String>(())
                });
                let caught = catch_unwind(|| {
                    run_test(support::builder(ENGINE), |_db| async move {
                        Err::<(), _>("no good")
                    })
                })
                .unwrap_err();
                let message = caught.downcast_ref::<String>().unwrap();
                assert!(message.contains("no good"), "{message}");
            }

            /// With keep-on-failure, a failed test's database stays, marked kept: no orphan
            /// sweep removes it, even once its process is gone.
            #[test]
            fn a_failed_test_keeps_its_database_when_asked() {
                let seen = Arc::new(Mutex::new(String::new()));
                let s = Arc::clone(&seen);
                let _ = catch_unwind(AssertUnwindSafe(|| {
                    run_test(support::builder(ENGINE).keep_on_failure(true), |db| async move {
                        *s.lock().unwrap() = support::location_of(ENGINE, &db).await;
                        fail("fails on purpose");
                    })
                }))
                .unwrap_err();
                let location = seen.lock().unwrap().clone();
                let rt = tokio::runtime::Runtime::new().unwrap();
                rt.block_on(async {
                    assert!(support::exists(ENGINE, &location).await, "{location} was kept");
                    let removed = TestDatabase::remove_orphans(&support::url(ENGINE)).await.unwrap();
                    assert!(!removed.iter().any(|n| location.contains(n.as_str())), "{removed:?}");
                    assert!(support::exists(ENGINE, &location).await);
                    support::remove(ENGINE, &location).await;
                });
                // A passing test's database goes even with keep-on-failure.
                let s = Arc::clone(&seen);
                run_test(support::builder(ENGINE).keep_on_failure(true), |db| async move {
                    *s.lock().unwrap() = support::location_of(ENGINE, &db).await;
                });
                let location = seen.lock().unwrap().clone();
                assert!(!rt.block_on(support::exists(ENGINE, &location)));
            }

            /// A `TestDatabase` dropped while its thread unwinds counts as failed.
            #[test]
            fn a_database_dropped_in_a_panic_is_kept_when_asked() {
                let rt = tokio::runtime::Runtime::new().unwrap();
                let db = rt.block_on(support::builder(ENGINE).keep_on_failure(true).build()).unwrap();
                let location = rt.block_on(support::location_of(ENGINE, db.pool()));
                let _ = catch_unwind(AssertUnwindSafe(move || {
                    let _owned = db;
                    panic!("unwinding");
                }));
                assert!(rt.block_on(support::exists(ENGINE, &location)));
                rt.block_on(support::remove(ENGINE, &location));
            }

            /// A database whose process of this machine is gone is removed by the next sweep;
            /// one whose process lives stays.
            #[tokio::test]
            async fn orphans_are_removed_and_live_ones_stay() {
                let db = TestDatabase::builder().url(support::url(ENGINE)).build().await.unwrap();
                let machine = support::machine_of(db.name());
                // Process ids above the kernel's limit (4194304) never run; pid 1 always does.
                let dead = format!("sqlmw_t_{machine}_4194400_{:06x}_0", std::process::id() & 0xff_ffff);
                let live = format!("sqlmw_t_{machine}_1_{:06x}_0", std::process::id() & 0xff_ffff);
                let dead_at = support::create_named(ENGINE, &dead).await;
                let live_at = support::create_named(ENGINE, &live).await;
                let removed = TestDatabase::remove_orphans(&support::url(ENGINE)).await.unwrap();
                // Another test process's first sweep may have removed it already (nextest).
                assert!(removed.contains(&dead) || !support::exists(ENGINE, &dead_at).await, "{removed:?}");
                assert!(!removed.contains(&live), "{removed:?}");
                assert!(!removed.iter().any(|n| n == db.name()), "this process's own stay");
                assert!(!support::exists(ENGINE, &dead_at).await);
                assert!(support::exists(ENGINE, &live_at).await);
                support::remove(ENGINE, &live_at).await;
                db.close().await.unwrap();
            }

            /// A real orphan: a child process makes a database and exits without cleaning up;
            /// the parent's sweep removes it.
            #[tokio::test]
            async fn a_killed_process_leaves_an_orphan_that_a_later_run_removes() {
                let out = std::process::Command::new(std::env::current_exe().unwrap())
                    .args([concat!("api::", stringify!($module), "::child_exits_without_cleanup"), "--exact", "--ignored", "--nocapture", "--test-threads=1"])
                    .env("SQLMW_TESTING_CHILD", "1")
                    .output()
                    .unwrap();
                let stdout = String::from_utf8_lossy(&out.stdout);
                let name = stdout
                    .lines()
                    .find_map(|l| l.split("child-database=").nth(1))
                    .unwrap_or_else(|| panic!("child said: {stdout} {}", String::from_utf8_lossy(&out.stderr)))
                    .trim()
                    .to_owned();
                let location = if matches!(ENGINE, Engine::Sqlite | Engine::Turso) {
                    std::env::temp_dir().join("sql-middleware-tests").join(format!("{name}.db")).display().to_string()
                } else {
                    name.clone()
                };
                // Under nextest, another test's process may sweep it first: it starts by removing
                // the orphans of its server.
                if std::env::var_os("NEXTEST_RUN_ID").is_none() {
                    assert!(support::exists(ENGINE, &location).await, "the child left {location}");
                }
                let removed = TestDatabase::remove_orphans(&support::url(ENGINE)).await.unwrap();
                // Another test process's first sweep may have removed it already (nextest).
                assert!(removed.contains(&name) || !support::exists(ENGINE, &location).await, "{removed:?}");
                assert!(!support::exists(ENGINE, &location).await);
            }

            /// The child of the test above (run only by it).
            #[tokio::test]
            #[ignore = "run by a_killed_process_leaves_an_orphan_that_a_later_run_removes"]
            async fn child_exits_without_cleanup() {
                assert_eq!(std::env::var("SQLMW_TESTING_CHILD").as_deref(), Ok("1"));
                let db = support::builder(ENGINE).build().await.unwrap();
                println!("child-database={}", db.name());
                std::process::exit(0);
            }

            /// Setup times, as `key=value` lines (`--nocapture` shows them).
            #[tokio::test]
            async fn setup_times() {
                let engine = format!("{ENGINE:?}").to_lowercase();
                // The first build may make the Postgres template: time the ones after it.
                support::builder(ENGINE).build().await.unwrap().close().await.unwrap();
                for (what, migrated) in [("bare", false), ("migrated", true)] {
                    let mut times = Vec::new();
                    let runs = 9;
                    for _ in 0..runs {
                        let started = Instant::now();
                        let b = if migrated { support::builder(ENGINE) } else { TestDatabase::builder().url(support::url(ENGINE)) };
                        let db = b.build().await.unwrap();
                        times.push(started.elapsed());
                        assert!(db.setup_time() <= started.elapsed());
                        db.close().await.unwrap();
                    }
                    let (median, p90) = crate::timing::median_p90(&mut times);
                    println!("setup_ms_{engine}_{what} median={median:.1} p90={p90:.1} runs={runs}");
                }
            }
        }
    )*};
}

api_tests! {
    postgres => Engine::Postgres;
    mysql => Engine::Mysql;
    sqlite => Engine::Sqlite;
    turso => Engine::Turso;
}
