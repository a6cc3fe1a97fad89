//! Reliability: streams dropped at random points.
//!
//! Each iteration, on a pool of one connection, streams `SELECT id FROM sx WHERE id <= BASE
//! ORDER BY id` (through the query builder or a prepared statement), checks the rows it reads
//! (1, 2, 3, … in order), and drops the stream at a point drawn from the printed seed: before
//! its first poll, after a number of rows around and across batch boundaries, or in the middle
//! of a fetch (its `next` future polled a few times with a counting waker, then dropped). It
//! does so in autocommit mode or inside a transaction that wrote a row before the stream and
//! writes one after it, then commits, rolls back, or is dropped.
//!
//! After every iteration:
//! - the same checkout keeps working: the write after the stream succeeds;
//! - the next checkout of the only connection is idle (not inside an open or aborted
//!   transaction);
//! - at the end, every acknowledged write is there and no rolled-back or abandoned one is.

use std::collections::BTreeSet;

use futures::{StreamExt, TryStreamExt};
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common;
use crate::common::backends::{Kind, Logical, TestDb};
use crate::common::reliability::{
    DropAt, Fate, Ledger, Polled, Rng, SeedGuard, check_idle, knob_usize, poll_at_most,
};

/// Rows the streams read from.
const BASE: i64 = 1500;
const SELECT: &str = "SELECT id FROM sx WHERE id <= $1 ORDER BY id";
const INS: &str = "INSERT INTO sx (id, grp) VALUES ($1, $2)";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Auto,
    Commit,
    Rollback,
    /// The transaction is dropped without commit.
    Abandon,
}

#[derive(Debug, Default)]
struct Figures {
    iterations: usize,
    rows_read: usize,
    mid_fetch: usize,
    never_polled: usize,
    read_to_end: usize,
    in_tx: usize,
    /// Transactions aborted by a stream dropped while its statement was on its way (server
    /// engines).
    aborted_at_open: usize,
}

/// Reads up to `take` rows from `s`, checking them, then maybe interrupts one fetch part-way;
/// returns the rows read, and whether the interrupted fetch was the stream's first.
async fn read_some<'c>(
    mut s: RowStream<'c, (i64,)>,
    take: usize,
    mid_fetch: Option<(usize, DropAt)>,
    label: &str,
) -> (usize, bool) {
    // Whether the stream was dropped in its first fetch, while its statement may still have
    // been on its way to the server.
    let mut cut_at_open = false;
    let mut read = 0usize;
    while read < take {
        match s.try_next().await {
            Ok(Some((id,))) => {
                read += 1;
                assert_eq!(id, read as i64, "{label}: row {read} out of order");
            }
            Ok(None) => break,
            Err(e) => panic!("{label}: the stream failed after {read} rows: {e:?}"),
        }
    }
    if let Some((budget, at)) = mid_fetch {
        match poll_at_most(s.next(), budget, at).await {
            Polled::Done(Some(Ok((id,))), _) => {
                read += 1;
                assert_eq!(id, read as i64, "{label}: row {read} out of order");
            }
            Polled::Done(Some(Err(e)), _) => panic!("{label}: the stream failed: {e:?}"),
            Polled::Done(None, _) => {}
            Polled::Dropped(_) => cut_at_open = read == 0,
        }
    }
    drop(s);
    (read, cut_at_open)
}

