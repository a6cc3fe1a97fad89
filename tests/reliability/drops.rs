//! Reliability 18: dropping never blocks. Dropping a stream at any row, a `Tx`, a bulk load, a
//! pipeline or a connection returns at once (the median of its drops within 1 ms), on any
//! runtime flavour and every backend, whatever lock its statement waits on, and the
//! connection's next statement (inside the `Tx`, if any) then runs at once.
//! (The Postgres side, a stream dropped inside a `Tx` for every shape of query, is in
//! `deadlines.rs`.)

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use sql_middleware::prelude::*;

use crate::common::backends::{Kind, Logical, ty};
use crate::common::cpu::{StallMeter, held};
use crate::common::groups;

/// SQLite: a write stream (`INSERT … RETURNING`) whose statement waits for the write lock
/// another connection holds, dropped while it waits.
#[cfg(feature = "sqlite")]
async fn sqlite_write_stream_dropped_while_waiting_for_a_lock(flavour: &str) {
    let dir = crate::common::backends::TempDir::new("drops");
    let busy = Duration::from_secs(3);
    let pool = ConfigAndPool::sqlite(dir.path().join("test.db"))
        .max_size(2)
        .busy_timeout(busy)
        .build()
        .await
        .expect("pool");
    let mut holder = pool.get_connection().await.expect("checkout");
    holder
        .execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)")
        .await
        .expect("table");
    let mut conn = pool.get_connection().await.expect("second checkout");
    conn.query("SELECT count(*) FROM t")
        .select()
        .await
        .expect("warm");

    // Three rounds, judged by the median drop as `every_drop_returns_at_once` judges its
    // drops: one sample on a shared 2-CPU machine can be stretched past 1 ms by an interrupt
    // or a page fault, while a drop that waited for the worker would take the lock wait
    // (hundreds of milliseconds) every time.
    let (mut drops, mut waited, mut next) = (Vec::new(), Duration::ZERO, Duration::ZERO);
    for round in 0..3 {
        let tx = holder.begin().await.expect("the write lock");
        let started = Instant::now();
        let mut stream = conn
            .query("INSERT INTO t (v) VALUES (1), (2), (3) RETURNING id")
            .stream::<(i64,)>();
        // The statement starts and waits for the lock.
        let first = tokio::time::timeout(Duration::from_millis(200), stream.next()).await;
        assert!(
            first.is_err(),
            "[{flavour}] the write did not wait: {first:?}"
        );
        waited = waited.max(started.elapsed());
        drops.push(held(|| drop(stream)));
        tx.rollback().await.expect("release the lock");

        let t = Instant::now();
        let r = tokio::time::timeout(
            Duration::from_secs(30),
            conn.query("INSERT INTO t (v) VALUES (9)").dml(),
        )
        .await
        .unwrap_or_else(|_| panic!("[{flavour}] round {round}: the next statement hung"));
        next = next.max(t.elapsed());
        let n = r.unwrap_or_else(|e| panic!("[{flavour}] the next statement failed: {e:?}"));
        assert_eq!(n, 1);
    }
    drops.sort();
    let (dropped, longest) = (drops[1], drops[2]);
    println!(
        "drops_sqlite_write_stream flavour={flavour} busy_ms={} waited_ms={} drop_p50_us={} drop_max_us={} next_ms={}",
        busy.as_millis(),
        waited.as_millis(),
        dropped.as_micros(),
        longest.as_micros(),
        next.as_millis()
    );
    assert!(
        dropped <= Duration::from_millis(1),
        "[{flavour}] dropping the stream blocked the async thread for {dropped:?} (median of {drops:?})"
    );
    assert!(
        next < Duration::from_millis(500),
        "[{flavour}] the next statement waited {next:?}"
    );
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_write_stream_dropped_while_waiting_for_a_lock_multi_thread() {
    let _group = groups::enter("drops");
    sqlite_write_stream_dropped_while_waiting_for_a_lock("multi_thread").await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "current_thread")]
async fn sqlite_write_stream_dropped_while_waiting_for_a_lock_current_thread() {
    let _group = groups::enter("drops");
    sqlite_write_stream_dropped_while_waiting_for_a_lock("current_thread").await;
}

/// What the drops of one kind cost: how long each `drop` held the async thread, and the
/// longest the connection's next statement then took.
#[derive(Debug, Default)]
struct DropCost {
    drops: Vec<Duration>,
    next_max: Duration,
}

impl DropCost {
    fn add(&mut self, dropped: Option<Duration>, next: Duration) {
        self.drops.extend(dropped);
        self.next_max = self.next_max.max(next);
    }

