//! Reliability 2 and 3: every bad way a transaction can end, and commit truth.
//!
//! Bad endings run on a pool of size 1, so the next checkout gets the very connection the bad
//! ending left behind (or its replacement). After each one, the next checkout must be idle, the
//! bad transaction's rows invisible, and the pool no bigger than 1; when the backend can show a
//! connection's identity, the figure says how many endings evicted the connection.
//!
//! Commit truth: `commit()` returns `Ok` only when a fresh connection sees the data; a commit
//! after any error inside the transaction is an error; once the engine has rolled back on its
//! own (or the transaction was ended behind the middleware's back), later statements fail
//! instead of autocommitting.

use std::collections::BTreeSet;
use std::time::Duration;

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common;
use crate::common::backends::{Kind, Logical, TestDb};
use crate::common::reliability::{Rng, SeedGuard, check_idle, conn_identity};

type Conn = MiddlewarePoolConnection;

const INS: &str = "INSERT INTO bt (id, note) VALUES ($1, $2)";

async fn setup(db: &TestDb) {
    let int = db.ty(Logical::Int);
    let text = db.ty(Logical::Text);
    let mut c = db.conn().await;
    // MySQL has no deferred constraints (InnoDB checks a foreign key at each statement) and
    // reads an inline REFERENCES without acting on it: the key is declared on the table.
    let child = if db.kind == Kind::Mysql {
        format!(
            "CREATE TABLE fk_child (
                 id {int} PRIMARY KEY, parent_id {int},
                 FOREIGN KEY (parent_id) REFERENCES fk_parent (id)
             );"
        )
    } else {
        format!(
            "CREATE TABLE fk_child (
                 id {int} PRIMARY KEY,
                 parent_id {int} REFERENCES fk_parent (id) DEFERRABLE INITIALLY DEFERRED
             );"
        )
    };
    c.execute_batch(&format!(
        "CREATE TABLE bt (id {int} PRIMARY KEY, note {text});
         CREATE TABLE fk_parent (id {int} PRIMARY KEY);
         {child}
         INSERT INTO fk_parent (id) VALUES (1);"
    ))
    .await
    .expect("setup");
    let trigger = match db.kind {
        // MySQL has no way for a trigger to roll the transaction back: SIGNAL fails the
        // statement, and the middleware fails the rest of the transaction after it.
        Kind::Mysql => "CREATE TRIGGER bt_unlucky BEFORE INSERT ON bt FOR EACH ROW \
             IF MOD(NEW.id, 1000) = 13 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'unlucky 13'; END IF"
            .to_owned(),
        // A trigger that makes the engine roll the whole transaction back by itself.
        Kind::Sqlite | Kind::Turso => "CREATE TRIGGER bt_unlucky BEFORE INSERT ON bt \
             WHEN NEW.id % 1000 = 13 BEGIN SELECT RAISE(ROLLBACK, 'unlucky 13'); END;"
            .to_owned(),
        // Postgres has no RAISE(ROLLBACK): an exception aborts the transaction instead.
        Kind::Postgres => "CREATE FUNCTION bt_unlucky() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN IF NEW.id % 1000 = 13 THEN RAISE EXCEPTION 'unlucky 13'; END IF; RETURN NEW; END $$;
             CREATE TRIGGER bt_unlucky BEFORE INSERT ON bt FOR EACH ROW EXECUTE FUNCTION bt_unlucky();"
            .to_owned(),
    };
    c.execute_batch(&trigger).await.expect("trigger");
}

async fn ins(c: &mut Conn, id: i64) -> Result<u64, SqlMiddlewareDbError> {
    c.query(INS).params(&[id.into(), "x".into()]).dml().await
}

async fn ids(db: &TestDb, lo: i64, hi: i64) -> BTreeSet<i64> {
    let mut c = db.conn().await;
    let rows: Vec<(i64,)> = c
        .query("SELECT id FROM bt WHERE id >= $1 AND id < $2")
        .params(&[lo.into(), hi.into()])
        .all()
        .await
        .expect("verifier read");
    rows.into_iter().map(|r| r.0).collect()
}

