//! Group commit for the single-writer mode of SQLite and Turso: autocommit writes sent through
//! [`MiddlewarePool::dml`](crate::pool::MiddlewarePool::dml) while the writer is busy wait in a
//! queue, and the next round runs them together, each in a savepoint of one transaction, so one
//! commit (one fsync of the log with `synchronous=FULL`) makes them all durable.
//!
//! Each call keeps the meaning of its own autocommit statement:
//! - it returns `Ok` only after the commit that holds its work returned;
//! - its error is its own: a failed statement is rolled back to its savepoint and the others
//!   go on; a failed commit fails every statement of the round that had succeeded;
//! - when the engine rolls the whole transaction back from inside a statement (a trigger's
//!   `RAISE(ROLLBACK)`, or an I/O error), that statement gets its error and the others run
//!   again in a new transaction, so none is lost or reported committed when it was not;
//! - statements that are not a single `INSERT`, `UPDATE`, `DELETE` or `REPLACE` run alone, in
//!   autocommit, on the writer.
//!
//! The rounds run on a task of their own (spawned when a write finds none running, ended when
//! the queue is empty), so a caller that stops waiting never strands the others. The task
//! checks the writer out through the pool's own checkout, given to it as a function so that
//! this module does not import the pool that holds its queue. A caller that stops waiting
//! before its round starts is dropped from it; after that its statement runs and commits as an
//! autocommit statement cancelled in flight would.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

use crate::connection::MiddlewarePoolConnection;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::value::RowValues;

/// A check-out of the writer (the pool's `get`).
pub(crate) trait Checkout: Fn() -> Self::Fut + Send + 'static {
    /// Its future.
    type Fut: Future<Output = Result<MiddlewarePoolConnection>> + Send;
}

impl<F, Fut> Checkout for F
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = Result<MiddlewarePoolConnection>> + Send,
{
    type Fut = Fut;
}

/// The most statements one commit takes: a bound on how long the first of them waits.
pub(crate) const MAX_ROUND: usize = 256;

/// One queued write and where its outcome goes.
struct Write {
    sql: String,
    params: Vec<RowValues>,
    reply: oneshot::Sender<Result<u64>>,
}

#[derive(Default)]
struct Queue {
    writes: Vec<Write>,
    /// A task is running rounds (it empties the queue before it ends).
    running: bool,
}

/// The queue of one pool's writer.
#[derive(Default)]
pub(crate) struct GroupCommit {
    queue: Mutex<Queue>,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl GroupCommit {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `sql` (one plain write) for the next round on the writer and waits for its
    /// outcome. `checkout` makes the writer's checkout, only when this write starts a round
    /// task (a write that joins a running one costs no copy of the pool). Outside a tokio
    /// runtime, where no round task can run, the write runs alone.
    pub(crate) async fn submit<C: Checkout>(
        self: &Arc<Self>,
        checkout: impl FnOnce() -> C,
        sql: &str,
        params: &[RowValues],
    ) -> Result<u64> {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return checkout()().await?.query(sql).params(params).dml().await;
        };
        let (reply, outcome) = oneshot::channel();
        let write = Write {
            sql: sql.to_owned(),
            params: params.to_vec(),
            reply,
        };
        let start = {
            let mut q = self.lock();
            q.writes.push(write);
            !std::mem::replace(&mut q.running, true)
        };
        if start {
            let rounds = Rounds {
                group: Arc::clone(self),
                finished: false,
            };
            runtime.spawn(rounds.run(checkout()));
        }
        outcome.await.unwrap_or_else(|_| {
            Err(SqlMiddlewareDbError::new(
                ErrorKind::OutcomeUnknown,
                "the writer's round task stopped (its runtime shut down, or it panicked) before it answered this write; it may or may not have been committed",
            ))
        })
    }
}

/// The task that runs rounds until the queue is empty. Dropped in any way (the queue empty, a
/// panic, its runtime shutting down), it lets the next write start a new one, and the writes
/// still queued fail rather than wait forever.
struct Rounds {
    group: Arc<GroupCommit>,
    /// It ended by finding the queue empty (and said so under the lock).
    finished: bool,
}