    /// The median and the longest drop.
    fn drop_p50_max(&self) -> (Duration, Duration) {
        let mut d = self.drops.clone();
        d.sort();
        match d.len() {
            0 => (Duration::ZERO, Duration::ZERO),
            n => (d[(n - 1) / 2], d[n - 1]),
        }
    }
}

/// The payload expression of about 1 KB per row on `kind`.
fn payload(kind: Kind) -> &'static str {
    match kind {
        Kind::Postgres => "repeat('x', 1000)",
        _ => "hex(zeroblob(500))",
    }
}

/// An `INSERT` of `n` rows of about 1 KB each into `d`, from ids `from` on (long enough that
/// its transaction spills past the page cache, and that a call on it can be cut short).
fn big_insert(kind: Kind, from: i64, n: i64) -> String {
    format!(
        "WITH RECURSIVE c(x) AS (SELECT {from} UNION ALL SELECT x + 1 FROM c WHERE x < {}) \
         INSERT INTO d (id, v) SELECT x, {} FROM c",
        from + n - 1,
        payload(kind)
    )
}

/// Awaits `fut` and returns its output with how long it took: the wall-clock time less the
/// machine's stalls meanwhile (see [`StallMeter`]), so that a bound on it measures the
/// connection, not a shared machine that ran another process.
async fn timed<F: std::future::Future>(fut: F) -> (F::Output, Duration) {
    let stalls = StallMeter::start();
    let t = Instant::now();
    let out = fut.await;
    let wall = t.elapsed();
    (out, wall.saturating_sub(stalls.finish()))
}

/// Times one statement on `conn` and checks that `d` holds `want` rows: the dropped work left
/// nothing behind, and its lock or transaction did not delay the connection.
async fn next_statement(conn: &mut MiddlewarePoolConnection, want: i64, what: &str) -> Duration {
    let (r, took) = timed(tokio::time::timeout(
        Duration::from_secs(30),
        conn.query("SELECT count(*) FROM d").one::<(i64,)>(),
    ))
    .await;
    let r = r.unwrap_or_else(|_| panic!("{what}: the next statement hung"));
    let (n,) = r.unwrap_or_else(|e| panic!("{what}: the next statement failed: {e:?}"));
    assert_eq!(n, want, "{what}: rows left in d");
    took
}

/// Starts `fut`, lets it run for `ms` milliseconds, then drops it and returns how long the drop
/// took. `None` when the call finished first (too short to be cut).
async fn cut<F: std::future::Future>(fut: F, ms: u64) -> Option<Duration> {
    let mut fut = Box::pin(fut);
    let finished = tokio::time::timeout(Duration::from_millis(ms), &mut fut)
        .await
        .is_ok();
    let dropped = held(|| drop(fut));
    (!finished).then_some(dropped)
}

