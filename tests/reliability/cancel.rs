//! Reliability 1: cancellation at every await point.
//!
//! Each scenario drops one future — `begin`, a query or a script inside a transaction,
//! `commit`, `rollback`, an autocommit query or script, a lock wait, `prepare`, a prepared
//! statement's `dml`, a `pipeline`, a typed `all` read, a raw-access write, and an insert inside
//! a savepoint (then dropped, and the transaction committed) — after 0, 1,
//! 2 … polls (driven by a counting waker, up to completion), then again at drop points drawn
//! from the printed seed, either right after the last poll or after the engine had a moment to
//! finish the work ("settled"). Then, on a pool of size 1:
//!
//! - an acknowledged write made on the same checkout right after the drop is kept;
//! - the next checkout is idle (not inside an open or aborted transaction);
//! - no acknowledged write is lost, and no unacknowledged write is visible, except that a
//!   future that may already have reached the engine's commit (a dropped `commit()`, or an
//!   autocommit statement or script) is *indeterminate*: all of its rows or none.
//!
//! A second test keeps the transaction after a statement future was dropped inside it and
//! commits: the dropped statement was never acknowledged, so it must not become visible
//! through that commit (the commit must fail, or the statement must not have run).

use std::collections::BTreeSet;
use std::time::Duration;

use sql_middleware::prelude::*;
use sql_middleware::{ErrorKind, PoolBuilder};

use crate::backend_tests;
use crate::common;
use crate::common::backends::{Kind, Logical, TestDb};
use crate::common::reliability::{
    Audit, DropAt, Fate, Ledger, Polled, Rng, SeedGuard, check_idle, conn_identity, knob_usize,
    poll_at_most,
};

type Conn = MiddlewarePoolConnection;

const INS: &str = "INSERT INTO cx (id, grp) VALUES ($1, $2)";
/// Polls are tried up to this many; every operation here completes well before.
const MAX_POLLS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Begin,
    TxQuery,
    TxBatch,
    Commit,
    Rollback,
    AutoQuery,
    AutoBatch,
    /// SQLite/Turso: `begin` while another connection holds the write lock (released 20 ms
    /// later). Postgres and MySQL: an UPDATE inside a transaction waiting for a row lock.
    LockWait,
    /// `prepare`, then (when it completed) the prepared insert.
    Prepare,
    /// A prepared statement's `dml`, in autocommit mode.
    PreparedDml,
    /// A `pipeline` of two inserts, in autocommit mode (all or nothing).
    Pipeline,
    /// A typed `all` read inside a transaction that wrote a row.
    All,
    /// An autocommit insert through raw access.
    Raw,
    /// An insert inside a savepoint; the savepoint is dropped, the transaction committed.
    Savepoint,
}

const TARGETS: [Target; 14] = [
    Target::Begin,
    Target::TxQuery,
    Target::TxBatch,
    Target::Commit,
    Target::Rollback,
    Target::AutoQuery,
    Target::AutoBatch,
    Target::LockWait,
    Target::Prepare,
    Target::PreparedDml,
    Target::Pipeline,
    Target::All,
    Target::Raw,
    Target::Savepoint,
];

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::Begin => "begin",
            Target::TxQuery => "tx_query",
            Target::TxBatch => "tx_batch",
            Target::Commit => "commit",
            Target::Rollback => "rollback",
            Target::AutoQuery => "auto_query",
            Target::AutoBatch => "auto_batch",
            Target::LockWait => "lock_wait",
            Target::Prepare => "prepare",
            Target::PreparedDml => "prepared_dml",
            Target::Pipeline => "pipeline",
            Target::All => "all",
            Target::Raw => "raw",
            Target::Savepoint => "savepoint",
        }
    }
}

#[derive(Debug, Default)]
struct Stats {
    scenarios: usize,
    dropped: usize,
    completed: usize,
    same_checkout_lost: usize,
    evicted: usize,
    dirty: Vec<String>,
    max_polls: usize,
}

fn row(group: i64, j: i64) -> i64 {
    group * 10 + j
}

