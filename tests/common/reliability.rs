#![allow(dead_code)]
//! Shared support for the reliability suite (`tests/reliability/`): seeds, knobs, manual
//! polling with a counting waker, the "is this checkout idle?" check per backend, a heartbeat,
//! and row bookkeeping for "acknowledged rows are found, nothing else is".
//!
//! Every reliability test prints one line that starts with its name followed by `key=value`
//! figures, and asserts them. `reports/Reliability.md` lists the figures of the latest run.

use sql_middleware_bench::dataset::SplitMix64;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use sql_middleware::prelude::*;

use super::backends::Kind;

// ---- seeds and knobs ------------------------------------------------------------------------

/// The seed for `test`: `RELIABILITY_SEED` when set (decimal or 0x-hex), else a fixed value
/// derived from the test name, so every run is the same unless asked otherwise.
pub fn seed_for(test: &str) -> u64 {
    if let Ok(v) = std::env::var("RELIABILITY_SEED") {
        let v = v.trim();
        let parsed = match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => v.parse().ok(),
        };
        if let Some(s) = parsed {
            return s;
        }
        panic!("RELIABILITY_SEED={v:?} is not a number");
    }
    // FNV-1a of the name: stable across runs and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in test.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Prints the seed when the test panics (dropped during unwinding), so a failure can be replayed
/// with `RELIABILITY_SEED=<seed>`.
pub struct SeedGuard {
    test: String,
    seed: u64,
}

impl SeedGuard {
    /// The seed for `test` (see [`seed_for`]) and a guard that reports it on failure.
    pub fn new(test: &str) -> (SeedGuard, u64) {
        let seed = seed_for(test);
        (
            SeedGuard {
                test: test.to_owned(),
                seed,
            },
            seed,
        )
    }
}

impl Drop for SeedGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "[reliability] {} FAILED; replay with RELIABILITY_SEED={}",
                self.test, self.seed
            );
        }
    }
}

/// A number from the environment, or `default`.
pub fn knob_f64(name: &str, default: f64) -> f64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// A count from the environment, or `default`.
pub fn knob_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a count")),
        Err(_) => default,
    }
}

/// The dataset's seeded SplitMix64, with the helpers the scenarios pick with.
#[derive(Debug, Clone)]
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.below(n)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    /// A fresh generator derived from this one (for a spawned task).
    pub fn fork(&mut self) -> Rng {
        Rng::new(self.next_u64())
    }
}

// ---- serialising timing-sensitive tests -------------------------------------------------------

/// Tests that measure time take this lock, so that the other tests of their topic do not skew
/// their figures. (Tests of other topics never run beside them: see `common::groups`.)
pub async fn timing_lock() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

// ---- manual polling ---------------------------------------------------------------------------

struct CountingWaker {
    wakes: AtomicUsize,
    notify: tokio::sync::Notify,
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_one();
    }
}

/// When, after the last allowed poll, the future is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropAt {
    /// Right after the last allowed poll returned `Pending`.
    Immediately,
    /// After the future was woken once more and a few milliseconds passed: the engine has
    /// usually finished the work by then, but the future never learns it.
    Settled,
}

impl DropAt {
    pub fn name(self) -> &'static str {
        match self {
            DropAt::Immediately => "immediately",
            DropAt::Settled => "settled",
        }
    }
}

/// What happened to a future polled at most `budget` times.
#[derive(Debug)]
pub enum Polled<T> {
    /// It completed on poll number `.1` (1-based).
    Done(T, usize),
    /// It was dropped after `.0` polls, all `Pending`.
    Dropped(usize),
}

