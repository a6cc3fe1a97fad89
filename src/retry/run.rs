//! The loop of a retrying transaction: one attempt after another, each on a new `Tx`, with the
//! policy's backoff between them and its deadline over everything.
//!
//! The deadline bounds each attempt in two ways: the attempt's statements run with a statement
//! limit no longer than the time left (the connection's own per-call limit, so a statement
//! started at the attempt's beginning is stopped by its wing as any statement past its limit
//! is), and the attempt as a whole (checkout, statements, commit) is dropped when the deadline
//! passes. A dropped statement is stopped by the wing's cancellation (Postgres cancels it,
//! MySQL kills it from a second connection, SQLite interrupts it); that connection is never
//! used again by the loop. Nothing here runs on the path of a plain `Tx`.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::classify::{Phase, needs_new_connection, transient};
use super::{RetryError, RetryPolicy, TxFuture};
use crate::connection::TxFlag;
use crate::error::{ErrorKind, SqlMiddlewareDbError};
use crate::pool::{MiddlewarePool, MiddlewarePoolConnection};
use crate::transaction::Tx;

/// A checked-out connection and the statement limit it came with.
struct Held {
    conn: MiddlewarePoolConnection,
    limit: Option<Duration>,
}

/// How an attempt ended.
enum Ended<T, E> {
    Committed(T),
    Failed {
        error: E,
        /// `None`: the closure's own error.
        kind: Option<ErrorKind>,
        retry: bool,
        /// The connection is given up; the next attempt checks out another.
        drop_conn: bool,
    },
}

/// Why an attempt's future ended without a commit.
enum Stop<E> {
    /// `BEGIN` or `COMMIT` failed.
    Db(SqlMiddlewareDbError),
    /// The closure returned its error; `aborted`: its transaction was aborted by then.
    Work(E, bool),
}

/// Runs `work` under `policy` on `pool` (see [`MiddlewarePool::transaction`]).
pub(super) async fn run<T, E, F>(
    pool: &MiddlewarePool,
    policy: &RetryPolicy,
    mut work: F,
) -> Result<T, RetryError<E>>
where
    F: for<'t, 'c> FnMut(&'t mut Tx<'c>) -> TxFuture<'t, T, E> + Send,
    T: Send,
    E: From<SqlMiddlewareDbError> + Send,
{
    let deadline = policy.deadline.and_then(|d| Instant::now().checked_add(d));
    #[cfg(feature = "tracing")]
    let call = pool.trace.retry_span();
    let mut held: Option<Held> = None;
    let mut attempts = 0u32;
    let (out, gave_up) = loop {
        attempts += 1;
        let attempt = attempt(pool, &mut held, deadline, policy.idempotent, &mut work);
        #[cfg(feature = "tracing")]
        let ended = {
            let span = attempt_span(&call, attempts);
            let ended = tracing::Instrument::instrument(attempt, span.clone()).await;
            if !span.is_disabled() {
                match &ended {
                    Ended::Committed(_) => span.record("sqlmw.outcome", "commit"),
                    Ended::Failed { kind, retry, .. } => {
                        span.record("sqlmw.outcome", if *retry { "retry" } else { "failed" });
                        span.record("error.type", tracing::field::debug(kind))
                    }
                };
            }
            ended
        };
        #[cfg(not(feature = "tracing"))]
        let ended = attempt.await;
        match ended {
            Ended::Committed(v) => break (Ok(v), false),
            Ended::Failed {
                error,
                kind,
                retry,
                drop_conn,
            } => {
                if drop_conn {
                    held = None;
                }
                let out = Err(RetryError::new(error, kind, attempts));
                if !retry {
                    break (out, false);
                }
                if attempts >= policy.max_attempts {
                    break (out, true);
                }
                let wait = policy.delay(attempts, super::policy::random());
                if deadline.is_some_and(|d| Instant::now() + wait >= d) {
                    break (out, true);
                }
                tokio::time::sleep(wait).await;
            }
        }
    };
    pool.counters.live.retry_call(attempts, gave_up);
    #[cfg(feature = "tracing")]
    if !call.is_disabled() {
        call.record("sqlmw.retry.attempts", attempts);
        let outcome = match (&out, gave_up) {
            (Ok(_), _) => "commit",
            (Err(_), true) => "gave_up",
            (Err(_), false) => "failed",
        };
        call.record("sqlmw.outcome", outcome);
    }
    out
}

