//! MariaDB Galera, a synchronous multi-primary cluster of three nodes (started by the tests from
//! the installed `mariadbd` and Debian's `galera-4`, see `tests/common/galera.rs`), through
//! multi-host URLs. The promises:
//!
//! - Writes spread across the nodes, with conflicts between them, keep every acknowledged
//!   write on every node, while a node is killed (SIGKILL), frozen (SIGSTOP) and resumed, cut
//!   off from the others (`gmcast.isolate=1`), and while two nodes are gone (the survivor has
//!   lost quorum and must not be used; the cluster is then bootstrapped from it again).
//!   Bootstrapping the survivor is where Galera itself can drop writes: a write that a killed
//!   node acknowledged in the instant before it died, and that the survivor had not yet
//!   delivered, is on no node that lives on (the killed nodes flush their log once a second,
//!   and rejoin from the survivor's state); the engine's documentation warns that bootstrapping
//!   any node but the most advanced can lose data. For quorum loss, such writes, acknowledged
//!   from [`CRASH_WINDOW`] before the kills until they ended, are printed, not failed, for the
//!   middleware and the control alike; any other missing write fails the test.
//! - Writes succeed again soon after each fault: the pool leaves a node that stopped being
//!   usable, for its pooled connections as well as new ones, without a restart.
//! - With `causal_reads=true`, a read on one node sees what was acknowledged on another
//!   (no stale read).
//!
//! The load: three middleware workers, each with a pool whose URL lists the three nodes
//! starting from a different one (`target_session_attrs=read-write&connect_timeout=1`), and
//! three raw mysql_async control workers doing the same with their own node rotation. Each
//! write is a transaction (`INSERT` of a unique id, then an `UPDATE` of one of four shared
//! rows, so nodes conflict), retried with the same id until acknowledged (a duplicate key on
//! a retry means an earlier attempt committed). After each acknowledged middleware write, a
//! causal read of it on a pool that starts from another node.
//!
//! Each test prints `galera_<fault>`: `write_gap_ms` (the longest any worker of the client
//! waited for its next acknowledged write, for a wait that began during the fault: the time
//! until writes succeed again), for quorum loss also `heal_to_write_ms` (from the bootstrap of
//! the survivor, the longest any worker waited for its first write), `lost` (acknowledged writes
//! missing on some node after healing; for quorum loss also `lost_at_crash`, those of them
//! acknowledged at the kills), `stale_reads`, and the write, conflict and error
//! counts, for `mw` (the middleware) and `raw` (the control). Asserted for the middleware:
//! nothing lost, no stale read, writes again within 5 s of the fault (of the bootstrap for
//! quorum loss). `galera_node_left` (a node cut off while the pool holds connections to it):
//! `checkouts_on_unusable` (checkouts served by it afterwards; asserted 0) and how long ten
//! checkouts took after a `1047`, and, for a pool that only reads (no error tells), after the
//! periodic node check at checkout (2 s). `cargo test --all-features --test reliability --
//! galera::` (about 2 minutes).
#![cfg(all(feature = "mysql", unix))]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use sql_middleware::prelude::*;

use crate::common::galera::{Cluster, cluster};
use crate::common::galera_load::{Seen, mw_worker, raw_conn, raw_worker, rotated};
use crate::common::groups;

/// The scenarios run one at a time: they share the cluster and measure time (the migration
/// topic, `galera_migrate`, takes it too).
pub(crate) static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Quorum loss: how long before the kills a write may have been acknowledged by a node about
/// to die and still be missing from the survivor (see the module's text). Delivery to the
/// survivor takes a network round trip, milliseconds, on loopback; the bound leaves room for
/// a loaded machine.
const CRASH_WINDOW: Duration = Duration::from_millis(500);

/// How long the load runs before the fault, and how long the fault lasts before healing.
const BEFORE: Duration = Duration::from_secs(2);
const FAULT_LASTS: Duration = Duration::from_secs(4);

/// What a scenario does to the cluster, and how it heals it.
#[derive(Debug, Clone, Copy)]
enum Fault {
    Kill,
    Freeze,
    Isolate,
    Quorum,
}

impl Fault {
    /// Node 1 (index 0) is the one faulted; for quorum loss nodes 2 and 3 go and node 1 is
    /// left without quorum.
    async fn apply(self, c: &'static Cluster) {
        match self {
            Fault::Kill => blocking(move || c.kill(0)).await,
            Fault::Freeze => blocking(move || c.stop(0)).await,
            Fault::Isolate => c.isolate(0, true).await.expect("isolate node1"),
            Fault::Quorum => {
                blocking(move || {
                    c.kill(1);
                    c.kill(2);
                })
                .await
            }
        }
    }