/// Inserts rows `a` and `b` of group `grp` in one statement through the backend's raw access
/// of `$on` (a connection, or a `Tx`: both have the same raw accessors), polled at most
/// `budget` times: a `Polled<Result<(), SqlMiddlewareDbError>>`.
macro_rules! raw_insert_on {
    ($on:expr, $kind:expr, $a:expr, $b:expr, $grp:expr, $budget:expr, $at:expr) => {
        // An async block, so that its early returns end the insert, not the caller.
        async {
            let (conn, kind, a, b, grp, budget, at) = ($on, $kind, $a, $b, $grp, $budget, $at);
            let sql = format!("INSERT INTO cx (id, grp) VALUES ({a}, {grp}), ({b}, {grp})");
            match kind {
                #[cfg(feature = "sqlite")]
                Kind::Sqlite => {
                    poll_at_most(
                        conn.with_blocking_sqlite(move |c| c.execute(&sql, []).map(drop)),
                        budget,
                        at,
                    )
                    .await
                }
                #[cfg(feature = "postgres")]
                Kind::Postgres => {
                    let client = match conn.postgres_client().await {
                        Ok(c) => c,
                        Err(e) => return Polled::Done(Err(e), 0),
                    };
                    raw_polled(poll_at_most(client.batch_execute(&sql), budget, at).await)
                }
                #[cfg(feature = "turso")]
                Kind::Turso => {
                    let raw = match conn.turso_connection().await {
                        Ok(c) => c,
                        Err(e) => return Polled::Done(Err(e), 0),
                    };
                    raw_polled(poll_at_most(raw.execute(&sql, ()), budget, at).await)
                }
                #[cfg(feature = "mysql")]
                Kind::Mysql => {
                    use mysql_async::prelude::Queryable;
                    let raw = match conn.mysql_connection().await {
                        Ok(c) => c,
                        Err(e) => return Polled::Done(Err(e), 0),
                    };
                    raw_polled(poll_at_most(raw.query_drop(sql), budget, at).await)
                }
                #[allow(unreachable_patterns)]
                _ => unreachable!("no raw access compiled for {kind:?}"),
            }
        }
        .await
    };
}

/// Begins a transaction and writes row `a` of group `grp` in it.
async fn begin_with_row(conn: &mut Conn, a: i64, grp: i64) -> Result<Tx<'_>, String> {
    let mut tx = conn.begin().await.map_err(|e| fail("begin", e))?;
    tx.query(INS)
        .params(&[a.into(), grp.into()])
        .dml()
        .await
        .map_err(|e| fail("insert", e))?;
    Ok(tx)
}

async fn ins(conn: &mut Conn, id: i64, grp: i64) -> Result<u64, SqlMiddlewareDbError> {
    conn.query(INS).params(&[id.into(), grp.into()]).dml().await
}

/// Records the fate of a write that commits (a `commit()` or an autocommit write) polled at
/// most a few times: acknowledged when it finished, unacknowledged when dropped before its
/// first poll, indeterminate when dropped after it reached the engine. Returns whether it
/// completed.
fn settle_write(
    polled: Polled<Result<(), SqlMiddlewareDbError>>,
    what: &str,
    grp: i64,
    rows: Vec<i64>,
    stats: &mut Stats,
    ledger: &mut Ledger,
) -> Result<bool, String> {
    let fate = match polled {
        Polled::Done(Ok(()), n) => {
            stats.max_polls = stats.max_polls.max(n);
            Fate::Acked
        }
        Polled::Done(Err(e), _) => return Err(fail(what, e)),
        Polled::Dropped(0) => Fate::Unacked,
        Polled::Dropped(_) => Fate::Indeterminate,
    };
    ledger.record(grp, fate, rows);
    Ok(fate == Fate::Acked)
}

fn fail<T: std::fmt::Debug>(what: &str, r: T) -> String {
    format!("{what}: unexpected {r:?}")
}

