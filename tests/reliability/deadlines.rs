//! Reliability 16: the caller's limit is the bound (Postgres). A call with a limit `d` returns
//! within `d` + 100 ms whatever the server does (plus any time in which the machine itself ran
//! no waiting thread, measured beside each call: see `common::cpu::StallMeter`): a server whose processes are stopped
//! (SIGSTOP), or a loopback proxy that stops answering. The limit may be the call's own
//! `.timeout(..)`, the pool's `statement_timeout`, the checkout wait or the URL's
//! `connect_timeout`. Cancel requests and replacement connections run in the background; the
//! pool recovers by itself once the server answers again. Each test prints the time to its
//! first error and, where the server comes back (or a second host of the URL answers), the
//! time to the first success after. A stream past its limit stops its statement on the
//! server at once, and a stream dropped inside a transaction never delays the transaction's
//! next statement, whatever the query's shape.

use std::time::{Duration, Instant};

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::cpu::StallMeter;
use crate::common::groups;
use crate::common::proxy::{Relay, config_at, target_of};

/// How far past its limit a call may return (the bound).
const SLACK: Duration = Duration::from_millis(100);

/// The start of a timed call: its clock, and a [`StallMeter`] beside it.
struct Timed {
    t: Instant,
    stalls: StallMeter,
}

impl Timed {
    fn start() -> Self {
        let stalls = StallMeter::start();
        Timed {
            t: Instant::now(),
            stalls,
        }
    }

    /// The time since the start, and the bound for it: `limit` + [`SLACK`] + the time the
    /// machine ran no waiting thread meanwhile (a stall of the machine delays every timer,
    /// the caller's too; the code under test gets no other allowance).
    fn stop(self, limit: Duration) -> (Duration, Duration) {
        let took = self.t.elapsed();
        (took, limit + SLACK + self.stalls.finish())
    }
}

/// Asserts that `r` failed within `limit` + [`SLACK`] of the start of `timed` (see
/// [`Timed::stop`]), with one of `kinds`; returns the time it took.
fn within_limit<T: std::fmt::Debug>(
    what: &str,
    timed: Timed,
    limit: Duration,
    r: Result<T, SqlMiddlewareDbError>,
    kinds: &[ErrorKind],
) -> Duration {
    let (took, bound) = timed.stop(limit);
    let e = r.expect_err(&format!("{what}: an unanswering server cannot answer"));
    assert!(
        kinds.contains(&e.kind()),
        "{what}: unexpected error kind {:?}: {e}",
        e.kind()
    );
    assert!(
        took <= bound,
        "{what}: returned after {took:?}, past its limit {limit:?} + {SLACK:?} (bound {bound:?} with the machine's stalls)"
    );
    took
}

/// Runs `f` with an outer bound far past any limit, so a hang fails the test instead of
/// holding it.
async fn bounded<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .unwrap_or_else(|_| panic!("{what}: still waiting after 60 s"))
}

/// The processes of a throwaway cluster (its postmaster and every child), stopped with
/// SIGSTOP while this guard lives; dropping it (also on a failed assertion) sends SIGCONT.
struct Stopped(Vec<u32>);

impl Stopped {
    /// Stops the cluster whose postmaster is `postmaster`.
    fn stop(postmaster: u32) -> Stopped {
        let mut pids = vec![postmaster];
        pids.extend(children(postmaster));
        signal("-STOP", &pids);
        Stopped(pids)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        signal("-CONT", &self.0);
    }
}

fn signal(sig: &str, pids: &[u32]) {
    let mut cmd = std::process::Command::new("kill");
    cmd.arg(sig);
    for p in pids {
        cmd.arg(p.to_string());
    }
    let _ = cmd.status();
}

/// The parent pid of `pid`, from `/proc`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold spaces, so read after its last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The direct children of `pid`.
fn children(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| parent_of(p) == Some(pid))
        .collect()
}

/// A throwaway cluster's URL and its postmaster's pid.
async fn throwaway() -> Option<(String, u32)> {
    let url = crate::common::pg::cluster::start_throwaway_cluster()?;
    let client = crate::common::pg::raw_client(&url).await;
    let row = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .expect("backend pid");
    let backend = u32::try_from(row.get::<_, i32>(0)).expect("a pid");
    drop(client);
    Some((url, parent_of(backend).expect("the backend's postmaster")))
}

