//! Reliability 19: a ledger of transfers under contention, through the retrying transaction.
//! Concurrent workers move money between a few accounts with `pool.transaction(&policy, …)`,
//! each transfer reading both balances, writing the values computed from them and recording
//! its unique id in the same transaction (`tests/common/transfers.rs`):
//!
//! - every transfer acknowledged `Ok` is applied exactly once, and no transfer that failed is
//!   applied (one of unknown outcome is counted, and may be either);
//! - the total is conserved, and every balance is its start plus what the committed transfers
//!   say, so no retry reused a value read in a failed attempt;
//! - conflicts really happen and are retried (`attempts_per_commit` above 1), within a sane
//!   bound, and the p99 latency of a transfer stays bounded.
//!
//! Postgres runs at `SERIALIZABLE` (conflicts fail with `40001` at a statement or at
//! `COMMIT`); SQLite and Turso run many writers on one WAL database with a short busy timeout
//! (a writer that waited too long for the write lock fails with `Busy` at `BEGIN`).

use std::time::Duration;

use sql_middleware::RetryPolicy;
use sql_middleware::prelude::*;

use crate::common::backends::{Kind, TestDb};
use crate::common::groups;
use crate::common::reliability::{ms, seed_for};
use crate::common::transfers::{Load, Report, assert_invariants, run};

fn load(test: &str, workers: usize, per_worker: usize, prelude: Option<&'static str>) -> Load {
    Load {
        accounts: 8,
        workers,
        transfers_per_worker: per_worker,
        policy: RetryPolicy::new()
            .max_attempts(50)
            .backoff(Duration::from_millis(1), Duration::from_millis(40))
            .deadline(Duration::from_secs(10)),
        prelude,
        seed: seed_for(test),
    }
}

/// Runs the ledger on `pool` and prints and checks its figures.
async fn ledger(kind: Kind, pool: &ConfigAndPool, load: &Load) -> Report {
    let k = kind.name();
    let r = run(pool, load).await;
    println!(
        "ledger backend={k} workers={} transfers={} committed={} failed={} unknown={} \
         unknown_present={} attempts_per_commit={:.2} retried_calls={} p50_ms={} p99_ms={} \
         elapsed_ms={} total_conserved={} lost={} phantom={}",
        load.workers,
        load.workers * load.transfers_per_worker,
        r.committed,
        r.failed.len(),
        r.unknown,
        r.unknown_present,
        r.attempts_per_commit(),
        r.retried_calls,
        ms(r.p50),
        ms(r.p99),
        ms(r.elapsed),
        r.total == r.expected_total,
        r.lost,
        r.phantom,
    );
    assert_invariants(k, &r);
    let n = load.workers * load.transfers_per_worker;
    assert!(
        r.committed * 10 >= n * 9,
        "[{k}] at least 90% of the transfers commit: {r:?}"
    );
    assert!(
        r.retried_calls > 0,
        "[{k}] the load is contended: some transfers were retried: {r:?}"
    );
    assert!(
        r.attempts_per_commit() < 10.0,
        "[{k}] attempts per commit stay sane: {r:?}"
    );
    assert!(r.p99 < Duration::from_secs(5), "[{k}] p99 bounded: {r:?}");
    r
}

/// Postgres at `SERIALIZABLE`.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_postgres_serializable() {
    let _group = groups::enter("ledger");
    Kind::Postgres
        .with_fresh_db(|db: TestDb| async move {
            let pool = db.builder().max_size(8).build().await.unwrap();
            let l = load(
                "ledger_postgres",
                8,
                40,
                Some("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"),
            );
            ledger(Kind::Postgres, &pool, &l).await;
        })
        .await;
}

/// SQLite, many writers on one WAL database.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_sqlite_wal_writers() {
    let _group = groups::enter("ledger");
    Kind::Sqlite
        .with_fresh_db(|db: TestDb| async move {
            let pool = db
                .builder()
                .max_size(8)
                .busy_timeout(Duration::from_millis(5))
                .build()
                .await
                .unwrap();
            let l = load("ledger_sqlite", 8, 60, None);
            ledger(Kind::Sqlite, &pool, &l).await;
        })
        .await;
}

/// Turso, many writers on one database.
#[cfg(feature = "turso")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_turso_writers() {
    let _group = groups::enter("ledger");
    Kind::Turso
        .with_fresh_db(|db: TestDb| async move {
            let pool = db
                .builder()
                .max_size(8)
                .busy_timeout(Duration::from_millis(5))
                .build()
                .await
                .unwrap();
            let l = load("ledger_turso", 8, 60, None);
            ledger(Kind::Turso, &pool, &l).await;
        })
        .await;
}