impl Rounds {
    /// Runs rounds until the queue is empty. Each round takes what queued while it waited for
    /// the writer, so the busier the writer, the more one commit carries.
    async fn run(mut self, checkout: impl Checkout) {
        loop {
            {
                let mut q = self.group.lock();
                if q.writes.is_empty() {
                    q.running = false;
                    self.finished = true;
                    return;
                }
            }
            let writer = checkout().await;
            let round: Vec<Write> = {
                let mut q = self.group.lock();
                let n = q.writes.len().min(MAX_ROUND);
                q.writes.drain(..n).collect()
            };
            match writer {
                Ok(mut conn) => {
                    // Callers that stopped waiting are left out.
                    let round: Vec<Write> =
                        round.into_iter().filter(|w| !w.reply.is_closed()).collect();
                    if !round.is_empty() {
                        run_round(&mut conn, round).await;
                    }
                }
                Err(e) => fail_all(round, &e),
            }
        }
    }
}

impl Drop for Rounds {
    fn drop(&mut self) {
        if self.finished {
            // A write queued since then belongs to the task it started.
            return;
        }
        let stranded = {
            let mut q = self.group.lock();
            q.running = false;
            std::mem::take(&mut q.writes)
        };
        // Their senders drop here: each waiting caller gets the "queue stopped" error.
        drop(stranded);
    }
}

/// A copy of `e` for another caller of the same round (the driver's own error stays with the
/// first).
fn copy(e: &SqlMiddlewareDbError) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        e.kind(),
        format!("the group commit failed: {}", e.message()),
    )
}

/// Answers every write of `round` with a copy of `e`.
fn fail_all(round: Vec<Write>, e: &SqlMiddlewareDbError) {
    for w in round {
        let _ = w.reply.send(Err(copy(e)));
    }
}

/// Runs one round on the writer and answers every write in it.
async fn run_round(conn: &mut MiddlewarePoolConnection, mut round: Vec<Write>) {
    loop {
        if round.len() == 1 {
            let w = round.pop().expect("one write");
            let r = conn.query(&w.sql).params(&w.params).dml().await;
            let _ = w.reply.send(r);
            return;
        }
        match attempt(conn, &round).await {
            Attempt::Done(outcomes) => {
                for (w, r) in round.into_iter().zip(outcomes) {
                    let _ = w.reply.send(r);
                }
                return;
            }
            Attempt::Failed(e) => return fail_all(round, &e),
            Attempt::Lost { at, error } => {
                // The engine rolled the transaction back: the statement that did it gets its
                // error, and the rest (those before it lost their work too) run again.
                let _ = round.remove(at).reply.send(Err(error));
                if round.is_empty() {
                    return;
                }
            }
        }
    }
}

/// How one transaction of a round ended.
enum Attempt {
    /// Committed: each write's outcome, in order (errors are statements rolled back to their
    /// savepoints).
    Done(Vec<Result<u64>>),
    /// Nothing was committed: `begin` or `commit` failed.
    Failed(SqlMiddlewareDbError),
    /// The transaction is gone, rolled back by the engine inside write `at`.
    Lost {
        at: usize,
        error: SqlMiddlewareDbError,
    },
}

async fn attempt(conn: &mut MiddlewarePoolConnection, round: &[Write]) -> Attempt {
    let mut tx = match conn.begin().await {
        Ok(tx) => tx,
        Err(e) => return Attempt::Failed(e),
    };
    let mut outcomes = Vec::with_capacity(round.len());
    for (at, w) in round.iter().enumerate() {
        let mut sp = match tx.savepoint().await {
            Ok(sp) => sp,
            Err(e) => return Attempt::Failed(e),
        };
        match sp.query(&w.sql).params(&w.params).dml().await {
            Ok(n) => {
                if let Err(e) = sp.commit().await {
                    return Attempt::Failed(e);
                }
                outcomes.push(Ok(n));
            }
            Err(error) => {
                if sp.rollback().await.is_err() {
                    return Attempt::Lost { at, error };
                }
                outcomes.push(Err(error));
            }
        }
    }
    match tx.commit().await {
        Ok(()) => Attempt::Done(outcomes),
        Err(e) => {
            // Nothing of the round was committed: the statements that had succeeded fail with
            // the commit's error, the others keep their own.
            let outcomes = outcomes
                .into_iter()
                .map(|r| r.and_then(|_| Err(copy(&e))))
                .collect();
            Attempt::Done(outcomes)
        }
    }
}