/// The span of attempt `n`, a child of the call's span (none when tracing is off).
#[cfg(feature = "tracing")]
fn attempt_span(call: &tracing::Span, n: u32) -> tracing::Span {
    if call.is_disabled() {
        return tracing::Span::none();
    }
    tracing::info_span!(
        target: "sql_middleware",
        parent: call,
        "attempt",
        sqlmw.retry.attempt = n,
        sqlmw.outcome = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}

/// One attempt: a connection (the one held, or a new checkout), `BEGIN`, the closure, `COMMIT`.
async fn attempt<T, E, F>(
    pool: &MiddlewarePool,
    held: &mut Option<Held>,
    deadline: Option<Instant>,
    idempotent: bool,
    work: &mut F,
) -> Ended<T, E>
where
    F: for<'t, 'c> FnMut(&'t mut Tx<'c>) -> TxFuture<'t, T, E> + Send,
    T: Send,
    E: From<SqlMiddlewareDbError> + Send,
{
    let h = match held {
        Some(h) => h,
        None => match within(deadline, pool.get()).await {
            Some(Ok(conn)) => held.insert(Held {
                limit: conn.statement_timeout(),
                conn,
            }),
            Some(Err(e)) => return db_failure(e, Phase::BeforeCommit, idempotent),
            None => return past_deadline(Phase::BeforeCommit),
        },
    };
    let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
    let limit = match (h.limit, left) {
        (Some(own), Some(left)) => Some(own.min(left)),
        (own, left) => own.or(left),
    };
    h.conn.set_statement_timeout(limit);
    h.conn.abort_cause = None;
    let mut phase = Phase::BeforeCommit;
    let conn = &mut h.conn;
    let run = async {
        let mut tx = conn.begin().await.map_err(Stop::Db)?;
        match work(&mut tx).await {
            Ok(v) => {
                phase = Phase::Commit;
                tx.commit().await.map(|()| v).map_err(Stop::Db)
            }
            Err(e) => {
                let aborted = tx.conn.tx == TxFlag::Aborted;
                // The closure's error ends the attempt: its work is undone. A failed rollback
                // is the connection's to report: it is marked lost or repaired on return.
                let _ = tx.rollback().await;
                Err(Stop::Work(e, aborted))
            }
        }
    };
    let r = within(deadline, run).await;
    h.conn.set_statement_timeout(h.limit);
    let cause = h.conn.abort_cause;
    match r {
        None => past_deadline(phase),
        Some(Ok(v)) => Ended::Committed(v),
        Some(Err(Stop::Db(e))) => {
            if e.kind() == ErrorKind::TransactionAborted && phase == Phase::Commit {
                // `commit` rolled back a transaction an error had aborted, an error the closure
                // swallowed: that error decides, and it happened before `COMMIT` was sent.
                let decisive = cause.unwrap_or(ErrorKind::TransactionAborted);
                return Ended::Failed {
                    retry: transient(decisive, Phase::BeforeCommit, idempotent),
                    drop_conn: needs_new_connection(decisive),
                    kind: Some(e.kind()),
                    error: E::from(e),
                };
            }
            db_failure(e, phase, idempotent)
        }
        Some(Err(Stop::Work(error, false))) => Ended::Failed {
            error,
            kind: None,
            retry: false,
            drop_conn: false,
        },
        Some(Err(Stop::Work(error, true))) => {
            let kind = cause.unwrap_or(ErrorKind::TransactionAborted);
            Ended::Failed {
                error,
                kind: Some(kind),
                retry: transient(kind, Phase::BeforeCommit, idempotent),
                drop_conn: needs_new_connection(kind),
            }
        }
    }
}

/// A database error `e` of the loop's own steps (checkout, `BEGIN`, `COMMIT`) in `phase`.
fn db_failure<T, E: From<SqlMiddlewareDbError>>(
    e: SqlMiddlewareDbError,
    phase: Phase,
    idempotent: bool,
) -> Ended<T, E> {
    let kind = e.kind();
    // A connection lost while `COMMIT` was under way leaves the outcome unknown, whatever a
    // wing called it.
    let kind = if phase == Phase::Commit && kind == ErrorKind::ConnectionLost {
        ErrorKind::OutcomeUnknown
    } else {
        kind
    };
    Ended::Failed {
        retry: transient(kind, phase, idempotent),
        drop_conn: needs_new_connection(kind),
        kind: Some(kind),
        error: E::from(e.with_kind(kind)),
    }
}

/// The deadline passed in `phase`: the attempt was dropped, and with it its statement.
fn past_deadline<T, E: From<SqlMiddlewareDbError>>(phase: Phase) -> Ended<T, E> {
    let e = match phase {
        Phase::BeforeCommit => SqlMiddlewareDbError::new(
            ErrorKind::Timeout,
            "the retrying transaction's deadline passed before its commit; the attempt was stopped and nothing of it was committed",
        ),
        Phase::Commit => SqlMiddlewareDbError::new(
            ErrorKind::OutcomeUnknown,
            "the retrying transaction's deadline passed while its COMMIT was under way; whether it committed is unknown",
        ),
    };
    Ended::Failed {
        kind: Some(e.kind()),
        error: E::from(e),
        retry: false,
        drop_conn: true,
    }
}

/// `f`, unless `deadline` passes first (`None`: `f` was dropped).
async fn within<F: Future>(deadline: Option<Instant>, f: F) -> Option<F::Output> {
    match deadline {
        Some(d) => tokio::time::timeout_at(d, f).await.ok(),
        None => Some(f.await),
    }
}
