//! MySQL multi-host URLs, with the meanings Postgres ones have: the hosts of
//! `mysql://user@h1:p1,h2:p2/db` are tried in order (or shuffled with
//! `load_balance_hosts=random`), each within `connect_timeout` (a host that accepts the TCP
//! connect and then says nothing is left after that bound), and the hosts that failed lately
//! are tried last. `target_session_attrs` takes `any` and `read-write`; bad forms are
//! configuration errors. `causal_reads=true` sets `wsrep_sync_wait=1` on every connection and
//! again after each session reset. (Galera's node health is in the reliability suite's
//! `galera` topic, which starts a cluster.)
#![cfg(feature = "mysql")]

use std::net::TcpListener;
use std::time::{Duration, Instant};

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::groups;
use crate::common::mysql;

/// `url` with `extra` hosts listed before its own, and `query` appended.
fn with_hosts(url: &str, extra: &[String], query: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (authority, tail) = rest.split_once('/').expect("a database");
    let (user, host) = authority.rsplit_once('@').expect("a user");
    let mut hosts = extra.to_vec();
    hosts.push(host.to_owned());
    let sep = if tail.contains('?') { '&' } else { '?' };
    format!("{scheme}://{user}@{}/{tail}{sep}{query}", hosts.join(","))
}

/// A port that refuses connections (bound a moment ago, then closed).
fn refused() -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    format!("127.0.0.1:{}", l.local_addr().expect("addr").port())
}

#[tokio::test]
async fn hosts_are_tried_in_order_each_within_its_bound() {
    let _group = groups::enter("mysql_hosts");
    mysql::with_database(|url| async move {
        // Accepts the TCP connect, never answers the handshake.
        let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
        let silent_host = format!("127.0.0.1:{}", silent.local_addr().unwrap().port());
        let url = with_hosts(
            &url,
            &[silent_host, refused()],
            "connect_timeout=1&target_session_attrs=read-write",
        );
        let db = ConfigAndPool::mysql(&url)
            .max_size(2)
            .create_timeout(Duration::from_secs(10))
            .wait_timeout(Duration::from_secs(10))
            .build()
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", mysql::redact(&url)));
        let t = Instant::now();
        let mut c = db.get_connection().await.expect("the third host");
        let first = t.elapsed();
        let (n,): (i64,) = c.query("SELECT 41 + 1").one().await.unwrap();
        assert_eq!(n, 42);
        assert!(
            first >= Duration::from_millis(900) && first < Duration::from_secs(4),
            "the silent host is left after connect_timeout (1 s): {first:?}"
        );
        // The hosts that failed are tried last now: the next connect goes straight through.
        let t = Instant::now();
        let c2 = db.get_connection().await.expect("a second connection");
        let second = t.elapsed();
        assert!(
            second < Duration::from_millis(800),
            "hosts that failed lately are tried last: {second:?}"
        );
        drop((c, c2));
        println!(
            "mysql_hosts first_connect_ms={} second_connect_ms={}",
            first.as_millis(),
            second.as_millis()
        );
    })
    .await;
}

#[tokio::test]
async fn random_order_and_any_reach_the_live_host() {
    let _group = groups::enter("mysql_hosts");
    mysql::with_database(|url| async move {
        let url = with_hosts(
            &url,
            &[refused()],
            "load_balance_hosts=random&target_session_attrs=any&connect_timeout=2",
        );
        let db = ConfigAndPool::mysql(&url)
            .max_size(1)
            .build()
            .await
            .expect("pool");
        for _ in 0..5 {
            let mut c = db.get_connection().await.expect("the live host");
            let (n,): (i64,) = c.query("SELECT 1").one().await.unwrap();
            assert_eq!(n, 1);
        }
    })
    .await;
}

#[tokio::test]
async fn bad_multi_host_forms_are_configuration_errors() {
    let _group = groups::enter("mysql_hosts");
    for url in [
        "mysql://root@h1:3306,h2:x/db",
        "mysql://root@h1,:3306/db",
        "mysql://root@h1,h2/db?target_session_attrs=standby",
        "mysql://root@h1,h2/db?load_balance_hosts=sometimes",
        "mysql://root@h1,h2/db?connect_timeout=soon",
        "mysql://root@h1,h2/db?causal_reads=maybe",
    ] {
        let e = ConfigAndPool::mysql(url)
            .build()
            .await
            .map(drop)
            .expect_err(url);
        assert_eq!(e.kind(), ErrorKind::Config, "{url}: {e}");
    }
    // A password in the URL is never shown in the error.
    let e = ConfigAndPool::mysql("mysql://root:s3cret@h1,h2:bad/db")
        .build()
        .await
        .map(drop)
        .expect_err("bad port");
    assert!(!format!("{e} {e:?}").contains("s3cret"), "{e:?}");
}

