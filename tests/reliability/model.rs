//! Reliability 9: a model-based test. Proptest generates sequences of operations — check out,
//! begin, insert, select, commit, rollback, drop the transaction, drop the connection, and
//! faults (a bad statement, a statement future dropped after one poll, a panic in raw access) —
//! over two connection slots of one pool of size 2, on each backend. A small model predicts
//! every outcome; after every step the test checks:
//!
//! - the outcome matches the model (the exact error kind where one is expected);
//! - a separate connection sees exactly the committed rows (plus, possibly, rows whose
//!   autocommit write was cut off mid-way);
//! - every idle slot's connection is outside any transaction;
//! - the pool never holds more than its maximum.
//!
//! Each slot is a task that owns its connection (and, lexically, its `Tx`), driven by
//! commands. Generation is seeded (`RELIABILITY_SEED`); failures are kept in
//! `proptest-regressions/reliability_model.txt` (replayed first on every run).

use std::collections::BTreeSet;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use sql_middleware::prelude::*;
use sql_middleware::{ErrorKind, QueryBuilder};
use tokio::sync::{mpsc, oneshot};

use crate::common;
use crate::common::backends::{Kind, Logical, TestDb};
use crate::common::reliability::{DropAt, Polled, check_idle, poll_at_most, seed_for};

const INS: &str = "INSERT INTO m (id) VALUES ($1)";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    BadStatement,
    DropMidStatement,
    RawPanic,
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Checkout(usize),
    Begin(usize),
    Insert(usize),
    Select(usize),
    Commit(usize),
    Rollback(usize),
    DropTx(usize),
    DropConn(usize),
    Fault(usize, Fault),
}

fn op() -> impl Strategy<Value = Op> {
    let s = 0..2_usize;
    prop_oneof![
        3 => s.clone().prop_map(Op::Checkout),
        3 => s.clone().prop_map(Op::Begin),
        5 => s.clone().prop_map(Op::Insert),
        2 => s.clone().prop_map(Op::Select),
        3 => s.clone().prop_map(Op::Commit),
        1 => s.clone().prop_map(Op::Rollback),
        1 => s.clone().prop_map(Op::DropTx),
        1 => s.clone().prop_map(Op::DropConn),
        2 => (s, prop_oneof![
            Just(Fault::BadStatement),
            Just(Fault::DropMidStatement),
            Just(Fault::RawPanic)
        ])
            .prop_map(|(s, f)| Op::Fault(s, f)),
    ]
}

// ---- the slot task --------------------------------------------------------------------------

#[derive(Debug)]
enum Cmd {
    Begin,
    Insert(i64),
    Select,
    Commit,
    Rollback,
    DropTx,
    Fault(Fault, i64),
    Idle,
}

/// What a command did: `Ok(n)` (rows, or 1/0 for "completed"/"dropped"), the rows seen by a
/// select, or the error kind. `broken` says the connection reported itself lost afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Out {
    Done(u64),
    Rows(BTreeSet<i64>),
    Err(ErrorKind, String),
    /// A statement future was dropped; `completed` = it finished within its one poll.
    Dropped {
        completed: bool,
        broken: bool,
    },
}

fn out<T>(r: Result<T, SqlMiddlewareDbError>, f: impl FnOnce(T) -> Out) -> Out {
    match r {
        Ok(v) => f(v),
        Err(e) => Out::Err(e.kind(), e.to_string()),
    }
}

async fn rows_of(q: QueryBuilder<'_, '_>) -> Out {
    out(q.all::<(i64,)>().await, |v| {
        Out::Rows(v.into_iter().map(|r| r.0).collect())
    })
}

type Inbox = mpsc::Receiver<(Cmd, oneshot::Sender<Out>)>;

async fn probe_broken(conn: &mut MiddlewarePoolConnection) -> bool {
    matches!(conn.query("SELECT 1").one::<(i64,)>().await, Err(e) if e.kind() == ErrorKind::ConnectionLost)
}