/// Runs one scenario on a fresh checkout of `pool` (size 1). Returns whether the target
/// future completed within `budget` polls.
#[allow(clippy::too_many_arguments)]
async fn scenario(
    kind: Kind,
    pool: &ConfigAndPool,
    holder_pool: &ConfigAndPool,
    target: Target,
    budget: usize,
    at: DropAt,
    grp: i64,
    ledger: &mut Ledger,
    stats: &mut Stats,
) -> Result<bool, String> {
    let mut conn = tokio::time::timeout(Duration::from_secs(10), pool.get_connection())
        .await
        .map_err(|_| "checkout before the scenario hangs".to_string())?
        .map_err(|e| fail("checkout", e))?;
    let before = conn_identity(&mut conn, kind).await;
    let (a, b) = (row(grp, 1), row(grp, 2));
    let completed;
    match target {
        Target::Begin => match poll_at_most(conn.begin(), budget, at).await {
            Polled::Done(Ok(mut tx), n) => {
                stats.max_polls = stats.max_polls.max(n);
                let r = tx
                    .query(INS)
                    .params(&[a.into(), grp.into()])
                    .dml()
                    .await
                    .map_err(|e| fail("insert after begin", e))?;
                assert_eq!(r, 1);
                tx.commit().await.map_err(|e| fail("commit", e))?;
                ledger.record(grp, Fate::Acked, vec![a]);
                completed = true;
            }
            Polled::Done(Err(e), _) => return Err(fail("begin", e)),
            Polled::Dropped(_) => {
                ledger.record(grp, Fate::Unacked, vec![a]);
                completed = false;
            }
        },
        Target::TxQuery | Target::TxBatch => {
            let mut tx = begin_with_row(&mut conn, a, grp).await?;
            let script = format!("INSERT INTO cx (id, grp) VALUES ({b}, {grp})");
            let polled = if target == Target::TxQuery {
                match poll_at_most(
                    tx.query(INS).params(&[b.into(), grp.into()]).dml(),
                    budget,
                    at,
                )
                .await
                {
                    Polled::Done(r, n) => Polled::Done(r.map(drop), n),
                    Polled::Dropped(n) => Polled::Dropped(n),
                }
            } else {
                poll_at_most(tx.execute_batch(&script), budget, at).await
            };
            match polled {
                Polled::Done(Ok(()), n) => {
                    stats.max_polls = stats.max_polls.max(n);
                    tx.commit().await.map_err(|e| fail("commit", e))?;
                    ledger.record(grp, Fate::Acked, vec![a, b]);
                    completed = true;
                }
                Polled::Done(Err(e), _) => return Err(fail("statement in tx", e)),
                Polled::Dropped(_) => {
                    drop(tx);
                    ledger.record(grp, Fate::Unacked, vec![a, b]);
                    completed = false;
                }
            }
        }
        Target::Commit => {
            let mut tx = conn.begin().await.map_err(|e| fail("begin", e))?;
            for id in [a, b] {
                tx.query(INS)
                    .params(&[id.into(), grp.into()])
                    .dml()
                    .await
                    .map_err(|e| fail("insert", e))?;
            }
            let polled = poll_at_most(tx.commit(), budget, at).await;
            completed = settle_write(polled, "commit", grp, vec![a, b], stats, ledger)?;
        }
        Target::Rollback => {
            let tx = begin_with_row(&mut conn, a, grp).await?;
            match poll_at_most(tx.rollback(), budget, at).await {
                Polled::Done(Ok(()), n) => {
                    stats.max_polls = stats.max_polls.max(n);
                    completed = true;
                }
                Polled::Done(Err(e), _) => return Err(fail("rollback", e)),
                Polled::Dropped(_) => completed = false,
            }
            ledger.record(grp, Fate::Unacked, vec![a]);
        }
        Target::AutoQuery | Target::AutoBatch => {
            let sql2 = "INSERT INTO cx (id, grp) VALUES ($1, $3), ($2, $3)";
            let params: [RowValues; 3] = [a.into(), b.into(), grp.into()];
            let script = format!(
                "INSERT INTO cx (id, grp) VALUES ({a}, {grp}); INSERT INTO cx (id, grp) VALUES ({b}, {grp})"
            );
            let polled = if target == Target::AutoQuery {
                match poll_at_most(conn.query(sql2).params(&params).dml(), budget, at).await {
                    Polled::Done(r, n) => Polled::Done(
                        r.and_then(|n| {
                            if n == 2 {
                                Ok(())
                            } else {
                                Err(SqlMiddlewareDbError::new(
                                    ErrorKind::Other,
                                    format!("{n} rows instead of 2"),
                                ))
                            }
                        }),
                        n,
                    ),
                    Polled::Dropped(n) => Polled::Dropped(n),
                }
            } else {
                poll_at_most(conn.execute_batch(&script), budget, at).await
            };
            completed = settle_write(polled, "autocommit write", grp, vec![a, b], stats, ledger)?;
        }
        Target::LockWait => {
            // Someone else holds the lock; it lets go 20 ms after the target's first poll.
            let mut holder = holder_pool
                .get_connection()
                .await
                .map_err(|e| fail("holder checkout", e))?;
            let release = std::sync::Arc::new(tokio::sync::Notify::new());
            let (held_tx, held_rx) = tokio::sync::oneshot::channel::<()>();
            let rel = std::sync::Arc::clone(&release);
            let holder_task = tokio::spawn(async move {
                let mut tx = holder.begin().await.map_err(|e| fail("holder begin", e))?;
                tx.query("UPDATE lockrow SET v = v + 1 WHERE id = 1")
                    .dml()
                    .await
                    .map_err(|e| fail("holder update", e))?;
                let _ = held_tx.send(());
                rel.notified().await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                tx.rollback()
                    .await
                    .map_err(|e| fail("holder rollback", e))?;
                Ok::<_, String>(())
            });
            held_rx
                .await
                .map_err(|_| "the lock holder failed".to_string())?;
            release.notify_one();
            // Postgres and MySQL lock rows: the target waits in its UPDATE. SQLite and Turso
            // lock the database: the target waits in its BEGIN.
            if matches!(kind, Kind::Postgres | Kind::Mysql) {
                let mut tx = begin_with_row(&mut conn, a, grp).await?;
                match poll_at_most(
                    tx.query("UPDATE lockrow SET v = v + 1 WHERE id = 1").dml(),
                    budget,
                    at,
                )
                .await
                {
                    Polled::Done(Ok(_), n) => {
                        stats.max_polls = stats.max_polls.max(n);
                        tx.commit().await.map_err(|e| fail("commit", e))?;
                        ledger.record(grp, Fate::Acked, vec![a]);
                        completed = true;
                    }
                    Polled::Done(Err(e), _) => return Err(fail("blocked update", e)),
                    Polled::Dropped(_) => {
                        drop(tx);
                        ledger.record(grp, Fate::Unacked, vec![a]);
                        completed = false;
                    }
                }
            } else {
                match poll_at_most(conn.begin(), budget, at).await {
                    Polled::Done(Ok(mut tx), n) => {
                        stats.max_polls = stats.max_polls.max(n);
                        tx.query(INS)
                            .params(&[a.into(), grp.into()])
                            .dml()
                            .await
                            .map_err(|e| fail("insert after contended begin", e))?;
                        tx.commit().await.map_err(|e| fail("commit", e))?;
                        ledger.record(grp, Fate::Acked, vec![a]);
                        completed = true;
                    }
                    Polled::Done(Err(e), _) => return Err(fail("contended begin", e)),
                    Polled::Dropped(_) => {
                        ledger.record(grp, Fate::Unacked, vec![a]);
                        completed = false;
                    }
                }
            }
            holder_task
                .await
                .map_err(|e| format!("holder task: {e}"))??;
        }
        Target::Prepare => match poll_at_most(conn.prepare(INS), budget, at).await {
            Polled::Done(Ok(mut st), n) => {
                stats.max_polls = stats.max_polls.max(n);
                let r = st
                    .dml(&[a.into(), grp.into()])
                    .await
                    .map_err(|e| fail("prepared insert", e))?;
                assert_eq!(r, 1);
                ledger.record(grp, Fate::Acked, vec![a]);
                completed = true;
            }
            Polled::Done(Err(e), _) => return Err(fail("prepare", e)),
            Polled::Dropped(_) => {
                ledger.record(grp, Fate::Unacked, vec![a]);
                completed = false;
            }
        },
        Target::PreparedDml => {
            let mut st = conn
                .prepare("INSERT INTO cx (id, grp) VALUES ($1, $3), ($2, $3)")
                .await
                .map_err(|e| fail("prepare", e))?;
            let params: [RowValues; 3] = [a.into(), b.into(), grp.into()];
            let polled = match poll_at_most(st.dml(&params), budget, at).await {
                Polled::Done(r, n) => Polled::Done(r.map(drop), n),
                Polled::Dropped(n) => Polled::Dropped(n),
            };
            drop(st);
            completed = settle_write(polled, "prepared dml", grp, vec![a, b], stats, ledger)?;
        }
        Target::Pipeline => {
            let (pa, pb): ([RowValues; 2], [RowValues; 2]) =
                ([a.into(), grp.into()], [b.into(), grp.into()]);
            let sets: [&[RowValues]; 2] = [&pa, &pb];
            let polled = match poll_at_most(conn.pipeline(INS, &sets), budget, at).await {
                Polled::Done(r, n) => Polled::Done(r.map(drop), n),
                Polled::Dropped(n) => Polled::Dropped(n),
            };
            completed = settle_write(polled, "pipeline", grp, vec![a, b], stats, ledger)?;
        }
        Target::All => {
            let mut tx = begin_with_row(&mut conn, a, grp).await?;
            let polled = poll_at_most(
                tx.query("SELECT id FROM cx WHERE grp = $1")
                    .params(&[grp.into()])
                    .all::<(i64,)>(),
                budget,
                at,
            )
            .await;
            match polled {
                Polled::Done(Ok(rows), n) => {
                    stats.max_polls = stats.max_polls.max(n);
                    assert_eq!(rows, vec![(a,)]);
                    tx.commit().await.map_err(|e| fail("commit", e))?;
                    ledger.record(grp, Fate::Acked, vec![a]);
                    completed = true;
                }
                Polled::Done(Err(e), _) => return Err(fail("all", e)),
                Polled::Dropped(_) => {
                    drop(tx);
                    ledger.record(grp, Fate::Unacked, vec![a]);
                    completed = false;
                }
            }
        }
        Target::Raw => {
            let polled = raw_insert_on!(&mut conn, kind, a, b, grp, budget, at);
            completed = settle_write(polled, "raw insert", grp, vec![a, b], stats, ledger)?;
        }
        Target::Savepoint => {
            let mut tx = begin_with_row(&mut conn, a, grp).await?;
            let mut sp = tx.savepoint().await.map_err(|e| fail("savepoint", e))?;
            let polled = match poll_at_most(
                sp.query(INS).params(&[b.into(), grp.into()]).dml(),
                budget,
                at,
            )
            .await
            {
                Polled::Done(r, n) => Polled::Done(r.map(drop), n),
                Polled::Dropped(n) => Polled::Dropped(n),
            };
            match polled {
                Polled::Done(Ok(()), n) => {
                    stats.max_polls = stats.max_polls.max(n);
                    sp.commit().await.map_err(|e| fail("release", e))?;
                    tx.commit().await.map_err(|e| fail("commit", e))?;
                    ledger.record(grp, Fate::Acked, vec![a, b]);
                    completed = true;
                }
                Polled::Done(Err(e), _) => return Err(fail("insert in a savepoint", e)),
                Polled::Dropped(_) => {
                    drop(sp);
                    // The savepoint is rolled back before the commit, taking the dropped
                    // insert with it; the transaction's own row commits, unless the
                    // connection went with the cancelled call (then nothing does).
                    match tx.commit().await {
                        Ok(()) => ledger.record(grp, Fate::Acked, vec![a]),
                        Err(e)
                            if matches!(
                                e.kind(),
                                ErrorKind::TransactionAborted | ErrorKind::ConnectionLost
                            ) =>
                        {
                            ledger.record(grp, Fate::Unacked, vec![a]);
                        }
                        Err(e) => return Err(fail("commit after a dropped savepoint insert", e)),
                    }
                    ledger.record(-grp, Fate::Unacked, vec![b]);
                    completed = false;
                }
            }
        }
    }
    stats.scenarios += 1;
    if completed {
        stats.completed += 1;
    } else {
        stats.dropped += 1;
    }

    // An acknowledged write on the same checkout, right after the drop.
    let z = row(grp + 1, 9);
    match tokio::time::timeout(Duration::from_secs(10), ins(&mut conn, z, grp + 1)).await {
        Err(_) => return Err("the write after the drop hangs".into()),
        Ok(Ok(1)) => ledger.record(grp + 1, Fate::Acked, vec![z]),
        // The cancelled call took the connection with it (SQLite's blocking pool): the
        // checkout says so and is discarded. Nothing was written.
        Ok(Err(e)) if e.kind() == ErrorKind::ConnectionLost && kind == Kind::Sqlite => {
            stats.same_checkout_lost += 1;
            ledger.record(grp + 1, Fate::Unacked, vec![z]);
        }
        Ok(other) => return Err(fail("write after the drop", other)),
    }
    drop(conn);

    // The next checkout (the same connection, or its replacement) is idle.
    let mut next = tokio::time::timeout(Duration::from_secs(10), pool.get_connection())
        .await
        .map_err(|_| "the next checkout hangs".to_string())?
        .map_err(|e| fail("next checkout", e))?;
    if let Err(e) = check_idle(&mut next, kind).await {
        stats.dirty.push(format!(
            "{} budget={budget} at={}: {e}",
            target.name(),
            at.name()
        ));
    }
    let after = conn_identity(&mut next, kind).await;
    if before.is_some() && before != after {
        stats.evicted += 1;
    }
    Ok(completed)
}