/// Every kind of drop on `db`: a `Tx` that wrote a lot, a `Tx` whose call was cut short, a bulk
/// load, a pipeline, a stream at several rows, and a connection returned inside a raw
/// transaction. Each drop must hold the async thread for at most 1 ms, and the connection's
/// next statement must then run at once.
async fn every_drop_returns_at_once(db: &ConfigAndPool, kind: Kind, mode: &str, flavour: &str) {
    let name = format!("{}/{mode}/{flavour}", kind.name());
    let mut conn = db.get_connection().await.expect("checkout");
    conn.execute_batch(&format!(
        "CREATE TABLE d (id {} PRIMARY KEY, v {})",
        ty(kind, Logical::Int),
        ty(kind, Logical::Text)
    ))
    .await
    .expect("table");
    let rows = 5_000;
    let mut costs: Vec<(&str, DropCost)> = Vec::new();
    let mut cut_short = 0;

    // A transaction that wrote ~5 MB, dropped.
    let mut c = DropCost::default();
    for _ in 0..3 {
        let mut tx = conn.begin().await.expect("begin");
        tx.query(&big_insert(kind, 1, rows))
            .dml()
            .await
            .expect("insert");
        let dropped = held(|| drop(tx));
        c.add(
            Some(dropped),
            next_statement(&mut conn, 0, &format!("[{name}] tx")).await,
        );
    }
    costs.push(("tx", c));

    // A transaction whose long call was cut short, then dropped.
    let mut c = DropCost::default();
    for ms in [2, 10, 30] {
        let mut tx = conn.begin().await.expect("begin");
        tx.query(&big_insert(kind, 1, 1_000))
            .dml()
            .await
            .expect("first insert");
        if let Some(d) = cut(tx.query(&big_insert(kind, 10_001, rows * 4)).dml(), ms).await {
            cut_short += 1;
            c.add(Some(d), Duration::ZERO);
        }
        let dropped = held(|| drop(tx));
        c.add(
            Some(dropped),
            next_statement(&mut conn, 0, &format!("[{name}] tx cut")).await,
        );
    }
    costs.push(("tx_cut", c));

    // A bulk load cut short, outside and inside a transaction.
    let mut c = DropCost::default();
    let load: Vec<Vec<RowValues>> = (0..rows * 4)
        .map(|i| vec![RowValues::Int(i), RowValues::Text("y".repeat(1000))])
        .collect();
    for ms in [2, 10] {
        if let Some(d) = cut(conn.bulk_insert("d", &["id", "v"], &load), ms).await {
            cut_short += 1;
            c.add(Some(d), Duration::ZERO);
        }
        let left = {
            let (n,) = conn
                .query("SELECT count(*) FROM d")
                .one::<(i64,)>()
                .await
                .expect("count after a cut load");
            n
        };
        // A bulk load commits as one unit: nothing or everything.
        assert!(
            left == 0 || left == rows * 4,
            "[{name}] a cut bulk load left {left} rows"
        );
        conn.execute_batch("DELETE FROM d").await.expect("clear");
        let mut tx = conn.begin().await.expect("begin");
        if let Some(d) = cut(tx.bulk_insert("d", &["id", "v"], &load), ms).await {
            cut_short += 1;
            c.add(Some(d), Duration::ZERO);
        }
        let dropped = held(|| drop(tx));
        c.add(
            Some(dropped),
            next_statement(&mut conn, 0, &format!("[{name}] bulk")).await,
        );
    }
    costs.push(("bulk", c));

    // A pipeline cut short.
    let mut c = DropCost::default();
    let sets: Vec<Vec<RowValues>> = (0..2_000)
        .map(|i| vec![RowValues::Int(i), RowValues::Text("z".repeat(1000))])
        .collect();
    let refs: Vec<&[RowValues]> = sets.iter().map(Vec::as_slice).collect();
    // In the engine's own placeholders.
    let insert = format!(
        "INSERT INTO d (id, v) VALUES ({}, {})",
        kind.sql().param(1),
        kind.sql().param(2)
    );
    for ms in [1, 5] {
        if let Some(d) = cut(conn.pipeline(&insert, &refs), ms).await {
            cut_short += 1;
            c.add(Some(d), Duration::ZERO);
        }
        // A pipeline is one transaction: nothing or everything.
        let (r, took) = timed(conn.query("SELECT count(*) FROM d").one::<(i64,)>()).await;
        let (n,) = r.expect("count after a cut pipeline");
        c.add(None, took);
        assert!(
            n == 0 || n == 2_000,
            "[{name}] a cut pipeline left {n} rows"
        );
        conn.execute_batch("DELETE FROM d").await.expect("clear");
    }
    costs.push(("pipeline", c));

    // A stream dropped at several rows, inside a transaction.
    conn.query(&big_insert(kind, 1, 2_000))
        .dml()
        .await
        .expect("rows to stream");
    let mut c = DropCost::default();
    for at in [0usize, 1, 7, 500] {
        let mut tx = conn.begin().await.expect("begin");
        {
            let mut s = tx
                .query("SELECT id, v FROM d ORDER BY id")
                .stream::<(i64, String)>();
            for _ in 0..at {
                s.next().await.expect("a row").expect("row");
            }
            c.add(Some(held(|| drop(s))), Duration::ZERO);
        }
        let (r, took) = timed(tx.query("SELECT count(*) FROM d").one::<(i64,)>()).await;
        let (n,) = r.expect("the Tx's next statement");
        c.add(None, took);
        assert_eq!(n, 2_000);
        tx.rollback().await.expect("rollback");
    }
    costs.push(("stream", c));
    conn.execute_batch("DELETE FROM d").await.expect("clear");

    // A connection given back inside a raw transaction (a script's own BEGIN) that wrote a lot:
    // the drop returns at once, and the write lock is free for another connection at once.
    let mut c = DropCost::default();
    let mut other = db.get_connection().await.expect("second checkout");
    for _ in 0..3 {
        let mut raw = db.get_connection().await.expect("third checkout");
        raw.execute_batch(&format!("BEGIN; {};", big_insert(kind, 1, rows)))
            .await
            .expect("raw transaction");
        let dropped = held(|| drop(raw));
        let (r, took) = timed(tokio::time::timeout(
            Duration::from_secs(30),
            other.query(&big_insert(kind, 900_000, 1)).dml(),
        ))
        .await;
        let n = r
            .unwrap_or_else(|_| panic!("[{name}] a write after the drop hung"))
            .unwrap_or_else(|e| panic!("[{name}] a write after the drop failed: {e:?}"));
        assert_eq!(n, 1);
        c.add(Some(dropped), took);
        other.execute_batch("DELETE FROM d").await.expect("clear");
    }
    costs.push(("connection", c));
    drop(other);

    let figures: Vec<String> = costs
        .iter()
        .map(|(what, c)| {
            let (p50, max) = c.drop_p50_max();
            format!(
                "{what}_drop_p50_us={} {what}_drop_max_us={} {what}_next_ms={}",
                p50.as_micros(),
                max.as_micros(),
                c.next_max.as_millis()
            )
        })
        .collect();
    println!(
        "drops_every_kind backend={} mode={mode} flavour={flavour} cut_short={cut_short} {}",
        kind.name(),
        figures.join(" ")
    );
    assert!(
        cut_short > 0,
        "[{name}] no call was long enough to be cut short"
    );
    // The median drop is the property (at most 1 ms); the longest is bounded loosely, since on
    // a shared machine a page fault or a lock inside the allocator or the runtime can stretch
    // any single call, while a drop that does the work itself is slow every time.
    for (what, c) in &costs {
        let (p50, max) = c.drop_p50_max();
        assert!(
            p50 <= Duration::from_millis(1),
            "[{name}] dropping a {what} held the async thread for {p50:?} (median; {:?})",
            c.drops
        );
        assert!(
            max <= Duration::from_millis(5),
            "[{name}] dropping a {what} once held the async thread for {max:?} ({:?})",
            c.drops
        );
        assert!(
            c.next_max < Duration::from_millis(500),
            "[{name}] after dropping a {what} the next statement took {:?}",
            c.next_max
        );
    }
}

