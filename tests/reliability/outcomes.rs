//! Reliability 17: `Timeout` means it did not happen. A call that fails with
//! [`ErrorKind::Timeout`] committed nothing, so a caller may retry it. Where a commit may have
//! raced the stop (a `COMMIT`, or a write outside a transaction, in flight on Postgres when its
//! limit passed), the call fails with [`ErrorKind::OutcomeUnknown`] instead. SQLite knows: a
//! write whose limit passes as it finishes (SQLite consults its progress handler once more
//! after the statement has committed) returns its success, never `Timeout`.

use std::time::{Duration, Instant};

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::groups;

/// The rows tagged `tag` in `t`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
async fn tagged(conn: &mut MiddlewarePoolConnection, tag: i64) -> i64 {
    let (n,): (i64,) = conn
        .query("SELECT count(*) FROM t WHERE tag = $1")
        .params(&[RowValues::Int(tag)])
        .one()
        .await
        .expect("count");
    n
}

/// An `INSERT` of `k` rows (of `bytes` random bytes each) tagged `tag`. Its engine program,
/// and so how many steps it takes, depends on `k` only.
#[cfg(feature = "sqlite")]
fn insert_rows(k: u32, tag: i64, bytes: u32) -> String {
    format!(
        "INSERT INTO t (tag, b) SELECT {tag}, randomblob({bytes}) FROM \
         (WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < {k}) SELECT x FROM r)"
    )
}

/// Row counts `k` for which SQLite's last call of the progress handler comes after the
/// `INSERT` has halted (and, in autocommit mode, committed): stopping the statement there
/// reports `SQLITE_INTERRUPT` for work that is done. Found with a plain connection that stops
/// the statement at the handler's last call.
#[cfg(feature = "sqlite")]
fn late_check_counts(dir: &std::path::Path, want: usize) -> Vec<u32> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let c = rusqlite::Connection::open(dir.join("probe.db")).expect("probe database");
    c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, tag INTEGER, b BLOB)")
        .expect("probe table");
    let calls = Arc::new(AtomicU64::new(0));
    let stop_at = Arc::new(AtomicU64::new(0));
    let (n, s) = (Arc::clone(&calls), Arc::clone(&stop_at));
    c.progress_handler(
        1000,
        Some(move || {
            let i = n.fetch_add(1, Ordering::Relaxed) + 1;
            i == s.load(Ordering::Relaxed)
        }),
    )
    .expect("progress handler");
    let mut found = Vec::new();
    for k in 1..4000 {
        let sql = insert_rows(k, 1, 1);
        calls.store(0, Ordering::Relaxed);
        stop_at.store(0, Ordering::Relaxed);
        c.execute_batch(&sql).expect("probe insert");
        c.execute_batch("DELETE FROM t").expect("probe delete");
        let last = calls.load(Ordering::Relaxed);
        if last == 0 {
            continue;
        }
        calls.store(0, Ordering::Relaxed);
        stop_at.store(last, Ordering::Relaxed);
        let r = c.execute_batch(&sql);
        stop_at.store(0, Ordering::Relaxed);
        let rows: i64 = c
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .expect("probe count");
        c.execute_batch("DELETE FROM t").expect("probe delete");
        if r.is_err() && rows > 0 {
            found.push(k);
            if found.len() >= want {
                break;
            }
        }
    }
    found
}

