//! Migrations on a MariaDB Galera cluster of three nodes (the cluster of the `galera` topic,
//! `tests/common/galera.rs`), where `GET_LOCK` on one node does not keep out a runner on
//! another. The promises:
//!
//! - Eight runners started together, their pools spread over the three nodes (each on one
//!   node), apply a set of migrations: each migration exactly once, seen the same on every node
//!   (the history table, and the migrations' effects: one row per migration in an effects
//!   table, counters that a second application would change). The migrator keeps them apart
//!   with its lock table (`<history>_lock`), chosen by itself because the server says
//!   `wsrep_on`; it is left empty.
//! - A runner killed (SIGKILL) while it holds the lock, between two migrations, is replaced
//!   once the lock's TTL has passed: runners on the other nodes wait for the expiry (not
//!   sooner), then apply the rest, each migration once. The killed runner is this test binary
//!   itself, started again to run [`galera_migrate_holder_child`].
//!
//! Figures: `galera_migrate_runners` (`runners`, `migrations`, `applied_total`: migrations
//! applied summed over the runners, asserted equal to `migrations`; `took_ms`) and
//! `galera_migrate_holder_killed` (`ttl_ms`, `replaced_after_kill_ms`, `before_expiry_ms`: how
//! long before the dead runner's expiry a replacement finished, asserted 0; `applied_after`).
//! Both take the `galera` group and the lock the `galera` scenarios take, so they never overlap
//! a fault. `cargo test --all-features --test reliability -- galera` runs both topics.
#![cfg(all(feature = "mysql", feature = "migrate", unix))]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mysql_async::prelude::Queryable;
use sql_middleware::migrate::{Event, Migrator};
use sql_middleware::prelude::*;

use crate::common::galera::{Cluster, cluster};
use crate::common::galera_load::raw_conn;
use crate::common::groups;
use crate::galera::ONE_AT_A_TIME;

const URL_ENV: &str = "SQL_MIDDLEWARE_GALERA_MIGRATE_URL";
const HOLD_ENV: &str = "SQL_MIDDLEWARE_GALERA_MIGRATE_HOLD";

/// The lock's TTL in the killed-runner test.
const TTL: Duration = Duration::from_secs(4);

/// The migrations: tables, rows, a column, and counters that a second application would move.
/// Each also records its version in `m_effects`.
const FILES: [(&str, &str); 6] = [
    (
        "0001_tables.sql",
        "CREATE TABLE m_items (id BIGINT PRIMARY KEY, v INT NOT NULL);\n\
         CREATE TABLE m_effects (id BIGINT AUTO_INCREMENT PRIMARY KEY, version INT NOT NULL);\n\
         INSERT INTO m_effects (version) VALUES (1);\n",
    ),
    (
        "0002_rows.sql",
        "INSERT INTO m_items VALUES (1, 0), (2, 0);\nINSERT INTO m_effects (version) VALUES (2);\n",
    ),
    (
        "0003_count.sql",
        "UPDATE m_items SET v = v + 1;\nINSERT INTO m_effects (version) VALUES (3);\n",
    ),
    (
        "0004_column.sql",
        "ALTER TABLE m_items ADD COLUMN note VARCHAR(20) NULL;\n\
         INSERT INTO m_effects (version) VALUES (4);\n",
    ),
    (
        "0005_count.sql",
        "UPDATE m_items SET v = v + 10, note = 'n';\nINSERT INTO m_effects (version) VALUES (5);\n",
    ),
    (
        "0006_last.sql",
        "CREATE TABLE m_last (id BIGINT PRIMARY KEY);\nINSERT INTO m_last VALUES (6);\n\
         INSERT INTO m_effects (version) VALUES (6);\n",
    ),
];

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking task")
}

/// The cluster, whole, with a fresh database `db`.
async fn fresh(db: &str) -> &'static Cluster {
    let c = blocking(cluster).await;
    c.wait_healed(Duration::from_secs(90))
        .await
        .expect("the cluster is whole before the test");
    let mut s = raw_conn(c.nodes[0].port, "mysql").await.expect("node1");
    s.query_drop(format!(
        "DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db}"
    ))
    .await
    .expect("database");
    c
}

async fn drop_database(c: &Cluster, db: &str) {
    if let Some(mut s) = raw_conn(c.nodes[0].port, "mysql").await {
        let _ = s.query_drop(format!("DROP DATABASE IF EXISTS {db}")).await;
    }
}

