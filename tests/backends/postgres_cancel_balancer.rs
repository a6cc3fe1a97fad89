//! Postgres: a statement stopped by its time limit is stopped with a cancel request, which
//! travels on a connection of its own. Behind a TCP load balancer that spreads connections over
//! two servers, that connection may reach the other server. A cancel request names the session
//! by its process id and the secret key its server gave it, so on the other server it must stop
//! nothing, even where that process id is another client's.
//!
//! Two throwaway clusters on one machine never share a live process id, so the collision a
//! balancer over two machines meets is arranged in the relay: a cancel request for the
//! middleware's session that goes to the second server is rewritten to carry the victim's
//! process id there (and still the middleware's secret key), as if that id were the victim's on
//! that server. The victim's statement must run its full time; the middleware's call must fail
//! with `Timeout` within its limit; and its own statement is stopped once a cancel request
//! reaches its server.
#![cfg(feature = "postgres")]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::groups;
use crate::common::pg;
use crate::common::proxy::{Relay, Target};

/// The limit the middleware's statement gets.
const LIMIT: Duration = Duration::from_millis(150);
/// How much later than its limit the call may fail.
const CALL_SLACK: Duration = Duration::from_secs(1);
/// How long the victim's statement sleeps.
const VICTIM_SLEEP: Duration = Duration::from_secs(3);
/// The pool's recycle timeout: the bound on the background work after a limit.
const BOUND: Duration = Duration::from_secs(3);
/// How long the middleware's own statement may still show on its server once stopped.
const GONE_WITHIN: Duration = Duration::from_secs(3);
/// The protocol's code of a cancel request (`CancelRequest`: length 16, this code, process id,
/// secret key; all big-endian 32-bit integers).
const CANCEL_CODE: u32 = 80_877_102;

/// Two private clusters.
struct Servers {
    urls: [String; 2],
    addrs: [SocketAddr; 2],
}

/// The two clusters, started once for this module's tests (in parallel); the tests take turns.
async fn servers() -> (&'static Servers, tokio::sync::MutexGuard<'static, ()>) {
    static SERVERS: tokio::sync::OnceCell<Servers> = tokio::sync::OnceCell::const_new();
    static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let turn = TURN.lock().await;
    let s = SERVERS
        .get_or_init(|| async {
            let start = || std::thread::spawn(pg::cluster::start_restartable_cluster);
            let (a, b) = (start(), start());
            let urls = [a, b].map(|t| {
                t.join()
                    .expect("the cluster start panicked")
                    .unwrap_or_else(|e| {
                        panic!(
                            "these tests need two PostgreSQL clusters of their own, started from \
                             the installed server binaries (initdb and pg_ctl): {e}"
                        )
                    })
                    .url
            });
            let addrs = urls.clone().map(|u| {
                let cfg: tokio_postgres::Config = u.parse().expect("cluster URL");
                let port = cfg.get_ports().first().copied().expect("a port");
                SocketAddr::from(([127, 0, 0, 1], port))
            });
            Servers { urls, addrs }
        })
        .await;
    (s, turn)
}

/// Whether a session on `admin`'s server runs a statement starting with `/* tag */`.
async fn runs(admin: &tokio_postgres::Client, tag: &str) -> bool {
    let n: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE pid <> pg_backend_pid() AND state = 'active' AND query LIKE $1",
            &[&format!("/* {tag} */%")],
        )
        .await
        .expect("pg_stat_activity")
        .get(0);
    n > 0
}

/// Rewrites a cancel request for process `from` into one for process `to` (the same secret key)
/// on connections to target 1, and counts them.
fn collide_on_target_1(relay: &Relay, from: i32, to: i32, count: Arc<AtomicU64>) {
    relay.rewrite_first_packet(Arc::new(move |target, bytes: &mut Vec<u8>| {
        let word = |b: &[u8], i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        if target == 1
            && bytes.len() == 16
            && word(bytes, 0) == 16
            && word(bytes, 4) == CANCEL_CODE
            && bytes[8..12] == from.to_be_bytes()
        {
            bytes[8..12].copy_from_slice(&to.to_be_bytes());
            count.fetch_add(1, Ordering::SeqCst);
        }
    }));
}

/// What a scenario saw.
struct Seen {
    /// Cancel connections the relay passed on after the middleware's own connection.
    tries: u64,
    /// Cancel requests that reached the victim's server carrying the victim's process id.
    collided: u64,
    /// The victim's statement was cancelled (or failed).
    wrong_cancels: u32,
    /// How long the middleware's statement still ran after its call failed (`None`: it still
    /// ran [`GONE_WITHIN`] later).
    own_stopped: Option<Duration>,
    problems: Vec<String>,
}