/// A raw call's outcome with the driver's error as the crate's (`Other`).
fn raw_polled<T, E: std::fmt::Display>(
    p: Polled<Result<T, E>>,
) -> Polled<Result<(), SqlMiddlewareDbError>> {
    match p {
        Polled::Done(r, n) => Polled::Done(
            r.map(drop)
                .map_err(|e| SqlMiddlewareDbError::new(ErrorKind::Other, e.to_string())),
            n,
        ),
        Polled::Dropped(n) => Polled::Dropped(n),
    }
}

async fn ids_between(pool: &ConfigAndPool, lo: i64, hi: i64) -> BTreeSet<i64> {
    let mut c = pool.get_connection().await.expect("verifier checkout");
    let ids: Vec<(i64,)> = c
        .query("SELECT id FROM cx WHERE id >= $1 AND id < $2")
        .params(&[lo.into(), hi.into()])
        .all()
        .await
        .expect("verifier read");
    ids.into_iter().map(|r| r.0).collect()
}

async fn all_ids(pool: &ConfigAndPool) -> BTreeSet<i64> {
    let mut c = pool.get_connection().await.expect("verifier checkout");
    let ids: Vec<(i64,)> = c
        .query("SELECT id FROM cx")
        .all()
        .await
        .expect("verifier read");
    ids.into_iter().map(|r| r.0).collect()
}