#[tokio::test]
async fn causal_reads_survive_session_resets() {
    let _group = groups::enter("mysql_hosts");
    mysql::with_database(|url| async move {
        let sep = if url.contains('?') { '&' } else { '?' };
        for (db, how) in [
            (
                ConfigAndPool::mysql(&format!("{url}{sep}causal_reads=true")),
                "URL",
            ),
            (ConfigAndPool::mysql(&url).causal_reads(true), "builder"),
        ] {
            let db = db.max_size(1).build().await.expect("pool");
            for round in 0..3 {
                let mut c = db.get_connection().await.unwrap();
                let (v,): (i64,) = c.query("SELECT @@wsrep_sync_wait").one().await.unwrap();
                assert_eq!(v, 1, "{how}, checkout {round}");
                // The borrower changes it; the reset on return brings it back.
                c.execute_batch("SET SESSION wsrep_sync_wait = 0")
                    .await
                    .unwrap();
                let (v,): (i64,) = c.query("SELECT @@wsrep_sync_wait").one().await.unwrap();
                assert_eq!(v, 0);
            }
        }
        // Without the setting, the server's default (0).
        let db = ConfigAndPool::mysql(&url)
            .max_size(1)
            .build()
            .await
            .unwrap();
        let mut c = db.get_connection().await.unwrap();
        let (v,): (i64,) = c.query("SELECT @@wsrep_sync_wait").one().await.unwrap();
        assert_eq!(v, 0);
    })
    .await;
}

/// The address of the one server in `url` (`mysql://user@host:port/db…`).
fn server_addr(url: &str) -> std::net::SocketAddr {
    use std::net::ToSocketAddrs;
    let rest = url.split_once("://").expect("a URL").1;
    let authority = rest.split_once('/').expect("a database").0;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:3306")
    };
    host.to_socket_addrs()
        .expect("the server's address")
        .next()
        .expect("an address")
}

/// A host that stops answering (a frozen node, a network that drops packets) while the pool
/// holds an idle connection to it costs a checkout the URL's `connect_timeout`, as a new
/// connection to it would, and not the pool's recycle timeout: the network work a checkout does
/// on a pooled connection (the periodic node check, the reset of a session the borrower
/// changed) is bounded by it, and a host that does not answer it is left by the pool's other
/// connections too.
#[tokio::test]
async fn a_host_gone_silent_costs_a_checkout_its_connect_timeout() {
    let _group = groups::enter("mysql_hosts");
    mysql::with_database(|url| async move {
        use crate::common::proxy::{Relay, Target};
        // (dirty, why): the borrower changes its session (reset at checkout), or not (the node
        // check once its period passed).
        for (dirty, why) in [(false, "the node check"), (true, "the session reset")] {
            let relay = Relay::start(Target::Tcp(server_addr(&url))).await;
            let url = with_hosts(
                &url,
                &[relay.addr.to_string()],
                "connect_timeout=1&target_session_attrs=read-write",
            );
            let db = ConfigAndPool::mysql(&url)
                .max_size(2)
                .recycle_timeout(Duration::from_secs(8))
                .wait_timeout(Duration::from_secs(20))
                .create_timeout(Duration::from_secs(20))
                .build()
                .await
                .unwrap_or_else(|e| panic!("{}: {e}", mysql::redact(&url)));
            {
                // Both connections go through the relay (the first host).
                let (mut a, mut b) = (
                    db.get_connection().await.unwrap(),
                    db.get_connection().await.unwrap(),
                );
                for c in [&mut a, &mut b] {
                    c.execute_batch("SELECT 1").await.unwrap();
                    if dirty {
                        c.execute_batch("SET @sqlmw_touched = 1").await.unwrap();
                    }
                }
                assert!(relay.relayed(0) >= 2, "{why}: both opened through the relay");
            }
            // The node check runs once its period (2 s) has passed since the connect's check.
            tokio::time::sleep(Duration::from_millis(2200)).await;
            relay.go_silent();
            let _backlog = relay.fill_backlog();
            let t = Instant::now();
            let mut c = db.get_connection().await.expect("the other host");
            let (n,): (i64,) = c.query("SELECT 41 + 1").one().await.unwrap();
            let took = t.elapsed();
            assert_eq!(n, 42);
            assert!(
                took < Duration::from_millis(2500),
                "{why}: a checkout past a silent host took {took:?} (connect_timeout is 1 s, the recycle timeout 8 s)"
            );
            println!(
                "mysql_hosts silent_host_checkout_ms={} via={}",
                took.as_millis(),
                if dirty { "reset" } else { "node_check" }
            );
            drop(c);
            db.close();
        }
    })
    .await;
}
