//! Transactions on a Turso connection: `BEGIN IMMEDIATE`, `COMMIT` and `ROLLBACK` (a
//! transaction dropped without commit is rolled back by `recover.rs`).

use super::conn::TursoConn;
use crate::contract::Wing;
use crate::deadline::At;
use crate::error::{Result, SqlMiddlewareDbError};
use crate::translation::TranslationMode;

impl TursoConn {
    pub(super) async fn begin_tx(&mut self, at: At) -> Result<()> {
        if self.unsettled() {
            self.settle().await?;
        }
        if !self.autocommit()? {
            return Err(SqlMiddlewareDbError::raw_tx_open());
        }
        self.simple("BEGIN IMMEDIATE", at).await
    }

    /// Commits; when the engine refuses, the transaction is rolled back and the error returned.
    pub(super) async fn commit_tx(&mut self, at: At) -> Result<()> {
        match self.simple("COMMIT", at).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.rollback_if_open().await;
                Err(e)
            }
        }
    }

    pub(super) async fn rollback_tx(&mut self, at: At) -> Result<()> {
        if self.autocommit()? {
            return Ok(());
        }
        self.simple("ROLLBACK", at).await
    }

    /// Runs transaction control (`BEGIN IMMEDIATE`, `COMMIT`, `ROLLBACK`) as an operation of its
    /// own, within `at`.
    pub(super) async fn simple(&mut self, sql: &'static str, at: At) -> Result<()> {
        self.start_limit(at)?;
        self.simple_within(sql).await
    }

    /// Runs transaction control as a step of the operation running now (a script's own
    /// `BEGIN IMMEDIATE … COMMIT`), under that operation's limit.
    pub(super) async fn simple_within(&mut self, sql: &'static str) -> Result<()> {
        // Preparing starts an operation of its own (without a limit); keep ours.
        let stop = self.stop_at;
        let s = self.prepare(sql, TranslationMode::Off, None).await;
        self.stop_at = stop;
        self.dml_inner(&s?, &[]).await.map(drop)
    }
}