async fn setup(db: &TestDb) {
    let int = db.ty(Logical::Int);
    let mut c = db.conn().await;
    c.execute_batch(&format!(
        "CREATE TABLE cx (id {int} PRIMARY KEY, grp {int} NOT NULL);
         CREATE TABLE lockrow (id {int} PRIMARY KEY, v {int} NOT NULL);
         INSERT INTO lockrow (id, v) VALUES (1, 0);"
    ))
    .await
    .expect("setup");
}

fn report(label: &str, stats: &Stats, audit: &Audit) {
    println!(
        "cancel {label} scenarios={} dropped={} completed={} max_polls_to_complete={} \
         acked_rows={} found={} lost={} phantom={} torn={} indeterminate={} \
         (committed={} absent={}) same_checkout_lost={} evicted={} dirty_checkouts={}",
        stats.scenarios,
        stats.dropped,
        stats.completed,
        stats.max_polls,
        audit.acked_rows,
        audit.acked_found,
        audit.lost.len(),
        audit.phantom.len(),
        audit.torn.len(),
        audit.indeterminate,
        audit.indeterminate_committed,
        audit.indeterminate_absent,
        stats.same_checkout_lost,
        stats.evicted,
        stats.dirty.len(),
    );
}

async fn t_cancel_everywhere(db: &TestDb, builder: PoolBuilder, label: &str) {
    let (_guard, seed) = SeedGuard::new(&format!("cancel_everywhere/{label}"));
    let mut rng = Rng::new(seed);
    let random_points = knob_usize("RELIABILITY_CANCEL_RANDOM", 6);
    setup(db).await;
    let pool = builder
        .max_size(1)
        .wait_timeout(Duration::from_secs(10))
        .build()
        .await
        .expect("pool of one");
    let holder_pool = db.builder().max_size(1).build().await.expect("holder pool");
    let mut ledger = Ledger::default();
    let mut stats = Stats::default();
    let mut grp = 0_i64;
    let mut errors = Vec::new();
    for target in TARGETS {
        // The fixed sweep (0, 1, 2 … polls up to completion) in both drop modes, then drop
        // points drawn from the seed: a random mode and a random budget below the sweep's cap.
        let sweeps = [DropAt::Immediately, DropAt::Settled].map(|at| (at, None));
        let random: Vec<(DropAt, Option<usize>)> = (0..random_points)
            .map(|_| {
                let at = if rng.chance(0.5) {
                    DropAt::Immediately
                } else {
                    DropAt::Settled
                };
                (at, Some(rng.below(12) as usize))
            })
            .collect();
        for (at, fixed) in sweeps.into_iter().chain(random) {
            let first = usize::from(at == DropAt::Settled);
            for step in first..=MAX_POLLS {
                // A lock wait may be polled many times (Turso retries its busy handler by
                // yielding): after a few budgets, the last run goes to completion.
                let cap = if target == Target::LockWait {
                    4
                } else {
                    MAX_POLLS
                };
                let budget = match fixed {
                    // A random point runs once at its budget (at least the mode's first).
                    Some(b) => b.max(first).min(cap.saturating_sub(1)),
                    None if step >= cap => usize::MAX,
                    None => step,
                };
                grp += 2;
                let mut local = Ledger::default();
                let outcome = scenario(
                    db.kind,
                    &pool,
                    &holder_pool,
                    target,
                    budget,
                    at,
                    grp,
                    &mut local,
                    &mut stats,
                )
                .await;
                // Right away, through another connection: acknowledged means visible now.
                let now = local.audit(&ids_between(&db.db, row(grp, 0), row(grp + 2, 0)).await);
                if !now.ok() {
                    errors.push(format!(
                        "{} budget={budget} at={}: right after the scenario: lost {:?} phantom {:?} torn groups {:?}",
                        target.name(),
                        at.name(),
                        now.lost,
                        now.phantom,
                        now.torn
                    ));
                }
                ledger.absorb(local);
                match outcome {
                    Ok(true) => break,
                    Ok(false) if fixed.is_some() => break,
                    Ok(false) => {}
                    Err(e) => {
                        errors.push(format!(
                            "{} budget={budget} at={}: {e}",
                            target.name(),
                            at.name()
                        ));
                        break;
                    }
                }
                assert!(budget != usize::MAX, "{} never completed", target.name());
            }
        }
    }
    let audit = ledger.audit(&all_ids(&db.db).await);
    report(label, &stats, &audit);
    println!(
        "cancel_points {label} seed={seed} targets={} random_points_per_target={random_points}",
        TARGETS.len()
    );
    let status = pool.status();
    let mut problems = Vec::new();
    if status.size > 1 {
        problems.push(format!("pool grew past max: {status:?}"));
    }
    if !errors.is_empty() {
        problems.push(format!("scenario errors:\n  {}", errors.join("\n  ")));
    }
    if !stats.dirty.is_empty() {
        problems.push(format!(
            "dirty checkouts after a cancelled future:\n  {}",
            stats.dirty.join("\n  ")
        ));
    }
    if !audit.ok() {
        problems.push(format!(
            "lost acknowledged rows {:?}, phantom rows {:?}, torn groups {:?}, unknown rows {:?}",
            audit.lost, audit.phantom, audit.torn, audit.unknown_rows
        ));
    }
    if stats.dropped == 0 || stats.completed == 0 {
        problems.push("no scenario dropped or none completed".into());
    }
    assert!(problems.is_empty(), "[{label}] {}", problems.join("\n"));
    assert_eq!(audit.acked_found, audit.acked_rows);
}

