//! A ledger of transfers under contention, through the retrying transaction
//! (`pool.transaction(&policy, …)`), for any pool: [`run`] sets up `accounts` and `transfers`,
//! runs concurrent workers doing random transfers, and audits the result ([`Report`]).
//!
//! Each transfer reads both balances, writes the new values computed from what it read (not
//! `balance = balance - x`: a retry that reused a value read in a failed attempt, or an
//! isolation that let two transfers read the same balance, loses money), and inserts its
//! unique id into `transfers` in the same transaction. The audit checks that the total is
//! conserved, that every balance is its start plus what the committed transfers say, that
//! every transfer acknowledged `Ok` is present exactly once and that none that failed is
//! (one of unknown outcome may be either; they are counted).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use sql_middleware::prelude::*;
use sql_middleware::{ErrorKind, RetryPolicy};

use super::reliability::{Rng, quantile};

/// What to run.
#[derive(Debug, Clone)]
pub struct Load {
    pub accounts: i64,
    pub workers: usize,
    pub transfers_per_worker: usize,
    pub policy: RetryPolicy,
    /// A statement run first in every transaction (Postgres: its isolation level).
    pub prelude: Option<&'static str>,
    /// Appended to the balance reads: `" FOR UPDATE"` where a plain read takes no lock and
    /// the engine would not otherwise detect a lost update (MariaDB at `REPEATABLE READ`).
    pub read_suffix: &'static str,
    pub seed: u64,
}

/// What happened, and what the audit found.
#[derive(Debug, Clone)]
pub struct Report {
    pub committed: usize,
    /// Calls that failed (out of attempts or time, or another error), by kind.
    pub failed: Vec<ErrorKind>,
    /// Calls whose commit's outcome is unknown, and how many of them are in the table.
    pub unknown: usize,
    pub unknown_present: usize,
    /// Attempts of every call, from the pool's statistics.
    pub attempts: u64,
    pub retried_calls: u64,
    pub p50: Duration,
    pub p99: Duration,
    pub elapsed: Duration,
    /// Audit: the total of the balances against the start.
    pub total: i64,
    pub expected_total: i64,
    /// Acknowledged transfers missing from the table, failed ones present in it, accounts
    /// whose balance disagrees with the committed transfers.
    pub lost: usize,
    pub phantom: usize,
    pub inconsistent_accounts: usize,
}

impl Report {
    /// Attempts per committed transfer.
    pub fn attempts_per_commit(&self) -> f64 {
        self.attempts as f64 / self.committed.max(1) as f64
    }
}

const START: i64 = 1_000;

/// Runs `load` on `db` (an empty database) and audits it.
pub async fn run(db: &ConfigAndPool, load: &Load) -> Report {
    setup(db, load).await;
    let done = drive(std::slice::from_ref(db), load).await;
    audit(db, load, &done).await
}

/// Runs `load` with worker `w` on `pools[w % pools.len()]` (pools on different nodes of one
/// cluster, so transfers conflict between nodes), then audits the result once through each of
/// `audits` (one per node; reads there must see every commit, e.g. causal reads).
pub async fn run_across(
    pools: &[ConfigAndPool],
    audits: &[ConfigAndPool],
    load: &Load,
) -> Vec<Report> {
    setup(&pools[0], load).await;
    let done = drive(pools, load).await;
    let mut reports = Vec::new();
    for a in audits {
        reports.push(audit(a, load, &done).await);
    }
    reports
}

/// Creates and fills `accounts` and an empty `transfers`.
async fn setup(db: &ConfigAndPool, load: &Load) {
    let mut c = db.get_connection().await.expect("checkout");
    c.execute_batch(
        "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL);
         CREATE TABLE transfers (id BIGINT PRIMARY KEY, src BIGINT NOT NULL, dst BIGINT NOT NULL, amount BIGINT NOT NULL)",
    )
    .await
    .expect("ledger tables");
    let rows: Vec<String> = (1..=load.accounts)
        .map(|i| format!("({i}, {START})"))
        .collect();
    c.execute_batch(&format!(
        "INSERT INTO accounts (id, balance) VALUES {}",
        rows.join(", ")
    ))
    .await
    .expect("accounts");
}

/// What the workers did: each call's outcome, and the attempts counted by the pools.
struct Done {
    results: Vec<Outcome>,
    elapsed: Duration,
    attempts: u64,
    retried_calls: u64,
}

async fn drive(pools: &[ConfigAndPool], load: &Load) -> Done {
    let retry = |pools: &[ConfigAndPool]| {
        pools.iter().fold((0, 0), |(a, r), p| {
            let s = p.stats().retry;
            (a + s.attempts, r + s.retried)
        })
    };
    let before = retry(pools);
    let mut rng = Rng::new(load.seed);
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..load.workers {
        let (db, load, mut rng) = (pools[w % pools.len()].clone(), load.clone(), rng.fork());
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            for i in 0..load.transfers_per_worker {
                let id = (w * load.transfers_per_worker + i + 1) as i64;
                let src = 1 + rng.below(load.accounts as u64) as i64;
                let dst = 1 + (src + rng.below(load.accounts as u64 - 1) as i64) % load.accounts;
                let amount = 1 + rng.below(50) as i64;
                let (prelude, suffix) = (load.prelude, load.read_suffix);
                let started = Instant::now();
                let r = db
                    .transaction(&load.policy, move |tx| {
                        Box::pin(transfer(tx, prelude, suffix, id, src, dst, amount))
                    })
                    .await;
                out.push((id, started.elapsed(), r.map_err(|e| e.error().kind())));
            }
            out
        }));
    }
    let mut results = Vec::new();
    for t in tasks {
        results.extend(t.await.expect("worker"));
    }
    let elapsed = t0.elapsed();
    let after = retry(pools);
    Done {
        results,
        elapsed,
        attempts: after.0 - before.0,
        retried_calls: after.1 - before.1,
    }
}