async fn slot_task(mut conn: MiddlewarePoolConnection, kind: Kind, mut rx: Inbox) {
    'outer: while let Some((cmd, reply)) = rx.recv().await {
        let o = match cmd {
            Cmd::Begin => {
                let mut tx = match conn.begin().await {
                    Ok(tx) => tx,
                    Err(e) => {
                        let _ = reply.send(Out::Err(e.kind(), e.to_string()));
                        continue;
                    }
                };
                let _ = reply.send(Out::Done(0));
                while let Some((cmd, reply)) = rx.recv().await {
                    let o = match cmd {
                        Cmd::Begin => out(tx.execute_batch("BEGIN").await, |_| Out::Done(0)),
                        Cmd::Insert(k) => {
                            out(tx.query(INS).params(&[k.into()]).dml().await, Out::Done)
                        }
                        Cmd::Select => rows_of(tx.query("SELECT id FROM m")).await,
                        Cmd::Commit => {
                            let o = out(tx.commit().await, |_| Out::Done(0));
                            let _ = reply.send(o);
                            continue 'outer;
                        }
                        Cmd::Rollback => {
                            let o = out(tx.rollback().await, |_| Out::Done(0));
                            let _ = reply.send(o);
                            continue 'outer;
                        }
                        Cmd::DropTx => {
                            drop(tx);
                            let _ = reply.send(Out::Done(0));
                            continue 'outer;
                        }
                        Cmd::Fault(Fault::DropMidStatement, k) => {
                            let polled = poll_at_most(
                                tx.query(INS).params(&[k.into()]).dml(),
                                1,
                                DropAt::Immediately,
                            )
                            .await;
                            match polled {
                                Polled::Done(Ok(1), _) => Out::Dropped {
                                    completed: true,
                                    broken: false,
                                },
                                Polled::Done(other, _) => {
                                    out(other, |n| Out::Err(ErrorKind::Other, format!("{n}")))
                                }
                                Polled::Dropped(_) => {
                                    // The statement's effect is unknown: give the transaction up.
                                    drop(tx);
                                    let broken = probe_broken(&mut conn).await;
                                    let _ = reply.send(Out::Dropped {
                                        completed: false,
                                        broken,
                                    });
                                    continue 'outer;
                                }
                            }
                        }
                        // Inside a Tx the other faults are a bad statement (the raw-access
                        // panic is exercised outside transactions).
                        Cmd::Fault(_, _) => {
                            out(tx.query("SELEC 1").select().await, |_| Out::Done(0))
                        }
                        Cmd::Idle => Out::Err(ErrorKind::Other, "idle check inside a tx".into()),
                    };
                    let _ = reply.send(o);
                }
                break 'outer;
            }
            Cmd::Insert(k) => out(conn.query(INS).params(&[k.into()]).dml().await, Out::Done),
            Cmd::Select => rows_of(conn.query("SELECT id FROM m")).await,
            Cmd::Commit | Cmd::Rollback | Cmd::DropTx => Out::Done(0),
            Cmd::Fault(Fault::BadStatement, _) => {
                out(conn.query("SELEC 1").select().await, |_| Out::Done(0))
            }
            Cmd::Fault(Fault::DropMidStatement, k) => {
                let polled = poll_at_most(
                    conn.query(INS).params(&[k.into()]).dml(),
                    1,
                    DropAt::Immediately,
                )
                .await;
                match polled {
                    Polled::Done(Ok(1), _) => Out::Dropped {
                        completed: true,
                        broken: false,
                    },
                    Polled::Done(other, _) => {
                        out(other, |n| Out::Err(ErrorKind::Other, format!("{n}")))
                    }
                    Polled::Dropped(_) => Out::Dropped {
                        completed: false,
                        broken: probe_broken(&mut conn).await,
                    },
                }
            }
            Cmd::Fault(Fault::RawPanic, _) => raw_panic(&mut conn, kind).await,
            Cmd::Idle => match check_idle(&mut conn, kind).await {
                Ok(()) => Out::Done(0),
                Err(e) => Out::Err(ErrorKind::TransactionState, e),
            },
        };
        let _ = reply.send(o);
    }
    drop(conn);
}

/// SQLite: a panic inside `with_blocking_sqlite` (the checkout becomes lost). Elsewhere: a
/// parameter-count error (raw access there cannot panic inside the middleware).
async fn raw_panic(conn: &mut MiddlewarePoolConnection, kind: Kind) -> Out {
    #[cfg(feature = "sqlite")]
    if kind == Kind::Sqlite {
        let r = conn
            .with_blocking_sqlite(|c| {
                c.execute_batch("BEGIN; INSERT INTO m (id) VALUES (-1)")?;
                if !c.is_autocommit() {
                    panic!("model: panic inside raw access");
                }
                Ok(())
            })
            .await;
        return match r {
            Err(e) if e.message().contains("panicked") => Out::Dropped {
                completed: false,
                broken: true,
            },
            other => out(other, |_| Out::Done(0)),
        };
    }
    let _ = kind;
    out(conn.query(INS).params(&[]).dml().await, Out::Done)
}

