//! Setting up each new connection: the pool's `after_connect` hook, as the wings run it.
//!
//! Every wing runs [`AfterConnect::set_up`] once on each connection it opens (pooled
//! connections, replacements, those opened by the `min_idle` upkeep, a Postgres reader's and a
//! `Listener`'s), inside the opening, so the create timeout bounds it and its error fails that
//! opening only. The hook drives the connection through [`Setup`]: a few operations of the
//! contract with boxed futures, so one hook (built by the hall, see `after_connect.rs`) runs on
//! every engine. What every engine checks after it is here too: the hook must leave no
//! transaction open, and its statements stay out of the pool's statistics; a wing adds only
//! its engine's own checks.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::ResultSet;
use crate::value::RowValues;

/// A boxed future that may move between threads.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a hook may do on a connection being opened: the contract's `execute_batch`, `dml` and
/// `select`, with boxed futures (so the trait is object safe). Placeholders are translated as
/// the pool's default does it (`$1` or `?1` on every engine). The last two methods are for
/// [`AfterConnect::set_up`] only, after the hook.
pub(crate) trait Setup: Send {
    /// Runs a script without parameters.
    fn execute_batch<'a>(&'a mut self, sql: &'a str) -> BoxFuture<'a, Result<()>>;

    /// Runs one statement with parameters; returns the rows it changed.
    fn dml<'a>(&'a mut self, sql: &'a str, params: &'a [RowValues]) -> BoxFuture<'a, Result<u64>>;

    /// Runs one statement with parameters and returns its rows.
    fn select<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [RowValues],
    ) -> BoxFuture<'a, Result<ResultSet>>;

    /// Whether the connection is inside a transaction now (asked after the hook ran).
    fn in_transaction(&mut self) -> BoxFuture<'_, Result<bool>>;

    /// Takes what the connection has counted so far (statement cache, SQLite's execution
    /// counts) as already added to the pool's statistics, so the hook's statements stay out.
    fn skip_stats(&mut self);
}

/// Implements [`Setup`] for a wing's connection type through its [`Wing`](crate::contract::Wing)
/// operations (statements prepared through the connection's cache, outside any transaction,
/// without a time limit: the create timeout bounds the whole opening); `$in_tx` is the wing's
/// `async fn(&mut $conn) -> Result<bool>` that tells whether a transaction is open.
#[cfg(feature = "_embedded")]
macro_rules! setup_via_wing {
    ($conn:ty, $in_tx:path) => {
        impl $crate::setup::Setup for $conn {
            fn execute_batch<'a>(
                &'a mut self,
                sql: &'a str,
            ) -> $crate::setup::BoxFuture<'a, $crate::error::Result<()>> {
                Box::pin($crate::contract::Wing::execute_batch(
                    self, sql, false, None,
                ))
            }

            fn dml<'a>(
                &'a mut self,
                sql: &'a str,
                params: &'a [$crate::value::RowValues],
            ) -> $crate::setup::BoxFuture<'a, $crate::error::Result<u64>> {
                Box::pin(async move {
                    let s = $crate::contract::Wing::prepare(
                        self,
                        sql,
                        $crate::translation::TranslationMode::On,
                        None,
                    )
                    .await?;
                    $crate::contract::Wing::dml(self, &s, params, None).await
                })
            }

            fn select<'a>(
                &'a mut self,
                sql: &'a str,
                params: &'a [$crate::value::RowValues],
            ) -> $crate::setup::BoxFuture<'a, $crate::error::Result<$crate::results::ResultSet>>
            {
                Box::pin(async move {
                    let s = $crate::contract::Wing::prepare(
                        self,
                        sql,
                        $crate::translation::TranslationMode::On,
                        None,
                    )
                    .await?;
                    $crate::contract::Wing::select(self, &s, params, None).await
                })
            }

            fn in_transaction(
                &mut self,
            ) -> $crate::setup::BoxFuture<'_, $crate::error::Result<bool>> {
                Box::pin($in_tx(self))
            }

            fn skip_stats(&mut self) {
                let cache = $crate::contract::Wing::cache_stats(self);
                let exec = $crate::contract::Wing::exec_stats(self);
                if let Some((flushed, _)) = $crate::contract::Wing::counted(self) {
                    flushed.skip(cache, exec);
                }
            }
        }
    };
}
#[cfg(feature = "_embedded")]
pub(crate) use setup_via_wing;

/// The hook as the wings call it: the user's function, wrapped by the hall with what it tells
/// the hook about the connection.
pub(crate) type Runner =
    Arc<dyn for<'a> Fn(&'a mut dyn Setup) -> BoxFuture<'a, Result<()>> + Send + Sync>;

/// A pool's `after_connect` hook, if it has one. Cheap to clone (clones share the hook).
#[derive(Clone, Default)]
pub(crate) struct AfterConnect(Option<Runner>);

impl std::fmt::Debug for AfterConnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "AfterConnect(set)"
        } else {
            "AfterConnect(none)"
        })
    }
}

impl AfterConnect {
    /// The hook `run`.
    pub(crate) fn new(run: Runner) -> Self {
        Self(Some(run))
    }

    /// Whether the pool has a hook (the engines whose opening skips work without one ask).
    #[allow(
        dead_code,
        reason = "an engine whose opening is the same with or without a hook does not ask"
    )]
    pub(crate) fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// Runs the hook (if any) on `conn`, a connection being opened, and returns whether it ran.
    /// Its error is returned as the hook made it (kind and message), and fails the opening.
    /// After it the connection must be outside any transaction (else the opening fails with
    /// `TransactionState` and the connection is closed), and what the hook's statements counted
    /// stays out of the pool's statistics.
    pub(crate) async fn set_up(&self, conn: &mut dyn Setup) -> Result<bool> {
        let Some(f) = &self.0 else {
            return Ok(false);
        };
        f(conn).await?;
        if conn.in_transaction().await? {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::TransactionState,
                "the after_connect hook left a transaction open; the connection is closed",
            ));
        }
        conn.skip_stats();
        Ok(true)
    }
}
