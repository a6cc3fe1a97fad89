//! The retrying transaction: [`MiddlewarePool::transaction`] (and
//! [`ConfigAndPool::transaction`]) run a closure in a fresh [`Tx`], commit it, and on a
//! transient failure roll back and run the closure again, under a [`RetryPolicy`].
//!
//! **Transient** (retried, on every engine): a serialization failure (Postgres `40001`, a
//! stale SQLite snapshot `SQLITE_BUSY_SNAPSHOT`, a stale Turso snapshot or a Turso
//! write-write conflict), a deadlock (Postgres `40P01`, MySQL `1213`, which is also how MariaDB
//! Galera reports a certification conflict), a lock wait past its limit
//! ([`ErrorKind::Busy`]: SQLite's and Turso's busy timeout at `BEGIN IMMEDIATE`, MySQL `1205`,
//! Postgres `55P03`; the whole transaction is run again, so retrying it is safe), and a
//! connection lost before `COMMIT` was sent (the next attempt checks out another connection).
//! A transient error the closure swallowed (it went on and returned `Ok`) still aborted the
//! transaction: `commit` rolls it back, and the loop retries on the error's kind.
//!
//! **Never retried:** a commit whose outcome is unknown ([`ErrorKind::OutcomeUnknown`], or a
//! connection lost while `COMMIT` was under way) unless the policy declares the work
//! [`idempotent`](RetryPolicy::idempotent); a constraint violation or any other database
//! error; the closure's own error. The caller gets the last error and the attempt count
//! ([`RetryError`]).
//!
//! **Each attempt is new:** a new `Tx` (on a newly checked-out connection when the last one
//! was lost, stopped, or may still be running a statement), and the closure runs from its
//! start, so nothing it read in a failed attempt reaches the next: compute what depends on
//! the database inside the closure.
//!
//! Retries are counted in [`crate::PoolStats::retry`]; with the `tracing` feature each call
//! is a `retrying_transaction` span (field `sqlmw.retry.attempts`) whose children are its
//! `attempt` spans, each the parent of that attempt's `transaction` span.

mod classify;
mod policy;
mod run;

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use crate::config::ConfigAndPool;
use crate::error::{ErrorKind, SqlMiddlewareDbError};
use crate::pool::MiddlewarePool;
use crate::transaction::Tx;

pub use policy::RetryPolicy;

/// The future a retrying transaction's closure returns: `Box::pin(async move { … })`.
pub type TxFuture<'t, T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send + 't>>;

/// Why a retrying transaction gave up, after how many attempts.
///
/// [`Self::kind`] tells a database error (`Some(kind)`: the kind of the error that ended the
/// last attempt, also when the closure returned it converted into `E`) from the closure's own
/// error (`None`: the closure returned `Err` while its transaction was still sound).
pub struct RetryError<E> {
    error: E,
    kind: Option<ErrorKind>,
    attempts: u32,
}

impl<E> RetryError<E> {
    pub(crate) fn new(error: E, kind: Option<ErrorKind>, attempts: u32) -> Self {
        RetryError {
            error,
            kind,
            attempts,
        }
    }

    /// The last attempt's error.
    pub fn error(&self) -> &E {
        &self.error
    }

    /// The last attempt's error, owned.
    pub fn into_error(self) -> E {
        self.error
    }

    /// The kind of the database error that ended the call, or `None` when the closure returned
    /// an error of its own.
    pub fn kind(&self) -> Option<ErrorKind> {
        self.kind
    }

    /// Whether the closure's own error ended the call (it is never retried).
    pub fn is_caller_error(&self) -> bool {
        self.kind.is_none()
    }

    /// How many attempts were made (at least 1).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
}

impl<E: fmt::Debug> fmt::Debug for RetryError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryError")
            .field("kind", &self.kind)
            .field("attempts", &self.attempts)
            .field("error", &self.error)
            .finish()
    }
}

impl<E: fmt::Display> fmt::Display for RetryError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (after {} attempt(s))", self.error, self.attempts)
    }
}

impl<E: std::error::Error + 'static> std::error::Error for RetryError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl MiddlewarePool {
    /// Runs `work` in a transaction and commits it, retrying on transient failures under
    /// `policy` (see the [module documentation](crate::retry)). `work` gets a new [`Tx`] on
    /// every attempt; it must not commit or roll back itself (the call does), and its error
    /// type only needs `From<SqlMiddlewareDbError>` so that `?` works inside it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use sql_middleware::prelude::*;
    ///
    /// let db = ConfigAndPool::sqlite_memory().build().await?;
    /// let mut c = db.get_connection().await?;
    /// c.execute_batch("CREATE TABLE acct (id INTEGER PRIMARY KEY, bal INTEGER NOT NULL);
    ///                  INSERT INTO acct VALUES (1, 100), (2, 0);").await?;
    /// drop(c);
    ///
    /// let amount = 30_i64;
    /// let policy = RetryPolicy::new().max_attempts(10);
    /// let moved: i64 = db
    ///     .pool()
    ///     .transaction(&policy, |tx| {
    ///         Box::pin(async move {
    ///             tx.query("UPDATE acct SET bal = bal - $1 WHERE id = 1")
    ///                 .params(&[amount.into()]).dml().await?;
    ///             tx.query("UPDATE acct SET bal = bal + $1 WHERE id = 2")
    ///                 .params(&[amount.into()]).dml().await?;
    ///             Ok::<_, SqlMiddlewareDbError>(amount)
    ///         })
    ///     })
    ///     .await?;
    /// assert_eq!(moved, 30);
    /// # Ok(()) }
    /// ```
    pub async fn transaction<T, E, F>(
        &self,
        policy: &RetryPolicy,
        work: F,
    ) -> Result<T, RetryError<E>>
    where
        F: for<'t, 'c> FnMut(&'t mut Tx<'c>) -> TxFuture<'t, T, E> + Send,
        T: Send,
        E: From<SqlMiddlewareDbError> + Send,
    {
        run::run(self, policy, work).await
    }
}

impl ConfigAndPool {
    /// Runs `work` in a retrying transaction (see [`MiddlewarePool::transaction`]).
    pub async fn transaction<T, E, F>(
        &self,
        policy: &RetryPolicy,
        work: F,
    ) -> Result<T, RetryError<E>>
    where
        F: for<'t, 'c> FnMut(&'t mut Tx<'c>) -> TxFuture<'t, T, E> + Send,
        T: Send,
        E: From<SqlMiddlewareDbError> + Send,
    {
        run::run(self.pool(), policy, work).await
    }
}