// ---- the model ------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
enum Slot {
    Empty,
    Idle,
    Broken,
    InTx { pending: Vec<i64>, aborted: bool },
}

struct Live {
    tx: mpsc::Sender<(Cmd, oneshot::Sender<Out>)>,
    task: tokio::task::JoinHandle<()>,
}

struct Harness {
    kind: Kind,
    pool: ConfigAndPool,
    verifier: ConfigAndPool,
    slots: [Slot; 2],
    live: [Option<Live>; 2],
    committed: BTreeSet<i64>,
    maybe: BTreeSet<i64>,
    base: i64,
    next_key: i64,
    log: Vec<String>,
}

impl Harness {
    async fn send(&mut self, s: usize, cmd: Cmd) -> Out {
        let live = self.live[s].as_ref().expect("live slot");
        let (tx, rx) = oneshot::channel();
        live.tx.send((cmd, tx)).await.expect("slot task alive");
        match tokio::time::timeout(Duration::from_secs(20), rx).await {
            Ok(Ok(o)) => o,
            Ok(Err(_)) => Out::Err(ErrorKind::Other, "slot task died".into()),
            Err(_) => Out::Err(ErrorKind::Other, "slot command hung for 20 s".into()),
        }
    }

    /// SQLite and Turso take the write lock at BEGIN: with the other slot inside a
    /// transaction, a write outside it waits the (short) busy timeout and fails with Busy.
    fn write_locked_by_other(&self, s: usize) -> bool {
        self.kind != Kind::Postgres && matches!(self.slots[1 - s], Slot::InTx { .. })
    }

    async fn close(&mut self, s: usize) {
        if let Some(live) = self.live[s].take() {
            drop(live.tx);
            let _ = live.task.await;
        }
        self.slots[s] = Slot::Empty;
    }