/// [`t_dropped_statement_then_commit`]: its name, and what a failed audit means.
const DROPPED_STATEMENT: (&str, &str) = (
    "dropped_statement_then_commit",
    "a statement whose future was dropped became visible through the later commit",
);

/// [`t_raw_dropped_in_tx_then_commit`]: its name, and what a failed audit means.
const RAW_DROPPED: (&str, &str) = (
    "raw_dropped_in_tx_then_commit",
    "a commit said Ok without the transaction's acknowledged write",
);

/// What a drop-then-commit test counted; its end audits every row against the ledger.
#[derive(Default)]
struct Tally {
    /// The test's name, first in its figures line.
    name: &'static str,
    /// What a failed audit means.
    broken: &'static str,
    /// Reports the test's seed if it fails.
    _guard: Option<SeedGuard>,
    group: i64,
    ledger: Ledger,
    scenarios: usize,
    commit_ok: usize,
    commit_err: usize,
    errors: Vec<String>,
}

impl Tally {
    /// Creates the tables, and a pool of one connection, for the test `what` says on the
    /// backend `label`, whose groups of rows start after `first_group`.
    async fn start(
        db: &TestDb,
        builder: PoolBuilder,
        what: (&'static str, &'static str),
        label: &str,
        first_group: i64,
    ) -> (ConfigAndPool, Self) {
        let (name, broken) = what;
        let (guard, _) = SeedGuard::new(&format!("{name}/{label}"));
        setup(db).await;
        let pool = builder.max_size(1).build().await.expect("pool of one");
        let t = Self {
            name,
            broken,
            _guard: Some(guard),
            group: first_group,
            ..Self::default()
        };
        (pool, t)
    }