/// The scenario: the middleware's connection on server 0 (through the relay), a victim on
/// server 1 running; the middleware's statement passes its limit. With `pin`, every connection
/// after the middleware's goes to server 1 (no cancel request reaches the middleware's server).
async fn collide(s: &Servers, pin: bool) -> Seen {
    let relay = Relay::spread(vec![Target::Tcp(s.addrs[0]), Target::Tcp(s.addrs[1])]).await;
    let mut problems = Vec::new();
    // Plain text: under `prefer` each connection (a cancel request's too) opens with a TLS
    // request, and the cancel request would not be its first packet.
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable",
        relay.addr.port()
    );
    let db = ConfigAndPool::postgres(&url)
        .max_size(1)
        .wait_timeout(Duration::from_secs(5))
        .recycle_timeout(BOUND)
        .build()
        .await
        .expect("pool through the relay");
    let mut c = db
        .get_connection()
        .await
        .expect("checkout through the relay");
    let (pid, port): (i32, i32) = c
        .query("SELECT pg_backend_pid(), inet_server_port()")
        .one()
        .await
        .expect("the middleware's process id");
    assert_eq!(
        (relay.relayed(0), relay.relayed(1)),
        (1, 0),
        "the pool's first connection must be the relay's first, to server 0"
    );
    assert_eq!(
        port,
        i32::from(s.addrs[0].port()),
        "the middleware's connection reached the wrong server"
    );
    if pin {
        relay.pin_new_connections(Some(1));
    }

    // The victim, on server 1.
    let victim = pg::raw_client(&s.urls[1]).await;
    let victim_pid: i32 = victim
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .expect("the victim's process id")
        .get(0);
    let collided = Arc::new(AtomicU64::new(0));
    collide_on_target_1(&relay, pid, victim_pid, Arc::clone(&collided));
    let victim_tag = format!("victim {}", crate::common::backends::unique_hex());
    let admin1 = pg::raw_client(&s.urls[1]).await;
    let sleep = format!(
        "/* {victim_tag} */ SELECT pg_sleep({})",
        VICTIM_SLEEP.as_secs_f64()
    );
    let victim = tokio::spawn(async move {
        let t = Instant::now();
        let r = victim
            .simple_query(&sleep)
            .await
            .map(drop)
            .map_err(|e| format!("{e} ({:?})", e.code().map(|c| c.code().to_owned())));
        (r, t.elapsed())
    });
    let t = Instant::now();
    while !runs(&admin1, &victim_tag).await {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the victim's statement did not start"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // The middleware's statement passes its limit.
    let own_tag = format!("own {}", crate::common::backends::unique_hex());
    let t = Instant::now();
    let r = c
        .query(&format!("/* {own_tag} */ SELECT pg_sleep(60)"))
        .timeout(LIMIT)
        .select()
        .await;
    let took = t.elapsed();
    let failed_at = Instant::now();
    match r {
        Err(e) if e.kind() == ErrorKind::Timeout => {}
        other => problems.push(format!("the middleware's call gave {other:?}")),
    }
    if took > LIMIT + CALL_SLACK {
        problems.push(format!("the middleware's call failed only after {took:?}"));
    }
    drop(c);

    // Its own statement, on server 0.
    let admin0 = pg::raw_client(&s.urls[0]).await;
    let mut own_stopped = None;
    while failed_at.elapsed() < GONE_WITHIN {
        if !runs(&admin0, &own_tag).await {
            own_stopped = Some(failed_at.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // The victim's statement ran its full time.
    let (result, ran) = victim.await.expect("the victim's task");
    let mut wrong_cancels = 0;
    if result.is_err() || ran < VICTIM_SLEEP - Duration::from_millis(50) {
        wrong_cancels += 1;
        problems.push(format!(
            "the victim's statement on the other server was stopped: {result:?} after {ran:?} \
             of {VICTIM_SLEEP:?}"
        ));
    }
    // The background work is bounded: wait for the bound, then count what the relay passed on.
    tokio::time::sleep(BOUND.saturating_sub(failed_at.elapsed())).await;
    let tries = relay.relayed(0) + relay.relayed(1) - 1;
    // The statement the middleware could not stop is ended here, so it does not hold the server.
    let _ = admin0
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE pid <> pg_backend_pid() AND query LIKE $1",
            &[&format!("/* {own_tag} */%")],
        )
        .await;
    Seen {
        tries,
        collided: collided.load(Ordering::SeqCst),
        wrong_cancels,
        own_stopped,
        problems,
    }
}

/// Round robin: the first cancel request reaches the victim's server under the victim's process
/// id and must stop nothing there; the next reaches the middleware's server and stops the
/// middleware's own statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_behind_a_balancer_cancels_only_the_middlewares_statement() {
    let _group = groups::enter("postgres");
    let (s, _turn) = servers().await;
    let seen = collide(s, false).await;
    println!(
        "postgres_cancel_via_balancer tries={} collided={} wrong_cancels={} own_stopped_ms={:?}",
        seen.tries,
        seen.collided,
        seen.wrong_cancels,
        seen.own_stopped.map(|d| d.as_millis())
    );
    let mut problems = seen.problems;
    if seen.collided == 0 {
        problems.push(
            "no cancel request reached the victim's server under its process id: the collision \
             was not tried"
                .into(),
        );
    }
    if seen.own_stopped.is_none() {
        problems.push(format!(
            "the middleware's own statement still ran {GONE_WITHIN:?} after its call failed \
             ({} cancel requests)",
            seen.tries
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every cancel request reaches the victim's server under the victim's process id: none may
/// stop it; the requests are bounded, and the call still fails within its limit (the
/// middleware's own statement then runs on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_requests_on_the_wrong_server_cancel_nothing() {
    let _group = groups::enter("postgres");
    let (s, _turn) = servers().await;
    let seen = collide(s, true).await;
    println!(
        "postgres_cancel_unproven tries={} collided={} wrong_cancels={} own_stopped_ms={:?}",
        seen.tries,
        seen.collided,
        seen.wrong_cancels,
        seen.own_stopped.map(|d| d.as_millis())
    );
    let mut problems = seen.problems;
    if seen.collided < 2 {
        problems.push(format!(
            "no second cancel request followed one that did not stop the statement \
             (collided={})",
            seen.collided
        ));
    }
    if seen.tries > 16 {
        problems.push(format!(
            "the cancel requests are not bounded (tries={})",
            seen.tries
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