    async fn step(&mut self, op: Op) -> Result<(), String> {
        self.log.push(format!("{op:?}"));
        let expect = |what: &str, got: &Out, want: &str| -> Result<(), String> {
            Err(format!("{what}: expected {want}, got {got:?}"))
        };
        match op {
            Op::Checkout(s) => {
                if self.slots[s] == Slot::Empty {
                    let conn =
                        tokio::time::timeout(Duration::from_secs(10), self.pool.get_connection())
                            .await
                            .map_err(|_| "checkout hung".to_string())?
                            .map_err(|e| format!("checkout: {e}"))?;
                    let (tx, rx) = mpsc::channel(1);
                    let task = tokio::spawn(slot_task(conn, self.kind, rx));
                    self.live[s] = Some(Live { tx, task });
                    self.slots[s] = Slot::Idle;
                }
            }
            Op::Begin(s) => match self.slots[s].clone() {
                Slot::Empty => {}
                Slot::Broken => {
                    let o = self.send(s, Cmd::Begin).await;
                    if !matches!(o, Out::Err(ErrorKind::ConnectionLost, _)) {
                        return expect("begin on a lost connection", &o, "ConnectionLost");
                    }
                }
                Slot::Idle => {
                    let locked = self.write_locked_by_other(s);
                    let o = self.send(s, Cmd::Begin).await;
                    match (&o, locked) {
                        (Out::Done(_), false) => {
                            self.slots[s] = Slot::InTx {
                                pending: vec![],
                                aborted: false,
                            }
                        }
                        (Out::Err(ErrorKind::Busy, _), true) => {}
                        _ => return expect("begin", &o, if locked { "Busy" } else { "Ok" }),
                    }
                }
                Slot::InTx { pending, aborted } => {
                    let o = self.send(s, Cmd::Begin).await;
                    let want = if aborted {
                        ErrorKind::TransactionAborted
                    } else {
                        ErrorKind::TransactionState
                    };
                    if !matches!(&o, Out::Err(k, _) if *k == want) {
                        return expect("nested BEGIN", &o, &format!("{want:?}"));
                    }
                    self.slots[s] = Slot::InTx {
                        pending,
                        aborted: true,
                    };
                }
            },
            Op::Insert(s) | Op::Fault(s, Fault::DropMidStatement) => {
                if self.slots[s] == Slot::Empty {
                    return Ok(());
                }
                let k = self.next_key;
                self.next_key += 1;
                let dropping = matches!(op, Op::Fault(..));
                let cmd = if dropping {
                    Cmd::Fault(Fault::DropMidStatement, k)
                } else {
                    Cmd::Insert(k)
                };
                let locked = self.write_locked_by_other(s);
                let o = self.send(s, cmd).await;
                match (self.slots[s].clone(), &o) {
                    (Slot::Broken, Out::Err(ErrorKind::ConnectionLost, _)) => {}
                    (Slot::Idle, Out::Done(1)) if !locked => {
                        self.committed.insert(k);
                    }
                    (Slot::Idle, Out::Err(ErrorKind::Busy, _)) if locked => {}
                    (
                        Slot::Idle,
                        Out::Dropped {
                            completed: true, ..
                        },
                    ) if !locked => {
                        self.committed.insert(k);
                    }
                    (
                        Slot::Idle,
                        Out::Dropped {
                            completed: false,
                            broken,
                        },
                    ) => {
                        // An autocommit write cut off mid-way: it may or may not be saved.
                        self.maybe.insert(k);
                        if *broken {
                            self.slots[s] = Slot::Broken;
                        }
                    }
                    (
                        Slot::InTx {
                            mut pending,
                            aborted: false,
                        },
                        Out::Done(1),
                    ) => {
                        pending.push(k);
                        self.slots[s] = Slot::InTx {
                            pending,
                            aborted: false,
                        };
                    }
                    (
                        Slot::InTx {
                            mut pending,
                            aborted: false,
                        },
                        Out::Dropped {
                            completed: true, ..
                        },
                    ) => {
                        pending.push(k);
                        self.slots[s] = Slot::InTx {
                            pending,
                            aborted: false,
                        };
                    }
                    (
                        Slot::InTx { .. },
                        Out::Dropped {
                            completed: false,
                            broken,
                        },
                    ) => {
                        // The transaction was given up (dropped): nothing of it is saved.
                        self.slots[s] = if *broken { Slot::Broken } else { Slot::Idle };
                    }
                    (
                        Slot::InTx { aborted: true, .. },
                        Out::Err(ErrorKind::TransactionAborted, _),
                    ) => {}
                    (state, _) => {
                        return expect(
                            &format!(
                                "insert in state {state:?} (other slot holds the write lock: {locked})"
                            ),
                            &o,
                            "the model's outcome",
                        );
                    }
                }
            }
            Op::Select(s) => {
                let state = self.slots[s].clone();
                if state == Slot::Empty {
                    return Ok(());
                }
                let o = self.send(s, Cmd::Select).await;
                match (&state, &o) {
                    (Slot::Broken, Out::Err(ErrorKind::ConnectionLost, _)) => {}
                    (Slot::Idle, Out::Rows(seen)) => self.check_visible("select", seen)?,
                    (
                        Slot::InTx {
                            pending,
                            aborted: false,
                        },
                        Out::Rows(seen),
                    ) => {
                        let own: BTreeSet<i64> = pending.iter().copied().collect();
                        let others: BTreeSet<i64> = seen.difference(&own).copied().collect();
                        if !own.is_subset(seen) {
                            return Err(format!(
                                "a tx does not see its own rows: {own:?} in {seen:?}"
                            ));
                        }
                        self.check_visible("select in tx", &others)?;
                    }
                    (
                        Slot::InTx { aborted: true, .. },
                        Out::Err(ErrorKind::TransactionAborted, _),
                    ) => {}
                    _ => return expect(&format!("select in {state:?}"), &o, "the model's outcome"),
                }
            }
            Op::Commit(s) | Op::Rollback(s) | Op::DropTx(s) => {
                let Slot::InTx { pending, aborted } = self.slots[s].clone() else {
                    return Ok(());
                };
                let cmd = match op {
                    Op::Commit(_) => Cmd::Commit,
                    Op::Rollback(_) => Cmd::Rollback,
                    _ => Cmd::DropTx,
                };
                let committing = matches!(op, Op::Commit(_));
                let o = self.send(s, cmd).await;
                match (&o, committing, aborted) {
                    (Out::Done(_), true, false) => self.committed.extend(pending),
                    (Out::Err(ErrorKind::TransactionAborted, _), true, true) => {}
                    (Out::Done(_), false, _) => {}
                    _ => {
                        return expect(
                            &format!("{op:?} of a tx (aborted: {aborted})"),
                            &o,
                            if committing && aborted {
                                "TransactionAborted"
                            } else {
                                "Ok"
                            },
                        );
                    }
                }
                self.slots[s] = Slot::Idle;
            }
            Op::DropConn(s) => self.close(s).await,
            Op::Fault(s, f) => {
                let state = self.slots[s].clone();
                if state == Slot::Empty {
                    return Ok(());
                }
                let o = self.send(s, Cmd::Fault(f, 0)).await;
                match (&state, &o) {
                    (Slot::Broken, Out::Err(ErrorKind::ConnectionLost, _)) => {}
                    (Slot::Broken, Out::Dropped { broken: true, .. }) => {}
                    (Slot::Idle, Out::Err(ErrorKind::Syntax, _)) if f == Fault::BadStatement => {}
                    (Slot::Idle, Out::Dropped { broken: true, .. }) if f == Fault::RawPanic => {
                        self.slots[s] = Slot::Broken;
                    }
                    // The raw closure's own BEGIN; INSERT waits for the other slot's write lock
                    // and fails with Busy before it can panic; the checkout stays usable.
                    (Slot::Idle, Out::Err(ErrorKind::Busy, _))
                        if f == Fault::RawPanic && self.write_locked_by_other(s) => {}
                    (Slot::Idle, Out::Err(ErrorKind::ParameterCount, _))
                        if f == Fault::RawPanic && self.kind != Kind::Sqlite => {}
                    (
                        Slot::InTx {
                            pending,
                            aborted: false,
                        },
                        Out::Err(ErrorKind::Syntax, _),
                    ) => {
                        self.slots[s] = Slot::InTx {
                            pending: pending.clone(),
                            aborted: true,
                        };
                    }
                    (
                        Slot::InTx { aborted: true, .. },
                        Out::Err(ErrorKind::TransactionAborted, _),
                    ) => {}
                    _ => {
                        return expect(
                            &format!("fault {f:?} in {state:?}"),
                            &o,
                            "the model's outcome",
                        );
                    }
                }
            }
        }
        self.invariants().await
    }

