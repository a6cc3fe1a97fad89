//! Reliability 28.4: the lifecycle never gets in the way: closed means closed, busy is not
//! down, and the upkeep never holds a free connection.
//!
//! - After `close()`, nothing the pool owns serves anyone: checkouts, readers (on a replica)
//!   and new listeners fail with `PoolClosed`; an open `Listener` stops (`recv` gives `None`,
//!   `listen` fails with `PoolClosed`); and every session the pool had open on the server,
//!   the listener's and the replica pool's included, is gone within two seconds. The pool's
//!   background upkeep ends at once (the runtime's live tasks, SQLite).
//! - With `min_idle` and connections that take 1.5 s to open, a caller whose own connection is
//!   free between its checkouts never waits for one to open (Postgres through a delaying
//!   relay).
//! - A replica whose connections are all in use is waited for like any pool: the reader fails
//!   with `PoolTimeout` after the wait timeout, and the replica is not marked down, so the
//!   next reader (with no fallback to the primary) gets it again.

use std::time::{Duration, Instant};

use sql_middleware::prelude::*;

use crate::common;

/// The test server's URL with `application_name` set (so its sessions can be counted).
fn url_as(app: &str) -> String {
    let base = common::pg::base_url();
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}application_name={app}")
}

async fn sessions(admin: &tokio_postgres::Client, app: &str) -> i64 {
    admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .await
        .expect("pg_stat_activity")
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_closes_readers_listeners_and_sessions() {
    let _group = common::groups::enter("lifecycle");
    let app = format!("sqlmw_close_{}", common::pg::random_hex());
    let admin = common::pg::raw_client(&common::pg::base_url()).await;
    let db = ConfigAndPool::postgres(&url_as(&app))
        .replica(&url_as(&app))
        .replica_fallback(false)
        .max_size(2)
        .build()
        .await
        .expect("pool");
    drop(db.get_connection().await.expect("checkout"));
    drop(db.reader().await.expect("reader"));
    let mut listener = db.listener().await.expect("listener");
    listener.listen("sqlmw_close").await.expect("listen");
    let open = sessions(&admin, &app).await;
    db.close();
    let mut wrong = Vec::new();
    let kind = |r: Result<(), SqlMiddlewareDbError>| r.err().map(|e| e.kind());
    for (what, got) in [
        ("get_connection", kind(db.get_connection().await.map(drop))),
        ("reader", kind(db.reader().await.map(drop))),
        ("listener", kind(db.listener().await.map(drop))),
    ] {
        if got != Some(ErrorKind::PoolClosed) {
            wrong.push(format!("{what} after close: {got:?}"));
        }
    }
    let recv = tokio::time::timeout(Duration::from_secs(2), listener.recv()).await;
    if !matches!(recv, Ok(None)) {
        wrong.push(format!("the open listener still receives: {recv:?}"));
    }
    let listen = listener.listen("again").await.err().map(|e| e.kind());
    if listen != Some(ErrorKind::PoolClosed) {
        wrong.push(format!("listen after close: {listen:?}"));
    }
    let t = Instant::now();
    let mut left = sessions(&admin, &app).await;
    while left > 0 && t.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        left = sessions(&admin, &app).await;
    }
    if left > 0 {
        wrong.push(format!(
            "{left} of {open} sessions still open 2 s after close"
        ));
    }
    println!(
        "lifecycle_close sessions_before={open} sessions_after={left} wrong={}",
        wrong.len()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_replica_is_waited_for_not_marked_down() {
    let _group = common::groups::enter("lifecycle");
    let app = format!("sqlmw_busy_{}", common::pg::random_hex());
    let wait = Duration::from_millis(300);
    let db = ConfigAndPool::postgres(&url_as(&app))
        .replica(&url_as(&app))
        .replica_fallback(false)
        .max_size(1)
        .wait_timeout(wait)
        .build()
        .await
        .expect("pool");
    let held = db.reader().await.expect("the replica's one connection");
    let t = Instant::now();
    let busy = db.reader().await.map(drop);
    let waited = t.elapsed();
    drop(held);
    let next = db.reader().await.map(drop);
    db.close();
    println!(
        "lifecycle_busy_replica busy={:?} waited_ms={} next={:?}",
        busy.as_ref().err().map(|e| e.kind()),
        waited.as_millis(),
        next.as_ref().err().map(|e| e.kind())
    );
    assert_eq!(
        busy.err().map(|e| e.kind()),
        Some(ErrorKind::PoolTimeout),
        "a busy replica must time out like any pool"
    );
    assert!(waited >= wait, "it waited {waited:?}, not the wait timeout");
    assert!(
        next.is_ok(),
        "the busy replica was marked down: {:?}",
        next.err()
    );
}

/// `min_idle` with connections that take 1.5 s to open (a delaying relay): one caller checks
/// out, uses and returns a connection in a loop for 6 s while the upkeep opens more. Its own
/// connection is free between its checkouts, so no checkout after the first may wait for a
/// connection to open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upkeep_never_delays_a_checkout_while_a_connection_is_free() {
    use crate::common::proxy::{Relay, config_at, target_of};
    let _group = common::groups::enter("lifecycle");
    let base: tokio_postgres::Config = common::pg::base_url().parse().expect("test URL");
    let relay = Relay::start(target_of(&base)).await;
    relay.delay_new_connections(Duration::from_millis(1500));
    let db = ConfigAndPool::postgres_config(config_at(&base, relay.addr.port()))
        .max_size(4)
        .min_idle(3)
        .build()
        .await
        .expect("pool");
    let t = Instant::now();
    let (mut checkouts, mut slowest) = (0, Duration::ZERO);
    let mut first = true;
    while t.elapsed() < Duration::from_secs(6) {
        let started = Instant::now();
        let mut c = db.get_connection().await.expect("checkout");
        let took = started.elapsed();
        c.execute_batch("SELECT 1").await.expect("SELECT 1");
        drop(c);
        if !first {
            checkouts += 1;
            slowest = slowest.max(took);
        }
        first = false;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let size = db.status().size;
    db.close();
    println!(
        "lifecycle_upkeep checkouts={checkouts} slowest_ms={} size={size}",
        slowest.as_millis()
    );
    assert!(
        slowest < Duration::from_millis(500),
        "a checkout waited {slowest:?} while a connection was free"
    );
    assert!(
        size >= 3,
        "min_idle did not open the connections: size {size}"
    );
}

/// `close()` ends the pool's background upkeep at once (here with a 30 s tick: `min_idle` and
/// a one-hour `max_lifetime`), counted as the runtime's live tasks.
#[cfg(feature = "sqlite")]
#[test]
fn close_ends_the_background_upkeep_at_once() {
    let _group = common::groups::enter("lifecycle");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (before, running, after) = rt.block_on(async {
        let alive = || {
            tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks()
        };
        let before = alive();
        let db = ConfigAndPool::sqlite_memory()
            .min_idle(1)
            .max_lifetime(Duration::from_secs(3600))
            .build()
            .await
            .expect("pool");
        drop(db.get_connection().await.expect("checkout"));
        let running = alive();
        db.close();
        tokio::time::sleep(Duration::from_millis(100)).await;
        (before, running, alive())
    });
    println!("lifecycle_upkeep_close tasks_before={before} running={running} after_close={after}");
    assert!(running > before, "no upkeep task was seen");
    assert_eq!(after, before, "the upkeep outlived close()");
}