/// A server whose processes all stop (SIGSTOP): the pool's statement limit, a call's own limit
/// and the checkout wait each bound their call; once the processes resume, the pool serves
/// again without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_costs_each_call_its_limit_and_the_pool_recovers() {
    let _group = groups::enter("deadlines");
    let Some((url, postmaster)) = throwaway().await else {
        panic!("this test needs a throwaway PostgreSQL cluster (initdb, pg_ctl)");
    };
    let limit = Duration::from_millis(400);
    let own = Duration::from_millis(300);
    let pool = ConfigAndPool::postgres(&format!("{url}?connect_timeout=1"))
        .max_size(2)
        .statement_timeout(limit)
        .wait_timeout(limit)
        .build()
        .await
        .expect("pool");
    let mut conn = pool.get_connection().await.expect("checkout");
    conn.query("SELECT 1")
        .select()
        .await
        .expect("a first query");

    let stopped = Stopped::stop(postmaster);
    let t = Timed::start();
    let r = bounded("first call", conn.query("SELECT 2").select()).await;
    let first = within_limit("first call", t, limit, r, &[ErrorKind::Timeout]);
    // The same checkout again: its connection was given up; a replacement cannot connect.
    let t = Timed::start();
    let r = bounded("second call", conn.query("SELECT 3").select()).await;
    let second = within_limit(
        "second call",
        t,
        limit,
        r,
        &[ErrorKind::Timeout, ErrorKind::PoolTimeout],
    );
    let t = Timed::start();
    let r = bounded("own limit", conn.query("SELECT 4").timeout(own).select()).await;
    let third = within_limit(
        "own limit",
        t,
        own,
        r,
        &[ErrorKind::Timeout, ErrorKind::PoolTimeout],
    );
    drop(conn);
    let mut checkouts = Vec::new();
    for i in 0..3 {
        let t = Timed::start();
        let r = bounded("checkout", pool.get_connection()).await;
        checkouts.push(within_limit(
            &format!("checkout {i}"),
            t,
            limit,
            r,
            &[ErrorKind::PoolTimeout, ErrorKind::Timeout],
        ));
    }
    // A pool that has to connect to the stopped server: the URL's `connect_timeout` bounds
    // the whole connect (the kernel completes the TCP handshake; startup gets no answer).
    let connect_limit = Duration::from_secs(1);
    let fresh = ConfigAndPool::postgres(&format!("{url}?connect_timeout=1"))
        .wait_timeout(Duration::from_secs(30))
        .create_timeout(Duration::from_secs(30))
        .build()
        .await
        .expect("a pool that connects lazily");
    let t = Timed::start();
    let r = bounded("connect", fresh.get_connection()).await;
    let connect = within_limit(
        "connect",
        t,
        connect_limit,
        r,
        &[
            ErrorKind::Timeout,
            ErrorKind::PoolTimeout,
            ErrorKind::ConnectionLost,
        ],
    );
    drop(stopped);

    let t = Instant::now();
    let mut attempts = 0;
    loop {
        attempts += 1;
        let ok = async {
            let mut c = pool.get_connection().await?;
            c.query("SELECT 5").select().await
        }
        .await;
        if ok.is_ok() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "the pool did not recover within 15 s of the server resuming: {ok:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let recovered = t.elapsed();
    println!(
        "deadline_stopped_server limit_ms={} first_error_ms={} second_error_ms={} own_limit_error_ms={} checkout_error_ms={} connect_error_ms={} recovered_ms={} attempts={}",
        limit.as_millis(),
        first.as_millis(),
        second.as_millis(),
        third.as_millis(),
        checkouts
            .iter()
            .max()
            .unwrap_or(&Duration::ZERO)
            .as_millis(),
        connect.as_millis(),
        recovered.as_millis(),
        attempts
    );
}