/// A fresh SQLite or Turso file database in WAL or rollback-journal mode, for
/// [`every_drop_returns_at_once`].
#[cfg(any(feature = "sqlite", feature = "turso"))]
async fn on_file(kind: Kind, wal: bool, flavour: &'static str) {
    let dir = crate::common::backends::TempDir::new("drops");
    let path = dir.path().join("test.db");
    let builder = match kind {
        #[cfg(feature = "sqlite")]
        Kind::Sqlite => ConfigAndPool::sqlite(&path).wal(wal),
        #[cfg(feature = "turso")]
        Kind::Turso => ConfigAndPool::turso(&path),
        other => panic!("{other:?} is not a file database"),
    };
    let db = builder.max_size(4).build().await.expect("pool");
    let mode = if wal { "wal" } else { "rollback_journal" };
    every_drop_returns_at_once(&db, kind, mode, flavour).await;
}

#[cfg(feature = "postgres")]
async fn on_postgres(flavour: &'static str) {
    crate::common::pg::with_schema(|url| async move {
        let db = crate::common::engines::postgres::test_db(&url).await;
        every_drop_returns_at_once(&db.db, Kind::Postgres, "server", flavour).await;
    })
    .await;
}

/// One test per backend (and SQLite journal mode) and runtime flavour.
macro_rules! every_drop {
    ($($name:ident: $feature:literal, [$($tokio:tt)*], $run:ident($($arg:expr),*);)*) => {
        $(
            #[cfg(feature = $feature)]
            #[tokio::test($($tokio)*)]
            async fn $name() {
                let _group = groups::enter("drops");
                $run($($arg),*).await;
            }
        )*
    };
}

every_drop! {
    every_drop_returns_at_once_sqlite_wal_multi_thread: "sqlite",
        [flavor = "multi_thread", worker_threads = 2], on_file(Kind::Sqlite, true, "multi_thread");
    every_drop_returns_at_once_sqlite_wal_current_thread: "sqlite",
        [flavor = "current_thread"], on_file(Kind::Sqlite, true, "current_thread");
    every_drop_returns_at_once_sqlite_journal_multi_thread: "sqlite",
        [flavor = "multi_thread", worker_threads = 2], on_file(Kind::Sqlite, false, "multi_thread");
    every_drop_returns_at_once_sqlite_journal_current_thread: "sqlite",
        [flavor = "current_thread"], on_file(Kind::Sqlite, false, "current_thread");
    every_drop_returns_at_once_turso_multi_thread: "turso",
        [flavor = "multi_thread", worker_threads = 2], on_file(Kind::Turso, true, "multi_thread");
    every_drop_returns_at_once_turso_current_thread: "turso",
        [flavor = "current_thread"], on_file(Kind::Turso, true, "current_thread");
    every_drop_returns_at_once_postgres_multi_thread: "postgres",
        [flavor = "multi_thread", worker_threads = 2], on_postgres("multi_thread");
    every_drop_returns_at_once_postgres_current_thread: "postgres",
        [flavor = "current_thread"], on_postgres("current_thread");
}