/// A runner: a pool of one connection on node `node` alone, and the migrator.
async fn runner(
    c: &Cluster,
    node: usize,
    db: &str,
    ttl: Duration,
    applied: Arc<AtomicUsize>,
) -> (ConfigAndPool, Migrator) {
    let pool = ConfigAndPool::mysql(&c.url(node, db))
        .max_size(1)
        .build()
        .await
        .expect("a pool on one node");
    let m = Migrator::from_files(FILES)
        .expect("files")
        .lock_wait(Duration::from_secs(120))
        .lock_ttl(ttl)
        .on_event(move |e| {
            if let Event::Applied {
                by_this_runner: true,
                ..
            } = e
            {
                applied.fetch_add(1, Ordering::Relaxed);
            }
        });
    (pool, m)
}

/// What every node holds after the runs: each migration once in the history, once in
/// `m_effects`, the counters moved once, and the lock table empty.
async fn check_every_node(c: &Cluster, db: &str) {
    for (i, n) in c.nodes.iter().enumerate() {
        let mut conn = raw_conn(n.port, db).await.expect("node answers");
        conn.query_drop("SET SESSION wsrep_sync_wait = 1")
            .await
            .expect("wsrep_sync_wait");
        let history: Vec<(i64, i64)> = conn
            .query("SELECT version, success FROM _sql_middleware_migrations ORDER BY version")
            .await
            .expect("history");
        let want: Vec<(i64, i64)> = (1..=6).map(|v| (v, 1)).collect();
        assert_eq!(history, want, "node{}: the history", i + 1);
        let effects: Vec<(i64, i64)> = conn
            .query("SELECT version, count(*) FROM m_effects GROUP BY version ORDER BY version")
            .await
            .expect("effects");
        let want: Vec<(i64, i64)> = (1..=6).map(|v| (v, 1)).collect();
        assert_eq!(effects, want, "node{}: each migration's effect once", i + 1);
        let items: Vec<(i64, i64)> = conn
            .query("SELECT id, v FROM m_items ORDER BY id")
            .await
            .expect("items");
        assert_eq!(items, [(1, 11), (2, 11)], "node{}: counters", i + 1);
        let held: Vec<String> = conn
            .query("SELECT owner FROM _sql_middleware_migrations_lock")
            .await
            .expect("the lock table exists: the migrator chose it on a wsrep node");
        assert!(held.is_empty(), "node{}: lock left held: {held:?}", i + 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn galera_migrate_eight_runners_three_nodes() {
    let _group = groups::enter("galera");
    let _one = ONE_AT_A_TIME.lock().await;
    let db = "sqlmw_galera_migrate_runners";
    let c = fresh(db).await;
    let applied = Arc::new(AtomicUsize::new(0));
    let mut runners = Vec::new();
    for r in 0..8 {
        runners.push(runner(c, r % 3, db, Duration::from_secs(60), Arc::clone(&applied)).await);
    }
    let start = Arc::new(tokio::sync::Barrier::new(runners.len()));
    let t = Instant::now();
    let mut tasks = Vec::new();
    for (r, (pool, m)) in runners.into_iter().enumerate() {
        let start = Arc::clone(&start);
        tasks.push(tokio::spawn(async move {
            let mut conn = pool.get_connection().await.expect("connection");
            start.wait().await;
            let report = m
                .run(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("runner {r} on node{}: {e:?}", r % 3 + 1));
            report.applied
        }));
    }
    let mut by_version = [0usize; 7];
    for t in tasks {
        for v in t.await.expect("runner") {
            by_version[usize::try_from(v).expect("version")] += 1;
        }
    }
    let took = t.elapsed();
    let total = applied.load(Ordering::Relaxed);
    println!(
        "galera_migrate_runners runners=8 nodes=3 migrations=6 applied_total={total} took_ms={}",
        took.as_millis()
    );
    assert_eq!(
        &by_version[1..],
        &[1; 6],
        "each migration applied by exactly one runner"
    );
    assert_eq!(total, 6, "Applied events by the runners that applied");
    check_every_node(c, db).await;
    drop_database(c, db).await;
}

/// The runner the parent kills: it applies the first two migrations, then holds the lock (its
/// listener blocks) until it is killed. Run only as a child of
/// [`galera_migrate_killed_holder_replaced_after_ttl`]; run alone it fails.
#[tokio::test]
#[ignore = "the child process of galera_migrate_killed_holder_replaced_after_ttl"]
async fn galera_migrate_holder_child() {
    let url = std::env::var(URL_ENV).expect("run as the child of the killed-holder test");
    let hold_after: i64 = std::env::var(HOLD_ENV)
        .expect("the version to hold after")
        .parse()
        .expect("a version");
    let pool = ConfigAndPool::mysql(&url)
        .max_size(1)
        .build()
        .await
        .expect("pool");
    let mut conn = pool.get_connection().await.expect("connection");
    let m = Migrator::from_files(FILES)
        .expect("files")
        .lock_ttl(TTL)
        .on_event(move |e| {
            if let Event::Applied { version, .. } = e {
                if version == hold_after {
                    println!("holder-child: holding");
                    // Holds the lock until the parent's SIGKILL.
                    std::thread::sleep(Duration::from_secs(600));
                }
            }
        });
    m.run(&mut conn).await.expect("killed before this ends");
    println!("holder-child: finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn galera_migrate_killed_holder_replaced_after_ttl() {
    let _group = groups::enter("galera");
    let _one = ONE_AT_A_TIME.lock().await;
    let db = "sqlmw_galera_migrate_killed";
    let c = fresh(db).await;

    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new(exe)
        .args([
            "galera_migrate::galera_migrate_holder_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(URL_ENV, c.url(0, db))
        .env(HOLD_ENV, "2")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the holder");
    let stdout = child.stdout.take().expect("stdout");
    let holding = blocking(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|l| l.contains("holder-child: holding"))
    })
    .await;
    if !holding {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the holder never reached its second migration");
    }
    child.kill().expect("SIGKILL the holder");
    let status = child.wait().expect("wait");
    assert!(
        !status.success(),
        "the holder finished before it was killed"
    );
    let killed_at = Instant::now();

    // The dead runner's row is still there, on another node, with its expiry.
    let mut n2 = raw_conn(c.nodes[1].port, db).await.expect("node2");
    n2.query_drop("SET SESSION wsrep_sync_wait = 1")
        .await
        .expect("wsrep_sync_wait");
    let rows: Vec<(String, i64)> = n2
        .query("SELECT owner, expires_ms FROM _sql_middleware_migrations_lock")
        .await
        .expect("the lock table (chosen on a wsrep node)");
    assert_eq!(rows.len(), 1, "the killed runner's lock: {rows:?}");
    let expires_ms = rows[0].1;
    let applied_before: Vec<i64> = n2
        .query("SELECT version FROM _sql_middleware_migrations WHERE success = 1 ORDER BY version")
        .await
        .expect("history");
    assert_eq!(applied_before, [1, 2], "the holder's migrations");
    drop(n2);

    // Replacements on the other two nodes (and one on the dead runner's node).
    let applied = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for node in [1, 2, 0] {
        let (pool, m) = runner(c, node, db, TTL, Arc::clone(&applied)).await;
        tasks.push(tokio::spawn(async move {
            let mut conn = pool.get_connection().await.expect("connection");
            let report = m
                .run(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("replacement on node{}: {e:?}", node + 1));
            (report.applied, now_ms())
        }));
    }
    let mut after = Vec::new();
    let mut first_done = i64::MAX;
    for t in tasks {
        let (versions, done_ms) = t.await.expect("replacement");
        after.extend(versions);
        first_done = first_done.min(done_ms);
    }
    let replaced_after = killed_at.elapsed();
    after.sort_unstable();
    let before_expiry = (expires_ms - first_done).max(0);
    println!(
        "galera_migrate_holder_killed ttl_ms={} replaced_after_kill_ms={} before_expiry_ms={before_expiry} applied_after={}",
        TTL.as_millis(),
        replaced_after.as_millis(),
        after.len()
    );
    assert_eq!(
        after,
        [3, 4, 5, 6],
        "the rest, each once, by the replacements"
    );
    assert_eq!(
        before_expiry, 0,
        "a replacement finished before the dead runner's lock expired"
    );
    assert!(
        replaced_after <= TTL + Duration::from_secs(10),
        "the replacements waited {replaced_after:?} (TTL {TTL:?})"
    );
    check_every_node(c, db).await;
    drop_database(c, db).await;
}