/// A pool of `max_size` through a fresh relay to the test server, with `limit` as its statement
/// timeout and checkout wait, and one checkout that has run a first query through it.
async fn through_relay(
    max_size: usize,
    limit: Duration,
) -> (Relay, ConfigAndPool, MiddlewarePoolConnection) {
    let base: tokio_postgres::Config = crate::common::pg::base_url().parse().expect("test URL");
    let relay = Relay::start(target_of(&base)).await;
    let pool = ConfigAndPool::postgres_config(config_at(&base, relay.addr.port()))
        .max_size(max_size)
        .statement_timeout(limit)
        .wait_timeout(limit)
        .build()
        .await
        .expect("pool through the relay");
    let mut conn = pool.get_connection().await.expect("checkout");
    conn.query("SELECT 1")
        .select()
        .await
        .expect("a first query");
    (relay, pool, conn)
}

/// A proxy that stops relaying (a silent network path): every limit is the bound, the URL's
/// `connect_timeout` included, which covers the whole connect (TCP, startup, authentication),
/// not only the TCP handshake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_proxy_costs_each_call_its_limit() {
    let _group = groups::enter("deadlines");
    let limit = Duration::from_millis(400);
    let (relay, pool, mut conn) = through_relay(3, limit).await;
    let mut tx_conn = pool.get_connection().await.expect("second checkout");
    let mut tx = tx_conn.begin().await.expect("begin");
    // A transaction dropped without its end: the connection's next `begin` rolls it back first.
    let mut dropped_conn = pool.get_connection().await.expect("third checkout");
    drop(dropped_conn.begin().await.expect("begin"));

    relay.go_silent();
    let t = Timed::start();
    let r = bounded("statement", conn.query("SELECT 2").select()).await;
    let first = within_limit("statement", t, limit, r, &[ErrorKind::Timeout]);
    let t = Timed::start();
    let r = bounded("next statement", conn.query("SELECT 3").select()).await;
    let second = within_limit(
        "next statement",
        t,
        limit,
        r,
        &[ErrorKind::Timeout, ErrorKind::PoolTimeout],
    );
    // Inside a transaction: the statement, then the rollback the caller asks for.
    let t = Timed::start();
    let r = bounded("transaction", async {
        let r = tx.query("SELECT 4").select().await;
        let _ = tx.rollback().await;
        r
    })
    .await;
    let in_tx = within_limit(
        "transaction",
        t,
        limit * 2,
        r,
        &[ErrorKind::Timeout, ErrorKind::PoolTimeout],
    );
    let t = Timed::start();
    let r = bounded("begin after a dropped Tx", dropped_conn.begin()).await;
    let begin = within_limit(
        "begin after a dropped Tx",
        t,
        limit,
        r.map(drop),
        &[ErrorKind::Timeout, ErrorKind::PoolTimeout],
    );
    drop(conn);
    drop(tx_conn);
    drop(dropped_conn);

    // A pool that has to connect through the silent proxy: the connect (accepted, never
    // answered) is bounded by the URL's `connect_timeout` (seconds), not only its TCP part.
    let connect_limit = Duration::from_secs(1);
    let base: tokio_postgres::Config = crate::common::pg::base_url().parse().expect("test URL");
    let mut cfg = config_at(&base, relay.addr.port());
    cfg.connect_timeout(connect_limit);
    let fresh = ConfigAndPool::postgres_config(cfg)
        .wait_timeout(Duration::from_secs(30))
        .create_timeout(Duration::from_secs(30))
        .build()
        .await
        .expect("a pool that connects lazily");
    let t = Timed::start();
    let r = bounded("connect", fresh.get_connection()).await;
    let connect = within_limit(
        "connect",
        t,
        connect_limit,
        r,
        &[
            ErrorKind::Timeout,
            ErrorKind::PoolTimeout,
            ErrorKind::ConnectionLost,
        ],
    );
    println!(
        "deadline_silent_proxy limit_ms={} first_error_ms={} next_error_ms={} tx_error_ms={} begin_error_ms={} connect_limit_ms={} connect_error_ms={}",
        limit.as_millis(),
        first.as_millis(),
        second.as_millis(),
        in_tx.as_millis(),
        begin.as_millis(),
        connect_limit.as_millis(),
        connect.as_millis()
    );
}

