//! Read replicas against a real streaming standby: a throwaway primary and a hot standby made
//! with `pg_basebackup -R`, both started by the test. Routing is checked with the server's own
//! `pg_is_in_recovery()` for each kind of call, lag through `replica_status`, reads failing over
//! to the primary when the standby stops (and back when it returns), read-your-writes, and that
//! a write sent to a reader is a typed error on whichever server serves it.
#![cfg(feature = "postgres")]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::groups;
use crate::common::pg;

/// The server's own answer: is the session on a standby?
async fn in_recovery(conn: &mut MiddlewarePoolConnection) -> bool {
    let (r,): (bool,) = conn
        .query("SELECT pg_is_in_recovery()")
        .one()
        .await
        .unwrap();
    r
}

/// Polls `check` every 100 ms until it holds, for at most 60 s.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Rows of `t` a reader sees (`None` while the table has not reached it).
async fn rows_on_reader(db: &ConfigAndPool) -> Option<i64> {
    let mut r = db.reader().await.unwrap();
    let n: Result<(i64,), _> = r.query("SELECT count(*) FROM t").one().await;
    match n {
        Ok((n,)) => Some(n),
        Err(e) if e.kind() == ErrorKind::UndefinedObject => None,
        Err(e) => panic!("count on a reader: {e:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_route_reads_fail_over_and_refuse_writes() {
    let _group = groups::enter("postgres");
    let pair = pg::cluster::start_primary_and_standby().unwrap_or_else(|e| {
        panic!(
            "the replica tests start a primary and a standby from the local PostgreSQL server \
             binaries (initdb, pg_ctl, pg_basebackup; Debian: apt-get install postgresql): {e}"
        )
    });
    let db = ConfigAndPool::postgres(&pair.primary)
        .replica(&pair.standby)
        .replica_retry_after(Duration::from_millis(200))
        .max_size(4)
        .build()
        .await
        .unwrap();

    // Routing, by what each server says of itself.
    let mut primary = db.get_connection().await.unwrap();
    assert!(!in_recovery(&mut primary).await, "get_connection: primary");
    primary
        .execute_batch("CREATE TABLE t (id bigint PRIMARY KEY, v text)")
        .await
        .unwrap();
    {
        let mut tx = primary.begin().await.unwrap();
        let (r,): (bool,) = tx.query("SELECT pg_is_in_recovery()").one().await.unwrap();
        assert!(!r, "transactions: primary");
        tx.query("INSERT INTO t VALUES (1, 'a')")
            .dml()
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }
    {
        let mut stmt = primary.prepare("SELECT pg_is_in_recovery()").await.unwrap();
        let (r,): (bool,) = stmt.one(&[]).await.unwrap();
        assert!(!r, "prepare: primary");
    }
    let mut reader = db.reader().await.unwrap();
    assert!(in_recovery(&mut reader).await, "reader: the standby");
    {
        let mut stmt = reader.prepare("SELECT pg_is_in_recovery()").await.unwrap();
        let (r,): (bool,) = stmt.one(&[]).await.unwrap();
        assert!(r, "a reader's prepared statement: the standby");
    }
    // The standby catches up with the committed row.
    eventually("the row reaches the standby", || async {
        rows_on_reader(&db).await == Some(1)
    })
    .await;

    // A write sent to a reader is a typed error, never a success on the wrong server.
    let w = reader.query("INSERT INTO t VALUES (2, 'b')").dml().await;
    assert_eq!(
        w.map(drop).unwrap_err().kind(),
        ErrorKind::ReadOnly,
        "a write on the standby"
    );
    drop(reader);

    // Lag is visible: with replay paused on the standby, a write on the primary leaves it
    // behind by some WAL; once resumed it catches up.
    let st = db.replica_status().await;
    assert_eq!(st.len(), 1);
    assert!(st[0].reachable && st[0].in_recovery == Some(true), "{st:?}");
    let standby_admin = pg::raw_client(&pair.standby).await;
    standby_admin
        .batch_execute("SELECT pg_wal_replay_pause()")
        .await
        .unwrap();
    primary
        .query("INSERT INTO t SELECT g, 'x' FROM generate_series(10, 5000) g")
        .dml()
        .await
        .unwrap();
    eventually("the status shows WAL not yet replayed", || async {
        let st = db.replica_status().await;
        st[0].lag_bytes.is_some_and(|b| b > 0)
    })
    .await;
    let behind = db.replica_status().await;
    assert!(
        behind[0].replay_delay.is_some(),
        "a paused replay has a delay: {behind:?}"
    );
    assert_eq!(
        rows_on_reader(&db).await,
        Some(1),
        "the paused standby is behind"
    );
    standby_admin
        .batch_execute("SELECT pg_wal_replay_resume()")
        .await
        .unwrap();
    eventually("the standby catches up", || async {
        db.replica_status().await[0].lag_bytes == Some(0)
    })
    .await;
    assert_eq!(rows_on_reader(&db).await, Some(4992));
    drop(standby_admin);

    // Failover of reads: with the standby stopped, readers go to the primary, still read-only.
    pair.stop_standby().unwrap();
    let mut reader = db.reader().await.unwrap();
    assert!(
        !in_recovery(&mut reader).await,
        "with the standby down, readers fall back to the primary"
    );
    let w = reader.query("INSERT INTO t VALUES (3, 'c')").dml().await;
    assert_eq!(
        w.map(drop).unwrap_err().kind(),
        ErrorKind::ReadOnly,
        "a write on a reader served by the primary"
    );
    drop(reader);
    let st = db.replica_status().await;
    assert!(!st[0].reachable, "{st:?}");

    // Without the fallback, a reader is an error while no replica is healthy.
    let strict = ConfigAndPool::postgres(&pair.primary)
        .replica(&pair.standby)
        .replica_fallback(false)
        .build()
        .await
        .unwrap();
    assert_eq!(
        strict.reader().await.map(drop).unwrap_err().kind(),
        ErrorKind::ConnectionLost
    );

    // The standby returns: after the retry delay, readers use it again.
    pair.start_standby().unwrap();
    eventually("readers go back to the standby", || async {
        match db.reader().await {
            Ok(mut r) => in_recovery(&mut r).await,
            Err(_) => false,
        }
    })
    .await;
    assert_eq!(
        rows_on_reader(&db).await,
        Some(4992),
        "the standby has every row"
    );
    drop(primary);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_your_writes_reads_from_the_primary_for_the_window() {
    let _group = groups::enter("postgres");
    let pair = pg::cluster::start_primary_and_standby().unwrap_or_else(|e| {
        panic!(
            "the replica tests start a primary and a standby from the local PostgreSQL server \
             binaries (initdb, pg_ctl, pg_basebackup; Debian: apt-get install postgresql): {e}"
        )
    });
    let window = Duration::from_millis(1500);
    let db = ConfigAndPool::postgres(&pair.primary)
        .replica(&pair.standby)
        .read_your_writes(window)
        .build()
        .await
        .unwrap();
    let mut w = db.get_connection().await.unwrap();
    w.execute_batch("CREATE TABLE t (id bigint PRIMARY KEY)")
        .await
        .unwrap();
    // Pause replay, so that only the primary has the next write.
    let standby_admin = pg::raw_client(&pair.standby).await;
    eventually("the table reaches the standby", || async {
        standby_admin
            .query_one("SELECT to_regclass('public.t') IS NOT NULL", &[])
            .await
            .map(|r| r.get::<_, bool>(0))
            .unwrap_or(false)
    })
    .await;
    standby_admin
        .batch_execute("SELECT pg_wal_replay_pause()")
        .await
        .unwrap();
    w.query("INSERT INTO t VALUES (1)").dml().await.unwrap();
    let wrote = Instant::now();
    // Within the window the reader is the primary, and sees the write.
    let mut r = db.reader().await.unwrap();
    assert!(
        wrote.elapsed() < window,
        "the machine is too slow for this window"
    );
    assert!(!in_recovery(&mut r).await, "within the window: the primary");
    let (n,): (i64,) = r.query("SELECT count(*) FROM t").one().await.unwrap();
    assert_eq!(n, 1, "the reader reads its own write");
    drop(r);
    // After it, readers go to the replica again (still paused, so it does not have the row).
    tokio::time::sleep(window).await;
    let mut r = db.reader().await.unwrap();
    assert!(in_recovery(&mut r).await, "after the window: the standby");
    let (n,): (i64,) = r.query("SELECT count(*) FROM t").one().await.unwrap();
    assert_eq!(n, 0, "the paused standby has not replayed the write");
    standby_admin
        .batch_execute("SELECT pg_wal_replay_resume()")
        .await
        .unwrap();
}

/// A write made through a function (`SELECT add_row($1)`, which returns rows like a read) counts
/// for read-your-writes: within the window the reader is the primary. (Found: the statement
/// was taken for a read, so the next reader went to the replica.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_your_writes_counts_writes_made_through_a_function() {
    let _group = groups::enter("postgres");
    let pair = pg::cluster::start_primary_and_standby().unwrap_or_else(|e| {
        panic!(
            "the replica tests start a primary and a standby from the local PostgreSQL server \
             binaries (initdb, pg_ctl, pg_basebackup; Debian: apt-get install postgresql): {e}"
        )
    });
    let window = Duration::from_millis(1500);
    let db = ConfigAndPool::postgres(&pair.primary)
        .replica(&pair.standby)
        .read_your_writes(window)
        .build()
        .await
        .unwrap();
    let mut w = db.get_connection().await.unwrap();
    w.execute_batch(
        "CREATE TABLE f (id bigint PRIMARY KEY);
         CREATE FUNCTION add_row(x bigint) RETURNS bigint LANGUAGE sql AS
             'INSERT INTO f VALUES (x) RETURNING id'",
    )
    .await
    .unwrap();
    // The script's own window passes: readers go to the replica.
    tokio::time::sleep(window).await;
    let mut r = db.reader().await.unwrap();
    assert!(in_recovery(&mut r).await, "after the window: the standby");
    drop(r);
    let (id,): (i64,) = w
        .query("SELECT add_row($1)")
        .params(&[RowValues::Int(1)])
        .one()
        .await
        .unwrap();
    assert_eq!(id, 1);
    let wrote = Instant::now();
    let mut r = db.reader().await.unwrap();
    assert!(
        wrote.elapsed() < window,
        "the machine is too slow for this window"
    );
    let primary = !in_recovery(&mut r).await;
    println!("ryw_through_function reader_is_primary={primary}");
    assert!(
        primary,
        "a write through a function is a write: the reader is the primary"
    );
}

/// The session's time zone, as the server reports it.
async fn zone(c: &mut MiddlewarePoolConnection) -> String {
    let (z,): (String,) = c
        .query("SELECT current_setting('TimeZone')")
        .one()
        .await
        .unwrap();
    z
}

/// `after_connect` runs on every reader connection (on the standby, and in the primary's
/// read-only pool), and on a multi-host URL only on the host the connection reached: never on a
/// server that the `target_session_attrs` check turned down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_connect_runs_on_readers_and_on_the_host_reached() {
    let _group = groups::enter("postgres");
    let pair = pg::cluster::start_primary_and_standby().unwrap_or_else(|e| {
        panic!("the replica tests start a primary and a standby (see above): {e}")
    });
    let port = |url: &str| -> i32 {
        let cfg: tokio_postgres::Config = url.parse().expect("cluster URL");
        i32::from(cfg.get_ports()[0])
    };
    let (p, s) = (port(&pair.primary), port(&pair.standby));
    // Each run: the server's port, and whether it is a standby.
    let runs: Arc<Mutex<Vec<(i32, bool)>>> = Arc::default();
    let hooked = |b: PoolBuilder, runs: &Arc<Mutex<Vec<(i32, bool)>>>| {
        let runs = Arc::clone(runs);
        b.after_connect(move |conn| {
            let runs = Arc::clone(&runs);
            Box::pin(async move {
                conn.execute_batch("SET TIME ZONE 'Pacific/Chatham'")
                    .await?;
                let rows = conn
                    .select("SELECT inet_server_port(), pg_is_in_recovery()", &[])
                    .await?;
                let who: Vec<(i32, bool)> = rows.decode()?;
                runs.lock().unwrap().extend(who);
                Ok(())
            })
        })
    };

    let db = hooked(
        ConfigAndPool::postgres(&pair.primary)
            .replica(&pair.standby)
            .read_your_writes(Duration::from_secs(60))
            .max_size(2),
        &runs,
    )
    .build()
    .await
    .unwrap();
    {
        let mut r = db.reader().await.unwrap();
        assert!(in_recovery(&mut r).await, "a reader on the standby");
        assert_eq!(zone(&mut r).await, "Pacific/Chatham", "the hook ran there");
    }
    assert_eq!(
        *runs.lock().unwrap(),
        [(s, true)],
        "one run, on the standby"
    );
    // From here on a session reset runs the hook again too (`pg_is_in_recovery()` and DDL are
    // not plain statements), so the runs are checked by server, and each session by its zone.
    {
        let mut c = db.get_connection().await.unwrap();
        assert_eq!(zone(&mut c).await, "Pacific/Chatham");
        c.execute_batch("CREATE TABLE hooked (id bigint)")
            .await
            .unwrap();
        c.query("INSERT INTO hooked VALUES (1)")
            .dml()
            .await
            .unwrap();
    }
    {
        // Within the read-your-writes window: the primary's read-only pool.
        let mut r = db.reader().await.unwrap();
        assert!(!in_recovery(&mut r).await, "a reader on the primary");
        assert_eq!(zone(&mut r).await, "Pacific/Chatham", "the hook ran there");
    }
    let all = runs.lock().unwrap().clone();
    assert!(
        all.contains(&(p, false)) && all.iter().all(|r| *r == (s, true) || *r == (p, false)),
        "on the standby and on the primary only: {all:?}"
    );

    // The standby first, then the primary: the standby is turned down for read-write, and the
    // hook runs once, on the primary.
    // (A pool of its own: the first pool's resets may still run its hook.)
    let runs: Arc<Mutex<Vec<(i32, bool)>>> = Arc::default();
    let hosts = format!(
        "postgres://postgres@127.0.0.1:{s},127.0.0.1:{p}/postgres?target_session_attrs=read-write"
    );
    let multi = hooked(ConfigAndPool::postgres(&hosts).max_size(1), &runs)
        .build()
        .await
        .unwrap();
    let mut c = multi.get_connection().await.unwrap();
    assert!(!in_recovery(&mut c).await);
    assert_eq!(zone(&mut c).await, "Pacific/Chatham");
    assert_eq!(
        *runs.lock().unwrap(),
        [(p, false)],
        "only on the host reached"
    );
}