    fn check_visible(&self, what: &str, seen: &BTreeSet<i64>) -> Result<(), String> {
        let range = self.base..self.base + 1_000_000;
        let seen: BTreeSet<i64> = seen.iter().copied().filter(|k| range.contains(k)).collect();
        if !self.committed.is_subset(&seen) {
            return Err(format!(
                "{what}: committed rows missing: {:?}",
                self.committed.difference(&seen).collect::<Vec<_>>()
            ));
        }
        let extra: Vec<_> = seen
            .difference(&self.committed)
            .filter(|k| !self.maybe.contains(k))
            .collect();
        if !extra.is_empty() {
            return Err(format!(
                "{what}: rows nobody committed are visible: {extra:?}"
            ));
        }
        Ok(())
    }

    async fn invariants(&mut self) -> Result<(), String> {
        let mut v = self
            .verifier
            .get_connection()
            .await
            .map_err(|e| format!("verifier checkout: {e}"))?;
        let seen = match rows_of(v.query("SELECT id FROM m")).await {
            Out::Rows(r) => r,
            other => return Err(format!("verifier read: {other:?}")),
        };
        drop(v);
        if seen.contains(&-1) {
            return Err("the panicked raw transaction's row is visible".into());
        }
        self.check_visible("fresh connection", &seen)?;
        for s in 0..2 {
            if self.slots[s] == Slot::Idle {
                let o = self.send(s, Cmd::Idle).await;
                if o != Out::Done(0) {
                    return Err(format!("slot {s} is not idle: {o:?}"));
                }
            }
        }
        let st = self.pool.status();
        if st.size > st.max_size {
            return Err(format!("pool grew past its maximum: {st:?}"));
        }
        Ok(())
    }
}

