//! Transactions on a SQLite connection: `BEGIN IMMEDIATE`, `COMMIT` and `ROLLBACK`, and the
//! rollback of a transaction dropped without commit, off the calling thread.

use std::sync::Arc;

use rusqlite::Connection;

use super::conn::SqliteConn;
use super::exec::run_sql;
use crate::error::{Result, SqlMiddlewareDbError};

impl SqliteConn {
    pub(super) async fn begin_tx(&mut self) -> Result<()> {
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        if !self.conn_mut()?.is_autocommit() {
            return Err(SqlMiddlewareDbError::new(
                crate::error::ErrorKind::TransactionState,
                "a transaction begun by raw SQL is still open on this connection; commit or roll it back first",
            ));
        }
        self.simple("BEGIN IMMEDIATE", 0).await
    }

    /// Commits; when the engine refuses (a deferred foreign key), the transaction is rolled back
    /// and the error returned, so the connection never stays inside it.
    pub(super) async fn commit_tx(&mut self) -> Result<()> {
        match self.simple("COMMIT", 1).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.rollback_if_open();
                Err(e)
            }
        }
    }

    pub(super) async fn rollback_tx(&mut self) -> Result<()> {
        self.settle_stream().await;
        if self.conn_mut()?.is_autocommit() {
            // The engine already rolled back (e.g. RAISE(ROLLBACK)); nothing left to undo.
            return Ok(());
        }
        self.simple("ROLLBACK", 2).await
    }

    /// A transaction was dropped without commit: it is rolled back off the calling thread (see
    /// [`Self::rollback_off_thread`]); the connection's next operation takes it back first.
    pub(super) fn abandon(&mut self) {
        self.stream_returned();
        if self.conn.is_none() {
            if self.returning.is_some() {
                // A dropped stream's worker still has it: rolled back when it comes back.
                self.abandoned = true;
            } else {
                self.broken = true;
            }
            return;
        }
        self.rollback_off_thread();
    }

    /// `BEGIN IMMEDIATE` (0), `COMMIT` (1) or `ROLLBACK` (2): each remembers, per connection,
    /// whether it ran past the inline budget (a `COMMIT` waiting for fsync does), and is then
    /// offloaded.
    pub(super) async fn simple(&mut self, sql: &'static str, slot: usize) -> Result<()> {
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        let slow = Arc::clone(&self.simple_slow);
        self.dispatch(
            None,
            false,
            slot == 1 && self.syncing_commits,
            Some(&slow[slot]),
            |c| run_sql(c, sql),
            || move |c: &mut Connection| run_sql(c, sql),
        )
        .await
    }

    pub(super) fn rollback_if_open(&mut self) {
        let Some(c) = self.conn.as_mut() else {
            return;
        };
        if !c.is_autocommit() && c.execute_batch("ROLLBACK").is_err() {
            self.broken = true;
        }
    }

    /// Rolls back an open transaction on tokio's blocking pool, never on the calling thread:
    /// a rollback rewrites the pages a large transaction spilled to the database file (in
    /// rollback-journal mode, milliseconds for a few megabytes), and `Drop` must not block. The
    /// connection comes back through `self.returning`, as from a dropped stream's worker, and
    /// is discarded if the rollback failed. Outside any runtime it rolls back here.
    pub(super) fn rollback_off_thread(&mut self) {
        if self.conn.as_ref().is_none_or(|c| c.is_autocommit()) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            self.rollback_if_open();
            return;
        };
        let Some(conn) = self.conn.take() else {
            return;
        };
        let (back, returning) = tokio::sync::oneshot::channel();
        drop(handle.spawn_blocking(move || {
            let failed = !conn.is_autocommit() && conn.execute_batch("ROLLBACK").is_err();
            let _ = back.send((conn, failed));
        }));
        self.returning = Some(returning);
    }
}