    async fn heal(self, c: &'static Cluster) {
        match self {
            Fault::Kill => blocking(move || c.restart(0)).await.expect("restart node1"),
            Fault::Freeze => blocking(move || c.cont(0)).await,
            Fault::Isolate => c.isolate(0, false).await.expect("let node1 back"),
            Fault::Quorum => {
                let mut s = raw_conn(c.nodes[0].port, "mysql")
                    .await
                    .expect("node1 answers without quorum");
                s.query_drop("SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'")
                    .await
                    .expect("bootstrap node1");
                blocking(move || c.restart(1).and_then(|()| c.restart(2)))
                    .await
                    .expect("restart node2 and node3");
            }
        }
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking task")
}

/// Every id in `ids` missing from some node.
async fn lost(c: &Cluster, db: &str, ids: &[i64]) -> BTreeSet<i64> {
    let mut missing = BTreeSet::new();
    for n in &c.nodes {
        let mut conn = raw_conn(n.port, db)
            .await
            .expect("node answers after healing");
        conn.query_drop("SET SESSION wsrep_sync_wait = 1")
            .await
            .expect("wsrep_sync_wait");
        let found: BTreeSet<i64> = conn
            .query::<i64, _>("SELECT id FROM ledger")
            .await
            .expect("ledger")
            .into_iter()
            .collect();
        missing.extend(ids.iter().filter(|id| !found.contains(id)).copied());
    }
    missing
}

/// Each of `ids` with the worker that acknowledged it and when, from `origin`: where a lost
/// write sat against the fault.
fn when_acked(s: &Seen, ids: &BTreeSet<i64>, origin: Instant) -> String {
    ids.iter()
        .map(|&id| match s.acked_at(id) {
            Some((w, at)) => format!(
                "  - id {id}: worker {w}, acknowledged at {:+} ms",
                signed_ms(at, origin)
            ),
            None => format!("  - id {id}: never acknowledged"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `at - origin` in milliseconds, negative when `at` came first.
fn signed_ms(at: Instant, origin: Instant) -> i128 {
    match at.checked_duration_since(origin) {
        Some(d) => d.as_millis() as i128,
        None => -((origin - at).as_millis() as i128),
    }
}

fn ms(d: Option<Duration>) -> String {
    d.map_or("never".to_owned(), |d| d.as_millis().to_string())
}

async fn scenario(name: &str, fault: Fault) {
    let _group = groups::enter("galera");
    let _one = ONE_AT_A_TIME.lock().await;
    let c = blocking(cluster).await;
    c.wait_healed(Duration::from_secs(90))
        .await
        .expect("the cluster is whole before the scenario");
    let db = format!("sqlmw_galera_{name}");
    {
        let mut s = raw_conn(c.nodes[0].port, "mysql").await.expect("node1");
        s.query_drop(format!(
            "DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db}; USE {db}; \
             CREATE TABLE ledger (id BIGINT PRIMARY KEY, client VARCHAR(8) NOT NULL); \
             CREATE TABLE hot (k INT PRIMARY KEY, n BIGINT NOT NULL); \
             INSERT INTO hot VALUES (0, 0), (1, 0), (2, 0), (3, 0)"
        ))
        .await
        .expect("tables");
    }
    let query = "target_session_attrs=read-write&connect_timeout=1";
    let stop = Arc::new(AtomicBool::new(false));
    let (mw, raw) = (Seen::new(3), Seen::new(3));
    let mut tasks = Vec::new();
    for w in 0..3 {
        let pool = ConfigAndPool::mysql(&c.multi_url(&rotated(w), &db, query))
            .max_size(4)
            .statement_timeout(Duration::from_secs(1))
            .wait_timeout(Duration::from_secs(4))
            .create_timeout(Duration::from_secs(4))
            .build()
            .await
            .expect("a multi-host pool");
        let reader = ConfigAndPool::mysql(&c.multi_url(
            &rotated(w + 1),
            &db,
            &format!("{query}&causal_reads=true"),
        ))
        .max_size(4)
        .statement_timeout(Duration::from_secs(1))
        .wait_timeout(Duration::from_secs(4))
        .create_timeout(Duration::from_secs(4))
        .build()
        .await
        .expect("a causal-read pool");
        tasks.push(tokio::spawn(mw_worker(
            w,
            pool,
            reader,
            Arc::clone(&mw),
            Arc::clone(&stop),
        )));
        let ports = rotated(w).iter().map(|&i| c.nodes[i].port).collect();
        tasks.push(tokio::spawn(raw_worker(
            w,
            ports,
            db.clone(),
            Arc::clone(&raw),
            Arc::clone(&stop),
        )));
    }
    tokio::time::sleep(BEFORE).await;
    let fault_at = Instant::now();
    fault.apply(c).await;
    let fault_done = Instant::now();
    tokio::time::sleep(FAULT_LASTS).await;
    let heal_at = Instant::now();
    fault.heal(c).await;
    c.wait_healed(Duration::from_secs(90))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.expect("worker");
    }
    let quorum = matches!(fault, Fault::Quorum);
    // The missing writes Galera may drop when the survivor is bootstrapped (quorum loss only).
    let at_crash = |s: &Seen, missing: &BTreeSet<i64>| -> usize {
        let in_window = |id: &&i64| {
            s.acked_at(**id)
                .is_some_and(|(_, at)| at + CRASH_WINDOW >= fault_at && at <= fault_done)
        };
        if quorum {
            missing.iter().filter(in_window).count()
        } else {
            0
        }
    };
    let figures = |who: &str, s: &Seen, missing: &BTreeSet<i64>| {
        let mut line = format!(
            "{who}_write_gap_ms={} {who}_lost={} {who}_writes={} {who}_conflicts={} {who}_errors={}",
            s.longest_gap(fault_at, heal_at).as_millis(),
            missing.len(),
            s.ids().len(),
            s.conflicts.load(Ordering::Relaxed),
            s.failed.load(Ordering::Relaxed),
        );
        if quorum {
            line += &format!(
                " {who}_lost_at_crash={} {who}_heal_to_write_ms={}",
                at_crash(s, missing),
                ms(s.wait_from(heal_at))
            );
        }
        line
    };
    let mw_missing = lost(c, &db, &mw.ids()).await;
    let raw_missing = lost(c, &db, &raw.ids()).await;
    for (who, s, missing) in [("mw", &mw, &mw_missing), ("raw", &raw, &raw_missing)] {
        if !missing.is_empty() {
            println!(
                "galera_{name} {who} lost writes (the fault at +0 ms, its end at +{} ms):\n{}",
                signed_ms(fault_done, fault_at),
                when_acked(s, missing, fault_at)
            );
        }
    }
    println!(
        "galera_{name} {} mw_stale_reads={} mw_causal_reads={} mw_read_errors={} {}",
        figures("mw", &mw, &mw_missing),
        mw.stale.load(Ordering::Relaxed),
        mw.reads.load(Ordering::Relaxed),
        mw.read_errors.load(Ordering::Relaxed),
        figures("raw", &raw, &raw_missing),
    );
    // What the middleware's workers met from the fault on, for reading a long gap in a log.
    let failed = mw.failures_in(fault_at, fault_at, Instant::now());
    // The first ones say why a gap was long; quorum loss fails every write until the bootstrap.
    let shown: Vec<&str> = failed.lines().take(12).collect();
    let failed = match failed.lines().count() - shown.len() {
        0 => shown.join("\n"),
        more => format!("{}\n  - … and {more} more", shown.join("\n")),
    };
    println!(
        "galera_{name} mw longest gaps:\n{}",
        mw.gaps(fault_at, heal_at)
    );
    if !failed.is_empty() {
        println!(
            "galera_{name} mw failures (from the fault; heal at +{} ms):\n{failed}",
            (heal_at - fault_at).as_millis()
        );
    }
    assert_eq!(
        mw_missing.len() - at_crash(&mw, &mw_missing),
        0,
        "{name}: acknowledged writes lost"
    );
    assert_eq!(
        raw_missing.len() - at_crash(&raw, &raw_missing),
        0,
        "{name}: the engine lost writes the control saw acknowledged"
    );
    assert_eq!(
        mw.stale.load(Ordering::Relaxed),
        0,
        "{name}: stale causal reads"
    );
    assert!(
        mw.reads.load(Ordering::Relaxed) > 0,
        "{name}: no causal read succeeded"
    );
    let from = if quorum { heal_at } else { fault_at };
    let wait = if quorum {
        mw.wait_from(from)
    } else {
        Some(mw.longest_gap(fault_at, heal_at))
    };
    assert!(
        wait.is_some_and(|d| d <= Duration::from_secs(5)),
        "{name}: a middleware worker waited {wait:?} to write again; its failed writes (from the fault):\n{}",
        mw.failures_in(fault_at, fault_at, Instant::now())
    );
    let mut s = raw_conn(c.nodes[0].port, "mysql").await.expect("node1");
    let _ = s.query_drop(format!("DROP DATABASE IF EXISTS {db}")).await;
}

/// The port of the server behind `c`.
async fn port_of(c: &mut MiddlewarePoolConnection) -> u16 {
    let (p,): (i64,) = c.query("SELECT @@port").one().await.expect("@@port");
    u16::try_from(p).expect("a port")
}

/// Isolates node 1 and waits until it says it is not usable.
async fn isolate_first(c: &Cluster) {
    c.isolate(0, true).await.expect("isolate node1");
    let t = Instant::now();
    while crate::common::galera::node_state(c.nodes[0].port, Duration::from_secs(2))
        .await
        .is_ok_and(|s| s.usable())
    {
        assert!(t.elapsed() < Duration::from_secs(20), "node1 stays usable");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A node that lost the cluster is left for its pooled connections as well as new ones,
/// without a restart: the connection that gets `1047` marks its host down and the pool's other
/// connections to it are dropped at checkout; and, for a pool that only reads (which gets no
/// `1047`: the node still answers `SELECT`), the periodic node check at checkout finds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unusable_node_is_left_by_pooled_connections() {
    let _group = groups::enter("galera");
    let _one = ONE_AT_A_TIME.lock().await;
    let c = blocking(cluster).await;
    c.wait_healed(Duration::from_secs(90)).await.expect("whole");
    let db = "sqlmw_galera_left";
    let mut s = raw_conn(c.nodes[0].port, "mysql").await.expect("node1");
    s.query_drop(format!(
        "DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db};          CREATE TABLE {db}.t (id BIGINT PRIMARY KEY)"
    ))
    .await
    .expect("table");
    let node1 = c.nodes[0].port;
    let url = c.multi_url(
        &[0, 1, 2],
        db,
        "target_session_attrs=read-write&connect_timeout=1",
    );
    let mut on_unusable = 0;
    let mut first_error = String::new();
    let mut figures = Vec::new();
    for periodic in [false, true] {
        let pool = ConfigAndPool::mysql(&url)
            .max_size(3)
            .build()
            .await
            .expect("pool");
        // Three pooled connections, all on node 1 (listed first).
        let mut held = Vec::new();
        for _ in 0..3 {
            let mut conn = pool.get_connection().await.expect("checkout");
            assert_eq!(port_of(&mut conn).await, node1);
            held.push(conn);
        }
        let mut keep = held.pop().expect("one");
        drop(held);
        isolate_first(c).await;
        let t = Instant::now();
        if periodic {
            // Reads only: no error tells; the node check at checkout does.
            drop(keep);
            tokio::time::sleep(Duration::from_millis(2100)).await;
        } else {
            let e = keep
                .query("INSERT INTO t (id) VALUES (1)")
                .dml()
                .await
                .expect_err("a node without quorum refuses work");
            assert_eq!(e.kind(), ErrorKind::ConnectionLost, "{e}");
            first_error = e.driver_code().unwrap_or("none").to_owned();
            drop(keep);
        }
        for i in 0..10 {
            let mut conn = pool.get_connection().await.expect("a usable node");
            let p = port_of(&mut conn).await;
            if p == node1 {
                on_unusable += 1;
            }
            if i == 0 && !periodic {
                conn.query("INSERT INTO t (id) VALUES (2)")
                    .dml()
                    .await
                    .expect("the write goes to a usable node");
            }
        }
        let left_ms = t.elapsed().as_millis();
        c.isolate(0, false).await.expect("let node1 back");
        c.wait_healed(Duration::from_secs(60))
            .await
            .expect("healed");
        figures.push(format!(
            "{}_ten_checkouts_ms={left_ms}",
            if periodic { "reads_only" } else { "after_1047" }
        ));
    }
    println!(
        "galera_node_left first_error={first_error} checkouts_on_unusable={on_unusable} {}",
        figures.join(" ")
    );
    assert_eq!(first_error, "1047");
    assert_eq!(on_unusable, 0, "checkouts served by a node without quorum");
    let _ = s.query_drop(format!("DROP DATABASE IF EXISTS {db}")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn node_killed() {
    scenario("kill", Fault::Kill).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn node_frozen_and_resumed() {
    scenario("sigstop", Fault::Freeze).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn node_isolated() {
    scenario("isolate", Fault::Isolate).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn quorum_lost() {
    scenario("quorum", Fault::Quorum).await;
}