async fn run_case(db: &TestDb, ops: &[Op], case: usize) -> Result<(), String> {
    // Each case owns its own key range: a write cut off in an earlier case may still land
    // later (it was "maybe" there), and must not be judged here.
    let base = case as i64 * 1_000_000;
    {
        let int = db.ty(Logical::Int);
        let mut c = db.conn().await;
        c.execute_batch(&format!(
            "CREATE TABLE IF NOT EXISTS m (id {int} PRIMARY KEY)"
        ))
        .await
        .map_err(|e| format!("setup: {e}"))?;
    }
    let mut builder = db
        .builder()
        .max_size(2)
        .wait_timeout(Duration::from_secs(10));
    if db.kind != Kind::Postgres {
        builder = builder.busy_timeout(Duration::from_millis(100));
    }
    let pool = builder.build().await.map_err(|e| format!("pool: {e}"))?;
    let mut h = Harness {
        kind: db.kind,
        pool,
        verifier: db.db.clone(),
        slots: [Slot::Empty, Slot::Empty],
        live: [None, None],
        committed: BTreeSet::new(),
        maybe: BTreeSet::new(),
        base,
        next_key: base + 1,
        log: Vec::new(),
    };
    let mut result = Ok(());
    for op in ops {
        if let Err(e) = h.step(*op).await {
            result = Err(format!("after {}: {e}", h.log.join(", ")));
            break;
        }
    }
    for s in 0..2 {
        h.close(s).await;
    }
    if result.is_ok() {
        // With every connection returned, the next checkouts are idle.
        for _ in 0..2 {
            let mut c = h
                .pool
                .get_connection()
                .await
                .map_err(|e| format!("final checkout: {e}"))?;
            check_idle(&mut c, db.kind)
                .await
                .map_err(|e| format!("final checkout: {e}"))?;
        }
    }
    result
}

/// Runs the generated cases; `handle.block_on` drives each case (proptest is synchronous).
fn run_model(db: TestDb, handle: &tokio::runtime::Handle) {
    let cases = common::reliability::knob_usize("RELIABILITY_MODEL_CASES", 32) as u32;
    let seed = seed_for(&format!("model/{}", db.kind.name()));
    let config = Config {
        cases,
        max_shrink_iters: 64,
        rng_seed: RngSeed::Fixed(seed),
        source_file: Some(file!()),
        // `cargo test` runs in the package root: proptest-regressions/reliability_model.txt.
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "proptest-regressions/reliability_model.txt",
            ),
        )),
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let counter = std::cell::Cell::new(0_usize);
    let steps = std::cell::Cell::new(0_usize);
    let result = runner.run(&proptest::collection::vec(op(), 5..40), |ops| {
        let n = counter.get();
        counter.set(n + 1);
        steps.set(steps.get() + ops.len());
        handle
            .block_on(run_case(&db, &ops, n))
            .map_err(TestCaseError::fail)
    });
    println!(
        "model backend={} seed={seed} cases_run={} steps={} result={}",
        db.kind.name(),
        counter.get(),
        steps.get(),
        if result.is_ok() { "ok" } else { "FAILED" }
    );
    if let Err(e) = result {
        panic!(
            "[{}] model test failed (RELIABILITY_SEED={seed}):\n{e}",
            db.kind.name()
        );
    }
}

#[cfg(feature = "sqlite")]
#[test]
fn model_sqlite() {
    let _group = common::groups::enter("model");
    let rt = common::reliability::runtime();
    let db = rt.block_on(common::engines::sqlite::test_db());
    run_model(db, rt.handle());
}

#[cfg(feature = "turso")]
#[test]
fn model_turso() {
    let _group = common::groups::enter("model");
    let rt = common::reliability::runtime();
    let db = rt.block_on(common::engines::turso::test_db());
    run_model(db, rt.handle());
}

#[cfg(feature = "postgres")]
#[test]
fn model_postgres() {
    let _group = common::groups::enter("model");
    let rt = common::reliability::runtime();
    rt.block_on(async {
        common::pg::with_schema(|url| async move {
            let db = common::engines::postgres::test_db(&url).await;
            let handle = tokio::runtime::Handle::current();
            // proptest drives the cases synchronously: run them on a blocking thread.
            tokio::task::spawn_blocking(move || run_model(db, &handle))
                .await
                .expect("model thread");
        })
        .await
    });
}