/// One transfer: read both balances, write the values computed from them, record its id.
async fn transfer(
    tx: &mut Tx<'_>,
    prelude: Option<&'static str>,
    read_suffix: &'static str,
    id: i64,
    src: i64,
    dst: i64,
    amount: i64,
) -> Result<(), SqlMiddlewareDbError> {
    if let Some(p) = prelude {
        tx.execute_batch(p).await?;
    }
    // Both accounts are read and written lower id first, the order every transfer takes its
    // row locks in, as an application does: the transfers then conflict (and are retried)
    // without ever deadlocking, whose detection would add the engine's deadlock timeout
    // (Postgres: 1 s per cycle) to the latencies. Deadlocks have their own conformance test.
    let (lo, hi) = (src.min(dst), src.max(dst));
    let read = format!("SELECT balance FROM accounts WHERE id = $1{read_suffix}");
    let (lo_balance,): (i64,) = tx.query(&read).params(&[lo.into()]).one().await?;
    let (hi_balance,): (i64,) = tx.query(&read).params(&[hi.into()]).one().await?;
    let delta = if lo == src { -amount } else { amount };
    let mut write = tx
        .prepare("UPDATE accounts SET balance = $1 WHERE id = $2")
        .await?;
    write.dml(&[(lo_balance + delta).into(), lo.into()]).await?;
    write.dml(&[(hi_balance - delta).into(), hi.into()]).await?;
    drop(write);
    tx.query("INSERT INTO transfers (id, src, dst, amount) VALUES ($1, $2, $3, $4)")
        .params(&[id.into(), src.into(), dst.into(), amount.into()])
        .dml()
        .await?;
    Ok(())
}

type Outcome = (i64, Duration, Result<(), ErrorKind>);

async fn audit(db: &ConfigAndPool, load: &Load, done: &Done) -> Report {
    let Done {
        results,
        elapsed,
        attempts,
        retried_calls,
    } = done;
    let (elapsed, attempts, retried_calls) = (*elapsed, *attempts, *retried_calls);
    let mut c = db.get_connection().await.expect("checkout");
    let balances: Vec<(i64, i64)> = c
        .query("SELECT id, balance FROM accounts ORDER BY id")
        .all()
        .await
        .expect("balances");
    let applied: Vec<(i64, i64, i64, i64)> = c
        .query("SELECT id, src, dst, amount FROM transfers")
        .all()
        .await
        .expect("transfers");
    let present: BTreeSet<i64> = applied.iter().map(|t| t.0).collect();
    let mut expected = vec![START; load.accounts as usize + 1];
    for (_, src, dst, amount) in &applied {
        expected[*src as usize] -= amount;
        expected[*dst as usize] += amount;
    }
    let inconsistent_accounts = balances
        .iter()
        .filter(|(id, b)| expected[*id as usize] != *b)
        .count();
    let latencies: Vec<Duration> = results.iter().map(|r| r.1).collect();
    let mut report = Report {
        committed: 0,
        failed: Vec::new(),
        unknown: 0,
        unknown_present: 0,
        attempts,
        retried_calls,
        p50: quantile(&latencies, 0.5),
        p99: quantile(&latencies, 0.99),
        elapsed,
        total: balances.iter().map(|b| b.1).sum(),
        expected_total: START * load.accounts,
        lost: 0,
        phantom: 0,
        inconsistent_accounts,
    };
    for (id, _, r) in results {
        let here = present.contains(id);
        match r {
            Ok(()) => {
                report.committed += 1;
                report.lost += usize::from(!here);
            }
            Err(ErrorKind::OutcomeUnknown) => {
                report.unknown += 1;
                report.unknown_present += usize::from(here);
            }
            Err(k) => {
                report.failed.push(*k);
                report.phantom += usize::from(here);
            }
        }
    }
    report
}

/// The invariants every run must keep, whatever the engine.
pub fn assert_invariants(engine: &str, r: &Report) {
    assert_eq!(
        r.total, r.expected_total,
        "[{engine}] the total is conserved: {r:?}"
    );
    assert_eq!(
        r.inconsistent_accounts, 0,
        "[{engine}] every balance matches the committed transfers: {r:?}"
    );
    assert_eq!(
        r.lost, 0,
        "[{engine}] every Ok'd transfer is in the table: {r:?}"
    );
    assert_eq!(
        r.phantom, 0,
        "[{engine}] no failed transfer is in the table: {r:?}"
    );
    assert!(
        r.attempts >= (r.committed + r.failed.len() + r.unknown) as u64,
        "[{engine}] {r:?}"
    );
}
