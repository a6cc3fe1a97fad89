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
//! (a writer that waited too long for the write lock fails with `Busy` at `BEGIN`). On a
//! three-node MariaDB Galera cluster (`tests/common/galera.rs`) the workers spread across the
//! nodes, so transfers conflict between nodes (certification conflicts, `1213` at `COMMIT` or
//! at the loser's next statement), and the promises above hold on every node after the load
//! (read with causal reads): the total, every acknowledged transfer exactly once, nothing
//! that failed; `cert_conflicts` (asserted above 0) counts the conflicts between nodes.

use std::time::Duration;

use sql_middleware::RetryPolicy;
use sql_middleware::prelude::*;

use crate::common::backends::{Kind, TestDb};
use crate::common::groups;
use crate::common::reliability::{ms, seed_for};
use crate::common::transfers::{Load, Report, assert_invariants, run, run_across};

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
        read_suffix: "",
        seed: seed_for(test),
    }
}

/// Runs the ledger on `pool` and prints and checks its figures.
async fn ledger(kind: Kind, pool: &ConfigAndPool, load: &Load) -> Report {
    let r = run(pool, load).await;
    figures(kind.name(), load, &r, "");
    r
}

/// Prints the figures of `r` (and `extra`, `key=value` pairs) and checks them.
fn figures(k: &str, load: &Load, r: &Report, extra: &str) {
    println!(
        "ledger backend={k} workers={} transfers={} committed={} failed={} unknown={} \
         unknown_present={} attempts_per_commit={:.2} retried_calls={} p50_ms={} p99_ms={} \
         elapsed_ms={} total_conserved={} lost={} phantom={}{extra}",
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
    assert_invariants(k, r);
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

/// `kind:count,...` of the failed calls (`none` when none failed).
#[cfg(all(feature = "mysql", unix))]
fn kinds(failed: &[sql_middleware::ErrorKind]) -> String {
    let mut n = std::collections::BTreeMap::new();
    for k in failed {
        *n.entry(format!("{k:?}")).or_insert(0) += 1;
    }
    let v: Vec<String> = n.iter().map(|(k, c)| format!("{k}:{c}")).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(",")
    }
}

/// The Galera nodes' counts of certification conflicts: local transactions that failed
/// certification at commit, and local transactions aborted by a replicated one.
#[cfg(all(feature = "mysql", unix))]
async fn cert_conflicts(c: &crate::common::galera::Cluster) -> u64 {
    use mysql_async::prelude::Queryable;
    let mut n = 0;
    for node in &c.nodes {
        let mut conn = crate::common::galera_load::raw_conn(node.port, "mysql")
            .await
            .expect("a node answers");
        let rows: Vec<(String, u64)> = conn
            .query(
                "SHOW GLOBAL STATUS WHERE Variable_name IN \
                 ('wsrep_local_cert_failures', 'wsrep_local_bf_aborts')",
            )
            .await
            .expect("wsrep status");
        n += rows.iter().map(|r| r.1).sum::<u64>();
        let _ = conn.disconnect().await;
    }
    n
}

/// MariaDB Galera, three nodes: workers spread across them (each pool's URL lists the nodes
/// starting from a different one), so transfers conflict between nodes (the loser of a
/// certification conflict gets `1213` at `COMMIT` or at its next statement, and is run
/// again). Balances are read `FOR UPDATE` (InnoDB's `REPEATABLE READ` would let two local
/// transfers read the same balance). Audited on every node with causal reads. Its group
/// (`ledger`) never runs beside the `galera` topic, whose faults share the cluster.
#[cfg(all(feature = "mysql", unix))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_galera_across_nodes() {
    use crate::common::galera::cluster;
    use crate::common::galera_load::{raw_conn, rotated};
    use mysql_async::prelude::Queryable;

    let _group = groups::enter("ledger");
    let c = tokio::task::spawn_blocking(cluster)
        .await
        .expect("cluster start");
    c.wait_healed(Duration::from_secs(90))
        .await
        .expect("the cluster is whole");
    let db = "sqlmw_ledger_galera";
    let mut admin = raw_conn(c.nodes[0].port, "mysql").await.expect("node1");
    admin
        .query_drop(format!(
            "DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db}"
        ))
        .await
        .expect("database");
    let query = "target_session_attrs=read-write&connect_timeout=1";
    let mut pools = Vec::new();
    let mut audits = Vec::new();
    for i in 0..c.nodes.len() {
        pools.push(
            ConfigAndPool::mysql(&c.multi_url(&rotated(i), db, query))
                .max_size(4)
                .build()
                .await
                .expect("a multi-host pool"),
        );
        audits.push(
            ConfigAndPool::mysql(&c.multi_url(&[i], db, "causal_reads=true"))
                .max_size(1)
                .build()
                .await
                .expect("a causal-read pool on one node"),
        );
    }
    let mut l = load("ledger_galera", 9, 60, None);
    l.read_suffix = " FOR UPDATE";
    let certs_before = cert_conflicts(c).await;
    let reports = run_across(&pools, &audits, &l).await;
    let certs = cert_conflicts(c).await - certs_before;
    let r = &reports[0];
    let agree = reports
        .iter()
        .all(|o| o.total == r.total && o.lost == r.lost && o.phantom == r.phantom);
    let per_node: Vec<String> = reports.iter().map(|o| o.total.to_string()).collect();
    figures(
        "galera",
        &l,
        r,
        &format!(
            " nodes={} node_totals={} nodes_agree={agree} cert_conflicts={certs} \
             retried_attempts={} failed_kinds={}",
            reports.len(),
            per_node.join("/"),
            r.attempts - (r.committed + r.failed.len() + r.unknown) as u64,
            kinds(&r.failed),
        ),
    );
    for (i, o) in reports.iter().enumerate() {
        assert_invariants(&format!("galera node{}", i + 1), o);
    }
    assert!(
        certs > 0,
        "[galera] transfers conflicted between nodes (certification conflicts): {r:?}"
    );
    let _ = admin
        .query_drop(format!("DROP DATABASE IF EXISTS {db}"))
        .await;
}