    /// The next scenario's group (two apart: a scenario may record `group + 1` too).
    fn next_group(&mut self) -> i64 {
        self.scenarios += 1;
        self.group += 2;
        self.group
    }

    /// Returns `conn`; the next checkout of `pool` must be idle (no transaction open or
    /// aborted). Returns `done`: whether the scenarios of this drop point are over.
    async fn next_is_idle(
        &mut self,
        conn: Conn,
        pool: &ConfigAndPool,
        kind: Kind,
        (budget, at): (usize, DropAt),
        done: bool,
    ) -> bool {
        drop(conn);
        let mut next = pool.get_connection().await.expect("next checkout");
        if let Err(e) = check_idle(&mut next, kind).await {
            self.errors
                .push(format!("budget={budget} at={}: dirty: {e}", at.name()));
        }
        done
    }

    /// Prints the test's name, `label` and the counts, then asserts that no scenario went wrong
    /// and that the rows match the ledger.
    async fn finish(self, label: &str, db: &TestDb) {
        let (name, broken) = (self.name, self.broken);
        let audit = self.ledger.audit(&all_ids(&db.db).await);
        println!(
            "{name} {label} scenarios={} commit_ok={} commit_err={} lost={} phantom={} \
             dirty_checkouts={}",
            self.scenarios,
            self.commit_ok,
            self.commit_err,
            audit.lost.len(),
            audit.phantom.len(),
            self.errors.len()
        );
        assert!(
            self.errors.is_empty(),
            "[{label}] {}",
            self.errors.join("\n")
        );
        assert!(
            audit.ok(),
            "[{label}] {broken} (lost {:?}, phantom {:?})",
            audit.lost,
            audit.phantom
        );
    }
}

/// A statement future dropped inside a transaction, then `commit()`: the dropped statement was
/// never acknowledged, so it must not become visible through this commit.
async fn t_dropped_statement_then_commit(db: &TestDb, builder: PoolBuilder, label: &str) {
    let (pool, mut t) = Tally::start(db, builder, DROPPED_STATEMENT, label, 0).await;
    for at in [DropAt::Immediately, DropAt::Settled] {
        for budget in usize::from(at == DropAt::Settled)..=MAX_POLLS {
            let grp = t.next_group();
            let (a, b) = (row(grp, 1), row(grp, 2));
            let mut conn = pool.get_connection().await.expect("checkout");
            let mut tx = begin_with_row(&mut conn, a, grp)
                .await
                .expect("begin, insert");
            let polled = poll_at_most(
                tx.query(INS).params(&[b.into(), grp.into()]).dml(),
                budget,
                at,
            )
            .await;
            let done = matches!(polled, Polled::Done(..));
            match polled {
                Polled::Done(Ok(1), _) => {
                    tx.commit().await.expect("commit");
                    t.ledger.record(grp, Fate::Acked, vec![a, b]);
                }
                Polled::Done(other, _) => {
                    t.errors
                        .push(format!("budget={budget}: insert gave {other:?}"));
                    break;
                }
                Polled::Dropped(_) => match tx.commit().await {
                    Ok(()) => {
                        t.commit_ok += 1;
                        t.ledger.record(grp, Fate::Acked, vec![a]);
                        t.ledger.record(grp + 1, Fate::Unacked, vec![b]);
                    }
                    Err(_) => {
                        t.commit_err += 1;
                        t.ledger.record(grp, Fate::Unacked, vec![a, b]);
                    }
                },
            }
            if t.next_is_idle(conn, &pool, db.kind, (budget, at), done)
                .await
            {
                break;
            }
        }
    }
    t.finish(label, db).await;
}