/// SQLite: a write whose limit passes as it finishes. For the statement shapes whose last
/// progress check comes after the commit, limits spread over the statement's run time land
/// before, during and after that window; each call must either succeed with its rows
/// committed or fail with `Timeout` and nothing committed.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_write_that_committed_is_never_a_timeout() {
    let _group = groups::enter("outcomes");
    let dir = crate::common::backends::TempDir::new("outcomes");
    let ks = late_check_counts(dir.path(), 2);
    assert!(
        !ks.is_empty(),
        "no statement shape with a progress check after its commit was found"
    );
    let pool = ConfigAndPool::sqlite(dir.path().join("test.db"))
        .max_size(2)
        .build()
        .await
        .expect("pool");
    let mut conn = pool.get_connection().await.expect("checkout");
    conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, tag INTEGER, b BLOB)")
        .await
        .expect("table");
    let bytes = 8_000;
    // Limits per statement shape, spread from half its run time to 20 % past it.
    const LIMITS: u32 = 30;
    let (mut tag, mut ok, mut timeouts, mut wrong) = (0_i64, 0, 0, Vec::new());
    for &k in &ks {
        // The statement's run time, without a limit (the median of three).
        let mut runs = Vec::new();
        for _ in 0..3 {
            tag += 1;
            let t = Instant::now();
            conn.query(&insert_rows(k, tag, bytes))
                .dml()
                .await
                .expect("insert without a limit");
            runs.push(t.elapsed());
            conn.execute_batch("DELETE FROM t").await.expect("delete");
        }
        runs.sort();
        let run = runs[1];
        for i in 0..LIMITS {
            tag += 1;
            let limit = run / 2 + run * i * 7 / (10 * (LIMITS - 1));
            let r = conn
                .query(&insert_rows(k, tag, bytes))
                .timeout(limit)
                .dml()
                .await;
            let rows = tagged(&mut conn, tag).await;
            match r {
                Ok(n) => {
                    ok += 1;
                    assert_eq!(
                        i64::try_from(n).unwrap(),
                        rows,
                        "k={k}: Ok({n}) but {rows} rows"
                    );
                }
                Err(e) if e.kind() == ErrorKind::Timeout => {
                    timeouts += 1;
                    if rows != 0 {
                        wrong.push(format!("k={k} limit={limit:?} rows={rows}"));
                    }
                }
                Err(e) => panic!("k={k}: unexpected error {e:?}"),
            }
            conn.execute_batch("DELETE FROM t").await.expect("delete");
        }
    }
    println!(
        "outcomes_sqlite shapes={} calls={} ok={ok} timeouts={timeouts} timeout_but_committed={}",
        ks.len(),
        ks.len() * LIMITS as usize,
        wrong.len()
    );
    assert!(
        wrong.is_empty(),
        "Timeout returned for writes that committed: {wrong:?}"
    );
    assert!(
        ok > 0 && timeouts > 0,
        "the limits did not straddle the statement's end"
    );
}

