//! Reliability 14: every network wait is bounded (Postgres). A server that stops answering
//! without closing anything (a dropped network path, a hung host) costs the caller a typed error
//! within the pool's timeouts: cancelling the abandoned statement, repairing the connection,
//! connecting a replacement and checking out each give up in time. (Found: the cancel request
//! sent while repairing a connection waited for the server forever.) With
//! `test_before_acquire`, a connection the network dropped silently is replaced at checkout;
//! with `connect_on_build`, a pool built before its server is up waits for it, within a bound.

use std::time::{Duration, Instant};

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::groups;
use crate::common::proxy::{Relay, assert_given_up_within, config_at, target_of};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswering_server_costs_typed_errors_in_bounded_time() {
    let _group = groups::enter("bounded");
    let base: tokio_postgres::Config = crate::common::pg::base_url().parse().expect("test URL");
    let relay = Relay::start(target_of(&base)).await;
    let cfg = config_at(&base, relay.addr.port());
    let bound = Duration::from_millis(500);
    let pool = ConfigAndPool::postgres_config(cfg)
        .max_size(1)
        .wait_timeout(bound)
        .create_timeout(bound)
        .recycle_timeout(bound)
        .build()
        .await
        .expect("pool through the relay");
    let mut conn = pool.get_connection().await.expect("checkout");
    conn.query("SELECT 1")
        .select()
        .await
        .expect("a first query");

    relay.go_silent();
    let _queue = relay.fill_backlog();
    // A statement the server never answers; the caller gives up on it.
    let abandoned =
        tokio::time::timeout(Duration::from_millis(200), conn.query("SELECT 2").select()).await;
    assert!(
        abandoned.is_err(),
        "the silent server answered: {abandoned:?}"
    );

    // The next call repairs the connection: cancel, replacement, each bounded.
    let limit = Duration::from_secs(20);
    let t = Instant::now();
    let next = tokio::time::timeout(limit, conn.query("SELECT 3").select())
        .await
        .unwrap_or_else(|_| panic!("the call after an abandoned one hung for {limit:?}"));
    let repair = t.elapsed();
    let e = next.expect_err("a silent server cannot answer");
    assert!(
        matches!(e.kind(), ErrorKind::ConnectionLost | ErrorKind::PoolTimeout),
        "untyped error: {e:?}"
    );
    drop(conn);

    let t = Instant::now();
    let checkout = tokio::time::timeout(limit, pool.get_connection())
        .await
        .unwrap_or_else(|_| panic!("checkout hung for {limit:?}"));
    let checkout_took = t.elapsed();
    let e = checkout.expect_err("a silent server cannot give a connection");
    assert!(
        matches!(e.kind(), ErrorKind::ConnectionLost | ErrorKind::PoolTimeout),
        "untyped error: {e:?}"
    );
    println!(
        "bounded_waits bound_ms={} repair_ms={} checkout_ms={}",
        bound.as_millis(),
        repair.as_millis(),
        checkout_took.as_millis()
    );
    // Cancel (one bound) and a replacement's creation (one more), with room for a loaded machine.
    assert!(repair < bound * 6, "repair took {repair:?}");
    assert!(checkout_took < bound * 6, "checkout took {checkout_took:?}");
}

/// A network that silently forgets idle connections (a NAT or load balancer timing them out):
/// with `test_before_acquire`, a checkout notices within the recycle timeout and hands out a new
/// connection, so the caller's query succeeds instead of hanging.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_before_acquire_replaces_silently_dropped_connections() {
    let _group = groups::enter("bounded");
    let base: tokio_postgres::Config = crate::common::pg::base_url().parse().expect("test URL");
    let relay = Relay::start(target_of(&base)).await;
    let cfg = config_at(&base, relay.addr.port());
    let bound = Duration::from_millis(300);
    let pool = ConfigAndPool::postgres_config(cfg)
        .max_size(1)
        .recycle_timeout(bound)
        .test_before_acquire(true)
        .build()
        .await
        .expect("pool through the relay");
    {
        let mut c = pool.get_connection().await.expect("checkout");
        c.query("SELECT 1").select().await.expect("a first query");
    }
    relay.cut_existing();
    let t = Instant::now();
    let mut c = tokio::time::timeout(Duration::from_secs(20), pool.get_connection())
        .await
        .expect("checkout hung")
        .expect("a fresh connection");
    let (n,): (i32,) = tokio::time::timeout(Duration::from_secs(20), c.query("SELECT 2").one())
        .await
        .expect("the query hung on a dead connection")
        .expect("query");
    let took = t.elapsed();
    assert_eq!(n, 2);
    let st = pool.status();
    println!(
        "test_before_acquire bound_ms={} checkout_and_query_ms={} created={}",
        bound.as_millis(),
        took.as_millis(),
        st.created
    );
    assert_eq!(st.created, 2, "the dead connection was replaced");
    assert!(took < bound * 6, "took {took:?}");
}

/// The background work on a connection given back (resetting its session, rolling back) is
/// bounded by the pool's recycle timeout as configured, whether or not the pool times its
/// recycle checks (with the default `Fast` recycling it does not): a connection whose server
/// stopped answering is given up within that bound and its slot freed. (Found: the bound was
/// read from the pool's recycle timer, so once that timer was dropped for `Fast` pools, the work
/// waited 5 s whatever the configured timeout.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_cleaning_is_bounded_by_the_configured_recycle_timeout() {
    let _group = groups::enter("bounded");
    let base: tokio_postgres::Config = crate::common::pg::base_url().parse().expect("test URL");
    let bound = Duration::from_millis(300);
    for dirty in ["SET application_name = 'bounded_cleaning'", "BEGIN"] {
        let relay = Relay::start(target_of(&base)).await;
        let cfg = config_at(&base, relay.addr.port());
        assert_given_up_within(ConfigAndPool::postgres_config(cfg), &relay, dirty, bound).await;
    }
}

/// A service started before its database: `connect_on_build` retries with backoff until the
/// server answers, within its bound; past the bound, `build` fails with the driver's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_on_build_waits_for_a_server_that_comes_up() {
    let _group = groups::enter("bounded");
    let base: tokio_postgres::Config = crate::common::pg::base_url().parse().expect("test URL");
    // A port with nothing behind it yet.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let cfg = config_at(&base, port);
    let t = Instant::now();
    let e = ConfigAndPool::postgres_config(cfg.clone())
        .connect_on_build(Duration::from_millis(300))
        .build()
        .await
        .expect_err("no server yet");
    let gave_up = t.elapsed();
    assert_eq!(
        e.kind(),
        ErrorKind::ConnectionLost,
        "the driver's error: {e:?}"
    );
    assert!(
        gave_up < Duration::from_secs(3),
        "gave up after {gave_up:?}"
    );

    let target = target_of(&base);
    let starter = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        Relay::start_on(port, target).await
    });
    let t = Instant::now();
    let db = ConfigAndPool::postgres_config(cfg)
        .connect_on_build(Duration::from_secs(10))
        .build()
        .await
        .expect("connected once the server came up");
    let waited = t.elapsed();
    let _relay = starter.await.expect("relay");
    assert_eq!(db.status().created, 1);
    let mut c = db.get_connection().await.expect("checkout");
    c.query("SELECT 1").select().await.expect("query");
    println!(
        "connect_on_build gave_up_ms={} waited_for_server_ms={}",
        gave_up.as_millis(),
        waited.as_millis()
    );
    assert!(
        waited >= Duration::from_millis(300),
        "it waited: {waited:?}"
    );
}