/// Raw access inside a transaction, its call dropped after 0, 1, 2 … polls, then the
/// transaction committed: a commit that says Ok has committed the transaction's acknowledged
/// write. The raw call may have left its connection unusable (mysql_async gives a connection up
/// when a command is dropped part-way); the commit must then fail, never run on another
/// connection that holds none of the transaction.
async fn t_raw_dropped_in_tx_then_commit(db: &TestDb, builder: PoolBuilder, label: &str) {
    let (pool, mut t) = Tally::start(db, builder, RAW_DROPPED, label, 1_000_000).await;
    for at in [DropAt::Immediately, DropAt::Settled] {
        for budget in usize::from(at == DropAt::Settled)..=MAX_POLLS {
            let grp = t.next_group();
            let (a, b, c) = (row(grp, 1), row(grp, 2), row(grp, 3));
            let mut conn = pool.get_connection().await.expect("checkout");
            let mut tx = begin_with_row(&mut conn, a, grp)
                .await
                .expect("begin, insert");
            let polled = raw_insert_on!(&mut tx, db.kind, b, c, grp + 1, budget, at);
            let done = matches!(polled, Polled::Done(..));
            if let Polled::Done(Err(e), _) = &polled {
                t.errors
                    .push(format!("budget={budget}: the raw insert failed: {e}"));
                break;
            }
            // Every other time, one more statement of the transaction after the drop: it must
            // run in the transaction or fail, never on its own outside it.
            let mut acked = vec![a];
            if budget % 2 == 1 {
                let d = row(grp, 4);
                match tx.query(INS).params(&[d.into(), grp.into()]).dml().await {
                    Ok(_) => acked.push(d),
                    Err(_) => t.ledger.record(grp + 100_000, Fate::Unacked, vec![d]),
                }
            }
            match tx.commit().await {
                Ok(()) => {
                    t.commit_ok += 1;
                    t.ledger.record(grp, Fate::Acked, acked);
                    let raw = if done {
                        Fate::Acked
                    } else {
                        Fate::Indeterminate
                    };
                    t.ledger.record(grp + 1, raw, vec![b, c]);
                }
                Err(e) if done => {
                    t.errors
                        .push(format!("budget={budget}: commit after a raw insert: {e}"));
                    break;
                }
                Err(e) => {
                    t.commit_err += 1;
                    let fate = if e.kind() == ErrorKind::OutcomeUnknown {
                        Fate::Indeterminate
                    } else {
                        Fate::Unacked
                    };
                    t.ledger.record(grp, fate, acked);
                    t.ledger.record(grp + 1, Fate::Indeterminate, vec![b, c]);
                }
            }
            if t.next_is_idle(conn, &pool, db.kind, (budget, at), done)
                .await
            {
                break;
            }
        }
    }
    t.finish(label, db).await;
}

backend_tests! {
    let _group = common::groups::enter("cancel");
    async fn cancel_at_every_await_point(db) {
        let b = db.builder();
        let label = db.kind.name();
        t_cancel_everywhere(&db, b, label).await
    }
    async fn dropped_statement_then_commit(db) {
        let b = db.builder();
        let label = db.kind.name();
        t_dropped_statement_then_commit(&db, b, label).await
    }
    async fn raw_dropped_in_tx_then_commit(db) {
        let b = db.builder();
        let label = db.kind.name();
        t_raw_dropped_in_tx_then_commit(&db, b, label).await
    }
}

/// The same on SQLite under the two other execution models: `Offload` runs every call on the
/// blocking pool (the connection travels with it), `Inline` never leaves the task.
#[cfg(feature = "sqlite")]
mod sqlite_models {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cancel_at_every_await_point_offload() {
        let _group = common::groups::enter("cancel");
        let db = common::engines::sqlite::test_db().await;
        let b = db.builder().sqlite_exec_model(SqliteExecModel::Offload);
        t_cancel_everywhere(&db, b, "sqlite-offload").await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cancel_at_every_await_point_inline() {
        let _group = common::groups::enter("cancel");
        let db = common::engines::sqlite::test_db().await;
        let b = db.builder().sqlite_exec_model(SqliteExecModel::Inline);
        t_cancel_everywhere(&db, b, "sqlite-inline").await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropped_statement_then_commit_offload() {
        let _group = common::groups::enter("cancel");
        let db = common::engines::sqlite::test_db().await;
        let b = db.builder().sqlite_exec_model(SqliteExecModel::Offload);
        t_dropped_statement_then_commit(&db, b, "sqlite-offload").await
    }
}
