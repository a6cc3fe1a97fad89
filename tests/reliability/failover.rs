//! Failover with a real HA engine: pg_auto_failover (a monitor and two nodes with synchronous
//! replication, started by the test from the Debian package `postgresql-15-auto-failover`,
//! which `.ci/run` installs), a ledger load of four middleware workers and four raw
//! tokio-postgres control workers side by side (each an acknowledged `INSERT`, then a
//! read-back on a checkout of its own), and one fault per test: a planned failover, `kill -9`
//! of the primary's postmaster, the kill of the whole primary node, the primary frozen
//! (SIGSTOP) while listed first, and the old primary left up read-only. The pool's URL lists
//! both nodes with `target_session_attrs=read-write&connect_timeout=1`; its statement timeout
//! is 1 s.
//!
//! Each test prints `failover_<scenario>`: `fault_to_writable_ms` (from the fault until the
//! new primary accepted writes, the engine's part), and per client (`mw` the middleware, `raw`
//! the control) `gap_ms` (the longest a worker waited, from then, for its next acknowledged
//! write), `lost` (acknowledged writes missing from the final primary), `stale_reads`
//! (read-backs after the failover settled, 2 s after the new primary accepted writes, served by
//! a read-only server or missing the row) and the write and error counts. The middleware's
//! figures are asserted: gap within 2 s, nothing lost, no stale read. The scenarios run one at
//! a time, about 30 s each: `cargo test --all-features --test reliability -- failover::`.
//!
//! The engine can fail the scenario's precondition: in about one planned failover in six run
//! here, pg_auto_failover's new primary lacked about two seconds of writes that the old one had
//! acknowledged, and the raw control lost as many as the middleware. Such a run says nothing
//! about a client: the raw control's writes are missing from the final primary, or a probe
//! write was acknowledged by the other node more than 500 ms after the final primary accepted
//! writes (both nodes took writes at once). It is printed, and the scenario starts over on a
//! fresh formation, at most three times (`engine_faults` in the figures counts them). The
//! middleware's figures are asserted on the run in which the engine kept every write the
//! control saw acknowledged.
#![cfg(all(feature = "postgres", unix))]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sql_middleware::prelude::*;

use crate::common::groups;
use crate::common::ledger as load;
use crate::common::pg::pgaf::Formation;

/// The scenarios run one at a time: each loads the machine and measures time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What a scenario does to the formation, once the load runs.
type Fault = fn(&Formation) -> Result<(), String>;

/// How many fresh formations a scenario may take when the engine itself loses acknowledged
/// writes (see [`attempt`]).
const ATTEMPTS: usize = 3;

/// A node other than the final primary that acknowledged a probe write more than 500 ms after
/// the final primary began to accept writes: both nodes took writes at once, so the engine
/// itself lost what the old one acknowledged, for every client alike. The scenario's promise
/// (nothing lost that the engine keeps) cannot be judged on such a run.
fn split_brain(
    probes: &[Vec<(Instant, bool)>],
    primary: usize,
    writable: Instant,
) -> Option<String> {
    let overlap = Duration::from_millis(500);
    probes.iter().enumerate().find_map(|(i, p)| {
        let last = p
            .iter()
            .filter(|(at, ok)| i != primary && *ok && *at > writable + overlap)
            .map(|(at, _)| *at - writable)
            .max()?;
        Some(format!(
            "node{} still acknowledged writes {} ms after node{} accepted writes",
            i + 1,
            last.as_millis(),
            primary + 1
        ))
    })
}

async fn raw(port: u16) -> tokio_postgres::Client {
    crate::common::pg::raw_client(&format!("postgres://postgres@127.0.0.1:{port}/postgres")).await
}