/// The state of backend `pid` (`None` once it has exited).
async fn backend_state(watcher: &tokio_postgres::Client, pid: i32) -> Option<String> {
    watcher
        .query_opt(
            "SELECT coalesce(state, '') FROM pg_stat_activity WHERE pid = $1",
            &[&pid],
        )
        .await
        .expect("pg_stat_activity")
        .map(|r| r.get(0))
}

/// Polls until backend `pid` runs no statement; returns how long that took (`None`: still
/// running after 5 s).
async fn until_stopped(watcher: &tokio_postgres::Client, pid: i32) -> Option<Duration> {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(5) {
        match backend_state(watcher, pid).await.as_deref() {
            Some("active") => tokio::time::sleep(Duration::from_millis(20)).await,
            _ => return Some(t.elapsed()),
        }
    }
    None
}

/// Reads `stream` until its error, which must be a `Timeout` at its limit; then, with the
/// stream still held, waits for backend `pid` to stop running it (which must take under 1 s).
/// Returns the rows read, when the stream ended, and how long the statement ran on after.
async fn past_limit<S>(
    what: &str,
    stream: &mut S,
    t: Timed,
    limit: Duration,
    watcher: &tokio_postgres::Client,
    pid: i32,
) -> (usize, Duration, Duration)
where
    S: futures_util::Stream<Item = Result<(i64,), SqlMiddlewareDbError>> + Unpin,
{
    use futures_util::StreamExt;
    let mut rows = 0;
    let error = loop {
        match bounded(what, stream.next()).await {
            Some(Ok(_)) => rows += 1,
            Some(Err(e)) => break e,
            None => panic!("{what}: the slow stream ended without an error"),
        }
    };
    let (ended, bound) = t.stop(limit);
    assert_eq!(error.kind(), ErrorKind::Timeout, "{what}: {error:?}");
    assert!(
        ended <= bound,
        "{what}: the stream ended {ended:?} after its start (limit {limit:?}, bound {bound:?})"
    );
    let stopped = until_stopped(watcher, pid).await;
    let state = backend_state(watcher, pid).await;
    assert!(
        stopped.is_some_and(|d| d < Duration::from_secs(1)),
        "{what}: the statement still runs on the server after the stream's Timeout ({stopped:?}, state {state:?})"
    );
    (rows, ended, stopped.unwrap_or_default())
}

/// A Postgres stream that ended with `Timeout` while the caller still holds it (and its
/// connection or transaction): its statement stops on the server within 1 s, from the wire
/// outside a transaction and as a cursor inside one, not only at the connection's next
/// operation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_past_its_limit_stops_its_statement_on_the_server() {
    let _group = groups::enter("deadlines");
    let url = crate::common::pg::base_url();
    let pool = ConfigAndPool::postgres(&url).build().await.expect("pool");
    let watcher = crate::common::pg::raw_client(&url).await;
    let mut figures = Vec::new();
    for in_tx in [true, false] {
        let what = if in_tx { "in a transaction" } else { "outside" };
        // Rows at a steady pace, for far longer than the limit. In a transaction the cursor's
        // FETCH batches grow (16, 64, 256 rows): the limit passes during a FETCH that would
        // run on for seconds.
        let (limit, per_row) = if in_tx {
            (1000, "0.01")
        } else {
            (300, "0.002")
        };
        let limit = Duration::from_millis(limit);
        let sql = format!(
            "SELECT x FROM generate_series(1, 1000000) x, LATERAL (SELECT pg_sleep({per_row}) WHERE x > 0) s"
        );
        let sql = sql.as_str();
        let mut conn = pool.get_connection().await.expect("checkout");
        let (pid,): (i32,) = conn
            .query("SELECT pg_backend_pid()")
            .one()
            .await
            .expect("pid");
        let t = Timed::start();
        let (rows, ended, stopped) = if in_tx {
            let mut tx = conn.begin().await.expect("begin");
            let mut stream = tx.query(sql).timeout(limit).stream::<(i64,)>();
            let figures = past_limit(what, &mut stream, t, limit, &watcher, pid).await;
            drop(stream);
            drop(tx);
            figures
        } else {
            let mut stream = conn.query(sql).timeout(limit).stream::<(i64,)>();
            past_limit(what, &mut stream, t, limit, &watcher, pid).await
        };
        figures.push(format!(
            "{}_limit_ms={} {}_rows={rows} {}_error_ms={} {}_stopped_ms={}",
            if in_tx { "tx" } else { "plain" },
            limit.as_millis(),
            if in_tx { "tx" } else { "plain" },
            if in_tx { "tx" } else { "plain" },
            ended.as_millis(),
            if in_tx { "tx" } else { "plain" },
            stopped.as_millis()
        ));
        // The connection serves again.
        let (n,): (i64,) = conn
            .query("SELECT 7::bigint")
            .one()
            .await
            .unwrap_or_else(|e| panic!("{what}: the next call failed: {e:?}"));
        assert_eq!(n, 7);
    }
    println!("deadline_stream_stops {}", figures.join(" "));
}