fn unexpected<T: std::fmt::Debug>(what: &str, r: T) -> String {
    format!("{what}: unexpected {r:?}")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Dropped,
    ErrorThenDropped,
    AbortedThenUsed,
    /// Postgres: the server aborts the transaction behind the middleware's back (raw client).
    RawAborted,
    RawBeginInBatch,
    RawBeginInFailingBatch,
    DeferredFkCommit,
    TriggerRollback,
    PanicInRawAccess,
    DropOutsideRuntime,
}

const ENDINGS: [Ending; 10] = [
    Ending::Dropped,
    Ending::ErrorThenDropped,
    Ending::AbortedThenUsed,
    Ending::RawAborted,
    Ending::RawBeginInBatch,
    Ending::RawBeginInFailingBatch,
    Ending::DeferredFkCommit,
    Ending::TriggerRollback,
    Ending::PanicInRawAccess,
    Ending::DropOutsideRuntime,
];

impl Ending {
    fn name(self) -> &'static str {
        match self {
            Ending::Dropped => "dropped",
            Ending::ErrorThenDropped => "error_then_dropped",
            Ending::AbortedThenUsed => "aborted_then_used",
            Ending::RawAborted => "raw_aborted",
            Ending::RawBeginInBatch => "raw_begin_in_batch",
            Ending::RawBeginInFailingBatch => "raw_begin_in_failing_batch",
            Ending::DeferredFkCommit => "deferred_fk_commit",
            Ending::TriggerRollback => "trigger_rollback",
            Ending::PanicInRawAccess => "panic_in_raw_access",
            Ending::DropOutsideRuntime => "drop_outside_runtime",
        }
    }
}