/// Waits (up to 60 s) until the primary on `port` commits synchronously: a standby is in
/// `sync` or `quorum` state and `synchronous_standby_names` is set. The scenarios promise that
/// no acknowledged write is lost, which the engine itself keeps only while it replicates
/// synchronously (pg_auto_failover turns it off while a standby is catching up).
async fn wait_synchronous(port: u16) -> Duration {
    let started = Instant::now();
    let client = raw(port).await;
    loop {
        let row = client
            .query_one(
                "SELECT current_setting('synchronous_standby_names') <> ''                  AND EXISTS (SELECT 1 FROM pg_stat_replication                              WHERE sync_state IN ('sync', 'quorum') AND state = 'streaming')",
                &[],
            )
            .await
            .expect("replication state");
        if row.get::<_, bool>(0) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the primary on port {port} did not replicate synchronously within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs [`attempt`] until the engine kept every write it acknowledged to the raw control, at
/// most [`ATTEMPTS`] times (each engine fault is printed); fails when it never did.
async fn scenario(name: &str, order: [usize; 2], fault: Fault) {
    let _group = groups::enter("failover");
    let _one = ONE_AT_A_TIME.lock().await;
    let mut faults = Vec::new();
    while faults.len() < ATTEMPTS {
        match attempt(name, order, fault, faults.len()).await {
            Ok(()) => return,
            Err(split) => {
                eprintln!("[failover] {name}: the engine lost writes: {split}; a fresh formation");
                faults.push(split);
            }
        }
    }
    panic!("{name}: pg_auto_failover lost acknowledged writes in every attempt: {faults:?}");
}

/// Runs the load on a fresh formation (URL hosts in `order`), applies `fault` two seconds in,
/// waits until a node has accepted writes for five seconds, and checks the figures; `Err` when
/// the engine lost writes itself: it let two nodes take writes at once (see [`split_brain`]),
/// or the final primary lacks writes acknowledged to the raw control.
async fn attempt(
    name: &str,
    order: [usize; 2],
    fault: Fault,
    engine_faults: usize,
) -> Result<(), String> {
    let f = tokio::task::spawn_blocking(Formation::start)
        .await
        .expect("formation")
        .unwrap_or_else(|e| panic!("cannot start a pg_auto_failover formation: {e}"));
    let f = Arc::new(f);
    raw(f.nodes[0].port)
        .await
        .batch_execute(
            "CREATE TABLE ledger (id bigserial PRIMARY KEY, client text, w int); \
             CREATE TABLE probe (id bigserial PRIMARY KEY)",
        )
        .await
        .expect("tables");
    wait_synchronous(f.nodes[0].port).await;
    let pool = ConfigAndPool::postgres(
        &f.url(&order, "target_session_attrs=read-write&connect_timeout=1"),
    )
    .max_size(4)
    .statement_timeout(Duration::from_secs(1))
    .wait_timeout(Duration::from_secs(2))
    .create_timeout(Duration::from_secs(5))
    .build()
    .await
    .expect("pool");
    let stop = Arc::new(AtomicBool::new(false));
    let probes = Arc::new(Mutex::new(vec![Vec::new(); 2]));
    let prober = tokio::spawn(load::probe(
        f.nodes.iter().map(|n| n.port).collect(),
        Arc::clone(&probes),
        Arc::clone(&stop),
    ));
    let mw = tokio::spawn(load::middleware(pool, 4, Arc::clone(&stop)));
    let hosts = order
        .iter()
        .map(|&i| ("127.0.0.1".to_owned(), f.nodes[i].port))
        .collect();
    let control = tokio::spawn(load::control(
        hosts,
        4,
        Duration::from_secs(1),
        Arc::clone(&stop),
    ));
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The fault starts from a synchronous pair (see `wait_synchronous`).
    wait_synchronous(f.nodes[0].port).await;
    let fault_at = Instant::now();
    let ff = Arc::clone(&f);
    tokio::task::spawn_blocking(move || fault(&ff))
        .await
        .expect("fault")
        .unwrap_or_else(|e| panic!("{name}: the fault could not be applied: {e}"));
    // Until one node has accepted writes, since after the fault, for five seconds.
    let limit = Instant::now() + Duration::from_secs(120);
    let (primary, writable) = loop {
        let since = load::writable_since(&probes.lock().unwrap());
        if let Some((i, at)) = since {
            if at > fault_at && at.elapsed() >= Duration::from_secs(5) {
                break (i, at);
            }
        }
        assert!(
            Instant::now() < limit,
            "{name}: no node accepted writes for 5 s within 120 s of the fault; monitor: {:?}",
            f.states()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    stop.store(true, Ordering::Relaxed);
    let (mw, control) = (mw.await.expect("mw"), control.await.expect("control"));
    prober.await.expect("prober");
    let found: BTreeSet<i64> = raw(f.nodes[primary].port)
        .await
        .query("SELECT id FROM ledger", &[])
        .await
        .expect("ledger on the final primary")
        .iter()
        .map(|r| r.get(0))
        .collect();
    let m = load::Figures::of(&mw, writable, &found);
    let r = load::Figures::of(&control, writable, &found);
    let line = format!(
        "failover_{name} final_primary={} fault_to_writable_ms={} {} {}",
        f.nodes[primary].name,
        (writable - fault_at).as_millis(),
        m.line("mw"),
        r.line("raw")
    );
    if let Some(split) = split_brain(&probes.lock().unwrap(), primary, writable) {
        return Err(format!("{split} ({line})"));
    }
    if r.lost > 0 {
        return Err(format!(
            "the final primary lacks {} writes the raw control saw acknowledged ({line})",
            r.lost
        ));
    }
    println!("{line} engine_faults={engine_faults}");
    assert!(
        m.gap.is_some_and(|g| g <= Duration::from_secs(2)),
        "{name}: the middleware wrote again {:?} after the new primary accepted writes (None: never)",
        m.gap
    );
    assert_eq!(m.lost, 0, "{name}: acknowledged writes lost");
    assert_eq!(
        m.stale, 0,
        "{name}: stale reads through the primary pool after settling"
    );
    drop(f);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn planned_failover() {
    scenario("planned", [0, 1], |f: &Formation| f.perform_failover()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_of_the_primarys_postmaster() {
    scenario("kill_postmaster", [0, 1], |f: &Formation| {
        Formation::signal("KILL", f.postmaster(0)?)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_of_the_whole_primary_node() {
    scenario("kill_node", [0, 1], |f: &Formation| {
        Formation::signal("KILL", f.node_group(0))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hung_primary_listed_first() {
    scenario("sigstop_first", [0, 1], |f: &Formation| {
        Formation::signal("STOP", f.node_group(0))
    })
    .await;
}

/// The old primary's keeper stops (so nothing demotes it) and the primary turns read-only
/// (`default_transaction_read_only=on`, reloaded), then a failover is asked for: the monitor
/// gives up waiting for the old primary to report its demotion and promotes the other node;
/// the old primary stays up, read-only.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn old_primary_read_only_and_left_up() {
    scenario("read_only_left_up", [0, 1], |f: &Formation| {
        for pid in f.keeper_pids(0) {
            Formation::signal("STOP", pid)?;
        }
        let port = f.nodes[0].port;
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?
            .block_on(async move {
                let c = raw(port).await;
                c.batch_execute("ALTER SYSTEM SET default_transaction_read_only = on")
                    .await
                    .map_err(|e| e.to_string())?;
                c.batch_execute("SELECT pg_reload_conf()")
                    .await
                    .map_err(|e| e.to_string())
            })?;
        // The new primary stays `wait_primary` (its standby is gone), so the command
        // would wait for a `primary` that never comes.
        f.ask_failover()
    })
    .await;
}

/// [`split_brain`] names the old primary when it acknowledged a write well after the new one
/// took writes, and nothing when its last write came before, or within the 500 ms margin.
#[test]
fn split_brain_is_told_from_a_clean_switch() {
    let t = Instant::now();
    let at = |ms: u64| t + Duration::from_millis(ms);
    let new_primary = vec![(at(0), false), (at(1000), true), (at(1050), true)];
    let clean = vec![
        (at(0), true),
        (at(900), true),
        (at(950), false),
        (at(1400), true),
    ];
    assert_eq!(
        split_brain(&[clean, new_primary.clone()], 1, at(1000)),
        None
    );
    let split = vec![(at(0), true), (at(2500), true), (at(2550), false)];
    assert_eq!(
        split_brain(&[split, new_primary], 1, at(1000)).as_deref(),
        Some("node1 still acknowledged writes 1500 ms after node2 accepted writes")
    );
}