/// Query shapes of one slow read (about 3,000,000 rows): the ways a user may write it.
fn read_shapes() -> Vec<String> {
    let body = "SELECT x FROM generate_series(1, 3000000) x";
    let mut shapes = Vec::new();
    for (open, close) in [("", ""), ("(", ")"), ("((", "))"), ("( ", " )")] {
        for lead in ["", "\n  ", "/* lead */ ", "-- lead\n"] {
            shapes.push(format!("{lead}{open}{body}{close}"));
        }
    }
    shapes.push(format!("WITH s AS ({body}) SELECT x FROM s"));
    shapes.push(format!("({body}) UNION ALL (SELECT 0)"));
    shapes.push(format!("(WITH s AS ({body}) SELECT x FROM s)"));
    shapes.push(format!("select x from ({body}) t"));
    shapes.push("VALUES (1), (2)".to_owned());
    shapes
}

/// A stream dropped inside a `Tx` after one row, for every shape of query: dropping it blocks
/// the async thread for at most 1 ms, and the transaction's next statement runs at once (not
/// after the rest of the result has crossed the network).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_dropped_in_a_transaction_never_delays_its_next_statement() {
    use futures_util::StreamExt;
    let _group = groups::enter("deadlines");
    let pool = ConfigAndPool::postgres(&crate::common::pg::base_url())
        .build()
        .await
        .expect("pool");
    let mut conn = pool.get_connection().await.expect("checkout");
    let (mut worst_drop, mut worst_next) = (Duration::ZERO, Duration::ZERO);
    let mut slow = Vec::new();
    let shapes = read_shapes();
    for sql in &shapes {
        let mut tx = conn.begin().await.expect("begin");
        let mut stream = tx.query(sql).stream::<(i64,)>();
        bounded(sql, stream.next())
            .await
            .expect("a first row")
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        let t = Instant::now();
        drop(stream);
        let dropped = t.elapsed();
        let t = Instant::now();
        let (n,): (i64,) = bounded(sql, tx.query("SELECT 5::bigint").one())
            .await
            .unwrap_or_else(|e| panic!("{sql}: the next statement failed: {e:?}"));
        let next = t.elapsed();
        assert_eq!(n, 5);
        tx.commit()
            .await
            .unwrap_or_else(|e| panic!("{sql}: commit: {e:?}"));
        worst_drop = worst_drop.max(dropped);
        worst_next = worst_next.max(next);
        if dropped > Duration::from_millis(1) || next > Duration::from_millis(250) {
            slow.push(format!("{sql:?}: drop {dropped:?}, next {next:?}"));
        }
    }
    println!(
        "deadline_tx_stream_drop shapes={} worst_drop_us={} worst_next_ms={} slow={}",
        shapes.len(),
        worst_drop.as_micros(),
        worst_next.as_millis(),
        slow.len()
    );
    assert!(slow.is_empty(), "slow after a dropped stream: {slow:#?}");
}