/// Runs one bad ending on a fresh checkout; the rows it tries to write are `base..base+10`.
async fn bad_ending(kind: Kind, pool: &ConfigAndPool, e: Ending, base: i64) -> Result<(), String> {
    let mut conn = pool
        .get_connection()
        .await
        .map_err(|e| unexpected("checkout", e))?;
    match e {
        Ending::Dropped => {
            let mut tx = conn.begin().await.map_err(|e| unexpected("begin", e))?;
            ins_tx(&mut tx, base).await?;
            ins_tx(&mut tx, base + 1).await?;
            drop(tx);
        }
        Ending::ErrorThenDropped => {
            let mut tx = conn.begin().await.map_err(|e| unexpected("begin", e))?;
            ins_tx(&mut tx, base).await?;
            let dup = tx
                .query(INS)
                .params(&[base.into(), "dup".into()])
                .dml()
                .await;
            expect_err("duplicate key", dup, ErrorKind::UniqueViolation)?;
            drop(tx);
        }
        Ending::AbortedThenUsed => {
            let mut tx = conn.begin().await.map_err(|e| unexpected("begin", e))?;
            ins_tx(&mut tx, base).await?;
            let bad = tx.query("SELECT * FROM no_such_table").select().await;
            expect_err("unknown table", bad, ErrorKind::UndefinedObject)?;
            let later = tx
                .query(INS)
                .params(&[(base + 1).into(), "later".into()])
                .dml()
                .await;
            expect_err(
                "statement after the error",
                later,
                ErrorKind::TransactionAborted,
            )?;
            let later = tx.execute_batch("SELECT 1").await;
            expect_err(
                "script after the error",
                later,
                ErrorKind::TransactionAborted,
            )?;
            drop(tx);
        }
        Ending::RawAborted => {
            #[cfg(feature = "postgres")]
            if kind == Kind::Postgres {
                let client = conn
                    .postgres_client()
                    .await
                    .map_err(|e| unexpected("raw client", e))?;
                let r = client
                    .batch_execute(&format!(
                        "BEGIN; INSERT INTO bt (id, note) VALUES ({base}, 'raw'); SELECT 1/0"
                    ))
                    .await;
                if r.is_ok() {
                    return Err("1/0 succeeded".into());
                }
            }
            if kind != Kind::Postgres {
                // SQLite and Turso: a raw BEGIN whose transaction the engine then rolls back
                // itself (the RAISE(ROLLBACK) trigger), through the middleware's own API.
                // MySQL: the trigger's SIGNAL fails the statement and the raw transaction stays
                // open, with its row, until the connection goes back.
                conn.execute_batch(&format!(
                    "BEGIN; INSERT INTO bt (id, note) VALUES ({base}, 'raw')"
                ))
                .await
                .map_err(|e| unexpected("raw begin", e))?;
                let r = ins(&mut conn, base + 13).await;
                if r.is_ok() {
                    return Err("the RAISE(ROLLBACK) trigger did not fire".into());
                }
            }
        }
        Ending::RawBeginInBatch => {
            conn.execute_batch(&format!(
                "BEGIN; INSERT INTO bt (id, note) VALUES ({base}, 'raw')"
            ))
            .await
            .map_err(|e| unexpected("raw BEGIN script", e))?;
        }
        Ending::RawBeginInFailingBatch => {
            let r = conn
                .execute_batch(&format!(
                    "BEGIN; INSERT INTO bt (id, note) VALUES ({base}, 'raw'); SELECT * FROM no_such_table"
                ))
                .await;
            if r.is_ok() {
                return Err("a failing script succeeded".into());
            }
            // A failed script with its own BEGIN must not leave that transaction open: this
            // write autocommits and is visible at once.
            let probe = base + 5;
            match ins(&mut conn, probe).await {
                Ok(1) => {}
                other => {
                    return Err(unexpected(
                        "autocommit write after the failed script",
                        other,
                    ));
                }
            }
            check_idle(&mut conn, kind)
                .await
                .map_err(|e| format!("same checkout after the failed script: {e}"))?;
        }
        Ending::DeferredFkCommit if kind == Kind::Mysql => {
            // MYSQL DIFFERS BY DESIGN: no deferred constraints; the child insert fails at
            // once, and the commit after that error is refused.
            let mut tx = conn.begin().await.map_err(|e| unexpected("begin", e))?;
            ins_tx(&mut tx, base).await?;
            let child = tx
                .query("INSERT INTO fk_child (id, parent_id) VALUES ($1, 999)")
                .params(&[base.into()])
                .dml()
                .await;
            expect_err("child", child, ErrorKind::ForeignKeyViolation)?;
            let c = tx.commit().await;
            expect_err("commit after the error", c, ErrorKind::TransactionAborted)?;
            check_idle(&mut conn, kind)
                .await
                .map_err(|e| format!("same checkout after the refused commit: {e}"))?;
        }
        Ending::DeferredFkCommit => {
            let mut tx = conn.begin().await.map_err(|e| unexpected("begin", e))?;
            ins_tx(&mut tx, base).await?;
            tx.query("INSERT INTO fk_child (id, parent_id) VALUES ($1, 999)")
                .params(&[base.into()])
                .dml()
                .await
                .map_err(|e| unexpected("deferred child", e))?;
            let c = tx.commit().await;
            expect_err("commit", c, ErrorKind::ForeignKeyViolation)?;
            // The same checkout is outside any transaction right away.
            check_idle(&mut conn, kind)
                .await
                .map_err(|e| format!("same checkout after the failed commit: {e}"))?;
        }
        Ending::TriggerRollback => {
            let mut tx = conn.begin().await.map_err(|e| unexpected("begin", e))?;
            ins_tx(&mut tx, base).await?;
            let r = tx
                .query(INS)
                .params(&[(base + 13).into(), "unlucky".into()])
                .dml()
                .await;
            if r.is_ok() {
                return Err("the trigger did not fire".into());
            }
            let later = tx
                .query(INS)
                .params(&[(base + 2).into(), "after".into()])
                .dml()
                .await;
            expect_err(
                "statement after the engine rolled back",
                later,
                ErrorKind::TransactionAborted,
            )?;
            let c = tx.commit().await;
            expect_err(
                "commit after the engine rolled back",
                c,
                ErrorKind::TransactionAborted,
            )?;
        }
        Ending::PanicInRawAccess => return panic_in_raw_access(kind, conn, base).await,
        Ending::DropOutsideRuntime => {
            let mut tx = conn.begin().await.map_err(|e| unexpected("begin", e))?;
            ins_tx(&mut tx, base).await?;
            std::thread::scope(|s| {
                s.spawn(move || {
                    assert!(tokio::runtime::Handle::try_current().is_err());
                    drop(tx);
                })
                .join()
                .expect("drop on a plain thread");
            });
            std::thread::spawn(move || {
                assert!(tokio::runtime::Handle::try_current().is_err());
                drop(conn);
            })
            .join()
            .map_err(|_| "dropping the connection outside a runtime panicked".to_string())?;
            return Ok(());
        }
    }
    drop(conn);
    Ok(())
}