/// Postgres: a read past its limit, and a write inside a transaction, are `Timeout` with
/// nothing committed; a write outside a transaction past its limit, and a `COMMIT` whose limit
/// passes while the server does not answer, are `OutcomeUnknown`.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_timeout_means_nothing_committed_and_a_raced_commit_is_unknown() {
    use crate::common::proxy::{Relay, Target};
    let _group = groups::enter("outcomes");
    let url = crate::common::pg::base_url();
    let schema = format!("outcomes_{}", crate::common::pg::random_hex());
    let admin = crate::common::pg::raw_client(&url).await;
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA {schema}; CREATE TABLE {schema}.t (id serial PRIMARY KEY, tag bigint)"
        ))
        .await
        .expect("schema");
    let limit = Duration::from_millis(300);
    let slack = Duration::from_millis(100);
    let scoped = crate::common::pg::url_with_search_path(&url, &schema);
    let pool = ConfigAndPool::postgres(&scoped)
        .build()
        .await
        .expect("pool");
    let mut conn = pool.get_connection().await.expect("checkout");
    let mut figures = Vec::new();

    // A read.
    let t = Instant::now();
    let r = conn
        .query("SELECT pg_sleep(5)")
        .timeout(limit)
        .select()
        .await;
    assert_eq!(r.expect_err("slow read").kind(), ErrorKind::Timeout);
    figures.push(format!("read_ms={}", t.elapsed().as_millis()));

    // A write inside a transaction: Timeout, and the transaction rolled back.
    let t = Instant::now();
    {
        let mut tx = conn.begin().await.expect("begin");
        let r = tx
            .query("INSERT INTO t (tag) SELECT 1 FROM pg_sleep(5)")
            .timeout(limit)
            .dml()
            .await;
        assert_eq!(
            r.expect_err("slow write in a tx").kind(),
            ErrorKind::Timeout
        );
        let _ = tx.rollback().await;
    }
    figures.push(format!("tx_write_ms={}", t.elapsed().as_millis()));
    assert_eq!(
        tagged(&mut conn, 1).await,
        0,
        "a Timeout committed its write"
    );

    // A write outside a transaction: it may commit as it is stopped.
    let t = Instant::now();
    let r = conn
        .query("INSERT INTO t (tag) SELECT 2 FROM pg_sleep(5)")
        .timeout(limit)
        .dml()
        .await;
    let took = t.elapsed();
    assert_eq!(
        r.expect_err("slow autocommit write").kind(),
        ErrorKind::OutcomeUnknown,
        "an autocommit write in flight at its limit"
    );
    assert!(took <= limit + slack, "autocommit write took {took:?}");
    figures.push(format!("autocommit_write_ms={}", took.as_millis()));

    // A COMMIT the server does not answer (through a proxy that goes silent).
    let base: tokio_postgres::Config = scoped.parse().expect("URL");
    let port = base.get_ports().first().copied().unwrap_or(5432);
    let target = match base.get_hosts().first().expect("a host") {
        tokio_postgres::config::Host::Tcp(h) => Target::Tcp(
            std::net::ToSocketAddrs::to_socket_addrs(&(h.as_str(), port))
                .expect("resolve")
                .next()
                .expect("an address"),
        ),
        tokio_postgres::config::Host::Unix(dir) => {
            Target::Unix(dir.join(format!(".s.PGSQL.{port}")))
        }
    };
    let relay = Relay::start(target).await;
    let mut cfg = base.clone();
    let mut relayed = tokio_postgres::Config::new();
    relayed.host("127.0.0.1").port(relay.addr.port());
    if let Some(u) = cfg.get_user() {
        relayed.user(u);
    }
    if let Some(d) = cfg.get_dbname() {
        relayed.dbname(d);
    }
    if let Some(o) = cfg.get_options() {
        relayed.options(o);
    }
    cfg = relayed;
    let silent = ConfigAndPool::postgres_config(cfg)
        .statement_timeout(limit)
        .wait_timeout(limit)
        .build()
        .await
        .expect("pool through the relay");
    let mut c2 = silent.get_connection().await.expect("checkout");
    let mut tx = c2.begin().await.expect("begin");
    let (pid,): (i32,) = tx
        .query("SELECT pg_backend_pid()")
        .one()
        .await
        .expect("pid");
    tx.query("INSERT INTO t (tag) VALUES (3)")
        .dml()
        .await
        .expect("insert");
    relay.go_silent();
    let t = Instant::now();
    let r = tokio::time::timeout(Duration::from_secs(60), tx.commit())
        .await
        .expect("the COMMIT was still waiting after 60 s");
    let took = t.elapsed();
    assert_eq!(
        r.expect_err("a silent server cannot confirm").kind(),
        ErrorKind::OutcomeUnknown
    );
    assert!(took <= limit + slack, "commit took {took:?}");
    figures.push(format!("commit_ms={}", took.as_millis()));
    drop(c2);

    println!(
        "outcomes_postgres limit_ms={} {}",
        limit.as_millis(),
        figures.join(" ")
    );
    drop(conn);
    // The proxy holds the server's end of the given-up connection open (a real dead network
    // would too, until TCP keepalive): end its session before dropping the schema.
    admin
        .execute("SELECT pg_terminate_backend($1)", &[&pid])
        .await
        .expect("terminate");
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .expect("drop schema");
}