/// Polls `fut` at most `budget` times with a counting waker, waiting for a wake-up between
/// polls, and drops it (at the moment `at` says) if it has not completed by then.
pub async fn poll_at_most<F: Future>(fut: F, budget: usize, at: DropAt) -> Polled<F::Output> {
    let state = Arc::new(CountingWaker {
        wakes: AtomicUsize::new(0),
        notify: tokio::sync::Notify::new(),
    });
    let waker = Waker::from(Arc::clone(&state));
    let mut fut = pin!(fut);
    let mut polls = 0;
    while polls < budget {
        polls += 1;
        let polled = fut.as_mut().poll(&mut Context::from_waker(&waker));
        if let Poll::Ready(v) = polled {
            return Polled::Done(v, polls);
        }
        if polls == budget && at == DropAt::Immediately {
            break;
        }
        if tokio::time::timeout(Duration::from_secs(30), state.notify.notified())
            .await
            .is_err()
        {
            panic!("a pending future was not woken within 30 s (after {polls} polls)");
        }
    }
    if at == DropAt::Settled && budget > 0 {
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    Polled::Dropped(polls)
}

// ---- idle checks ------------------------------------------------------------------------------

/// `Ok` when `conn` is outside any transaction (neither open nor aborted) and answers a query:
/// `SELECT 1`, then the engine's own check (`Engine::outside_tx` in `common::engines`: SQLite
/// and Turso ask the connection whether it is in autocommit mode, Postgres compares the
/// virtual transaction ids of two statements, MySQL reads `@@in_transaction`).
pub async fn check_idle(conn: &mut MiddlewarePoolConnection, kind: Kind) -> Result<(), String> {
    match conn.query("SELECT 1").one::<(i64,)>().await {
        Ok((1,)) => {}
        other => return Err(format!("SELECT 1 on the checkout gave {other:?}")),
    }
    kind.outside_tx(conn).await
}

/// A stable identity of the physical connection behind `conn`, when the engine offers one
/// (`Engine::conn_identity`): Postgres' backend pid; MySQL's connection id; on SQLite an id
/// marked in the connection's own statement cache (which only that connection has). `None` on
/// Turso (no connection-local state the API can show).
pub async fn conn_identity(conn: &mut MiddlewarePoolConnection, kind: Kind) -> Option<i64> {
    kind.conn_identity(conn).await
}

// ---- heartbeat --------------------------------------------------------------------------------

/// A task that sleeps `period` in a loop and records how late each wake-up was.
pub fn heartbeat(
    stop: Arc<AtomicBool>,
    period: Duration,
) -> tokio::task::JoinHandle<Vec<Duration>> {
    tokio::spawn(async move {
        let mut lateness = Vec::with_capacity(4096);
        while !stop.load(Ordering::Relaxed) {
            // Lateness the runtime caused: the wait for a CPU that the machine imposed on the
            // thread is left out (it is not the code under test blocking the thread).
            let mark = crate::common::cpu::Mark::now();
            tokio::time::sleep(period).await;
            lateness.push(mark.held_since().saturating_sub(period));
        }
        lateness
    })
}

/// The `q` quantile (0..=1) of `v`.
pub fn quantile(v: &[Duration], q: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    let mut s = v.to_vec();
    s.sort();
    let idx = ((s.len() as f64 - 1.0) * q).round() as usize;
    s[idx.min(s.len() - 1)]
}

pub fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

// ---- row bookkeeping --------------------------------------------------------------------------

/// What the test knows about a group of rows written together (one transaction, one
/// autocommit statement or one script).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// The write was acknowledged: every row must be found.
    Acked,
    /// The write was never acknowledged and cannot have reached the engine's commit: no row
    /// may be found.
    Unacked,
    /// The outcome is unknown (a commit dropped or cut off after it reached the engine):
    /// all of the group's rows, or none.
    Indeterminate,
}

/// Groups of row ids and their fates.
#[derive(Debug, Default)]
pub struct Ledger {
    groups: BTreeMap<i64, (Fate, Vec<i64>)>,
}

/// The outcome of checking a [`Ledger`] against the rows found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Audit {
    pub acked_rows: usize,
    pub acked_found: usize,
    pub lost: Vec<i64>,
    pub phantom: Vec<i64>,
    pub indeterminate: usize,
    pub indeterminate_committed: usize,
    pub indeterminate_absent: usize,
    pub torn: Vec<i64>,
    pub unknown_rows: Vec<i64>,
}

impl Audit {
    pub fn ok(&self) -> bool {
        self.lost.is_empty()
            && self.phantom.is_empty()
            && self.torn.is_empty()
            && self.unknown_rows.is_empty()
    }
}

impl Ledger {
    pub fn record(&mut self, group: i64, fate: Fate, rows: Vec<i64>) {
        let prev = self.groups.insert(group, (fate, rows));
        assert!(prev.is_none(), "group {group} recorded twice");
    }

    /// Moves every group of `other` into this ledger.
    pub fn absorb(&mut self, other: Ledger) {
        for (group, (fate, rows)) in other.groups {
            self.record(group, fate, rows);
        }
    }

    /// The smallest and largest row id recorded, if any.
    pub fn id_range(&self) -> Option<(i64, i64)> {
        let mut it = self
            .groups
            .values()
            .flat_map(|(_, rows)| rows.iter().copied());
        let first = it.next()?;
        Some(it.fold((first, first), |(lo, hi), r| (lo.min(r), hi.max(r))))
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Checks the rows found (by id) against every group.
    pub fn audit(&self, found: &BTreeSet<i64>) -> Audit {
        let mut a = Audit::default();
        let mut known = BTreeSet::new();
        for (group, (fate, rows)) in &self.groups {
            let present = rows.iter().filter(|r| found.contains(r)).count();
            known.extend(rows.iter().copied());
            match fate {
                Fate::Acked => {
                    a.acked_rows += rows.len();
                    a.acked_found += present;
                    a.lost
                        .extend(rows.iter().filter(|r| !found.contains(r)).copied());
                }
                Fate::Unacked => a
                    .phantom
                    .extend(rows.iter().filter(|r| found.contains(r)).copied()),
                Fate::Indeterminate => {
                    a.indeterminate += 1;
                    if present == rows.len() {
                        a.indeterminate_committed += 1;
                    } else if present == 0 {
                        a.indeterminate_absent += 1;
                    } else {
                        a.torn.push(*group);
                    }
                }
            }
        }
        a.unknown_rows = found.difference(&known).copied().collect();
        a
    }
}

/// A multi-thread runtime with two workers, for tests that drive async code from a `#[test]`.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}