async fn ins_tx(tx: &mut Tx<'_>, id: i64) -> Result<(), String> {
    match tx.query(INS).params(&[id.into(), "tx".into()]).dml().await {
        Ok(1) => Ok(()),
        other => Err(unexpected("insert in tx", other)),
    }
}

fn expect_err<T: std::fmt::Debug>(
    what: &str,
    r: Result<T, SqlMiddlewareDbError>,
    kind: ErrorKind,
) -> Result<SqlMiddlewareDbError, String> {
    match r {
        Err(e) if e.kind() == kind => Ok(e),
        other => Err(format!("{what}: expected {kind:?}, got {other:?}")),
    }
}

/// A panic while the raw driver handle is in use, inside a transaction the raw code opened.
async fn panic_in_raw_access(kind: Kind, conn: Conn, base: i64) -> Result<(), String> {
    match kind {
        #[cfg(feature = "sqlite")]
        Kind::Sqlite => {
            let mut conn = conn;
            let r = conn
                .with_blocking_sqlite(move |c| {
                    c.execute_batch(&format!(
                        "BEGIN; INSERT INTO bt (id, note) VALUES ({base}, 'raw')"
                    ))?;
                    if !c.is_autocommit() {
                        panic!("boom inside with_blocking_sqlite");
                    }
                    Ok(())
                })
                .await;
            match r {
                Err(e) if e.message().contains("panicked") => Ok(()),
                other => Err(unexpected("panicking closure", other)),
            }
        }
        #[cfg(feature = "postgres")]
        Kind::Postgres => {
            let task = tokio::spawn(async move {
                let mut conn = conn;
                let client = conn.postgres_client().await.expect("raw client");
                client
                    .batch_execute(&format!(
                        "BEGIN; INSERT INTO bt (id, note) VALUES ({base}, 'raw')"
                    ))
                    .await
                    .expect("raw begin");
                let _still_borrowed = client;
                panic!("boom while holding the raw client");
            });
            match task.await {
                Err(e) if e.is_panic() => Ok(()),
                other => Err(unexpected("panicking task", other.map(drop))),
            }
        }
        #[cfg(feature = "turso")]
        Kind::Turso => {
            let task = tokio::spawn(async move {
                let mut conn = conn;
                let raw = conn.turso_connection().await.expect("raw connection");
                raw.execute("BEGIN", ()).await.expect("raw begin");
                raw.execute(
                    &format!("INSERT INTO bt (id, note) VALUES ({base}, 'raw')"),
                    (),
                )
                .await
                .expect("raw insert");
                let _still_borrowed = raw;
                panic!("boom while holding the raw connection");
            });
            match task.await {
                Err(e) if e.is_panic() => Ok(()),
                other => Err(unexpected("panicking task", other.map(drop))),
            }
        }
        #[cfg(feature = "mysql")]
        Kind::Mysql => {
            let task = tokio::spawn(async move {
                use mysql_async::prelude::Queryable;
                let mut conn = conn;
                let raw = conn.mysql_connection().await.expect("raw connection");
                raw.query_drop("START TRANSACTION")
                    .await
                    .expect("raw begin");
                raw.query_drop(format!("INSERT INTO bt (id, note) VALUES ({base}, 'raw')"))
                    .await
                    .expect("raw insert");
                let _still_borrowed = raw;
                panic!("boom while holding the raw connection");
            });
            match task.await {
                Err(e) if e.is_panic() => Ok(()),
                other => Err(unexpected("panicking task", other.map(drop))),
            }
        }
        #[allow(unreachable_patterns)]
        _ => Err(format!("no raw access for {kind:?} in this build")),
    }
}