/// A pool of one connection from `builder`, and that connection after `schema` ran.
#[cfg(any(feature = "sqlite", feature = "turso"))]
async fn one_connection(
    builder: sql_middleware::PoolBuilder,
    schema: &str,
) -> (ConfigAndPool, MiddlewarePoolConnection) {
    let pool = builder.max_size(1).build().await.expect("pool");
    let mut conn = pool.get_connection().await.expect("checkout");
    conn.execute_batch(schema).await.expect("schema");
    (pool, conn)
}

#[cfg(any(feature = "sqlite", feature = "turso"))]
/// What a script stopped at its limit may report: `Timeout` only when none of it committed.
/// `committed` counts the rows of the script's first part that are in the table afterwards.
fn script_verdict(r: &Result<(), sql_middleware::SqlMiddlewareDbError>, committed: i64) -> bool {
    match r {
        Ok(()) => true,
        Err(e) if e.kind() == ErrorKind::Timeout => committed == 0,
        Err(e) => e.kind() == ErrorKind::OutcomeUnknown,
    }
}

/// A script split into parts that commit one by one (a statement that cannot run inside a
/// transaction stands between them) is stopped by its limit after its first part committed:
/// the call never says `Timeout`, which would invite a retry that applies the first part twice.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_script_stopped_after_a_part_committed_is_never_a_timeout() {
    let _group = groups::enter("outcomes");
    let dir = crate::common::backends::TempDir::new("outcomes_script");
    let (_pool, mut conn) = one_connection(
        ConfigAndPool::sqlite(dir.path().join("test.db")),
        "CREATE TABLE t (id INTEGER PRIMARY KEY, tag INTEGER, b BLOB)",
    )
    .await;
    // First part: one row, committed at once. Then VACUUM on its own. Then a long insert that
    // the limit stops.
    let script = format!(
        "INSERT INTO t (tag, b) VALUES (1, x'00'); VACUUM; {}",
        insert_rows(3_000_000, 2, 16)
    );
    conn.set_statement_timeout(Some(Duration::from_millis(150)));
    let started = Instant::now();
    let r = conn.execute_batch(&script).await;
    let took = started.elapsed();
    conn.set_statement_timeout(None);
    let committed = tagged(&mut conn, 1).await;
    let kind = r.as_ref().err().map(|e| e.kind());
    println!(
        "script_outcome backend=sqlite kind={kind:?} first_part_rows={committed} took_ms={}",
        took.as_millis()
    );
    assert!(
        script_verdict(&r, committed),
        "a script whose first part committed ({committed} row) returned {r:?}"
    );
    assert!(
        r.is_err(),
        "the long insert finished within 150 ms, so this test checks nothing"
    );
}

/// Turso keeps a script's limit between its parts: once a part has committed, the script is
/// never stopped with `Timeout` (which promises that nothing took effect).
#[cfg(feature = "turso")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turso_a_script_stopped_after_a_part_committed_is_never_a_timeout() {
    let _group = groups::enter("outcomes");
    let dir = crate::common::backends::TempDir::new("outcomes_script_turso");
    let (_pool, mut conn) = one_connection(
        ConfigAndPool::turso(dir.path().join("test.db")),
        "CREATE TABLE t (id INTEGER PRIMARY KEY, tag INTEGER); CREATE TABLE s (x INTEGER)",
    )
    .await;
    let mut values = String::from("INSERT INTO s (x) VALUES (0)");
    for i in 1..400 {
        values.push_str(&format!(", ({i})"));
    }
    conn.execute_batch(&values).await.expect("rows to cross");
    // First part: a long insert (400 × 400 rows) that outlasts the limit and commits. Then a
    // PRAGMA on its own, then one more row.
    let script = "INSERT INTO t (tag) SELECT 1 FROM s a, s b; PRAGMA foreign_keys = ON; \
                  INSERT INTO t (tag) VALUES (2)";
    conn.set_statement_timeout(Some(Duration::from_millis(20)));
    let started = Instant::now();
    let r = conn.execute_batch(script).await;
    let took = started.elapsed();
    conn.set_statement_timeout(None);
    let (committed,): (i64,) = conn
        .query("SELECT count(*) FROM t WHERE tag = 1")
        .one()
        .await
        .expect("count");
    let kind = r.as_ref().err().map(|e| e.kind());
    println!(
        "script_outcome backend=turso kind={kind:?} first_part_rows={committed} took_ms={}",
        took.as_millis()
    );
    assert!(
        took > Duration::from_millis(20),
        "the first part finished within the limit, so this test checks nothing"
    );
    assert!(
        script_verdict(&r, committed),
        "a script whose first part committed ({committed} rows) returned {r:?}"
    );
}

