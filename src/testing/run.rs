//! [`run_test`]: what `#[sql_middleware::test]` expands to. It builds the test's database, runs
//! the test with its pool, catches a panic, drops the database (or keeps it, when asked, if the
//! test failed) and then lets the failure through.

use std::future::Future;
use std::panic::{AssertUnwindSafe, resume_unwind};

use futures_util::FutureExt;

use super::TestDatabaseBuilder;
use crate::config::ConfigAndPool;

/// What a test function may return: `()`, or a `Result` whose error fails the test.
#[diagnostic::on_unimplemented(
    message = "a #[sql_middleware::test] function returns `()` or `Result<(), E>`, not `{Self}`",
    label = "this test's function returns `{Self}`"
)]
pub trait TestResult {
    /// The failure this outcome describes, if any.
    fn failure(&self) -> Option<String>;
}

impl TestResult for () {
    fn failure(&self) -> Option<String> {
        None
    }
}

impl<E: std::fmt::Debug> TestResult for Result<(), E> {
    fn failure(&self) -> Option<String> {
        self.as_ref()
            .err()
            .map(|e| format!("the test returned an error: {e:?}"))
    }
}

/// Runs `test` on a current-thread runtime with the pool of a fresh database made by `builder`,
/// then drops the database, whether the test passed, panicked or returned an error; a failed
/// test's database is kept instead when [`TestDatabaseBuilder::keep_on_failure`] (or the
/// `SQL_MIDDLEWARE_TEST_KEEP` variable) asks, and its name printed.
///
/// A failure of the test (a panic, or an `Err`) is raised again once the database is gone, so
/// the test harness reports it as usual; a database that cannot be made or dropped fails the
/// test too. This is what `#[sql_middleware::test]` calls; it is public for harnesses of their
/// own.
///
/// ```
/// use sql_middleware::testing::{TestDatabase, run_test};
///
/// run_test(TestDatabase::builder().url("sqlite::memory:"), |db| async move {
///     let mut conn = db.get_connection().await.unwrap();
///     conn.execute_batch("CREATE TABLE t (x INTEGER)").await.unwrap();
/// });
/// ```
///
/// # Panics
///
/// When the test fails, and when the database cannot be made or dropped: that is how a test
/// fails.
pub fn run_test<F, Fut>(builder: TestDatabaseBuilder, test: F)
where
    F: FnOnce(ConfigAndPool) -> Fut,
    Fut: Future,
    Fut::Output: TestResult,
{
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("cannot start the test's runtime: {e}"),
    };
    runtime.block_on(async move {
        let db = match builder.build().await {
            Ok(db) => db,
            Err(e) => panic!("cannot create the test database: {e}"),
        };
        let outcome = AssertUnwindSafe(test(db.pool().clone()))
            .catch_unwind()
            .await;
        let failure = match &outcome {
            Ok(out) => out.failure(),
            Err(_) => None,
        };
        let closed = db.finish(outcome.is_err() || failure.is_some()).await;
        if let Err(panic) = outcome {
            if let Err(e) = &closed {
                eprintln!("sql-middleware: cannot drop the failed test's database: {e}");
            }
            resume_unwind(panic);
        }
        if let Some(f) = failure {
            panic!("{f}");
        }
        if let Err(e) = closed {
            panic!("cannot drop the test database: {e}");
        }
    });
}
