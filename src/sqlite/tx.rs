//! Transactions on a SQLite connection: `BEGIN IMMEDIATE`, `COMMIT` and `ROLLBACK` (a
//! transaction dropped without commit is rolled back by `recover.rs`).

use std::sync::Arc;

use rusqlite::Connection;

use super::conn::SqliteConn;
use super::exec::run_sql;
use super::offload::Run;
use crate::error::{Result, SqlMiddlewareDbError};

impl SqliteConn {
    pub(super) async fn begin_tx(&mut self) -> Result<()> {
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        if !self.conn_mut()?.is_autocommit() {
            return Err(SqlMiddlewareDbError::raw_tx_open());
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
            Run::Write,
            slot == 1 && self.syncing_commits,
            Some(&slow[slot]),
            |c| run_sql(c, sql),
            || move |c: &mut Connection| run_sql(c, sql),
        )
        .await
    }
}