async fn t_bad_endings(db: &TestDb) {
    let (_guard, _seed) = SeedGuard::new(&format!("bad_endings/{}", db.kind.name()));
    setup(db).await;
    let pool = db
        .builder()
        .max_size(1)
        .wait_timeout(Duration::from_secs(10))
        .build()
        .await
        .expect("pool of one");
    let mut problems = Vec::new();
    let mut scenarios = 0;
    let mut evicted = 0;
    let mut dirty = 0;
    for (i, ending) in ENDINGS.into_iter().enumerate() {
        let base = (i as i64 + 1) * 1000;
        scenarios += 1;
        let before = {
            let mut c = pool.get_connection().await.expect("identity checkout");
            conn_identity(&mut c, db.kind).await
        };
        if let Err(e) = bad_ending(db.kind, &pool, ending, base).await {
            problems.push(format!("{}: {e}", ending.name()));
        }
        let next = tokio::time::timeout(Duration::from_secs(10), pool.get_connection()).await;
        let mut next = match next {
            Ok(Ok(c)) => c,
            other => {
                problems.push(format!(
                    "{}: next checkout: {:?}",
                    ending.name(),
                    other.map(|r| r.map(drop))
                ));
                continue;
            }
        };
        if let Err(e) = check_idle(&mut next, db.kind).await {
            dirty += 1;
            problems.push(format!("{}: next checkout is dirty: {e}", ending.name()));
        }
        if before.is_some() && conn_identity(&mut next, db.kind).await != before {
            evicted += 1;
        }
        drop(next);
        // Nothing of the bad transaction is visible; writes made outside it (the probe of
        // the failing-script case) are.
        let seen = ids(db, base, base + 1000).await;
        let expected: BTreeSet<i64> = if ending == Ending::RawBeginInFailingBatch {
            [base + 5].into()
        } else {
            BTreeSet::new()
        };
        if seen != expected {
            problems.push(format!(
                "{}: rows visible afterwards {seen:?}, expected {expected:?}",
                ending.name()
            ));
        }
        let status = pool.status();
        if status.size > 1 {
            problems.push(format!("{}: pool grew: {status:?}", ending.name()));
        }
    }
    println!(
        "bad_endings backend={} scenarios={scenarios} dirty_checkouts={dirty} evicted={evicted} problems={}",
        db.kind.name(),
        problems.len()
    );
    assert!(
        problems.is_empty(),
        "[{}] {}",
        db.kind.name(),
        problems.join("\n")
    );
}

/// `commit()` returns Ok only when a fresh connection sees every row of the transaction.
async fn t_commit_ok_means_visible(db: &TestDb) {
    let (_guard, seed) = SeedGuard::new(&format!("commit_ok_visible/{}", db.kind.name()));
    setup(db).await;
    let mut rng = Rng::new(seed);
    let writer_pool = db.builder().max_size(2).build().await.expect("writer pool");
    let mut commits = 0;
    let mut rows = 0;
    let mut not_visible = Vec::new();
    let mut next_id = 100_000_i64;
    for round in 0..60 {
        let mut c = writer_pool.get_connection().await.expect("checkout");
        let mut tx = c.begin().await.expect("begin");
        let n = 1 + rng.below(8) as i64;
        let first = next_id;
        for _ in 0..n {
            // Skip the trigger's unlucky ids.
            if next_id % 1000 == 13 {
                next_id += 1;
            }
            ins_tx(&mut tx, next_id).await.expect("insert");
            next_id += 1;
        }
        let via_batch = rng.chance(0.3);
        if via_batch {
            if next_id % 1000 == 13 {
                next_id += 1;
            }
            tx.execute_batch(&format!(
                "INSERT INTO bt (id, note) VALUES ({next_id}, 'batch')"
            ))
            .await
            .expect("batch in tx");
            next_id += 1;
        }
        tx.commit().await.expect("commit");
        commits += 1;
        drop(c);
        // A brand-new pool: nothing cached, nothing shared with the writer.
        let fresh = db.builder().max_size(1).build().await.expect("fresh pool");
        let mut f = fresh.get_connection().await.expect("fresh checkout");
        let (seen,): (i64,) = f
            .query("SELECT count(*) FROM bt WHERE id >= $1 AND id < $2")
            .params(&[first.into(), next_id.into()])
            .one()
            .await
            .expect("fresh read");
        let expected = next_id - first - (first..next_id).filter(|i| i % 1000 == 13).count() as i64;
        rows += expected;
        if seen != expected {
            not_visible.push(format!("round {round}: saw {seen} of {expected}"));
        }
    }
    println!(
        "commit_truth_visible backend={} commits={commits} rows={rows} not_visible={}",
        db.kind.name(),
        not_visible.len()
    );
    assert!(not_visible.is_empty(), "{}", not_visible.join("\n"));
}