/// A URL with two hosts whose first accepts connections and never answers (a proxy gone
/// silent): each checkout that has to connect reaches the second host after the first one's
/// `connect_timeout`, instead of waiting on the first for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_host_answers_when_the_first_never_does() {
    let _group = groups::enter("deadlines");
    let base: tokio_postgres::Config = crate::common::pg::base_url().parse().expect("test URL");
    let silent = Relay::start(target_of(&base)).await;
    silent.go_silent();
    let healthy = Relay::start(target_of(&base)).await;
    let connect_limit = Duration::from_secs(1);
    let mut cfg = config_at(&base, silent.addr.port());
    cfg.host("127.0.0.1")
        .port(healthy.addr.port())
        .connect_timeout(connect_limit);
    let pool = ConfigAndPool::postgres_config(cfg)
        .max_size(2)
        .wait_timeout(Duration::from_secs(30))
        .create_timeout(Duration::from_secs(30))
        .build()
        .await
        .expect("pool");
    let t = Instant::now();
    let r = bounded("first checkout", async {
        let mut c = pool.get_connection().await?;
        c.query("SELECT 1").select().await
    })
    .await;
    let first = t.elapsed();
    r.unwrap_or_else(|e| panic!("the second host did not serve: {e:?}"));
    assert!(
        first <= connect_limit + Duration::from_millis(500),
        "the second host served only after {first:?} (connect_timeout {connect_limit:?})"
    );
    println!(
        "deadline_second_host connect_limit_ms={} first_success_ms={}",
        connect_limit.as_millis(),
        first.as_millis()
    );
}

/// A proxy that stops answering in the middle of a result: the stream ends with `Timeout` at
/// its limit, and the next call on the same checkout gets a fresh connection and succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_silent_mid_result_costs_the_stream_its_limit() {
    use futures_util::StreamExt;
    let _group = groups::enter("deadlines");
    let limit = Duration::from_millis(500);
    let (relay, _pool, mut conn) = through_relay(2, limit).await;
    let t = Timed::start();
    let mut stream = conn
        .query(
            "SELECT a * 100000 + b FROM generate_series(1, 1000) a, generate_series(1, 100000) b",
        )
        .stream::<(i64,)>();
    let mut rows = 0_u64;
    let error = loop {
        match bounded("stream", stream.next()).await {
            Some(Ok(_)) => {
                rows += 1;
                if rows == 1000 {
                    // From now on nothing more crosses the proxy on this connection.
                    relay.cut_existing();
                }
            }
            Some(Err(e)) => break e,
            None => panic!("the stream ended without an error"),
        }
    };
    let (ended, bound) = t.stop(limit);
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error:?}");
    assert!(
        ended <= bound,
        "the stream failed {ended:?} after its start (limit {limit:?}, bound {bound:?})"
    );
    drop(stream);
    let t = Timed::start();
    let (n,): (i64,) = bounded("next", conn.query("SELECT 3::bigint").one())
        .await
        .unwrap_or_else(|e| panic!("the next call failed: {e:?}"));
    let (next, bound) = t.stop(limit);
    assert_eq!(n, 3);
    assert!(
        next <= bound,
        "the next call took {next:?} (bound {bound:?})"
    );
    println!(
        "deadline_silent_mid_result limit_ms={} rows={rows} error_ms={} next_ok_ms={}",
        limit.as_millis(),
        ended.as_millis(),
        next.as_millis()
    );
}

/// The allowance every bound above gets is real: a meter running while this whole process is
/// stopped for 300 ms (SIGSTOP from another process) reports the stop. Its own group, so no
/// other test is stopped with it.
#[test]
fn the_stall_meter_sees_the_process_stopped() {
    let _group = groups::enter("stall_meter");
    let meter = StallMeter::start();
    std::thread::sleep(Duration::from_millis(20));
    let pid = std::process::id();
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("kill -STOP {pid}; sleep 0.3; kill -CONT {pid}"))
        .status()
        .expect("sh");
    assert!(status.success(), "sh: {status}");
    let stalled = meter.finish();
    assert!(
        stalled >= Duration::from_millis(250),
        "a 300 ms stop of the process showed as {stalled:?} of stalls"
    );
    println!("stall_meter stopped_ms=300 seen_ms={}", stalled.as_millis());
}