/// Turso cannot interrupt a statement, so a script's limit is checked between its statements:
/// a script of many short statements stops within one statement's time of its limit, and the
/// part of it that ran is rolled back, so `Timeout` is true (nothing committed). Also inside a
/// `Tx`, whose transaction the failure then aborts.
#[cfg(feature = "turso")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turso_a_long_script_stops_between_statements_and_commits_nothing() {
    let _group = groups::enter("outcomes");
    let dir = crate::common::backends::TempDir::new("outcomes_script_turso_steps");
    let (_pool, mut conn) = one_connection(
        ConfigAndPool::turso(dir.path().join("test.db")),
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)",
    )
    .await;
    // 300 statements of about 2,000 rows each: seconds in all, a few milliseconds each.
    let one = "INSERT INTO t (v) SELECT hex(zeroblob(50)) FROM \
               (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000) \
               SELECT x FROM c);";
    let script = one.repeat(300);
    let limit = Duration::from_millis(50);
    // One statement alone, to bound how late the check between statements may be.
    let t = Instant::now();
    conn.execute_batch(one).await.expect("one statement");
    let one_took = t.elapsed();
    conn.execute_batch("DELETE FROM t").await.expect("clear");

    conn.set_statement_timeout(Some(limit));
    let started = Instant::now();
    let r = conn.execute_batch(&script).await;
    let took = started.elapsed();
    conn.set_statement_timeout(None);
    let (rows,): (i64,) = conn
        .query("SELECT count(*) FROM t")
        .one()
        .await
        .expect("count");

    conn.set_statement_timeout(Some(limit));
    let mut tx = conn.begin().await.expect("begin");
    let started = Instant::now();
    let in_tx = tx.execute_batch(&script).await;
    let took_in_tx = started.elapsed();
    let after = tx.query("SELECT count(*) FROM t").one::<(i64,)>().await;
    drop(tx);
    conn.set_statement_timeout(None);
    let (rows_after_tx,): (i64,) = conn
        .query("SELECT count(*) FROM t")
        .one()
        .await
        .expect("count after the Tx");
    println!(
        "script_limit backend=turso limit_ms={} one_statement_ms={} took_ms={} rows={rows} in_tx_took_ms={} rows_after_tx={rows_after_tx}",
        limit.as_millis(),
        one_took.as_millis(),
        took.as_millis(),
        took_in_tx.as_millis()
    );
    let kind = r.as_ref().err().map(|e| e.kind());
    assert_eq!(kind, Some(ErrorKind::Timeout), "the script returned {r:?}");
    assert_eq!(rows, 0, "a script stopped with Timeout left {rows} rows");
    let bound = limit + one_took * 2 + Duration::from_millis(100);
    assert!(took <= bound, "the script took {took:?}, past {bound:?}");
    assert_eq!(
        in_tx.as_ref().err().map(|e| e.kind()),
        Some(ErrorKind::Timeout),
        "inside a Tx the script returned {in_tx:?}"
    );
    assert!(
        took_in_tx <= bound,
        "inside a Tx the script took {took_in_tx:?}"
    );
    assert_eq!(
        after.err().map(|e| e.kind()),
        Some(ErrorKind::TransactionAborted),
        "the Tx went on after its script was stopped"
    );
    assert_eq!(rows_after_tx, 0, "the stopped Tx left rows behind");
}