/// A commit after any error inside the transaction is an error, and saves nothing.
async fn t_commit_after_error(db: &TestDb) {
    let (_guard, _seed) = SeedGuard::new(&format!("commit_after_error/{}", db.kind.name()));
    setup(db).await;
    let mut problems = Vec::new();
    let mut cases = 0;
    let mut committed_anyway = 0;
    let failing: Vec<(&str, String, Vec<RowValues>)> = vec![
        ("unique violation", INS.into(), vec![1.into(), "dup".into()]),
        ("syntax error", "SELEC 1".into(), vec![]),
        ("unknown table", "SELECT * FROM nope".into(), vec![]),
        ("parameter count", INS.into(), vec![1.into()]),
        ("unknown column", "SELECT nope FROM bt".into(), vec![]),
        (
            "script error",
            "INSERT INTO bt (id, note) VALUES (9, 'x'); SELECT * FROM nope".into(),
            vec![],
        ),
    ];
    for (i, (name, sql, params)) in failing.iter().enumerate() {
        cases += 1;
        let base = 10_000 + i as i64 * 100;
        let mut c = db.conn().await;
        let mut tx = c.begin().await.expect("begin");
        // Row `1` exists inside this transaction, so the duplicate case collides with it.
        let first = tx
            .query(INS)
            .params(&[1.into(), "first".into()])
            .dml()
            .await;
        let _ = first;
        ins_tx(&mut tx, base).await.expect("insert");
        let r = if name.starts_with("script") {
            tx.execute_batch(sql).await.map(|_| 0)
        } else {
            tx.query(sql).params(params).dml().await
        };
        if r.is_ok() {
            problems.push(format!("{name}: the failing statement succeeded"));
            continue;
        }
        // The error is swallowed; the program goes on and commits.
        let more = tx
            .query(INS)
            .params(&[(base + 1).into(), "more".into()])
            .dml()
            .await;
        if let Err(e) = expect_err(
            "statement after the error",
            more,
            ErrorKind::TransactionAborted,
        ) {
            problems.push(format!("{name}: {e}"));
        }
        match tx.commit().await {
            Err(e) if e.kind() == ErrorKind::TransactionAborted => {}
            other => problems.push(format!("{name}: commit gave {other:?}")),
        }
        if let Err(e) = check_idle(&mut c, db.kind).await {
            problems.push(format!("{name}: connection after the failed commit: {e}"));
        }
        drop(c);
        let seen = ids(db, 0, 20_000).await;
        if !seen.is_empty() {
            committed_anyway += 1;
            problems.push(format!(
                "{name}: rows visible after the failed commit: {seen:?}"
            ));
        }
    }
    println!(
        "commit_after_error backend={} cases={cases} committed_anyway={committed_anyway} problems={}",
        db.kind.name(),
        problems.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Statements after the engine has ended the transaction fail instead of autocommitting, and
/// commit() never reports Ok for a transaction that was (partly) rolled back.
///
/// Cases: the engine rolled back by itself (trigger); transaction control sent through the
/// query API inside a `Tx` (`ROLLBACK`, `COMMIT`, `BEGIN`); on SQLite, the engine's own rollback
/// on a full database.
async fn t_no_autocommit_after_engine_rollback(db: &TestDb) {
    let (_guard, _seed) = SeedGuard::new(&format!("no_autocommit/{}", db.kind.name()));
    setup(db).await;
    let mut problems = Vec::new();
    let mut cases = 0;
    for (i, ender) in [
        "TRIGGER",
        "ROLLBACK",
        "COMMIT",
        "BEGIN",
        "END",
        "ROLLBACK TRANSACTION",
    ]
    .into_iter()
    .enumerate()
    {
        cases += 1;
        let base = 20_000 + i as i64 * 100;
        let (a, b) = (base + 1, base + 2);
        let mut c = db.conn().await;
        let mut tx = c.begin().await.expect("begin");
        ins_tx(&mut tx, a).await.expect("insert a");
        let ended = if ender == "TRIGGER" {
            tx.query(INS)
                .params(&[(base + 13).into(), "unlucky".into()])
                .dml()
                .await
        } else {
            tx.query(ender).dml().await
        };
        let later = tx
            .query(INS)
            .params(&[b.into(), "later".into()])
            .dml()
            .await;
        let commit = tx.commit().await;
        let idle = check_idle(&mut c, db.kind).await;
        drop(c);
        let seen = ids(db, base, base + 100).await;
        let all: BTreeSet<i64> = [a, b].into();
        // The contract: commit Ok => everything of the transaction is visible;
        // commit Err => nothing is.
        let verdict = match &commit {
            Ok(()) if later.is_ok() && seen == all => Ok(()),
            Ok(()) => Err(format!(
                "commit() returned Ok but a fresh connection sees {seen:?} of {all:?} \
                 (the statement ending the transaction gave {ended:?}, the later write {later:?})"
            )),
            Err(_) if seen.is_empty() => Ok(()),
            Err(e) => Err(format!(
                "commit() failed ({e}) but {seen:?} became visible: the later write {later:?} \
                 ran outside the transaction (the ending statement gave {ended:?})"
            )),
        };
        if let Err(e) = verdict {
            problems.push(format!("{ender}: {e}"));
        }
        if let Err(e) = idle {
            problems.push(format!("{ender}: connection left dirty: {e}"));
        }
    }
    #[cfg(feature = "sqlite")]
    if db.kind == Kind::Sqlite {
        cases += 1;
        if let Err(e) = sqlite_full_database(db).await {
            problems.push(format!("SQLITE_FULL: {e}"));
        }
    }
    println!(
        "no_autocommit_after_rollback backend={} cases={cases} problems={}",
        db.kind.name(),
        problems.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// SQLite rolls a transaction back by itself on some errors (SQLITE_FULL among them): later
/// statements must fail, and commit must not report Ok.
#[cfg(feature = "sqlite")]
async fn sqlite_full_database(db: &TestDb) -> Result<(), String> {
    let mut c = db.conn().await;
    c.execute_batch("CREATE TABLE big (id INTEGER PRIMARY KEY, b BLOB)")
        .await
        .map_err(|e| unexpected("create", e))?;
    let pages: i64 = c
        .with_blocking_sqlite(|raw| raw.query_row("PRAGMA page_count", [], |r| r.get(0)))
        .await
        .map_err(|e| unexpected("page_count", e))?;
    // Leave room for a few pages only.
    let limit = pages + 8;
    c.with_blocking_sqlite(move |raw| {
        raw.query_row(&format!("PRAGMA max_page_count = {limit}"), [], |r| {
            r.get::<_, i64>(0)
        })
    })
    .await
    .map_err(|e| unexpected("max_page_count", e))?;
    let mut tx = c.begin().await.map_err(|e| unexpected("begin", e))?;
    let blob = vec![7_u8; 64 * 1024];
    let mut failed = None;
    for i in 0..20_i64 {
        if let Err(e) = tx
            .query("INSERT INTO big (id, b) VALUES ($1, $2)")
            .params(&[i.into(), RowValues::Blob(blob.clone())])
            .dml()
            .await
        {
            failed = Some(e);
            break;
        }
    }
    let Some(e) = failed else {
        return Err("the database never became full".into());
    };
    let later = tx
        .query("INSERT INTO big (id, b) VALUES (100, x'00')")
        .dml()
        .await;
    expect_err(
        "statement after SQLITE_FULL",
        later,
        ErrorKind::TransactionAborted,
    )?;
    let commit = tx.commit().await;
    if commit.is_ok() {
        return Err(format!("commit after {e} returned Ok"));
    }
    check_idle(&mut c, Kind::Sqlite).await?;
    let (n,): (i64,) = c
        .query("SELECT count(*) FROM big")
        .one()
        .await
        .map_err(|e| unexpected("count", e))?;
    if n != 0 {
        return Err(format!("{n} rows of the failed transaction are visible"));
    }
    // Give the pool's connections room again (max_page_count is per connection).
    c.with_blocking_sqlite(|raw| {
        raw.query_row("PRAGMA max_page_count = 1073741823", [], |r| {
            r.get::<_, i64>(0)
        })
    })
    .await
    .map_err(|e| unexpected("max_page_count reset", e))?;
    Ok(())
}

/// Postgres: the connection is killed between two statements of a transaction. The next
/// statement fails with `ConnectionLost`, commit fails, nothing is visible, and nothing later
/// autocommits on a replacement connection behind the transaction's back.
#[cfg(feature = "postgres")]
async fn t_pg_killed_mid_transaction(db: &TestDb) {
    setup(db).await;
    let app = format!("sqlmw_rel_kill_{}", common::backends::unique_hex());
    let pool = db
        .builder()
        .max_size(1)
        .application_name(&app)
        .build()
        .await
        .expect("pool");
    let mut killer = db.conn().await;
    let mut problems = Vec::new();
    let mut visible_after_kill = 0;
    for round in 0..5_i64 {
        let base = 30_000 + round * 100;
        let mut c = pool.get_connection().await.expect("checkout");
        let mut tx = c.begin().await.expect("begin");
        ins_tx(&mut tx, base).await.expect("insert");
        let (killed,): (i64,) = killer
            .query(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
            )
            .params(&[app.as_str().into()])
            .one()
            .await
            .expect("kill");
        if killed != 1 {
            problems.push(format!("round {round}: killed {killed} backends"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        let later = tx
            .query(INS)
            .params(&[(base + 1).into(), "later".into()])
            .dml()
            .await;
        if let Err(e) = expect_err("statement after the kill", later, ErrorKind::ConnectionLost) {
            problems.push(format!("round {round}: {e}"));
        }
        let more = tx
            .query(INS)
            .params(&[(base + 2).into(), "more".into()])
            .dml()
            .await;
        if more.is_ok() {
            problems.push(format!(
                "round {round}: a later statement succeeded: {more:?}"
            ));
        }
        let commit = tx.commit().await;
        if commit.is_ok() {
            problems.push(format!("round {round}: commit after the kill returned Ok"));
        }
        drop(c);
        let seen = ids(db, base, base + 100).await;
        if !seen.is_empty() {
            visible_after_kill += 1;
            problems.push(format!("round {round}: visible after the kill: {seen:?}"));
        }
        let mut next = pool.get_connection().await.expect("next checkout");
        if let Err(e) = check_idle(&mut next, Kind::Postgres).await {
            problems.push(format!("round {round}: next checkout: {e}"));
        }
    }
    println!(
        "pg_killed_mid_tx rounds=5 visible_after_kill={visible_after_kill} problems={}",
        problems.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

backend_tests! {
    let _group = common::groups::enter("transactions");
    async fn every_bad_ending_leaves_a_clean_pool(db) { t_bad_endings(&db).await }
    async fn commit_ok_means_a_fresh_connection_sees_it(db) { t_commit_ok_means_visible(&db).await }
    async fn commit_after_an_error_is_an_error(db) { t_commit_after_error(&db).await }
    async fn nothing_autocommits_after_the_transaction_ended(db) {
        t_no_autocommit_after_engine_rollback(&db).await
    }
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_killed_mid_transaction() {
    let _group = common::groups::enter("transactions");
    common::pg::with_schema(|url| async move {
        let db = common::engines::postgres::test_db(&url).await;
        t_pg_killed_mid_transaction(&db).await
    })
    .await;
}