async fn t_streams_dropped_at_random(db: &TestDb, label: &str) {
    let (_seed_guard, seed) = SeedGuard::new(&format!("streams::{label}"));
    let mut rng = Rng::new(seed);
    let iterations = knob_usize("RELIABILITY_STREAM_ITERATIONS", 60);
    let pool = db.builder().max_size(1).build().await.unwrap();
    let mut ledger = Ledger::default();
    {
        let mut conn = pool.get_connection().await.unwrap();
        let cols = [("grp", Logical::Int)];
        let defs: Vec<String> = cols
            .iter()
            .map(|(n, l)| format!("{n} {}", db.ty(*l)))
            .collect();
        conn.execute_batch(&format!(
            "CREATE TABLE sx (id {} PRIMARY KEY, {})",
            db.ty(Logical::Int),
            defs.join(", ")
        ))
        .await
        .unwrap();
        let mut tx = conn.begin().await.unwrap();
        {
            let mut ins = tx.prepare(INS).await.unwrap();
            for id in 1..=BASE {
                ins.dml(&[RowValues::Int(id), RowValues::Int(0)])
                    .await
                    .unwrap();
            }
        }
        tx.commit().await.unwrap();
        ledger.record(0, Fate::Acked, (1..=BASE).collect());
    }

    let mut f = Figures::default();
    for i in 0..iterations {
        let group = i as i64 + 1;
        let first = 100_000 + group * 10;
        let mode = match rng.below(4) {
            0 => Mode::Auto,
            1 => Mode::Commit,
            2 => Mode::Rollback,
            _ => Mode::Abandon,
        };
        let take = match rng.below(8) {
            0 => 0,
            1 => 1,
            2 => 255,
            3 => 256,
            4 => 257,
            5 => BASE as usize + 10,
            _ => rng.below(BASE as u64) as usize,
        };
        let mid_fetch = rng.chance(0.4).then(|| {
            let at = if rng.chance(0.5) {
                DropAt::Immediately
            } else {
                DropAt::Settled
            };
            (1 + rng.below(3) as usize, at)
        });
        let prepared = rng.chance(0.5);
        let what = format!(
            "{label} iteration {i} ({mode:?}, take {take}, mid-fetch {mid_fetch:?}, prepared {prepared})"
        );
        f.iterations += 1;
        if take == 0 && mid_fetch.is_none() {
            f.never_polled += 1;
        }
        if mid_fetch.is_some() {
            f.mid_fetch += 1;
        }
        if take > BASE as usize {
            f.read_to_end += 1;
        }

        let mut conn = pool.get_connection().await.unwrap();
        let limit = [RowValues::Int(BASE)];
        if mode == Mode::Auto {
            let (read, _) = if prepared {
                let mut stmt = conn.prepare(SELECT).await.unwrap();
                read_some(stmt.stream::<(i64,)>(&limit), take, mid_fetch, &what).await
            } else {
                let s = conn.query(SELECT).params(&limit).stream::<(i64,)>();
                read_some(s, take, mid_fetch, &what).await
            };
            f.rows_read += read;
            conn.query(INS)
                .params(&[RowValues::Int(first), RowValues::Int(group)])
                .dml()
                .await
                .unwrap_or_else(|e| panic!("{what}: the write after the stream failed: {e:?}"));
            ledger.record(group, Fate::Acked, vec![first]);
        } else {
            f.in_tx += 1;
            let mut tx = conn.begin().await.unwrap();
            tx.query(INS)
                .params(&[RowValues::Int(first), RowValues::Int(group)])
                .dml()
                .await
                .unwrap();
            let (read, cut_at_open) = if prepared {
                let mut stmt = tx.prepare(SELECT).await.unwrap();
                read_some(stmt.stream::<(i64,)>(&limit), take, mid_fetch, &what).await
            } else {
                let s = tx.query(SELECT).params(&limit).stream::<(i64,)>();
                read_some(s, take, mid_fetch, &what).await
            };
            f.rows_read += read;
            let write = tx
                .query(INS)
                .params(&[RowValues::Int(first + 1), RowValues::Int(group)])
                .dml()
                .await;
            match write {
                Ok(_) => {}
                // On the server engines a stream dropped while its statement was still being
                // prepared or sent is a cancelled statement (docs/Backends.md, "Streams"),
                // which aborts the transaction as any cancelled statement does; dropped after
                // its first rows, it does not.
                Err(e)
                    if matches!(db.kind, Kind::Mysql | Kind::Postgres)
                        && cut_at_open
                        && e.kind() == ErrorKind::TransactionAborted =>
                {
                    f.aborted_at_open += 1;
                    tx.rollback().await.unwrap();
                    ledger.record(group, Fate::Unacked, vec![first, first + 1]);
                    drop(conn);
                    let mut next = pool.get_connection().await.unwrap();
                    if let Err(e) = check_idle(&mut next, db.kind).await {
                        panic!("{what}: the next checkout is not idle: {e}");
                    }
                    continue;
                }
                Err(e) => panic!("{what}: the transaction's write after the stream failed: {e:?}"),
            }
            let rows = vec![first, first + 1];
            match mode {
                Mode::Commit => {
                    tx.commit()
                        .await
                        .unwrap_or_else(|e| panic!("{what}: commit failed: {e:?}"));
                    ledger.record(group, Fate::Acked, rows);
                }
                Mode::Rollback => {
                    tx.rollback().await.unwrap();
                    ledger.record(group, Fate::Unacked, rows);
                }
                Mode::Auto | Mode::Abandon => {
                    drop(tx);
                    ledger.record(group, Fate::Unacked, rows);
                }
            }
        }
        drop(conn);
        let mut next = pool.get_connection().await.unwrap();
        if let Err(e) = check_idle(&mut next, db.kind).await {
            panic!("{what}: the next checkout is not idle: {e}");
        }
    }

    let mut conn = pool.get_connection().await.unwrap();
    let found: BTreeSet<i64> = conn
        .query("SELECT id FROM sx")
        .stream::<(i64,)>()
        .map_ok(|(id,)| id)
        .try_collect()
        .await
        .unwrap();
    let audit = ledger.audit(&found);
    println!(
        "streams backend={label} seed={seed} iterations={} in_tx={} aborted_at_open={} mid_fetch={} never_polled={} read_to_end={} rows_read={} acked_rows={} acked_found={} lost={} phantom={}",
        f.iterations,
        f.in_tx,
        f.aborted_at_open,
        f.mid_fetch,
        f.never_polled,
        f.read_to_end,
        f.rows_read,
        audit.acked_rows,
        audit.acked_found,
        audit.lost.len(),
        audit.phantom.len()
    );
    assert!(audit.ok(), "{label}: {audit:?}");
}

backend_tests! {
    let _group = common::groups::enter("streams");
    async fn streams_dropped_at_random(db) {
        let label = db.kind.name();
        t_streams_dropped_at_random(&db, label).await
    }
}
